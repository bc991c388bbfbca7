/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lateness mode: do call timeouts fire on time, from any thread, under
 * load?  The server's handler "slow" busy-waits --service-us on the
 * server's poller, so the server falls behind and calls time out (every
 * one with --service-us above --timeout-us; with the default 1 ms the
 * server sheds most with -EBUSY instead).  The client runs --threads plain
 * pthreads (not EAL lcores, free to float over every CPU: the point is
 * preemption), each keeping --window calls in flight with --timeout-us,
 * waiting on its oldest call (caller-driven: the waiters poll the agent).
 * For every call issued after the warm-up that fails with -ETIMEDOUT it
 * records:
 *
 *  - lateness: completion time - deadline, the completion time being when
 *    the future's callback runs (right after the failure, on the thread
 *    that failed it), the deadline the call's start (just before
 *    dprpc_rpc_async_id()) plus --timeout-us, as the application sees it;
 *  - observed lateness: the same, to when the calling thread's wait
 *    returns;
 *  - lateness after submission: completion time - (the return of
 *    dprpc_rpc_async_id() + --timeout-us).  The library counts a call's
 *    timeout from its own reading of the clock, on entry: a thread
 *    preempted before it (the scheduler's doing) had its call's deadline
 *    move by as long, and no library can know.  The library's deadline
 *    lies between the two, so the library's own lateness lies between
 *    this figure and the first.  (A thread preempted between the
 *    library's return and the reading of the clock after it makes this
 *    figure too small by as long; both windows are a few dozen
 *    instructions of each call.)
 *
 * It also reports the longest time inside dprpc_rpc_async_id(), the
 * longest gap between two completions of measured calls (the client
 * receiving nothing), and the 1-minute load average at the end.
 *
 * --watch: what the machine did meanwhile.  A stall watch (watch.h) runs
 * through the client's run and notes when each CPU was taken from the
 * guest.  When every CPU is, no thread of the guest runs, so no software
 * in it can fail a call on time: each timeout's net lateness is its
 * lateness after submission less the time of that late interval during
 * which every CPU was stalled.  A second net figure takes away the stalls
 * of the CPU the call's callback ran on instead: the guest does not move
 * its threads off a CPU the hypervisor took (it does not know), and it
 * often keeps every application thread on one CPU while the server's
 * poller, pinned, keeps the other busy; then none of them can run.
 * Reported with them: the longest stall of every CPU at once and of any
 * one CPU, and the part of the longest completion gap spent in stalls of
 * every CPU.  The watch is off by default because it changes what it
 * measures: its real-time wake-ups, 2,000 a second on each CPU, are as
 * many chances for the scheduler to switch threads, and on a kernel of
 * 250 ticks a second they shortened the worst lateness (perf/RESULTS.md).
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
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_pause.h>

#include <dprpc/dprpc.h>

#include "perf.h"
#include "watch.h"

#define LATE_MAX_THREADS 64

/* One call in flight. */
struct late_call {
	struct dprpc_future *f; /* the calling thread's reference */
	uint64_t t0, deadline;	/* TSC */
	uint64_t submitted;	/* TSC: dprpc_rpc_async_id() returned */
	uint64_t done_tsc;	/* written by the callback before done */
	int code;		/* 0 or the failure, ditto */
	int cpu;		/* where the callback ran (-1: unknown), ditto */
	/* Set by the callback (release) after done_tsc, code and cpu; read by the
	 * calling thread (acquire) before it reads them. */
	atomic_uint done;
};

/* A measured call that timed out: its deadline, when
 * dprpc_rpc_async_id() returned, when and where its callback ran and when
 * its caller's wait returned (TSC). */
struct late_rec {
	uint64_t deadline, submitted, done, obs;
	int cpu; /* where its callback ran */
};

/* A growing array of elements of one size (late_vec_grow()'s @size), the
 * measuring thread's own. */
struct late_vec {
	void *v;
	uint64_t n, cap;
};

struct late_thread {
	pthread_t tid;
	struct dprpc_agent *a;
	const struct perf_opts *o;
	const uint8_t *payload;
	struct late_call *calls; /* --window of them, a FIFO */
	struct late_vec rec;	 /* struct late_rec: the measured timeouts */
	struct late_vec done;	 /* uint64_t: every measured completion's TSC */
	uint64_t timeouts, ok, other, submit_fail, submit_max;
	int err;
};

static uint64_t late_measure_from, late_end, late_timeout_tsc;
static uint32_t late_hid;

/* --watch: a wake-up every 500 us, a stall when one is more than 200 us
 * late.  A stall is noted from the wake-up it delayed, so up to a period
 * of its start goes unseen: the net lateness is, if anything,
 * overstated. */
#define LATE_WATCH_PERIOD_NS	(500ull * 1000)
#define LATE_WATCH_THRESHOLD_NS (200ull * 1000)

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

	c->done_tsc = rte_rdtsc();
	c->cpu = sched_getcpu();
	c->code = dprpc_future_state(f) == DPRPC_FUTURE_DONE ? 0 : dprpc_future_error(f)->code;
	/* Release: pairs with the acquire load in late_wait_callback(), so
	 * the fields above are seen there. */
	atomic_store_explicit(&c->done, 1, memory_order_release);
}

