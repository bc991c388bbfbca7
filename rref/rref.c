/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RRefs (DESIGN.md section 6): owner values, user references, the fork
 * protocol and distributed reference counting.
 *
 * Four cds_lfht tables per agent (QSBR flavour), all keyed by a 64-bit id
 * (creating worker's rank << 48 | a number unique on that worker):
 *  - owners:  rref id -> rr_owner, the values this worker owns;
 *  - forks:   fork id -> rr_fork, the users of those values the owner
 *             knows (each holds one reference on its rr_owner);
 *  - handles: handle id -> dprpc_rref, every handle the application holds
 *             here (a user's handle id is its fork id);
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
 *          user and carries the value (it fits one frame), which the user
 *          keeps as its creation future's value: to_here on it then needs
 *          no message (values never change).
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
 */
#include <errno.h>
#include <inttypes.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_byteorder.h>
#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ring.h>

#include <urcu/urcu-qsbr.h>
#include <urcu/rculfhash.h>

#include <dprpc/dprpc_rref.h>

#include "dp_ext.h"
#include "dp_rcu.h"
#include "dprpc_atomic.h"
#include "rr_internal.h"

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
#define RR_F_PARENT_UNCF 0x4 /* NOTIFY: the parent was not confirmed */

/* Fork data (DPRPC_RREF_FORK_SIZE bytes, big-endian). */
struct rr_fork_data {
	rte_be32_t magic;
	rte_be16_t owner;
	rte_be16_t parent;
	rte_be64_t rref_id;
	rte_be64_t fork_id;
	rte_be16_t flags;
	uint8_t zero[6];
} __rte_packed;
_Static_assert(sizeof(struct rr_fork_data) == DPRPC_RREF_FORK_SIZE, "fork data size");
#define RR_FORK_MAGIC 0x52526631u /* "RRf1" */

#define RR_RETRY_RING 8192

/* The head of every table entry. */
struct rr_node {
	struct cds_lfht_node node;
	uint64_t key;
	struct rcu_head rcu;
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
};

struct rr_pending {
	struct rr_node n; /* key: child fork id */
	struct dprpc_rref *parent;
};

struct dprpc_rref {
	struct rr_node n; /* key: handle id (a user's fork id) */
	struct rr_ctx *ctx;
	uint64_t rref_id;
	uint16_t owner;
	bool is_owner;
	/* The application's reference and one per pending child. */
	_Atomic uint32_t refs;
	atomic_bool released;	      /* the application's reference is gone */
	struct rr_owner *own;	      /* owner handle: one reference */
	struct dprpc_future *created; /* user: the owner's confirmation */
	bool value_in_created;	      /* made by remote(): created holds the value */
};

/* An RRef message that found no call slot, waiting for the timer. */
struct rr_retry {
	uint16_t to;
	uint32_t handler_id;
	struct rr_msg msg;
};

struct rr_ctx {
	struct dprpc_agent *a;
	uint16_t rank; /* the agent's */
	struct cds_lfht *owners, *forks, *handles, *pending;
	struct dprpc_future_pool *fpool;
	struct rte_ring *retry; /* MP/SC: struct rr_retry *, drained by the poller */
	_Atomic uint64_t next_id;
	atomic_bool closing;
	uint32_t h_remote, h_fetch, h_proxy, h_notify, h_accept, h_delete;
	_Atomic uint64_t n_owners, n_forks, n_owner_handles, n_users, n_pending_forks;
	_Atomic uint64_t deletes_unknown, messages_failed;
	_Atomic int64_t msgs_waiting; /* sent or queued, not yet answered */
};

/* --- small helpers ------------------------------------------------------ */

static inline void
rr_inc(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static inline void
rr_dec(_Atomic uint64_t *c)
{
	atomic_fetch_sub_explicit(c, 1, memory_order_relaxed);
}

static unsigned long
rr_hash(uint64_t k)
{
	/* A 64-bit finaliser (xor-shift-multiply): ids are sequential. */
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return (unsigned long)k;
}

static int
rr_match(struct cds_lfht_node *node, const void *key)
{
	return caa_container_of(node, struct rr_node, node)->key == *(const uint64_t *)key;
}

/* Inside dp_rcu_read_lock(). */
static struct rr_node *
rr_find(struct cds_lfht *ht, uint64_t key)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;

	cds_lfht_lookup(ht, rr_hash(key), rr_match, &key, &it);
	node = cds_lfht_iter_get_node(&it);
	return node != NULL ? caa_container_of(node, struct rr_node, node) : NULL;
}

/* Insert unless the key is there.  0 or -EEXIST. */
static int
rr_insert(struct cds_lfht *ht, struct rr_node *n)
{
	struct cds_lfht_node *got;

	cds_lfht_node_init(&n->node);
	dp_rcu_read_lock();
	got = cds_lfht_add_unique(ht, rr_hash(n->key), rr_match, &n->key, &n->node);
	dp_rcu_read_unlock();
	return got == &n->node ? 0 : -EEXIST;
}

/* Remove @n and free it after a grace period.  False if another thread
 * removed it first. */
static bool
rr_remove(struct cds_lfht *ht, struct rr_node *n, void (*free_fn)(struct rcu_head *))
{
	bool mine;

	dp_rcu_read_lock();
	mine = cds_lfht_del(ht, &n->node) == 0;
	if (mine)
		urcu_qsbr_call_rcu(&n->rcu, free_fn);
	dp_rcu_read_unlock();
	return mine;
}

/* Acquire on success: the entry's fields, written before its insertion
 * (published by cds_lfht's own barriers), are read after. */
static bool
rr_ref_get_nz(_Atomic uint32_t *refs)
{
	uint32_t v = atomic_load_explicit(refs, memory_order_relaxed);

	do {
		if (v == 0)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(
		refs, &v, v + 1, memory_order_acquire, memory_order_relaxed));
	return true;
}

static uint64_t
rr_new_id(struct rr_ctx *ctx)
{
	uint64_t n = atomic_fetch_add_explicit(&ctx->next_id, 1, memory_order_relaxed);

	return (uint64_t)ctx->rank << 48 | (n & ((1ULL << 48) - 1));
}

static unsigned int
rr_creator(uint64_t id)
{
	return (unsigned int)(id >> 48);
}

static void
rr_msg_fill(struct rr_msg *m, uint64_t rref_id, uint64_t fork_id, uint64_t src_id,
	uint64_t src_fork, uint32_t handler_id, uint16_t parent, uint16_t flags)
{
	m->rref_id = rte_cpu_to_be_64(rref_id);
	m->fork_id = rte_cpu_to_be_64(fork_id);
	m->src_id = rte_cpu_to_be_64(src_id);
	m->src_fork = rte_cpu_to_be_64(src_fork);
	m->handler_id = rte_cpu_to_be_32(handler_id);
	m->parent = rte_cpu_to_be_16(parent);
	m->flags = rte_cpu_to_be_16(flags);
}

/* Send a message with arguments.  NULL with rte_errno as rpc_async. */
static struct dprpc_future *
rr_call(struct rr_ctx *ctx, unsigned int to, uint32_t hid, const struct rr_msg *m, const void *args,
	size_t len, uint64_t timeout_us)
{
	alignas(8) uint8_t buf[DPRPC_MAX_FRAME_PAYLOAD];

	if (len > DPRPC_RREF_ARGS_MAX) {
		rte_errno = EMSGSIZE;
		return NULL;
	}
	memcpy(buf, m, sizeof(*m));
	if (len > 0)
		memcpy(buf + sizeof(*m), args, len);
	return dprpc_rpc_async_id(ctx->a, to, hid, buf, sizeof(*m) + len, timeout_us);
}

static void
rr_msg_done(struct dprpc_future *f, void *arg)
{
	struct rr_ctx *ctx = arg;

	if (dprpc_future_state(f) != DPRPC_FUTURE_DONE)
		rr_inc(&ctx->messages_failed);
	atomic_fetch_sub_explicit(&ctx->msgs_waiting, 1, memory_order_release);
	dprpc_future_put(f);
}

/* Try once to send a bookkeeping message (DELETE, ACCEPT).  True if it is
 * on its way or failed for good; false if it should be retried (no call
 * slot or buffer now). */
static bool
rr_try_send(struct rr_ctx *ctx, unsigned int to, uint32_t hid, const struct rr_msg *m)
{
	struct dprpc_future *f = rr_call(ctx, to, hid, m, NULL, 0, DPRPC_TIMEOUT_DEFAULT);

	if (f == NULL) {
		if (rte_errno == EAGAIN || rte_errno == ENOBUFS)
			return false;
		rr_inc(&ctx->messages_failed);
		atomic_fetch_sub_explicit(&ctx->msgs_waiting, 1, memory_order_release);
		return true;
	}
	if (dprpc_future_add_callback(f, rr_msg_done, ctx) != 0) {
		atomic_fetch_sub_explicit(&ctx->msgs_waiting, 1, memory_order_release);
		dprpc_future_put(f); /* the agent keeps its own reference */
	}
	return true;
}

/* Send a bookkeeping message now or, if no call slot is free, from the
 * poller's timer (rr_ctx_timer).  Any thread. */
static void
rr_send_bg(struct rr_ctx *ctx, unsigned int to, uint32_t hid, const struct rr_msg *m)
{
	struct rr_retry *r;

	if (atomic_load_explicit(&ctx->closing, memory_order_acquire))
		return;
	atomic_fetch_add_explicit(&ctx->msgs_waiting, 1, memory_order_relaxed);
	if (rr_try_send(ctx, to, hid, m))
		return;
	r = malloc(sizeof(*r));
	if (r != NULL) {
		r->to = (uint16_t)to;
		r->handler_id = hid;
		r->msg = *m;
		if (rte_ring_mp_enqueue(ctx->retry, r) == 0)
			return;
		free(r);
	}
	rr_inc(&ctx->messages_failed);
	atomic_fetch_sub_explicit(&ctx->msgs_waiting, 1, memory_order_release);
}

/* The extension's timer: on the poller, every timer period. */
static unsigned int
rr_ctx_timer(void *state)
{
	struct rr_ctx *ctx = state;
	struct rr_retry *r;
	unsigned int n = 0;

	while (n < 64 && rte_ring_sc_dequeue(ctx->retry, (void **)&r) == 0) {
		if (!rr_try_send(ctx, r->to, r->handler_id, &r->msg)) {
			/* Still no slot: back to the ring, try next tick.  Only
			 * the poller dequeues, so the ring has room for it. */
			(void)rte_ring_mp_enqueue(ctx->retry, r);
			break;
		}
		free(r);
		n++;
	}
	return n;
}

/* A future from the RRef pool, failed with @e (what a use of an RRef whose
 * creation failed returns).  NULL with rte_errno ENOBUFS. */
static struct dprpc_future *
rr_failed_future(struct rr_ctx *ctx, const struct dprpc_error *e)
{
	struct dprpc_future *f = dprpc_future_new(ctx->fpool);

	if (f == NULL) {
		rte_errno = ENOBUFS;
		return NULL;
	}
	(void)dprpc_future_fail(f, e->code, e->origin, e->msg);
	return f;
}

/* --- owner values ------------------------------------------------------- */

static void
rr_owner_free_rcu(struct rcu_head *h)
{
	struct rr_owner *o = caa_container_of(h, struct rr_owner, n.rcu);

	dprpc_future_put(o->val);
	free(o);
}

static void
rr_owner_put(struct rr_owner *o)
{
	struct rr_ctx *ctx = o->ctx;

	/* Release/acquire: every holder's accesses happen before the free. */
	if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (rr_remove(ctx->owners, &o->n, rr_owner_free_rcu))
		rr_dec(&ctx->n_owners);
}

static struct rr_owner *
rr_owner_get(struct rr_ctx *ctx, uint64_t id)
{
	struct rr_owner *o = NULL;
	struct rr_node *n;

	dp_rcu_read_lock();
	n = rr_find(ctx->owners, id);
	if (n != NULL) {
		o = caa_container_of(n, struct rr_owner, n);
		if (!rr_ref_get_nz(&o->refs))
			o = NULL;
	}
	dp_rcu_read_unlock();
	return o;
}

/* A new owner entry with @refs references, inserted.  NULL with rte_errno
 * ENOBUFS/ENOMEM, or EEXIST (the id is taken). */
static struct rr_owner *
rr_owner_new(struct rr_ctx *ctx, uint64_t id, uint32_t refs, bool placeholder)
{
	struct rr_owner *o = calloc(1, sizeof(*o));

	if (o == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	o->val = dprpc_future_new(ctx->fpool);
	if (o->val == NULL) {
		free(o);
		rte_errno = ENOBUFS;
		return NULL;
	}
	dprpc_future_set_progress(o->val, dp_progress, ctx->a);
	o->n.key = id;
	o->ctx = ctx;
	atomic_init(&o->refs, refs);
	atomic_init(&o->placeholder, placeholder);
	if (rr_insert(ctx->owners, &o->n) != 0) {
		dprpc_future_put(o->val);
		free(o);
		rte_errno = EEXIST;
		return NULL;
	}
	rr_inc(&ctx->n_owners);
	return o;
}

/* The owner entry a request from @caller names, or a placeholder for it
 * when its creation may still be on its way (see the file comment).  NULL
 * if it is unknown here and cannot be on its way. */
static struct rr_owner *
rr_owner_get_or_wait(struct rr_ctx *ctx, uint64_t id, bool may_be_coming)
{
	struct rr_owner *o = rr_owner_get(ctx, id);

	if (o != NULL || !may_be_coming || rr_creator(id) == ctx->rank)
		return o;
	o = rr_owner_new(ctx, id, 2, true); /* the creator's fork, and ours */
	if (o == NULL && rte_errno == EEXIST)
		o = rr_owner_get(ctx, id);
	return o;
}

/* --- forks (owner side) ------------------------------------------------- */

static void
rr_free_node_rcu(struct rcu_head *h)
{
	free(caa_container_of(h, struct rr_node, rcu));
}

/* Record user @fork_id of @o, taking over one reference the caller holds
 * on @o.  0, -EEXIST (already known: the reference stays the caller's),
 * -ENOMEM. */
static int
rr_fork_add(struct rr_ctx *ctx, uint64_t fork_id, struct rr_owner *o)
{
	struct rr_fork *f = malloc(sizeof(*f));

	if (f == NULL)
		return -ENOMEM;
	f->n.key = fork_id;
	f->own = o;
	if (rr_insert(ctx->forks, &f->n) != 0) {
		free(f);
		return -EEXIST;
	}
	rr_inc(&ctx->n_forks);
	return 0;
}

/* Forget user @fork_id of RRef @rref_id.  0 or -ENOENT. */
static int
rr_fork_del(struct rr_ctx *ctx, uint64_t fork_id, uint64_t rref_id)
{
	struct rr_owner *o = NULL;
	struct rr_node *n;

	dp_rcu_read_lock();
	n = rr_find(ctx->forks, fork_id);
	if (n != NULL) {
		struct rr_fork *f = caa_container_of(n, struct rr_fork, n);

		if (f->own->n.key == rref_id && rr_remove(ctx->forks, n, rr_free_node_rcu))
			o = f->own;
	}
	dp_rcu_read_unlock();
	if (o == NULL)
		return -ENOENT;
	rr_dec(&ctx->n_forks);
	rr_owner_put(o);
	return 0;
}

static bool
rr_fork_known(struct rr_ctx *ctx, uint64_t fork_id, uint64_t rref_id)
{
	struct rr_node *n;
	bool known;

	dp_rcu_read_lock();
	n = rr_find(ctx->forks, fork_id);
	known = n != NULL && caa_container_of(n, struct rr_fork, n)->own->n.key == rref_id;
	dp_rcu_read_unlock();
	return known;
}

/* --- handles ------------------------------------------------------------ */

static void
rr_handle_free_rcu(struct rcu_head *h)
{
	struct dprpc_rref *r = caa_container_of(h, struct dprpc_rref, n.rcu);

	if (r->created != NULL)
		dprpc_future_put(r->created);
	free(r);
}

static struct dprpc_rref *
rr_handle_alloc(struct rr_ctx *ctx, uint64_t key, uint64_t rref_id, unsigned int owner)
{
	struct dprpc_rref *r = calloc(1, sizeof(*r));

	if (r == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	r->n.key = key;
	r->ctx = ctx;
	r->rref_id = rref_id;
	r->owner = (uint16_t)owner;
	atomic_init(&r->refs, 1);
	return r;
}

/* An owner handle on @o, taking over a reference the caller holds. */
static struct dprpc_rref *
rr_handle_owner(struct rr_ctx *ctx, struct rr_owner *o)
{
	struct dprpc_rref *r = rr_handle_alloc(ctx, rr_new_id(ctx), o->n.key, ctx->rank);

	if (r == NULL)
		return NULL;
	r->is_owner = true;
	r->own = o;
	(void)rr_insert(ctx->handles, &r->n); /* fresh key */
	rr_inc(&ctx->n_owner_handles);
	return r;
}

/* A user handle, unconfirmed.  Until rr_user_confirm_by() it is only the
 * caller's. */
static struct dprpc_rref *
rr_handle_user(struct rr_ctx *ctx, uint64_t fork_id, uint64_t rref_id, unsigned int owner)
{
	struct dprpc_rref *r = rr_handle_alloc(ctx, fork_id, rref_id, owner);

	if (r == NULL)
		return NULL;
	r->created = dprpc_future_new(ctx->fpool);
	if (r->created == NULL) {
		free(r);
		rte_errno = ENOBUFS;
		return NULL;
	}
	dprpc_future_set_progress(r->created, dp_progress, ctx->a);
	if (rr_insert(ctx->handles, &r->n) != 0) {
		dprpc_future_put(r->created);
		free(r);
		rte_errno = EEXIST;
		return NULL;
	}
	rr_inc(&ctx->n_users);
	return r;
}

/* Undo rr_handle_user() when its first message could not be sent. */
static void
rr_handle_user_discard(struct dprpc_rref *r)
{
	struct rr_ctx *ctx = r->ctx;

	rr_dec(&ctx->n_users);
	(void)dprpc_future_fail(r->created, -ECANCELED, ctx->rank, "not sent");
	(void)rr_remove(ctx->handles, &r->n, rr_handle_free_rcu);
}

static void
rr_creation_done(struct dprpc_future *f, void *arg)
{
	struct dprpc_future *created = arg;
	const struct dprpc_error *e = dprpc_future_error(f);
	const void *v;
	size_t len;

	if (e == NULL) {
		/* A copy, not the frame: a user may live long, an mbuf
		 * should not. */
		v = dprpc_future_value(f, &len);
		if (dprpc_future_complete_copy(created, v, len) == -ENOMEM)
			(void)dprpc_future_fail(
				created, -ENOMEM, DPRPC_ORIGIN_LOCAL, "no memory for the value");
	} else
		(void)dprpc_future_fail(created, e->code, e->origin, e->msg);
	dprpc_future_put(created);
	dprpc_future_put(f);
}

/* The user's confirmation follows the answer to @f (REMOTE or NOTIFY). */
static void
rr_user_confirm_by(struct dprpc_rref *r, struct dprpc_future *f)
{
	dprpc_future_get(r->created);
	if (dprpc_future_add_callback(f, rr_creation_done, r->created) != 0) {
		(void)dprpc_future_fail(
			r->created, -ENOBUFS, r->ctx->rank, "no callback node for the creation");
		dprpc_future_put(r->created);
		dprpc_future_put(f);
	}
}

/* The last reference of a user handle is gone and its creation answered:
 * tell the owner (G1), free it. */
static void
rr_user_finish(struct dprpc_future *created, void *arg)
{
	struct dprpc_rref *r = arg;
	struct rr_ctx *ctx = r->ctx;
	struct rr_msg m;

	(void)created;
	rr_msg_fill(&m, r->rref_id, r->n.key, 0, 0, 0, ctx->rank, 0);
	rr_send_bg(ctx, r->owner, ctx->h_delete, &m);
	dp_rcu_read_lock();
	urcu_qsbr_call_rcu(&r->n.rcu, rr_handle_free_rcu);
	dp_rcu_read_unlock();
}

static void
rr_handle_put(struct dprpc_rref *r)
{
	struct rr_ctx *ctx = r->ctx;

	if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) != 1)
		return;
	/* One read-side section for the whole release (nested ones inside
	 * cost nothing). */
	dp_rcu_read_lock();
	if (cds_lfht_del(ctx->handles, &r->n.node) != 0) {
		dp_rcu_read_unlock();
		return; /* the agent's teardown took it */
	}
	if (r->is_owner) {
		rr_dec(&ctx->n_owner_handles);
		rr_owner_put(r->own);
		urcu_qsbr_call_rcu(&r->n.rcu, rr_handle_free_rcu);
	} else {
		rr_dec(&ctx->n_users);
		/* A user whose creation is unanswered waits for the answer, so
		 * the DELETE cannot overtake the REMOTE or NOTIFY it undoes. */
		if (dprpc_future_add_callback(r->created, rr_user_finish, r) != 0)
			rr_user_finish(r->created, r);
	}
	dp_rcu_read_unlock();
}

/* --- the owner's handlers ----------------------------------------------- */

static const struct rr_msg *
rr_parse(struct dprpc_request *req, const void **args, uint32_t *alen)
{
	size_t len;
	const uint8_t *p = dprpc_request_payload(req, &len);

	if (len < sizeof(struct rr_msg))
		return NULL;
	*args = p + sizeof(struct rr_msg);
	*alen = (uint32_t)(len - sizeof(struct rr_msg));
	return (const struct rr_msg *)p;
}

static void
rr_reply_error(struct dprpc_request *req, int code, const char *msg)
{
	if (dprpc_reply_error(req, code, msg) == -ENOBUFS)
		dp_request_free(req); /* the caller's call times out */
}

static void
rr_reply(struct dprpc_request *req, const void *data, size_t len)
{
	if (dprpc_reply(req, data, len) == -ENOBUFS)
		rr_reply_error(req, -ENOBUFS, "no mbuf for the RRef reply");
}

static void
rr_reply_with_error_of(struct dprpc_request *req, const struct dprpc_error *e)
{
	rr_reply_error(req, e->code, e->msg);
}

/* Hand the request to the handler the caller named. */
static void
rr_dispatch(struct dprpc_request *req, uint32_t hid, const void *args, uint32_t alen)
{
	const char *name = dprpc_agent_name(dprpc_request_agent(req));
	char msg[DPRPC_ERRMSG_MAX];
	int rc = dp_redispatch(req, hid, args, alen);

	if (rc == 0)
		return;
	if (rc == -ENOENT)
		snprintf(msg, sizeof(msg), "no handler with id 0x%08x on worker %s", hid, name);
	else
		snprintf(msg, sizeof(msg), "handler pool of worker %s is full", name);
	rr_reply_error(req, rc, msg);
}

/* Requests holding owner references: hook_arg[0] (the value read or made)
 * and hook_arg[1] (a proxy REMOTE's source). */
static void
rr_hold_release(struct dprpc_request *req)
{
	if (dp_req_hook_arg(req, 0) != NULL)
		rr_owner_put(dp_req_hook_arg(req, 0));
	if (dp_req_hook_arg(req, 1) != NULL)
		rr_owner_put(dp_req_hook_arg(req, 1));
}

static void
rr_hold_reply(struct dprpc_request *req, uint32_t *status, const void **data, uint32_t *len)
{
	(void)req;
	(void)status;
	(void)data;
	(void)len;
}

static const struct dp_req_hook rr_hold_hook = {
	.reply = rr_hold_reply,
	.release = rr_hold_release,
};

/* A creating handler's reply becomes the value (or the error) of the
 * entry in hook_arg[0]; the caller gets the value (or the error) with its
 * confirmation.  Run again after a failed send: the value stays. */
static void
rr_capture_reply(struct dprpc_request *req, uint32_t *status, const void **data, uint32_t *len)
{
	struct rr_owner *o = dp_req_hook_arg(req, 0);
	char msg[DPRPC_ERRMSG_MAX];
	const struct dprpc_error *e;
	size_t vlen;

	if (*status == 0) {
		if (*len > DPRPC_RREF_VALUE_MAX) {
			/* Values fit one frame (dprpc_rref.h). */
			snprintf(msg, sizeof(msg), "value of %u bytes exceeds DPRPC_RREF_VALUE_MAX",
				*len);
			(void)dprpc_future_fail(o->val, -EMSGSIZE, o->ctx->rank, msg);
		} else if (dprpc_future_complete_copy(o->val, *data, *len) == -ENOMEM) {
			(void)dprpc_future_fail(
				o->val, -ENOMEM, o->ctx->rank, "no memory for the value");
		}
		e = dprpc_future_error(o->val);
		if (e == NULL) {
			*data = dprpc_future_value(o->val, &vlen);
			*len = (uint32_t)vlen;
		} else {
			*status = (uint32_t)-e->code;
			*data = e->msg;
			*len = (uint32_t)strlen(e->msg);
		}
		return;
	}
	snprintf(msg, sizeof(msg), "%.*s", (int)*len, (const char *)*data);
	(void)dprpc_future_fail(o->val, -(int)*status, o->ctx->rank, msg);
}

static void
rr_capture_release(struct dprpc_request *req)
{
	struct rr_owner *o = dp_req_hook_arg(req, 0);

	(void)dprpc_future_fail(
		o->val, -ECANCELED, o->ctx->rank, "creating request dropped unanswered");
	rr_hold_release(req);
}

static const struct dp_req_hook rr_capture_hook = {
	.reply = rr_capture_reply,
	.release = rr_capture_release,
};

/* The value a proxy (or proxy REMOTE) waits for is there: run the handler
 * on it.  hook_arg[0] or hook_arg[1] holds the source entry. */
static void
rr_proxy_ready(struct dprpc_future *val, void *arg)
{
	struct dprpc_request *req = arg;
	const struct rr_msg *m;
	const void *args;
	uint32_t alen;
	size_t vlen;

	if (dprpc_future_state(val) != DPRPC_FUTURE_DONE) {
		rr_reply_with_error_of(req, dprpc_future_error(val));
		return;
	}
	m = rr_parse(req, &args, &alen);
	const void *v = dprpc_future_value(val, &vlen);

	dp_req_set_input(req, v, (uint32_t)vlen);
	rr_dispatch(req, rte_be_to_cpu_32(m->handler_id), args, alen);
}

static void
rr_fetch_ready(struct dprpc_future *val, void *arg)
{
	struct dprpc_request *req = arg;
	const void *v;
	size_t len;

	if (dprpc_future_state(val) != DPRPC_FUTURE_DONE) {
		rr_reply_with_error_of(req, dprpc_future_error(val));
		return;
	}
	v = dprpc_future_value(val, &len);
	rr_reply(req, v, len);
}

static void
rr_wait_value(struct dprpc_request *req, struct rr_owner *o, dprpc_future_cb_t cb)
{
	if (dprpc_future_add_callback(o->val, cb, req) != 0)
		rr_reply_error(req, -ENOBUFS, "no callback node to wait for the RRef value");
}

static void
rr_not_here(struct dprpc_request *req, uint64_t id)
{
	char msg[DPRPC_ERRMSG_MAX];

	snprintf(msg, sizeof(msg), "RRef %" PRIx64 " is not on worker %s (deleted?)", id,
		dprpc_agent_name(dprpc_request_agent(req)));
	rr_reply_error(req, -ENOENT, msg);
}

/* FETCH, PROXY and a proxy REMOTE's source: the caller's fork may be the creator's (fork == rref
 * id), whose REMOTE may still be on its way. */
static struct rr_owner *
rr_owner_for(struct rr_ctx *ctx, struct dprpc_request *req, uint64_t id, uint64_t fork)
{
	return rr_owner_get_or_wait(
		ctx, id, fork == id && rr_creator(id) == dprpc_request_caller(req));
}

static int
rr_h_remote(struct dprpc_request *req, void *arg)
{
	struct rr_ctx *ctx = arg;
	const void *args;
	uint32_t alen;
	const struct rr_msg *m = rr_parse(req, &args, &alen);
	struct rr_owner *o, *src;
	uint64_t id, fork;
	uint16_t flags;
	int rc;

	if (m == NULL)
		return -EPROTO;
	id = rte_be_to_cpu_64(m->rref_id);
	fork = rte_be_to_cpu_64(m->fork_id);
	flags = rte_be_to_cpu_16(m->flags);
	o = rr_owner_get(ctx, id);
	if (flags & RR_F_LOCAL) {
		if (o == NULL) {
			rr_not_here(req, id); /* released before it was made */
			return 0;
		}
	} else if (o != NULL) {
		/* A placeholder's reference becomes the creator's fork. */
		if (!atomic_exchange_explicit(&o->placeholder, false, memory_order_acq_rel)) {
			rr_owner_put(o);
			rr_reply_error(req, -EEXIST, "RRef created twice");
			return 0;
		}
		rc = rr_fork_add(ctx, fork, o);
		if (rc != 0) {
			rr_owner_put(o); /* the placeholder's */
			rr_owner_put(o);
			rr_reply_error(req, rc, "cannot record the creator's fork");
			return 0;
		}
	} else {
		o = rr_owner_new(ctx, id, 2, false); /* the fork, and ours */
		if (o == NULL) {
			rr_reply_error(req, -rte_errno, "cannot make the RRef on its owner");
			return 0;
		}
		rc = rr_fork_add(ctx, fork, o);
		if (rc != 0) {
			rr_owner_put(o);
			rr_owner_put(o);
			rr_reply_error(req, rc, "cannot record the creator's fork");
			return 0;
		}
	}
	dp_req_set_hook(req, &rr_capture_hook, o, NULL);
	if (!(flags & RR_F_PROXY)) {
		rr_dispatch(req, rte_be_to_cpu_32(m->handler_id), args, alen);
		return 0;
	}
	src = rr_owner_for(ctx, req, rte_be_to_cpu_64(m->src_id), rte_be_to_cpu_64(m->src_fork));
	if (src == NULL) {
		rr_not_here(req, rte_be_to_cpu_64(m->src_id));
		return 0;
	}
	dp_req_set_hook_arg(req, 1, src);
	rr_wait_value(req, src, rr_proxy_ready);
	return 0;
}

/* FETCH (rref_id, fork_id) and PROXY (src_id, src_fork): hold the entry
 * and answer once its value is there. */
static int
rr_h_wait(struct dprpc_request *req, struct rr_ctx *ctx, bool proxy)
{
	const void *args;
	uint32_t alen;
	const struct rr_msg *m = rr_parse(req, &args, &alen);
	struct rr_owner *o;
	uint64_t id;

	if (m == NULL)
		return -EPROTO;
	id = rte_be_to_cpu_64(proxy ? m->src_id : m->rref_id);
	o = rr_owner_for(ctx, req, id, rte_be_to_cpu_64(proxy ? m->src_fork : m->fork_id));
	if (o == NULL) {
		rr_not_here(req, id);
		return 0;
	}
	dp_req_set_hook(req, &rr_hold_hook, o, NULL);
	rr_wait_value(req, o, proxy ? rr_proxy_ready : rr_fetch_ready);
	return 0;
}

static int
rr_h_fetch(struct dprpc_request *req, void *arg)
{
	return rr_h_wait(req, arg, false);
}

static int
rr_h_proxy(struct dprpc_request *req, void *arg)
{
	return rr_h_wait(req, arg, true);
}

static void
rr_send_accept(struct rr_ctx *ctx, unsigned int parent, uint64_t rref_id, uint64_t fork)
{
	struct rr_msg m;

	rr_msg_fill(&m, rref_id, fork, 0, 0, 0, ctx->rank, 0);
	rr_send_bg(ctx, parent, ctx->h_accept, &m);
}

static int
rr_h_notify(struct dprpc_request *req, void *arg)
{
	struct rr_ctx *ctx = arg;
	const void *args;
	uint32_t alen;
	const struct rr_msg *m = rr_parse(req, &args, &alen);
	struct rr_owner *o;
	unsigned int parent;
	uint64_t id, fork;
	int rc = 0;

	if (m == NULL)
		return -EPROTO;
	id = rte_be_to_cpu_64(m->rref_id);
	fork = rte_be_to_cpu_64(m->fork_id);
	parent = rte_be_to_cpu_16(m->parent);
	if (parent >= dprpc_world_size(dprpc_request_agent(req)))
		return -EPROTO;
	o = rr_owner_get_or_wait(ctx, id, rte_be_to_cpu_16(m->flags) & RR_F_PARENT_UNCF);
	if (o == NULL) {
		rc = -ENOENT;
	} else if (parent == ctx->rank) {
		/* Forked by the owner, which recorded the fork then. */
		if (!rr_fork_known(ctx, fork, id))
			rc = -ENOENT;
		rr_owner_put(o);
	} else {
		rc = rr_fork_add(ctx, fork, o);
		if (rc != 0)
			rr_owner_put(o);
	}
	/* The parent's pending reference goes whatever the answer: a child
	 * the owner refused will never hold a reference. */
	if (parent != ctx->rank)
		rr_send_accept(ctx, parent, id, fork);
	if (rc == 0)
		rr_reply(req, NULL, 0);
	else if (rc == -ENOENT)
		rr_not_here(req, id);
	else
		rr_reply_error(req, rc, "fork refused by the owner");
	return 0;
}

static void
rr_pending_drop(struct rr_ctx *ctx, struct rr_node *n)
{
	struct rr_pending *p = caa_container_of(n, struct rr_pending, n);
	struct dprpc_rref *parent = p->parent;

	if (!rr_remove(ctx->pending, n, rr_free_node_rcu))
		return;
	rr_dec(&ctx->n_pending_forks);
	rr_handle_put(parent);
}

static int
rr_h_accept(struct dprpc_request *req, void *arg)
{
	struct rr_ctx *ctx = arg;
	const void *args;
	uint32_t alen;
	const struct rr_msg *m = rr_parse(req, &args, &alen);
	struct rr_node *n;

	if (m == NULL)
		return -EPROTO;
	dp_rcu_read_lock();
	n = rr_find(ctx->pending, rte_be_to_cpu_64(m->fork_id));
	if (n != NULL)
		rr_pending_drop(ctx, n);
	dp_rcu_read_unlock();
	if (n == NULL)
		rr_inc(&ctx->deletes_unknown);
	rr_reply(req, NULL, 0);
	return 0;
}

static int
rr_h_delete(struct dprpc_request *req, void *arg)
{
	struct rr_ctx *ctx = arg;
	const void *args;
	uint32_t alen;
	const struct rr_msg *m = rr_parse(req, &args, &alen);
	struct rr_owner *o;
	uint64_t id, fork;

	if (m == NULL)
		return -EPROTO;
	id = rte_be_to_cpu_64(m->rref_id);
	fork = rte_be_to_cpu_64(m->fork_id);
	if (rr_fork_del(ctx, fork, id) != 0) {
		/* The creator gives up an RRef whose REMOTE never came (it
		 * failed there): drop the placeholder. */
		o = rr_owner_get(ctx, id);
		if (o != NULL && fork == id && rr_creator(id) == dprpc_request_caller(req) &&
			atomic_exchange_explicit(&o->placeholder, false, memory_order_acq_rel)) {
			(void)dprpc_future_fail(o->val, -ECANCELED, ctx->rank,
				"the RRef's creation never reached its owner");
			rr_owner_put(o);
		} else {
			rr_inc(&ctx->deletes_unknown);
		}
		if (o != NULL)
			rr_owner_put(o);
	}
	rr_reply(req, NULL, 0);
	return 0;
}

/* --- the public calls --------------------------------------------------- */

static struct dprpc_rref *
rr_remote(struct rr_ctx *ctx, unsigned int to, uint32_t hid, const struct dprpc_rref *src,
	const void *args, size_t len, uint64_t timeout_us)
{
	struct dprpc_agent *a = ctx->a;
	uint64_t id = rr_new_id(ctx);
	uint16_t flags = src != NULL ? RR_F_PROXY : 0;
	struct dprpc_future *f;
	struct dprpc_rref *r;
	struct rr_owner *o;
	struct rr_msg m;

	if (to >= dprpc_world_size(a) || (args == NULL && len > 0)) {
		rte_errno = EINVAL;
		return NULL;
	}
	if (len > DPRPC_RREF_ARGS_MAX) {
		rte_errno = EMSGSIZE;
		return NULL;
	}
	if (to == ctx->rank) {
		/* Owned here: the entry exists before the handle returns. */
		o = rr_owner_new(ctx, id, 1, false);
		if (o == NULL)
			return NULL;
		r = rr_handle_owner(ctx, o);
		if (r == NULL) {
			rr_owner_put(o);
			return NULL;
		}
		rr_msg_fill(&m, id, 0, src != NULL ? src->rref_id : 0, src != NULL ? src->n.key : 0,
			hid, ctx->rank, flags | RR_F_LOCAL);
		f = rr_call(ctx, to, ctx->h_remote, &m, args, len, timeout_us);
		if (f == NULL) {
			int e = rte_errno;

			rr_handle_put(r);
			rte_errno = e;
			return NULL;
		}
		/* The ack matters not: the value's future tells all. */
		dprpc_future_put(f);
		return r;
	}
	r = rr_handle_user(ctx, id, id, to);
	if (r == NULL)
		return NULL;
	r->value_in_created = true;
	rr_msg_fill(&m, id, id, src != NULL ? src->rref_id : 0, src != NULL ? src->n.key : 0, hid,
		ctx->rank, flags);
	f = rr_call(ctx, to, ctx->h_remote, &m, args, len, timeout_us);
	if (f == NULL) {
		int e = rte_errno;

		rr_handle_user_discard(r);
		rte_errno = e;
		return NULL;
	}
	rr_user_confirm_by(r, f);
	return r;
}

struct dprpc_rref *
dprpc_remote_id(struct dprpc_agent *a, unsigned int to, uint32_t handler_id, const void *args,
	size_t len, uint64_t timeout_us)
{
	struct rr_ctx *ctx;

	if (a == NULL || (ctx = rr_ctx_of(a)) == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	return rr_remote(ctx, to, handler_id, NULL, args, len, timeout_us);
}

struct dprpc_rref *
dprpc_remote(struct dprpc_agent *a, const char *to, const char *handler, const void *args,
	size_t len, uint64_t timeout_us)
{
	int rank = dp_resolve(a, to, handler);

	return rank < 0 ? NULL
			: dprpc_remote_id(a, (unsigned int)rank, dprpc_handler_id(handler), args,
				  len, timeout_us);
}

struct dprpc_rref *
dprpc_rref_create_local(struct dprpc_agent *a, const void *value, size_t len)
{
	struct rr_owner *o;
	struct dprpc_rref *r;
	struct rr_ctx *ctx;

	if (a == NULL || (ctx = rr_ctx_of(a)) == NULL || (value == NULL && len > 0)) {
		rte_errno = EINVAL;
		return NULL;
	}
	if (len > DPRPC_RREF_VALUE_MAX) {
		rte_errno = EMSGSIZE;
		return NULL;
	}
	o = rr_owner_new(ctx, rr_new_id(ctx), 1, false);
	if (o == NULL)
		return NULL;
	if (dprpc_future_complete_copy(o->val, value, len) != 0) {
		rr_owner_put(o);
		rte_errno = ENOMEM;
		return NULL;
	}
	r = rr_handle_owner(ctx, o);
	if (r == NULL)
		rr_owner_put(o);
	return r;
}

int
dprpc_rref_release(struct dprpc_rref *r)
{
	if (r == NULL)
		return -EINVAL;
	/* Acq_rel: one of release() and shutdown drops the reference. */
	if (atomic_exchange_explicit(&r->released, true, memory_order_acq_rel))
		return -EINVAL;
	rr_handle_put(r);
	return 0;
}

bool
dprpc_rref_is_owner(const struct dprpc_rref *r)
{
	return r->is_owner;
}

unsigned int
dprpc_rref_owner(const struct dprpc_rref *r)
{
	return r->owner;
}

const char *
dprpc_rref_owner_name(const struct dprpc_rref *r)
{
	return dprpc_worker_name(r->ctx->a, r->owner);
}

uint64_t
dprpc_rref_id(const struct dprpc_rref *r)
{
	return r->rref_id;
}

struct dprpc_agent *
dprpc_rref_agent(const struct dprpc_rref *r)
{
	return r->ctx->a;
}

bool
dprpc_rref_confirmed_by_owner(const struct dprpc_rref *r)
{
	return r->is_owner || dprpc_future_state(r->created) == DPRPC_FUTURE_DONE;
}

struct dprpc_future *
dprpc_rref_creation_future(struct dprpc_rref *r)
{
	struct dprpc_future *f = r->is_owner ? r->own->val : r->created;

	dprpc_future_get(f);
	return f;
}

int
dprpc_rref_local_value(const struct dprpc_rref *r, const void **value, size_t *len)
{
	const struct dprpc_error *e;

	if (r == NULL || value == NULL || len == NULL)
		return -EINVAL;
	if (!r->is_owner)
		return -EPERM;
	switch (dprpc_future_state(r->own->val)) {
	case DPRPC_FUTURE_DONE:
		*value = dprpc_future_value(r->own->val, len);
		return 0;
	case DPRPC_FUTURE_FAILED:
		e = dprpc_future_error(r->own->val);
		return e->code;
	default:
		return -EAGAIN;
	}
}

/* A use of a user RRef whose creation failed: that error. */
static const struct dprpc_error *
rr_creation_error(const struct dprpc_rref *r)
{
	return r->is_owner ? NULL : dprpc_future_error(r->created);
}

struct dprpc_future *
dprpc_rref_to_here_async(struct dprpc_rref *r, uint64_t timeout_us)
{
	const struct dprpc_error *e;
	struct rr_msg m;

	if (r == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	if (r->is_owner) {
		dprpc_future_get(r->own->val);
		return r->own->val;
	}
	if (r->value_in_created) {
		/* The confirmation brings the value (or the creation's error). */
		dprpc_future_get(r->created);
		return r->created;
	}
	e = rr_creation_error(r);
	if (e != NULL)
		return rr_failed_future(r->ctx, e);
	rr_msg_fill(&m, r->rref_id, r->n.key, 0, 0, 0, r->ctx->rank, 0);
	return rr_call(r->ctx, r->owner, r->ctx->h_fetch, &m, NULL, 0, timeout_us);
}

int
dprpc_rref_to_here(struct dprpc_rref *r, uint64_t timeout_us, void *out, size_t *out_len,
	struct dprpc_error *err)
{
	struct dprpc_future *f = dprpc_rref_to_here_async(r, timeout_us);

	if (f == NULL)
		return -rte_errno;
	/* A fetch has the call's timeout; the owner's value and a creation
	 * future have none of their own (or the creation's), so the wait is
	 * bounded. */
	if (timeout_us == DPRPC_TIMEOUT_DEFAULT)
		timeout_us = dp_agent_default_timeout_us(r->ctx->a);
	return dp_sync_wait(r->ctx->a, f, timeout_us, out, out_len, err);
}

struct dprpc_future *
dprpc_rref_rpc_async_id(struct dprpc_rref *r, uint32_t handler_id, const void *args, size_t len,
	uint64_t timeout_us)
{
	const struct dprpc_error *e;
	struct rr_msg m;

	if (r == NULL || (args == NULL && len > 0)) {
		rte_errno = EINVAL;
		return NULL;
	}
	e = rr_creation_error(r);
	if (e != NULL)
		return rr_failed_future(r->ctx, e);
	rr_msg_fill(&m, 0, 0, r->rref_id, r->is_owner ? 0 : r->n.key, handler_id, r->ctx->rank, 0);
	return rr_call(r->ctx, r->owner, r->ctx->h_proxy, &m, args, len, timeout_us);
}

struct dprpc_future *
dprpc_rref_rpc_async(struct dprpc_rref *r, const char *handler, const void *args, size_t len,
	uint64_t timeout_us)
{
	if (handler == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	return dprpc_rref_rpc_async_id(r, dprpc_handler_id(handler), args, len, timeout_us);
}

int
dprpc_rref_rpc_sync(struct dprpc_rref *r, const char *handler, const void *args, size_t len,
	uint64_t timeout_us, void *out, size_t *out_len, struct dprpc_error *err)
{
	struct dprpc_future *f = dprpc_rref_rpc_async(r, handler, args, len, timeout_us);

	if (f == NULL)
		return -rte_errno;
	return dp_sync_wait(r->ctx->a, f, 0, out, out_len, err);
}

struct dprpc_rref *
dprpc_rref_remote(struct dprpc_rref *r, const char *handler, const void *args, size_t len,
	uint64_t timeout_us)
{
	const struct dprpc_error *e;

	if (r == NULL || handler == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	e = rr_creation_error(r);
	if (e != NULL) {
		rte_errno = -e->code;
		return NULL;
	}
	return rr_remote(r->ctx, r->owner, dprpc_handler_id(handler), r, args, len, timeout_us);
}

const void *
dprpc_request_rref_value(const struct dprpc_request *req, size_t *len)
{
	uint32_t n;
	const void *v = dp_req_input(req, &n);

	if (len != NULL)
		*len = n;
	return v;
}

int
dprpc_rref_fork(struct dprpc_rref *r, void *buf, size_t cap)
{
	struct rr_ctx *ctx;
	struct rr_fork_data d;
	struct rr_pending *p;
	const struct dprpc_error *e;
	uint64_t child;
	uint16_t flags = 0;
	int rc;

	if (r == NULL || buf == NULL)
		return -EINVAL;
	if (cap < DPRPC_RREF_FORK_SIZE)
		return -ENOSPC;
	ctx = r->ctx;
	e = rr_creation_error(r);
	if (e != NULL)
		return e->code;
	child = rr_new_id(ctx);
	if (r->is_owner) {
		/* The owner records the child at once. */
		atomic_fetch_add_explicit(&r->own->refs, 1, memory_order_relaxed);
		rc = rr_fork_add(ctx, child, r->own);
		if (rc != 0) {
			rr_owner_put(r->own);
			return rc;
		}
	} else {
		/* G2: the child keeps this handle's reference until the owner
		 * confirms it (ACCEPT). */
		p = malloc(sizeof(*p));
		if (p == NULL)
			return -ENOMEM;
		p->n.key = child;
		p->parent = r;
		atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
		(void)rr_insert(ctx->pending, &p->n); /* fresh key */
		rr_inc(&ctx->n_pending_forks);
		if (!dprpc_rref_confirmed_by_owner(r))
			flags |= RR_F_PARENT_UNCF;
	}
	memset(&d, 0, sizeof(d));
	d.magic = rte_cpu_to_be_32(RR_FORK_MAGIC);
	d.owner = rte_cpu_to_be_16(r->owner);
	d.parent = rte_cpu_to_be_16(ctx->rank);
	d.rref_id = rte_cpu_to_be_64(r->rref_id);
	d.fork_id = rte_cpu_to_be_64(child);
	d.flags = rte_cpu_to_be_16(flags);
	memcpy(buf, &d, sizeof(d));
	return DPRPC_RREF_FORK_SIZE;
}

struct dprpc_rref *
dprpc_rref_from_fork(struct dprpc_agent *a, const void *buf, size_t len)
{
	struct rr_fork_data d;
	unsigned int owner, parent, i;
	uint64_t id, child;
	struct rr_owner *o;
	struct dprpc_future *f;
	struct dprpc_rref *r;
	struct rr_ctx *ctx;
	struct rr_msg m;
	uint16_t flags;

	if (a == NULL || (ctx = rr_ctx_of(a)) == NULL || buf == NULL ||
		len != DPRPC_RREF_FORK_SIZE) {
		rte_errno = EINVAL;
		return NULL;
	}
	memcpy(&d, buf, sizeof(d));
	owner = rte_be_to_cpu_16(d.owner);
	parent = rte_be_to_cpu_16(d.parent);
	id = rte_be_to_cpu_64(d.rref_id);
	child = rte_be_to_cpu_64(d.fork_id);
	flags = rte_be_to_cpu_16(d.flags);
	for (i = 0; i < sizeof(d.zero); i++)
		if (d.zero[i] != 0)
			break;
	if (rte_be_to_cpu_32(d.magic) != RR_FORK_MAGIC || i != sizeof(d.zero) ||
		owner >= dprpc_world_size(a) || parent >= dprpc_world_size(a) ||
		rr_creator(id) >= dprpc_world_size(a) || rr_creator(child) != parent ||
		(flags & ~RR_F_PARENT_UNCF) != 0) {
		rte_errno = EPROTO;
		return NULL;
	}
	if (owner == ctx->rank) {
		o = rr_owner_get(ctx, id);
		if (o == NULL) {
			rte_errno = ENOENT;
			return NULL;
		}
		r = rr_handle_owner(ctx, o);
		if (r == NULL) {
			rr_owner_put(o);
			return NULL;
		}
		if (parent == ctx->rank)
			(void)rr_fork_del(ctx, child, id); /* the fork is now a local handle */
		else
			rr_send_accept(ctx, parent, id, child);
		return r;
	}
	r = rr_handle_user(ctx, child, id, owner);
	if (r == NULL)
		return NULL;
	rr_msg_fill(&m, id, child, 0, 0, 0, (uint16_t)parent, flags);
	f = rr_call(ctx, owner, ctx->h_notify, &m, NULL, 0, DPRPC_TIMEOUT_DEFAULT);
	if (f == NULL) {
		int e = rte_errno;

		rr_handle_user_discard(r);
		rte_errno = e;
		return NULL;
	}
	rr_user_confirm_by(r, f);
	return r;
}

/* --- inspection and shutdown -------------------------------------------- */

static uint64_t
rr_load(const _Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

int
dprpc_rref_debug_info(const struct dprpc_agent *a, struct dprpc_rref_debug *d)
{
	struct rr_ctx *ctx;
	struct cds_lfht_iter it;
	struct dprpc_rref *r;
	uint64_t pending = 0;

	if (a == NULL || (ctx = rr_ctx_of(a)) == NULL || d == NULL)
		return -EINVAL;
	dp_rcu_read_lock();
	rr_for_each_entry(ctx->handles, &it, r,
		n.node) if (!r->is_owner && !dprpc_future_is_done(r->created)) pending++;
	dp_rcu_read_unlock();
	*d = (struct dprpc_rref_debug){
		.num_owner_rrefs = rr_load(&ctx->n_owners),
		.num_forks = rr_load(&ctx->n_forks),
		.num_owner_handles = rr_load(&ctx->n_owner_handles),
		.num_users = rr_load(&ctx->n_users),
		.num_pending_users = pending,
		.num_pending_forks = rr_load(&ctx->n_pending_forks),
		.deletes_unknown = rr_load(&ctx->deletes_unknown),
		.messages_failed = rr_load(&ctx->messages_failed),
	};
	return 0;
}

int
dprpc_rref_list(struct dprpc_agent *a, struct dprpc_rref_info *out, unsigned int n)
{
	struct cds_lfht_iter it;
	struct rr_ctx *ctx;
	struct rr_owner *o;
	struct dprpc_rref *r;
	struct rr_pending *p;
	unsigned int k = 0;

	if (a == NULL || (ctx = rr_ctx_of(a)) == NULL || (out == NULL && n > 0))
		return -EINVAL;
	dp_rcu_read_lock();
	rr_for_each_entry(ctx->owners, &it, o, n.node)
	{
		if (k < n)
			out[k] = (struct dprpc_rref_info){.kind = DPRPC_RREF_OWNED,
				.confirmed = true,
				.owner = ctx->rank,
				.rref_id = o->n.key,
				.refs = atomic_load_explicit(&o->refs, memory_order_relaxed)};
		k++;
	}
	rr_for_each_entry(ctx->handles, &it, r, n.node)
	{
		if (r->is_owner)
			continue; /* counted in its owner entry */
		if (k < n)
			out[k] = (struct dprpc_rref_info){.kind = DPRPC_RREF_USER,
				.confirmed = dprpc_rref_confirmed_by_owner(r),
				.owner = r->owner,
				.rref_id = r->rref_id,
				.fork_id = r->n.key};
		k++;
	}
	rr_for_each_entry(ctx->pending, &it, p, n.node)
	{
		if (k < n)
			out[k] = (struct dprpc_rref_info){.kind = DPRPC_RREF_PENDING_FORK,
				.owner = p->parent->owner,
				.rref_id = p->parent->rref_id,
				.fork_id = p->n.key};
		k++;
	}
	dp_rcu_read_unlock();
	return (int)k;
}

void
dprpc_rref_dump(struct dprpc_agent *a, FILE *f)
{
	static const char *const kinds[] = {"owned", "user", "pending fork"};
	struct dprpc_rref_info info[64];
	struct dprpc_rref_debug d;
	int n, i;

	if (a == NULL || f == NULL || dprpc_rref_debug_info(a, &d) != 0)
		return;
	fprintf(f,
		"rrefs of %s: owned %" PRIu64 " (forks %" PRIu64 ", local handles %" PRIu64
		"), users %" PRIu64 " (pending %" PRIu64 "), pending forks %" PRIu64
		", unknown deletes %" PRIu64 ", failed messages %" PRIu64 "\n",
		dprpc_agent_name(a), d.num_owner_rrefs, d.num_forks, d.num_owner_handles,
		d.num_users, d.num_pending_users, d.num_pending_forks, d.deletes_unknown,
		d.messages_failed);
	n = dprpc_rref_list(a, info, RTE_DIM(info));
	for (i = 0; i < n && i < (int)RTE_DIM(info); i++)
		fprintf(f, "  %-12s rref %016" PRIx64 " fork %016" PRIx64 " owner %u%s refs %u\n",
			kinds[info[i].kind], info[i].rref_id, info[i].fork_id, info[i].owner,
			info[i].confirmed ? "" : " (unconfirmed)", info[i].refs);
	if (n > (int)RTE_DIM(info))
		fprintf(f, "  ... %d more\n", n - (int)RTE_DIM(info));
}

/* Drop the application's reference of every handle (shutdown). */
static void
rr_release_all_handles(struct rr_ctx *ctx)
{
	struct cds_lfht_iter it;
	struct dprpc_rref *r;

	dp_rcu_read_lock();
	rr_for_each_entry(ctx->handles, &it, r,
		n.node) if (!atomic_exchange_explicit(&r->released, true, memory_order_acq_rel))
		rr_handle_put(r);
	dp_rcu_read_unlock();
}

static bool
rr_settled(struct rr_ctx *ctx)
{
	return rr_load(&ctx->n_owners) == 0 && rr_load(&ctx->n_users) == 0 &&
	       rr_load(&ctx->n_pending_forks) == 0 &&
	       atomic_load_explicit(&ctx->msgs_waiting, memory_order_acquire) <= 0;
}

int
dprpc_rref_shutdown(struct dprpc_agent *a, uint64_t timeout_us, unsigned int flags)
{
	struct rr_ctx *ctx;
	uint64_t deadline;
	int left;

	if (a == NULL || (ctx = rr_ctx_of(a)) == NULL || dp_on_poller(a))
		return -EINVAL;
	rr_release_all_handles(ctx);
	deadline = timeout_us == 0 ? UINT64_MAX
				   : rte_rdtsc() + (uint64_t)((__uint128_t)timeout_us *
							      rte_get_tsc_hz() / 1000000);
	while (!rr_settled(ctx) && rte_rdtsc() < deadline) {
		if (dp_agent_has_io_lcore(a) || dprpc_poll(a, 0) <= 0)
			usleep(100);
	}
	if (!(flags & DPRPC_RREF_REPORT_LEAKS))
		return 0;
	left = dprpc_rref_list(a, NULL, 0);
	if (left > 0) {
		DP_LOG(WARNING, "agent %s: %d RRef contexts left at shutdown", dprpc_agent_name(a),
			left);
		dprpc_rref_dump(a, stderr);
	}
	return left;
}

/* --- life cycle --------------------------------------------------------- */

/* The extension's init (dp_ext.h): the tables, the RRef future pool, the
 * retry ring, and the reserved "dprpc.rref.*" handlers. */
static int
rr_ctx_create(struct dprpc_agent *a, const struct dprpc_agent_conf *c, void **state)
{
	static const struct {
		const char *name;
		dprpc_handler_t fn;
		size_t off;
	} handlers[] = {
		{"dprpc.rref.remote", rr_h_remote, offsetof(struct rr_ctx, h_remote)},
		{"dprpc.rref.fetch", rr_h_fetch, offsetof(struct rr_ctx, h_fetch)},
		{"dprpc.rref.proxy", rr_h_proxy, offsetof(struct rr_ctx, h_proxy)},
		{"dprpc.rref.notify", rr_h_notify, offsetof(struct rr_ctx, h_notify)},
		{"dprpc.rref.accept", rr_h_accept, offsetof(struct rr_ctx, h_accept)},
		{"dprpc.rref.delete", rr_h_delete, offsetof(struct rr_ctx, h_delete)},
	};
	char name[RTE_RING_NAMESIZE];
	struct rr_ctx *ctx;
	unsigned int i;
	int rc;

	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL)
		return -ENOMEM;
	ctx->a = a;
	ctx->rank = (uint16_t)dprpc_agent_rank(a);
	*state = ctx;
	atomic_init(&ctx->next_id, 1);
	ctx->fpool = dprpc_future_pool_create(c->max_rrefs, c->max_rrefs * 2);
	snprintf(name, sizeof(name), "dprr_%u", dp_agent_instance(a));
	ctx->retry = rte_ring_create(name, RR_RETRY_RING, c->socket_id, RING_F_SC_DEQ);
	ctx->owners = cds_lfht_new_flavor(
		1024, 1024, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, &urcu_qsbr_flavor, NULL);
	ctx->forks = cds_lfht_new_flavor(
		1024, 1024, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, &urcu_qsbr_flavor, NULL);
	ctx->handles = cds_lfht_new_flavor(
		1024, 1024, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, &urcu_qsbr_flavor, NULL);
	ctx->pending = cds_lfht_new_flavor(
		64, 64, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, &urcu_qsbr_flavor, NULL);
	if (ctx->fpool == NULL || ctx->retry == NULL || ctx->owners == NULL || ctx->forks == NULL ||
		ctx->handles == NULL || ctx->pending == NULL)
		return -ENOMEM; /* rr_ctx_free() releases what was made */
	for (i = 0; i < RTE_DIM(handlers); i++) {
		rc = dp_register(
			a, handlers[i].name, handlers[i].fn, ctx, DPRPC_HANDLER_INLINE, true);
		if (rc != 0)
			return rc;
		*(uint32_t *)((char *)ctx + handlers[i].off) = dprpc_handler_id(handlers[i].name);
	}
	return 0;
}

/* The extension's closing: no RRef message leaves any more. */
static void
rr_ctx_closing(void *state)
{
	struct rr_ctx *ctx = state;

	/* Release: pairs with the acquire load in rr_send_bg(). */
	atomic_store_explicit(&ctx->closing, true, memory_order_release);
}

/* The extension's quiesce: every value still pending fails with
 * -ESHUTDOWN, which answers the requests waiting for one. */
static void
rr_ctx_quiesce(void *state)
{
	struct rr_ctx *ctx = state;
	struct cds_lfht_iter it;
	struct rr_owner *o;

	dp_rcu_read_lock();
	rr_for_each_entry(ctx->owners, &it, o, n.node)(void)
		dprpc_future_fail(o->val, -ESHUTDOWN, ctx->rank, "owner shut down");
	dp_rcu_read_unlock();
}

/* Empty a table at teardown: no other thread uses the agent any more. */
static void
rr_table_clear(struct cds_lfht *ht, void (*free_fn)(struct rcu_head *))
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;

	if (ht == NULL)
		return;
	dp_rcu_read_lock();
	cds_lfht_for_each(ht, &it, node) if (cds_lfht_del(ht, node) == 0)
		urcu_qsbr_call_rcu(&caa_container_of(node, struct rr_node, node)->rcu, free_fn);
	dp_rcu_read_unlock();
}

/* The extension's free: everything, without messages, after an RCU
 * barrier. */
static void
rr_ctx_free(void *state)
{
	struct rr_ctx *ctx = state;
	struct rr_retry *r;

	atomic_store_explicit(&ctx->closing, true, memory_order_release);
	rr_table_clear(ctx->pending, rr_free_node_rcu);
	rr_table_clear(ctx->handles, rr_handle_free_rcu);
	rr_table_clear(ctx->forks, rr_free_node_rcu);
	rr_table_clear(ctx->owners, rr_owner_free_rcu);
	/* Every call_rcu callback (ours and earlier ones) has run after this:
	 * the futures can go back to their pool. */
	urcu_qsbr_barrier();
	if (ctx->owners != NULL)
		(void)cds_lfht_destroy(ctx->owners, NULL);
	if (ctx->forks != NULL)
		(void)cds_lfht_destroy(ctx->forks, NULL);
	if (ctx->handles != NULL)
		(void)cds_lfht_destroy(ctx->handles, NULL);
	if (ctx->pending != NULL)
		(void)cds_lfht_destroy(ctx->pending, NULL);
	if (ctx->retry != NULL) {
		while (rte_ring_sc_dequeue(ctx->retry, (void **)&r) == 0)
			free(r);
		rte_ring_free(ctx->retry);
	}
	if (ctx->fpool != NULL)
		dprpc_future_pool_release(ctx->fpool);
	free(ctx);
}

const struct dp_ext_ops rr_extension = {
	.name = "rref",
	.init = rr_ctx_create,
	.timer = rr_ctx_timer,
	.quiesce = rr_ctx_quiesce,
	.closing = rr_ctx_closing,
	.free = rr_ctx_free,
};
