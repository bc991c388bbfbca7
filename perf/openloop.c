/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The open-loop engine, as wrk2 measures: calls leave on a schedule that
 * does not wait for answers, --rate per second with fixed gaps or, with
 * --poisson, exponential ones (a seeded generator: the same schedule run
 * after run).  Each call's latency counts from its *intended* send time,
 * so a call the client could not send on time (the agent pushing back,
 * max_outstanding calls in flight, the client itself late) is charged for
 * the wait: coordinated omission corrected.  The latency from the actual
 * send is kept beside it (what a closed loop would report).
 *
 * One thread, the client's lcore: it sends every call whose time has come,
 * then polls the agent, whose completion callbacks record the calls.  The
 * calls scheduled before the warm-up's end are sent and not counted; those
 * scheduled in the --duration window are the run's "issued" calls, each
 * counted exactly once as OK or failed (by errno, classed in stats.c) or,
 * if the drain gives up on sending it (timeout_us + 1 s past the window),
 * unsent.
 *
 * What is sent and how an answer is judged come from a request source
 * (struct perf_open_source): dprpc-perf's open mode (open.c) sends
 * --payload bytes to its own server's --handler; the digits model client
 * (examples/model/client.c) sends the test split's images and checks
 * every class.  An answer the source's check refuses is a failed call
 * (its errno, class "other").  This file, the histogram, the options,
 * the reports and the sweep are the static library perf_openloop that
 * both link: the agent, the target and the run's lifetime are the
 * caller's.  One run at a time per process (the completion callbacks
 * share this file's state).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_errno.h>

#include <dprpc/dprpc.h>

#include "perf.h"

/* Set by a signal handler: stop sending, drain, finish. */
volatile sig_atomic_t perf_stop;

/* One call in flight; the callback's argument. */
struct open_call {
	uint64_t intended, sent; /* TSC */
	uint64_t k;		 /* its place in the schedule, for the source */
	struct open_call *next_free;
};

struct open_state {
	struct perf_result *r;
	struct perf_open_run *run;
	const struct perf_open_source *src;
	uint64_t hz, measure_from, end;
	double ns_per_tick;
	struct open_call *calls, *free_list;
	unsigned int inflight;
	uint64_t last_done; /* TSC of the last measured call's completion */
};

static struct open_state os;

static uint64_t
open_ns(uint64_t ticks)
{
	return (uint64_t)((double)ticks * os.ns_per_tick);
}

static bool
open_measured(uint64_t intended)
{
	return intended >= os.measure_from && intended < os.end;
}

static struct perf_open_sec *
open_sec(uint64_t t)
{
	uint64_t i = (t - os.measure_from) / os.hz;

	return i < os.run->nb_sec ? &os.run->sec[i] : NULL;
}

static void
open_done(struct dprpc_future *f, void *arg)
{
	struct open_call *c = arg;
	uint64_t now = rte_rdtsc();
	struct perf_open_sec *s;
	int bad = 0;

	/* Every answer is checked, the warm-up's too. */
	if (dprpc_future_state(f) == DPRPC_FUTURE_DONE && os.src->check != NULL) {
		size_t len = 0;
		const void *v = dprpc_future_value(f, &len);

		bad = os.src->check(os.src->ctx, c->k, v, len);
	}
	if (open_measured(c->intended)) {
		s = open_sec(c->intended);
		os.last_done = RTE_MAX(os.last_done, now);
		if (dprpc_future_state(f) == DPRPC_FUTURE_DONE && bad == 0) {
			uint64_t lat = open_ns(now - c->intended);

			os.r->ok_calls++;
			perf_hist_record(&os.run->lat, lat);
			perf_hist_record(&os.run->unc, open_ns(now - c->sent));
			if (s != NULL) {
				s->ok++;
				perf_hist_record(&s->h, lat);
			}
		} else {
			int code = bad != 0 ? bad : dprpc_future_error(f)->code;

			if (code == -EBUSY) {
				perf_hist_record(&os.run->busy, open_ns(now - c->intended));
				perf_hist_record(&os.run->busy_unc, open_ns(now - c->sent));
			}
			perf_err_count(os.r, code);
			if (s != NULL)
				s->failed++;
		}
	}
	if (dprpc_future_state(f) == DPRPC_FUTURE_DONE && bad == 0 && now >= os.measure_from &&
		now < os.end) {
		os.r->done_rate += 1;
		s = open_sec(now);
		if (s != NULL)
			s->done++;
	}
	dprpc_future_put(f);
	c->next_free = os.free_list;
	os.free_list = c;
	os.inflight--;
}

