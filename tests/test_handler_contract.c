/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The API contract under misuse, between two agents in one process over a
 * net_ring pair: a is the caller (caller-driven progress, no resends), b
 * serves on io lcore 1 with a handler pool on lcore 2.
 *
 * handler_contract: handlers that break dprpc_handler_fn_t (reply and fail,
 * return without replying, reply twice, return a stray value), inline and
 * pool: the caller gets exactly one answer, the misuse is counted once, a
 * second reply is -EALREADY, nothing leaks and b is destroyed.
 *
 * destroy_refused: a refused dprpc_agent_destroy() leaves the agent as it
 * was: RRef values pending stay pending, the lcores run.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <criterion/criterion.h>

#include <rte_errno.h>
#include <rte_lcore.h>

#include "dpt.h"

static struct dpt_ring_pair pair;
static struct rte_mempool *mp;
static struct dprpc_agent *a, *b;

/* Requests kept by the handlers, for the test to answer. */
static struct dprpc_request *_Atomic parked[8];
static atomic_uint nb_parked;
/* What the second reply of a handler (or of its thread) returned. */
static _Atomic int second_rc[8];
static atomic_uint nb_second;
static atomic_uint pool_lcore_seen;

static void
record_second(int rc)
{
	unsigned int i = atomic_fetch_add(&nb_second, 1);

	if (i < RTE_DIM(second_rc))
		atomic_store(&second_rc[i], rc);
}

/* Replies, then fails: the reply stands. */
static int
h_reply_then_eio(struct dprpc_request *req, void *arg)
{
	(void)arg;
	if (dprpc_reply(req, "ok", 2) != 0)
		return -ENOBUFS;
	return -EIO;
}

/* Returns 0 without replying or deferring. */
static int
h_no_reply(struct dprpc_request *req, void *arg)
{
	(void)req;
	(void)arg;
	return 0;
}

/* Replies twice. */
static int
h_reply_twice(struct dprpc_request *req, void *arg)
{
	int rc = dprpc_reply(req, "one", 3);

	(void)arg;
	record_second(dprpc_reply_error(req, -EPERM, "two"));
	return rc;
}

/* Returns a value that is none of 0, DPRPC_DEFERRED, an errno; replies
 * first if @arg is not NULL. */
static int
h_positive(struct dprpc_request *req, void *arg)
{
	if (arg != NULL && dprpc_reply(req, "ok", 2) != 0)
		return -ENOBUFS;
	return 7;
}

/* Keeps the request for the test. */
static int
h_park(struct dprpc_request *req, void *arg)
{
	unsigned int i = atomic_load(&nb_parked);

	(void)arg;
	if (i >= RTE_DIM(parked))
		return -ENOSPC;
	atomic_store(&parked[i], req);
	atomic_store(&nb_parked, i + 1); /* one handler runs at a time here */
	return DPRPC_DEFERRED;
}

/* Inline on the poller: answers the first parked request. */
static int
h_answer_parked(struct dprpc_request *req, void *arg)
{
	(void)arg;
	record_second(dprpc_reply(atomic_load(&parked[0]), "first", 5));
	return dprpc_reply(req, NULL, 0);
}

static void *
reply_twice_thread(void *arg)
{
	struct dprpc_request *req = arg;

	if (dprpc_reply(req, "thread", 6) != 0)
		record_second(-1000); /* the first reply must succeed */
	record_second(dprpc_reply(req, "again", 5));
	return NULL;
}

/* Defers to a thread that replies twice while the handler still runs
 * (joined before it returns: a test may block a handler). */
static int
h_defer_to_thread(struct dprpc_request *req, void *arg)
{
	pthread_t th;

	(void)arg;
	if (pthread_create(&th, NULL, reply_twice_thread, req) != 0)
		return -EAGAIN;
	pthread_join(th, NULL);
	return DPRPC_DEFERRED;
}

static int
h_pool_echo(struct dprpc_request *req, void *arg)
{
	atomic_store(&pool_lcore_seen, rte_lcore_id());
	return dpt_echo(req, arg);
}

