/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rpc_sync / rpc_async between two agents in one process over a net_ring
 * pair: a is the caller (caller-driven progress), b serves on io lcore 1
 * with a handler pool on lcore 2.
 *
 * Longer than most files: one Criterion suite per module (the calls:
 * call.c, the handlers' files, client.c), sharing the two-agent fixture; its cases
 * are independent and each short.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <criterion/criterion.h>

#include <rte_errno.h>
#include <rte_lcore.h>

#include "dp_agent.h"
#include "dp_liveness.h"
#include "dp_poll.h"
#include "dprpc_lcore.h"
#include "dpt.h"

static struct dpt_ring_pair pair;
static struct rte_mempool *mp;
static struct dprpc_agent *a, *b;

/* Deferred requests parked by handlers, answered by the test. */
static struct dprpc_request *_Atomic parked[64];
static atomic_uint nb_parked;
static atomic_uint pool_lcore_seen;
static atomic_uint handler_runs;

static int
h_echo(struct dprpc_request *req, void *arg)
{
	atomic_fetch_add(&handler_runs, 1);
	return dpt_echo(req, arg);
}

static int
h_pool_echo(struct dprpc_request *req, void *arg)
{
	atomic_store(&pool_lcore_seen, rte_lcore_id());
	return h_echo(req, arg);
}

static int
h_fail(struct dprpc_request *req, void *arg)
{
	return dprpc_reply_error(req, -EPERM, "not allowed here");
}

static int
h_errno(struct dprpc_request *req, void *arg)
{
	return -EACCES;
}

static atomic_uint nb_claimed;

/* Parks the request; nb_parked counts it once it is in parked[] (a count
 * taken before the store let the test miss a request and wait forever). */
static int
h_park(struct dprpc_request *req, void *arg)
{
	unsigned int i = atomic_fetch_add(&nb_claimed, 1);

	(void)arg;
	if (i >= RTE_DIM(parked))
		return -ENOSPC;
	atomic_store(&parked[i], req);
	atomic_fetch_add(&nb_parked, 1);
	return DPRPC_DEFERRED;
}

static void
reply_parked(const char *text)
{
	unsigned int i, n = atomic_load(&nb_parked);

	for (i = 0; i < n; i++) {
		struct dprpc_request *req = atomic_exchange(&parked[i], NULL);

		if (req != NULL)
			cr_assert_eq(dprpc_reply(req, text, strlen(text)), 0);
	}
}

static struct dprpc_agent *
make_agent(const char *name, int port, unsigned int io_lcore, unsigned int max_out)
{
	struct dprpc_agent_conf c;
	struct dprpc_agent *ag;

	dprpc_agent_conf_init(&c);
	c.name = name;
	c.world = DPT_WORLD2;
	c.port.id = port;
	c.port.mbuf_pool = mp;
	c.lcores.io = io_lcore;
	c.calls.max_outstanding = max_out;
	if (io_lcore != DPRPC_LCORE_NONE) {
		c.lcores.nb_pool = 1;
		c.lcores.pool[0] = 2;
	}
	ag = dprpc_agent_create(&c);
	cr_assert_not_null(ag, "agent %s: %s", name, rte_strerror(rte_errno));
	return ag;
}

static void
setup(void)
{
	cr_assert_geq(dpt_eal_init("ring"), 0);
	mp = dpt_pool_and_pair("dpt_mp", 8191, &pair);
	cr_assert_not_null(mp);
	a = make_agent("a", pair.port_a, DPRPC_LCORE_NONE, 8);
	b = make_agent("b", pair.port_b, 1, 64);
	cr_assert_eq(dprpc_register(b, "echo", h_echo, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(b, "pool_echo", h_pool_echo, NULL, DPRPC_HANDLER_POOL), 0);
	cr_assert_eq(dprpc_register(b, "fail", h_fail, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(b, "errno", h_errno, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(b, "park", h_park, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(a, "echo", h_echo, NULL, DPRPC_HANDLER_INLINE), 0);
}

/* Nothing leaked: every future, request, call and mbuf came back. */
static void
teardown(void)
{
	struct dprpc_agent_usage u;

	if (a != NULL) {
		cr_assert_eq(dprpc_agent_usage_get(a, &u), 0);
		cr_expect_eq(u.futures, 0u, "futures leaked on a: %u", u.futures);
		cr_expect_eq(u.calls, 0u);
		cr_assert_eq(dprpc_agent_destroy(a), 0);
	}
	if (b != NULL) {
		/* A handler lcore frees its request as its run ends, after
		 * the answer went out: a may have had it first.  Bounded
		 * (~10 s). */
		for (int i = 0; i < 100000; i++) {
			cr_assert_eq(dprpc_agent_usage_get(b, &u), 0);
			if (u.requests == 0)
				break;
			usleep(100);
		}
		cr_expect_eq(u.requests, 0u, "requests leaked on b: %u", u.requests);
		cr_assert_eq(dprpc_agent_destroy(b), 0);
	}
	a = b = NULL;
	/* Frames still on the wire are no agent's: a resend b had not read,
	 * or b's answer to it that a had not (a machine under load delays b
	 * past a's resend timeout). */
	dpt_ring_drain(pair.ab);
	dpt_ring_drain(pair.ba);
	cr_expect_eq(
		rte_mempool_in_use_count(mp), 0u, "mbufs leaked: %u", rte_mempool_in_use_count(mp));
	dpt_eal_cleanup();
}

TestSuite(rpc_ring, .init = setup, .fini = teardown, .timeout = 60);

Test(rpc_ring, sync_echo_round_trips_bytes)
{
	char out[64];
	size_t out_len = sizeof(out);
	struct dprpc_agent_stats s;

	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "hello", 5, DPRPC_TIMEOUT_DEFAULT, out,
			     &out_len, NULL),
		0);
	cr_assert_eq(out_len, 5u);
	cr_assert_arr_eq(out, "hello", 5);
	/* An empty request gets an empty response. */
	out_len = sizeof(out);
	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", NULL, 0, 0, out, &out_len, NULL), 0);
	cr_assert_eq(out_len, 0u);
	cr_assert_eq(dprpc_agent_stats_get(a, &s), 0);
	cr_assert_eq(s.calls_sent, 2u);
	cr_assert_eq(s.calls_ok, 2u);
	if (s.dropped != s.drops[DPRPC_DROP_STALE] || s.drops[DPRPC_DROP_STALE] > s.retransmits) {
		dprpc_agent_dump(a, stderr);
		dprpc_agent_dump(b, stderr);
	}
	/* Nothing dropped but, if b was off its CPU longer than a's resend
	 * timeout (a loaded machine), b's answers to a's resends: stale, at
	 * most one per resend.  Without a resend, nothing at all. */
	cr_assert_eq(s.dropped, s.drops[DPRPC_DROP_STALE], "%" PRIu64 " dropped", s.dropped);
	cr_assert_leq(s.drops[DPRPC_DROP_STALE], s.retransmits);
}

Test(rpc_ring, sync_response_larger_than_buffer_is_emsgsize)
{
	char out[2];
	size_t out_len = sizeof(out);

	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "hello", 5, 0, out, &out_len, NULL), -EMSGSIZE);
	cr_assert_eq(out_len, 5u);
	/* Kept: taken without a second call. */
	{
		char big[8];

		out_len = sizeof(big);
		cr_assert_eq(dprpc_rpc_sync_take(a, big, &out_len), 0);
		cr_assert_eq(out_len, 5u);
		cr_assert_arr_eq(big, "hello", 5);
	}
	cr_assert_eq(atomic_load(&handler_runs), 1u);
}

Test(rpc_ring, max_payload_and_one_byte_more)
{
	static uint8_t big[DPRPC_MAX_FRAME_PAYLOAD + 1], out[DPRPC_MAX_FRAME_PAYLOAD];
	size_t out_len = sizeof(out);
	unsigned int i;

	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7 + 3);
	cr_assert_eq(dprpc_rpc_sync(
			     a, "b", "echo", big, DPRPC_MAX_FRAME_PAYLOAD, 0, out, &out_len, NULL),
		0);
	cr_assert_eq(out_len, (size_t)DPRPC_MAX_FRAME_PAYLOAD);
	cr_assert_arr_eq(out, big, DPRPC_MAX_FRAME_PAYLOAD);
	/* One byte more takes two frames (tests/test_msg.c covers those). */
	out_len = sizeof(out);
	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", big, sizeof(big), 0, out, &out_len, NULL),
		-EMSGSIZE, "the value does not fit out");
	cr_assert_eq(out_len, sizeof(big));
	/* Kept; discarded. */
	out_len = 0;
	cr_assert_eq(dprpc_rpc_sync_take(a, NULL, &out_len), 0);
	cr_assert_eq(out_len, sizeof(big));
}

static atomic_uint cb_ok;

static void
count_cb(struct dprpc_future *f, void *arg)
{
	size_t len;
	const uint32_t *v = dprpc_future_value(f, &len);

	if (v != NULL && len == sizeof(*v) && (uintptr_t)v % DPRPC_PAYLOAD_ALIGN == 0 &&
		*v == (uint32_t)(uintptr_t)arg)
		atomic_fetch_add(&cb_ok, 1);
}

Test(rpc_ring, async_window_completes_every_call_with_its_own_value)
{
	struct dprpc_future *fs[8];
	uint32_t i, k, rounds = 200;

	for (k = 0; k < rounds; k++) {
		for (i = 0; i < 8; i++) {
			uint32_t v = k * 8 + i;

			fs[i] = dprpc_rpc_async(a, "b", "echo", &v, sizeof(v), 0);
			cr_assert_not_null(fs[i], "call %u: %s", v, rte_strerror(rte_errno));
			cr_assert_eq(
				dprpc_future_add_callback(fs[i], count_cb, (void *)(uintptr_t)v),
				0);
		}
		if (dprpc_future_wait_all(fs, 8, 0) != 0) {
			for (i = 0; i < 8; i++)
				if (dprpc_future_state(fs[i]) == DPRPC_FUTURE_FAILED)
					fprintf(stderr, "call %u: %d %s\n", k * 8 + i,
						dprpc_future_error(fs[i])->code,
						dprpc_future_error(fs[i])->msg);
			dprpc_agent_dump(a, stderr);
			dprpc_agent_dump(b, stderr);
			cr_assert_fail("round %u failed", k);
		}
		for (i = 0; i < 8; i++)
			dprpc_future_put(fs[i]);
	}
	cr_assert_eq(atomic_load(&cb_ok), rounds * 8);
}

/* A handler the destination does not have: -ENOENT from it, the message
 * naming the handler the caller called by name (sync, async, to self),
 * and its id alone for an id no name of this process gave. */
