/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Timeouts while the poller stalls.  The timer runs on whoever holds the
 * poll flag, and a holder the scheduler takes off the CPU holds it until
 * it runs again: with more threads than cores, or other processes busy,
 * that is milliseconds to tens of them (perf lateness: 4 application
 * threads on 2 cores, one of them shared with a busy peer: the holder was
 * off the CPU 40 to 57 ms at a time, 0.1 ms of CPU time over the hold).
 * So a thread waiting on one of the agent's futures that finds the flag
 * held (or an io lcore) and the last tick older than DP_STALL_US fails
 * every started call past its expiry (its deadline + DP_STALL_US) itself:
 * the slots' watch fields hold their futures, and fut_expire() takes a
 * reference, checks the future's own expiry and fails it.  Exactly one
 * completion wins (fut_claim()), so the poller, when it runs again, finds
 * the future done and only frees the slot.  Callbacks of a call failed
 * here run on this thread, not on the poller.  Calls still in tx_ring (not
 * started) are not seen here; their waiters check their expiry
 * (fut_wait_until()), and the poller starts them within a poll of running
 * again.  All slots up to max_outstanding are scanned: slots_hi is the
 * poller's alone.
 *
 * Whether the last tick is that old is asked inline (dp_expire_stalled(),
 * dp_client.h); the scan is here.  Any thread.
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
