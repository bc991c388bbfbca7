/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Joining a running world (join.c, docs/worlds.md "Joining"): the state a
 * worker keeps as a joiner (while a thread is in dprpc_world_join()), as
 * the assigner of ranks, and as a member told of joiners.  The poller, but
 * dprpc_world_join() (the joining thread) and the accessors that read the
 * world's size (any thread, dp_world_n()).
 */
#ifndef DP_JOIN_H
#define DP_JOIN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <string.h>

#include "dp_wire.h"

struct dp_membership;
struct dp_parsed;
struct rte_mbuf;

struct dp_join {
	/* The joiner's side.  active: a thread is in dprpc_world_join();
	 * stored with release by that thread after it set tmpl, member and
	 * entries, loaded with acquire by the poller, which alone touches
	 * have, n, entries and left while it is set.  status: 0 while
	 * joining, 1 joined, or -errno refused; stored with release by the
	 * poller once the world is installed (or refused), loaded with
	 * acquire by the joining thread. */
	atomic_bool active;
	atomic_int status;
	/* A thread is in dprpc_world_join() (-EBUSY for another): claimed
	 * with acquire, released with release by that thread. */
	atomic_bool claimed;
	/* To the member named; aligned as the headers it holds need. */
	uint8_t tmpl[DP_L2L4_LEN] __rte_aligned(8);
	char member[DPRPC_NAME_MAX]; /* its name: DIR/NAME.join over memif */
	uint16_t n, have;
	/* The member's last challenge (a world with a key), echoed in our
	 * JOINs; 0: none yet. */
	uint64_t echo;
	struct dp_world_entry *entries; /* the members, by rank (world_cap) */
	uint8_t *left;			/* entries' states: DPRPC_PEER_LEFT or 0 */
	/* Every worker's side, poller only.  session[r]: the incarnation
	 * of the worker that joined as rank r (a duplicate JOIN of it gets
	 * the same rank; a JOIN of another incarnation under its name and
	 * address takes the rank over, prev_session[r] the one replaced, whose
	 * late JOINs are dropped).  The assigner's: announcing[r] while some member
	 * has not acknowledged the ANNOUNCE of rank r (acked[r]: those that
	 * have, a bit per rank), nb_announcing of them, the last round. */
	uint64_t session[DPRPC_MAX_WORKERS];
	uint64_t prev_session[DPRPC_MAX_WORKERS];
	bool announcing[DPRPC_MAX_WORKERS];
	uint64_t acked[DPRPC_MAX_WORKERS];
	unsigned int nb_announcing;
	uint64_t announce_tsc;
	/* A member whose join port answered a joiner the last page: the
	 * joiner's rank until it is heard from (then the port hangs up and
	 * listens again, dp_port_join_reset()); DP_RANK_NONE otherwise.
	 * port_owner_session: that joiner's incarnation (a rank joined again
	 * was heard from before, by its old one). */
	uint16_t port_owner;
	uint64_t port_owner_session;
};

/* A join frame (dst_worker DP_RANK_NONE) or a join operation between
 * members (handler_id DP_CTRL_JOIN and above); @m stays the caller's.
 * The poller. */
void dp_join_rx(struct dp_membership *a, const struct dp_parsed *p);
/* Resend JOIN (joiner) and ANNOUNCE (assigner) every DP_RDV_PING_MS. */
void dp_join_timer(struct dp_membership *a, uint64_t now);
/* Whether the timer has anything to do (relaxed: a hint). */
bool dp_join_busy(struct dp_membership *a);
/* dprpc_world_join()'s steps (wait.c), the joining thread's: the join
 * claimed (-EBUSY: another thread joins) and started through member @m
 * (-ENOMEM); its status (0 while joining, 1 joined, or -errno refused);
 * the poller stops acting for it; the claim released. */
int dp_join_begin(struct dp_membership *a, const struct dp_world_entry *m);
int dp_join_status(struct dp_membership *a);
void dp_join_stop(struct dp_membership *a);
void dp_join_release(struct dp_membership *a);
/* Free what the joiner's side allocated (destroy). */
void dp_join_free(struct dp_membership *a);

/* What join.c and join_assign.c share, the poller's. */
/* A world entry as a join frame carries it, and back. */
static inline void
dp_join_entry_out(struct dp_join_entry *o, const struct dp_world_entry *e)
{
	memset(o, 0, sizeof(*o));
	memcpy(o->name, e->name, sizeof(o->name));
	memcpy(o->mac, e->addr.mac.addr_bytes, sizeof(o->mac));
	o->ip = e->addr.ip;
	o->port = e->addr.port;
}

static inline void
dp_join_entry_in(struct dp_world_entry *e, const struct dp_join_entry *o)
{
	memcpy(e->name, o->name, sizeof(e->name));
	e->name[sizeof(e->name) - 1] = '\0';
	memcpy(e->addr.mac.addr_bytes, o->mac, sizeof(o->mac));
	e->addr.ip = o->ip;
	e->addr.port = o->port;
}
/* join.c: send a join operation @op with @len payload bytes, headers
 * from @tmpl, to rank @dst (DP_RANK_NONE: a worker not in the world),
 * @nonce in the header's req_num and status (0: none); to member @r. */
void dp_join_send(struct dp_membership *a, const uint8_t *tmpl, uint16_t dst, uint64_t dst_session,
	enum dp_ctrl_op op, const void *payload, uint32_t len, uint64_t nonce);
void dp_join_send_member(struct dp_membership *a, unsigned int r, enum dp_ctrl_op op,
	const struct dp_join_msg *msg, uint32_t len);
/* join_assign.c: whether a joiner can be reached from here; the assigner
 * as this worker sees it (never the worker named @joiner); the state
 * towards @r, allocated once (0 or -ENOMEM). */
bool dp_join_reachable(const struct dp_membership *a);
unsigned int dp_join_assigner(const struct dp_membership *a, const char *joiner);
int dp_join_peer(struct dp_membership *a, unsigned int r);
/* join_assign.c: the answer to the joiner of @q (its rank and a page of
 * members, or the refusal @status; EAGAIN with @nonce: a challenge); the JOIN @q at the assigner (ours, or
 * relayed by @via); an ANNOUNCE @q from @from at a member; whether every
 * other member acknowledged the announcement of @r (@send: announce it
 * again to those that did not). */
void dp_join_answer(struct dp_membership *a, const struct dp_join_msg *q, unsigned int rank,
	int status, uint64_t nonce);
void dp_join_assign(struct dp_membership *a, const struct dp_join_msg *q, unsigned int via);
void dp_join_announce_rx(struct dp_membership *a, unsigned int from, const struct dp_join_msg *q);
bool dp_join_announced(struct dp_membership *a, unsigned int r, bool send);

#endif /* DP_JOIN_H */