/* The callback runs on the completing thread right after the state the
 * wait saw.  If that thread is preempted in between, spinning here would
 * take the CPU it needs (perf sched showed a waiter yielding for 6 ms on
 * the completer's CPU): spin briefly, then sleep. */
static void
late_wait_callback(const struct late_call *c)
{
	const struct timespec nap = {0, 20 * 1000};
	unsigned int spins = 0;

	/* Acquire: pairs with the release store in late_done(). */
	while (atomic_load_explicit(&c->done, memory_order_acquire) == 0) {
		if (++spins < 256)
			rte_pause();
		else
			nanosleep(&nap, NULL);
	}
}

/* Room for one more element of @size bytes in @a: 0, or -ENOMEM. */
static int
late_vec_grow(struct late_vec *a, size_t size)
{
	uint64_t cap;
	void *v;

	if (a->n < a->cap)
		return 0;
	cap = a->cap ? a->cap * 2 : 65536;
	v = realloc(a->v, cap * size);
	if (v == NULL)
		return -ENOMEM;
	a->v = v;
	a->cap = cap;
	return 0;
}

static int
late_record(struct late_thread *t, const struct late_call *c, uint64_t obs)
{
	if (c->t0 < late_measure_from)
		return 0;
	if (late_vec_grow(&t->done, sizeof(uint64_t)) != 0)
		return -ENOMEM;
	((uint64_t *)t->done.v)[t->done.n++] = c->done_tsc;
	if (c->code == 0) {
		t->ok++;
		return 0;
	}
	if (c->code != -ETIMEDOUT) {
		t->other++;
		return 0;
	}
	t->timeouts++;
	if (late_vec_grow(&t->rec, sizeof(struct late_rec)) != 0)
		return -ENOMEM;
	((struct late_rec *)t->rec.v)[t->rec.n++] = (struct late_rec){
		.deadline = c->deadline,
		.submitted = c->submitted,
		.done = c->done_tsc,
		.obs = obs,
		.cpu = c->cpu,
	};
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
			c->submitted = t1;
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
		late_wait_callback(c);
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
late_us(uint64_t tsc, uint64_t hz)
{
	return (double)tsc * 1e6 / (double)hz;
}

/* The @q quantile of @v (n of them, sorted), in us. */
static double
late_pct_us(const uint64_t *v, uint64_t n, double q, uint64_t hz)
{
	return n == 0 ? 0.0 : late_us(v[(uint64_t)(q * (double)(n - 1) + 0.5)], hz);
}

/* TSC to the watch's clock (ns from its start), interpolated between two
 * pairs of readings of both clocks, one before the threads start and one
 * after they end: neither the TSC's nominal rate nor the slewing of
 * CLOCK_MONOTONIC then drifts the two apart over a run. */
struct late_clock {
	uint64_t tsc0, ns0, tsc1, ns1, hz;
};

static uint64_t
late_ns(const struct late_clock *k, uint64_t tsc)
{
	double r = (double)(k->ns1 - k->ns0) / (double)(k->tsc1 - k->tsc0);

	if (tsc <= k->tsc0) /* before the first pair: not among the calls */
		return k->ns0;
	return k->ns0 + (uint64_t)((double)(tsc - k->tsc0) * r);
}

/* TSC ticks of [from, to) (TSC) inside the stalls of @t. */
static uint64_t
late_stalled(
	const struct perf_stall_trace *t, const struct late_clock *k, uint64_t from, uint64_t to)
{
	double r = (double)(k->tsc1 - k->tsc0) / (double)(k->ns1 - k->ns0);

	if (to <= from)
		return 0;
	return (uint64_t)((double)perf_stall_overlap(t, late_ns(k, from), late_ns(k, to)) * r);
}

/* @late less the part of [from, to) inside the stalls of @t. */
static uint64_t
late_less(uint64_t late, const struct perf_stall_trace *t, const struct late_clock *k,
	uint64_t from, uint64_t to)
{
	return late - RTE_MIN(late, late_stalled(t, k, from, to));
}

/* @v (n of them) sorted, and its p99 and maximum in us. */
static void
late_tail(uint64_t *v, uint64_t n, uint64_t hz, double *p99, double *max)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	*p99 = late_pct_us(v, n, 0.99, hz);
	*max = late_pct_us(v, n, 1.0, hz);
}

