/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared by rref/'s files (never installed, not exported): the RRef
 * types, small inline helpers, and what crosses files.
 *
 * RRefs: owner values, user references, the fork protocol and distributed
 * reference counting (the protocol and its guarantees: docs/rref.md).
 *
 * Four cds_lfht tables per agent (QSBR flavour), all keyed by a 64-bit id
 * (creating worker's rank << 48 | a number unique on that worker):
 *  - owners:  rref id -> rr_owner, the values this worker owns;
 *  - forks:   fork id -> rr_fork, the users of those values the owner
 *             knows (each holds one reference on its rr_owner);
 *  - handles: handle id -> dprpc_rref, every handle here whose memory is
 *             not freed yet (held by the application, or released and
 *             waiting for children or its DELETE; a user's handle id is
 *             its fork id);
 *  - pending: child fork id -> rr_pending, children forked from a user
 *             handle here and not yet confirmed by the owner (each holds
 *             one reference on the parent handle: G2).
 * Lookups run inside dp_rcu_read_lock() and take a reference with
 * "increment if not zero"; whoever drops the last reference removes the
 * entry (cds_lfht_del) and frees it with call_rcu, so a reader that still
 * sees the node never sees freed memory, and a node whose count reached
 * zero is never revived.
 *
 * An owner's references: its forks, its local handles, a placeholder (see
 * below), and one per request working on it (fetch, proxy, creation).
 * The value is a future from the RRef future pool, completed once by the
 * creating handler's reply (rr_capture_reply); requests that need the value
 * wait on it as callbacks, without a lock.
 *
 * Messages are calls to handlers registered at agent creation (all
 * inline, on the owner's poller), with an rr_msg header:
 *  REMOTE  user -> owner: create rref_id with user fork_id, run handler
 *          (on src_id's value for rref.remote()); the reply confirms the
 *          user and carries the value if it fits one frame (else to_here
 *          FETCHes it).
 *  FETCH   user -> owner: the value (to_here of a forked user).
 *  PROXY   user -> owner: run handler on src_id's value; its reply goes
 *          straight back to the caller.
 *  NOTIFY  child -> owner: "I hold fork_id, forked by parent".
 *  ACCEPT  owner -> parent: "child fork_id is confirmed"; drops the
 *          parent's pending reference.
 *  DELETE  user -> owner: "fork_id is gone" (G1).
 * Calls to different handlers are not ordered: a FETCH, PROXY or NOTIFY
 * may reach the owner before the REMOTE that creates the RRef (lost and
 * resent).  If it comes from the creator itself, or says its parent was
 * not confirmed, the owner makes a placeholder entry, pending, holding
 * one reference for the creator's fork; the REMOTE turns it into that
 * fork, or the creator's DELETE (the creation failed there) drops it.
 *
 * What a dead peer's forks and children become: peers.c.
 *
 * The files:
 *   table.c    the tables: lookup, insertion, removal, "get unless zero",
 *              ids, freeing a bare node
 *   owner.c    owner values, forks (owner side), the owner's handlers
 *   user.c     handles and the public calls on them, fork/from_fork
 *   msg.c      sending RRef messages, the background resend (the timer)
 *   peers.c    what a worker drops when a peer is declared down or
 *              restarts, and the bound on fork data never rebuilt
 *   inspect.c  debug_info, list, dump, shutdown
 *   ctx.c      the life cycle: the extension (rr_ext.h) and its ops
 * Each lock-free file opens with its design (invariants, ordering,
 * progress, reclamation) and every atomic operation says what it pairs
 * with, in the manner of future/future.c.
 */
#ifndef RR_INTERNAL_H
#define RR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_byteorder.h>
#include <rte_common.h>
#include <rte_log.h>

#include <urcu/urcu-qsbr.h>
#include <urcu/rculfhash.h>

#include <dprpc/dprpc_rref.h>

#include "dp_ext.h"
#include "dprpc_atomic.h"
#include "rr_ext.h"

/* rref/'s log type, "dprpc.rref" (registered in ctx.c; EAL's
 * --log-level='dprpc.*:debug' or dprpc.rref:debug reaches it). */
extern int rr_logtype;
/* One line at RTE_LOG_<level> under "dprpc.rref". */
#define RR_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, rr_logtype, "dprpc: " fmt "\n", ##__VA_ARGS__)

/* The header of every RRef message; the arguments follow (8-aligned). */
struct rr_msg {
	rte_be64_t rref_id;
	rte_be64_t fork_id;
	rte_be64_t src_id;   /* PROXY, proxy REMOTE: the RRef read */
	rte_be64_t src_fork; /* the caller's fork of src_id */
	rte_be32_t handler_id;
	rte_be16_t parent;
	rte_be16_t flags;
} __rte_packed;
_Static_assert(sizeof(struct rr_msg) == 40, "RRef message header is 40 bytes");
_Static_assert(
	DPRPC_RREF_ARGS_MAX == DPRPC_MAX_FRAME_PAYLOAD - sizeof(struct rr_msg), "argument bound");

#define RR_F_LOCAL	 0x1 /* REMOTE: the owner made the entry itself */
#define RR_F_PROXY	 0x2 /* REMOTE: the value is computed from src_id */
#define RR_F_PARENT_UNCF 0x4 /* NOTIFY (and fork data): the parent was not confirmed */
#define RR_FD_TO	 0x8 /* fork data only: made for worker `to` */

/* No worker: a fork whose holder is not known yet. */
#define RR_NOBODY 0xffffu

/* Fork data (DPRPC_RREF_FORK_SIZE bytes, big-endian). */
struct rr_fork_data {
	rte_be32_t magic;
	rte_be16_t owner;
	rte_be16_t parent;
	rte_be64_t rref_id;
	rte_be64_t fork_id;
	rte_be16_t flags;
	rte_be16_t to; /* with RR_FD_TO: the only worker that may rebuild it */
	uint8_t zero[4];
} __rte_packed;
_Static_assert(sizeof(struct rr_fork_data) == DPRPC_RREF_FORK_SIZE, "fork data size");
#define RR_FORK_MAGIC 0x52526631u /* "RRf1" */

#define RR_RETRY_RING 8192

/* The head of every table entry.  ctx and free_fn are set when it is
 * removed (rr_remove()): the grace period's callback frees it with
 * free_fn and counts it off ctx->rcu_pending. */
struct rr_node {
	struct cds_lfht_node node;
	uint64_t key;
	struct rcu_head rcu;
	struct rr_ctx *ctx;
	void (*free_fn)(struct rcu_head *h);
};

struct rr_owner {
	struct rr_node n; /* key: rref id */
	struct rr_ctx *ctx;
	_Atomic uint32_t refs;
	atomic_bool placeholder; /* holds a reference for the creator's fork */
	struct dprpc_future *val;
};

struct rr_fork {
	struct rr_node n; /* key: fork id */
	struct rr_owner *own;
	/* The worker that holds this reference, RR_NOBODY while fork data
	 * made by the owner has not been rebuilt and named no receiver.
	 * Written at insertion or by the NOTIFY that confirms it. */
	_Atomic uint16_t holder;
	/* The holder told the owner (its REMOTE or NOTIFY came).  Until
	 * then (fork data made by the owner) the fork expires at
	 * deadline_tsc (0: never). */
	atomic_bool confirmed;
	uint64_t deadline_tsc;
};

struct rr_pending {
	struct rr_node n; /* key: child fork id */
	struct dprpc_rref *parent;
	uint16_t to;	       /* the receiver named at fork, or RR_NOBODY */
	uint64_t deadline_tsc; /* dropped unconfirmed then (0: never) */
};

/* What the application did with a handle (dprpc_rref.app). */
enum rr_app_state {
	RR_APP_HELD = 0,     /* the application holds it */
	RR_APP_SHUTDOWN = 1, /* dprpc_rref_shutdown() dropped its reference;
			      * the application still holds the memory */
	RR_APP_RELEASED = 2, /* dprpc_rref_release() was called */
};

struct dprpc_rref {
	struct rr_node n; /* key: handle id (a user's fork id) */
	struct rr_ctx *ctx;
	uint64_t rref_id;
	uint16_t owner;
	bool is_owner;
	/* References to the RRef: the application's and one per pending
	 * child.  The last one gone ends the reference (DELETE, or the owner
	 * reference dropped). */
	_Atomic uint32_t refs;
	/* Holds on the handle's memory: the application's (until
	 * dprpc_rref_release()) and the protocol's (until the reference has
	 * ended, its DELETE sent).  The last one gone frees the handle. */
	_Atomic uint32_t mem;
	_Atomic uint8_t app;  /* enum rr_app_state */
	struct rr_owner *own; /* owner handle: one reference, until refs ends */
	/* User: the owner's confirmation.  Owner handle: a reference on the
	 * value's future (own->val), valid as long as the handle's memory. */
	struct dprpc_future *created;
	bool value_in_created; /* made by remote(): created holds the value */
};

/* An RRef message that found no call slot, waiting for the timer. */
struct rr_retry {
	uint16_t to;
	uint32_t handler_id;
	struct rr_msg msg;
};

struct rr_ctx {
	struct dprpc_agent *a;
	uint16_t rank;	  /* the agent's */
	uint32_t max_msg; /* the agent's max_msg_size: values and messages */
	struct cds_lfht *owners, *forks, *handles, *pending;
	struct dprpc_future_pool *fpool;
	struct rte_ring *retry; /* MP/SC: struct rr_retry *, drained by the poller */
	_Atomic uint64_t next_id;
	atomic_bool closing;
	uint32_t h_remote, h_fetch, h_proxy, h_notify, h_accept, h_delete;
	_Atomic uint64_t n_owners, n_forks, n_owner_handles, n_users, n_pending_forks;
	_Atomic uint64_t n_unconfirmed; /* forks not confirmed by their holder */
	_Atomic uint64_t deletes_unknown, messages_failed;
	_Atomic uint64_t forks_dropped_peer_down, pending_forks_dropped, forks_expired;
	_Atomic int64_t msgs_waiting; /* sent or queued, not yet answered */
	/* Fork data never rebuilt: the poller's next look (peers.c; poller
	 * only).  How long a child stays unconfirmed is the agent's default
	 * timeout when it was forked (rr_fork_deadline()). */
	uint64_t next_sweep_tsc;
	/* Requests kept until an owner value is there (rr_wait_value() to
	 * its callback): quiesce answers them (held_requests in ctx.c). */
	_Atomic uint64_t requests_waiting;
	/* Entries removed and not freed yet: queued to call_rcu() by
	 * rr_remove(), counted off by their callback (table.c).  The
	 * teardown waits for 0 instead of a urcu_qsbr_barrier(). */
	_Atomic uint64_t rcu_pending;
	/* dprpc_agent_conf.rrefs.value_free and its argument (set at creation). */
	void (*value_free)(const void *value, size_t len, void *arg);
	void *value_free_arg;
};

/* --- small helpers ------------------------------------------------------ */

static inline void
rr_inc(_Atomic uint64_t *c)
{
	/* relaxed: a statistic, nothing is published through it (shutdown
	 * only polls the counts until they reach 0: rr_settled()). */
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static inline void
rr_dec(_Atomic uint64_t *c)
{
	/* relaxed: a statistic, nothing is published through it (as rr_inc). */
	atomic_fetch_sub_explicit(c, 1, memory_order_relaxed);
}

static inline uint64_t
rr_load(const _Atomic uint64_t *c)
{
	/* relaxed: a statistic, nothing is published through it (as rr_inc). */
	return atomic_load_explicit(c, memory_order_relaxed);
}

/* False once the handle's reference has ended (it waits only for its
 * memory to go: user.c).  For walks and reports. */
static inline bool
rr_handle_live(struct dprpc_rref *r)
{
	/* relaxed: a snapshot for a count or a report, as rr_inc(). */
	return atomic_load_explicit(&r->refs, memory_order_relaxed) != 0;
}

/* The worker that made @id (ids: rr_new_id() in table.c). */
static inline unsigned int
rr_creator(uint64_t id)
{
	return (unsigned int)(id >> 48);
}

/* The agent's RRef context, NULL if it has none.  Any thread. */
static inline struct rr_ctx *
rr_ctx_of(const struct dprpc_agent *a)
{
	return dp_ext_state(a, &rr_extension);
}

/* container_of() without liburcu's const round trip (rr_container_of()
 * goes through a const pointer, which clang's -Wcast-qual reports). */
#define rr_container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* cds_lfht_for_each_entry() takes container_of() of the NULL node that
 * ends a walk (undefined behaviour: UBSan reports it under the fuzzer);
 * this walks the nodes and converts only real ones. */
#define rr_for_each_entry(ht, iter, pos, member)                                              \
	for (cds_lfht_first(ht, iter); cds_lfht_iter_get_node(iter) != NULL &&                \
				       ((pos) = rr_container_of(cds_lfht_iter_get_node(iter), \
						__typeof__(*(pos)), member),                  \
				       1);                                                    \
		cds_lfht_next(ht, iter))

/* --- table.c: tables and references ------------------------------------- */

struct rr_node *rr_find(struct cds_lfht *ht, uint64_t key);
int rr_insert(struct cds_lfht *ht, struct rr_node *n);
bool rr_remove(struct rr_ctx *ctx, struct cds_lfht *ht, struct rr_node *n,
	void (*free_fn)(struct rcu_head *));
void rr_table_clear(struct cds_lfht *ht, void (*free_fn)(struct rcu_head *));
void rr_rcu_drain(struct rr_ctx *ctx);
bool rr_ref_get_nz(_Atomic uint32_t *refs);
uint64_t rr_new_id(struct rr_ctx *ctx);
void rr_free_node_rcu(struct rcu_head *h);

/* --- owner.c: owner values, forks, the owner's handlers ----------------- */

void rr_owner_free_rcu(struct rcu_head *h);
void rr_owner_put(struct rr_owner *o);
struct rr_owner *rr_owner_get(struct rr_ctx *ctx, uint64_t id);
struct rr_owner *rr_owner_new(struct rr_ctx *ctx, uint64_t id, uint32_t refs, bool placeholder);
int rr_fork_add(struct rr_ctx *ctx, uint64_t fork_id, struct rr_owner *o, unsigned int holder,
	bool confirmed);
int rr_fork_del(struct rr_ctx *ctx, uint64_t fork_id, uint64_t rref_id);
bool rr_fork_drop(struct rr_ctx *ctx, struct rr_fork *f);
bool rr_pending_drop(struct rr_ctx *ctx, struct rr_pending *p);
void rr_send_accept(struct rr_ctx *ctx, unsigned int parent, uint64_t rref_id, uint64_t fork);
int rr_h_remote(struct dprpc_request *req, void *arg);
int rr_h_fetch(struct dprpc_request *req, void *arg);
int rr_h_proxy(struct dprpc_request *req, void *arg);
int rr_h_notify(struct dprpc_request *req, void *arg);
int rr_h_accept(struct dprpc_request *req, void *arg);
int rr_h_delete(struct dprpc_request *req, void *arg);

/* --- user.c: handles ---------------------------------------------------- */

void rr_handle_free_rcu(struct rcu_head *h);
void rr_handle_put(struct dprpc_rref *r);
/* user.c, for fork.c: new handles (NULL with rte_errno), a user handle
 * whose creation never went out, a user's confirmation by the owner's
 * answer @f, whether a handle may still be used (not shut down), and the
 * error its creation failed with (NULL if none). */
struct dprpc_rref *rr_handle_owner(struct rr_ctx *ctx, struct rr_owner *o);
struct dprpc_rref *rr_handle_user(
	struct rr_ctx *ctx, uint64_t fork_id, uint64_t rref_id, unsigned int owner);
void rr_handle_user_discard(struct dprpc_rref *r);
void rr_user_confirm_by(struct dprpc_rref *r, struct dprpc_future *f);
bool rr_usable(const struct dprpc_rref *r);
const struct dprpc_error *rr_creation_error(const struct dprpc_rref *r);
void rr_handle_mem_put(struct dprpc_rref *r);

/* --- msg.c: RRef messages ----------------------------------------------- */

void rr_msg_fill(struct rr_msg *m, uint64_t rref_id, uint64_t fork_id, uint64_t src_id,
	uint64_t src_fork, uint32_t handler_id, uint16_t parent, uint16_t flags);
struct dprpc_future *rr_call(struct rr_ctx *ctx, unsigned int to, uint32_t hid,
	const struct rr_msg *m, const void *args, size_t len, uint64_t timeout_us);
/* rr_call() of arguments gathered from @cnt buffers, @len bytes in all
 * (dp_iov_len() checked them, at most RR_IOV_MAX). */
struct dprpc_future *rr_call_iov(struct rr_ctx *ctx, unsigned int to, uint32_t hid,
	const struct rr_msg *m, const struct iovec *iov, unsigned int cnt, size_t len,
	uint64_t timeout_us);
/* The most buffers of an RRef call's arguments: the message's header
 * takes one of the call's (dp_iov_len()). */
#define RR_IOV_MAX (DPRPC_IOV_MAX - 1)
void rr_send_bg(struct rr_ctx *ctx, unsigned int to, uint32_t hid, const struct rr_msg *m);
unsigned int rr_ctx_timer(void *state);

/* --- peers.c: dead peers, fork data never rebuilt ---------------------- */

void rr_ctx_peer_event(void *state, unsigned int rank, enum dp_peer_event ev);
unsigned int rr_sweep(struct rr_ctx *ctx);
uint64_t rr_fork_deadline(const struct rr_ctx *ctx);

#endif /* RR_INTERNAL_H */
