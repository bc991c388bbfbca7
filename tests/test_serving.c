/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Serving under load (docs/serving.md), between two agents in one process
 * over a net_ring pair: a is the caller, polled by the test itself (no
 * resends, no keep-alives, unless a test turns loss on), so that what a
 * sees and when is the test's to decide; b serves on io lcore 1 with one
 * handler lcore (2), whose queue holds at most 2 requests, at most 4
 * requests of one caller and 8 in all.
 *
 * serving/deadline_*: a request carries its caller's deadline; one whose
 * deadline passes while queued is never run, is counted, and its caller
 * gets -ETIME; a handler reads it; calls made inside a handler inherit it.
 * serving/cancel_*: dprpc_future_cancel() before send, while queued, while
 * running (deferred), after completion, and under 5% loss: exact counts,
 * nothing leaked.  serving/overload_*: each bounded queue answers -EBUSY
 * with a retry-after hint at once; b's inline backlog is bounded at 1 ms
 * (overload_of_the_inline_backlog).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_pause.h>

#include "dpt.h"

static struct dpt_ring_pair pair;
static struct rte_mempool *mp;
static struct dprpc_agent *a, *b;

static atomic_bool unblock;
static atomic_uint runs_block, runs_count, runs_park, runs_iblock, runs_icount, runs_ispin;
static atomic_uint runs_isleep;
static _Atomic uint64_t seen_remaining, seen_deadline, seen_nested_deadline;
static struct dprpc_request *_Atomic parked[16];
static atomic_uint nb_parked;

/* Pool: holds the handler lcore until the test says (bounded, ~10 s). */
static int
h_block(struct dprpc_request *req, void *arg)
{
	(void)arg;
	atomic_fetch_add(&runs_block, 1);
	for (int i = 0; i < 1000000 && !atomic_load(&unblock); i++)
		usleep(10);
	return dprpc_reply(req, "b", 1);
}

/* Pool: counts its runs, records the deadline it sees. */
static int
h_count(struct dprpc_request *req, void *arg)
{
	(void)arg;
	atomic_fetch_add(&runs_count, 1);
	atomic_store(&seen_remaining, dprpc_request_remaining_us(req));
	atomic_store(&seen_deadline, dprpc_request_deadline_tsc(req));
	return dprpc_reply(req, "c", 1);
}

/* Inline: holds b's poller until the test says (bounded, ~10 s). */
static int
h_iblock(struct dprpc_request *req, void *arg)
{
	(void)arg;
	atomic_fetch_add(&runs_iblock, 1);
	for (int i = 0; i < 1000000 && !atomic_load(&unblock); i++)
		usleep(10);
	return dprpc_reply(req, "i", 1);
}

/* The calling thread's CPU time, in microseconds. */
static uint64_t
thread_cpu_us(void)
{
	struct timespec ts;

	cr_assert_eq(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts), 0);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Inline: 5 ms (or @arg us, if not NULL) of the poller's CPU time (a
 * handler slower than the bound, however long the poller is kept off its
 * CPU meanwhile). */
static int
h_ispin(struct dprpc_request *req, void *arg)
{
	uint64_t until = thread_cpu_us() + (arg != NULL ? (uintptr_t)arg : 5000);

	atomic_fetch_add(&runs_ispin, 1);
	while (thread_cpu_us() < until)
		rte_pause();
	return dprpc_reply(req, "s", 1);
}

/* Inline: 5 ms asleep, off the poller's CPU: as long as a poller
 * preempted in the middle of its burst on a loaded machine. */
static int
h_isleep(struct dprpc_request *req, void *arg)
{
	(void)arg;
	atomic_fetch_add(&runs_isleep, 1);
	usleep(5000);
	return dprpc_reply(req, "z", 1);
}

/* Inline: refuses with dprpc_reply_busy(), its hint (us) in @arg. */
static int
h_ibusy(struct dprpc_request *req, void *arg)
{
	int rc = dprpc_reply_busy(req, (uint32_t)(uintptr_t)arg, "full here");

	if (rc == 0)
		cr_assert_eq(dprpc_reply_busy(req, 1, NULL), -EALREADY);
	return rc;
}

static atomic_uint runs_slow;

/* Pool: 1 ms (at least) per request. */
static int
h_slow(struct dprpc_request *req, void *arg)
{
	(void)arg;
	atomic_fetch_add(&runs_slow, 1);
	usleep(1000);
	return dprpc_reply(req, "s", 1);
}

/* Pool: marks its request's id (4 bytes) as run, after ~20 us of work:
 * long enough for CANCELs to meet requests queued, running and done. */
static atomic_uchar ran_ids[2048];
static _Atomic uint64_t ran_tsc[2048]; /* when it started */

static int
h_tally(struct dprpc_request *req, void *arg)
{
	uint64_t until = rte_rdtsc() + rte_get_tsc_hz() / 50000;
	uint32_t id;
	size_t len;
	const void *p = dprpc_request_payload(req, &len);

	(void)arg;
	cr_assert_eq(len, sizeof(id));
	memcpy(&id, p, sizeof(id));
	cr_assert_lt(id, RTE_DIM(ran_ids));
	atomic_store(&ran_tsc[id], rte_rdtsc());
	atomic_fetch_add(&ran_ids[id], 1);
	while (rte_rdtsc() < until)
		rte_pause();
	return dprpc_reply(req, "t", 1);
}

/* Inline: counts its runs. */
static int
h_icount(struct dprpc_request *req, void *arg)
{
	(void)arg;
	atomic_fetch_add(&runs_icount, 1);
	return dprpc_reply(req, "n", 1);
}

/* Inline: keeps the request for the test (deferred). */
static int
h_park(struct dprpc_request *req, void *arg)
{
	unsigned int i = atomic_load(&nb_parked);

	(void)arg;
	atomic_fetch_add(&runs_park, 1);
	if (i >= RTE_DIM(parked))
		return -ENOSPC;
	atomic_store(&parked[i], req);
	atomic_store(&nb_parked, i + 1); /* one poller runs inline handlers */
	atomic_store(&seen_nested_deadline, dprpc_request_deadline_tsc(req));
	return DPRPC_DEFERRED;
}

/* Pool: calls b's own "park" without a timeout: the call inherits this
 * request's deadline.  Answers with its own deadline. */
static int
h_nested(struct dprpc_request *req, void *arg)
{
	struct dprpc_future *f =
		dprpc_rpc_async(dprpc_request_agent(req), "b", "park", NULL, 0, DPRPC_TIMEOUT_NONE);
	uint64_t d = dprpc_request_deadline_tsc(req);

	(void)arg;
	if (f == NULL)
		return -rte_errno;
	dprpc_future_put(f); /* answered when the test answers the parked one */
	return dprpc_reply(req, &d, sizeof(d));
}

/* Deep queues (serving_deep): a may have 256 calls out, b queues 256 to
 * its handler lcore and holds 512 requests. */
static bool deep;
/* serving_delay: deep queues, b's pool bounded at 2 ms of queued work. */
static bool delay_bound;
/* serving_held: deep queues, a resends (no loss). */
static bool resends;
/* serving_declared: b declares its pool requests take 1 s. */
#define DECLARED_US 1000000u
static bool declared;