/* Proxy: the RRef's value (a uint64) plus the argument (a uint64). */
static int
h_add(struct dprpc_request *req, void *arg)
{
	size_t vlen, alen;
	const uint64_t *v = dprpc_request_rref_value(req, &vlen);
	const uint64_t *x = dprpc_request_payload(req, &alen);
	uint64_t sum;

	(void)arg;
	if (v == NULL || vlen != sizeof(*v) || alen != sizeof(*x))
		return -EINVAL;
	sum = *v + *x;
	return dprpc_reply(req, &sum, sizeof(sum));
}

static const struct {
	const char *name;
	dprpc_handler_fn_t fn;
	void *arg;
} handlers[] = {
	{"reply_then_eio", h_reply_then_eio, NULL},
	{"no_reply", h_no_reply, NULL},
	{"reply_twice", h_reply_twice, NULL},
	{"positive", h_positive, NULL},
	{"reply_then_positive", h_positive, (void *)1},
	{"park", h_park, NULL},
	{"defer_to_thread", h_defer_to_thread, NULL},
};

static struct dprpc_agent *
make_agent(const char *name, int port, bool server, const struct dprpc_fault_conf *ftx)
{
	struct dprpc_agent_conf c;
	struct dprpc_agent *ag;

	dprpc_agent_conf_init(&c);
	c.name = name;
	c.world = DPT_WORLD2;
	c.port.id = port;
	c.port.mbuf_pool = mp;
	/* No resends, no keep-alives: every frame is a call or its one
	 * answer, so a second answer would show as a stale response. */
	c.calls.retransmit_us = 0;
	c.liveness.keepalive_us = 0;
	c.liveness.peer_timeout_us = 0;
	if (ftx != NULL)
		c.faults.tx = *ftx;
	if (server) {
		c.lcores.io = 1;
		c.lcores.nb_pool = 1;
		c.lcores.pool[0] = 2;
	}
	ag = dprpc_agent_create(&c);
	cr_assert_not_null(ag, "agent %s: %s", name, rte_strerror(rte_errno));
	return ag;
}

static void
start(const struct dprpc_fault_conf *ftx_a)
{
	char name[64];
	unsigned int i;

	cr_assert_geq(dpt_eal_init("hc"), 0);
	mp = dpt_pool_and_pair("dpt_mp", 8191, &pair);
	cr_assert_not_null(mp);
	a = make_agent("a", pair.port_a, false, ftx_a);
	b = make_agent("b", pair.port_b, true, NULL);
	for (i = 0; i < RTE_DIM(handlers); i++) {
		cr_assert_eq(dprpc_register(b, handlers[i].name, handlers[i].fn, handlers[i].arg,
				     DPRPC_HANDLER_INLINE),
			0);
		snprintf(name, sizeof(name), "%s_pool", handlers[i].name);
		cr_assert_eq(dprpc_register(
				     b, name, handlers[i].fn, handlers[i].arg, DPRPC_HANDLER_POOL),
			0);
	}
	cr_assert_eq(dprpc_register(b, "echo", dpt_echo, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(b, "pool_echo", h_pool_echo, NULL, DPRPC_HANDLER_POOL), 0);
	cr_assert_eq(
		dprpc_register(b, "answer_parked", h_answer_parked, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(b, "add", h_add, NULL, DPRPC_HANDLER_INLINE), 0);
}

static void
setup(void)
{
	start(NULL);
}

/* Wait (bounded, ~5 s) until b holds no request object: a pool handler's
 * run may end after its caller has the answer. */
static unsigned int
b_requests(void)
{
	struct dprpc_agent_usage u = {0};

	for (int i = 0; i < 50000; i++) {
		cr_assert_eq(dprpc_agent_usage_get(b, &u), 0);
		if (u.requests == 0)
			break;
		usleep(100);
	}
	return u.requests;
}

/* Nothing leaked; both agents destroyed. */
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
		cr_expect_eq(b_requests(), 0u, "requests leaked on b");
		cr_assert_eq(dprpc_agent_destroy(b), 0);
	}
	a = b = NULL;
	dpt_ring_drain(pair.ab);
	dpt_ring_drain(pair.ba);
	cr_expect_eq(
		rte_mempool_in_use_count(mp), 0u, "mbufs leaked: %u", rte_mempool_in_use_count(mp));
	dpt_eal_cleanup();
}

TestSuite(handler_contract, .init = setup, .fini = teardown, .timeout = 60);

