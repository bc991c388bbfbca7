/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rate sweep: open-loop runs at the --rates given, ascending, then
 * bisection past the last sustainable one, then one run at 80% of the
 * maximum sustainable rate.  Who runs them is the caller's run function:
 * dprpc-perf's (main.c) forks a fresh server and client over memif per
 * run (open.c); the digits model client's (examples/model/client.c) runs
 * them one after another on its connection to a running model server.
 * Its definitions, applied to the runs exactly as written:
 *
 *  - baseline: the lowest p99 (from the intended send) of the runs at the
 *    --rates given (the best tail the system showed: on a shared machine
 *    one stall can lift the p99 of any single light run);
 *  - a rate is *sustainable* when its run (1) failed or left unsent at
 *    most 0.1% of the calls it issued, (2) achieved at least 95% of the
 *    rate it issued at, "achieved" being the window's OK calls over the
 *    time from the window's start to the last one's completion (a backlog
 *    that grows stretches that time; 95%, not 100%: one stall of this
 *    shared machine at the window's end must not count as overload), and
 *    (3) had a p99 of at most --slo-us, by default 10 x the baseline (an
 *    overloaded open loop's p99 grows with the run's length, to orders of
 *    magnitude above it);
 *  - the *maximum sustainable rate* is the highest rate run such that it
 *    and every lower rate run are sustainable (bisection refines it
 *    between the last sustainable and the first unsustainable rate);
 *  - the *knee* is the lowest rate run from which on every run's p99
 *    exceeds 2 x the baseline: where queueing starts to dominate the tail
 *    for good.
 *
 * With --repeat N every rate (bisection's and 80%'s too) runs N times and
 * counts as its run of median p99: one stall of the shared machine does
 * not decide a verdict.  The sweep stops raising the rate after two unsustainable rates in a
 * row (judged with the baseline so far: the lowest p99 yet).  Output: a table (text), one JSON object, or CSV rows with the
 * results as "# key=value" lines after them (gnuplot skips those).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

struct sweep_point {
	double rate;
	struct perf_result r;
	bool sustainable;
};

static int
cmp_p99(const void *a, const void *b)
{
	double x = ((const struct perf_result *)a)->p99_us,
	       y = ((const struct perf_result *)b)->p99_us;

	return x < y ? -1 : x > y;
}

/* --repeat runs at @rate; the one of median p99 (whole: its fields
 * belong together) in @r. */
static int
sweep_run(const struct perf_opts *o, perf_sweep_run_fn run, void *ctx, double rate,
	unsigned int *tag, struct perf_result *r)
{
	static struct perf_result runs[100];
	struct perf_opts so = *o;
	unsigned int i;
	int rc = 0;

	so.mode = MODE_OPEN;
	so.rate = rate;
	so.quiet = true;
	so.repeat = 1;
	for (i = 0; rc == 0 && i < o->repeat; i++) {
		memset(&runs[i], 0, sizeof(runs[i]));
		rc = run(&so, (*tag)++, &runs[i], ctx);
		/* Once more after a run that failed to run (its sides not
		 * starting or joining on a loaded machine, say why on
		 * stderr): the sweep's verdicts come from runs that ran. */
		if (rc != 0) {
			fprintf(stderr,
				"dprpc-perf: sweep: the run at %.0f calls/s failed (%s): "
				"once more\n",
				rate, strerror(-rc));
			memset(&runs[i], 0, sizeof(runs[i]));
			rc = run(&so, (*tag)++, &runs[i], ctx);
		}
	}
	if (rc == 0) {
		qsort(runs, o->repeat, sizeof(runs[0]), cmp_p99);
		*r = runs[o->repeat / 2];
	}
	if (rc != 0)
		fprintf(stderr, "dprpc-perf: sweep: the run at %.0f calls/s failed: %s\n", rate,
			strerror(-rc));
	else if (!o->json && !o->csv)
		fprintf(stderr,
			"sweep: %.0f calls/s: p50 %.2f us, p99 %.2f us, %.0f achieved/s, %" PRIu64
			" failed\n",
			rate, r->p50_us, r->p99_us, r->achieved_rate, r->failed + r->unsent);
	return rc;
}

static bool
sweep_sustainable(const struct perf_result *r, double slo_us)
{
	double issued_rate = (double)r->issued / r->seconds;

	return (double)(r->failed + r->unsent) <= 0.001 * (double)r->issued &&
	       r->achieved_rate >= 0.95 * issued_rate && r->p99_us <= slo_us;
}

static int
cmp_point(const void *a, const void *b)
{
	double x = ((const struct sweep_point *)a)->rate, y = ((const struct sweep_point *)b)->rate;

	return x < y ? -1 : x > y;
}

static void
sweep_print(const struct perf_opts *o, const struct sweep_point *pt, unsigned int n, double base,
	double slo, double knee, double msr, const struct perf_result *at80)
{
	unsigned int i, k;

	if (o->json) {
		printf("{\"mode\": \"sweep\", \"handler\": \"%s\", \"payload_bytes\": %u, "
		       "\"service_us\": %" PRIu64 ", \"poisson\": %s, \"duration_s\": %.3f, "
		       "\"warmup_s\": %.3f, \"repeat\": %u, \"baseline_p99_us\": %.3f, \"slo_us\": "
		       "%.3f, "
		       "\"points\": [",
			o->handler, o->payload, o->service_us, o->poisson ? "true" : "false",
			o->duration_s, o->warmup_s, o->repeat, base, slo);
		for (i = 0; i < n; i++) {
			const struct perf_result *r = &pt[i].r;

			printf("%s{\"offered_rps\": %.1f, \"issued\": %" PRIu64 ", \"ok\": %" PRIu64
			       ", \"failed\": %" PRIu64 ", \"unsent\": %" PRIu64
			       ", \"done_rps\": %.1f, \"achieved_rps\": %.1f, \"p50_us\": %.3f"
			       ", \"p90_us\": %.3f"
			       ", \"p99_us\": %.3f, \"p999_us\": %.3f, \"max_us\": %.3f",
				i ? ", " : "", pt[i].rate, r->issued, r->ok_calls, r->failed,
				r->unsent, r->done_rate, r->achieved_rate, r->p50_us, r->p90_us,
				r->p99_us, r->p999_us, r->max_us);
			for (k = 0; k < PERF_ERR_CLASS_MAX; k++)
				printf(", \"%s\": %" PRIu64, perf_err_class_names[k],
					r->err_class[k]);
			printf(", \"retransmits\": %" PRIu64 ", \"sustainable\": %s"
			       ", \"loadavg_1m\": %.2f}",
				r->retransmits, pt[i].sustainable ? "true" : "false", r->loadavg);
		}
		printf("], \"knee_rps\": %.1f, \"max_sustainable_rps\": %.1f", knee, msr);
		if (at80 != NULL)
			printf(", \"at80\": {\"offered_rps\": %.1f, \"issued\": %" PRIu64
			       ", \"failed\": %" PRIu64 ", \"p50_us\": %.3f, \"p99_us\": %.3f"
			       ", \"p999_us\": %.3f, \"max_us\": %.3f, \"p99_over_p50\": %.3f"
			       ", \"loadavg_1m\": %.2f}",
				at80->offered_rate, at80->issued, at80->failed + at80->unsent,
				at80->p50_us, at80->p99_us, at80->p999_us, at80->max_us,
				at80->p50_us > 0 ? at80->p99_us / at80->p50_us : 0, at80->loadavg);
		printf("}\n");
		return;
	}
	if (o->csv) {
		printf("offered_rps,issued,ok,failed,unsent,achieved_rps,p50_us,p90_us,p99_us,p999_"
		       "us,"
		       "max_us,timeouts,overload,deadline,cancelled,other,retransmits,sustainable,"
		       "loadavg_1m\n");
		for (i = 0; i < n; i++) {
			const struct perf_result *r = &pt[i].r;

			printf("%.1f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			       ",%.1f,%.3f,%.3f,%.3f,%.3f,%.3f",
				pt[i].rate, r->issued, r->ok_calls, r->failed, r->unsent,
				r->achieved_rate, r->p50_us, r->p90_us, r->p99_us, r->p999_us,
				r->max_us);
			for (k = 0; k < PERF_ERR_CLASS_MAX; k++)
				printf(",%" PRIu64, r->err_class[k]);
			printf(",%" PRIu64 ",%d,%.2f\n", r->retransmits, pt[i].sustainable,
				r->loadavg);
		}
		printf("# baseline_p99_us=%.3f slo_us=%.3f knee_rps=%.1f "
		       "max_sustainable_rps=%.1f\n",
			base, slo, knee, msr);
		if (at80 != NULL)
			printf("# at80_rps=%.1f at80_p50_us=%.3f at80_p99_us=%.3f "
			       "at80_p999_us=%.3f at80_failed=%" PRIu64 " at80_loadavg_1m=%.2f\n",
				at80->offered_rate, at80->p50_us, at80->p99_us, at80->p999_us,
				at80->failed + at80->unsent, at80->loadavg);
		return;
	}
	printf("sweep: handler %s, %u B, %s schedule, %.3f s measured per run after %.3f s, "
	       "median-p99 run of %u per rate\n",
		o->handler, o->payload, o->poisson ? "Poisson" : "fixed", o->duration_s,
		o->warmup_s, o->repeat);
	printf("%12s %9s %7s %7s %12s %10s %10s %10s %10s %10s %s\n", "offered/s", "issued",
		"failed", "unsent", "achieved/s", "p50 us", "p90 us", "p99 us", "p99.9 us",
		"max us", "sustainable");
	for (i = 0; i < n; i++) {
		const struct perf_result *r = &pt[i].r;

		printf("%12.0f %9" PRIu64 " %7" PRIu64 " %7" PRIu64
		       " %12.0f %10.2f %10.2f %10.2f %10.2f %10.2f %s\n",
			pt[i].rate, r->issued, r->failed, r->unsent, r->achieved_rate, r->p50_us,
			r->p90_us, r->p99_us, r->p999_us, r->max_us,
			pt[i].sustainable ? "yes" : "no");
	}
	printf("baseline p99 %.2f us; sustainable: p99 <= %.2f us, <= 0.1%% failed, achieved >= "
	       "95%% of issued\n",
		base, slo);
	if (knee > 0)
		printf("knee: %.0f calls/s (from there on p99 > 2x the baseline)\n", knee);
	else
		printf("knee: none within the sweep\n");
	if (msr > 0)
		printf("maximum sustainable rate: %.0f calls/s\n", msr);
	else
		printf("maximum sustainable rate: none (the lowest rate is not sustainable)\n");
	if (at80 != NULL)
		printf("at 80%% of it (%.0f calls/s): p50 %.2f us, p99 %.2f us, p99.9 %.2f us, "
		       "p99/p50 %.2f; %" PRIu64 " failed; load average %.2f\n",
			at80->offered_rate, at80->p50_us, at80->p99_us, at80->p999_us,
			at80->p50_us > 0 ? at80->p99_us / at80->p50_us : 0,
			at80->failed + at80->unsent, at80->loadavg);
}

int
perf_sweep(const struct perf_opts *o, perf_sweep_run_fn run, void *ctx)
{
	static struct sweep_point pt[PERF_SWEEP_MAX];
	struct perf_result at80;
	unsigned int i, n = 0, tag = 0, bad_in_row = 0, m;
	double base = 0, slo = 0, lo, hi, mid, knee = 0, msr = 0;

	for (i = 0; i < o->nb_rates && bad_in_row < 2; i++) {
		if (sweep_run(o, run, ctx, o->rates[i], &tag, &pt[n].r) != 0)
			return -EIO;
		pt[n].rate = o->rates[i];
		if (n == 0 || pt[n].r.p99_us < base)
			base = pt[n].r.p99_us;
		slo = o->slo_us > 0 ? o->slo_us : 10 * base;
		pt[n].sustainable = sweep_sustainable(&pt[n].r, slo);
		bad_in_row = pt[n].sustainable ? 0 : bad_in_row + 1;
		n++;
	}
	/* The baseline is final: judge every run by it. */
	for (i = 0; i < n; i++)
		pt[i].sustainable = sweep_sustainable(&pt[i].r, slo);
	/* pt[0 .. m - 1]: the sustainable prefix. */
	for (m = 0; m < n && pt[m].sustainable; m++)
		;
	if (m > 0) {
		lo = msr = pt[m - 1].rate;
		/* Bisect between it and the first unsustainable rate. */
		for (i = 0, hi = m < n ? pt[m].rate : 0; hi > 0 && i < o->refine; i++) {
			mid = (lo + hi) / 2;
			if (sweep_run(o, run, ctx, mid, &tag, &pt[n].r) != 0)
				return -EIO;
			pt[n].rate = mid;
			pt[n].sustainable = sweep_sustainable(&pt[n].r, slo);
			if (pt[n].sustainable)
				lo = msr = mid;
			else
				hi = mid;
			n++;
		}
	}
	qsort(pt, n, sizeof(pt[0]), cmp_point);
	/* As defined above, over every run, bisection's included. */
	for (i = 0, msr = 0; i < n && pt[i].sustainable; i++)
		msr = pt[i].rate;
	for (i = n; i > 0 && pt[i - 1].r.p99_us > 2 * base; i--)
		knee = pt[i - 1].rate;
	if (msr > 0 && sweep_run(o, run, ctx, 0.8 * msr, &tag, &at80) != 0)
		return -EIO;
	sweep_print(o, pt, n, base, slo, knee, msr, msr > 0 ? &at80 : NULL);
	fflush(stdout);
	return 0;
}