/* The measured calls gathered from the threads: the timeouts and every
 * completion's TSC, the threads' arrays freed. */
struct late_all {
	struct late_rec *rec;
	uint64_t *done;
	uint64_t nb_rec, nb_done;
};

static int
late_gather(struct late_thread *th, unsigned int n, struct late_all *g)
{
	unsigned int k;
	int rc = 0;

	*g = (struct late_all){0};
	for (k = 0; k < n; k++) {
		g->nb_rec += th[k].rec.n;
		g->nb_done += th[k].done.n;
	}
	g->rec = malloc((g->nb_rec + 1) * sizeof(*g->rec));
	g->done = malloc((g->nb_done + 1) * sizeof(*g->done));
	if (g->rec == NULL || g->done == NULL)
		rc = -ENOMEM;
	g->nb_rec = g->nb_done = 0;
	for (k = 0; k < n; k++) {
		if (rc == 0) {
			memcpy(&g->rec[g->nb_rec], th[k].rec.v, th[k].rec.n * sizeof(*g->rec));
			memcpy(&g->done[g->nb_done], th[k].done.v, th[k].done.n * sizeof(*g->done));
			g->nb_rec += th[k].rec.n;
			g->nb_done += th[k].done.n;
		}
		free(th[k].rec.v);
		free(th[k].done.v);
	}
	return rc;
}

/* The longest gap between two completions of @g (sorted here), those
 * after late_end left out: its length and start (TSC). */
static uint64_t
late_gap(struct late_all *g, uint64_t *at)
{
	uint64_t i, gap = 0;

	qsort(g->done, g->nb_done, sizeof(*g->done), cmp_u64);
	*at = 0;
	for (i = 1; i < g->nb_done && g->done[i] <= late_end; i++)
		if (g->done[i] - g->done[i - 1] > gap) {
			gap = g->done[i] - g->done[i - 1];
			*at = g->done[i - 1];
		}
	return gap;
}

/* With the watch: the longest stalls in the measured window, of every CPU
 * at once and of any one CPU. */
static void
late_stalls(const struct perf_watch *w, const struct late_clock *k, struct perf_result *r)
{
	uint64_t from = late_ns(k, late_measure_from), to = late_ns(k, late_end), max = 0;
	unsigned int c;

	for (c = 0; c < perf_watch_cpus(w); c++)
		max = RTE_MAX(max, perf_stall_longest(perf_watch_trace(w, c), from, to));
	r->stall_all_max_us = (double)perf_stall_longest(perf_watch_all(w), from, to) / 1e3;
	r->stall_cpu_max_us = (double)max / 1e3;
	r->watch_realtime = perf_watch_realtime(w);
}

/* The timeouts' lateness (as the application sees it, to the caller's
 * wait, after submission, and with @w net of the machine's stalls: of
 * every CPU at once, and of the CPU the callback ran on) and the longest
 * completion gap, from @g. */
static int
late_analyse(struct late_all *g, const struct perf_watch *w, const struct late_clock *k,
	struct perf_result *r)
{
	uint64_t n = g->nb_rec, i, gap, gap_at, hz = k->hz;
	uint64_t *late = malloc((n + 1) * sizeof(*late));
	uint64_t *obs = malloc((n + 1) * sizeof(*obs));
	uint64_t *sub = malloc((n + 1) * sizeof(*sub));
	uint64_t *net = malloc((n + 1) * sizeof(*net));
	uint64_t *net_cpu = malloc((n + 1) * sizeof(*net_cpu));
	const struct perf_stall_trace *all = w != NULL ? perf_watch_all(w) : NULL;
	int rc = 0;

