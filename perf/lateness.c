/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lateness mode: do call timeouts fire on time, from any thread, under
 * load?  The server's handler "slow" busy-waits --service-us on the
 * server's poller, so the server falls behind and most calls time out.
 * The client runs --threads plain pthreads (not EAL lcores, free to float
 * over every CPU: the point is preemption), each keeping --window calls in
 * flight with --timeout-us, waiting on its oldest call (caller-driven: the
 * waiters poll the agent).  For every call issued after the warm-up that
 * fails with -ETIMEDOUT it records:
 *
 *  - lateness: completion time - deadline, the completion time being when
 *    the future's callback runs (on the poller, right after the failure),
 *    the deadline the call's start (just before dprpc_rpc_async_id())
 *    plus --timeout-us, as the application sees it;
 *  - observed lateness: the same, to when the calling thread's wait
 *    returns.
 *
 * It also reports the longest time inside dprpc_rpc_async_id() and the
 * longest gap between two completions while calls were in flight (the
 * client receiving nothing), and the 1-minute load average at the end.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setaffinity_np */
#endif
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_pause.h>

#include <dprpc/dprpc.h>

#include "perf.h"

#define LATE_MAX_THREADS 64

/* One call in flight. */
struct late_call {
	struct dprpc_future *f; /* the calling thread's reference */
	uint64_t t0, deadline;	/* TSC */
	uint64_t done_tsc;	/* written by the callback before done */
	int code;		/* 0 or the failure, ditto */
	/* Set by the callback (release) after done_tsc and code; read by the
	 * calling thread (acquire) before it reads them. */
	atomic_uint done;
};

struct late_thread {
	pthread_t tid;
	struct dprpc_agent *a;
	const struct perf_opts *o;
	const uint8_t *payload;
	struct late_call *calls;   /* --window of them, a FIFO */
	uint64_t *late, *late_obs; /* TSC ticks, one per timeout measured */
	uint64_t nb_late, cap;
	uint64_t timeouts, ok, other, submit_fail, submit_max;
	int err;
};

static uint64_t late_measure_from, late_end, late_timeout_tsc;
static uint32_t late_hid;
/* Completion gaps: the TSC of the last completion (relaxed: a statistic;
 * the callbacks run on the poller, one at a time) and the longest gap
 * between two completions inside the measured window. */
static _Atomic uint64_t late_last_done, late_gap_max;

/* The server's handler: --service-us of busy work on the poller. */
static int
h_slow(struct dprpc_request *req, void *arg)
{
	uint64_t until = rte_rdtsc() + (uint64_t)(uintptr_t)arg;

	while (rte_rdtsc() < until)
		rte_pause();
	return dprpc_reply(req, NULL, 0);
}

int
perf_lateness_server(uint16_t port, const struct perf_opts *o)
{
	struct dprpc_agent *a = perf_rpc_agent("server", port);
	uint64_t busy = o->service_us * rte_get_tsc_hz() / 1000000;

	if (a == NULL || dprpc_register(a, "slow", h_slow, (void *)(uintptr_t)busy,
				 DPRPC_HANDLER_INLINE) != 0)
		return -EIO;
	while (!perf_stop)
		dprpc_poll(a, 32);
	return dprpc_agent_destroy(a);
}

static void
late_done(struct dprpc_future *f, void *arg)
{
	struct late_call *c = arg;
	uint64_t now = rte_rdtsc(), prev, gap, max;

	c->done_tsc = now;
	c->code = dprpc_future_state(f) == DPRPC_FUTURE_DONE ? 0 : dprpc_future_error(f)->code;
	/* Release: pairs with the acquire load in late_thread_main(), so the
	 * fields above are seen there. */
	atomic_store_explicit(&c->done, 1, memory_order_release);
	/* Relaxed: statistics only, nothing is published through them. */
	prev = atomic_exchange_explicit(&late_last_done, now, memory_order_relaxed);
	if (prev < late_measure_from || now > late_end || now < prev)
		return;
	gap = now - prev;
	max = atomic_load_explicit(&late_gap_max, memory_order_relaxed);
	while (gap > max && !atomic_compare_exchange_weak_explicit(&late_gap_max, &max, gap,
				    memory_order_relaxed, memory_order_relaxed))
		;
}

