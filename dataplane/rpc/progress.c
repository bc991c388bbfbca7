/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Timeouts while the poller stalls (docs/architecture.md, "Timeouts"): the
 * timer runs on whoever holds the poll flag, and a holder taken off its CPU
 * holds it for milliseconds.  So a thread waiting on one of the agent's
 * futures that finds the flag held and the last tick older than
 * DP_STALL_US fails every started call past its expiry itself: the slots'
 * watch fields hold their futures, and fut_expire() takes a reference and
 * checks the future's own expiry, so a stale pointer is harmless.  One
 * completion wins (fut_claim()); the poller then only frees the slot.
 * Calls still in tx_ring are their waiters' to expire.  Every slot up to
 * max_outstanding is scanned: slots_hi is the poller's alone.  Any thread.
 */
#include <stdatomic.h>

#include "dp_rpc.h"
#include "dp_client.h"
#include "fut_internal.h"

void
dp_expire_stalled_scan(struct dp_rpc *a, uint64_t now)
{
	unsigned int p, i;

	for (p = 0; p < dp_world_n(&a->b); p++) {
		struct dp_peer *peer = &a->peers[p];

		for (i = 0; i < a->max_outstanding; i++) {
			/* Acquire: pairs with the release store in
			 * dp_start_call(). */
			struct dprpc_future *f =
				atomic_load_explicit(&peer->slots[i].watch, memory_order_acquire);

			if (f != NULL)
				(void)fut_expire(f, now, a->b.rank, peer->expire_msg);
		}
	}
}