/* xorshift64*: the Poisson schedule's uniform numbers, in (0, 1]. */
static double
open_uniform(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return ((double)((*x * 2685821657736338717ull) >> 11) + 1.0) / 9007199254740992.0;
}

/* The next call's intended time: call @*k + 1 of the schedule. */
static uint64_t
open_advance(const struct perf_opts *o, uint64_t start, double gap, uint64_t *k, double *t,
	uint64_t *seed)
{
	(*k)++;
	*t = o->poisson ? *t - log(open_uniform(seed)) * gap : (double)*k * gap;
	return start + (uint64_t)*t;
}

void
perf_open_run_free(struct perf_open_run *run)
{
	unsigned int i;

	perf_hist_free(&run->lat);
	perf_hist_free(&run->unc);
	perf_hist_free(&run->busy);
	perf_hist_free(&run->busy_unc);
	for (i = 0; run->sec != NULL && i < run->nb_sec; i++)
		perf_hist_free(&run->sec[i].h);
	free(run->sec);
}

static int
open_run_init(struct perf_open_run *run, const struct perf_opts *o)
{
	uint64_t highest = o->hist_max_us * 1000;
	unsigned int i;

	memset(run, 0, sizeof(*run));
	run->nb_sec = (unsigned int)ceil(o->duration_s);
	run->sec = calloc(run->nb_sec, sizeof(*run->sec));
	if (run->sec == NULL || perf_hist_init(&run->lat, highest, o->hist_digits) != 0 ||
		perf_hist_init(&run->unc, highest, o->hist_digits) != 0 ||
		perf_hist_init(&run->busy, highest, o->hist_digits) != 0 ||
		perf_hist_init(&run->busy_unc, highest, o->hist_digits) != 0)
		return -ENOMEM;
	/* Per second, two digits: enough for a line, a tenth of the memory. */
	for (i = 0; i < run->nb_sec; i++)
		if (perf_hist_init(&run->sec[i].h, highest, 2) != 0)
			return -ENOMEM;
	return 0;
}

int
perf_open_loop(struct dprpc_agent *a, unsigned int to, uint32_t hid, unsigned int max_inflight,
	const struct perf_opts *o, const struct perf_open_source *src, struct perf_open_run *run,
	struct perf_result *r)
{
	uint64_t start, next, now, k = 0, drain_until, lag_max = 0, seed = o->seed;
	const void *payload;
	double gap, t_next;
	struct dprpc_future *f;
	struct open_call *c;
	unsigned int i;
	size_t len;