Test(rpc_ring, unknown_handler_is_remote_enoent)
{
	const struct dprpc_error *e;
	struct dprpc_error err;
	struct dprpc_future *f;

	cr_assert_eq(dprpc_rpc_sync(a, "b", "nope", "x", 1, 0, NULL, NULL, &err), -ENOENT);
	cr_assert_eq(err.code, -ENOENT);
	cr_assert_eq(err.origin, 1);
	cr_assert_not_null(strstr(err.msg, "no handler"), "%s", err.msg);
	cr_assert_not_null(strstr(err.msg, "\"nope\""), "%s", err.msg);
	cr_assert_not_null(strstr(err.msg, "worker b"), "%s", err.msg);
	f = dprpc_rpc_async(a, "b", "nope_async", NULL, 0, 0);
	cr_assert_not_null(f);
	cr_assert_eq(dprpc_future_wait(f, 0), -ENOENT);
	e = dprpc_future_error(f);
	cr_assert_not_null(strstr(e->msg, "\"nope_async\""), "%s", e->msg);
	dprpc_future_put(f);
	cr_assert_eq(dprpc_rpc_sync(a, "a", "nope_self", NULL, 0, 0, NULL, NULL, &err), -ENOENT);
	cr_assert_not_null(strstr(err.msg, "\"nope_self\""), "%s", err.msg);
	/* No name of this process hashes to it (checked: none is known). */
	cr_assert_eq(dprpc_rpc_sync_id(a, 1, 0x5eed1234u, NULL, 0, 0, NULL, NULL, &err), -ENOENT);
	cr_assert_not_null(strstr(err.msg, "0x5eed1234"), "%s", err.msg);
	cr_assert_eq(atomic_load(&handler_runs), 0u);
}

/* Handler id 0 marks a free bucket of the registry and is no handler's
 * id: a call naming it is refused before anything is sent.  (A frame
 * carrying it from the wire: msg/handler_id_zero_from_the_wire_is_unknown.) */
Test(rpc_ring, handler_id_zero_is_refused)
{
	struct dprpc_agent_stats s0, s1;
	struct dprpc_error err;

	cr_assert_eq(dprpc_agent_stats_get(a, &s0), 0);
	cr_assert_eq(dprpc_rpc_sync_id(a, 1, 0, "x", 1, 0, NULL, NULL, &err), -EINVAL);
	cr_assert_eq(dprpc_agent_stats_get(a, &s1), 0);
	cr_assert_eq(s1.calls_sent, s0.calls_sent);
	cr_assert_eq(atomic_load(&handler_runs), 0u);
}

Test(rpc_ring, handler_error_carries_code_origin_and_message)
{
	struct dprpc_error err;

	cr_assert_eq(dprpc_rpc_sync(a, "b", "fail", NULL, 0, 0, NULL, NULL, &err), -EPERM);
	cr_assert_eq(err.code, -EPERM);
	cr_assert_eq(err.origin, 1);
	cr_assert_str_eq(err.msg, "not allowed here");
	/* A handler returning a negative errno without replying. */
	cr_assert_eq(dprpc_rpc_sync(a, "b", "errno", NULL, 0, 0, NULL, NULL, &err), -EACCES);
	cr_assert_not_null(strstr(err.msg, "errno"), "%s", err.msg);
}

Test(rpc_ring, unknown_worker_and_bad_arguments)
{
	cr_assert_null(dprpc_rpc_async(a, "zz", "echo", "x", 1, 0));
	cr_assert_eq(rte_errno, ENOENT);
	cr_assert_null(dprpc_rpc_async_id(a, 7, dprpc_handler_id("echo"), "x", 1, 0));
	cr_assert_eq(rte_errno, EINVAL);
	cr_assert_null(dprpc_rpc_async(a, "b", "echo", NULL, 3, 0));
	cr_assert_eq(rte_errno, EINVAL);
}

static void *
late_replier(void *arg)
{
	struct dprpc_request *req;

	while ((req = atomic_exchange(&parked[0], NULL)) == NULL)
		usleep(100);
	usleep(5000);
	cr_assert_eq(dprpc_reply(req, "later", 5), 0);
	return NULL;
}

Test(rpc_ring, deferred_reply_from_another_thread)
{
	pthread_t t;
	char out[16];
	size_t out_len = sizeof(out);

	cr_assert_eq(pthread_create(&t, NULL, late_replier, NULL), 0);
	cr_assert_eq(dprpc_rpc_sync(a, "b", "park", "x", 1, 0, out, &out_len, NULL), 0);
	pthread_join(t, NULL);
	cr_assert_eq(out_len, 5u);
	cr_assert_arr_eq(out, "later", 5);
}

Test(rpc_ring, pool_handler_runs_on_the_handler_lcore)
{
	char out[16];
	size_t out_len = sizeof(out);

	atomic_store(&pool_lcore_seen, 999);
	cr_assert_eq(dprpc_rpc_sync(a, "b", "pool_echo", "pool", 4, 0, out, &out_len, NULL), 0);
	cr_assert_arr_eq(out, "pool", 4);
	cr_assert_eq(atomic_load(&pool_lcore_seen), 2u);
}

Test(rpc_ring, self_call_does_not_touch_the_wire)
{
	struct dprpc_agent_stats before, after;
	char out[16];
	size_t out_len = sizeof(out);

	cr_assert_eq(dprpc_agent_stats_get(a, &before), 0);
	cr_assert_eq(dprpc_rpc_sync(a, "a", "echo", "self", 4, 0, out, &out_len, NULL), 0);
	cr_assert_arr_eq(out, "self", 4);
	cr_assert_eq(dprpc_agent_stats_get(a, &after), 0);
	cr_assert_eq(after.tx_frames, before.tx_frames);
	cr_assert_eq(after.rx_frames, before.rx_frames);
	cr_assert_eq(after.calls_ok, before.calls_ok + 1);
	/* Unknown handler on self: same error as remote, origin self. */
	struct dprpc_error err;

	cr_assert_eq(dprpc_rpc_sync(a, "a", "nope", NULL, 0, 0, NULL, NULL, &err), -ENOENT);
	cr_assert_eq(err.origin, 0);
}

Test(rpc_ring, timeout_fails_the_call_and_late_response_is_dropped)
{
	struct dprpc_agent_stats s;
	struct dprpc_agent_usage u;
	struct dprpc_error err;

	cr_assert_eq(dprpc_rpc_sync(a, "b", "park", "x", 1, 20000, NULL, NULL, &err), -ETIMEDOUT);
	cr_assert_eq(err.code, -ETIMEDOUT);
	cr_assert_eq(err.origin, 0);
	cr_assert_eq(dprpc_agent_usage_get(a, &u), 0);
	cr_assert_eq(u.calls, 0u);
	cr_assert_eq(u.futures, 0u);
	/* The handler answers after the caller gave up: counted stale. */
	reply_parked("too late");
	dpt_poll_until_drops(a, DPRPC_DROP_STALE, 1, &s);
	cr_assert_eq(s.drops[DPRPC_DROP_STALE], 1u);
	cr_assert_eq(s.calls_timed_out, 1u);
}

Test(rpc_ring, full_peer_queue_is_eagain_not_a_hang)
{
	struct dprpc_future *fs[8];
	unsigned int i;

	/* a allows 8 calls in flight to b; park them all. */
	for (i = 0; i < 8; i++) {
		fs[i] = dprpc_rpc_async(a, "b", "park", "x", 1, 0);
		cr_assert_not_null(fs[i]);
	}
	cr_assert_null(dprpc_rpc_async(a, "b", "park", "x", 1, 0));
	cr_assert_eq(rte_errno, EAGAIN);
	/* Wait until b holds all eight, then answer them. */
	for (i = 0; i < 20000 && atomic_load(&nb_parked) < 8; i++) {
		dprpc_poll(a, 32);
		usleep(100);
	}
	cr_assert_eq(atomic_load(&nb_parked), 8u);
	reply_parked("ok");
	cr_assert_eq(dprpc_future_wait_all(fs, 8, 0), 0);
	for (i = 0; i < 8; i++)
		dprpc_future_put(fs[i]);
	/* Room again. */
	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "y", 1, 0, NULL, NULL, NULL), 0);
}

Test(rpc_ring, destroy_refuses_while_a_deferred_request_is_unanswered)
{
	struct dprpc_future *f = dprpc_rpc_async(a, "b", "park", "x", 1, 0);

	cr_assert_not_null(f);
	for (int i = 0; i < 20000 && atomic_load(&nb_parked) < 1; i++) {
		dprpc_poll(a, 32);
		usleep(100);
	}
	cr_assert_eq(dprpc_agent_destroy(b), -EBUSY);
	reply_parked("bye");
	cr_assert_eq(dprpc_future_wait(f, 0), 0);
	dprpc_future_put(f);
	/* b still serves after the refused destroy. */
	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "z", 1, 0, NULL, NULL, NULL), 0);
}

Test(rpc_ring, registration_errors)
{
	cr_assert_eq(dprpc_register(b, "echo", h_echo, NULL, DPRPC_HANDLER_INLINE), -EEXIST);
	cr_assert_eq(dprpc_register(b, "", h_echo, NULL, DPRPC_HANDLER_INLINE), -EINVAL);
	cr_assert_eq(dprpc_register(b, "x", NULL, NULL, DPRPC_HANDLER_INLINE), -EINVAL);
	/* a has no handler lcores: pool mode is refused. */
	cr_assert_eq(dprpc_register(a, "p", h_echo, NULL, DPRPC_HANDLER_POOL), -EINVAL);
}

