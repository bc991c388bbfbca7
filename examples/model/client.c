/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * digits_client: classifies the digits test split on a digits_server and
 * reports accuracy and latency.
 *
 *   digits_client [EAL options] -- --name NAME --world WORLD --server NAME
 *       --testset FILE [--window W] [--passes P | --duration S | --count N]
 *       [--timeout-us T] [--cancel-every K [--cancel-queued]] [--stop] [--json]
 *       [-- open|sweep DPRPC-PERF OPEN OR SWEEP OPTIONS]
 *
 * It keeps W calls in flight (closed loop; W 1 measures latency unloaded),
 * walking the test split in order, P times (or for S seconds, or N calls).  Every
 * answer is checked: its class must be the one the offline scikit-learn
 * model predicted for that image (digits_test.bin), and over the first
 * pass the number of correct answers must be the offline model's.  Exit 0
 * only if all of that holds and no call failed (except the ones it
 * cancelled itself with --cancel-every, which must come back -ECANCELED
 * or answered, and those refused -EBUSY or past their deadline, which are
 * counted).  Latency is the round trip of each successful call: p50, p99
 * and the rate of answers.
 *
 * Each call's timeout (--timeout-us, default 5 s) is its deadline, and
 * dprpc carries it to the server (dprpc_request_deadline_tsc()): a call
 * whose deadline passes in the server's queue comes back -ETIME (the
 * server's answer) or -ETIMEDOUT (this side's timer, if it fires first).
 * --cancel-every K cancels every K-th call with dprpc_future_cancel()
 * after each round of sending; with --cancel-queued it first asks the
 * server (digits.stats) until it has admitted or refused every call sent,
 * so that the cancelled calls are known to wait in its queue (without it,
 * a call cancelled before the agent sent it is never sent at all).
 *
 * After a second "--", "open" or "sweep" and dprpc-perf's options for
 * them: an open loop at --rate (or a rate sweep) instead of the closed
 * loop, measured by dprpc-perf's own code, the answers checked the same
 * way (client_open.c).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_ethdev.h>

#include <dprpc/dprpc.h>

#include "client_open.h"
#include "digits.h"
#include "perf.h"
#include "proto.h"

#define WINDOW_MAX 4096
/* The timeout of digits.stats and digits.stop (not --timeout-us: that is
 * the classify calls' deadline, which a test may make short). */
#define CTL_TIMEOUT_US (5 * 1000 * 1000)

struct call {
	struct dprpc_future *f;
	uint64_t sent_ns;
	unsigned int image;
	uint64_t id;
	bool cancel;	/* to be cancelled after this round of sending */
	bool cancelled; /* dprpc_future_cancel() failed it with -ECANCELED */
};

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Requests the server has admitted or refused (digits.stats), or -1. */
static int64_t
server_seen(struct dprpc_agent *a, const char *server, uint64_t timeout_us)
{
	struct digits_stats st;
	size_t len = sizeof(st);

	if (dprpc_rpc_sync(a, server, "digits.stats", NULL, 0, timeout_us, &st, &len, NULL) != 0 ||
		len != sizeof(st))
		return -1;
	return (int64_t)(st.admitted + st.refused_full + st.refused_expired + st.refused_cancelled);
}

/* Wait (up to 2 s) until the server holds none of the requests it
 * admitted (computed, or taken out of its queue as expired or cancelled):
 * a stop sent earlier would find them queued and count them cancelled,
 * however long ago their deadline passed on this side. */