static int
late_record(struct late_thread *t, const struct late_call *c, uint64_t obs)
{
	if (c->t0 < late_measure_from)
		return 0;
	if (c->code == 0) {
		t->ok++;
		return 0;
	}
	if (c->code != -ETIMEDOUT) {
		t->other++;
		return 0;
	}
	t->timeouts++;
	if (t->nb_late == t->cap) {
		uint64_t cap = t->cap ? t->cap * 2 : 65536;
		uint64_t *l = realloc(t->late, cap * sizeof(*l));

		if (l == NULL)
			return -ENOMEM;
		t->late = l;
		l = realloc(t->late_obs, cap * sizeof(*l));
		if (l == NULL)
			return -ENOMEM;
		t->late_obs = l;
		t->cap = cap;
	}
	t->late[t->nb_late] = c->done_tsc > c->deadline ? c->done_tsc - c->deadline : 0;
	t->late_obs[t->nb_late] = obs > c->deadline ? obs - c->deadline : 0;
	t->nb_late++;
	return 0;
}

/* Float over every CPU, whatever the creating lcore is pinned to. */
static void
late_float(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t all;
	long i;

	CPU_ZERO(&all);
	for (i = 0; i < n && i < CPU_SETSIZE; i++)
		CPU_SET((int)i, &all);
	(void)pthread_setaffinity_np(pthread_self(), sizeof(all), &all);
}

