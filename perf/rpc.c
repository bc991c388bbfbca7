/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The dprpc modes latency and throughput: the agents both sides make, the
 * server's handlers (echo, or --response bytes; the RRef value for rref
 * proxies; the RRef statistics for rref-churn; spin and sleep, taking
 * --service-us, for the open loop) and the client, one
 * rpc_sync outstanding or --window rpc_async lanes, each reissued from its
 * completion callback.  perf_client_finish() hands any dprpc client's
 * result over.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_pause.h>
#include <rte_errno.h>

#include <dprpc/dprpc.h>

#include "perf.h"

#define PERF_WORLD                                   \
	"server 0 02:00:00:00:00:01 10.0.0.1 7000\n" \
	"client 1 02:00:00:00:00:02 10.0.0.2 7000\n"

const char *perf_world_map;
long perf_retransmit_us = -1;
long perf_inline_wait_us = -1;
uint64_t perf_service_us;
bool perf_server_json;
unsigned int perf_max_outstanding = PERF_MAX_WINDOW;
unsigned int perf_auth = DPRPC_AUTH_OFF;

/* --auth: both sides' world key, the same in every process (a benchmark's,
 * not a secret): 31 characters and the NUL. */
static const char perf_auth_key[32] = "dprpc-perf's fixed world key 32";

/* --response: what the server answers instead of an echo. */
static uint8_t *perf_response;
static unsigned int perf_response_len = PERF_ECHO;

static int
h_echo(struct dprpc_request *req, void *arg)
{
	size_t len;
	const void *p = dprpc_request_payload(req, &len);

	(void)arg;
	if (perf_response_len != PERF_ECHO)
		return dprpc_reply(req, perf_response, perf_response_len);
	return dprpc_reply(req, p, len);
}

/* spin: --service-us of busy work on the poller, then an empty answer
 * (a CPU-bound handler). */
static int
h_spin(struct dprpc_request *req, void *arg)
{
	uint64_t until = rte_rdtsc() + (uint64_t)(uintptr_t)arg;

	while (rte_rdtsc() < until)
		rte_pause();
	return dprpc_reply(req, NULL, 0);
}

/* sleep: the poller sleeps --service-us (a handler blocked on I/O, the CPU
 * left to others), then answers empty. */
static int
h_sleep(struct dprpc_request *req, void *arg)
{
	struct timespec ts = {.tv_sec = (time_t)(perf_service_us / 1000000),
		.tv_nsec = (long)(perf_service_us % 1000000) * 1000};

	(void)arg;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !perf_stop)
		;
	return dprpc_reply(req, NULL, 0);
}

/* rref: a proxy handler answering with the RRef's value. */
static int
h_value(struct dprpc_request *req, void *arg)
{
	size_t len;
	const void *v = dprpc_request_rref_value(req, &len);

	(void)arg;
	return v == NULL ? -EINVAL : dprpc_reply(req, v, len);
}

/* rref --value-size: what "blob" answers (an RRef's value, or rpc_sync's
 * answer of the same size). */
static uint8_t *perf_blob;
static unsigned int perf_blob_len;

static int
h_blob(struct dprpc_request *req, void *arg)
{
	(void)arg;
	return dprpc_reply(req, perf_blob, perf_blob_len);
}

int
perf_rpc_set_blob(unsigned int len)
{
	perf_blob = malloc(len + 1);
	if (perf_blob == NULL)
		return -ENOMEM;
	for (unsigned int i = 0; i < len; i++)
		perf_blob[i] = (uint8_t)(i * 7 + (i >> 11));
	perf_blob_len = len;
	return 0;
}

/* The server answers @len zero bytes to every echo call. */
int
perf_rpc_set_response(unsigned int len)
{
	perf_response = calloc(1, len + 1);
	if (perf_response == NULL)
		return -ENOMEM;
	perf_response_len = len;
	return 0;
}