static struct dprpc_agent *
make_agent(const char *name, int port, bool server, bool lossy)
{
	struct dprpc_agent_conf c;
	struct dprpc_agent *ag;

	dprpc_agent_conf_init(&c);
	c.name = name;
	c.world = DPT_WORLD2;
	c.port.id = port;
	c.port.mbuf_pool = mp;
	c.calls.retransmit_us = lossy || resends ? 1000 : 0;
	c.liveness.keepalive_us = 0;
	c.liveness.peer_timeout_us = 0;
	if (lossy) {
		c.faults.tx.drop_ppm = 50000;
		c.faults.tx.seed = 16;
		c.faults.rx.drop_ppm = 50000;
		c.faults.rx.seed = 61;
	}
	if (server) {
		c.lcores.io = 1;
		c.lcores.nb_pool = 1;
		c.lcores.pool[0] = 2;
		c.serve.max_requests = 8;
		c.serve.peer_requests_max = 4;
		c.serve.handler_queue_max = 2;
		c.serve.inline_wait_max_us = 1000;
		if (deep) {
			c.serve.max_requests = 512;
			c.serve.peer_requests_max = 512;
			c.serve.handler_queue_max = 256;
		}
		if (delay_bound)
			c.serve.queue_delay_max_us = 2000;
		if (declared)
			c.serve.service_time_us = DECLARED_US;
	} else if (deep) {
		c.calls.max_outstanding = 256;
	}
	ag = dprpc_agent_create(&c);
	cr_assert_not_null(ag, "agent %s: %s", name, rte_strerror(rte_errno));
	return ag;
}