	if (late == NULL || obs == NULL || sub == NULL || net == NULL || net_cpu == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		const struct late_rec *x = &g->rec[i];
		uint64_t from = x->submitted + late_timeout_tsc;

		late[i] = x->done > x->deadline ? x->done - x->deadline : 0;
		obs[i] = x->obs > x->deadline ? x->obs - x->deadline : 0;
		sub[i] = x->done > from ? x->done - from : 0;
		net[i] = net_cpu[i] = sub[i];
		if (all != NULL) {
			net[i] = late_less(sub[i], all, k, from, x->done);
			if (x->cpu >= 0 && (unsigned int)x->cpu < perf_watch_cpus(w))
				net_cpu[i] =
					late_less(sub[i], perf_watch_trace(w, (unsigned int)x->cpu),
						k, from, x->done);
		}
	}
	gap = late_gap(g, &gap_at);
	r->gap_max_us = late_us(gap, hz);
	late_tail(late, n, hz, &r->late_p99_us, &r->late_max_us);
	r->late_p50_us = late_pct_us(late, n, 0.50, hz);
	late_tail(obs, n, hz, &r->late_obs_p99_us, &r->late_obs_max_us);
	late_tail(sub, n, hz, &r->late_sub_p99_us, &r->late_sub_max_us);
	if (w == NULL)
		goto out;
	late_tail(net, n, hz, &r->late_net_p99_us, &r->late_net_max_us);
	late_tail(net_cpu, n, hz, &r->late_netcpu_p99_us, &r->late_netcpu_max_us);
	r->gap_stalled_us = late_us(late_stalled(all, k, gap_at, gap_at + gap), hz);
	late_stalls(w, k, r);
out:
	free(late), free(obs), free(sub), free(net), free(net_cpu);
	return rc;
}

int
perf_lateness_client(uint16_t port, const struct perf_opts *o, struct perf_result *r)
{
	static struct late_thread th[LATE_MAX_THREADS];
	uint64_t hz = rte_get_tsc_hz(), max_submit = 0;
	uint8_t *payload = calloc(1, o->payload + 1);
	struct perf_watch *w = NULL;
	struct late_clock clk = {.hz = hz};
	struct late_all g = {0};
	struct dprpc_agent *a;
	unsigned int k, started = 0;
	int rc = 0;

	perf_max_outstanding = RTE_MAX(o->threads * o->window, (unsigned int)PERF_MAX_WINDOW);
	a = perf_rpc_agent("client", port);
	if (payload == NULL || a == NULL || dprpc_agent_wait_link(a, 20 * 1000 * 1000) != 0) {
		free(payload);
		return -EIO;
	}
	if (o->watch) {
		w = perf_watch_start(LATE_WATCH_PERIOD_NS, LATE_WATCH_THRESHOLD_NS);
		if (w == NULL) {
			rc = -errno;
			free(payload);
			(void)dprpc_agent_destroy(a);
			return rc;
		}
	}
	clk.ns0 = w != NULL ? perf_watch_now(w) : 0;
	clk.tsc0 = rte_rdtsc();
	late_hid = dprpc_handler_id("slow");
	late_timeout_tsc = o->timeout_us * hz / 1000000;
	late_measure_from = rte_rdtsc() + (uint64_t)(o->warmup_s * (double)hz);
	late_end = late_measure_from + (uint64_t)(o->duration_s * (double)hz);
	for (k = 0; k < o->threads; k++) {
		th[k] = (struct late_thread){.a = a, .o = o, .payload = payload};
		th[k].calls = calloc(o->window, sizeof(*th[k].calls));
		if (th[k].calls == NULL ||
			pthread_create(&th[k].tid, NULL, late_thread_main, &th[k]) != 0) {
			free(th[k].calls);
			rc = -ENOMEM;
			break;
		}
		started++;
	}
	for (k = 0; k < started; k++) {
		pthread_join(th[k].tid, NULL);
		if (th[k].err != 0)
			rc = th[k].err;
		r->timeouts += th[k].timeouts;
		r->completions += th[k].ok;
		r->other_failures += th[k].other;
		r->submit_failures += th[k].submit_fail;
		max_submit = RTE_MAX(max_submit, th[k].submit_max);
		free(th[k].calls);
	}
	clk.tsc1 = rte_rdtsc();
	/* Without the watch only the TSC is used: any second pair will do. */
	clk.ns1 = w != NULL ? perf_watch_now(w) : clk.ns0 + 1;
	if (w != NULL && perf_watch_stop(w) != 0)
		rc = -ENOMEM;
	if (late_gather(th, started, &g) != 0)
		rc = -ENOMEM;
	if (rc == 0)
		rc = late_analyse(&g, w, &clk, r);
	if (rc == 0) {
		r->watch = w != NULL;
		r->submit_max_us = late_us(max_submit, hz);
		r->calls = r->timeouts + r->completions + r->other_failures;
		r->seconds = o->duration_s;
		r->rate = (double)r->calls / o->duration_s;
		r->loadavg = perf_loadavg();
		r->ok = r->calls > 0;
	}
	free(g.rec);
	free(g.done);
	perf_watch_free(w);
	free(payload);
	if (rc != 0)
		return rc;
	return perf_client_finish(a, r);
}
