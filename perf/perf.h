/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dprpc-perf's shared vocabulary: the options, the result a client hands
 * to the driver, the TSC clock every mode measures with, and the entry
 * points each mode's file offers to main.c.  Only what crosses a file is
 * here; everything else is static where it is used.
 */
#ifndef DPRPC_PERF_H
#define DPRPC_PERF_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_cycles.h>

#include <dprpc/dprpc.h>

#include "clock.h"
#include "hist.h"

#define PERF_MAX_SAMPLES (8u << 20)
#define PERF_MAX_WINDOW	 1024
#define PERF_ECHO	 UINT32_MAX /* --response not given: echo */
#define PERF_SWEEP_MAX	 64
#define PERF_WORLD_MAX	 64  /* world: --workers up to DPRPC_MAX_WORKERS */
#define PERF_ERRNO_MAX	 134 /* errnos counted one by one (Linux's go to 133) */

enum perf_mode {
	MODE_LATENCY,
	MODE_THROUGHPUT,
	MODE_RAW,
	MODE_RREF,
	MODE_RREF_CHURN,
	MODE_LATENESS,
	MODE_OPEN,  /* open loop: calls at --rate, latency from the intended send */
	MODE_SWEEP, /* open-loop runs over rates: the knee and the max sustainable rate */
	MODE_WORLD, /* N worker processes over memif, all-to-all calls (world.c) */
	MODE_MAX
};
extern const char *const perf_mode_names[MODE_MAX];

struct perf_opts {
	enum perf_mode mode;
	const char *role;  /* NULL: both, forked */
	const char *world; /* --world: the map (text or @file); NULL: rpc.c's */
	unsigned int payload;
	unsigned int response; /* latency, throughput: response bytes; PERF_ECHO: echo */
	unsigned int window;
	double duration_s;
	double warmup_s;
	unsigned int repeat;
	unsigned int server_cpu, client_cpu;
	bool json;
	bool compare_raw;
	bool compare_rpc;	 /* rref: rpc_sync latency runs alternate as the baseline */
	uint64_t rrefs;		 /* rref-churn: RRefs created and released */
	unsigned int value_size; /* rref: the value's bytes (0: the echoed payload) */
	unsigned int batch;	 /* rref-churn: alive at once */
	long retransmit_us;	 /* -1: the agent's default */
	long inline_wait_us;	 /* the server's inline_wait_max_us; -1: default */
	unsigned int auth;	 /* enum dprpc_auth_mode; DPRPC_AUTH_OFF: no world key */
	unsigned int threads;	 /* lateness: application threads of the client */
	uint64_t service_us;	 /* lateness: the server's busy time per call */
	bool watch;		 /* lateness: run the stall watch (watch.h) */
	uint64_t timeout_us;	 /* lateness, open: each call's timeout */
	/* open, sweep */
	double rate;		      /* calls per second offered */
	bool poisson;		      /* exponential gaps (else fixed) */
	uint64_t seed;		      /* of the Poisson schedule */
	const char *handler;	      /* the server's handler called (default echo) */
	bool csv;		      /* CSV instead of text */
	const char *spectrum;	      /* file for the percentile spectrum, or NULL */
	unsigned int hist_digits;     /* significant digits of the histogram */
	uint64_t hist_max_us;	      /* its highest value */
	bool quiet;		      /* a sweep's run: report nothing, hand the result over */
	double rates[PERF_SWEEP_MAX]; /* sweep: --rates, or from --rate-min, --rate-max, --steps */
	unsigned int nb_rates;
	unsigned int refine; /* sweep: bisection steps past the last sustainable rate */
	double slo_us;	     /* sweep: p99 bound of a sustainable rate (0: 10x the lowest rate's) */
	unsigned int workers;	      /* world: worker processes (default 4) */
	unsigned int compare_workers; /* world: a world of this many first (0: none) */
};

/* How a failed call is counted in every open-loop report: one class per
 * errno, through perf_err_map[] in stats.c; an errno it does not name is
 * "other" (and still counted by itself). */