static void
start(bool lossy)
{
	cr_assert_geq(dpt_eal_init("serve"), 0);
	mp = dpt_pool_and_pair("dpt_mp", 8191, &pair);
	cr_assert_not_null(mp);
	a = make_agent("a", pair.port_a, false, lossy);
	b = make_agent("b", pair.port_b, true, false);
	cr_assert_eq(dprpc_register(b, "block", h_block, NULL, DPRPC_HANDLER_POOL), 0);
	cr_assert_eq(dprpc_register(b, "count", h_count, NULL, DPRPC_HANDLER_POOL), 0);
	cr_assert_eq(dprpc_register(b, "park", h_park, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(b, "nested", h_nested, NULL, DPRPC_HANDLER_POOL), 0);
	cr_assert_eq(dprpc_register(b, "echo", dpt_echo, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(b, "iblock", h_iblock, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(b, "icount", h_icount, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(b, "ispin", h_ispin, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(b, "isleep", h_isleep, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(b, "ispin300", h_ispin, (void *)(uintptr_t)300000,
			     DPRPC_HANDLER_INLINE),
		0);
	cr_assert_eq(dprpc_register(
			     b, "busy7ms", h_ibusy, (void *)(uintptr_t)7000, DPRPC_HANDLER_INLINE),
		0);
	cr_assert_eq(dprpc_register(b, "busy", h_ibusy, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(b, "slow", h_slow, NULL, DPRPC_HANDLER_POOL), 0);
	cr_assert_eq(dprpc_register(b, "tally", h_tally, NULL, DPRPC_HANDLER_POOL), 0);
}

static void
setup(void)
{
	start(false);
}

static void
setup_lossy(void)
{
	start(true);
}

static void
setup_delay(void)
{
	deep = true;
	delay_bound = true;
	start(false);
}

static void
setup_lossy_deep(void)
{
	deep = true;
	start(true);
}

static void
setup_held(void)
{
	deep = true;
	resends = true;
	start(false);
}

static void
setup_declared(void)
{
	declared = true;
	start(false);
}

/* Bounded wait (~10 s) until b holds no request object. */
static unsigned int
b_requests(void)
{
	struct dprpc_agent_usage u = {0};

	for (int i = 0; i < 100000; i++) {
		cr_assert_eq(dprpc_agent_usage_get(b, &u), 0);
		if (u.requests == 0)
			break;
		usleep(100);
	}
	return u.requests;
}

static void
teardown(void)
{
	struct dprpc_agent_usage u;

	atomic_store(&unblock, true);
	if (a != NULL) {
		cr_assert_eq(dprpc_agent_usage_get(a, &u), 0);
		cr_expect_eq(u.futures, 0u, "futures leaked on a: %u", u.futures);
		cr_expect_eq(u.calls, 0u, "calls left on a: %u", u.calls);
		cr_assert_eq(dprpc_agent_destroy(a), 0);
	}
	if (b != NULL) {
		cr_expect_eq(b_requests(), 0u, "requests leaked on b");
		cr_assert_eq(dprpc_agent_destroy(b), 0);
	}
	a = b = NULL;
	deep = false;
	delay_bound = false;
	resends = false;
	memset(ran_ids, 0, sizeof(ran_ids));
	memset(ran_tsc, 0, sizeof(ran_tsc));
	dpt_ring_drain(pair.ab);
	dpt_ring_drain(pair.ba);
	cr_expect_eq(
		rte_mempool_in_use_count(mp), 0u, "mbufs leaked: %u", rte_mempool_in_use_count(mp));
	dpt_eal_cleanup();
}

TestSuite(serving, .init = setup, .fini = teardown, .timeout = 120);

static struct dprpc_agent_stats
stats(struct dprpc_agent *ag)
{
	struct dprpc_agent_stats s;

	cr_assert_eq(dprpc_agent_stats_get(ag, &s), 0);
	return s;
}

/* Poll a (bounded, ~10 s) until @f is done. */
static void
poll_until_done(struct dprpc_future *f)
{
	for (int i = 0; i < 100000 && !dprpc_future_is_done(f); i++) {
		dprpc_poll(a, 32);
		usleep(100);
	}
	cr_assert(dprpc_future_is_done(f), "a call never ended");
}

/* Wait (bounded, ~10 s; polling a if @poll_a) until b's counter at byte
 * offset @off of its stats reaches @n. */
static uint64_t
wait_b(size_t off, uint64_t n, bool poll_a)
{
	struct dprpc_agent_stats s;
	uint64_t v = 0;

	for (int i = 0; i < 100000; i++) {
		if (poll_a)
			dprpc_poll(a, 32);
		s = stats(b);
		memcpy(&v, (const char *)&s + off, sizeof(v));
		if (v >= n)
			break;
		usleep(100);
	}
	return v;
}
#define WAIT_B(field, n, poll_a) wait_b(offsetof(struct dprpc_agent_stats, field), (n), (poll_a))

/* Wait (bounded, ~10 s) until @n frames wait on a's port: b's answers,
 * for a's first poll to take before its timers run. */
static void
wait_frames_for_a(unsigned int n)
{
	for (int i = 0; i < 100000 && rte_ring_count(pair.ba) < n; i++)
		usleep(100);
	cr_assert_geq(
		rte_ring_count(pair.ba), n, "%u frames for a, not %u", rte_ring_count(pair.ba), n);
}

/* A deadline long enough that its request reaches b's queue first however
 * long this machine keeps a thread off its CPU (a's round-trip estimate,
 * a stall in it too, comes off the budget b is sent), and the time after
 * which b has seen it pass. */
#define QUEUED_DEADLINE_US (500 * 1000)
#define PAST_DEADLINE_US   (QUEUED_DEADLINE_US + 100 * 1000)

/* a learns b's incarnation (and a round trip) with one call. */
static void
warm_up(void)
{
	char out[8];
	size_t len = sizeof(out);

	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "w", 1, 5000 * 1000, out, &len, NULL), 0);
}

static struct dprpc_future *
call(const char *h, uint64_t timeout_us)
{
	struct dprpc_future *f = dprpc_rpc_async(a, "b", h, "x", 1, timeout_us);

	cr_assert_not_null(f, "%s: %s", h, rte_strerror(rte_errno));
	dprpc_poll(a, 32); /* sent */
	return f;
}

/* As call(), without polling a: the call is sent at once all the same (a
 * has no io lcore and nobody polls it), and a's timers do not run, so a
 * call the test keeps waiting is not resent behind the test's back. */
static struct dprpc_future *
call_quiet(const char *h, uint64_t timeout_us)
{
	struct dprpc_future *f = dprpc_rpc_async(a, "b", h, "x", 1, timeout_us);

	cr_assert_not_null(f, "%s: %s", h, rte_strerror(rte_errno));
	return f;
}

static int
code_of(struct dprpc_future *f)
{
	const struct dprpc_error *e = dprpc_future_error(f);

	return e == NULL ? 0 : e->code;
}

/* The handler lcore busy with "block" and the request of @h queued behind
 * it: returns @h's future. */
static struct dprpc_future *
queue_behind_block(struct dprpc_future **blk, const char *h, uint64_t timeout_us)
{
	warm_up();
	*blk = call("block", DPRPC_TIMEOUT_NONE);
	cr_assert_eq(WAIT_B(requests_handled, 2, false), 2u); /* echo, block */
	for (int i = 0; i < 100000 && atomic_load(&runs_block) == 0; i++)
		usleep(100);
	cr_assert_eq(atomic_load(&runs_block), 1u);
	return call(h, timeout_us);
}

Test(serving, deadline_passes_while_queued_in_the_pool)
{
	struct dprpc_future *blk, *f;
	uint64_t tx;

	f = queue_behind_block(&blk, "count", QUEUED_DEADLINE_US);
	cr_assert_eq(WAIT_B(requests_handled, 3, false), 3u);
	/* a is not polled: its own timer cannot fire meanwhile. */
	usleep(PAST_DEADLINE_US);
	tx = stats(b).tx_frames;
	atomic_store(&unblock, true);
	cr_assert_eq(WAIT_B(requests_expired, 1, false), 1u);
	cr_assert_geq(WAIT_B(tx_frames, tx + 2, false), tx + 2); /* both answers out */
	wait_frames_for_a(2);
	poll_until_done(blk);
	poll_until_done(f);
	cr_assert_eq(dprpc_future_state(blk), DPRPC_FUTURE_DONE);
	cr_assert_eq(code_of(f), -ETIME, "got %d", code_of(f));
	cr_assert_eq(dprpc_future_error(f)->origin, 1u);
	cr_assert_eq(atomic_load(&runs_count), 0u, "an expired request ran");
	cr_assert_eq(stats(a).calls_timed_out, 0u);
	cr_assert_eq(stats(b).requests_expired, 1u);
	dprpc_future_put(blk);
	dprpc_future_put(f);
}

Test(serving, handler_reads_the_deadline)
{
	struct dprpc_future *f;
	uint64_t before = rte_rdtsc(), left;

	warm_up();
	f = call("count", 2000 * 1000);
	poll_until_done(f);
	cr_assert_eq(dprpc_future_state(f), DPRPC_FUTURE_DONE);
	left = atomic_load(&seen_remaining);
	cr_assert_gt(left, 0u);
	cr_assert_leq(left, 2000u * 1000);
	cr_assert_gt(atomic_load(&seen_deadline), before);
	dprpc_future_put(f);
	/* No timeout, no deadline. */
	f = call("count", DPRPC_TIMEOUT_NONE);
	poll_until_done(f);
	cr_assert_eq(atomic_load(&seen_remaining), DPRPC_NO_DEADLINE);
	cr_assert_eq(atomic_load(&seen_deadline), 0u);
	dprpc_future_put(f);
}

Test(serving, calls_made_in_a_handler_inherit_its_deadline)
{
	struct dprpc_future *f;
	struct dprpc_request *req;
	const uint64_t *outer;
	size_t len;

	warm_up();
	f = call("nested", 3000 * 1000);
	poll_until_done(f);
	cr_assert_eq(dprpc_future_state(f), DPRPC_FUTURE_DONE);
	outer = dprpc_future_value(f, &len);
	cr_assert_eq(len, sizeof(*outer));
	for (int i = 0; i < 100000 && atomic_load(&nb_parked) == 0; i++)
		usleep(100);
	cr_assert_eq(atomic_load(&nb_parked), 1u);
	/* The nested call had no timeout of its own. */
	cr_assert_neq(atomic_load(&seen_nested_deadline), 0u);
	cr_assert_leq(atomic_load(&seen_nested_deadline), *outer);
	req = atomic_load(&parked[0]);
	cr_assert_eq(dprpc_reply(req, NULL, 0), 0);
	dprpc_future_put(f);
}

Test(serving, request_timeout_helper)
{
	cr_assert_eq(dprpc_request_timeout(NULL, 5), 0u);
	cr_assert_eq(rte_errno, EINVAL);
	cr_assert_eq(dprpc_request_remaining_us(NULL), 0u);
	cr_assert_eq(dprpc_request_deadline_tsc(NULL), 0u);
	cr_assert_eq(dprpc_request_cancelled(NULL), false);
}

Test(serving, cancel_before_send)
{
	struct dprpc_future *f;
	struct dprpc_agent_stats s;

	/* a has never heard from b: the call waits in its slot while a asks
	 * for b's incarnation. */
	f = dprpc_rpc_async(a, "b", "count", "x", 1, DPRPC_TIMEOUT_NONE);
	cr_assert_not_null(f);
	cr_assert_eq(dprpc_future_cancel(f), DPRPC_CANCEL_DONE);
	cr_assert_eq(dprpc_future_cancel(f), DPRPC_CANCEL_ALREADY);
	cr_assert_eq(code_of(f), -ECANCELED);
	cr_assert_eq(dprpc_future_cancel_outcome(f), DPRPC_CANCEL_UNCONFIRMED);
	warm_up(); /* b answered the ping: the parked call was let go unsent */
	cr_assert_eq(dprpc_future_cancel_outcome(f), DPRPC_CANCEL_STOPPED);
	dprpc_future_put(f);
	s = stats(a);
	cr_assert_eq(s.calls_cancelled, 1u);
	cr_assert_eq(stats(b).requests_handled, 1u); /* the echo only */
	cr_assert_eq(stats(b).cancels_received, 0u);
	cr_assert_eq(atomic_load(&runs_count), 0u);
}

Test(serving, cancel_while_queued)
{
	struct dprpc_future *blk, *f;

	f = queue_behind_block(&blk, "count", DPRPC_TIMEOUT_NONE);
	cr_assert_eq(WAIT_B(requests_handled, 3, false), 3u);
	cr_assert_eq(dprpc_future_cancel(f), DPRPC_CANCEL_DONE);
	cr_assert_eq(code_of(f), -ECANCELED);
	dprpc_future_put(f);
	/* a's timer frees the slot and tells b. */
	cr_assert_eq(WAIT_B(cancels_received, 1, true), 1u);
	atomic_store(&unblock, true);
	poll_until_done(blk);
	cr_assert_eq(WAIT_B(requests_cancelled, 1, false), 1u);
	cr_assert_eq(atomic_load(&runs_count), 0u, "a cancelled request ran");
	cr_assert_eq(stats(a).calls_cancelled, 1u);
	cr_assert_eq(b_requests(), 0u);
	dprpc_future_put(blk);
}

Test(serving, cancel_while_running)
{
	struct dprpc_future *f;
	struct dprpc_request *req;
	struct dprpc_agent_stats s;

	warm_up();
	f = call("park", DPRPC_TIMEOUT_NONE);
	for (int i = 0; i < 100000 && atomic_load(&nb_parked) == 0; i++)
		usleep(100);
	req = atomic_load(&parked[0]);
	cr_assert_not_null(req);
	cr_assert_eq(dprpc_request_cancelled(req), false);
	cr_assert_eq(dprpc_future_cancel(f), DPRPC_CANCEL_DONE);
	cr_assert_eq(WAIT_B(cancels_received, 1, true), 1u);
	cr_assert_eq(dprpc_request_cancelled(req), true);
	/* The handler stops: its answer is dropped by a as stale. */
	cr_assert_eq(dprpc_reply_error(req, -ECANCELED, "stopped"), 0);
	dpt_poll_until_drops(a, DPRPC_DROP_STALE, 1, &s);
	cr_assert_eq(s.drops[DPRPC_DROP_STALE], 1u);
	cr_assert_eq(s.calls_cancelled, 1u);
	cr_assert_eq(code_of(f), -ECANCELED);
	/* a does not resend (retransmit_us 0): its CANCEL wanted no answer. */
	cr_assert_eq(dprpc_future_cancel_outcome(f), DPRPC_CANCEL_UNKNOWN);
	dprpc_future_put(f);
}

Test(serving, cancel_after_completion)
{
	struct dprpc_future *f;
	size_t len;

	warm_up();
	f = call("echo", DPRPC_TIMEOUT_NONE);
	poll_until_done(f);
	cr_assert_eq(dprpc_future_cancel(f), DPRPC_CANCEL_TOO_LATE);
	cr_assert_eq(dprpc_future_state(f), DPRPC_FUTURE_DONE);
	cr_assert_eq(dprpc_future_cancel_outcome(f), DPRPC_CANCEL_UNCONFIRMED);
	cr_assert_not_null(dprpc_future_value(f, &len));
	cr_assert_eq(len, 1u);
	cr_assert_eq(dprpc_future_cancel(NULL), -EINVAL);
	dprpc_future_put(f);
	for (int i = 0; i < 10; i++)
		dprpc_poll(a, 32);
	cr_assert_eq(stats(a).calls_cancelled, 0u);
	cr_assert_eq(stats(b).cancels_received, 0u);
}

/* 5% loss each way on a, resends on: half the calls are cancelled at once
 * or after a few polls; every call ends, nothing is leaked (teardown). */
TestSuite(serving_loss, .init = setup_lossy, .fini = teardown, .timeout = 120);

Test(serving_loss, cancel_under_loss)
{
	enum { N = 200 };
	struct dprpc_future *fs[N];
	unsigned int i, cancelled = 0, ok = 0;
	struct dprpc_agent_usage u;

	warm_up();
	for (i = 0; i < N; i++) {
		fs[i] = dprpc_rpc_async(a, "b", "echo", "x", 1, 30 * 1000 * 1000);
		/* Every slot taken (resends and CANCELs wait out the loss, longer
		 * on a loaded machine): poll until one is free. */
		for (int k = 0; fs[i] == NULL && rte_errno == EAGAIN && k < 100000; k++) {
			dprpc_poll(a, 32);
			usleep(k > 1000 ? 100 : 0);
			fs[i] = dprpc_rpc_async(a, "b", "echo", "x", 1, 30 * 1000 * 1000);
		}
		cr_assert_not_null(fs[i], "call %u: %s", i, rte_strerror(rte_errno));
		if (i % 4 == 0)
			cancelled += dprpc_future_cancel(fs[i]) == DPRPC_CANCEL_DONE;
		dprpc_poll(a, 32);
		if (i % 4 == 2 && i >= 2)
			cancelled += dprpc_future_cancel(fs[i - 2]) == DPRPC_CANCEL_DONE;
		if (i % 32 == 31)
			for (int k = 0; k < 20; k++)
				dprpc_poll(a, 32);
	}
	for (i = 0; i < N; i++) {
		poll_until_done(fs[i]);
		ok += dprpc_future_state(fs[i]) == DPRPC_FUTURE_DONE;
		if (dprpc_future_state(fs[i]) == DPRPC_FUTURE_FAILED)
			cr_assert_eq(code_of(fs[i]), -ECANCELED, "call %u: %d", i, code_of(fs[i]));
		dprpc_future_put(fs[i]);
	}
	cr_assert_eq(ok + cancelled, (unsigned int)N);
	cr_assert_gt(cancelled, 0u);
	/* a's timer frees the cancelled slots. */
	for (i = 0; i < 100000; i++) {
		dprpc_poll(a, 32);
		cr_assert_eq(dprpc_agent_usage_get(a, &u), 0);
		if (u.calls == 0)
			break;
		usleep(100);
	}
	cr_assert_eq(u.calls, 0u);
	cr_assert_eq(stats(a).calls_cancelled, cancelled);
}

Test(serving, overload_of_the_pool_queue)
{
	struct dprpc_future *blk, *q[2], *f;
	const struct dprpc_error *e;

	q[0] = queue_behind_block(&blk, "count", DPRPC_TIMEOUT_NONE);
	q[1] = call("count", DPRPC_TIMEOUT_NONE);
	cr_assert_eq(WAIT_B(requests_handled, 4, false), 4u);
	f = call("count", DPRPC_TIMEOUT_NONE); /* a third in the queue of 2 */
	poll_until_done(f);
	e = dprpc_future_error(f);
	cr_assert_not_null(e);
	cr_assert_eq(e->code, -EBUSY);
	cr_assert_geq(e->retry_after_us, 100u);
	cr_assert_eq(stats(b).rejected_pool, 1u);
	cr_assert_eq(stats(b).rejected_overload, 1u);
	cr_assert_eq(stats(b).queue_depth, 2u);
	atomic_store(&unblock, true);
	poll_until_done(blk);
	poll_until_done(q[0]);
	poll_until_done(q[1]);
	cr_assert_eq(dprpc_future_state(q[0]), DPRPC_FUTURE_DONE);
	cr_assert_eq(dprpc_future_state(q[1]), DPRPC_FUTURE_DONE);
	cr_assert_eq(atomic_load(&runs_count), 2u);
	dprpc_future_put(blk);
	dprpc_future_put(q[0]);
	dprpc_future_put(q[1]);
	dprpc_future_put(f);
}

static void
answer_parked(void)
{
	unsigned int i, n = atomic_load(&nb_parked);

	for (i = 0; i < n; i++)
		cr_assert_eq(dprpc_reply(atomic_load(&parked[i]), NULL, 0), 0);
}

Test(serving, overload_of_one_caller)
{
	struct dprpc_future *fs[5];
	const struct dprpc_error *e;
	unsigned int i;

	warm_up();
	for (i = 0; i < 4; i++)
		fs[i] = call("park", DPRPC_TIMEOUT_NONE);
	for (i = 0; i < 100000 && atomic_load(&nb_parked) < 4; i++)
		usleep(100);
	cr_assert_eq(atomic_load(&nb_parked), 4u);
	fs[4] = call("park", DPRPC_TIMEOUT_NONE); /* the caller's fifth */
	poll_until_done(fs[4]);
	e = dprpc_future_error(fs[4]);
	cr_assert_not_null(e);
	cr_assert_eq(e->code, -EBUSY, "got %d", e->code);
	cr_assert_geq(e->retry_after_us, 100u);
	cr_assert_eq(stats(b).rejected_peer, 1u);
	cr_assert_eq(stats(b).requests_held, 4u);
	cr_assert_eq(atomic_load(&runs_park), 4u);
	answer_parked();
	for (i = 0; i < 5; i++) {
		poll_until_done(fs[i]);
		if (i < 4)
			cr_assert_eq(dprpc_future_state(fs[i]), DPRPC_FUTURE_DONE);
		dprpc_future_put(fs[i]);
	}
}

Test(serving, overload_of_all_requests)
{
	struct dprpc_future *self[8], *f;
	const struct dprpc_error *e;
	unsigned int i;

	warm_up();
	/* b's own calls to itself hold its 8 request objects. */
	for (i = 0; i < 8; i++) {
		self[i] = dprpc_rpc_async(b, "b", "park", NULL, 0, DPRPC_TIMEOUT_NONE);
		cr_assert_not_null(self[i]);
	}
	for (i = 0; i < 100000 && atomic_load(&nb_parked) < 8; i++)
		usleep(100);
	cr_assert_eq(atomic_load(&nb_parked), 8u);
	f = call("echo", DPRPC_TIMEOUT_NONE);
	poll_until_done(f);
	e = dprpc_future_error(f);
	cr_assert_not_null(e);
	cr_assert_eq(e->code, -EBUSY, "got %d", e->code);
	cr_assert_eq(stats(b).rejected_requests, 1u);
	dprpc_future_put(f);
	answer_parked();
	for (i = 0; i < 8; i++) {
		cr_assert_eq(dprpc_future_wait(self[i], 10 * 1000 * 1000), 0);
		dprpc_future_put(self[i]);
	}
}

/* b's poller held in an inline handler while 40 inline requests queue in
 * its port: "ispin" (5 ms of CPU time) then 39 "icount".  The first burst
 * after (32 frames: full) starts the poller being behind; ispin runs first
 * in it, so the 31 after it find the poller 5 ms behind, beyond the 1 ms
 * bound, and are answered -EBUSY unrun; the next burst (8, not full: the
 * queue drained) runs.  The time the poller waited in "iblock" is not
 * counted: its burst was not full. */
Test(serving, overload_of_the_inline_backlog)
{
	struct dprpc_future *blk, *fs[40];
	const struct dprpc_error *e;
	unsigned int i, busy = 0, done = 0;

	warm_up();
	blk = call("iblock", DPRPC_TIMEOUT_NONE);
	for (i = 0; i < 100000 && atomic_load(&runs_iblock) == 0; i++)
		usleep(100);
	cr_assert_eq(atomic_load(&runs_iblock), 1u);
	for (i = 0; i < RTE_DIM(fs); i++)
		fs[i] = call(i == 0 ? "ispin" : "icount", DPRPC_TIMEOUT_NONE);
	atomic_store(&unblock, true);
	poll_until_done(blk);
	cr_assert_eq(dprpc_future_state(blk), DPRPC_FUTURE_DONE);
	for (i = 0; i < RTE_DIM(fs); i++) {
		poll_until_done(fs[i]);
		if (dprpc_future_state(fs[i]) == DPRPC_FUTURE_DONE) {
			done++;
		} else {
			e = dprpc_future_error(fs[i]);
			cr_assert_not_null(e);
			cr_assert_neq(i, 0u, "ispin refused");
			cr_assert_eq(e->code, -EBUSY, "call %u: %d", i, e->code);
			cr_assert_geq(e->retry_after_us, 1000u, "hint %u us", e->retry_after_us);
			busy++;
		}
		dprpc_future_put(fs[i]);
	}
	dprpc_future_put(blk);
	cr_assert_eq(busy, 31u);
	cr_assert_eq(done, 9u);
	cr_assert_eq(atomic_load(&runs_ispin), 1u);
	cr_assert_eq(atomic_load(&runs_icount), 8u, "a refused request ran");
	cr_assert_eq(stats(b).rejected_inline, 31u);
	cr_assert_eq(stats(b).rejected_overload, 31u);
	cr_assert_eq(stats(b).requests_handled, 42u); /* echo, iblock, 40 */
}

/* As overload_of_the_inline_backlog, with "isleep" first instead of
 * "ispin": 5 ms off the poller's CPU rather than on it.  The 31 requests
 * after it in the full burst all run: only the poller's CPU time counts
 * towards the 1 ms bound.  (The TSC age, which runs on while the poller
 * is off its CPU, refused them: a poller preempted mid-burst on a loaded
 * machine refused the rest of its burst -EBUSY, seen in
 * rpc_ring/unpinned_threads_share_the_agents_own_pools.) */
Test(serving, poller_off_its_cpu_mid_burst_is_not_behind)
{
	struct dprpc_future *blk, *fs[40];
	unsigned int i;

	warm_up();
	blk = call("iblock", DPRPC_TIMEOUT_NONE);
	for (i = 0; i < 100000 && atomic_load(&runs_iblock) == 0; i++)
		usleep(100);
	cr_assert_eq(atomic_load(&runs_iblock), 1u);
	for (i = 0; i < RTE_DIM(fs); i++)
		fs[i] = call(i == 0 ? "isleep" : "icount", DPRPC_TIMEOUT_NONE);
	atomic_store(&unblock, true);
	poll_until_done(blk);
	cr_assert_eq(dprpc_future_state(blk), DPRPC_FUTURE_DONE);
	for (i = 0; i < RTE_DIM(fs); i++) {
		poll_until_done(fs[i]);
		cr_assert_eq(dprpc_future_state(fs[i]), DPRPC_FUTURE_DONE, "call %u: %d", i,
			code_of(fs[i]));
		dprpc_future_put(fs[i]);
	}
	dprpc_future_put(blk);
	cr_assert_eq(atomic_load(&runs_isleep), 1u);
	cr_assert_eq(atomic_load(&runs_icount), 39u);
	cr_assert_eq(stats(b).rejected_inline, 0u);
	cr_assert_eq(stats(b).requests_handled, 42u); /* echo, iblock, 40 */
}

/* b's poller held in "iblock" while 32 inline requests queue in its port:
 * "ispin300" (300 ms of CPU time), 30 "icount" with a 200 ms deadline
 * (sent before the first of them passes however long this machine stalls
 * the sender), one with none.  Their burst is full: b is behind, reads
 * the clock for each, and the 30 whose deadline passed behind ispin300 are
 * answered -ETIME unrun (the last, without a deadline, -EBUSY: the backlog
 * is older than its 1 ms bound).  a is polled only once every answer is
 * out, so its own timer cannot fire first: a's first poll takes iblock's,
 * ispin300's and the 30 answers (32 frames) before its timers run.  Nor before: the
 * 32 calls are sent without polling a (call_quiet()).  Polled after each
 * (call()), a could resend the first ones when sending them took over its
 * 1 ms retransmit time, and the resends queue at b among the 32: call 1
 * timed out at a once, under ASan in CI. */
Test(serving, deadline_passes_in_the_inline_backlog)
{
	struct dprpc_future *blk, *fs[32];
	const struct dprpc_error *e;
	unsigned int i;
	uint64_t tx;

	warm_up();
	blk = call("iblock", DPRPC_TIMEOUT_NONE);
	for (i = 0; i < 100000 && atomic_load(&runs_iblock) == 0; i++)
		usleep(100);
	cr_assert_eq(atomic_load(&runs_iblock), 1u);
	fs[0] = call_quiet("ispin300", DPRPC_TIMEOUT_NONE);
	for (i = 1; i < 31; i++)
		fs[i] = call_quiet("icount", 200 * 1000);
	fs[31] = call_quiet("icount", DPRPC_TIMEOUT_NONE);
	tx = stats(b).tx_frames;
	atomic_store(&unblock, true);
	cr_assert_geq(WAIT_B(tx_frames, tx + 33, false), tx + 33);
	wait_frames_for_a(33);
	poll_until_done(blk);
	cr_assert_eq(dprpc_future_state(blk), DPRPC_FUTURE_DONE);
	for (i = 0; i < RTE_DIM(fs); i++)
		poll_until_done(fs[i]);
	cr_assert_eq(dprpc_future_state(fs[0]), DPRPC_FUTURE_DONE);
	for (i = 1; i < 31; i++) {
		e = dprpc_future_error(fs[i]);
		cr_assert_not_null(e, "call %u ran", i);
		cr_assert_eq(e->code, -ETIME, "call %u: %d", i, e->code);
		cr_assert_eq(e->origin, 1u);
	}
	cr_assert_eq(code_of(fs[31]), -EBUSY, "got %d", code_of(fs[31]));
	for (i = 0; i < RTE_DIM(fs); i++)
		dprpc_future_put(fs[i]);
	dprpc_future_put(blk);
	cr_assert_eq(atomic_load(&runs_icount), 0u, "an expired request ran");
	cr_assert_eq(atomic_load(&runs_ispin), 1u);
	cr_assert_eq(stats(b).requests_expired, 30u);
	cr_assert_eq(stats(b).rejected_inline, 1u);
	cr_assert_eq(stats(a).calls_timed_out, 0u);
}

/* An application's own queue (the parked requests of "park", deferred):
 * as each comes out, dprpc_reply_expired() answers those whose deadline
 * passed -ETIME (counted) and leaves the others to be run.  a is polled
 * only once every answer is out. */
Test(serving, deadline_passes_in_a_deferred_queue)
{
	struct dprpc_future *fs[4];
	struct dprpc_request *req;
	unsigned int i, expired = 0, ran = 0;
	uint64_t tx;
	int rc;

	warm_up();
	for (i = 0; i < 4; i++)
		fs[i] = call("park", i < 2 ? QUEUED_DEADLINE_US : DPRPC_TIMEOUT_NONE);
	for (i = 0; i < 100000 && atomic_load(&nb_parked) < 4; i++)
		usleep(100);
	cr_assert_eq(atomic_load(&nb_parked), 4u);
	usleep(PAST_DEADLINE_US); /* past the first two's deadline */
	tx = stats(b).tx_frames;
	for (i = 0; i < 4; i++) {
		req = atomic_load(&parked[i]);
		rc = dprpc_reply_expired(req, i == 0 ? "late in my queue" : NULL);
		cr_assert(rc == 0 || rc == 1, "request %u: %d", i, rc);
		if (rc == 1) {
			expired++;
			cr_assert_lt(i, 2u, "request %u had no deadline", i);
			continue;
		}
		cr_assert_eq(dprpc_reply(req, "w", 1), 0); /* the application's work */
		ran++;
	}
	cr_assert_eq(expired, 2u);
	cr_assert_eq(ran, 2u);
	cr_assert_eq(stats(b).requests_expired, 2u);
	cr_assert_geq(WAIT_B(tx_frames, tx + 4, false), tx + 4);
	wait_frames_for_a(4);
	for (i = 0; i < 4; i++) {
		poll_until_done(fs[i]);
		if (i < 2) {
			cr_assert_eq(code_of(fs[i]), -ETIME, "call %u: %d", i, code_of(fs[i]));
			cr_assert_eq(dprpc_future_error(fs[i])->origin, 1u);
		} else {
			cr_assert_eq(dprpc_future_state(fs[i]), DPRPC_FUTURE_DONE);
		}
	}
	cr_assert_str_eq(dprpc_future_error(fs[0])->msg, "late in my queue");
	cr_assert_eq(stats(a).calls_timed_out, 0u);
	for (i = 0; i < 4; i++)
		dprpc_future_put(fs[i]);
}

/* A handler refusing with dprpc_reply_busy(): -EBUSY with its hint (7 ms,
 * encoded exactly), or the agent's own estimate (0: at least 100 us);
 * from a deferred request too; counted. */
Test(serving, handler_answers_busy_with_a_hint)
{
	struct dprpc_future *f;
	const struct dprpc_error *e;

	warm_up();
	f = call("busy7ms", DPRPC_TIMEOUT_NONE);
	poll_until_done(f);
	e = dprpc_future_error(f);
	cr_assert_not_null(e);
	cr_assert_eq(e->code, -EBUSY);
	cr_assert_eq(e->retry_after_us, 7000u);
	cr_assert_str_eq(e->msg, "full here");
	dprpc_future_put(f);
	f = call("busy", DPRPC_TIMEOUT_NONE);
	poll_until_done(f);
	e = dprpc_future_error(f);
	cr_assert_not_null(e);
	cr_assert_eq(e->code, -EBUSY);
	cr_assert_geq(e->retry_after_us, 100u);
	dprpc_future_put(f);
	f = call("park", DPRPC_TIMEOUT_NONE);
	for (int i = 0; i < 100000 && atomic_load(&nb_parked) == 0; i++)
		usleep(100);
	cr_assert_eq(dprpc_reply_busy(atomic_load(&parked[0]), 250000, NULL), 0);
	poll_until_done(f);
	e = dprpc_future_error(f);
	cr_assert_not_null(e);
	cr_assert_eq(e->code, -EBUSY);
	cr_assert_leq(e->retry_after_us, 250000u);
	cr_assert_geq(e->retry_after_us, 250000u - 250000u / 2048);
	dprpc_future_put(f);
	cr_assert_eq(stats(b).rejected_handler, 3u);
	cr_assert_eq(stats(b).rejected_overload, 3u);
	cr_assert_eq(stats(b).reply_again, 2u); /* h_ibusy's second reply, each */
}

/* 5% loss each way on a, deep queues: 200 pool requests queued at b behind
 * "block" are cancelled.  A lost CANCEL (or its answer) is sent again
 * until b answers it, and a's slot is held till then: once a has every
 * slot but block's back, b has seen every cancellation, and the handler
 * lcore, let go, drops all 200 unrun. */
TestSuite(serving_deep, .init = setup_lossy_deep, .fini = teardown, .timeout = 120);

Test(serving_deep, cancel_while_queued_under_loss)
{
	enum { N = 200 };
	struct dprpc_future *blk, *fs[N];
	struct dprpc_agent_usage u;
	unsigned int i;

	warm_up();
	blk = dprpc_rpc_async(a, "b", "block", "x", 1, DPRPC_TIMEOUT_NONE);
	cr_assert_not_null(blk);
	for (i = 0; i < 100000 && atomic_load(&runs_block) == 0; i++) {
		dprpc_poll(a, 32);
		usleep(100);
	}
	cr_assert_eq(atomic_load(&runs_block), 1u);
	for (i = 0; i < N; i++) {
		fs[i] = dprpc_rpc_async(a, "b", "count", "x", 1, DPRPC_TIMEOUT_NONE);
		cr_assert_not_null(fs[i], "call %u: %s", i, rte_strerror(rte_errno));
		dprpc_poll(a, 32);
	}
	/* All queued at b (a's resends make up for the losses). */
	cr_assert_eq(WAIT_B(requests_handled, N + 2, true), N + 2u); /* echo, block, N */
	cr_assert_eq(stats(b).queue_depth, (uint64_t)N);
	for (i = 0; i < N; i++) {
		cr_assert_eq(dprpc_future_cancel(fs[i]), DPRPC_CANCEL_DONE);
		cr_assert_eq(code_of(fs[i]), -ECANCELED);
	}
	for (i = 0; i < 100000; i++) {
		dprpc_poll(a, 32);
		cr_assert_eq(dprpc_agent_usage_get(a, &u), 0);
		if (u.calls == 1)
			break;
		usleep(100);
	}
	cr_assert_eq(u.calls, 1u, "slots held: %u", u.calls); /* block's */
	/* Each answered, and b had started none: confirmed never to run. */
	for (i = 0; i < N; i++) {
		cr_assert_eq(
			dprpc_future_cancel_outcome(fs[i]), DPRPC_CANCEL_STOPPED, "call %u", i);
		dprpc_future_put(fs[i]);
	}
	cr_assert_eq(stats(b).cancels_received, (uint64_t)N);
	cr_assert_gt(stats(a).cancels_resent, 0u, "no CANCEL was lost: the test proves nothing");
	atomic_store(&unblock, true);
	poll_until_done(blk);
	cr_assert_eq(dprpc_future_state(blk), DPRPC_FUTURE_DONE);
	cr_assert_eq(WAIT_B(requests_cancelled, N, false), (uint64_t)N);
	cr_assert_eq(atomic_load(&runs_count), 0u, "a cancelled request ran");
	cr_assert_eq(stats(a).calls_cancelled, (uint64_t)N);
	cr_assert_eq(b_requests(), 0u);
	dprpc_future_put(blk);
}

/* b's pool bounded by time (queue_delay_max_us 2 ms), its handler taking
 * at least 1 ms: 16 calls one after the other teach the handler lcore its
 * service time, then 100 at once, 50 times the bound's worth of work:
 * the requests beyond about two queued are answered -EBUSY at once with a
 * retry-after hint (how many depends on timing: some), never run; every
 * accepted one is answered, none times out. */
TestSuite(serving_delay, .init = setup_delay, .fini = teardown, .timeout = 120);

Test(serving_delay, slow_handlers_bounded_by_queue_delay)
{
	enum { N = 100 };
	struct dprpc_future *fs[N];
	const struct dprpc_error *e;
	unsigned int i, busy = 0, done = 0;

	warm_up();
	for (i = 0; i < 16; i++) {
		fs[0] = call("slow", 10 * 1000 * 1000);
		poll_until_done(fs[0]);
		cr_assert_eq(dprpc_future_state(fs[0]), DPRPC_FUTURE_DONE);
		dprpc_future_put(fs[0]);
	}
	for (i = 0; i < N; i++) {
		fs[i] = dprpc_rpc_async(a, "b", "slow", "x", 1, 10 * 1000 * 1000);
		cr_assert_not_null(fs[i]);
	}
	for (i = 0; i < N; i++) {
		poll_until_done(fs[i]);
		if (dprpc_future_state(fs[i]) == DPRPC_FUTURE_DONE) {
			done++;
		} else {
			e = dprpc_future_error(fs[i]);
			cr_assert_eq(e->code, -EBUSY, "call %u: %d %s", i, e->code, e->msg);
			cr_assert_geq(e->retry_after_us, 100u);
			busy++;
		}
		dprpc_future_put(fs[i]);
	}
	cr_assert_gt(busy, 0u, "nothing refused");
	cr_assert_eq(busy + done, (unsigned int)N);
	cr_assert_eq(atomic_load(&runs_slow), 16u + done, "a refused request ran");
	cr_assert_eq(stats(b).rejected_delay, busy);
	cr_assert_eq(stats(b).rejected_pool, 0u);
	cr_assert_eq(stats(a).calls_timed_out, 0u);
}

/* 5% loss each way on a, deep queues: 1000 pool requests of ~20 us, each
 * cancelled after 0 to 3 of a's polls: before it left, on its way, queued,
 * running or answered.  Every cancel is answered (or known unsent), and
 * not one request whose cancel b confirmed ran (checked once b holds no
 * request: nothing can still start). */
Test(serving_deep, a_confirmed_cancel_never_runs)
{
	enum { N = 1000 };
	static struct dprpc_future *fs[N];
	static uint64_t cancel_tsc[N];
	unsigned int i, k, stopped = 0, started = 0, late = 0, ran_started = 0, ran_after = 0;
	uint32_t id;
	int o;

	warm_up();
	for (i = 0; i < N; i++) {
		id = i;
		fs[i] = dprpc_rpc_async(a, "b", "tally", &id, sizeof(id), DPRPC_TIMEOUT_NONE);
		for (k = 0; fs[i] == NULL && rte_errno == EAGAIN && k < 100000; k++) {
			dprpc_poll(a, 32);
			usleep(k > 1000 ? 100 : 0);
			fs[i] = dprpc_rpc_async(
				a, "b", "tally", &id, sizeof(id), DPRPC_TIMEOUT_NONE);
		}
		cr_assert_not_null(fs[i], "call %u: %s", i, rte_strerror(rte_errno));
		for (k = 0; k < i % 4; k++)
			dprpc_poll(a, 32);
		cancel_tsc[i] = rte_rdtsc();
		late += dprpc_future_cancel(fs[i]) == DPRPC_CANCEL_TOO_LATE;
	}
	/* A cancelled call ends when its outcome is known; one that ended
	 * first (answered, or refused -EBUSY by b's full queue) has none. */
	for (i = 0; i < N; i++) {
		for (k = 0; k < 100000 && code_of(fs[i]) == -ECANCELED &&
			    dprpc_future_cancel_outcome(fs[i]) == DPRPC_CANCEL_UNCONFIRMED;
			k++) {
			dprpc_poll(a, 32);
			usleep(k > 100 ? 100 : 0);
		}
		cr_assert(code_of(fs[i]) != -ECANCELED ||
				  dprpc_future_cancel_outcome(fs[i]) != DPRPC_CANCEL_UNCONFIRMED,
			"call %u: its cancel was never answered", i);
	}
	cr_assert_eq(b_requests(), 0u);
	for (i = 0; i < N; i++) {
		if (code_of(fs[i]) != -ECANCELED) {
			/* Ran (answered), or refused unrun. */
			cr_assert_eq(atomic_load(&ran_ids[i]), code_of(fs[i]) == 0 ? 1u : 0u,
				"call %u: %d", i, code_of(fs[i]));
			cr_assert_eq(dprpc_future_cancel_outcome(fs[i]), DPRPC_CANCEL_UNCONFIRMED);
			dprpc_future_put(fs[i]);
			continue;
		}
		o = dprpc_future_cancel_outcome(fs[i]);
		if (o == DPRPC_CANCEL_STOPPED) {
			cr_assert_eq(
				atomic_load(&ran_ids[i]), 0u, "call %u ran, cancel confirmed", i);
			stopped++;
		} else {
			cr_assert_eq(o, DPRPC_CANCEL_STARTED, "call %u: outcome %d", i, o);
			cr_assert_leq(atomic_load(&ran_ids[i]), 1u, "call %u", i);
			ran_started += atomic_load(&ran_ids[i]);
			ran_after += atomic_load(&ran_ids[i]) &&
				     atomic_load(&ran_tsc[i]) > cancel_tsc[i];
			started++;
		}
		dprpc_future_put(fs[i]);
	}
	cr_log_info("%u cancels: %u confirmed stopped (none ran), %u started (%u ran, %u "
		    "after the cancel); %u too late; %" PRIu64 " CANCELs resent",
		N - late, stopped, started, ran_started, ran_after, late, stats(a).cancels_resent);
	cr_assert_eq(stopped + started + late, (unsigned int)N);
	cr_assert_gt(stopped, 0u);
	cr_assert_gt(stats(a).cancels_resent, 0u, "no CANCEL was lost: the test proves nothing");
}

/* After its first request, b's pool hints its backlog at its measured
 * service time: "slow" takes at least 1 ms, so the refusal of a third
 * request behind "block" and two queued hints at least three of it (the
 * running one and two queued).  The old EWMA started from 0 and hinted an
 * eighth of that. */
/* One more "count" behind "block" and two queued: refused -EBUSY; its
 * retry-after hint. */
static uint32_t
refused_hint(void)
{
	struct dprpc_future *f = call("count", DPRPC_TIMEOUT_NONE);
	const struct dprpc_error *e;
	uint32_t hint;

	poll_until_done(f);
	e = dprpc_future_error(f);
	cr_assert_not_null(e);
	cr_assert_eq(e->code, -EBUSY);
	hint = e->retry_after_us;
	dprpc_future_put(f);
	return hint;
}

/* "block" let go: it and the two queued behind it answer. */
static void
let_go(struct dprpc_future *blk, struct dprpc_future **q)
{
	atomic_store(&unblock, true);
	for (unsigned int i = 0; i < 2; i++) {
		poll_until_done(q[i]);
		dprpc_future_put(q[i]);
	}
	poll_until_done(blk);
	dprpc_future_put(blk);
}

/* One "slow" (1 ms at least) run, then "block" running and two "count"
 * queued: the retry-after hint of the refusal that follows, "block" let
 * go. */
static uint32_t
hint_after_one_slow(void)
{
	struct dprpc_future *f, *blk, *q[2];
	unsigned int i;
	uint32_t hint;

	warm_up();
	f = call("slow", DPRPC_TIMEOUT_NONE);
	poll_until_done(f);
	cr_assert_eq(dprpc_future_state(f), DPRPC_FUTURE_DONE);
	dprpc_future_put(f);
	blk = call("block", DPRPC_TIMEOUT_NONE);
	for (i = 0; i < 100000 && atomic_load(&runs_block) == 0; i++)
		usleep(100);
	q[0] = call("count", DPRPC_TIMEOUT_NONE);
	q[1] = call("count", DPRPC_TIMEOUT_NONE);
	cr_assert_eq(WAIT_B(requests_handled, 5, false), 5u);
	hint = refused_hint();
	let_go(blk, q);
	return hint;
}

Test(serving, the_first_refusal_after_one_request_hints_it_whole)
{
	uint32_t hint = hint_after_one_slow();

	cr_assert_geq(hint, 3000u, "hint %u us", hint);
}

/* A pool that has finished nothing yet: the age of what it runs is the
 * service time's lower bound.  "block" has run 5 ms (at least) when a
 * request finds the queue of 2 full: the hint is at least 3 x 5 ms. */
Test(serving, a_cold_pools_refusal_hints_the_age_of_its_work)
{
	struct dprpc_future *blk, *q[2];
	uint32_t hint;

	q[0] = queue_behind_block(&blk, "count", DPRPC_TIMEOUT_NONE);
	q[1] = call("count", DPRPC_TIMEOUT_NONE);
	cr_assert_eq(WAIT_B(requests_handled, 4, false), 4u);
	usleep(5000);
	hint = refused_hint();
	cr_assert_geq(hint, 15000u, "hint %u us", hint);
	let_go(blk, q);
}

/* A cold pool that declares its service time (1 s) hints it from its
 * first refusal: "block" running, two queued, the hint is three times
 * the declared time (less the budget encoding's rounding, 1/1024), where
 * the age of "block" alone gave milliseconds. */
TestSuite(serving_declared, .init = setup_declared, .fini = teardown, .timeout = 60);

Test(serving_declared, a_cold_pools_first_refusal_hints_the_declared_time)
{
	struct dprpc_future *blk, *q[2];
	uint32_t hint;

	q[0] = queue_behind_block(&blk, "count", DPRPC_TIMEOUT_NONE);
	q[1] = call("count", DPRPC_TIMEOUT_NONE);
	cr_assert_eq(WAIT_B(requests_handled, 4, false), 4u);
	hint = refused_hint();
	cr_assert_geq(hint, 3 * DECLARED_US - 3 * DECLARED_US / 1024, "hint %u us", hint);
	let_go(blk, q);
}

/* The first request measured replaces the declared time whole: after one
 * "slow" (1 ms, more on a stalled machine, never 1 s), the refusal behind
 * "block" and two queued hints three times what was measured. */
Test(serving_declared, the_first_measured_request_replaces_the_declared_time)
{
	uint32_t hint = hint_after_one_slow();

	cr_assert_geq(hint, 3000u, "hint %u us", hint);
	cr_assert_lt(hint, 3 * DECLARED_US - 3 * DECLARED_US / 1024, "hint %u us", hint);
}

/* a resends (no loss), b's pool deep, "slow" at least 1 ms: 16 calls one
 * after the other, then 32 at once, 32 ms of work queued.  b tells a it
 * holds each (a HELD, sent as it queues it), so a does not resend for the
 * wait: the round trip a measures is the path's, not the queue's.  Before,
 * its timeout learnt from answers 1 ms late fired again and again for the
 * requests deep in the queue (about 60 resends for 32 calls).  A stall of
 * b's poller before it takes the requests may still cost one resend each
 * (answered by a HELD), never more. */
TestSuite(serving_held, .init = setup_held, .fini = teardown, .timeout = 120);

Test(serving_held, a_busy_servers_callers_do_not_resend)
{
	enum { N = 32 };
	struct dprpc_future *fs[N];
	struct dprpc_worker_rtt rtt;
	struct dprpc_agent_stats sa, sb;
	uint64_t t0, ms = rte_get_tsc_hz() / 1000, slowest_echo, slowest = 0;
	unsigned int i;

	t0 = rte_rdtsc();
	warm_up();
	slowest_echo = rte_rdtsc() - t0;
	for (i = 0; i < 16; i++) {
		t0 = rte_rdtsc();
		fs[0] = call("slow", DPRPC_TIMEOUT_NONE);
		poll_until_done(fs[0]);
		slowest = RTE_MAX(slowest, rte_rdtsc() - t0);
		cr_assert_eq(dprpc_future_state(fs[0]), DPRPC_FUTURE_DONE);
		dprpc_future_put(fs[0]);
	}
	/* Every sample of the old estimate was 1 ms or more.  Now a sample
	 * is a call's time less b's hold (1 ms or more): with every call
	 * under 2 ms (and the echo under 1 ms) each is under 1 ms, and so is
	 * their average.  A CPU stall longer than that says nothing. */
	cr_assert_eq(dprpc_worker_rtt_get(a, 1, &rtt), 0);
	if (slowest < 2 * ms && slowest_echo < ms)
		cr_assert_lt(rtt.srtt_ns, 1000000u, "srtt %" PRIu64 " ns", rtt.srtt_ns);
	else
		cr_log_info("a call took %" PRIu64 " us: srtt %" PRIu64 " ns not judged",
			slowest * 1000 / ms, rtt.srtt_ns);
	sa = stats(a);
	for (i = 0; i < N; i++) {
		fs[i] = dprpc_rpc_async(a, "b", "slow", "x", 1, DPRPC_TIMEOUT_NONE);
		cr_assert_not_null(fs[i]);
	}
	for (i = 0; i < N; i++) {
		poll_until_done(fs[i]);
		cr_assert_eq(dprpc_future_state(fs[i]), DPRPC_FUTURE_DONE, "call %u", i);
		dprpc_future_put(fs[i]);
	}
	sb = stats(b);
	cr_assert_geq(sb.holds_sent, (uint64_t)N);
	cr_assert_eq(stats(a).holds_received, sb.holds_sent);
	cr_assert_leq(stats(a).retransmits - sa.retransmits, (uint64_t)N);
	cr_log_info("%" PRIu64 " resends, %" PRIu64 " HELD", stats(a).retransmits - sa.retransmits,
		sb.holds_sent);
}

/* a resends: a CANCEL wants its answer, which says whether the request
 * ran.  "park" runs (deferred) when its CANCEL comes: started; "count"
 * queued behind "block" is stopped and never runs. */
Test(serving_held, the_answer_to_a_cancel_says_whether_it_ran)
{
	struct dprpc_future *blk, *f, *q;
	struct dprpc_request *req;
	unsigned int i;

	warm_up();
	f = call("park", DPRPC_TIMEOUT_NONE);
	for (i = 0; i < 100000 && atomic_load(&nb_parked) == 0; i++)
		usleep(100);
	req = atomic_load(&parked[0]);
	cr_assert_not_null(req);
	blk = call("block", DPRPC_TIMEOUT_NONE);
	for (i = 0; i < 100000 && atomic_load(&runs_block) == 0; i++)
		usleep(100);
	q = call("count", DPRPC_TIMEOUT_NONE);
	cr_assert_eq(WAIT_B(requests_handled, 4, true), 4u); /* echo, park, block, count */
	cr_assert_eq(dprpc_future_cancel(f), DPRPC_CANCEL_DONE);
	cr_assert_eq(dprpc_future_cancel(q), DPRPC_CANCEL_DONE);
	for (i = 0;
		i < 100000 && (dprpc_future_cancel_outcome(f) == DPRPC_CANCEL_UNCONFIRMED ||
				      dprpc_future_cancel_outcome(q) == DPRPC_CANCEL_UNCONFIRMED);
		i++) {
		dprpc_poll(a, 32);
		usleep(100);
	}
	cr_assert_eq(dprpc_future_cancel_outcome(f), DPRPC_CANCEL_STARTED);
	cr_assert_eq(dprpc_future_cancel_outcome(q), DPRPC_CANCEL_STOPPED);
	cr_assert_eq(dprpc_request_cancelled(req), true);
	cr_assert_eq(dprpc_reply_error(req, -ECANCELED, "stopped"), 0);
	atomic_store(&unblock, true);
	poll_until_done(blk);
	cr_assert_eq(WAIT_B(requests_cancelled, 1, false), 1u);
	cr_assert_eq(atomic_load(&runs_count), 0u, "a confirmed cancel ran");
	cr_assert_eq(stats(b).cancels_received, 2u);
	dprpc_future_put(blk);
	dprpc_future_put(f);
	dprpc_future_put(q);
}
