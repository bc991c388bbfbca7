/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Measurement: a run's TSC clock (warm-up discarded, RTT samples kept in
 * ticks and turned into percentiles at the end) and the medians taken over
 * --repeat runs.  perf_clock_record(), on every call's path, is inline in
 * perf.h.  The classes failed calls are counted in (perf_err_map[]).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <rte_cycles.h>

#include "perf.h"

int
perf_clock_init(struct perf_clock *k, const struct perf_opts *o)
{
	k->hz = rte_get_tsc_hz();
	k->start = rte_rdtsc();
	k->measure_from = k->start + (uint64_t)(o->warmup_s * (double)k->hz);
	k->end = k->measure_from + (uint64_t)(o->duration_s * (double)k->hz);
	k->samples = malloc(PERF_MAX_SAMPLES * sizeof(uint32_t));
	k->nb_samples = 0;
	k->calls = 0;
	return k->samples == NULL ? -ENOMEM : 0;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static double
pct_us(const struct perf_clock *k, double q)
{
	uint64_t n = k->nb_samples, i = (uint64_t)(q * (double)(n - 1) + 0.5);

	return n == 0 ? 0.0 : k->samples[i] * 1e6 / (double)k->hz;
}

void
perf_clock_finish(struct perf_clock *k, const struct perf_opts *o, struct perf_result *r)
{
	qsort(k->samples, k->nb_samples, sizeof(uint32_t), cmp_u32);
	r->calls = k->calls;
	r->seconds = o->duration_s;
	r->rate = (double)k->calls / o->duration_s;
	r->p50_us = pct_us(k, 0.50);
	r->p99_us = pct_us(k, 0.99);
	r->p999_us = pct_us(k, 0.999);
	r->max_us = pct_us(k, 1.0);
	r->ok = k->calls > 0;
	free(k->samples);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median, field by field, over the runs. */
void
perf_median_result(struct perf_result *runs, unsigned int n, struct perf_result *m)
{
	double v[100];
	unsigned int i;

	*m = runs[0];
#define MEDIAN(field)                                    \
	do {                                             \
		for (i = 0; i < n; i++)                  \
			v[i] = (double)runs[i].field;    \
		qsort(v, n, sizeof(double), cmp_double); \
		m->field = v[n / 2];                     \
	} while (0)
	MEDIAN(rate);
	MEDIAN(p50_us);
	MEDIAN(p99_us);
	MEDIAN(p999_us);
	MEDIAN(max_us);
	MEDIAN(calls);
	MEDIAN(proxy_p50_us);
	MEDIAN(proxy_p99_us);
	MEDIAN(here_p50_us);
	MEDIAN(here_rate);
	MEDIAN(rpcv_p50_us);
	MEDIAN(rpcv_rate);
	MEDIAN(rss_last_kb);
	MEDIAN(late_p50_us);
	MEDIAN(late_p99_us);
	MEDIAN(late_obs_p99_us);
	MEDIAN(late_sub_p99_us);
	MEDIAN(late_net_p99_us);
	MEDIAN(late_netcpu_p99_us);
	MEDIAN(timeouts);
	MEDIAN(completions);
	MEDIAN(loadavg);
#undef MEDIAN
	/* Lateness: the worst of the runs, not their median. */
	for (i = 0; i < n; i++) {
		m->late_max_us = RTE_MAX(m->late_max_us, runs[i].late_max_us);
		m->late_obs_max_us = RTE_MAX(m->late_obs_max_us, runs[i].late_obs_max_us);
		m->gap_max_us = RTE_MAX(m->gap_max_us, runs[i].gap_max_us);
		m->submit_max_us = RTE_MAX(m->submit_max_us, runs[i].submit_max_us);
		m->late_sub_max_us = RTE_MAX(m->late_sub_max_us, runs[i].late_sub_max_us);
		m->late_net_max_us = RTE_MAX(m->late_net_max_us, runs[i].late_net_max_us);
		m->late_netcpu_max_us = RTE_MAX(m->late_netcpu_max_us, runs[i].late_netcpu_max_us);
		m->gap_stalled_us = RTE_MAX(m->gap_stalled_us, runs[i].gap_stalled_us);
		m->stall_all_max_us = RTE_MAX(m->stall_all_max_us, runs[i].stall_all_max_us);
		m->stall_cpu_max_us = RTE_MAX(m->stall_cpu_max_us, runs[i].stall_cpu_max_us);
		m->watch_realtime = m->watch_realtime && runs[i].watch_realtime;
	}
	m->dropped = m->tx_retries = m->calls_failed = m->retransmits = 0;
	for (i = 0; i < n; i++) {
		m->dropped += runs[i].dropped;
		m->tx_retries += runs[i].tx_retries;
		m->calls_failed += runs[i].calls_failed;
		m->retransmits += runs[i].retransmits;
	}
}

double
perf_median_of(double *v, unsigned int n)
{
	qsort(v, n, sizeof(double), cmp_double);
	return v[n / 2];
}

const char *const perf_err_class_names[PERF_ERR_CLASS_MAX] = {
	"timeouts", "overload", "deadline", "cancelled", "other"};

/*
 * Failed calls by class.  The library ends a call with one of these today
 * (dprpc_rpc.h); an errno the server work adds (a deadline drop, an
 * overload rejection, a cancellation) is one more line here.  Anything not
 * listed is "other"; every errno is counted by itself as well.
 */
static const struct {
	int err;
	enum perf_err_class cls;
} perf_err_map[] = {
	{ETIMEDOUT, PERF_ERR_TIMEOUT},
	{EBUSY, PERF_ERR_OVERLOAD},
	{ENOBUFS, PERF_ERR_OVERLOAD},
	{ETIME, PERF_ERR_DEADLINE},
	{ECANCELED, PERF_ERR_CANCELLED},
};

enum perf_err_class
perf_err_classify(int code)
{
	unsigned int i;

	code = code < 0 ? -code : code;
	for (i = 0; i < RTE_DIM(perf_err_map); i++)
		if (perf_err_map[i].err == code)
			return perf_err_map[i].cls;
	return PERF_ERR_OTHER;
}

/* One failed call (@code a negative errno) into @r. */
void
perf_err_count(struct perf_result *r, int code)
{
	unsigned int e = (unsigned int)(code < 0 ? -code : code);

	r->failed++;
	r->err_class[perf_err_classify(code)]++;
	r->err_errno[e < PERF_ERRNO_MAX ? e : 0]++;
}

double
perf_loadavg(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f != NULL) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

/* The agent's totals into a result. */
void
perf_client_stats(struct dprpc_agent *a, struct perf_result *r)
{
	struct dprpc_agent_stats st;

	dprpc_agent_stats_get(a, &st);
	r->dropped = st.dropped;
	r->tx_retries = st.tx_retries;
	r->calls_failed = st.calls_failed;
	r->retransmits = st.retransmits;
	r->frames_resent = st.frames_resent;
	r->acks_sent = st.acks_sent;
	r->msgs_sent = st.msgs_sent;
	r->msgs_received = st.msgs_received;
	r->calls_sent = st.calls_sent;
	r->calls_ok = st.calls_ok;
}