static void
server_settle(struct dprpc_agent *a, const char *server)
{
	struct digits_stats st;
	size_t len;

	for (int i = 0; i < 2000; i++) {
		len = sizeof(st);
		if (dprpc_rpc_sync(a, server, "digits.stats", NULL, 0, CTL_TIMEOUT_US, &st, &len,
			    NULL) != 0 ||
			len != sizeof(st) || st.admitted <= st.computed + st.expired + st.cancelled)
			return;
		usleep(1000);
	}
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"name", required_argument, NULL, 'n'},
		{"world", required_argument, NULL, 'w'},
		{"server", required_argument, NULL, 's'},
		{"testset", required_argument, NULL, 'T'},
		{"window", required_argument, NULL, 'W'},
		{"passes", required_argument, NULL, 'p'},
		{"duration", required_argument, NULL, 'D'},
		{"count", required_argument, NULL, 'N'},
		{"timeout-us", required_argument, NULL, 'o'},
		{"cancel-every", required_argument, NULL, 'C'},
		{"cancel-queued", no_argument, NULL, 'Q'},
		{"stop", no_argument, NULL, 'S'},
		{"json", no_argument, NULL, 'J'},
		{NULL, 0, NULL, 0},
	};
	const char *name = NULL, *world = NULL, *server = NULL, *testset = NULL;
	unsigned int window = 1, passes = 1, cancel_every = 0, head = 0, inflight = 0;
	double duration = 0;
	uint64_t timeout_us = 5 * 1000 * 1000, next_id = 1, t0, t1, end_ns;
	uint64_t sent = 0, ok = 0, mismatched = 0, busy = 0, timed_out = 0, expired = 0;
	uint64_t cancelled = 0, failed = 0, cancels_sent = 0, cancels_done = 0, batch_sum = 0;
	uint64_t first_pass_right = 0, first_pass_answered = 0, *lat = NULL, nlat = 0, count = 0;
	uint32_t retry_after_max = 0;
	int64_t seen_base = 0;
	bool stop = false, json = false, done_sending = false, cancel_queued = false;
	bool open_mode = false;
	struct perf_opts po;
	static struct call calls[WINDOW_MAX];
	struct dprpc_agent_conf conf;
	struct digits_test t;
	struct dprpc_agent *a;
	unsigned int to;
	uint32_t h_classify;
	int n, c, rc = 0;

	n = dprpc_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "EAL init failed: %s\n", strerror(-n));
		return 1;
	}
	argc -= n;
	argv += n;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			name = optarg;
			break;
		case 'w':
			world = optarg;
			break;
		case 's':
			server = optarg;
			break;
		case 'T':
			testset = optarg;
			break;
		case 'W':
			window = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'p':
			passes = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'D':
			duration = strtod(optarg, NULL);
			break;
		case 'N':
			count = strtoull(optarg, NULL, 0);
			break;
		case 'o':
			timeout_us = strtoull(optarg, NULL, 0);
			break;
		case 'C':
			cancel_every = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'Q':
			cancel_queued = true;
			break;
		case 'S':
			stop = true;
			break;
		case 'J':
			json = true;
			break;
		default:
			fprintf(stderr,
				"digits_client: unknown option (see the file's top comment)\n");
			return 2;
		}
	}
	/* After the second "--": open or sweep, dprpc-perf's options. */
	if (optind < argc) {
		open_mode = true;
		if (digits_open_parse(argc - optind + 1, argv + optind - 1, &po) != 0)
			return 2;
	}
	if (name == NULL || world == NULL || server == NULL || testset == NULL || window == 0 ||
		window > WINDOW_MAX || (passes == 0 && duration <= 0) ||
		rte_eth_dev_count_avail() == 0) {
		fprintf(stderr,
			"usage: digits_client [EAL options with a port] -- --name NAME "
			"--world WORLD --server NAME --testset FILE [--window W<=%d] "
			"[--passes P | --duration S | --count N] [--timeout-us T] "
			"[--cancel-every K [--cancel-queued]] [--stop] [--json] "
			"[-- open|sweep DPRPC-PERF OPTIONS]\n",
			WINDOW_MAX);
		return 2;
	}
	rc = digits_test_load(&t, testset);
	if (rc != 0 || t.n_pixels != DIGITS_PIXELS) {
		fprintf(stderr, "%s: %s\n", testset, rc ? strerror(-rc) : "not 64 pixels");
		return 1;
	}

	dprpc_agent_conf_init(&conf);
	conf.name = name;
	conf.world = world;
	conf.port.id = 0;
	if (conf.calls.max_outstanding < window + 1)
		conf.calls.max_outstanding = window + 1; /* and one for digits.stats */
	if (open_mode && conf.calls.max_outstanding < digits_open_inflight() + 1)
		conf.calls.max_outstanding = digits_open_inflight() + 1;
	a = dprpc_agent_create(&conf);
	if (a == NULL) {
		fprintf(stderr, "agent: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	if (dprpc_agent_wait_link(a, 20 * 1000 * 1000) != 0 || dprpc_worker_rank(a, server) < 0) {
		fprintf(stderr, "%s: link did not come up or no worker %s\n", name, server);
		dprpc_agent_destroy(a);
		return 1;
	}
	to = (unsigned int)dprpc_worker_rank(a, server);
	h_classify = dprpc_handler_id("digits.classify");
	if (open_mode) {
		if (digits_open(a, to, &t, &po, name) != 0)
			rc = 1;
		goto finish;
	}
	if (cancel_every > 0 && cancel_queued) {
		seen_base = server_seen(a, server, CTL_TIMEOUT_US);
		if (seen_base < 0) {
			fprintf(stderr, "%s: digits.stats failed\n", name);
			rc = 1;
		}
	}

	/* Room for every latency sample of P passes, or ~ 2 M for a
	 * duration run (later samples beyond are not kept). */
	uint64_t lat_cap = count > 0 ? count : duration > 0 ? 2000000 : (uint64_t)passes * t.n;
	lat = malloc(lat_cap * sizeof(*lat));
	if (lat == NULL)
		return 1;

	t0 = now_ns();
	end_ns = duration > 0 ? t0 + (uint64_t)(duration * 1e9) : UINT64_MAX;
	/* calls[] is a ring of window slots: fill, then wait for the oldest,
	 * refill its slot. */
	for (;;) {
		while (!done_sending && inflight < window) {
			struct call *k = &calls[(head + inflight) % window];
			struct digits_req r;

			if ((count > 0 && sent >= count) ||
				(count == 0 && duration <= 0 && sent >= (uint64_t)passes * t.n) ||
				now_ns() >= end_ns) {
				done_sending = true;
				break;
			}
			k->image = (unsigned int)(sent % t.n);
			k->id = next_id++;
			k->cancel = false;
			k->cancelled = false;
			r.id = k->id;
			memcpy(r.pixels, digits_pixels(&t, k->image), DIGITS_PIXELS);
			k->sent_ns = now_ns();
			k->f = dprpc_rpc_async_id(a, to, h_classify, &r, sizeof(r), timeout_us);
			if (k->f == NULL) {
				fprintf(stderr, "rpc_async: %s\n", rte_strerror(rte_errno));
				rc = 1;
				done_sending = true;
				break;
			}
			sent++;
			inflight++;
			k->cancel = cancel_every > 0 && sent % cancel_every == 0;
		}
		/* Every K-th call is cancelled once this round is sent, after
		 * the server has seen them all with --cancel-queued: it skips
		 * the ones still queued (never computed). */
		bool any_cancel = false;

		for (unsigned int i = 0; i < inflight; i++)
			any_cancel |= calls[(head + i) % window].cancel;
		if (any_cancel && cancel_queued) {
			uint64_t give_up = now_ns() + CTL_TIMEOUT_US * 1000ull;
			int64_t seen;

			while ((seen = server_seen(a, server, CTL_TIMEOUT_US)) >= 0 &&
				(uint64_t)(seen - seen_base) < sent && now_ns() < give_up)
				;
			if (seen < 0 || (uint64_t)(seen - seen_base) < sent) {
				fprintf(stderr, "%s: the server did not see the calls to cancel\n",
					name);
				rc = 1;
			}
		}
		for (unsigned int i = 0; any_cancel && i < inflight; i++) {
			struct call *q = &calls[(head + i) % window];
			int cr;

			if (!q->cancel)
				continue;
			q->cancel = false;
			cancels_sent++;
			cr = dprpc_future_cancel(q->f);
			if (cr == DPRPC_CANCEL_DONE) {
				cancels_done++;
				q->cancelled = true;
			} else if (cr != DPRPC_CANCEL_TOO_LATE) {
				fprintf(stderr, "dprpc_future_cancel: %d\n", cr);
				rc = 1;
			}
		}
		if (inflight == 0)
			break;

		struct call *k = &calls[head];
		const struct dprpc_error *e;
		int w = dprpc_future_wait(k->f, 0);

		t1 = now_ns();
		e = dprpc_future_error(k->f);
		if (w == 0 && e == NULL) {
			size_t len;
			const struct digits_resp *resp = dprpc_future_value(k->f, &len);

			if (len != sizeof(*resp) || resp->id != k->id || resp->cls > 9) {
				fprintf(stderr, "malformed answer to request %" PRIu64 "\n", k->id);
				rc = 1;
			} else {
				ok++;
				batch_sum += resp->batch;
				if (nlat < lat_cap)
					lat[nlat++] = t1 - k->sent_ns;
				if (resp->cls != digits_expected(&t, k->image))
					mismatched++;
				if (k->id <= t.n) {
					first_pass_answered++;
					first_pass_right += resp->cls == digits_label(&t, k->image);
				}
			}
		} else {
			int code = e != NULL ? e->code : w;

			if (code == -EBUSY) {
				busy++;
				if (e != NULL && e->retry_after_us > retry_after_max)
					retry_after_max = e->retry_after_us;
			} else if (code == -ETIMEDOUT) {
				timed_out++;
			} else if (code == -ETIME) {
				expired++;
			} else if (code == -ECANCELED && k->cancelled) {
				cancelled++;
			} else {
				failed++;
				if (failed <= 5)
					fprintf(stderr, "request %" PRIu64 ": %s (%s)\n", k->id,
						strerror(-code), e != NULL ? e->msg : "");
			}
		}
		dprpc_future_put(k->f);
		head = (head + 1) % window;
		inflight--;
	}
	t1 = now_ns();

	qsort(lat, nlat, sizeof(*lat), cmp_u64);
	double secs = (double)(t1 - t0) / 1e9;
	double p50 = nlat ? (double)lat[nlat / 2] / 1e3 : 0;
	double p99 = nlat ? (double)lat[(nlat * 99) / 100] / 1e3 : 0;
	double acc = first_pass_answered ? (double)first_pass_right / first_pass_answered : 0;
	bool pass_complete = first_pass_answered == t.n;
	bool acc_ok = pass_complete && first_pass_right == t.correct;

	printf("%s: %" PRIu64 " sent, %" PRIu64 " answered in %.3f s (%.0f/s), window %u; "
	       "latency p50 %.1f us, p99 %.1f us; mean batch %.2f\n",
		name, sent, ok, secs, ok / secs, window, p50, p99, ok ? (double)batch_sum / ok : 0);
	printf("%s: refused busy %" PRIu64 " (largest retry-after hint %" PRIu32
	       " us), deadline passed %" PRIu64 " (server: -ETIME) + %" PRIu64
	       " (timed out here), cancelled %" PRIu64 " (%" PRIu64 " of %" PRIu64
	       " cancels in time), other failures %" PRIu64
	       ", answers unlike the offline model %" PRIu64 "\n",
		name, busy, retry_after_max, expired, timed_out, cancelled, cancels_done,
		cancels_sent, failed, mismatched);
	if (pass_complete)
		printf("%s: accuracy on the test split %" PRIu64
		       "/%u = %.6f; offline model %u/%u = "
		       "%.6f: %s\n",
			name, first_pass_right, t.n, acc, t.correct, t.n, (double)t.correct / t.n,
			acc_ok ? "equal" : "DIFFERENT");
	else
		printf("%s: first pass incomplete (%" PRIu64 " of %u answered): accuracy not "
		       "checked\n",
			name, first_pass_answered, t.n);
	if (json)
		printf("{\"sent\": %" PRIu64 ", \"answered\": %" PRIu64 ", \"seconds\": %.6f, "
		       "\"rate\": %.1f, \"window\": %u, \"p50_us\": %.2f, \"p99_us\": %.2f, "
		       "\"mean_batch\": %.3f, \"busy\": %" PRIu64
		       ", \"retry_after_max_us\": %" PRIu32 ", \"expired\": %" PRIu64
		       ", \"timed_out\": %" PRIu64 ", \"cancelled\": %" PRIu64
		       ", \"cancels_sent\": %" PRIu64 ", \"failed\": %" PRIu64
		       ", \"mismatched\": %" PRIu64 ", \"correct\": %" PRIu64
		       ", \"offline_correct\": %u, \"n\": %u}\n",
			sent, ok, secs, ok / secs, window, p50, p99,
			ok ? (double)batch_sum / ok : 0, busy, retry_after_max, expired, timed_out,
			cancelled, cancels_sent, failed, mismatched, first_pass_right, t.correct,
			t.n);
	/* Checked: every answer is the offline model's, nothing failed but
	 * what was cancelled or refused when asked to tolerate it. */
	if (mismatched != 0 || failed != 0 || (cancel_every == 0 && cancelled != 0))
		rc = 1;
	if (pass_complete && !acc_ok)
		rc = 1;
	if (count == 0 && duration <= 0 && busy + expired + timed_out + cancelled == 0 &&
		!pass_complete)
		rc = 1;

finish:
	if (stop) {
		struct digits_stats st;
		struct dprpc_error err = {0};
		size_t len = sizeof(st);
		int src;

		server_settle(a, server);

		if (dprpc_rpc_sync(a, server, "digits.stats", NULL, 0, CTL_TIMEOUT_US, &st, &len,
			    NULL) == 0)
			printf("%s: server: admitted %" PRIu64 ", computed %" PRIu64 " in %" PRIu64
			       " batches, refused full %" PRIu64 ", skipped expired %" PRIu64
			       ", skipped cancelled %" PRIu64 ", cancels received %" PRIu64 "\n",
				name, st.admitted, st.computed, st.batches, st.refused_full,
				st.expired, st.cancelled, st.cancels_received);
		src = dprpc_rpc_sync(
			a, server, "digits.stop", NULL, 0, CTL_TIMEOUT_US, NULL, NULL, &err);
		if (src != 0) {
			fprintf(stderr, "%s: could not stop %s: %s (origin %u) %s\n", name, server,
				strerror(-src), err.origin, err.msg);
			dprpc_agent_dump(a, stderr);
			rc = 1;
		} else {
			/* The server shuts down gracefully after digits.stop:
			 * so does this side, and the server's port stays open
			 * until this side has read every answer (and the
			 * other way round). */
			struct dprpc_error cerr = {0};

			src = dprpc_shutdown(a, true, CTL_TIMEOUT_US, &cerr);
			if (src != 0) {
				fprintf(stderr, "%s: shutdown: %s %s\n", name, strerror(-src),
					cerr.msg);
				rc = 1;
			}
			a = NULL;
		}
	}
	free(lat);
	digits_test_free(&t);
	if (a != NULL && dprpc_agent_destroy(a) != 0)
		rc = 1;
	dprpc_eal_cleanup();
	return rc;
}