enum perf_err_class {
	PERF_ERR_TIMEOUT,   /* ETIMEDOUT: the call's timeout expired */
	PERF_ERR_OVERLOAD,  /* the server refused it: EBUSY (handler pool full),
			       ENOBUFS (its budget) */
	PERF_ERR_DEADLINE,  /* dropped past its deadline by the server: ETIME */
	PERF_ERR_CANCELLED, /* ECANCELED */
	PERF_ERR_OTHER,
	PERF_ERR_CLASS_MAX
};
extern const char *const perf_err_class_names[PERF_ERR_CLASS_MAX];
enum perf_err_class perf_err_classify(int code);

/* What a client measured; sent to the driver through a pipe. */
struct perf_result {
	int ok;
	enum perf_mode mode;
	unsigned int window;
	uint64_t calls;
	double seconds;
	double rate;
	double p50_us, p99_us, p999_us, max_us;
	uint64_t dropped, tx_retries, calls_failed, retransmits;
	uint64_t frames_resent, acks_sent, msgs_sent, msgs_received;
	uint64_t corrupt;	       /* echoes that came back different (checked when echoing) */
	uint64_t calls_sent, calls_ok; /* the agent's totals, warm-up and drain included */
	/* latency, throughput: from the process's start (perf_start_ns) to
	 * the first call that succeeded, the world's formation included. */
	double first_call_ms;
	/* rref: proxy rpc_sync calls on one RRef, interleaved with the
	 * remote + to_here round trips. */
	double proxy_p50_us, proxy_p99_us;
	/* rref --value-size: to_here() of one long-lived RRef (a fetch), and
	 * rpc_sync() answering as many bytes, alternating in one window. */
	double here_p50_us, here_rate, rpcv_p50_us, rpcv_rate;
	/* rref-churn: the owner's resident memory after the first batch and
	 * after the last, and its RRef count at the end. */
	uint64_t rss_first_kb, rss_warm_kb, rss_last_kb, owners_left;
	/* lateness: calls that failed with -ETIMEDOUT, completed, failed
	 * otherwise, or could not be submitted (EAGAIN/ENOBUFS); completion
	 * time - deadline of the timeouts (percentiles of one run; over
	 * --repeat runs the medians but max, the worst); the same to when the
	 * caller's wait returned; the longest completion gap and the longest
	 * dprpc_rpc_async_id(); the 1-minute load average at the end; the
	 * lateness after submission (lateness.c).  With --watch (watch.h):
	 * the lateness after submission net of every CPU's stalls at once,
	 * and net of the stalls of the CPU the callback ran on, the part of the longest gap spent in such stalls, the longest stall
	 * of every CPU at once and of any one CPU, and whether the watch ran
	 * real-time (over --repeat runs: the p99s the median, the rest the
	 * worst). */
	uint64_t timeouts, completions, other_failures, submit_failures;
	double late_p50_us, late_p99_us, late_max_us, late_obs_p99_us, late_obs_max_us;
	double gap_max_us, submit_max_us, loadavg;
	double late_sub_p99_us, late_sub_max_us;
	bool watch, watch_realtime;
	double late_net_p99_us, late_net_max_us, late_netcpu_p99_us, late_netcpu_max_us;
	double gap_stalled_us;
	double stall_all_max_us, stall_cpu_max_us;
	/* open: the calls scheduled in the measured window (by intended send
	 * time), how they ended (ok, or failed: by class, see perf_err_class,
	 * and by errno; unsent: still not sent when the drain gave up), OK
	 * completions inside the window per second (done_rate), OK calls of
	 * the window per second from its start to the last one's completion
	 * (achieved_rate: below the issued rate when a backlog builds), the
	 * latency from the intended send (coordinated omission corrected) and
	 * from the actual send, the longest a send lagged its schedule, and
	 * submissions the agent pushed back (EAGAIN, ENOBUFS; retried);
	 * err_errno[0] counts errnos past the array. */
	double offered_rate, done_rate, achieved_rate;
	uint64_t issued, ok_calls, failed, unsent, send_refused;
	uint64_t err_class[PERF_ERR_CLASS_MAX];
	uint64_t err_errno[PERF_ERRNO_MAX];
	double min_us, mean_us, stddev_us, p90_us, p9999_us;
	double unc_p50_us, unc_p99_us, unc_max_us, send_lag_max_us;
	/* open: the calls refused for overload (EBUSY), from the intended
	 * send to the refusal: how soon a caller learns the server is full. */
	uint64_t busy_calls;
	double busy_p50_us, busy_p99_us, busy_max_us;
	double busy_unc_p50_us, busy_unc_p99_us, busy_unc_max_us; /* from the actual send */
};

