/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The poll flag (poll_lock.c): whoever holds it (agent->polling) is the
 * poller; dp_poll_trylock() and dp_poll_unlock() (inline, dp_base.h) take
 * and give it back, from any thread.  The poller's inline backlog
 * (dp_rx_behind()), and dp_idle(), any loop's back-off.  The poll loop
 * itself is the agent's (poll.c, dp_agent.h).  dp_on_poller() and
 * dp_progress() are declared in dp_ext.h.
 */
#ifndef DP_POLL_H
#define DP_POLL_H

#include <stdbool.h>
#include <stdint.h>

struct dp_base;

/* How long the poller has been behind on its rx queue (dp_rx_behind()) in
 * its thread's CPU time, read now (@now: the TSC): the TSC age kept between
 * reads also counts time off the CPU, so dp_inline_late() asks this before
 * it refuses a request; rx_behind_tsc is set again from it.  The TSC age if
 * the clock cannot be read or another thread began the run.  The poller. */
uint64_t dp_rx_behind_cpu(struct dp_base *a, uint64_t now);
/* A full rx burst: the poller may be behind (poll_lock.c). */
void dp_rx_behind(struct dp_base *a);
void dp_idle(const struct dp_base *a, unsigned int *empty);
/* Whether dp_idle()'s step after @empty empty polls sleeps: after
 * idle_sleep of them, or after idle_pause while a thread waits in
 * dprpc_world_wait() on @a (poll_lock.c). */
bool dp_idle_sleeps(const struct dp_base *a, unsigned int empty);

#endif /* DP_POLL_H */
