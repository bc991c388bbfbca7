/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The poll flag (agent->polling) makes one thread at a time the poller:
 *  - Invariants.  At most one thread holds the flag; only the holder
 *    touches the poller-only state (the port's queues, tx_buf, the slots,
 *    the consumer side of tx_ring and the producer side of the handler
 *    lcores' rings), and dp_tls_poller names the agent on that thread.
 *  - Ordering.  dp_poll_trylock() exchanges it to true with acquire,
 *    dp_poll_unlock() stores false with release: a poller's writes happen
 *    before the next poller's reads.
 *  - Progress.  Taking the flag never waits: dprpc_poll() returns -EBUSY
 *    to a thread that finds it held, and a synchronous caller falls back
 *    to the future's generic wait.  dp_poll_until_done() gives the flag
 *    back after idle_yield empty polls, so it cannot keep it from an io
 *    lcore or another caller for long.
 *  - Reclamation.  Nothing is freed through the flag.  The loop reports
 *    the RCU quiescent states that extensions' readers need (dp_rcu.h):
 *    on every timer tick and, on a thread that polls only for a while, by
 *    going offline as it gives the flag up.
 *
 * Here: the flag's thread-local side (dp_tls_poller, dp_on_poller()), the
 * poller's inline backlog (dp_rx_behind()), and the idle back-off of any
 * loop (dp_idle()).  Taking and giving back the flag is inline
 * (dp_poll_trylock(), dp_poll_unlock()).
 */
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <rte_pause.h>

#include "dp_base.h"
#include "dp_poll.h"
#include "dprpc_atomic.h"

__thread struct dp_base *dp_tls_poller __attribute__((tls_model("initial-exec")));

/* The thread's CPU time in TSC cycles (0 if it cannot be read). */
static uint64_t
dp_thread_cpu_tsc(const struct dp_base *a)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return dp_us_to_tsc(a, (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000);
}

/* A full rx burst: frames may be left in the port's queue, the poller is
 * behind (dp_inline_late()).  From the first of a run of full bursts, the
 * requests still queued wait behind the inline handlers run since
 * (rx_handler_tsc), capped by the thread's CPU time (docs/serving.md,
 * "Bounded queues and the overload answer").  One clock read per full
 * burst, none otherwise. */
void __rte_noinline
dp_rx_behind(struct dp_base *a)
{
	uint64_t cpu = dp_thread_cpu_tsc(a);

	a->rx_full_tsc = a->now_tsc;
	if (!a->rx_backlog || a->rx_behind_thread != (void *)&dp_tls_poller) {
		a->rx_backlog = true;
		a->rx_behind_thread = (void *)&dp_tls_poller;
		a->rx_behind_cpu = cpu;
		a->rx_handler_tsc = 0;
	}
	a->rx_behind_tsc = a->now_tsc - (cpu - a->rx_behind_cpu);
}

uint64_t
dp_rx_behind_cpu(struct dp_base *a, uint64_t now)
{
	uint64_t cpu;

	if (a->rx_behind_thread != (void *)&dp_tls_poller)
		return now - a->rx_behind_tsc;
	cpu = dp_thread_cpu_tsc(a);
	if (cpu == 0 || cpu < a->rx_behind_cpu)
		return now - a->rx_behind_tsc;
	a->rx_behind_tsc = now - (cpu - a->rx_behind_cpu);
	return cpu - a->rx_behind_cpu;
}

bool
dp_on_poller(const struct dprpc_agent *a)
{
	return dp_tls_poller == dp_base_of(a);
}

/* Whether the next idle step sleeps: after idle_sleep empty polls, or
 * after idle_pause while a thread waits in dprpc_world_wait() (its CPU goes
 * to the workers starting up).  Not sooner while the world ends: a leaver
 * must read a LEAVE_ACK at once (docs/architecture.md, "Idle back-off"). */
bool
dp_idle_sleeps(const struct dp_base *a, unsigned int empty)
{
	if (empty + 1 >= a->idle_sleep)
		return true;
	/* Relaxed: a hint (struct dp_base); a stale read costs one step
	 * of the back-off. */
	return empty + 1 >= a->idle_pause && dp_load_relaxed(&a->startup_waiters) != 0;
}

void
dp_idle(const struct dp_base *a, unsigned int *empty)
{
	unsigned int e = ++*empty;

	if (e < a->idle_pause)
		return;
	if (dp_idle_sleeps(a, e - 1))
		usleep(a->idle_sleep_us);
	else if (e < a->idle_yield)
		rte_pause();
	else
		sched_yield();
}
