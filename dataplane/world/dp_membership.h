/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The world layer of an agent (struct dp_membership, which begins with its
 * rpc layer, dp_rpc.h): joining a running world (dp_join.h), leaving it
 * (rendezvous.c), the rendezvous's pings.  The agent embeds it
 * (dp_agent.h).  Never installed.
 */
#ifndef DP_MEMBERSHIP_H
#define DP_MEMBERSHIP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <dprpc/dprpc_agent.h>

#include "dp_join.h"
#include "dp_rpc.h"

/* Where this agent's leave stands towards one peer (dprpc_world_leave()). */
struct dp_leave {
	/* While this agent leaves: the peer acknowledged our LEAVE.  Written
	 * by the poller, read by the thread in dprpc_world_leave(): on its
	 * LEAVE_ACK with a release store that publishes the link's quiet
	 * (dp_leave_rx()), paired with that thread's acquire load; relaxed
	 * where it only ends the wait (the link gone). */
	atomic_bool leave_acked;
	/* While this agent leaves: our LEAVE went to the peer (the poller's
	 * timer sets it; dprpc_world_leave() clears it first; relaxed, as
	 * leave_acked). */
	atomic_bool leave_sent;
	/* While this agent leaves: the peer's LEAVE crossed ours on its own
	 * memif link and, ours being the higher rank, we did not answer it
	 * but wait for its answer to ours, reading the link until it comes
	 * (rendezvous.c): dprpc_world_leave() does not return before, and
	 * the poller's timer sends our LEAVE again meanwhile.  Set and
	 * cleared by the poller (its LEAVE_ACK, or the link gone), cleared
	 * first by dprpc_world_leave(); ordered as leave_acked. */
	atomic_bool answer_due;
};

struct dp_membership {
	struct dp_rpc r; /* first: the world layer is its rpc layer too */
	struct dp_join join;
	/* A thread is in dprpc_world_leave(): the poller sends LEAVE to the
	 * workers that have not acknowledged it (relaxed: a hint, as
	 * startup_waiters). */
	atomic_bool leaving;
	uint64_t rdv_ping_tsc; /* poller only: the last round of pings */
	/* DP_LINK_ANSWERED_WAIT_MS in TSC cycles (dp_link_awaits_close());
	 * a field so that a test can lengthen it. */
	uint64_t link_answered_wait_tsc;
	struct dp_leave leave[DPRPC_MAX_WORKERS]; /* by peer rank */
};

/* The agent @a seen as its world layer, which it begins with: a cast, no
 * load. */
static inline struct dp_membership *
dp_membership_of_mut(struct dprpc_agent *a)
{
	return (struct dp_membership *)(void *)a;
}

static inline const struct dp_membership *
dp_membership_of_const(const struct dprpc_agent *a)
{
	return (const struct dp_membership *)(const void *)a;
}

#define dp_membership_of(a) \
	_Generic((a),                                                                              \
		const struct dprpc_agent *: dp_membership_of_const,                                \
		struct dprpc_agent *: dp_membership_of_mut)(a)

_Static_assert(offsetof(struct dp_membership, r) == 0, "the world layer begins with its rpc layer");

#endif /* DP_MEMBERSHIP_H */