/* Pairwise ratios: each dprpc run over the raw run just before it, so a
 * machine that changes speed between repeats does not skew them. */
struct perf_ratios {
	double p50, rate;
};

/* ---- measurement (stats.c) ---- */

struct perf_clock {
	uint64_t hz, start, measure_from, end;
	uint32_t *samples; /* RTTs in TSC ticks, converted at the end */
	uint64_t nb_samples, calls;
};

int perf_clock_init(struct perf_clock *k, const struct perf_opts *o);
void perf_clock_finish(struct perf_clock *k, const struct perf_opts *o, struct perf_result *r);
void perf_err_count(struct perf_result *r, int code);
void perf_median_result(struct perf_result *runs, unsigned int n, struct perf_result *m);
double perf_median_of(double *v, unsigned int n);
/* The 1-minute load average, -1 if unknown. */
double perf_loadavg(void);
/* The agent's totals (dprpc_agent_stats) into @r. */
void perf_client_stats(struct dprpc_agent *a, struct perf_result *r);

static inline void
perf_clock_record(struct perf_clock *k, uint64_t t0, uint64_t t1)
{
	if (t0 < k->measure_from || t1 > k->end)
		return;
	k->calls++;
	if (k->nb_samples < PERF_MAX_SAMPLES)
		k->samples[k->nb_samples++] = (uint32_t)RTE_MIN(t1 - t0, (uint64_t)UINT32_MAX);
}

/* ---- options (opts.c) ---- */

void perf_usage(const char *prog);
int perf_parse_opts(int argc, char **argv, struct perf_opts *o);

/* ---- the driver (main.c) ---- */

extern volatile sig_atomic_t perf_stop; /* openloop.c; set on SIGTERM, SIGINT */
/* CLOCK_MONOTONIC (ns) at main()'s start, or at a forked side's. */
extern uint64_t perf_start_ns;
void perf_publish_and_hold(const struct perf_result *r);
/* Fork a server and a client of @mode over a memif pair; the client's
 * result in @r.  0 or a negative errno. */
int perf_run_phase(
	const struct perf_opts *o, enum perf_mode mode, unsigned int tag, struct perf_result *r);

/* ---- the modes (raw.c, rpc.c, rref.c, lateness.c) ---- */

int perf_raw_server(uint16_t port);
int perf_raw_client(uint16_t port, const struct perf_opts *o, struct perf_result *r);

/* Agent settings from the options, for perf_rpc_agent(). */
extern const char *perf_world_map; /* NULL: the fixed two-worker map */
extern long perf_retransmit_us;
extern long perf_inline_wait_us;
/* --role server --json: print the server agent's counters when it stops. */
extern bool perf_server_json;
/* The server's spin and sleep handlers: their time per call. */
extern uint64_t perf_service_us;
/* The agents' max_outstanding (default PERF_MAX_WINDOW). */
extern unsigned int perf_max_outstanding;
/* --auth: the agents' conf.auth.mode, with rpc.c's fixed 32-byte key;
 * DPRPC_AUTH_OFF (the default): no key. */
extern unsigned int perf_auth;
int perf_rpc_set_response(unsigned int len);
int perf_rpc_set_blob(unsigned int len);
struct dprpc_agent *perf_rpc_agent(const char *name, uint16_t port);
int perf_rpc_server(uint16_t port);
int perf_rpc_client(uint16_t port, const struct perf_opts *o, struct perf_result *r);
int perf_client_finish(struct dprpc_agent *a, struct perf_result *r);