/* Call @h on b; the timeout only bounds a failure of this test. */
static int
call(const char *h, char *out, size_t *out_len, struct dprpc_error *err)
{
	return dprpc_rpc_sync(a, "b", h, "x", 1, 5000 * 1000, out, out_len, err);
}

static void
call_expect_value(const char *h, const char *want)
{
	char out[64];
	size_t len = sizeof(out);
	struct dprpc_error err = {0};
	int rc = call(h, out, &len, &err);

	cr_assert_eq(rc, 0, "%s: %d (%s)", h, rc, err.msg);
	cr_assert_eq(len, strlen(want), "%s", h);
	cr_assert_arr_eq(out, want, len, "%s", h);
}

static void
call_expect_eproto(const char *h, const char *says)
{
	char out[64];
	size_t len = sizeof(out);
	struct dprpc_error err = {0};
	int rc = call(h, out, &len, &err);

	cr_assert_eq(rc, -EPROTO, "%s: %d (%s)", h, rc, err.msg);
	cr_assert_eq(err.origin, 1u);
	cr_assert(strstr(err.msg, says) != NULL, "%s: %s", h, err.msg);
}

/*
 * The caller got exactly one answer per call: two more calls, one after
 * the other, go the same way as any second answer would have gone (b's
 * poller sends what its handlers and threads submitted before it saw the
 * second call), so a second answer has reached a and been counted stale
 * by then.  a's calls: @ok plus the two, and @failed.
 */
static void
expect_one_answer_each(uint64_t ok, uint64_t failed)
{
	struct dprpc_agent_stats s;

	call_expect_value("echo", "x");
	call_expect_value("echo", "x");
	cr_assert_eq(dprpc_agent_stats_get(a, &s), 0);
	cr_assert_eq(s.drops[DPRPC_DROP_STALE], 0u, "a second answer reached the caller");
	cr_assert_eq(s.calls_ok, ok + 2);
	cr_assert_eq(s.calls_failed, failed);
	cr_assert_eq(b_requests(), 0u, "requests leaked on b");
}

/* b's contract counters, once they reach @total (bounded wait: a handler
 * lcore counts after its caller may have the answer). */
static void
expect_misuse(uint64_t again, uint64_t unanswered, uint64_t error_after, uint64_t bad)
{
	uint64_t total = again + unanswered + error_after + bad;
	struct dprpc_agent_stats s;

	for (int i = 0; i < 50000; i++) {
		cr_assert_eq(dprpc_agent_stats_get(b, &s), 0);
		if (s.handler_misuse >= total)
			break;
		usleep(100);
	}
	cr_assert_eq(s.reply_again, again);
	cr_assert_eq(s.handler_unanswered, unanswered);
	cr_assert_eq(s.handler_error_after_reply, error_after);
	cr_assert_eq(s.handler_bad_return, bad);
	cr_assert_eq(s.handler_misuse, total);
}

Test(handler_contract, reply_then_error_sends_nothing_more)
{
	call_expect_value("reply_then_eio", "ok");
	call_expect_value("reply_then_eio_pool", "ok");
	expect_one_answer_each(2, 0);
	expect_misuse(0, 0, 2, 0);
}

Test(handler_contract, return_without_reply_is_answered_eproto)
{
	call_expect_eproto("no_reply", "'no_reply' on worker b returned without replying");
	call_expect_eproto(
		"no_reply_pool", "'no_reply_pool' on worker b returned without replying");
	expect_one_answer_each(0, 2);
	expect_misuse(0, 2, 0, 0);
}

Test(handler_contract, second_reply_in_the_handler_is_ealready)
{
	call_expect_value("reply_twice", "one");
	call_expect_value("reply_twice_pool", "one");
	expect_one_answer_each(2, 0);
	expect_misuse(2, 0, 0, 0);
	cr_assert_eq(atomic_load(&nb_second), 2u);
	cr_assert_eq(atomic_load(&second_rc[0]), -EALREADY);
	cr_assert_eq(atomic_load(&second_rc[1]), -EALREADY);
}

Test(handler_contract, stray_positive_return_is_answered_eproto)
{
	call_expect_eproto("positive", "returned 7");
	call_expect_eproto("positive_pool", "returned 7");
	/* Replied first: the reply stands, the return is counted. */
	call_expect_value("reply_then_positive", "ok");
	call_expect_value("reply_then_positive_pool", "ok");
	expect_one_answer_each(2, 2);
	expect_misuse(0, 0, 0, 4);
}

