/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The poll loop (poll.c) and the poll flag (poll_lock.c).  Whoever holds
 * the poll flag (agent->polling) is the poller: dp_poll_trylock() and
 * dp_poll_unlock() (inline, dp_base.h) take and give it back, from any
 * thread; dp_rx_frame() runs on the poller; dp_idle() is any loop's
 * back-off; dp_lcore_io() is an io lcore's loop.  dp_on_poller() and
 * dp_progress() are declared in dp_ext.h.
 */
#ifndef DP_POLL_H
#define DP_POLL_H

#include <stdbool.h>
#include <stdint.h>

struct dprpc_agent;
struct dp_base;
struct dprpc_future;
struct rte_mbuf;

/* For a synchronous caller: poll, holding the poll flag throughout (one
 * exchange instead of one per poll), until @fut completes or the wait
 * grows long.  False if it did not (or could not) see it complete. */
bool dp_poll_until_done(struct dprpc_agent *a, const struct dprpc_future *fut);
/* How long the poller has been behind on its rx queue (dp_rx_behind()),
 * its thread's CPU time alone, read from the clock now (@now: the TSC).
 * The TSC age the poller keeps between clock reads (@now less
 * rx_behind_tsc) runs on through the poll, so it also counts any time the
 * poller spent off its CPU in the middle of a burst (20 ms seen on a
 * loaded machine: the requests after it in the burst were refused
 * -EBUSY); dp_inline_late() asks this before it refuses a request.
 * rx_behind_tsc is set again from it.  The TSC age if the clock cannot be
 * read or another thread started the run of full bursts.  The poller. */
uint64_t dp_rx_behind_cpu(struct dp_base *a, uint64_t now);
/* A full rx burst: the poller may be behind (poll_lock.c). */
void dp_rx_behind(struct dp_base *a);
/* The rx demux: a frame received, or looped back to ourselves. */
void dp_rx_frame(struct dprpc_agent *a, struct rte_mbuf *m);
void dp_idle(const struct dp_base *a, unsigned int *empty);
/* Whether dp_idle()'s step after @empty empty polls sleeps: after
 * idle_sleep of them, or after idle_pause while a thread waits in
 * dprpc_world_wait() on @a (poll_lock.c). */
bool dp_idle_sleeps(const struct dp_base *a, unsigned int empty);

/* One step of a waiting thread (a rendezvous, a leave, a join): -ETIMEDOUT
 * once the TSC reaches @deadline; else 0, having polled @a (unless an io
 * lcore does) or slept 100 us when there was nothing to do.  Any thread
 * but @a's poller. */
int dp_wait_step(struct dprpc_agent *a, uint64_t deadline); /* wait.c */
int dp_lcore_io(void *agent);

#endif /* DP_POLL_H */