static void *
late_thread_main(void *arg)
{
	struct late_thread *t = arg;
	unsigned int w = t->o->window, head = 0, tail = 0, n = 0;
	struct late_call *c;
	uint64_t t0, t1;

	late_float();
	for (;;) {
		bool issuing = rte_rdtsc() < late_end && !perf_stop;

		while (issuing && n < w) {
			c = &t->calls[tail];
			/* Relaxed: not shared until the call is made. */
			atomic_store_explicit(&c->done, 0, memory_order_relaxed);
			t0 = rte_rdtsc();
			c->f = dprpc_rpc_async_id(
				t->a, 0, late_hid, t->payload, t->o->payload, t->o->timeout_us);
			t1 = rte_rdtsc();
			t->submit_max = RTE_MAX(t->submit_max, t1 - t0);
			if (c->f == NULL) {
				t->submit_fail++;
				break;
			}
			c->t0 = t0;
			c->deadline = t0 + late_timeout_tsc;
			/* The first callback uses the future's inline node:
			 * it cannot fail for want of one. */
			if (dprpc_future_add_callback(c->f, late_done, c) != 0) {
				t->err = -ENOBUFS;
				return NULL;
			}
			tail = (tail + 1) % w;
			n++;
		}
		if (n == 0) {
			if (!issuing)
				break;
			(void)dprpc_poll(t->a, 32);
			sched_yield();
			continue;
		}
		c = &t->calls[head];
		(void)dprpc_future_wait(c->f, 0);
		t1 = rte_rdtsc();
		/* Acquire: pairs with the release store in late_done(); the
		 * callback runs right after the state the wait saw. */
		while (atomic_load_explicit(&c->done, memory_order_acquire) == 0)
			sched_yield();
		if (late_record(t, c, t1) != 0) {
			t->err = -ENOMEM;
			return NULL;
		}
		dprpc_future_put(c->f);
		head = (head + 1) % w;
		n--;
	}
	return NULL;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double
late_pct_us(const uint64_t *v, uint64_t n, double q, uint64_t hz)
{
	return n == 0 ? 0.0 : (double)v[(uint64_t)(q * (double)(n - 1) + 0.5)] * 1e6 / (double)hz;
}

int
perf_lateness_client(uint16_t port, const struct perf_opts *o, struct perf_result *r)
{
	static struct late_thread th[LATE_MAX_THREADS];
	uint64_t hz = rte_get_tsc_hz(), nb = 0, max_submit = 0, i, j;
	uint64_t *all = NULL, *all_obs = NULL;
	uint8_t *payload = calloc(1, o->payload + 1);
	struct dprpc_agent *a;
	unsigned int k, started = 0;
	int rc = 0;

	perf_max_outstanding = RTE_MAX(o->threads * o->window, (unsigned int)PERF_MAX_WINDOW);
	a = perf_rpc_agent("client", port);
	if (payload == NULL || a == NULL || dprpc_agent_wait_link(a, 20 * 1000 * 1000) != 0) {
		free(payload);
		return -EIO;
	}
	late_hid = dprpc_handler_id("slow");
	late_timeout_tsc = o->timeout_us * hz / 1000000;
	late_measure_from = rte_rdtsc() + (uint64_t)(o->warmup_s * (double)hz);
	late_end = late_measure_from + (uint64_t)(o->duration_s * (double)hz);
	/* Relaxed: no thread reads them yet; pthread_create() publishes. */
	atomic_store_explicit(&late_last_done, 0, memory_order_relaxed);
	atomic_store_explicit(&late_gap_max, 0, memory_order_relaxed);
	for (k = 0; k < o->threads; k++) {
		th[k] = (struct late_thread){.a = a, .o = o, .payload = payload};
		th[k].calls = calloc(o->window, sizeof(*th[k].calls));
		if (th[k].calls == NULL ||
			pthread_create(&th[k].tid, NULL, late_thread_main, &th[k]) != 0) {
			rc = -ENOMEM;
			break;
		}
		started++;
	}
	for (k = 0; k < started; k++) {
		pthread_join(th[k].tid, NULL);
		if (th[k].err != 0)
			rc = th[k].err;
		nb += th[k].nb_late;
		r->timeouts += th[k].timeouts;
		r->completions += th[k].ok;
		r->other_failures += th[k].other;
		r->submit_failures += th[k].submit_fail;
		max_submit = RTE_MAX(max_submit, th[k].submit_max);
	}
	all = malloc((nb + 1) * sizeof(*all));
	all_obs = malloc((nb + 1) * sizeof(*all_obs));
	if (all == NULL || all_obs == NULL)
		rc = -ENOMEM;
	for (k = 0, j = 0; k < started; k++) {
		for (i = 0; rc == 0 && i < th[k].nb_late; i++, j++) {
			all[j] = th[k].late[i];
			all_obs[j] = th[k].late_obs[i];
		}
		free(th[k].late);
		free(th[k].late_obs);
		free(th[k].calls);
	}
	if (rc == 0) {
		qsort(all, nb, sizeof(*all), cmp_u64);
		qsort(all_obs, nb, sizeof(*all_obs), cmp_u64);
		r->late_p50_us = late_pct_us(all, nb, 0.50, hz);
		r->late_p99_us = late_pct_us(all, nb, 0.99, hz);
		r->late_max_us = late_pct_us(all, nb, 1.0, hz);
		r->late_obs_p99_us = late_pct_us(all_obs, nb, 0.99, hz);
		r->late_obs_max_us = late_pct_us(all_obs, nb, 1.0, hz);
		/* Relaxed: the callbacks ran before the joins (and the
		 * agent's own ordering); a statistic. */
		r->gap_max_us = (double)atomic_load_explicit(&late_gap_max, memory_order_relaxed) *
				1e6 / (double)hz;
		r->submit_max_us = (double)max_submit * 1e6 / (double)hz;
		r->calls = r->timeouts + r->completions + r->other_failures;
		r->seconds = o->duration_s;
		r->rate = (double)r->calls / o->duration_s;
		r->loadavg = perf_loadavg();
		r->ok = r->calls > 0;
	}
	free(all);
	free(all_obs);
	free(payload);
	if (rc != 0)
		return rc;
	return perf_client_finish(a, r);
}