/* Deferred, then answered twice from the test's thread: the second finds
 * the request answered (its object back in the pool, not handed out
 * again). */
Test(handler_contract, second_reply_after_deferral_is_ealready)
{
	static const char *const names[] = {"park", "park_pool"};
	struct dprpc_future *f;
	struct dprpc_request *req;
	size_t len;
	unsigned int i;

	for (i = 0; i < 2; i++) {
		f = dprpc_rpc_async(a, "b", names[i], "x", 1, 5000 * 1000);
		cr_assert_not_null(f);
		for (int k = 0; k < 50000 && atomic_load(&nb_parked) == i; k++) {
			dprpc_poll(a, 32);
			usleep(100);
		}
		cr_assert_eq(atomic_load(&nb_parked), i + 1);
		req = atomic_load(&parked[i]);
		cr_assert_eq(dprpc_reply(req, "late", 4), 0);
		cr_assert_eq(dprpc_reply(req, "again", 5), -EALREADY);
		cr_assert_eq(dprpc_reply_error(req, -EIO, "and again"), -EALREADY);
		cr_assert_eq(dprpc_future_wait(f, 5000 * 1000), 0);
		cr_assert_eq(dprpc_future_state(f), DPRPC_FUTURE_DONE);
		cr_assert_arr_eq(dprpc_future_value(f, &len), "late", 4);
		cr_assert_eq(len, 4u);
		dprpc_future_put(f);
	}
	expect_one_answer_each(2, 0);
	expect_misuse(4, 0, 0, 0);
}

/* Deferred to a thread that answers twice while the handler still runs. */
Test(handler_contract, second_reply_from_another_thread_is_ealready)
{
	call_expect_value("defer_to_thread", "thread");
	call_expect_value("defer_to_thread_pool", "thread");
	expect_one_answer_each(2, 0);
	expect_misuse(2, 0, 0, 0);
	cr_assert_eq(atomic_load(&nb_second), 2u);
	cr_assert_eq(atomic_load(&second_rc[0]), -EALREADY);
	cr_assert_eq(atomic_load(&second_rc[1]), -EALREADY);
}

/* A late reply on a request answered on the poller (its object back in the
 * pool there) does not answer the next deferred request: the pool hands
 * the object out again only after every other free one. */
Test(handler_contract, late_reply_does_not_answer_a_later_request)
{
	struct dprpc_future *f1, *f2;
	struct dprpc_request *first;
	size_t len;

	f1 = dprpc_rpc_async(a, "b", "park", "x", 1, 5000 * 1000);
	cr_assert_not_null(f1);
	for (int k = 0; k < 50000 && atomic_load(&nb_parked) == 0; k++) {
		dprpc_poll(a, 32);
		usleep(100);
	}
	cr_assert_eq(atomic_load(&nb_parked), 1u);
	first = atomic_load(&parked[0]);
	call_expect_value("answer_parked", "");
	cr_assert_eq(atomic_load(&nb_second), 1u);
	cr_assert_eq(atomic_load(&second_rc[0]), 0);
	cr_assert_eq(dprpc_future_wait(f1, 5000 * 1000), 0);
	cr_assert_eq(dprpc_future_state(f1), DPRPC_FUTURE_DONE);
	cr_assert_arr_eq(dprpc_future_value(f1, &len), "first", 5);
	dprpc_future_put(f1);

	f2 = dprpc_rpc_async(a, "b", "park", "y", 1, 5000 * 1000);
	cr_assert_not_null(f2);
	for (int k = 0; k < 50000 && atomic_load(&nb_parked) == 1; k++) {
		dprpc_poll(a, 32);
		usleep(100);
	}
	cr_assert_eq(atomic_load(&nb_parked), 2u);
	cr_assert_neq(atomic_load(&parked[1]), first, "the freed object was handed out again");
	cr_assert_eq(dprpc_reply(first, "stale", 5), -EALREADY);
	cr_assert_eq(dprpc_reply(atomic_load(&parked[1]), "second", 6), 0);
	cr_assert_eq(dprpc_future_wait(f2, 5000 * 1000), 0);
	cr_assert_eq(dprpc_future_state(f2), DPRPC_FUTURE_DONE);
	cr_assert_arr_eq(dprpc_future_value(f2, &len), "second", 6);
	cr_assert_eq(len, 6u);
	dprpc_future_put(f2);
	expect_one_answer_each(3, 0);
	expect_misuse(1, 0, 0, 0);
}

