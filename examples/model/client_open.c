/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * digits_client's open loop and rate sweep: the digits model measured as
 * dprpc-perf measures its own handlers, by the same code.  The schedule,
 * the latency from each call's intended send (coordinated omission
 * corrected), the log-linear histogram, the per-second lines, the JSON
 * and CSV reports and the sweep (knee, maximum sustainable rate, the run
 * at 80% of it) are perf/'s library perf_openloop (perf/perf.h); this
 * file only says what a call sends and how its answer is judged:
 *
 *  - call k of a run classifies image (base + k) mod n of the test split
 *    (the warm-up's calls too), base being the calls of the runs before
 *    (a sweep's short runs go on through the split rather than each
 *    starting over); its request id run << 40 | k;
 *  - an answer is right when it is well formed, echoes that id and gives
 *    the class the offline scikit-learn model gave that image; otherwise
 *    the call fails (-EBADMSG malformed, -EPROTO another class: class
 *    "other" in the report) and the client exits non-zero;
 *  - accuracy: over the images answered at least once (every answer of an
 *    image being the offline model's class, one answer per image counts),
 *    right against the labels; once all n are answered it must equal the
 *    offline model's count (441/450).
 *
 * The options after the client's own "--" are dprpc-perf's open or sweep
 * options (perf_parse_opts(): --rate, --poisson, --duration, --warmup,
 * --timeout-us, --json, --csv, --spectrum, --hist-*, --rates / --rate-min
 * --rate-max --steps, --refine, --repeat, --slo-us); --handler and
 * --payload are this program's (digits.classify, struct digits_req).
 * The sweep's runs follow one another on this client's connection to one
 * running server (each drained before the next; 200 ms in between),
 * where dprpc-perf forks a fresh pair per run.  A failed call's errno is
 * classed as in dprpc-perf: -ETIMEDOUT (the call's timeout), -EBUSY (the
 * server's queue full), -ETIME (its deadline passed while queued).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dprpc/dprpc.h>

#include "client_open.h"
#include "perf.h"
#include "proto.h"

/* Calls in flight at most: dprpc-perf's bound. */
#define OPEN_INFLIGHT PERF_MAX_WINDOW

struct model_src {
	const struct digits_test *t;
	struct digits_req req;
	uint64_t run;	/* the run's number: the ids' high bits */
	uint64_t base;	/* calls requested by the runs before */
	uint64_t calls; /* by this run */
	uint64_t answers, mismatched, malformed, batch_sum;
	uint64_t images_answered, images_right;
	uint8_t *seen; /* per image: answered at least once */
};

static uint64_t
model_id(const struct model_src *m, uint64_t k)
{
	return m->run << 40 | (k & ((1ull << 40) - 1));
}

static const void *
model_request(void *ctx, uint64_t k, size_t *len)
{
	struct model_src *m = ctx;

	m->calls = k + 1;
	m->req.id = model_id(m, k);
	memcpy(m->req.pixels, digits_pixels(m->t, (unsigned int)((m->base + k) % m->t->n)),
		DIGITS_PIXELS);
	*len = sizeof(m->req);
	return &m->req;
}

static int
model_check(void *ctx, uint64_t k, const void *value, size_t len)
{
	struct model_src *m = ctx;
	const struct digits_resp *resp = value;
	unsigned int image = (unsigned int)((m->base + k) % m->t->n);

	if (len != sizeof(*resp) || resp->id != model_id(m, k) || resp->cls > 9) {
		m->malformed++;
		return -EBADMSG;
	}
	m->answers++;
	m->batch_sum += resp->batch;
	if (resp->cls != digits_expected(m->t, image)) {
		m->mismatched++;
		return -EPROTO;
	}
	if (!m->seen[image]) {
		m->seen[image] = 1;
		m->images_answered++;
		m->images_right += resp->cls == digits_label(m->t, image);
	}
	return 0;
}

struct model_open {
	struct dprpc_agent *a;
	unsigned int to;
	uint32_t hid;
	struct model_src src;
	struct perf_open_source source;
};

/* One run at o->rate; the agent's counters of this run only in @r. */
static int
model_run(struct model_open *mo, const struct perf_opts *o, struct perf_result *r, bool report)
{
	static struct perf_open_run run;
	struct perf_result before;
	int rc;

	memset(&before, 0, sizeof(before));
	perf_client_stats(mo->a, &before);
	mo->src.run++;
	mo->src.calls = 0;
	rc = perf_open_loop(mo->a, mo->to, mo->hid, OPEN_INFLIGHT, o, &mo->source, &run, r);
	mo->src.base += mo->src.calls;
	if (rc != 0)
		return rc;
	perf_client_stats(mo->a, r);
	r->dropped -= before.dropped;
	r->tx_retries -= before.tx_retries;
	r->calls_failed -= before.calls_failed;
	r->retransmits -= before.retransmits;
	r->frames_resent -= before.frames_resent;
	r->acks_sent -= before.acks_sent;
	r->msgs_sent -= before.msgs_sent;
	r->msgs_received -= before.msgs_received;
	r->calls_sent -= before.calls_sent;
	r->calls_ok -= before.calls_ok;
	if (report) {
		rc = perf_open_spectrum(o, &run);
		perf_open_report(o, &run, r);
		if (o->json)
			printf("{\"hist_count\": %" PRIu64 ", \"ok\": %" PRIu64 "}\n",
				run.lat.total, r->ok_calls);
		else if (o->csv)
			printf("# hist_count=%" PRIu64 " ok=%" PRIu64 "\n", run.lat.total,
				r->ok_calls);
		else
			printf("histogram: %" PRIu64 " calls recorded\n", run.lat.total);
	}
	perf_open_run_free(&run);
	return rc;
}

/* The sweep's run: after a quiet 200 ms (acks and stale answers of the
 * run before settle), one run, quiet. */
static int
model_sweep_run(const struct perf_opts *o, unsigned int tag, struct perf_result *r, void *ctx)
{
	struct model_open *mo = ctx;
	struct timespec ts = {0, 1000 * 1000};

	(void)tag;
	for (int i = 0; i < 200; i++) {
		dprpc_poll(mo->a, 32);
		nanosleep(&ts, NULL);
	}
	return model_run(mo, o, r, false);
}

unsigned int
digits_open_inflight(void)
{
	return OPEN_INFLIGHT;
}

int
digits_open_parse(int argc, char **argv, struct perf_opts *o)
{
	if (perf_parse_opts(argc, argv, o) != 0)
		return -EINVAL;
	if (o->mode != MODE_OPEN && o->mode != MODE_SWEEP) {
		fprintf(stderr, "digits_client: after the second --: open or sweep\n");
		return -EINVAL;
	}
	if (strcmp(o->handler, "echo") != 0 || o->role != NULL) {
		fprintf(stderr, "digits_client: --handler and --role are not for the model\n");
		return -EINVAL;
	}
	o->handler = "digits.classify";
	o->payload = sizeof(struct digits_req);
	return 0;
}

int
digits_open(struct dprpc_agent *a, unsigned int to, const struct digits_test *t,
	const struct perf_opts *o, const char *name)
{
	struct model_open mo;
	struct perf_result r;
	int rc;

	memset(&mo, 0, sizeof(mo));
	mo.a = a;
	mo.to = to;
	mo.hid = dprpc_handler_id("digits.classify");
	mo.src.t = t;
	mo.src.seen = calloc(t->n, 1);
	mo.source = (struct perf_open_source){model_request, model_check, &mo.src};
	if (mo.src.seen == NULL)
		return -ENOMEM;
	if (o->mode == MODE_SWEEP) {
		rc = perf_sweep(o, model_sweep_run, &mo);
	} else {
		memset(&r, 0, sizeof(r));
		rc = model_run(&mo, o, &r, true);
	}
	if (rc == 0) {
		const struct model_src *m = &mo.src;
		bool complete = m->images_answered == t->n;
		bool equal = complete && m->images_right == t->correct;
		double mean_batch = m->answers ? (double)m->batch_sum / (double)m->answers : 0;

		if (o->json)
			printf("{\"model\": \"digits\", \"answers\": %" PRIu64
			       ", \"mismatched\": %" PRIu64 ", \"malformed\": %" PRIu64
			       ", \"mean_batch\": %.3f, \"images_answered\": %" PRIu64
			       ", \"correct\": %" PRIu64 ", \"offline_correct\": %u, \"n\": %u"
			       ", \"accuracy_equal\": %s}\n",
				m->answers, m->mismatched, m->malformed, mean_batch,
				m->images_answered, m->images_right, t->correct, t->n,
				equal ? "true" : "false");
		else if (o->csv)
			printf("# model_answers=%" PRIu64 " model_mismatched=%" PRIu64
			       " model_malformed=%" PRIu64 " model_mean_batch=%.3f"
			       " model_images_answered=%" PRIu64 " model_correct=%" PRIu64
			       " model_offline_correct=%u model_n=%u\n",
				m->answers, m->mismatched, m->malformed, mean_batch,
				m->images_answered, m->images_right, t->correct, t->n);
		printf("%s%s: %" PRIu64 " answers checked (warm-up included), %" PRIu64
		       " unlike the offline model, %" PRIu64 " malformed; mean batch %.2f\n",
			o->csv ? "# " : "", name, m->answers, m->mismatched, m->malformed,
			mean_batch);
		if (complete)
			printf("%s%s: accuracy on the test split %" PRIu64 "/%u = %.6f; offline "
			       "model %u/%u = %.6f: %s\n",
				o->csv ? "# " : "", name, m->images_right, t->n,
				(double)m->images_right / t->n, t->correct, t->n,
				(double)t->correct / t->n, equal ? "equal" : "DIFFERENT");
		else
			printf("%s%s: %" PRIu64 " of %u images answered: accuracy not checked\n",
				o->csv ? "# " : "", name, m->images_answered, t->n);
		if (m->mismatched != 0 || m->malformed != 0 || (complete && !equal))
			rc = -EPROTO;
	}
	fflush(stdout);
	free(mo.src.seen);
	return rc;
}
