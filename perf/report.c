/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Output: one line per measurement (and the baseline's beside it) or, with
 * --json, one JSON object whose keys scripts and tests read; rref-churn
 * reports its owner's memory instead of round-trip times.
 */
#include <inttypes.h>
#include <stdio.h>

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

static void
report_lateness(const struct perf_opts *o, const struct perf_result *d)
{
	if (o->json) {
		printf("{\"mode\": \"lateness\", \"threads\": %u, \"window\": %u, "
		       "\"service_us\": %" PRIu64 ", \"timeout_us\": %" PRIu64
		       ", \"repeat\": %u, \"seconds\": %.3f, \"timeouts\": %" PRIu64
		       ", \"completions\": %" PRIu64 ", \"other_failures\": %" PRIu64
		       ", \"submit_failures\": %" PRIu64 ", \"lateness_max_us\": %.1f"
		       ", \"lateness_p99_us\": %.1f, \"lateness_p50_us\": %.1f"
		       ", \"observed_lateness_max_us\": %.1f, \"observed_lateness_p99_us\": %.1f"
		       ", \"completion_gap_max_us\": %.1f, \"submit_max_us\": %.1f"
		       ", \"retransmits\": %" PRIu64 ", \"dropped\": %" PRIu64
		       ", \"loadavg_1m\": %.2f}\n",
			o->threads, o->window, o->service_us, o->timeout_us, o->repeat, d->seconds,
			d->timeouts, d->completions, d->other_failures, d->submit_failures,
			d->late_max_us, d->late_p99_us, d->late_p50_us, d->late_obs_max_us,
			d->late_obs_p99_us, d->gap_max_us, d->submit_max_us, d->retransmits,
			d->dropped, d->loadavg);
		return;
	}
	printf("lateness: %u threads x %u calls, timeout %" PRIu64 " us, service %" PRIu64
	       " us: %" PRIu64 " timeouts, %" PRIu64 " completed, %" PRIu64
	       " other failures, %" PRIu64 " submissions refused\n"
	       "          completion - deadline: max %.1f us  p99 %.1f us  p50 %.1f us; "
	       "seen by the caller: max %.1f us  p99 %.1f us\n"
	       "          longest completion gap %.1f us, longest rpc_async %.1f us; load "
	       "average %.2f\n",
		o->threads, o->window, o->timeout_us, o->service_us, d->timeouts, d->completions,
		d->other_failures, d->submit_failures, d->late_max_us, d->late_p99_us,
		d->late_p50_us, d->late_obs_max_us, d->late_obs_p99_us, d->gap_max_us,
		d->submit_max_us, d->loadavg);
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
			printf(", \"response_bytes\": %u, \"bytes_per_s\": %.0f", resp_bytes(o),
				d->rate * (o->payload + resp_bytes(o)));
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