/* Two different names with the same 32-bit wire id: search for one. */
Test(rpc_ring, colliding_handler_ids_are_refused)
{
	enum { N = 1 << 22, MASK = (1 << 23) - 1 };
	uint32_t *ids = calloc(MASK + 1, sizeof(*ids));
	uint32_t *who = calloc(MASK + 1, sizeof(*who));
	char n1[32], n2[32];
	bool found = false;

	cr_assert_not_null(ids);
	cr_assert_not_null(who);
	for (uint32_t i = 1; i < N && !found; i++) {
		char name[32];
		uint32_t id, b2;

		snprintf(name, sizeof(name), "h%u", i);
		id = dprpc_handler_id(name);
		for (b2 = id & MASK; ids[b2] != 0; b2 = (b2 + 1) & MASK) {
			if (ids[b2] == id) {
				snprintf(n1, sizeof(n1), "h%u", who[b2]);
				snprintf(n2, sizeof(n2), "%s", name);
				found = true;
				break;
			}
		}
		if (!found) {
			ids[b2] = id;
			who[b2] = i;
		}
	}
	free(ids);
	free(who);
	cr_assert(found, "no 32-bit collision among 2^22 names");
	cr_assert_eq(dprpc_handler_id(n1), dprpc_handler_id(n2));
	cr_assert_eq(dprpc_register(b, n1, h_echo, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(b, n2, h_echo, NULL, DPRPC_HANDLER_INLINE), -EADDRINUSE);
}

static atomic_bool app_stop;

static void *
app_loop(void *arg)
{
	struct dprpc_agent *ag = arg;

	while (!atomic_load(&app_stop))
		dprpc_poll(ag, 32);
	return NULL;
}

/* Way 1: the application polls a from its own loop; the caller parks. */
Test(rpc_ring, application_loop_drives_the_caller)
{
	struct dprpc_error err = {0};
	pthread_t t;
	char out[8];
	size_t out_len = sizeof(out);
	int i, rc = 0;

	cr_assert_eq(pthread_create(&t, NULL, app_loop, a), 0);
	for (i = 0; i < 100 && rc == 0; i++) {
		out_len = sizeof(out);
		rc = dprpc_rpc_sync(a, "b", "echo", "app", 3, 0, out, &out_len, &err);
		if (rc == 0)
			cr_expect_arr_eq(out, "app", 3);
	}
	/* Stopped whatever happened: the teardown destroys a. */
	atomic_store(&app_stop, true);
	pthread_join(t, NULL);
	if (rc != 0) {
		dprpc_agent_dump(a, stderr);
		dprpc_agent_dump(b, stderr);
	}
	cr_assert_eq(rc, 0, "call %d: %d (origin %u) %s", i - 1, rc, err.origin, err.msg);
}

/* An application loop that naps between polls, as the Python package's
 * background poller does when idle: the poll is free most of the time. */
static void *
app_loop_napping(void *arg)
{
	struct dprpc_agent *ag = arg;

	while (!atomic_load(&app_stop)) {
		dprpc_poll(ag, 32);
		usleep(50);
	}
	return NULL;
}

/* Answers parked[0] 200 ms after it came. */
static void *
slow_replier(void *arg)
{
	struct dprpc_request *req;

	(void)arg;
	while ((req = atomic_exchange(&parked[0], NULL)) == NULL)
		usleep(100);
	usleep(200 * 1000);
	cr_assert_eq(dprpc_reply(req, "slow", 4), 0);
	return NULL;
}

/* The calling thread's CPU time (@clock CLOCK_THREAD_CPUTIME_ID) or the
 * time (CLOCK_MONOTONIC), in nanoseconds. */
static uint64_t
clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * conf.lcores.waiters_park: a thread waiting 200 ms for a call, while the
 * application's napping loop polls, parks once its polls find nothing:
 * it spends under a quarter of the wait on the CPU (here about a tenth;
 * a waiter that polls until its future completes takes the free poll and
 * spends all the CPU it gets, here nine tenths).  The wait is measured,
 * not taken for 200 ms: a busy machine may keep the replier off its CPU.
 * With nobody else polling, its own poll after each slice still
 * completes the call.
 */
Test(rpc_ring, parked_waiters_leave_the_polling_to_the_application)
{
	struct dprpc_agent_conf c;
	pthread_t app, rep;
	const char *v;
	size_t len;

	cr_assert_eq(dprpc_agent_destroy(a), 0);
	dprpc_agent_conf_init(&c);
	c.name = "a";
	c.world = DPT_WORLD2;
	c.port.id = pair.port_a;
	c.port.mbuf_pool = mp;
	c.lcores.waiters_park = true;
	a = dprpc_agent_create(&c);
	cr_assert_not_null(a, "%s", rte_strerror(rte_errno));
	for (int round = 0; round < 2; round++) {
		struct dprpc_future *f;
		uint64_t cpu, wall;

		atomic_store(&nb_claimed, 0);
		atomic_store(&app_stop, false);
		if (round == 0)
			cr_assert_eq(pthread_create(&app, NULL, app_loop_napping, a), 0);
		cr_assert_eq(pthread_create(&rep, NULL, slow_replier, NULL), 0);
		f = dprpc_rpc_async(a, "b", "park", "x", 1, 0);
		cr_assert_not_null(f);
		cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		wall = clock_ns(CLOCK_MONOTONIC);
		cr_assert_eq(dprpc_future_wait(f, 0), 0, "round %d", round);
		cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
		wall = clock_ns(CLOCK_MONOTONIC) - wall;
		v = dprpc_future_value(f, &len);
		cr_assert(len == 4 && memcmp(v, "slow", 4) == 0, "round %d", round);
		dprpc_future_put(f);
		pthread_join(rep, NULL);
		if (round == 0) {
			atomic_store(&app_stop, true);
			pthread_join(app, NULL);
			cr_assert_lt(cpu, wall / 4,
				"the waiter spent %" PRIu64 " us on the CPU of %" PRIu64 " us",
				cpu / 1000, wall / 1000);
		}
	}
}

/* Answers the request's time left (uint64, microseconds). */
static int
h_left(struct dprpc_request *req, void *arg)
{
	uint64_t left = dprpc_request_remaining_us(req);

	(void)arg;
	return dprpc_reply(req, &left, sizeof(left));
}

/* b's time left for a call it makes to a's "left" with the default
 * timeout (60 s), from this thread, which holds a deferred request. */
static uint64_t
inner_left(void)
{
	uint64_t left = 0;
	size_t len = sizeof(left);

	cr_assert_eq(
		dprpc_rpc_sync(b, "a", "left", NULL, 0, DPRPC_TIMEOUT_DEFAULT, &left, &len, NULL),
		0);
	cr_assert_eq(len, sizeof(left));
	return left;
}

/* Work deferred to another thread keeps the caller's deadline once that
 * thread enters the request: a's call to b has 10 s; b's request parked,
 * this thread's inner call back to a has at most that (not the default
 * 60 s it has outside, or after leaving). */
Test(rpc_ring, deferred_work_that_enters_its_request_keeps_its_deadline)
{
	struct dprpc_request *req;
	struct dprpc_future *f;
	pthread_t t;
	uint64_t prev;

	cr_assert_eq(dprpc_register(a, "left", h_left, NULL, DPRPC_HANDLER_INLINE), 0);
	atomic_store(&app_stop, false);
	cr_assert_eq(pthread_create(&t, NULL, app_loop, a), 0);
	f = dprpc_rpc_async(a, "b", "park", "x", 1, 10 * 1000 * 1000);
	cr_assert_not_null(f);
	while ((req = atomic_load(&parked[0])) == NULL)
		usleep(100);
	cr_assert_gt(inner_left(), 30u * 1000 * 1000, "not entered: the default timeout");
	prev = dprpc_request_enter(req);
	cr_assert_eq(prev, 0u);
	{
		uint64_t left = inner_left();

		cr_assert(left > 0 && left <= 10u * 1000 * 1000, "entered: %lu us left",
			(unsigned long)left);
	}
	dprpc_request_leave(prev);
	cr_assert_gt(inner_left(), 30u * 1000 * 1000, "left: the default timeout again");
	cr_assert_eq(dprpc_reply(atomic_exchange(&parked[0], NULL), "ok", 2), 0);
	cr_assert_eq(dprpc_future_wait(f, 0), 0);
	dprpc_future_put(f);
	atomic_store(&app_stop, true);
	pthread_join(t, NULL);
}

/* Frames that are not well-formed dprpc are counted and freed. */
Test(rpc_ring, malformed_frames_are_counted_and_freed)
{
	struct dprpc_agent_stats s;
	struct rte_mbuf *m;
	uint8_t *d;
	int i;

	/* A 10-byte runt and an ARP-type frame (broadcast, not a request for
	 * b's address), straight onto b's rx ring. */
	m = rte_pktmbuf_alloc(mp);
	d = (uint8_t *)rte_pktmbuf_append(m, 10);
	memset(d, 0xab, 10);
	cr_assert_eq(rte_ring_enqueue(pair.ab, m), 0);
	m = rte_pktmbuf_alloc(mp);
	d = (uint8_t *)rte_pktmbuf_append(m, 60);
	cr_assert_not_null(d);
	memset(d, 0, 60);
	memset(d, 0xff, 6);
	d[12] = 0x08;
	d[13] = 0x06;
	cr_assert_eq(rte_ring_enqueue(pair.ab, m), 0);
	for (i = 0; i < 20000; i++) { /* bounded: 10 s */
		cr_assert_eq(dprpc_agent_stats_get(b, &s), 0);
		if (s.dropped == 2)
			break;
		usleep(500);
	}
	cr_assert_eq(s.drops[DPRPC_DROP_TRUNCATED], 1u);
	cr_assert_eq(s.drops[DPRPC_DROP_NOT_DPRPC], 1u);
	/* b still answers. */
	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "ok", 2, 0, NULL, NULL, NULL), 0);
}

/* Way 2 on the caller's side too: a's io lcore polls, the caller parks. */
Test(rpc_ring, caller_with_its_own_io_lcore)
{
	struct dprpc_agent_conf c;
	char out[8];
	size_t out_len;

	cr_assert_eq(dprpc_agent_destroy(a), 0);
	dprpc_agent_conf_init(&c);
	c.name = "a";
	c.world = DPT_WORLD2;
	c.port.id = pair.port_a;
	c.port.mbuf_pool = mp;
	c.lcores.io = 3;
	a = dprpc_agent_create(&c);
	cr_assert_not_null(a, "%s", rte_strerror(rte_errno));
	for (int i = 0; i < 200; i++) {
		out_len = sizeof(out);
		cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "io", 2, 0, out, &out_len, NULL), 0);
		cr_assert_arr_eq(out, "io", 2);
	}
}