/* --- destroy_refused ---------------------------------------------------- */

TestSuite(destroy_refused, .init = setup, .fini = teardown, .timeout = 60);

static struct dprpc_rref_debug
dbg(struct dprpc_agent *x)
{
	struct dprpc_rref_debug d;

	cr_assert_eq(dprpc_rref_debug_get(x, &d), 0);
	return d;
}

/* Wait (bounded, ~5 s) until b holds @n request objects. */
static void
wait_b_requests(unsigned int n)
{
	struct dprpc_agent_usage u = {0};

	for (int i = 0; i < 50000; i++) {
		cr_assert_eq(dprpc_agent_usage_get(b, &u), 0);
		if (u.requests == n)
			return;
		dprpc_poll(a, 32);
		usleep(100);
	}
	cr_assert_fail("b holds %u requests, expected %u", u.requests, n);
}

/* Poll a (bounded, ~5 s) until it has @n calls in flight. */
static void
wait_a_calls(unsigned int n)
{
	struct dprpc_agent_usage u = {0};

	for (int i = 0; i < 50000; i++) {
		dprpc_poll(a, 32);
		cr_assert_eq(dprpc_agent_usage_get(a, &u), 0);
		if (u.calls == n && u.futures == n)
			return;
		usleep(100);
	}
	cr_assert_fail("a has %u calls and %u futures, expected %u", u.calls, u.futures, n);
}

/*
 * b owns an RRef whose value is pending: its creating handler deferred
 * (the application keeps that request), and a proxy call waits on the
 * value.  destroy(b) is refused, and b is left as it was: the value is
 * not failed, the proxy still waits, both lcores run (a pool handler
 * answers); once the application answers, the value is there for
 * to_here and the proxy, and b is destroyed.
 */
Test(destroy_refused, leaves_rref_values_pending_and_lcores_running)
{
	uint64_t forty = 40, two = 2, v = 0;
	struct dprpc_rref *r = dprpc_remote(a, "b", "park", NULL, 0, 5000 * 1000);
	struct dprpc_future *proxy;
	struct dprpc_error err = {0};
	size_t len = sizeof(v);
	int rc;

	cr_assert_not_null(r, "remote: %s", rte_strerror(rte_errno));
	proxy = dprpc_rref_rpc_async(r, "add", &two, sizeof(two), 5000 * 1000);
	cr_assert_not_null(proxy);
	/* The creating request (kept by "park") and the proxy (kept by the
	 * RRef extension until the value is there). */
	wait_b_requests(2);
	cr_assert_eq(atomic_load(&nb_parked), 1u);
	cr_assert_eq(dbg(b).num_owner_rrefs, 1u);

	cr_assert_eq(dprpc_agent_destroy(b), -EBUSY);

	/* The lcores run: the pool handler and the io lcore answer. */
	call_expect_value("pool_echo", "x");
	cr_assert_eq(atomic_load(&pool_lcore_seen), 2u);
	call_expect_value("echo", "x");
	cr_assert_not(dprpc_future_is_done(proxy), "the pending value was failed");
	wait_b_requests(2);

	/* The value is completed and read as if nothing had happened. */
	cr_assert_eq(dprpc_reply(atomic_load(&parked[0]), &forty, sizeof(forty)), 0);
	rc = dprpc_rref_to_here(r, 5000 * 1000, &v, &len, &err);
	cr_assert_eq(rc, 0, "to_here: %d (%s)", rc, err.msg);
	cr_assert_eq(len, sizeof(v));
	cr_assert_eq(v, 40u);
	cr_assert_eq(dprpc_future_wait(proxy, 5000 * 1000), 0);
	cr_assert_eq(dprpc_future_state(proxy), DPRPC_FUTURE_DONE, "%s",
		dprpc_future_error(proxy) != NULL ? dprpc_future_error(proxy)->msg : "");
	cr_assert_eq(*(const uint64_t *)dprpc_future_value(proxy, NULL), 42u);
	dprpc_future_put(proxy);
	cr_assert_eq(dprpc_rref_release(r), 0);
	for (int i = 0; i < 50000 && dbg(b).num_owner_rrefs != 0; i++) {
		dprpc_poll(a, 32);
		usleep(100);
	}
	cr_assert_eq(dbg(b).num_owner_rrefs, 0u);
	wait_b_requests(0);
	wait_a_calls(0); /* the DELETE's answer */
	cr_assert_eq(dprpc_agent_destroy(b), 0);
	b = NULL;
}