int perf_h_rrefstat(struct dprpc_request *req, void *arg);
int perf_rref_client(uint16_t port, const struct perf_opts *o, struct perf_result *r);
int perf_churn_client(uint16_t port, const struct perf_opts *o, struct perf_result *r);

int perf_open_client(uint16_t port, const struct perf_opts *o, struct perf_result *r);

/* ---- the open-loop engine (openloop.c) and the sweep (sweep.c): the
 * library perf_openloop, shared with examples/model's client ---- */

/*
 * What an open loop sends and how it judges the answers.  request(): call
 * @k's payload (k = 0, 1, ... in schedule order, the warm-up's included),
 * valid until the next request(); its length in *len.  check() (NULL: not
 * checked): an answer to call @k, 0 if right, else the negative errno the
 * call fails with (counted as failed, class "other").  Both run on the
 * calling thread (check() in dprpc_poll()'s completion callbacks).
 */
struct perf_open_source {
	const void *(*request)(void *ctx, uint64_t k, size_t *len);
	int (*check)(void *ctx, uint64_t k, const void *value, size_t len);
	void *ctx;
};
struct perf_open_run;
/*
 * One open-loop run on @a (its link up): calls to handler @hid of worker
 * @to at o->rate (o->poisson, o->seed), o->warmup_s then o->duration_s,
 * each with o->timeout_us, at most @max_inflight at once (no more than the
 * agent's max_outstanding); every call drained before it returns.  Fills
 * @r (its counters must start at 0) and @run (free it with
 * perf_open_run_free()).  0, -EINVAL, -ENOMEM.  One run at a time per
 * process; perf_stop ends it early.
 */
int perf_open_loop(struct dprpc_agent *a, unsigned int to, uint32_t hid, unsigned int max_inflight,
	const struct perf_opts *o, const struct perf_open_source *src, struct perf_open_run *run,
	struct perf_result *r);
void perf_open_run_free(struct perf_open_run *run);
/* --spectrum FILE: @run's percentile spectrum there (0 or -errno). */
int perf_open_spectrum(const struct perf_opts *o, const struct perf_open_run *run);

/* The sweep's one open-loop run at @rate (o is the sweep's options with
 * that rate and quiet set; @tag numbers the runs): 0 and the result in
 * @r, or a negative errno. */
typedef int (*perf_sweep_run_fn)(
	const struct perf_opts *o, unsigned int tag, struct perf_result *r, void *ctx);
/* The sweep (sweep.c): runs through @run, prints the table. */
int perf_sweep(const struct perf_opts *o, perf_sweep_run_fn run, void *ctx);
/* The world mode (world.c): forks its workers itself; reports. */
int perf_world(const struct perf_opts *o);

int perf_lateness_server(uint16_t port, const struct perf_opts *o);
int perf_lateness_client(uint16_t port, const struct perf_opts *o, struct perf_result *r);

/* ---- output (report.c) ---- */

void perf_report(const struct perf_opts *o, const struct perf_result *d,
	const struct perf_result *raw, const struct perf_ratios *pr);
/* An open-loop run's histograms (nanoseconds), for its report: the
 * whole window's latency from the intended send and from the actual
 * send, and per second of intended send time. */
struct perf_open_sec {
	uint64_t issued, ok, failed; /* the calls scheduled in this second */
	uint64_t done;		     /* OK completions inside this second */
	struct perf_hist h;	     /* the latency of its calls, from the intended send */
};
struct perf_open_run {
	struct perf_hist lat, unc;
	struct perf_hist busy, busy_unc; /* calls refused -EBUSY: from the intended, actual send */
	struct perf_open_sec *sec;
	unsigned int nb_sec;
};
void perf_open_report(
	const struct perf_opts *o, const struct perf_open_run *run, const struct perf_result *r);

#endif /* DPRPC_PERF_H */