/* Out of mbufs: rpc_async fails with ENOBUFS and keeps nothing. */
Test(rpc_ring, exhausted_mbufs_fail_cleanly)
{
	struct dprpc_future *fs[64];
	struct dprpc_agent_usage u;
	struct rte_mempool *small;
	struct dprpc_agent_conf c;
	unsigned int n = 0, i;

	/* a again, on 24 mbufs and with b not polling (b is destroyed): the
	 * requests pile up in the ring until the pool runs dry. */
	cr_assert_eq(dprpc_agent_destroy(a), 0);
	cr_assert_eq(dprpc_agent_destroy(b), 0);
	b = NULL;
	small = rte_pktmbuf_pool_create(
		"dpt_small", 24, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	cr_assert_not_null(small);
	dprpc_agent_conf_init(&c);
	c.name = "a";
	c.world = DPT_WORLD2;
	c.port.id = pair.port_a;
	c.port.mbuf_pool = small;
	a = dprpc_agent_create(&c);
	cr_assert_not_null(a);
	/* a takes b's incarnation for known (as if it had heard from b before
	 * b went): its requests go out at once, into a ring nobody reads,
	 * instead of waiting for b to answer a PING. */
	dp_rpc_of(a)->peers[1].session = 1;
	dp_rpc_of(a)->peers[1].session_known = true;
	dp_rpc_of(a)->peers[1].tx_session = 1; /* as dp_peer_addressable() would */
	for (i = 0; i < 64; i++) {
		fs[n] = dprpc_rpc_async(a, "b", "echo", "x", 1, 0);
		if (fs[n] == NULL) {
			cr_assert_eq(rte_errno, ENOBUFS, "%s", rte_strerror(rte_errno));
			break;
		}
		n++;
	}
	cr_assert_lt(n, 64u, "the pool never ran dry");
	cr_assert_eq(dprpc_agent_usage_get(a, &u), 0);
	cr_assert_eq(u.futures, n, "failed calls kept futures: %u for %u calls", u.futures, n);
	cr_assert_eq(u.calls, n);
	for (i = 0; i < n; i++)
		dprpc_future_put(fs[i]);
	/* Destroy fails the pending calls; their mbufs wait in the ring. */
	cr_assert_eq(dprpc_agent_destroy(a), 0);
	a = NULL;
	while (rte_ring_count(pair.ab) > 0) {
		struct rte_mbuf *m;

		cr_assert_eq(rte_ring_dequeue(pair.ab, (void **)&m), 0);
		rte_pktmbuf_free(m);
	}
	cr_assert_eq(rte_mempool_in_use_count(small), 0u);
	rte_mempool_free(small);
}

/* A new b's configuration: its port and pool, polled by lcore @io_lcore. */
static void
b_conf_init(struct dprpc_agent_conf *c, unsigned int io_lcore)
{
	dprpc_agent_conf_init(c);
	c->name = "b";
	c->world = DPT_WORLD2;
	c->port.id = pair.port_b;
	c->port.mbuf_pool = mp;
	c->lcores.io = io_lcore;
}

/* A new incarnation of b in place of the current one, polled by lcore 1 or by nobody. */
static void
replace_b(bool polled)
{
	struct dprpc_agent_conf c;

	cr_assert_eq(dprpc_agent_destroy(b), 0);
	b_conf_init(&c, polled ? 1 : DPRPC_LCORE_NONE);
	b = dprpc_agent_create(&c);
	cr_assert_not_null(b, "%s", rte_strerror(rte_errno));
	cr_assert_eq(dprpc_register(b, "echo", h_echo, NULL, DPRPC_HANDLER_INLINE), 0);
}

/* b again, with @p n handlers given in its configuration (none registered
 * after): NULL with rte_errno on a refusal. */
static struct dprpc_agent *
make_b_with(const struct dprpc_handler_def *defs, unsigned int n, bool pool)
{
	struct dprpc_agent_conf c;

	b_conf_init(&c, 1);
	if (pool) {
		c.lcores.nb_pool = 1;
		c.lcores.pool[0] = 2;
	}
	c.serve.handlers = defs;
	c.serve.nb_handlers = n;
	return dprpc_agent_create(&c);
}

/*
 * Handlers given in the configuration are registered before the agent
 * receives anything: b answers with them and was never given one by
 * dprpc_register().  (A request that arrives before a dprpc_register()
 * made after create is answered -ENOENT:
 * rpc_ring/unknown_handler_is_remote_enoent.)  b is a new incarnation: a's
 * first call may fail -ECONNRESET, as restarted_peer_is_recognised shows.
 */
Test(rpc_ring, handlers_given_at_creation_answer_from_the_start)
{
	static const struct dprpc_handler_def defs[] = {
		{"early", h_echo, NULL, DPRPC_HANDLER_INLINE},
		{"early_pool", h_pool_echo, NULL, DPRPC_HANDLER_POOL},
	};
	char out[16];
	size_t len = 0;
	int rc = -ECONNRESET;

	cr_assert_eq(dprpc_agent_destroy(b), 0);
	b = make_b_with(defs, 2, true);
	cr_assert_not_null(b, "%s", rte_strerror(rte_errno));
	for (int i = 0; i < 3 && rc == -ECONNRESET; i++) {
		len = sizeof(out);
		rc = dprpc_rpc_sync(a, "b", "early", "hi", 2, 5 * 1000 * 1000, out, &len, NULL);
	}
	cr_assert_eq(rc, 0, "%d", rc);
	cr_assert_eq(len, 2u);
	cr_assert_arr_eq(out, "hi", 2);
	len = sizeof(out);
	cr_assert_eq(
		dprpc_rpc_sync(a, "b", "early_pool", "pool", 4, 5 * 1000 * 1000, out, &len, NULL),
		0);
	cr_assert_arr_eq(out, "pool", 4);
	cr_assert_eq(atomic_load(&pool_lcore_seen), 2u);
	/* They are registered as dprpc_register() registers: a second time is EEXIST. */
	cr_assert_eq(dprpc_register(b, "early", h_echo, NULL, DPRPC_HANDLER_INLINE), -EEXIST);
}

/* A bad entry fails the creation with EINVAL, before the port is touched:
 * b can be created at once afterwards, and no mbuf is held. */
Test(rpc_ring, bad_handlers_at_creation_are_einval)
{
	static const struct dprpc_handler_def no_fn[] = {{"x", NULL, NULL, DPRPC_HANDLER_INLINE}};
	static const struct dprpc_handler_def no_name[] = {
		{NULL, h_echo, NULL, DPRPC_HANDLER_INLINE}};
	static const struct dprpc_handler_def twice[] = {
		{"x", h_echo, NULL, DPRPC_HANDLER_INLINE},
		{"x", h_echo, NULL, DPRPC_HANDLER_INLINE},
	};
	static const struct dprpc_handler_def reserved[] = {
		{"dprpc.x", h_echo, NULL, DPRPC_HANDLER_INLINE}};
	static const struct dprpc_handler_def pool[] = {{"p", h_echo, NULL, DPRPC_HANDLER_POOL}};
	static const struct dprpc_handler_def bad_mode[] = {{"m", h_echo, NULL, 7}};
	unsigned int in_use;

	cr_assert_eq(dprpc_agent_destroy(b), 0);
	b = NULL;
	dpt_ring_drain(pair.ab);
	in_use = rte_mempool_in_use_count(mp);
	cr_assert_null(make_b_with(no_fn, 1, false));
	cr_assert_eq(rte_errno, EINVAL);
	cr_assert_null(make_b_with(no_name, 1, false));
	cr_assert_eq(rte_errno, EINVAL);
	cr_assert_null(make_b_with(twice, 2, false));
	cr_assert_eq(rte_errno, EINVAL);
	cr_assert_null(make_b_with(reserved, 1, false));
	cr_assert_eq(rte_errno, EINVAL);
	cr_assert_null(make_b_with(pool, 1, false), "POOL without handler lcores");
	cr_assert_eq(rte_errno, EINVAL);
	cr_assert_null(make_b_with(bad_mode, 1, false));
	cr_assert_eq(rte_errno, EINVAL);
	cr_assert_null(make_b_with(NULL, 1, false), "nb_handlers without handlers");
	cr_assert_eq(rte_errno, EINVAL);
	cr_assert_eq(rte_mempool_in_use_count(mp), in_use);
	b = make_b_with(pool, 1, true);
	cr_assert_not_null(b, "%s", rte_strerror(rte_errno));
}

/* A peer that restarts: a call pending across the restart fails with
 * -ECONNRESET, and no incarnation but the one it was sent to runs it: the
 * request names b's first incarnation.  A second incarnation never polls
 * (a's resends pile up in the ring); a third finds them, refuses them all
 * and answers with a PONG, which shows a its new session: the call fails.
 * The third serves new calls, and a frame of the first incarnation that
 * turns up late is dropped. */
Test(rpc_ring, restarted_peer_is_recognised)
{
	struct dprpc_agent_stats s, sb;
	const struct dprpc_error *err;
	struct dprpc_future *f;
	uint8_t tmpl[DP_L2L4_LEN];
	struct dp_hdr_fields hf;
	struct rte_mbuf *m;
	uint64_t old_session;

	/* a learns b's first incarnation. */
	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "1", 1, 0, NULL, NULL, NULL), 0);
	cr_assert_eq(atomic_load(&handler_runs), 1u);
	old_session = dp_base_of(b)->session;
	/* A second incarnation that never polls: a's call stays pending and a
	 * keeps resending it (the request and its resends wait in the ring). */
	replace_b(false);
	f = dprpc_rpc_async(a, "b", "echo", "2", 1, 0);
	cr_assert_not_null(f);
	for (int i = 0; i < 40; i++) {
		dprpc_poll(a, 32);
		usleep(500);
	}
	cr_assert_eq(dprpc_agent_stats_get(b, &sb), 0);
	cr_assert_eq(sb.requests_handled, 0u);
	cr_assert_gt(rte_ring_count(pair.ab), 0u, "a sent nothing to the second b");
	/* A third incarnation finds them: it refuses them, not for it, and its
	 * PONG shows a new session: the pending call fails. */
	replace_b(true);
	cr_assert_eq(dprpc_future_wait(f, 0), -ECONNRESET);
	cr_assert_eq(dprpc_agent_stats_get(b, &sb), 0);
	cr_assert_gt(sb.drops[DPRPC_DROP_WRONG_INCARNATION], 0u);
	cr_assert_eq(sb.requests_handled, 0u);
	err = dprpc_future_error(f);
	cr_assert_not_null(strstr(err->msg, "restarted"), "%s", err->msg);
	dprpc_future_put(f);
	cr_assert_eq(atomic_load(&handler_runs), 1u, "a later incarnation ran the call");
	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "3", 1, 0, NULL, NULL, NULL), 0);
	cr_assert_eq(atomic_load(&handler_runs), 2u);
	cr_assert_eq(dprpc_agent_stats_get(a, &s), 0);
	cr_assert_eq(s.peers_restarted, 1u);
	cr_assert_eq(dprpc_worker_state(a, 1), DPRPC_PEER_UP);

	/* A late PONG from the first incarnation: dropped as old.  b goes
	 * first: the ring is single-producer, and b's io lcore sends on it. */
	cr_assert_eq(dprpc_agent_destroy(b), 0);
	b = NULL;
	hf = (struct dp_hdr_fields){.type = DP_FRAME_CONTROL,
		.src = 1,
		.dst = 0,
		.session = old_session,
		.handler_id = DP_CTRL_PONG};
	dp_l2l4_template(tmpl, &dp_base_of(a)->world.addrs[1], &dp_base_of(a)->world.addrs[0], 64);
	m = rte_pktmbuf_alloc(mp);
	cr_assert_not_null(m);
	dp_frame_write((uint8_t *)rte_pktmbuf_append(m, DP_HDRS_LEN), tmpl, &hf, NULL, 0);
	cr_assert_eq(rte_ring_enqueue(pair.ba, m), 0);
	dpt_poll_until_drops(a, DPRPC_DROP_OLD_SESSION, 1, &s);
	cr_assert_eq(s.drops[DPRPC_DROP_OLD_SESSION], 1u);
	cr_assert_eq(s.peers_restarted, 1u);
}

/* b again, in place of the current one (if any), with incarnation id @id. */
static void
restart_b_as(uint64_t id)
{
	if (b != NULL)
		cr_assert_eq(dprpc_agent_destroy(b), 0);
	dp_set_next_session(id);
	b = make_agent("b", pair.port_b, 1, 64);
	cr_assert_eq(dprpc_register(b, "echo", h_echo, NULL, DPRPC_HANDLER_INLINE), 0);
}

/* A PONG from b's incarnation @id reaches a (late: that b is gone, so
 * nobody else sends into the single-producer ring). */
static void
late_pong_from(uint64_t id)
{
	struct dp_hdr_fields hf = {.type = DP_FRAME_CONTROL,
		.src = 1,
		.dst = 0,
		.session = id,
		.handler_id = DP_CTRL_PONG};
	uint8_t tmpl[DP_L2L4_LEN];
	struct rte_mbuf *m;

	dp_l2l4_template(tmpl, &dp_base_of(a)->world.addrs[1], &dp_base_of(a)->world.addrs[0], 64);
	m = rte_pktmbuf_alloc(mp);
	cr_assert_not_null(m);
	dp_frame_write((uint8_t *)rte_pktmbuf_append(m, DP_HDRS_LEN), tmpl, &hf, NULL, 0);
	cr_assert_eq(rte_ring_enqueue(pair.ba, m), 0);
}

/* Incarnation ids carry no order: any id other than the current one and
 * the few before it is a restart.  Each pair of ids below is a first and
 * a second incarnation of b; the 32-bit serial order of the ids made of
 * the ms clock took each second one for older (after 24.8 days, or a
 * clock stepped back, or wrapped), and dropped its frames for ever.  A
 * call pending across the restart fails -ECONNRESET, new calls work, a
 * late frame of the first incarnation is dropped as old_session. */