/* A deferred request alone: refused while it is kept, destroyed once it is
 * answered; the refusal changed nothing (no misuse, nothing answered). */
Test(destroy_refused, then_destroyed_once_answered)
{
	struct dprpc_future *f = dprpc_rpc_async(a, "b", "park_pool", "x", 1, 5000 * 1000);
	struct dprpc_agent_stats s;
	size_t len;

	cr_assert_not_null(f);
	for (int i = 0; i < 50000 && atomic_load(&nb_parked) == 0; i++) {
		dprpc_poll(a, 32);
		usleep(100);
	}
	cr_assert_eq(atomic_load(&nb_parked), 1u);
	cr_assert_eq(dprpc_agent_destroy(b), -EBUSY);
	cr_assert_eq(dprpc_agent_destroy(b), -EBUSY);
	call_expect_value("pool_echo", "x");
	cr_assert_not(dprpc_future_is_done(f));
	cr_assert_eq(dprpc_reply(atomic_load(&parked[0]), "done", 4), 0);
	cr_assert_eq(dprpc_future_wait(f, 5000 * 1000), 0);
	cr_assert_arr_eq(dprpc_future_value(f, &len), "done", 4);
	dprpc_future_put(f);
	cr_assert_eq(dprpc_agent_stats_get(b, &s), 0);
	cr_assert_eq(s.handler_misuse, 0u);
	wait_b_requests(0);
	cr_assert_eq(dprpc_agent_destroy(b), 0);
	b = NULL;
}

/*
 * Requests only the RRef extension keeps do not refuse the destroy: they
 * are answered by its quiesce.  a's REMOTE is lost (and never resent), so
 * the proxy that follows finds a placeholder on b and waits on it.
 */
static void
setup_lost_remote(void)
{
	struct dprpc_fault_conf f = {.drop_nth = {1}};

	start(&f);
}

TestSuite(destroy_rref_waiters, .init = setup_lost_remote, .fini = teardown, .timeout = 60);

Test(destroy_rref_waiters, goes_on_when_only_rrefs_keep_requests)
{
	uint64_t two = 2;
	/* 2 s: the proxy reaches b and waits there before its deadline,
	 * however long this machine stalls a thread. */
	struct dprpc_rref *r = dprpc_remote(a, "b", "park", NULL, 0, 2000 * 1000);
	struct dprpc_future *proxy;
	struct dprpc_agent_stats s;

	cr_assert_not_null(r, "remote: %s", rte_strerror(rte_errno));
	proxy = dprpc_rref_rpc_async(r, "add", &two, sizeof(two), 2000 * 1000);
	cr_assert_not_null(proxy);
	wait_b_requests(1);
	cr_assert_eq(dbg(b).num_owner_rrefs, 1u, "no placeholder");
	cr_assert_eq(atomic_load(&nb_parked), 0u);
	cr_assert_eq(dprpc_agent_stats_get(a, &s), 0);
	cr_assert_eq(s.fault_dropped, 1u);
	cr_assert_eq(dprpc_agent_destroy(b), 0);
	b = NULL;
	/* b answered the proxy -ESHUTDOWN but never sent it: a's calls time
	 * out. */
	(void)dprpc_future_wait(proxy, 5000 * 1000);
	cr_assert_eq(dprpc_future_state(proxy), DPRPC_FUTURE_FAILED);
	cr_assert_eq(dprpc_future_error(proxy)->code, -ETIMEDOUT, "%d %s",
		dprpc_future_error(proxy)->code, dprpc_future_error(proxy)->msg);
	dprpc_future_put(proxy);
	/* a goes with the handle (its DELETE could never be answered). */
	cr_assert_eq(dprpc_agent_destroy(a), 0);
	a = NULL;
}