	if (a == NULL || hid == 0 || max_inflight == 0 || src == NULL || src->request == NULL ||
		o->rate <= 0 || o->duration_s <= 0)
		return -EINVAL;
	if (open_run_init(run, o) != 0) {
		perf_open_run_free(run);
		return -ENOMEM;
	}
	memset(&os, 0, sizeof(os));
	os.r = r;
	os.run = run;
	os.src = src;
	os.calls = calloc(max_inflight, sizeof(*os.calls));
	if (os.calls == NULL) {
		perf_open_run_free(run);
		return -ENOMEM;
	}
	for (i = 0; i < max_inflight; i++) {
		os.calls[i].next_free = os.free_list;
		os.free_list = &os.calls[i];
	}
	os.hz = rte_get_tsc_hz();
	os.ns_per_tick = 1e9 / (double)os.hz;
	gap = (double)os.hz / o->rate;
	start = rte_rdtsc();
	os.measure_from = start + (uint64_t)(o->warmup_s * (double)os.hz);
	os.end = os.measure_from + (uint64_t)(o->duration_s * (double)os.hz);
	drain_until = os.end + (o->timeout_us + 1000000) * os.hz / 1000000;
	t_next = 0;
	next = start;
	for (;;) {
		now = rte_rdtsc();
		while (next < os.end && next <= now) {
			if (os.free_list == NULL) {
				r->send_refused++;
				break;
			}
			now = rte_rdtsc();
			payload = src->request(src->ctx, k, &len);
			f = dprpc_rpc_async_id(a, to, hid, payload, len, o->timeout_us);
			if (f == NULL && (rte_errno == EAGAIN || rte_errno == ENOBUFS)) {
				r->send_refused++;
				break; /* sent later, still measured from next */
			}
			if (open_measured(next)) {
				struct perf_open_sec *s = open_sec(next);

				r->issued++;
				if (s != NULL)
					s->issued++;
				if (f == NULL) {
					perf_err_count(r, -rte_errno);
					if (s != NULL)
						s->failed++;
				}
			}
			if (f != NULL) {
				c = os.free_list;
				os.free_list = c->next_free;
				c->intended = next;
				c->sent = now;
				c->k = k;
				os.inflight++;
				lag_max = RTE_MAX(lag_max, now - next);
				/* The first callback uses the future's inline
				 * node: it cannot fail for want of one. */
				(void)dprpc_future_add_callback(f, open_done, c);
			}
			next = open_advance(o, start, gap, &k, &t_next, &seed);
		}
		if (next >= os.end && os.inflight == 0)
			break;
		if (now > drain_until && next < os.end) {
			/* Overloaded past the drain: what is still unsent
			 * counts as such. */
			for (; next < os.end;
				next = open_advance(o, start, gap, &k, &t_next, &seed))
				if (open_measured(next)) {
					r->issued++;
					r->unsent++;
				}
		}
		if (perf_stop && os.inflight == 0)
			break;
		dprpc_poll(a, 32);
	}
	r->offered_rate = o->rate;
	r->done_rate /= o->duration_s;
	if (os.last_done > os.measure_from)
		r->achieved_rate = (double)r->ok_calls /
				   ((double)(os.last_done - os.measure_from) / (double)os.hz);
	r->calls = r->ok_calls;
	r->seconds = o->duration_s;
	r->rate = (double)r->ok_calls / o->duration_s;
	r->p50_us = (double)perf_hist_percentile(&run->lat, 50) / 1e3;
	r->p90_us = (double)perf_hist_percentile(&run->lat, 90) / 1e3;
	r->p99_us = (double)perf_hist_percentile(&run->lat, 99) / 1e3;
	r->p999_us = (double)perf_hist_percentile(&run->lat, 99.9) / 1e3;
	r->p9999_us = (double)perf_hist_percentile(&run->lat, 99.99) / 1e3;
	r->max_us = (double)run->lat.max / 1e3;
	r->min_us = run->lat.total ? (double)run->lat.min / 1e3 : 0;
	r->mean_us = perf_hist_mean(&run->lat) / 1e3;
	r->stddev_us = perf_hist_stddev(&run->lat) / 1e3;
	r->unc_p50_us = (double)perf_hist_percentile(&run->unc, 50) / 1e3;
	r->unc_p99_us = (double)perf_hist_percentile(&run->unc, 99) / 1e3;
	r->unc_max_us = (double)run->unc.max / 1e3;
	r->send_lag_max_us = (double)open_ns(lag_max) / 1e3;
	r->busy_calls = run->busy.total;
	r->busy_p50_us = (double)perf_hist_percentile(&run->busy, 50) / 1e3;
	r->busy_p99_us = (double)perf_hist_percentile(&run->busy, 99) / 1e3;
	r->busy_max_us = (double)run->busy.max / 1e3;
	r->busy_unc_p50_us = (double)perf_hist_percentile(&run->busy_unc, 50) / 1e3;
	r->busy_unc_p99_us = (double)perf_hist_percentile(&run->busy_unc, 99) / 1e3;
	r->busy_unc_max_us = (double)run->busy_unc.max / 1e3;
	r->loadavg = perf_loadavg();
	r->ok = r->issued > 0;
	free(os.calls);
	os.calls = NULL;
	return 0;
}

int
perf_open_spectrum(const struct perf_opts *o, const struct perf_open_run *run)
{
	FILE *sf;

	if (o->spectrum == NULL)
		return 0;
	sf = fopen(o->spectrum, "w");
	if (sf == NULL) {
		int rc = -errno;

		fprintf(stderr, "%s: %s\n", o->spectrum, strerror(errno));
		return rc;
	}
	perf_hist_spectrum(&run->lat, sf, 5, 1e3, o->csv);
	fclose(sf);
	return 0;
}