Test(rpc_ring, restart_with_any_new_id_is_recognised)
{
	static const uint64_t ids[][2] = {
		{0x10, 0x10 + (UINT64_C(1) << 31)},
		{UINT64_C(0x5a5a5a5a5a5a5a5a), UINT64_C(0x5a5a5a5a5a5a5a59)},
		{UINT64_MAX, 1},
	};
	const struct dprpc_error *err;
	struct dprpc_agent_stats s;
	struct dprpc_future *f;
	unsigned int i;
	int rc;

	for (i = 0; i < RTE_DIM(ids); i++) {
		/* A fresh a, which knows nothing of b yet. */
		cr_assert_eq(dprpc_agent_destroy(a), 0);
		if (b != NULL)
			cr_assert_eq(dprpc_agent_destroy(b), 0);
		b = NULL;
		dpt_ring_drain(pair.ab);
		dpt_ring_drain(pair.ba);
		a = make_agent("a", pair.port_a, DPRPC_LCORE_NONE, 8);
		restart_b_as(ids[i][0]);
		cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "1", 1, 0, NULL, NULL, NULL), 0,
			"ids %u: first incarnation", i);
		restart_b_as(ids[i][1]);
		f = dprpc_rpc_async(a, "b", "echo", "2", 1, 3000 * 1000);
		cr_assert_not_null(f);
		rc = dprpc_future_wait(f, 0);
		cr_assert_eq(rc, -ECONNRESET, "ids %u: %d %s", i, rc,
			dprpc_future_error(f) != NULL ? dprpc_future_error(f)->msg : "");
		err = dprpc_future_error(f);
		cr_assert_not_null(strstr(err->msg, "restarted"), "%s", err->msg);
		dprpc_future_put(f);
		cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "3", 1, 0, NULL, NULL, NULL), 0,
			"ids %u: second incarnation", i);
		cr_assert_eq(dprpc_agent_stats_get(a, &s), 0);
		cr_assert_eq(s.peers_restarted, 1u, "ids %u", i);
		cr_assert_eq(s.drops[DPRPC_DROP_OLD_SESSION], 0u, "ids %u", i);
		cr_assert_eq(dprpc_agent_destroy(b), 0);
		b = NULL;
		late_pong_from(ids[i][0]);
		dpt_poll_until_drops(a, DPRPC_DROP_OLD_SESSION, 1, &s);
		cr_assert_eq(s.drops[DPRPC_DROP_OLD_SESSION], 1u, "ids %u", i);
		cr_assert_eq(s.peers_restarted, 1u, "ids %u", i);
	}
}

/* Poll a until every frame between a and b has arrived, three times in
 * a row (bounded, about a second): a resend of a's that crossed b's
 * response is answered again, and that answer must not be left in the
 * ring when the agents go. */
static void
settle_a(void)
{
	struct dprpc_agent_stats sa, sb;
	int quiet = 0;

	for (int i = 0; i < 40000 && quiet < 3; i++) { /* bounded: 10 s */
		dprpc_poll(a, 32);
		cr_assert_eq(dprpc_agent_stats_get(a, &sa), 0);
		cr_assert_eq(dprpc_agent_stats_get(b, &sb), 0);
		if (sa.rx_frames == sb.tx_frames && sb.rx_frames == sa.tx_frames)
			quiet++;
		else
			quiet = 0;
		usleep(250);
	}
	cr_assert_eq(quiet, 3, "frames still in flight between a and b");
}

/* --- calling out of the polling thread ----------------------------------- */

/* An inline handler on b that waits for a call to a: b's poller waiting
 * for b.  Answers with what rpc_sync returned. */
static int
h_sync_out(struct dprpc_request *req, void *arg)
{
	struct dprpc_agent *self = dprpc_request_agent(req);
	int rc;

	(void)arg;
	rc = dprpc_rpc_sync(self, "a", "echo", "x", 1, 0, NULL, NULL, NULL);
	if (rc == 0)
		return dprpc_reply(req, "sent", 4);
	return dprpc_reply_error(req, rc, "rpc_sync from an inline handler");
}

Test(rpc_ring, rpc_sync_from_an_inline_handler_is_edeadlk, .timeout = 30)
{
	struct dprpc_agent_stats before, after;
	struct dprpc_error err;

	cr_assert_eq(dprpc_register(b, "sync_out", h_sync_out, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_agent_stats_get(b, &before), 0);
	cr_assert_eq(dprpc_rpc_sync(a, "b", "sync_out", NULL, 0, 0, NULL, NULL, &err), -EDEADLK);
	cr_assert_eq(err.origin, 1, "the handler's error, on b");
	cr_assert_str_eq(err.msg, "rpc_sync from an inline handler");
	cr_assert_eq(dprpc_agent_stats_get(b, &after), 0);
	cr_assert_eq(after.calls_sent, before.calls_sent, "b sent nothing");
	cr_assert_eq(atomic_load(&handler_runs), 0u, "a's echo never ran");
	/* b still serves. */
	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "ok", 2, 0, NULL, NULL, NULL), 0);
	settle_a();
}

/* What a callback on a's poller saw. */
static atomic_int cb_rc = 1, cb_rc_all = 1;
static atomic_bool cb_on_poller;
static atomic_uint cb_sent_before, cb_sent_after;
static struct dprpc_future *_Atomic cb_future;

/* A completion callback of one of a's calls: runs on a's poller. */
static void
cb_sync_out(struct dprpc_future *f, void *arg)
{
	struct dprpc_agent_stats s;

	(void)f;
	(void)arg;
	atomic_store(&cb_on_poller, dp_on_poller(a));
	dprpc_agent_stats_get(a, &s);
	atomic_store(&cb_sent_before, (unsigned int)s.calls_sent);
	atomic_store(&cb_rc, dprpc_rpc_sync(a, "b", "echo", "y", 1, 0, NULL, NULL, NULL));
	dprpc_agent_stats_get(a, &s);
	atomic_store(&cb_sent_after, (unsigned int)s.calls_sent);
}

Test(rpc_ring, rpc_sync_from_a_callback_on_the_poller_is_edeadlk, .timeout = 30)
{
	struct dprpc_future *f = dprpc_rpc_async(a, "b", "echo", "x", 1, 0);

	cr_assert_not_null(f);
	/* Nobody polls a until the wait below: the callback runs there. */
	cr_assert_eq(dprpc_future_add_callback(f, cb_sync_out, NULL), 0);
	cr_assert_eq(dprpc_future_wait(f, 0), 0);
	dprpc_future_put(f);
	cr_assert(atomic_load(&cb_on_poller));
	cr_assert_eq(atomic_load(&cb_rc), -EDEADLK);
	cr_assert_eq(atomic_load(&cb_sent_after), atomic_load(&cb_sent_before), "nothing sent");
	cr_assert_eq(atomic_load(&handler_runs), 1u, "the first call only");
	settle_a();
}

/* A callback on a's poller that waits for another of a's calls, still
 * pending (b parks it). */
static void
cb_wait_pending(struct dprpc_future *f, void *arg)
{
	struct dprpc_future *g = dprpc_rpc_async(a, "b", "park", "z", 1, 0);

	(void)f;
	(void)arg;
	atomic_store(&cb_on_poller, dp_on_poller(a));
	if (g == NULL)
		return;
	atomic_store(&cb_rc, dprpc_future_wait(g, 0));
	/* With a limit: -EDEADLK at once, not -ETIMEDOUT at the limit. */
	atomic_store(&cb_rc_all, dprpc_future_wait_all(&g, 1, 60000000));
	atomic_store(&cb_future, g);
}

Test(rpc_ring, future_wait_from_a_callback_on_the_poller_is_edeadlk, .timeout = 30)
{
	struct dprpc_future *f = dprpc_rpc_async(a, "b", "echo", "x", 1, 0), *g;

	cr_assert_not_null(f);
	cr_assert_eq(dprpc_future_add_callback(f, cb_wait_pending, NULL), 0);
	cr_assert_eq(dprpc_future_wait(f, 0), 0);
	dprpc_future_put(f);
	cr_assert(atomic_load(&cb_on_poller));
	g = atomic_load(&cb_future);
	cr_assert_not_null(g);
	cr_assert_eq(atomic_load(&cb_rc), -EDEADLK);
	cr_assert_eq(atomic_load(&cb_rc_all), -EDEADLK);
	cr_assert_eq(dprpc_future_state(g), DPRPC_FUTURE_PENDING, "the call goes on");
	/* Off the poller the same wait completes once b answers. */
	for (int i = 0; i < 20000 && atomic_load(&nb_parked) < 1; i++) {
		dprpc_poll(a, 32);
		usleep(100);
	}
	reply_parked("done");
	cr_assert_eq(dprpc_future_wait(g, 0), 0);
	dprpc_future_put(g);
	settle_a();
}

/* The documented way: defer, call with rpc_async, answer from the
 * callback. */
static void
relay_done(struct dprpc_future *f, void *arg)
{
	struct dprpc_request *req = arg;
	const struct dprpc_error *e = dprpc_future_error(f);
	size_t len;
	const void *v = dprpc_future_value(f, &len);

	if (e != NULL)
		(void)dprpc_reply_error(req, e->code, e->msg);
	else
		(void)dprpc_reply(req, v, len);
}

static int
h_relay(struct dprpc_request *req, void *arg)
{
	size_t len;
	const void *p = dprpc_request_payload(req, &len);
	struct dprpc_future *f;
	int rc;

	(void)arg;
	f = dprpc_rpc_async(dprpc_request_agent(req), "a", "echo", p, len, DPRPC_TIMEOUT_DEFAULT);
	if (f == NULL)
		return -rte_errno;
	rc = dprpc_future_add_callback(f, relay_done, req);
	dprpc_future_put(f); /* the agent keeps its own reference */
	return rc == 0 ? DPRPC_DEFERRED : rc;
}

Test(rpc_ring, deferral_is_the_way_to_call_out_of_a_handler, .timeout = 30)
{
	char out[16];
	size_t out_len;

	cr_assert_eq(dprpc_register(b, "relay", h_relay, NULL, DPRPC_HANDLER_INLINE), 0);
	for (int i = 0; i < 20; i++) {
		out_len = sizeof(out);
		cr_assert_eq(dprpc_rpc_sync(a, "b", "relay", "ping", 4, 0, out, &out_len, NULL), 0);
		cr_assert_eq(out_len, 4u);
		cr_assert_arr_eq(out, "ping", 4);
	}
	cr_assert_eq(atomic_load(&handler_runs), 20u, "a's echo ran once per relay");
	settle_a();
}

/* --- timeouts of any size ------------------------------------------------ */

/* Answers the request parked at index (uintptr_t)@arg, 20 ms after it
 * came: a call that "timed out at once" fails before that. */
static void *
late_replier_at(void *arg)
{
	unsigned int i = (unsigned int)(uintptr_t)arg;
	struct dprpc_request *req;

	while ((req = atomic_exchange(&parked[i], NULL)) == NULL)
		usleep(100);
	usleep(20000);
	cr_assert_eq(dprpc_reply(req, "later", 5), 0);
	return NULL;
}

