/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Work run on the EAL interrupt thread (dp_intr.h): the stop and close of
 * memif ports (port_close.c) run there, where the PMD's own callbacks run,
 * one at a time (docs/worlds.md, "Closing memif ports").
 *
 * Design
 * ======
 *
 * One source of the process's own: an eventfd with a private (malloc)
 * interrupt handle and a callback, registered with the EAL the first time
 * it is needed and never unregistered.  A job is handed to it through
 * dp_intr (one at a time: dp_intr.lock) and started by a write to the
 * eventfd.
 *
 * Why never unregistered.  Each registration or unregistration makes the
 * interrupt thread rebuild its epoll set, reading every source's handle,
 * the memif PMD's freed ones among them (defect 2 in memif_unhook.c): a
 * rebuild still pending when rte_eal_cleanup() unmaps the heap kills the
 * process.  A permanent source adds none, and dp_intr_settle() waits for
 * those the PMD's own unregistrations leave (docs/worlds.md, "Closing
 * memif ports").
 *
 * Rounds.  The interrupt thread serves a batch of ready descriptors per
 * epoll_wait(); a rebuild runs when the batch reaches the notification
 * that asked for it, and ends the batch.  So a job whose callback has run
 * proves nothing about a rebuild asked for just before (the notification
 * may come later in the same batch); a second job, started after the
 * first one ran, runs in a later batch, after that rebuild.
 * dp_intr_settle() is two such rounds.
 *
 * Ordering.  job.state: the waiter publishes the job (fn, arg) with a
 * release store of PENDING before the eventfd write; the callback takes
 * it with an acquire CAS PENDING -> RUNNING and ends it with a release
 * store of DONE, read with acquire by the waiter, which then sees fn's
 * effects.  A waiter that gives up (DP_INTR_WAIT_MS) takes the job back
 * with a CAS PENDING -> IDLE: if it wins, the callback will never run fn
 * and the caller runs it in place; if it loses, fn is running and the
 * waiter waits for DONE.  So fn runs exactly once.
 *
 * Progress.  The callback never waits.  A waiter waits for a thread that
 * runs a callback within microseconds when it has the CPU; the bound is
 * for an interrupt thread that never comes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_interrupts.h>
#include <rte_lcore.h>

#include "dp_intr.h"
#include "dp_log.h"

/* How long to wait for the interrupt thread before giving the job back
 * (it runs a callback within microseconds; this is for a thread that
 * never comes). */
#define DP_INTR_WAIT_MS 5000

enum dp_intr_state {
	DP_INTR_IDLE = 0,
	DP_INTR_PENDING = 1, /* published, not taken */
	DP_INTR_RUNNING = 2, /* the interrupt thread runs fn */
	DP_INTR_DONE = 3,
};

static struct {
	pthread_once_t once;
	pthread_mutex_t lock; /* one job at a time */
	int efd;	      /* -1: no source (the work is done in place) */
	struct rte_intr_handle *ih;
	void (*fn)(void *arg); /* the job; NULL: a round only */
	void *arg;
	atomic_uint state; /* enum dp_intr_state; see Ordering */
} dp_intr = {
	.once = PTHREAD_ONCE_INIT,
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.efd = -1,
};

/* The callback, on the interrupt thread. */
static void
dp_intr_cb(void *unused)
{
	unsigned int s = DP_INTR_PENDING;
	uint64_t v;

	(void)unused;
	if (read(dp_intr.efd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		return; /* nothing written (spurious) */
	/* Acquire: pairs with the waiter's release store of PENDING (the job's
	 * fn and arg).  Fails if the waiter took the job back. */
	if (!atomic_compare_exchange_strong_explicit(&dp_intr.state, &s, DP_INTR_RUNNING,
		    memory_order_acquire, memory_order_relaxed))
		return;
	if (dp_intr.fn != NULL)
		dp_intr.fn(dp_intr.arg);
	/* Release: pairs with the waiter's acquire load; fn's effects are
	 * seen by it. */
	atomic_store_explicit(&dp_intr.state, DP_INTR_DONE, memory_order_release);
}

/* The source, once per process.  On failure efd stays -1: no job runs
 * there, every caller does its work in place. */
static void
dp_intr_setup(void)
{
	struct rte_intr_handle *ih = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

	if (ih == NULL || efd < 0 || rte_intr_fd_set(ih, efd) != 0 ||
		rte_intr_type_set(ih, RTE_INTR_HANDLE_EXT) != 0)
		goto fail;
	/* The eventfd is set before the callback can run. */
	dp_intr.efd = efd;
	dp_intr.ih = ih;
	if (rte_intr_callback_register(ih, dp_intr_cb, NULL) == 0)
		return;
	dp_intr.efd = -1;
	dp_intr.ih = NULL;
fail:
	if (efd >= 0)
		close(efd);
	rte_intr_instance_free(ih);
}

/* One job, dp_intr.lock held: true if fn ran on the interrupt thread,
 * false if the caller must run it (none, or it never came). */
static bool
dp_intr_job(void (*fn)(void *arg), void *arg)
{
	uint64_t one = 1, deadline = rte_rdtsc() + rte_get_tsc_hz() / 1000 * DP_INTR_WAIT_MS;
	unsigned int s;

	if (dp_intr.efd < 0)
		return false;
	dp_intr.fn = fn;
	dp_intr.arg = arg;
	/* Release: publishes fn and arg to the callback's acquire CAS. */
	atomic_store_explicit(&dp_intr.state, DP_INTR_PENDING, memory_order_release);
	if (write(dp_intr.efd, &one, sizeof(one)) != (ssize_t)sizeof(one))
		goto take_back;
	for (;;) {
		/* Acquire: pairs with the callback's release store of DONE. */
		s = atomic_load_explicit(&dp_intr.state, memory_order_acquire);
		if (s == DP_INTR_DONE)
			break;
		if (s == DP_INTR_PENDING && rte_rdtsc() >= deadline)
			goto take_back;
		usleep(20);
	}
	/* Relaxed: the callback is done with the job (DONE, acquired above)
	 * and the next job's release store of PENDING publishes anew; this
	 * store pairs with nothing. */
	atomic_store_explicit(&dp_intr.state, DP_INTR_IDLE, memory_order_relaxed);
	return true;
take_back:
	s = DP_INTR_PENDING;
	/* Relaxed: on success the callback never touches the job; on failure
	 * fn is running and the loop above waits for DONE (acquire). */
	if (atomic_compare_exchange_strong_explicit(
		    &dp_intr.state, &s, DP_INTR_IDLE, memory_order_relaxed, memory_order_relaxed))
		return false;
	/* Acquire: pairs with the callback's release store of DONE. */
	while (atomic_load_explicit(&dp_intr.state, memory_order_acquire) != DP_INTR_DONE)
		usleep(20);
	/* Relaxed: as after the loop above. */
	atomic_store_explicit(&dp_intr.state, DP_INTR_IDLE, memory_order_relaxed);
	return true;
}

bool
dp_intr_run(void (*fn)(void *arg), void *arg)
{
	bool ran;

	if (rte_thread_is_intr())
		return false;
	(void)pthread_once(&dp_intr.once, dp_intr_setup);
	pthread_mutex_lock(&dp_intr.lock);
	ran = dp_intr_job(fn, arg);
	pthread_mutex_unlock(&dp_intr.lock);
	return ran;
}

bool
dp_intr_settle(void)
{
	/* Two rounds (see Rounds): the first may share its batch with the
	 * notification of a rebuild asked for earlier, the second cannot. */
	return dp_intr_run(NULL, NULL) && dp_intr_run(NULL, NULL);
}