struct dprpc_agent *
perf_rpc_agent(const char *name, uint16_t port)
{
	struct dprpc_agent_conf c;
	struct dprpc_agent *a;

	dprpc_agent_conf_init(&c);
	c.name = name;
	c.world = perf_world_map != NULL ? perf_world_map : PERF_WORLD;
	c.port.id = port;
	c.calls.max_outstanding = perf_max_outstanding;
	c.calls.timeout_us = 5 * 1000 * 1000;
	if (perf_retransmit_us >= 0)
		c.calls.retransmit_us = (uint32_t)perf_retransmit_us;
	if (perf_inline_wait_us >= 0)
		c.serve.inline_wait_max_us = (uint32_t)perf_inline_wait_us;
	if (perf_auth != DPRPC_AUTH_OFF) {
		c.auth.key = perf_auth_key;
		c.auth.key_len = sizeof(perf_auth_key);
		c.auth.mode = perf_auth;
	}
	a = dprpc_agent_create(&c);
	if (a == NULL)
		fprintf(stderr, "dprpc-perf: agent %s: %s\n", name, rte_strerror(rte_errno));
	return a;
}

int
perf_rpc_server(uint16_t port)
{
	struct dprpc_agent *a = perf_rpc_agent("server", port);
	uint64_t spin = perf_service_us * rte_get_tsc_hz() / 1000000;

	/* sleep: wake up on time, not up to 50 us late. */
	(void)prctl(PR_SET_TIMERSLACK, 1UL);
	if (a == NULL || dprpc_register(a, "echo", h_echo, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(a, "spin", h_spin, (void *)(uintptr_t)spin, DPRPC_HANDLER_INLINE) !=
			0 ||
		dprpc_register(a, "sleep", h_sleep, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(a, "value", h_value, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(a, "blob", h_blob, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(a, "rrefstat", perf_h_rrefstat, NULL, DPRPC_HANDLER_INLINE) != 0)
		return -EIO;
	/* Way 1: this process's main lcore is the poll loop, busy. */
	while (!perf_stop)
		dprpc_poll(a, 32);
	if (perf_server_json) {
		struct dprpc_agent_stats st;

		dprpc_agent_stats_get(a, &st);
		printf("{\"role\": \"server\", \"requests_handled\": %" PRIu64
		       ", \"requests_resent\": %" PRIu64 ", \"dropped\": %" PRIu64
		       ", \"frames_resent\": %" PRIu64 ", \"acks_sent\": %" PRIu64 "}\n",
			st.requests_handled, st.requests_resent, st.dropped, st.frames_resent,
			st.acks_sent);
		fflush(stdout);
	}
	return dprpc_agent_destroy(a);
}

struct rpc_lane {
	struct perf_clock *k;
	struct dprpc_agent *a;
	const uint8_t *payload;
	unsigned int len;
	uint32_t hid;
	uint64_t t0;
};

static bool rpc_running;
/* The first call that failed, and how many did (said on stderr: the JSON
 * counts them in calls_failed). */
static struct dprpc_error rpc_first_err;
static uint64_t rpc_failed;
/* Echo mode: every answer is compared with what was sent. */
static bool rpc_verify;
static uint64_t rpc_corrupt;
/* When the first call succeeded (perf_mono_ns()), 0 before. */
static uint64_t rpc_first_ns;
/* Lanes whose last issue failed (EAGAIN/ENOBUFS), retried by the loop. */
static struct rpc_lane *idle_lanes[PERF_MAX_WINDOW];
static unsigned int nb_idle, nb_busy;

static void rpc_lane_done(struct dprpc_future *f, void *arg);

static void
rpc_lane_issue(struct rpc_lane *l)
{
	struct dprpc_future *f;

	l->t0 = rte_rdtsc();
	f = dprpc_rpc_async_id(l->a, 0, l->hid, l->payload, l->len, DPRPC_TIMEOUT_DEFAULT);
	if (f == NULL) {
		idle_lanes[nb_idle++] = l;
		return;
	}
	nb_busy++;
	/* The callback takes over the caller's reference.  A future's first
	 * callback uses its inline node: it cannot fail for want of one. */
	(void)dprpc_future_add_callback(f, rpc_lane_done, l);
}

static void
rpc_lane_done(struct dprpc_future *f, void *arg)
{
	struct rpc_lane *l = arg;

	if (dprpc_future_state(f) == DPRPC_FUTURE_DONE) {
		perf_clock_record(l->k, l->t0, rte_rdtsc());
		if (rpc_first_ns == 0)
			rpc_first_ns = perf_mono_ns();
		if (rpc_verify) {
			size_t len;
			const void *v = dprpc_future_value(f, &len);

			if (len != l->len || (len > 0 && memcmp(v, l->payload, len) != 0))
				rpc_corrupt++;
		}
	} else if (rpc_failed++ == 0 && dprpc_future_error(f) != NULL) {
		rpc_first_err = *dprpc_future_error(f);
	}
	dprpc_future_put(f);
	nb_busy--;
	if (rpc_running)
		rpc_lane_issue(l);
}

int
perf_rpc_client(uint16_t port, const struct perf_opts *o, struct perf_result *r)
{
	static struct rpc_lane lanes[PERF_MAX_WINDOW];
	size_t out_max = o->response != PERF_ECHO ? o->response : o->payload;
	uint8_t *payload = malloc(o->payload + 1), *out = malloc(out_max + 1);
	struct dprpc_agent *a = perf_rpc_agent("client", port);
	uint32_t hid = dprpc_handler_id("echo");
	struct perf_clock k;
	unsigned int i;
	uint64_t t0, now;
	size_t out_len;
	int rc;

	if (payload == NULL || out == NULL || a == NULL ||
		dprpc_agent_wait_link(a, 20 * 1000 * 1000) != 0 || perf_clock_init(&k, o) != 0) {
		free(payload);
		free(out);
		return -EIO;
	}
	/* Position-dependent, so a frame put in the wrong place shows. */
	for (i = 0; i < o->payload; i++)
		payload[i] = (uint8_t)(i * 7 + (i >> 8));
	rpc_verify = o->response == PERF_ECHO;
	if (o->mode == MODE_LATENCY) {
		while ((t0 = rte_rdtsc()) < k.end) {
			out_len = out_max;
			rc = dprpc_rpc_sync_id(a, 0, hid, payload, o->payload,
				DPRPC_TIMEOUT_DEFAULT, out, &out_len, NULL);
			now = rte_rdtsc();
			if (rc == 0)
				perf_clock_record(&k, t0, now);
			if (rc == 0 && rpc_first_ns == 0)
				rpc_first_ns = perf_mono_ns();
			if (rc == 0 && rpc_verify &&
				(out_len != o->payload || memcmp(out, payload, out_len) != 0))
				rpc_corrupt++;
		}
	} else {
		rpc_running = true;
		for (i = 0; i < o->window; i++) {
			lanes[i] = (struct rpc_lane){
				.k = &k, .a = a, .payload = payload, .len = o->payload, .hid = hid};
			rpc_lane_issue(&lanes[i]);
		}
		while (rte_rdtsc() < k.end) {
			dprpc_poll(a, 32);
			for (i = nb_idle, nb_idle = 0; i > 0; i--)
				rpc_lane_issue(idle_lanes[i - 1]);
		}
		rpc_running = false;
		/* Drain: every call completes or times out (bounded). */
		while (nb_busy > 0)
			dprpc_poll(a, 32);
	}
	perf_clock_finish(&k, o, r);
	r->corrupt = rpc_corrupt;
	if (rpc_first_ns != 0)
		r->first_call_ms = (double)(rpc_first_ns - perf_start_ns) / 1e6;
	if (rpc_failed > 0)
		fprintf(stderr,
			"dprpc-perf: %" PRIu64
			" calls failed, the first with %d (%s) from worker %u: "
			"%s\n",
			rpc_failed, rpc_first_err.code, strerror(-rpc_first_err.code),
			(unsigned int)rpc_first_err.origin, rpc_first_err.msg);
	free(payload);
	free(out);
	return perf_client_finish(a, r);
}

/* The agent's totals into a result; hand it over; destroy the agent. */
int
perf_client_finish(struct dprpc_agent *a, struct perf_result *r)
{
	perf_client_stats(a, r);
	perf_publish_and_hold(r);
	return dprpc_agent_destroy(a);
}