Test(rpc_ring, huge_timeouts_mean_no_deadline, .timeout = 60)
{
	static const uint64_t timeouts[] = {UINT64_MAX - 1, UINT64_C(1) << 62, UINT64_C(1) << 63};
	struct dprpc_agent_stats s;
	struct dprpc_future *f;
	struct dprpc_error err;
	unsigned int i, k = 0;
	char out[16];
	size_t out_len;
	pthread_t t;
	int rc;

	for (i = 0; i < RTE_DIM(timeouts); i++) {
		cr_assert_eq(pthread_create(&t, NULL, late_replier_at, (void *)(uintptr_t)k++), 0);
		out_len = sizeof(out);
		rc = dprpc_rpc_sync(a, "b", "park", "x", 1, timeouts[i], out, &out_len, &err);
		pthread_join(t, NULL);
		cr_assert_eq(rc, 0, "rpc_sync, timeout %#" PRIx64 ": %d (%s)", timeouts[i], rc,
			rc != 0 ? err.msg : "");
		cr_assert_eq(out_len, 5u);
		cr_assert_arr_eq(out, "later", 5);

		/* rpc_async, and the same as the wait's limit. */
		cr_assert_eq(pthread_create(&t, NULL, late_replier_at, (void *)(uintptr_t)k++), 0);
		f = dprpc_rpc_async(a, "b", "park", "x", 1, timeouts[i]);
		cr_assert_not_null(f);
		rc = dprpc_future_wait(f, timeouts[i]);
		pthread_join(t, NULL);
		cr_assert_eq(rc, 0, "rpc_async, timeout %#" PRIx64 ": %d (%s)", timeouts[i], rc,
			rc != 0 ? dprpc_future_error(f)->msg : "");
		cr_assert_arr_eq(dprpc_future_value(f, NULL), "later", 5);
		dprpc_future_put(f);
	}
	cr_assert_eq(dprpc_agent_stats_get(a, &s), 0);
	cr_assert_eq(s.calls_timed_out, 0u);
	cr_assert_eq(s.calls_ok, 2 * RTE_DIM(timeouts));
	settle_a();
}

/*
 * The default timeout read and set at run time (PyTorch's get_rpc_timeout()
 * and _set_rpc_timeout()): a call given DPRPC_TIMEOUT_DEFAULT that starts
 * after the set fails -ETIMEDOUT by the new value (well before the 60 s it
 * was made with: the bound is loose, the machine busy), while a call
 * started before, under none (0), keeps no deadline and completes when
 * answered.
 */
Test(rpc_ring, default_timeout_set_at_run_time, .timeout = 60)
{
	struct dprpc_agent_stats s;
	struct dprpc_future *f;
	struct dprpc_error err;
	uint64_t t0, took_ns;
	int rc;

	cr_assert_eq(dprpc_rpc_timeout(a), 60ull * 1000 * 1000, "the configuration's default");
	cr_assert_eq(dprpc_rpc_timeout_set(a, DPRPC_TIMEOUT_NONE), 0);
	cr_assert_eq(dprpc_rpc_timeout(a), 0u);
	f = dprpc_rpc_async(a, "b", "park", "x", 1, DPRPC_TIMEOUT_DEFAULT);
	cr_assert_not_null(f);
	cr_assert_eq(dprpc_rpc_timeout_set(a, 20000), 0);
	cr_assert_eq(dprpc_rpc_timeout(a), 20000u);
	t0 = clock_ns(CLOCK_MONOTONIC);
	rc = dprpc_rpc_sync(a, "b", "park", "y", 1, DPRPC_TIMEOUT_DEFAULT, NULL, NULL, &err);
	took_ns = clock_ns(CLOCK_MONOTONIC) - t0;
	cr_assert_eq(rc, -ETIMEDOUT, "rpc_sync: %d", rc);
	cr_assert_eq(err.code, -ETIMEDOUT);
	cr_assert_eq(err.origin, 0);
	cr_assert_geq(took_ns, 20000000u, "failed before its deadline: %" PRIu64 " ns", took_ns);
	cr_assert_lt(took_ns, 30000000000u, "not by the new timeout: %" PRIu64 " ns", took_ns);
	/* The first call has no deadline: still pending, answered once b
	 * holds both requests (bounded: b's lcore may lag on a busy machine). */
	for (int i = 0; i < 100000 && atomic_load(&nb_parked) < 2; i++) {
		dprpc_poll(a, 32);
		usleep(100);
	}
	cr_assert_eq(atomic_load(&nb_parked), 2u);
	cr_assert_not(dprpc_future_is_done(f));
	reply_parked("late");
	cr_assert_eq(dprpc_future_wait(f, 20 * 1000 * 1000), 0);
	cr_assert_arr_eq(dprpc_future_value(f, NULL), "late", 4);
	dprpc_future_put(f);
	/* The second's answer came after its caller gave up: stale. */
	dpt_poll_until_drops(a, DPRPC_DROP_STALE, 1, &s);
	cr_assert_eq(s.drops[DPRPC_DROP_STALE], 1u);
	cr_assert_eq(s.calls_timed_out, 1u);
	/* Refused: the default cannot be "the default"; nothing changes. */
	cr_assert_eq(dprpc_rpc_timeout_set(a, DPRPC_TIMEOUT_DEFAULT), -EINVAL);
	cr_assert_eq(dprpc_rpc_timeout(a), 20000u);
	settle_a();
}

/* The conversion of a timeout to TSC cycles saturates, and a deadline
 * beyond the TSC's range is none (0), whatever the TSC's frequency. */
Test(tsc, us_to_tsc_and_deadlines_saturate)
{
	static struct dp_base fake;
	const uint64_t hzs[] = {
		UINT64_C(1000000000), UINT64_C(2500000000), (UINT64_C(1) << 34) + 1};
	const uint64_t big = UINT64_C(1) << 40; /* 12.7 days: no overflow */

	for (unsigned int i = 0; i < RTE_DIM(hzs); i++) {
		uint64_t hz = hzs[i];

		fake.tsc_hz = hz;
		cr_assert_eq(dp_us_to_tsc(&fake, 0), 0u);
		cr_assert_eq(dp_us_to_tsc(&fake, 1000000), hz);
		cr_assert_eq(dp_us_to_tsc(&fake, big), (uint64_t)((__uint128_t)big * hz / 1000000));
		cr_assert_eq(dp_us_to_tsc(&fake, UINT64_MAX - 1), UINT64_MAX);
		cr_assert_eq(dp_us_to_tsc(&fake, UINT64_C(1) << 62), UINT64_MAX);
		cr_assert_eq(dp_us_to_tsc(&fake, UINT64_C(1) << 63), UINT64_MAX);

		cr_assert_eq(dp_deadline_tsc(&fake, 12345, 0), 0u, "0: no timeout");
		cr_assert_eq(dp_deadline_tsc(&fake, 1000, 1000000), 1000 + hz);
		cr_assert_eq(dp_deadline_tsc(&fake, UINT64_MAX - hz - 1, 1000000), UINT64_MAX - 1);
		cr_assert_eq(dp_deadline_tsc(&fake, UINT64_MAX - hz, 1000000), 0u);
		cr_assert_eq(dp_deadline_tsc(&fake, 1000, UINT64_MAX - 1), 0u);
		cr_assert_eq(dp_deadline_tsc(&fake, 1000, UINT64_C(1) << 62), 0u);
		cr_assert_eq(dp_deadline_tsc(&fake, 1000, UINT64_C(1) << 63), 0u);
	}
}

/* --- a response longer than rpc_sync's buffer is kept -------------------- */

#define BIG_LEN 4096
static atomic_uint big_runs;

static void
big_fill(uint8_t *v, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		v[i] = (uint8_t)(i * 13 + seed);
}

/* 4 KiB (three frames), counting its runs; the payload's first byte, if
 * any, seeds the bytes. */
static int
h_big(struct dprpc_request *req, void *arg)
{
	static uint8_t v[BIG_LEN];
	size_t len;
	const uint8_t *p = dprpc_request_payload(req, &len);

	(void)arg;
	atomic_fetch_add(&big_runs, 1);
	big_fill(v, sizeof(v), len > 0 ? p[0] : 7);
	return dprpc_reply(req, v, sizeof(v));
}

Test(rpc_ring, emsgsize_keeps_the_response_for_take, .timeout = 60)
{
	static uint8_t out[BIG_LEN], want[BIG_LEN];
	struct dprpc_agent_usage u;
	struct dprpc_future *f;
	uint8_t seed = 9;
	size_t len;

	cr_assert_eq(dprpc_register(b, "big", h_big, NULL, DPRPC_HANDLER_INLINE), 0);
	len = 16;
	cr_assert_eq(dprpc_rpc_sync(a, "b", "big", NULL, 0, 0, out, &len, NULL), -EMSGSIZE);
	cr_assert_eq(len, (size_t)BIG_LEN, "the length needed");
	cr_assert_eq(atomic_load(&big_runs), 1u);
	/* Still too small: said so, and still kept. */
	len = 100;
	cr_assert_eq(dprpc_rpc_sync_take(a, out, &len), -EMSGSIZE);
	cr_assert_eq(len, (size_t)BIG_LEN);
	/* Bad arguments change nothing. */
	len = 16;
	cr_assert_eq(dprpc_rpc_sync_take(NULL, out, &len), -EINVAL);
	cr_assert_eq(dprpc_rpc_sync_take(a, out, NULL), -EINVAL);
	cr_assert_eq(dprpc_rpc_sync_take(a, NULL, &len), -EINVAL);
	cr_assert_null(dprpc_rpc_sync_take_future(NULL));
	cr_assert_eq(rte_errno, EINVAL);
	/* Taken whole, the handler not run again. */
	len = sizeof(out);
	cr_assert_eq(dprpc_rpc_sync_take(a, out, &len), 0);
	cr_assert_eq(len, (size_t)BIG_LEN);
	big_fill(want, sizeof(want), 7);
	cr_assert_arr_eq(out, want, BIG_LEN);
	cr_assert_eq(atomic_load(&big_runs), 1u);
	len = sizeof(out);
	cr_assert_eq(dprpc_rpc_sync_take(a, out, &len), -ENOENT);
	cr_assert_null(dprpc_rpc_sync_take_future(a));
	cr_assert_eq(rte_errno, ENOENT);
	cr_assert_eq(dprpc_agent_usage_get(a, &u), 0);
	cr_assert_eq(u.futures, 0u, "nothing kept any more");

	/* A second -EMSGSIZE replaces (and releases) the first. */
	len = 16;
	cr_assert_eq(dprpc_rpc_sync(a, "b", "big", NULL, 0, 0, out, &len, NULL), -EMSGSIZE);
	len = 16;
	cr_assert_eq(dprpc_rpc_sync(a, "b", "big", &seed, 1, 0, out, &len, NULL), -EMSGSIZE);
	cr_assert_eq(dprpc_agent_usage_get(a, &u), 0);
	cr_assert_eq(u.futures, 1u, "one kept per thread");
	/* Zero copy: the future itself. */
	f = dprpc_rpc_sync_take_future(a);
	cr_assert_not_null(f);
	cr_assert_eq(dprpc_future_state(f), DPRPC_FUTURE_DONE);
	big_fill(want, sizeof(want), seed);
	cr_assert_arr_eq(dprpc_future_value(f, &len), want, BIG_LEN);
	cr_assert_eq(len, (size_t)BIG_LEN);
	dprpc_future_put(f);
	cr_assert_eq(atomic_load(&big_runs), 3u);
	len = 0;
	cr_assert_eq(dprpc_rpc_sync_take(a, NULL, &len), -ENOENT);
	/* rpc_sync_id keeps too. */
	len = 16;
	cr_assert_eq(dprpc_rpc_sync_id(a, 1, dprpc_handler_id("big"), NULL, 0, 0, out, &len, NULL),
		-EMSGSIZE);
	len = sizeof(out);
	cr_assert_eq(dprpc_rpc_sync_take(a, out, &len), 0);
	cr_assert_eq(len, (size_t)BIG_LEN);
	cr_assert_eq(atomic_load(&big_runs), 4u);
	cr_assert_eq(dprpc_agent_usage_get(a, &u), 0);
	cr_assert_eq(u.futures, 0u);
	settle_a();
}

