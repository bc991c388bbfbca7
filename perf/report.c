/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Output: one line per measurement (and the baseline's beside it) or, with
 * --json, one JSON object whose keys scripts and tests read; rref-churn
 * reports its owner's memory instead of round-trip times; the open loop
 * one line per second and a summary, as text, JSON or CSV.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <dprpc/dprpc.h>

#include "perf.h"

static void
print_fields(const struct perf_result *r)
{
	printf("\"calls\": %" PRIu64 ", \"seconds\": %.3f, \"rate_rps\": %.0f, "
	       "\"rtt_p50_us\": %.3f, \"rtt_p99_us\": %.3f, \"rtt_p999_us\": %.3f, "
	       "\"rtt_max_us\": %.3f",
		r->calls, r->seconds, r->rate, r->p50_us, r->p99_us, r->p999_us, r->max_us);
}

static void
report_churn(const struct perf_opts *o, const struct perf_result *d)
{
	double growth = d->rss_warm_kb > 0 ? (double)d->rss_last_kb / (double)d->rss_warm_kb : 0;

	if (o->json) {
		printf("{\"mode\": \"rref-churn\", \"rrefs\": %" PRIu64 ", \"batch\": %u, "
		       "\"seconds\": %.3f, \"rate_rps\": %.0f, \"owner_rss_first_kb\": %" PRIu64
		       ", \"owner_rss_warm_kb\": %" PRIu64 ", \"owner_rss_last_kb\": %" PRIu64
		       ", \"rss_ratio_last_to_warm\": %.4f, \"owners_left\": %" PRIu64
		       ", \"calls_failed\": %" PRIu64 "}\n",
			d->calls, o->batch, d->seconds, d->rate, d->rss_first_kb, d->rss_warm_kb,
			d->rss_last_kb, growth, d->owners_left, d->calls_failed);
		return;
	}
	printf("rref-churn: %" PRIu64 " RRefs (batches of %u) created and released in %.2f s "
	       "(%.0f/s); owner RSS after the first batch %" PRIu64 " kB, after a tenth %" PRIu64
	       " kB, after the last %" PRIu64 " kB (last/tenth %.4fx); %" PRIu64 " left\n",
		d->calls, o->batch, d->seconds, d->rate, d->rss_first_kb, d->rss_warm_kb,
		d->rss_last_kb, growth, d->owners_left);
}

/* A JSON member ", \"NAME\": VALUE" of each of @n figures (us, one
 * decimal). */
struct report_fig {
	const char *name;
	double v;
};

static void
report_json_figs(const struct report_fig *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf(", \"%s\": %.1f", f[i].name, f[i].v);
}

static void
report_lateness(const struct perf_opts *o, const struct perf_result *d)
{
	if (o->json) {
		const struct report_fig late[] = {
			{"lateness_max_us", d->late_max_us},
			{"lateness_p99_us", d->late_p99_us},
			{"lateness_p50_us", d->late_p50_us},
			{"observed_lateness_max_us", d->late_obs_max_us},
			{"observed_lateness_p99_us", d->late_obs_p99_us},
			{"submitted_lateness_max_us", d->late_sub_max_us},
			{"submitted_lateness_p99_us", d->late_sub_p99_us},
			{"completion_gap_max_us", d->gap_max_us},
			{"submit_max_us", d->submit_max_us},
		};
		const struct report_fig watch[] = {
			{"net_lateness_max_us", d->late_net_max_us},
			{"net_lateness_p99_us", d->late_net_p99_us},
			{"net_cpu_lateness_max_us", d->late_netcpu_max_us},
			{"net_cpu_lateness_p99_us", d->late_netcpu_p99_us},
			{"completion_gap_stalled_us", d->gap_stalled_us},
			{"stall_all_cpus_max_us", d->stall_all_max_us},
			{"stall_one_cpu_max_us", d->stall_cpu_max_us},
		};

		printf("{\"mode\": \"lateness\", \"threads\": %u, \"window\": %u, "
		       "\"service_us\": %" PRIu64 ", \"timeout_us\": %" PRIu64
		       ", \"repeat\": %u, \"seconds\": %.3f, \"timeouts\": %" PRIu64
		       ", \"completions\": %" PRIu64 ", \"other_failures\": %" PRIu64
		       ", \"submit_failures\": %" PRIu64,
			o->threads, o->window, o->service_us, o->timeout_us, o->repeat, d->seconds,
			d->timeouts, d->completions, d->other_failures, d->submit_failures);
		report_json_figs(late, RTE_DIM(late));
		if (d->watch) {
			report_json_figs(watch, RTE_DIM(watch));
			printf(", \"watch_realtime\": %s", d->watch_realtime ? "true" : "false");
		}
		printf(", \"retransmits\": %" PRIu64 ", \"dropped\": %" PRIu64
		       ", \"loadavg_1m\": %.2f}\n",
			d->retransmits, d->dropped, d->loadavg);
		return;
	}
	printf("lateness: %u threads x %u calls, timeout %" PRIu64 " us, service %" PRIu64
	       " us: %" PRIu64 " timeouts, %" PRIu64 " completed, %" PRIu64
	       " other failures, %" PRIu64 " submissions refused\n"
	       "          completion - deadline: max %.1f us  p99 %.1f us  p50 %.1f us; "
	       "seen by the caller: max %.1f us  p99 %.1f us\n"
	       "          after dprpc_rpc_async_id() returned: max %.1f us  p99 %.1f us\n",
		o->threads, o->window, o->timeout_us, o->service_us, d->timeouts, d->completions,
		d->other_failures, d->submit_failures, d->late_max_us, d->late_p99_us,
		d->late_p50_us, d->late_obs_max_us, d->late_obs_p99_us, d->late_sub_max_us,
		d->late_sub_p99_us);
	if (d->watch)
		printf("          and net of stalls of every CPU: max %.1f us  p99 %.1f us; of "
		       "the callback's CPU: max %.1f us  p99 %.1f us\n"
		       "          the machine stalled every CPU up to %.1f us, one CPU up to "
		       "%.1f us%s\n",
			d->late_net_max_us, d->late_net_p99_us, d->late_netcpu_max_us,
			d->late_netcpu_p99_us, d->stall_all_max_us, d->stall_cpu_max_us,
			d->watch_realtime ? ""
					  : " (watch not real-time: guest scheduling included)");
	printf("          longest completion gap %.1f us", d->gap_max_us);
	if (d->watch)
		printf(" (%.1f us of it every CPU stalled)", d->gap_stalled_us);
	printf(", longest rpc_async %.1f us; load average %.2f\n", d->submit_max_us, d->loadavg);
}

/* Bytes of each response. */
static unsigned int
resp_bytes(const struct perf_opts *o)
{
	return o->response == PERF_ECHO ? o->payload : o->response;
}

void
perf_report(const struct perf_opts *o, const struct perf_result *d, const struct perf_result *raw,
	const struct perf_ratios *pr)
{
	const char *base = o->compare_rpc ? "rpc_sync" : "raw";

	if (o->mode == MODE_RREF_CHURN) {
		report_churn(o, d);
		return;
	}
	if (o->mode == MODE_LATENESS) {
		report_lateness(o, d);
		return;
	}
	if (o->mode == MODE_OPEN)
		return; /* the client printed it: perf_open_report() */
	if (o->json) {
		printf("{\"mode\": \"%s\", \"payload_bytes\": %u, \"window\": %u, \"repeat\": %u, ",
			perf_mode_names[o->mode], o->payload, o->window, o->repeat);
		print_fields(d);
		if (o->mode != MODE_RAW)
			printf(", \"dropped\": %" PRIu64 ", \"tx_retries\": %" PRIu64
			       ", \"calls_failed\": %" PRIu64 ", \"retransmits\": %" PRIu64
			       ", \"frames_resent\": %" PRIu64 ", \"acks_sent\": %" PRIu64
			       ", \"msgs_sent\": %" PRIu64 ", \"msgs_received\": %" PRIu64
			       ", \"corrupt\": %" PRIu64 ", \"calls_sent\": %" PRIu64
			       ", \"calls_ok\": %" PRIu64,
				d->dropped, d->tx_retries, d->calls_failed, d->retransmits,
				d->frames_resent, d->acks_sent, d->msgs_sent, d->msgs_received,
				d->corrupt, d->calls_sent, d->calls_ok);
		if (o->mode == MODE_LATENCY || o->mode == MODE_THROUGHPUT)
			printf(", \"response_bytes\": %u, \"bytes_per_s\": %.0f"
			       ", \"first_call_ms\": %.3f",
				resp_bytes(o), d->rate * (o->payload + resp_bytes(o)),
				d->first_call_ms);
		if (o->mode == MODE_RREF)
			printf(", \"proxy_p50_us\": %.3f, \"proxy_p99_us\": %.3f", d->proxy_p50_us,
				d->proxy_p99_us);
		if (o->mode == MODE_RREF && o->value_size > 0)
			printf(", \"value_bytes\": %u, \"remote_to_here_bytes_per_s\": %.0f"
			       ", \"to_here_p50_us\": %.3f, \"to_here_bytes_per_s\": %.0f"
			       ", \"rpc_sync_same_p50_us\": %.3f, \"rpc_sync_same_bytes_per_s\": "
			       "%.0f",
				o->value_size, d->rate * o->value_size, d->here_p50_us,
				d->here_rate * o->value_size, d->rpcv_p50_us,
				d->rpcv_rate * o->value_size);
		if (raw != NULL) {
			printf(", \"%s\": {", base);
			print_fields(raw);
			printf("}, \"ratio_p50\": %.3f, \"ratio_rate\": %.3f, "
			       "\"ratio_p50_of_medians\": %.3f, \"ratio_rate_of_medians\": %.3f",
				pr->p50, pr->rate, raw->p50_us > 0 ? d->p50_us / raw->p50_us : 0,
				raw->rate > 0 ? d->rate / raw->rate : 0);
		}
		printf("}\n");
		return;
	}
	printf("%-10s payload %u B window %u: %.0f calls/s  rtt p50 %.2f us  p99 %.2f us  "
	       "p99.9 %.2f us  max %.2f us\n",
		perf_mode_names[o->mode], o->payload, o->window, d->rate, d->p50_us, d->p99_us,
		d->p999_us, d->max_us);
	if ((o->mode == MODE_LATENCY || o->mode == MODE_THROUGHPUT) &&
		o->payload + resp_bytes(o) > DPRPC_MAX_FRAME_PAYLOAD)
		printf("%-10s response %u B: %.3f GB/s of payload (both ways); frames resent "
		       "%" PRIu64 "\n",
			"", resp_bytes(o), d->rate * (o->payload + resp_bytes(o)) / 1e9,
			d->frames_resent);
	if (o->mode == MODE_RREF && o->value_size > 0) {
		printf("%-10s value %u B: remote+to_here+release %.3f GB/s\n", "", o->value_size,
			d->rate * o->value_size / 1e9);
		printf("%-10s to_here (fetch) of the value: p50 %.2f us, %.3f GB/s\n", "",
			d->here_p50_us, d->here_rate * o->value_size / 1e9);
		printf("%-10s rpc_sync answering %u B: p50 %.2f us, %.3f GB/s (to_here/rpc_sync "
		       "%.3fx)\n",
			"", o->value_size, d->rpcv_p50_us, d->rpcv_rate * o->value_size / 1e9,
			d->rpcv_rate > 0 ? d->here_rate / d->rpcv_rate : 0);
	}
	if (o->mode == MODE_RREF)
		printf("%-10s proxy rpc_sync on one RRef: p50 %.2f us  p99 %.2f us\n", "",
			d->proxy_p50_us, d->proxy_p99_us);
	if (raw != NULL) {
		printf("%-10s payload %u B window %u: %.0f %s/s rtt p50 %.2f us  p99 %.2f us  "
		       "p99.9 %.2f us  max %.2f us\n",
			o->compare_rpc ? "rpc_sync" : "raw floor", o->payload, o->window, raw->rate,
			o->compare_rpc ? "calls" : "echoes", raw->p50_us, raw->p99_us, raw->p999_us,
			raw->max_us);
		printf("%s / %s: p50 %.3fx, rate %.3fx (median of %u back-to-back pairs; "
		       "of the medians: %.3fx, %.3fx)\n",
			o->compare_rpc ? "remote+to_here" : "dprpc", base, pr->p50, pr->rate,
			o->repeat, d->p50_us / raw->p50_us, d->rate / raw->rate);
	}
}

/* ---- the open loop ---- */

static double
hist_us(const struct perf_hist *h, double p)
{
	return (double)perf_hist_percentile(h, p) / 1e3;
}

static const char *
errno_name(unsigned int e)
{
	const char *n = e == 0 ? "out_of_range" : strerrorname_np((int)e);

	return n != NULL ? n : "unknown";
}

static void
open_json(const struct perf_opts *o, const struct perf_open_run *run, const struct perf_result *r)
{
	unsigned int i, n = 0;

	printf("{\"mode\": \"open\", \"handler\": \"%s\", \"payload_bytes\": %u, "
	       "\"offered_rps\": %.1f, \"poisson\": %s, \"seed\": %" PRIu64 ", "
	       "\"duration_s\": %.3f, \"warmup_s\": %.3f, \"timeout_us\": %" PRIu64
	       ", \"service_us\": %" PRIu64 ", ",
		o->handler, o->payload, o->rate, o->poisson ? "true" : "false", o->seed,
		o->duration_s, o->warmup_s, o->timeout_us, o->service_us);
	printf("\"issued\": %" PRIu64 ", \"ok\": %" PRIu64 ", \"failed\": %" PRIu64
	       ", \"unsent\": %" PRIu64,
		r->issued, r->ok_calls, r->failed, r->unsent);
	for (i = 0; i < PERF_ERR_CLASS_MAX; i++)
		printf(", \"%s\": %" PRIu64, perf_err_class_names[i], r->err_class[i]);
	printf(", \"retransmits\": %" PRIu64 ", \"dropped\": %" PRIu64
	       ", \"send_refused\": %" PRIu64
	       ", \"done_rps\": %.1f, \"achieved_rps\": %.1f, \"min_us\": %.3f, \"mean_us\": %.3f, "
	       "\"stddev_us\": %.3f"
	       ", \"p50_us\": %.3f, \"p90_us\": %.3f, \"p99_us\": %.3f, \"p999_us\": %.3f"
	       ", \"p9999_us\": %.3f, \"max_us\": %.3f, \"uncorrected_p50_us\": %.3f"
	       ", \"uncorrected_p99_us\": %.3f, \"uncorrected_max_us\": %.3f"
	       ", \"send_lag_max_us\": %.3f, \"hist_digits\": %u, \"overflow\": %" PRIu64
	       ", \"busy\": %" PRIu64 ", \"busy_p50_us\": %.3f, \"busy_p99_us\": %.3f"
	       ", \"busy_max_us\": %.3f, \"busy_from_send_p50_us\": %.3f"
	       ", \"busy_from_send_p99_us\": %.3f, \"busy_from_send_max_us\": %.3f"
	       ", \"loadavg_1m\": %.2f, \"errors_by_errno\": {",
		r->retransmits, r->dropped, r->send_refused, r->done_rate, r->achieved_rate,
		r->min_us, r->mean_us, r->stddev_us, r->p50_us, r->p90_us, r->p99_us, r->p999_us,
		r->p9999_us, r->max_us, r->unc_p50_us, r->unc_p99_us, r->unc_max_us,
		r->send_lag_max_us, o->hist_digits, run->lat.overflow, r->busy_calls,
		r->busy_p50_us, r->busy_p99_us, r->busy_max_us, r->busy_unc_p50_us,
		r->busy_unc_p99_us, r->busy_unc_max_us, r->loadavg);
	for (i = 0; i < PERF_ERRNO_MAX; i++)
		if (r->err_errno[i] > 0)
			printf("%s\"%s\": %" PRIu64, n++ ? ", " : "", errno_name(i),
				r->err_errno[i]);
	printf("}, \"per_second\": [");
	for (i = 0; i < run->nb_sec; i++) {
		const struct perf_open_sec *s = &run->sec[i];

		printf("%s{\"second\": %u, \"issued\": %" PRIu64 ", \"ok\": %" PRIu64
		       ", \"failed\": %" PRIu64 ", \"done\": %" PRIu64 ", \"p50_us\": %.3f"
		       ", \"p90_us\": %.3f, \"p99_us\": %.3f, \"p999_us\": %.3f, \"max_us\": %.3f}",
			i ? ", " : "", i, s->issued, s->ok, s->failed, s->done, hist_us(&s->h, 50),
			hist_us(&s->h, 90), hist_us(&s->h, 99), hist_us(&s->h, 99.9),
			(double)s->h.max / 1e3);
	}
	printf("]}\n");
}

static void
open_csv(const struct perf_open_run *run, const struct perf_result *r)
{
	unsigned int i;

	printf("second,issued,ok,failed,done,p50_us,p90_us,p99_us,p999_us,p9999_us,max_us,"
	       "timeouts,overload,deadline,cancelled,other,unsent,retransmits\n");
	for (i = 0; i < run->nb_sec; i++) {
		const struct perf_open_sec *s = &run->sec[i];

		printf("%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
		       ",%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,,,,,,,\n",
			i, s->issued, s->ok, s->failed, s->done, hist_us(&s->h, 50),
			hist_us(&s->h, 90), hist_us(&s->h, 99), hist_us(&s->h, 99.9),
			hist_us(&s->h, 99.99), (double)s->h.max / 1e3);
	}
	printf("all,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.0f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f",
		r->issued, r->ok_calls, r->failed, r->done_rate * r->seconds, r->p50_us, r->p90_us,
		r->p99_us, r->p999_us, r->p9999_us, r->max_us);
	for (i = 0; i < PERF_ERR_CLASS_MAX; i++)
		printf(",%" PRIu64, r->err_class[i]);
	printf(",%" PRIu64 ",%" PRIu64 "\n", r->unsent, r->retransmits);
}

void
perf_open_report(
	const struct perf_opts *o, const struct perf_open_run *run, const struct perf_result *r)
{
	unsigned int i, n = 0;

	if (o->json) {
		open_json(o, run, r);
		return;
	}
	if (o->csv) {
		open_csv(run, r);
		return;
	}
	printf("open: %.0f calls/s offered (%s), handler %s, %u B, %.3f s measured after "
	       "%.3f s of warm-up, timeout %" PRIu64 " us\n",
		o->rate, o->poisson ? "Poisson" : "fixed", o->handler, o->payload, o->duration_s,
		o->warmup_s, o->timeout_us);
	printf("%5s %9s %9s %7s %9s %10s %10s %10s %10s %10s  (latency from the intended "
	       "send, us)\n",
		"sec", "issued", "ok", "failed", "done", "p50", "p90", "p99", "p99.9", "max");
	for (i = 0; i < run->nb_sec; i++) {
		const struct perf_open_sec *s = &run->sec[i];

		printf("%5u %9" PRIu64 " %9" PRIu64 " %7" PRIu64 " %9" PRIu64
		       " %10.1f %10.1f %10.1f %10.1f %10.1f\n",
			i, s->issued, s->ok, s->failed, s->done, hist_us(&s->h, 50),
			hist_us(&s->h, 90), hist_us(&s->h, 99), hist_us(&s->h, 99.9),
			(double)s->h.max / 1e3);
	}
	printf("calls: %" PRIu64 " issued, %" PRIu64 " ok, %" PRIu64 " failed (", r->issued,
		r->ok_calls, r->failed);
	for (i = 0; i < PERF_ERR_CLASS_MAX; i++)
		printf("%s%s %" PRIu64, i ? ", " : "", perf_err_class_names[i], r->err_class[i]);
	printf("), %" PRIu64 " unsent; retransmits %" PRIu64 "; %.0f completed/s in the window, "
	       "%.0f/s achieved\n",
		r->unsent, r->retransmits, r->done_rate, r->achieved_rate);
	printf("ok calls, latency from the intended send: min %.2f  mean %.2f  stddev %.2f  p50 "
	       "%.2f  "
	       "p90 %.2f  p99 %.2f  p99.9 %.2f  p99.99 %.2f  max %.2f us\n",
		r->min_us, r->mean_us, r->stddev_us, r->p50_us, r->p90_us, r->p99_us, r->p999_us,
		r->p9999_us, r->max_us);
	printf("from the actual send: p50 %.2f  p99 %.2f  max %.2f us; sends up to %.2f us "
	       "late, %" PRIu64 " pushed back; load average %.2f\n",
		r->unc_p50_us, r->unc_p99_us, r->unc_max_us, r->send_lag_max_us, r->send_refused,
		r->loadavg);
	if (r->busy_calls > 0)
		printf("refused (EBUSY): %" PRIu64 " calls; from the intended send p50 %.2f  "
		       "p99 %.2f  max %.2f us; from the actual send p50 %.2f  p99 %.2f  max "
		       "%.2f us\n",
			r->busy_calls, r->busy_p50_us, r->busy_p99_us, r->busy_max_us,
			r->busy_unc_p50_us, r->busy_unc_p99_us, r->busy_unc_max_us);
	for (i = 0; i < PERF_ERRNO_MAX; i++)
		if (r->err_errno[i] > 0)
			printf("%s%s %" PRIu64, n++ ? ", " : "failed by errno: ", errno_name(i),
				r->err_errno[i]);
	if (n > 0)
		printf("\n");
}