/* A kept response nobody takes is released by the agent's destroy: a
 * response in one frame holds one mbuf, which comes back. */
Test(rpc_ring, kept_response_is_released_by_destroy, .timeout = 60)
{
	static uint8_t data[1000];
	struct dprpc_agent_usage u;
	unsigned int in_use;
	uint8_t out[16];
	size_t len = sizeof(out);

	cr_assert_eq(
		dprpc_rpc_sync(a, "b", "echo", data, sizeof(data), 0, out, &len, NULL), -EMSGSIZE);
	cr_assert_eq(len, sizeof(data));
	cr_assert_eq(dprpc_agent_usage_get(a, &u), 0);
	cr_assert_eq(u.futures, 1u, "kept");
	settle_a();
	in_use = rte_mempool_in_use_count(mp);
	cr_assert_eq(dprpc_agent_destroy(a), 0);
	a = NULL;
	cr_assert_eq(rte_mempool_in_use_count(mp), in_use - 1, "the kept response's mbuf");
}

/* Each thread keeps its own. */
#define KEEP_THREADS 2
static pthread_barrier_t keep_barrier;
static int keep_rc[KEEP_THREADS][3];
static size_t keep_len[KEEP_THREADS][2];
static bool keep_same[KEEP_THREADS];

static void *
keep_thread(void *arg)
{
	unsigned int t = (unsigned int)(uintptr_t)arg;
	static uint8_t outs[KEEP_THREADS][BIG_LEN], wants[KEEP_THREADS][BIG_LEN];
	uint8_t seed = (uint8_t)(t + 1), small[16];
	size_t len = sizeof(small);

	keep_rc[t][0] = dprpc_rpc_sync(a, "b", "big", &seed, 1, 0, small, &len, NULL);
	keep_len[t][0] = len;
	/* Both kept before either takes. */
	pthread_barrier_wait(&keep_barrier);
	len = sizeof(outs[t]);
	keep_rc[t][1] = dprpc_rpc_sync_take(a, outs[t], &len);
	keep_len[t][1] = len;
	big_fill(wants[t], BIG_LEN, seed);
	keep_same[t] = memcmp(outs[t], wants[t], BIG_LEN) == 0;
	len = sizeof(outs[t]);
	keep_rc[t][2] = dprpc_rpc_sync_take(a, outs[t], &len);
	return NULL;
}

Test(rpc_ring, each_thread_keeps_its_own_response, .timeout = 60)
{
	pthread_t th[KEEP_THREADS];
	struct dprpc_agent_usage u;
	uint8_t out[16];
	size_t len = sizeof(out);

	cr_assert_eq(dprpc_register(b, "big", h_big, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(pthread_barrier_init(&keep_barrier, NULL, KEEP_THREADS), 0);
	for (unsigned int t = 0; t < KEEP_THREADS; t++)
		cr_assert_eq(pthread_create(&th[t], NULL, keep_thread, (void *)(uintptr_t)t), 0);
	for (unsigned int t = 0; t < KEEP_THREADS; t++)
		pthread_join(th[t], NULL);
	pthread_barrier_destroy(&keep_barrier);
	for (unsigned int t = 0; t < KEEP_THREADS; t++) {
		cr_assert_eq(keep_rc[t][0], -EMSGSIZE, "thread %u", t);
		cr_assert_eq(keep_len[t][0], (size_t)BIG_LEN);
		cr_assert_eq(keep_rc[t][1], 0, "thread %u: take %d", t, keep_rc[t][1]);
		cr_assert_eq(keep_len[t][1], (size_t)BIG_LEN);
		cr_assert(keep_same[t], "thread %u took another thread's response", t);
		cr_assert_eq(keep_rc[t][2], -ENOENT);
	}
	cr_assert_eq(atomic_load(&big_runs), KEEP_THREADS);
	/* This thread kept nothing. */
	cr_assert_eq(dprpc_rpc_sync_take(a, out, &len), -ENOENT);
	cr_assert_eq(dprpc_agent_usage_get(a, &u), 0);
	cr_assert_eq(u.futures, 0u);
	settle_a();
}

/*
 * A peer that stops reading: the port pushes back, tx_buf fills, and the
 * calls submitted after that wait in tx_ring without a slot.  They still
 * fail with -ETIMEDOUT at their deadline, not once the port drains (here:
 * never).
 */
Test(rpc_ring, calls_queued_behind_a_full_port_still_time_out)
{
	enum { N = 2000 };
	static struct dprpc_future *fs[N];
	struct dprpc_agent_conf c;
	struct rte_mbuf *m;
	unsigned int i, failed = 0;

	cr_assert_eq(dprpc_agent_destroy(a), 0);
	dprpc_agent_conf_init(&c);
	c.name = "a";
	c.world = DPT_WORLD2;
	c.port.id = pair.port_a;
	c.port.mbuf_pool = mp;
	c.lcores.io = 3; /* every call goes through tx_ring */
	c.calls.max_outstanding = N;
	c.liveness.peer_timeout_us = 0; /* b stays UP (not EHOSTDOWN) however slow this is */
	a = dprpc_agent_create(&c);
	cr_assert_not_null(a, "%s", rte_strerror(rte_errno));
	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "x", 1, 0, NULL, NULL, NULL), 0);
	cr_assert_eq(dprpc_agent_destroy(b), 0);
	b = NULL; /* nobody reads a's frames any more: ab fills up */
	for (i = 0; i < N; i++) {
		fs[i] = dprpc_rpc_async(a, "b", "echo", "x", 1, 30000);
		if (fs[i] == NULL) {
			int e = rte_errno;

			fprintf(stderr, "mbufs avail %u in use %u\n", rte_mempool_avail_count(mp),
				rte_mempool_in_use_count(mp));
			dprpc_agent_dump(a, stderr);
			cr_assert_fail("call %u: %s", i, rte_strerror(e));
		}
	}
	for (i = 0; i < N; i++) {
		/* The wait's own limit only keeps a regression from hanging. */
		(void)dprpc_future_wait(fs[i], 5 * 1000 * 1000);
		cr_assert_eq(dprpc_future_state(fs[i]), DPRPC_FUTURE_FAILED, "call %u pending", i);
		failed += dprpc_future_error(fs[i])->code == -ETIMEDOUT;
		dprpc_future_put(fs[i]);
	}
	cr_assert_eq(failed, (unsigned int)N);
	cr_assert_eq(dprpc_agent_destroy(a), 0);
	a = NULL;
	while (rte_ring_dequeue(pair.ab, (void **)&m) == 0)
		rte_pktmbuf_free(m);
}

/*
 * A peer that stopped reading answers nothing: a silent peer gets one
 * resend per resend timeout, a probe, not one per call (dp_slot_lost()).
 * Every call resending on its own timer filled the port's ring with
 * resends (thousands for 1600 calls within tens of ms), and calls
 * submitted then failed -ENOBUFS instead of timing out.  Here, however
 * long the test runs, the resends tried stay within one per 100 us timer
 * period; the later calls are all taken, and every call times out.
 */
Test(rpc_ring, a_silent_peer_gets_probes_not_a_storm_of_resends)
{
	enum { N1 = 1600, N2 = 1000 };
	static struct dprpc_future *fs[N1 + N2];
	struct dprpc_agent_stats s = {0};
	struct dprpc_agent_conf c;
	unsigned int i, failed = 0;
	uint64_t t0, us;

	cr_assert_eq(dprpc_agent_destroy(a), 0);
	dprpc_agent_conf_init(&c);
	c.name = "a";
	c.world = DPT_WORLD2;
	c.port.id = pair.port_a;
	c.port.mbuf_pool = mp;
	c.lcores.io = 3;
	c.calls.max_outstanding = N1 + N2;
	c.liveness.peer_timeout_us = 0; /* b stays UP however long this takes */
	a = dprpc_agent_create(&c);
	cr_assert_not_null(a, "%s", rte_strerror(rte_errno));
	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "x", 1, 0, NULL, NULL, NULL), 0);
	cr_assert_eq(dprpc_agent_destroy(b), 0);
	b = NULL; /* nobody reads a's frames any more: ab fills up */
	t0 = rte_rdtsc();
	for (i = 0; i < N1; i++) {
		fs[i] = dprpc_rpc_async(a, "b", "echo", "x", 1, 10 * 1000 * 1000);
		cr_assert_not_null(fs[i], "call %u: %s", i, rte_strerror(rte_errno));
	}
	/* A few probes (events; the calls' 10 s bound only keeps a
	 * regression from hanging), then 50 ms more. */
	while (dprpc_future_state(fs[0]) == DPRPC_FUTURE_PENDING) {
		cr_assert_eq(dprpc_agent_stats_get(a, &s), 0);
		if (s.retransmits + s.tx_dropped >= 3)
			break;
		usleep(1000);
	}
	usleep(50000);
	cr_assert_eq(dprpc_agent_stats_get(a, &s), 0);
	us = (rte_rdtsc() - t0) * 1000000 / rte_get_tsc_hz();
	cr_assert_geq(s.retransmits + s.tx_dropped, 3u);
	cr_assert_leq(s.retransmits + s.tx_dropped, us / 100 + 1,
		"%" PRIu64 " resends tried in %" PRIu64 " us", s.retransmits + s.tx_dropped, us);
	for (i = N1; i < N1 + N2; i++) {
		fs[i] = dprpc_rpc_async(a, "b", "echo", "x", 1, 30000);
		if (fs[i] == NULL) {
			int e = rte_errno;

			dprpc_agent_dump(a, stderr);
			cr_assert_fail("call %u: %s", i, rte_strerror(e));
		}
	}
	for (i = 0; i < N1 + N2; i++) {
		(void)dprpc_future_wait(fs[i], 30 * 1000 * 1000); /* only against a hang */
		cr_assert_eq(dprpc_future_state(fs[i]), DPRPC_FUTURE_FAILED, "call %u pending", i);
		failed += dprpc_future_error(fs[i])->code == -ETIMEDOUT;
		dprpc_future_put(fs[i]);
	}
	cr_assert_eq(failed, (unsigned int)(N1 + N2));
	cr_assert_eq(dprpc_agent_destroy(a), 0);
	a = NULL;
	dpt_ring_drain(pair.ab);
}

/*
 * More application threads than CPUs, none of them an EAL lcore, calling
 * at once through an agent with its own pools.  Each is registered with
 * EAL by its first call (mempool caches) and unregistered when it exits;
 * a thread preempted in the middle of a pool operation must not make
 * another one lose an object.  Afterwards nothing is in use.
 */
#define OVERSUB_THREADS 8
#define OVERSUB_CALLS	1500
#define OVERSUB_WINDOW	8

static atomic_uint oversub_failed, oversub_no_lcore;
static atomic_int oversub_code;

static void *
oversub_caller(void *arg)
{
	struct dprpc_future *fs[OVERSUB_WINDOW];
	unsigned int i, j;

	(void)arg;
	for (i = 0; i < OVERSUB_CALLS / OVERSUB_WINDOW; i++) {
		for (j = 0; j < OVERSUB_WINDOW; j++)
			fs[j] = dprpc_rpc_async(a, "b", "echo", "x", 1, 0);
		for (j = 0; j < OVERSUB_WINDOW; j++) {
			if (fs[j] == NULL) {
				atomic_store(&oversub_code, -rte_errno);
				atomic_fetch_add(&oversub_failed, 1);
				continue;
			}
			if (dprpc_future_wait(fs[j], 0) != 0) {
				atomic_store(&oversub_code, dprpc_future_error(fs[j])->code);
				atomic_fetch_add(&oversub_failed, 1);
			}
			dprpc_future_put(fs[j]);
		}
	}
	/* Registered with EAL by its first call: it has mempool caches. */
	if (rte_lcore_id() == LCORE_ID_ANY)
		atomic_fetch_add(&oversub_no_lcore, 1);
	return NULL;
}

Test(rpc_ring, unpinned_threads_share_the_agents_own_pools, .timeout = 120)
{
	struct dprpc_agent_conf c;
	struct dprpc_agent_usage u;
	pthread_t th[OVERSUB_THREADS];
	unsigned int k, lcores = rte_lcore_count();

	cr_assert_eq(dprpc_agent_destroy(a), 0);
	dprpc_agent_conf_init(&c);
	c.name = "a";
	c.world = DPT_WORLD2;
	c.port.id = pair.port_a;
	c.calls.max_outstanding = OVERSUB_THREADS * OVERSUB_WINDOW;
	a = dprpc_agent_create(&c); /* its own mbuf pool */
	cr_assert_not_null(a, "%s", rte_strerror(rte_errno));
	atomic_store(&oversub_failed, 0);
	atomic_store(&oversub_no_lcore, 0);
	for (k = 0; k < OVERSUB_THREADS; k++)
		cr_assert_eq(pthread_create(&th[k], NULL, oversub_caller, NULL), 0);
	for (k = 0; k < OVERSUB_THREADS; k++)
		pthread_join(th[k], NULL);
	if (atomic_load(&oversub_failed) != 0) {
		dprpc_agent_dump(a, stderr);
		dprpc_agent_dump(b, stderr);
	}
	cr_assert_eq(atomic_load(&oversub_failed), 0u, "%u calls failed, the last %d",
		atomic_load(&oversub_failed), atomic_load(&oversub_code));
	cr_assert_eq(atomic_load(&oversub_no_lcore), 0u);
	/* Unregistered as they exited; what their caches hold is counted
	 * as available, not in use. */
	cr_assert_eq(rte_lcore_count(), lcores);
	cr_assert_eq(dprpc_agent_usage_get(a, &u), 0);
	cr_assert_eq(u.futures, 0u);
	cr_assert_eq(u.calls, 0u);
	/* What is still on the wire comes back: a resend of a's (b late past
	 * a's resend timeout on a loaded machine) that b has not read and
	 * freed yet.  Bounded (~10 s). */
	for (int i = 0; i < 100000 && u.mbufs != 0; i++) {
		usleep(100);
		cr_assert_eq(dprpc_agent_usage_get(a, &u), 0);
	}
	cr_assert_eq(u.mbufs, 0u, "%u mbufs lost", u.mbufs);
}

/*
 * The lcore id whose mempool caches the library's own gets and puts use
 * (dprpc_lcore.h) is the thread's only while it stays the thread's: an EAL
 * lcore's and one the library registered are kept; one the application
 * registered itself is asked for at each use, so that the application can
 * take it back and go on calling, then through the pool's ring.
 */
struct lcore_seen {
	uint32_t cached_ours, id_ours;
	uint32_t cached_app, cached_after_unregister, id_after_unregister;
	int rc_ours, rc_app, rc_after;
};

static int
lcore_call(void)
{
	char out[8];
	size_t out_len = sizeof(out);

	return dprpc_rpc_sync(a, "b", "echo", "x", 1, 0, out, &out_len, NULL);
}

static void *
lcore_thread_ours(void *arg)
{
	struct lcore_seen *s = arg;

	s->rc_ours = lcore_call(); /* registered by the library */
	s->cached_ours = dprpc_tls_lcore_id;
	s->id_ours = rte_lcore_id();
	return NULL;
}

static void *
lcore_thread_app(void *arg)
{
	struct lcore_seen *s = arg;

	if (rte_thread_register() != 0)
		return NULL;
	s->rc_app = lcore_call();
	s->cached_app = dprpc_tls_lcore_id;
	rte_thread_unregister(); /* the application takes its id back */
	s->rc_after = lcore_call();
	s->cached_after_unregister = dprpc_tls_lcore_id;
	s->id_after_unregister = rte_lcore_id();
	return NULL;
}

Test(rpc_ring, a_thread_s_cached_lcore_id_is_one_it_keeps)
{
	struct lcore_seen s = {.rc_ours = 1, .rc_app = 1, .rc_after = 1};
	struct dprpc_agent_usage u;
	unsigned int lcores = rte_lcore_count();
	pthread_t th;

	/* The main lcore: EAL's, fixed. */
	cr_assert_eq(lcore_call(), 0);
	cr_assert_eq(dprpc_tls_lcore_id, rte_lcore_id());
	cr_assert_eq(pthread_create(&th, NULL, lcore_thread_ours, &s), 0);
	pthread_join(th, NULL);
	cr_assert_eq(s.rc_ours, 0);
	cr_assert_neq(s.id_ours, LCORE_ID_ANY);
	cr_assert_eq(s.cached_ours, s.id_ours);
	cr_assert_eq(pthread_create(&th, NULL, lcore_thread_app, &s), 0);
	pthread_join(th, NULL);
	cr_assert_eq(s.rc_app, 0);
	cr_assert_eq(s.cached_app, DPRPC_LCORE_ASK);
	cr_assert_eq(s.rc_after, 0);
	cr_assert_eq(s.cached_after_unregister, DPRPC_LCORE_ASK);
	cr_assert_eq(s.id_after_unregister, LCORE_ID_ANY);
	/* Both ids given back; nothing left in use. */
	cr_assert_eq(rte_lcore_count(), lcores);
	cr_assert_eq(dprpc_agent_usage_get(a, &u), 0);
	cr_assert_eq(u.futures, 0u);
	cr_assert_eq(u.calls, 0u);
}

/*
 * Timeouts while the poller stalls.  The test thread takes the poll flag
 * and keeps it, as a poller taken off the CPU would: the timer does not
 * run.  A call's waiter fails it at its deadline all the same, and so does
 * any thread waiting on the agent for a call that only has a callback.
 */
struct stall_wait {
	struct dprpc_future *f;
	uint64_t wait_us;
	int rc;
};

static void *
stall_waiter(void *arg)
{
	struct stall_wait *w = arg;

	w->rc = dprpc_future_wait(w->f, w->wait_us);
	return NULL;
}

static atomic_int stall_cb_code;
static atomic_bool stall_cb_on_poller;

static void
stall_cb(struct dprpc_future *f, void *arg)
{
	(void)arg;
	atomic_store(&stall_cb_on_poller, dp_on_poller(a));
	atomic_store(&stall_cb_code, dprpc_future_error(f)->code);
}

Test(rpc_ring, waiter_fails_its_call_at_the_deadline_while_the_poller_stalls)
{
	struct stall_wait w = {.wait_us = 10 * 1000 * 1000};
	pthread_t t;

	cr_assert(dp_poll_trylock(dp_base_of(a))); /* the stalled poller */
	/* The flag is held: the call waits in tx_ring, without a slot. */
	w.f = dprpc_rpc_async(a, "b", "echo", "x", 1, 20000);
	cr_assert_not_null(w.f);
	cr_assert_eq(pthread_create(&t, NULL, stall_waiter, &w), 0);
	pthread_join(t, NULL);
	cr_assert_eq(w.rc, -ETIMEDOUT);
	cr_assert_eq(dprpc_future_state(w.f), DPRPC_FUTURE_FAILED);
	cr_assert_eq(dprpc_future_error(w.f)->origin, 0);
	cr_assert_str_eq(dprpc_future_error(w.f)->msg, "call to b timed out");
	dp_poll_unlock(dp_base_of(a));
	dprpc_future_put(w.f);
	/* The poller starts it now and drops the answer: nothing is left. */
	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "y", 1, 0, NULL, NULL, NULL), 0);
}

Test(rpc_ring, stalled_poller_calls_fail_at_their_deadline_from_a_waiting_thread)
{
	/* Long past cb_only's deadline, had this thread to wait for its CPU. */
	struct stall_wait w = {.wait_us = 1000 * 1000};
	struct dprpc_future *cb_only;
	pthread_t t;
	unsigned int i;

	atomic_store(&stall_cb_code, 0);
	/* Started by this thread (caller-driven, the flag is free): it holds a
	 * slot; b parks it, so only its deadline ends it.  It has a callback
	 * and nobody waits on it. */
	cb_only = dprpc_rpc_async(a, "b", "park", "x", 1, 20000);
	cr_assert_not_null(cb_only);
	cr_assert_eq(dprpc_future_add_callback(cb_only, stall_cb, NULL), 0);
	cr_assert(dp_poll_trylock(dp_base_of(a))); /* the stalled poller */
	/* Another thread waits on another call of the agent (in tx_ring). */
	w.f = dprpc_rpc_async(a, "b", "echo", "z", 1, 0);
	cr_assert_not_null(w.f);
	cr_assert_eq(pthread_create(&t, NULL, stall_waiter, &w), 0);
	pthread_join(t, NULL);
	cr_assert_eq(w.rc, -ETIMEDOUT); /* the wait's own limit: no poller */
	cr_assert_eq(dprpc_future_state(w.f), DPRPC_FUTURE_PENDING);
	cr_assert_eq(atomic_load(&stall_cb_code), -ETIMEDOUT);
	cr_assert(!atomic_load(&stall_cb_on_poller));
	cr_assert_str_eq(dprpc_future_error(cb_only)->msg, "call to b timed out");
	dp_poll_unlock(dp_base_of(a));
	/* The poller runs again: the echo completes, the timer frees the slot
	 * of the failed call (its failure stays the one seen). */
	cr_assert_eq(dprpc_future_wait(w.f, 0), 0);
	dprpc_future_put(w.f);
	for (i = 0; i < 20000 && atomic_load(&nb_parked) < 1; i++) {
		dprpc_poll(a, 32);
		usleep(100);
	}
	reply_parked("late");
	dprpc_future_put(cb_only);
	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "y", 1, 0, NULL, NULL, NULL), 0);
}
