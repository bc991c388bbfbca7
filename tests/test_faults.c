/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fault-injection layer (dprpc_fault_conf) on a net_ring pair: what it
 * does to calls, that it repeats for a seed, and that it leaks nothing;
 * then loss recovery: retransmission with at-most-once execution.
 *
 * The tests of the fault stage itself turn retransmission off, so that a
 * lost request or response shows up as exactly that call's timeout.  All
 * turn liveness (keep-alives) off (tests/test_liveness.c covers it).  One
 * PING and its PONG remain: a's first call asks b's incarnation before its
 * request goes (docs/reliability.md).  CONTROL frames pass the fault stage
 * untouched, so they change no count here.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <string.h>

#include <criterion/criterion.h>

#include <rte_errno.h>

#include "dpt.h"

static struct dpt_ring_pair pair;
static atomic_uint runs;       /* handler executions */
static uint32_t retransmit_us; /* for the next start_agents(); 0: off */
/* max_outstanding of a and b for the next start_agents(); 0: the default. */
static unsigned int a_max_out, b_max_out;

static struct rte_mempool *mp;
static struct dprpc_agent *a, *b;

static void
setup(void)
{
	cr_assert_geq(dpt_eal_init("faults"), 0);
	mp = dpt_pool_and_pair("dpt_faults", 8191, &pair);
	cr_assert_not_null(mp);
}

static void
stop_agents(void)
{
	if (a != NULL)
		cr_assert_eq(dprpc_agent_destroy(a), 0);
	if (b != NULL)
		cr_assert_eq(dprpc_agent_destroy(b), 0);
	a = b = NULL;
}

static void
teardown(void)
{
	stop_agents();
	/* Frames still on the wire when the agents went (duplicates nobody
	 * polled for) are freed with the rings, not leaked by anyone. */
	dpt_ring_drain(pair.ab);
	dpt_ring_drain(pair.ba);
	cr_expect_eq(
		rte_mempool_in_use_count(mp), 0u, "mbufs leaked: %u", rte_mempool_in_use_count(mp));
	dpt_eal_cleanup();
}

/* a calls (caller-driven), b serves echo on io lcore 1. */
static void
start_agents(const struct dprpc_fault_conf *a_tx, const struct dprpc_fault_conf *b_tx)
{
	struct dprpc_agent_conf c;

	dprpc_agent_conf_init(&c);
	c.name = "a";
	c.world = DPT_WORLD2;
	c.port.id = pair.port_a;
	c.port.mbuf_pool = mp;
	c.calls.retransmit_us = retransmit_us;
	c.liveness.keepalive_us = 0;
	c.liveness.peer_timeout_us = 0;
	if (a_max_out != 0)
		c.calls.max_outstanding = a_max_out;
	if (a_tx != NULL)
		c.faults.tx = *a_tx;
	a = dprpc_agent_create(&c);
	cr_assert_not_null(a, "%s", rte_strerror(rte_errno));
	dprpc_agent_conf_init(&c);
	c.name = "b";
	c.world = DPT_WORLD2;
	c.port.id = pair.port_b;
	c.port.mbuf_pool = mp;
	c.lcores.io = 1;
	c.calls.retransmit_us = retransmit_us;
	c.liveness.keepalive_us = 0;
	c.liveness.peer_timeout_us = 0;
	if (b_max_out != 0)
		c.calls.max_outstanding = b_max_out;
	if (b_tx != NULL)
		c.faults.tx = *b_tx;
	b = dprpc_agent_create(&c);
	cr_assert_not_null(b, "%s", rte_strerror(rte_errno));
	cr_assert_eq(dprpc_register(b, "echo", dpt_counting_echo, &runs, DPRPC_HANDLER_INLINE), 0);
}

/* n sequential calls with a short timeout; returns how many timed out and
 * checks that the others echoed their own bytes. */
static unsigned int
run_calls(unsigned int n, uint64_t timeout_us)
{
	unsigned int i, lost = 0;

	for (i = 0; i < n; i++) {
		uint32_t v = i, out = ~0u;
		size_t out_len = sizeof(out);
		int rc = dprpc_rpc_sync(
			a, "b", "echo", &v, sizeof(v), timeout_us, &out, &out_len, NULL);

		if (rc == -ETIMEDOUT) {
			lost++;
			continue;
		}
		cr_assert_eq(rc, 0, "call %u: %d", i, rc);
		cr_assert_eq(out, v);
	}
	return lost;
}

/* @rounds windows of 8 rpc_async calls, each checked for its own value. */
static void
run_windows(uint32_t rounds)
{
	struct dprpc_future *fs[8];
	uint32_t r, i;

	for (r = 0; r < rounds; r++) {
		for (i = 0; i < 8; i++) {
			uint32_t v = r * 8 + i;

			fs[i] = dprpc_rpc_async(a, "b", "echo", &v, sizeof(v), 0);
			cr_assert_not_null(fs[i]);
		}
		cr_assert_eq(dprpc_future_wait_all(fs, 8, 0), 0);
		for (i = 0; i < 8; i++) {
			size_t len;
			const uint32_t *v = dprpc_future_value(fs[i], &len);

			cr_assert_eq(len, sizeof(*v));
			cr_assert_eq(*v, r * 8 + i);
			dprpc_future_put(fs[i]);
		}
	}
}

TestSuite(faults, .init = setup, .fini = teardown, .timeout = 90);

Test(faults, off_by_default)
{
	struct dprpc_agent_stats s;

	start_agents(NULL, NULL);
	cr_assert_eq(run_calls(100, 0), 0u);
	cr_assert_eq(dprpc_agent_stats_get(a, &s), 0);
	cr_assert_eq(
		s.fault_dropped + s.fault_duplicated + s.fault_reordered + s.fault_delayed, 0u);
}

Test(faults, drop_nth_loses_exactly_those_frames)
{
	struct dprpc_fault_conf f = {.drop_nth = {2, 5}};
	struct dprpc_agent_stats s;
	unsigned int i;

	start_agents(&f, NULL);
	/* Requests 2 and 5 (1-based) never leave a: calls 1 and 4 (0-based)
	 * time out, every other call answers (500 ms: however long this
	 * machine keeps b's poller off its CPU). */
	for (i = 0; i < 6; i++) {
		uint32_t v = i;
		int rc = dprpc_rpc_sync(a, "b", "echo", &v, sizeof(v), 500000, NULL, NULL, NULL);

		cr_assert_eq(rc, (i == 1 || i == 4) ? -ETIMEDOUT : 0, "call %u: %d", i, rc);
	}
	cr_assert_eq(dprpc_agent_stats_get(a, &s), 0);
	cr_assert_eq(s.fault_dropped, 2u);
	cr_assert_eq(s.calls_timed_out, 2u);
}

/* Random loss of requests: every lost frame is exactly one timed-out call,
 * and the same seed drops the same number of the same frames (no
 * retransmission here; the pings that learn b's incarnation take no draw,
 * however many timing makes). */
Test(faults, seeded_loss_repeats)
{
	struct dprpc_fault_conf f = {.seed = 42, .drop_ppm = 200000};
	struct dprpc_agent_stats s1, s2;
	unsigned int lost1, lost2;

	start_agents(&f, NULL);
	/* 250 ms: a call whose frames all arrive must not time out, however
	 * slow a loaded machine (or ASan) makes its round trip. */
	lost1 = run_calls(200, 250000);
	cr_assert_eq(dprpc_agent_stats_get(a, &s1), 0);
	cr_assert_eq(s1.fault_dropped, lost1);
	cr_assert(lost1 > 10 && lost1 < 80, "lost %u of 200 at 20%%", lost1);
	stop_agents();
	start_agents(&f, NULL);
	lost2 = run_calls(200, 250000);
	cr_assert_eq(dprpc_agent_stats_get(a, &s2), 0);
	cr_assert_eq(s2.fault_dropped, s1.fault_dropped);
	cr_assert_eq(lost2, s2.fault_dropped);
}

/* Every response duplicated: each call completes once, with its own
 * bytes; the second copy finds no pending call and is counted stale. */
Test(faults, duplicated_responses_are_dropped_as_stale)
{
	struct dprpc_fault_conf f = {.seed = 7, .dup_ppm = 1000000};
	struct dprpc_agent_stats s;

	start_agents(NULL, &f);
	cr_assert_eq(run_calls(100, 0), 0u);
	/* The last duplicate may still be on its way. */
	dpt_poll_until_drops(a, DPRPC_DROP_STALE, 100, &s);
	cr_assert_eq(s.drops[DPRPC_DROP_STALE], 100u);
	cr_assert_eq(s.calls_ok, 100u);
	cr_assert_eq(dprpc_agent_stats_get(b, &s), 0);
	cr_assert_eq(s.fault_duplicated, 100u);
}

/* Reordered requests in a window: all complete, each with its own value. */
Test(faults, reordering_keeps_every_call_whole)
{
	struct dprpc_fault_conf f = {.seed = 3, .reorder_ppm = 500000};
	struct dprpc_agent_stats s;

	start_agents(&f, &f);
	run_windows(50);
	cr_assert_eq(dprpc_agent_stats_get(a, &s), 0);
	cr_assert_gt(s.fault_reordered, 0u);
}

/* Delayed responses: a call whose timeout is shorter than the delay times
 * out, one with room to spare completes.  The delay is 500 times the short
 * timeout: a client thread taken off the CPU for longer than the gap would
 * poll the late response in before its timer (seen at 5 ms under load);
 * the long timeout leaves a second more than the delay for the same. */
Test(faults, delay_holds_frames_back)
{
	struct dprpc_fault_conf f = {.delay_ppm = 1000000, .delay_us = 500000};
	struct dprpc_agent_stats s;

	start_agents(NULL, &f);
	/* a learns b's incarnation first (b's PONG is not delayed). */
	cr_assert_eq(run_calls(1, 1500000), 0u);
	cr_assert_eq(run_calls(1, 1000), 1u);
	cr_assert_eq(run_calls(3, 1500000), 0u);
	cr_assert_eq(dprpc_agent_stats_get(b, &s), 0);
	cr_assert_eq(s.fault_delayed, 5u); /* the 5 responses */
}

/* Frames still held when an agent goes are freed with it. */
Test(faults, held_frames_are_freed_at_destroy)
{
	struct dprpc_fault_conf f = {.delay_ppm = 1000000, .delay_us = 10 * 1000 * 1000};
	struct dprpc_future *fut;

	start_agents(&f, NULL);
	fut = dprpc_rpc_async(a, "b", "echo", "x", 1, 0);
	cr_assert_not_null(fut);
	dprpc_future_put(fut);
	/* teardown destroys a with the request held, then checks mbufs. */
}

/* Every request sent twice: each handler runs once.  The copy finds its
 * call answered (the stored response goes out again, and the caller drops
 * it as stale) or still running (dropped as a duplicate). */
Test(faults, duplicated_requests_run_once)
{
	struct dprpc_fault_conf f = {.seed = 11, .dup_ppm = 1000000};
	struct dprpc_agent_stats sa, sb;

	start_agents(&f, NULL);
	cr_assert_eq(run_calls(100, 0), 0u);
	for (int i = 0; i < 100000; i++) { /* bounded: 10 s */
		dprpc_poll(a, 32);
		cr_assert_eq(dprpc_agent_stats_get(b, &sb), 0);
		cr_assert_eq(dprpc_agent_stats_get(a, &sa), 0);
		if (sb.requests_resent + sb.drops[DPRPC_DROP_DUPLICATE] == 100 &&
			sa.drops[DPRPC_DROP_STALE] == sb.requests_resent)
			break;
		usleep(100);
	}
	cr_assert_eq(atomic_load(&runs), 100u);
	cr_assert_eq(sb.requests_handled, 100u);
	cr_assert_eq(sb.requests_resent + sb.drops[DPRPC_DROP_DUPLICATE], 100u);
	cr_assert_eq(sa.drops[DPRPC_DROP_STALE], sb.requests_resent);
	cr_assert_eq(sa.calls_ok, 100u);
}

/* Duplicated and reordered requests in a window of 8, responses reordered
 * too: every call completes with its own value, every handler runs once. */
Test(faults, duplicated_and_reordered_requests_run_once)
{
	struct dprpc_fault_conf fa = {.seed = 5, .dup_ppm = 300000, .reorder_ppm = 300000};
	struct dprpc_fault_conf fb = {.seed = 6, .reorder_ppm = 300000};

	start_agents(&fa, &fb);
	run_windows(50);
	cr_assert_eq(atomic_load(&runs), 400u);
}

/* Loss recovery: the first request is lost, the call still completes. */
Test(faults, lost_request_is_resent)
{
	struct dprpc_fault_conf f = {.drop_nth = {1}};
	struct dprpc_agent_stats s;

	retransmit_us = 1000;
	start_agents(&f, NULL);
	cr_assert_eq(run_calls(3, 0), 0u);
	cr_assert_eq(dprpc_agent_stats_get(a, &s), 0);
	cr_assert_eq(s.fault_dropped, 1u);
	cr_assert_geq(s.retransmits, 1u);
	cr_assert_eq(atomic_load(&runs), 3u);
}

/* The first response is lost: the client resends the request, the server
 * answers from its kept response without running the handler again. */
Test(faults, lost_response_is_answered_again)
{
	struct dprpc_fault_conf f = {.drop_nth = {1}};
	struct dprpc_agent_stats s;

	retransmit_us = 1000;
	start_agents(NULL, &f);
	cr_assert_eq(run_calls(3, 0), 0u);
	cr_assert_eq(atomic_load(&runs), 3u);
	cr_assert_eq(dprpc_agent_stats_get(b, &s), 0);
	cr_assert_eq(s.fault_dropped, 1u);
	cr_assert_geq(s.requests_resent, 1u);
}

/* Frames too long to be copied into the slot (DP_KEEP_BYTES) are kept by
 * reference: a 1000-byte request and its response are both lost once and
 * recovered, the handler running once. */
Test(faults, lost_long_request_and_response_recover)
{
	struct dprpc_fault_conf fa = {.drop_nth = {1}}, fb = {.drop_nth = {1}};
	struct dprpc_agent_stats sa, sb;
	uint8_t in[1000], out[1000];
	size_t len = sizeof(out);
	unsigned int i;

	for (i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 7 + 3);
	retransmit_us = 1000;
	start_agents(&fa, &fb);
	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", in, sizeof(in), 0, out, &len, NULL), 0);
	cr_assert_eq(len, sizeof(in));
	cr_assert_arr_eq(out, in, sizeof(in));
	cr_assert_eq(atomic_load(&runs), 1u);
	cr_assert_eq(dprpc_agent_stats_get(a, &sa), 0);
	cr_assert_eq(dprpc_agent_stats_get(b, &sb), 0);
	cr_assert_eq(sa.fault_dropped, 1u);
	cr_assert_eq(sb.fault_dropped, 1u);
	cr_assert_geq(sa.retransmits, 2u);
	cr_assert_geq(sb.requests_resent, 1u);
}

/* Counts its runs, then fails with -EPERM and a message. */
static int
h_refuse(struct dprpc_request *req, void *arg)
{
	(void)arg;
	atomic_fetch_add(&runs, 1);
	return dprpc_reply_error(req, -EPERM, "refused by b");
}

/* Short frames are kept as their handler id, status and payload, and
 * their headers rebuilt on a resend: a lost 48-byte request and its lost
 * echo, then a lost error answer, come back byte for byte, with the same
 * status and message, each handler running once. */
Test(faults, lost_short_frames_come_back_whole)
{
	/* b's frames: 1 the echo (lost), 2 its resend, 3 the error (lost),
	 * 4 its resend. */
	struct dprpc_fault_conf fa = {.drop_nth = {1}}, fb = {.drop_nth = {1, 3}};
	struct dprpc_agent_stats sa, sb;
	uint8_t in[48], out[48];
	size_t len = sizeof(out);
	struct dprpc_error err;
	unsigned int i;

	for (i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 11 + 5);
	retransmit_us = 1000;
	start_agents(&fa, &fb);
	cr_assert_eq(dprpc_register(b, "refuse", h_refuse, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", in, sizeof(in), 0, out, &len, NULL), 0);
	cr_assert_eq(len, sizeof(in));
	cr_assert_arr_eq(out, in, sizeof(in));
	len = sizeof(out);
	cr_assert_eq(dprpc_rpc_sync(a, "b", "refuse", in, 5, 0, out, &len, &err), -EPERM);
	cr_assert_str_eq(err.msg, "refused by b");
	cr_assert_eq(atomic_load(&runs), 2u);
	cr_assert_eq(dprpc_agent_stats_get(a, &sa), 0);
	cr_assert_eq(dprpc_agent_stats_get(b, &sb), 0);
	cr_assert_eq(sa.fault_dropped, 1u);
	cr_assert_eq(sb.fault_dropped, 2u);
	cr_assert_geq(sa.retransmits, 3u);
	cr_assert_geq(sb.requests_resent, 2u);
	for (i = DPRPC_DROP_TRUNCATED; i <= DPRPC_DROP_UNSUPPORTED; i++)
		cr_assert_eq(sa.drops[i] + sb.drops[i], 0u, "drop reason %u", i);
}

/* 20% loss both ways, sequential calls without timeout: every call
 * completes with its own bytes and every handler runs exactly once. */
Test(faults, random_loss_both_ways_recovers)
{
	struct dprpc_fault_conf fa = {.seed = 21, .drop_ppm = 200000};
	struct dprpc_fault_conf fb = {.seed = 22, .drop_ppm = 200000};
	struct dprpc_agent_stats sa, sb;

	retransmit_us = 200;
	start_agents(&fa, &fb);
	cr_assert_eq(run_calls(200, 0), 0u);
	cr_assert_eq(atomic_load(&runs), 200u);
	cr_assert_eq(dprpc_agent_stats_get(a, &sa), 0);
	cr_assert_eq(dprpc_agent_stats_get(b, &sb), 0);
	cr_assert_gt(sa.retransmits, 0u);
	cr_assert_gt(sa.fault_dropped + sb.fault_dropped, 0u);
	cr_assert_eq(sa.calls_ok, 200u);
}

/* Loss, duplication and reordering together in a window of 8. */
Test(faults, window_under_loss_dup_reorder_recovers)
{
	struct dprpc_fault_conf fa = {
		.seed = 31, .drop_ppm = 50000, .dup_ppm = 50000, .reorder_ppm = 100000};
	struct dprpc_fault_conf fb = {.seed = 32, .drop_ppm = 50000, .reorder_ppm = 100000};

	retransmit_us = 200;
	start_agents(&fa, &fb);
	run_windows(50);
	cr_assert_eq(atomic_load(&runs), 400u);
}

/* A caller with more slots than its server keeps per peer (256 against
 * 4): a window of 200 calls, every request duplicated and some reordered
 * both ways, 1 in 8 of them a 4000-byte message of three frames.  The
 * server grows its per-peer state to the slots the caller uses: every
 * call completes with its own bytes (before, the calls beyond four failed
 * -ERANGE, or waited for ever when multi-frame) and every handler runs
 * exactly once, on the new slots as on the first four. */
Test(faults, caller_with_more_slots_than_its_server)
{
	struct dprpc_fault_conf fa = {.seed = 41, .dup_ppm = 1000000, .reorder_ppm = 200000};
	struct dprpc_fault_conf fb = {.seed = 42, .reorder_ppm = 200000};
	enum { N = 200, BIG = 4000 };
	static uint8_t big[N][BIG];
	struct dprpc_future *fs[N];
	struct dprpc_agent_stats sa, sb;
	unsigned int i, k;

	a_max_out = 256;
	b_max_out = 4;
	retransmit_us = 1000;
	start_agents(&fa, &fb);
	for (i = 0; i < N; i++) {
		if (i % 8 == 0) {
			for (k = 0; k < BIG; k++)
				big[i][k] = (uint8_t)(i * 31 + k * 7);
			fs[i] = dprpc_rpc_async(a, "b", "echo", big[i], BIG, 0);
		} else {
			fs[i] = dprpc_rpc_async(a, "b", "echo", &i, sizeof(i), 0);
		}
		cr_assert_not_null(fs[i], "call %u: %s", i, rte_strerror(rte_errno));
	}
	cr_assert_eq(dprpc_future_wait_all(fs, N, 0), 0);
	for (i = 0; i < N; i++) {
		size_t len;
		const void *v = dprpc_future_value(fs[i], &len);

		cr_assert_eq(dprpc_future_state(fs[i]), DPRPC_FUTURE_DONE, "call %u", i);
		if (i % 8 == 0) {
			cr_assert_eq(len, (size_t)BIG, "call %u", i);
			cr_assert_arr_eq(v, big[i], BIG, "call %u", i);
		} else {
			cr_assert_eq(len, sizeof(i), "call %u", i);
			cr_assert_eq(*(const unsigned int *)v, i, "call %u", i);
		}
		dprpc_future_put(fs[i]);
	}
	cr_assert_eq(atomic_load(&runs), (unsigned int)N);
	cr_assert_eq(dprpc_agent_stats_get(a, &sa), 0);
	cr_assert_eq(dprpc_agent_stats_get(b, &sb), 0);
	cr_assert_eq(sa.calls_ok, (uint64_t)N);
	cr_assert_eq(sb.requests_handled, (uint64_t)N);
	cr_assert_eq(sb.drops[DPRPC_DROP_NO_MEMORY], 0u);
	cr_assert_gt(sa.fault_duplicated, (uint64_t)N - 1);
	a_max_out = b_max_out = 0;
}

/* The resend timeout adapts to the round trip.  It starts at
 * retransmit_us (50 ms here); after 50 calls over net_ring it is the
 * measured round trip plus at least the timer's 100 us, far below that.
 * Then a request is lost (a's 520th frame): the call completes, resent;
 * the resend backs the peer's timeout off (to twice what it was, or more
 * if a stall made more resends; what it was may hold a recent stall) until
 * calls answered without a resend bring it down again.  (Timeouts in ns come from TSC counts: equal to
 * within a few ns.) */
Test(faults, resend_timeout_adapts_to_the_round_trip)
{
	/* After the longest warm-up below: 500 calls. */
	struct dprpc_fault_conf f = {.drop_nth = {520}};
	struct dprpc_worker_rtt r0, r1, before, after, r3;
	struct dprpc_agent_stats s;
	unsigned int i, n;

	retransmit_us = 50000;
	start_agents(&f, NULL);
	cr_assert_eq(dprpc_worker_rtt_get(a, 1, &r0), 0);
	cr_assert_eq(r0.srtt_ns, 0u);
	cr_assert(r0.rto_ns > 50000000u - 1000 && r0.rto_ns < 50000000u + 1000, "%" PRIu64,
		r0.rto_ns);
	cr_assert_eq(dprpc_worker_rtt_get(a, 0, &r0), -ENOENT);
	cr_assert_eq(dprpc_worker_rtt_get(a, 7, &r0), -ENOENT);
	cr_assert_eq(dprpc_worker_rtt_get(NULL, 1, &r0), -EINVAL);
	cr_assert_eq(dprpc_worker_rtt_get(a, 1, NULL), -EINVAL);
	/* 50 calls, and more while a stall of this machine's sits in the
	 * estimate (it decays by a quarter per call). */
	for (i = 0; i < 10; i++) {
		cr_assert_eq(run_calls(50, 0), 0u);
		cr_assert_eq(dprpc_worker_rtt_get(a, 1, &r1), 0);
		if (r1.rto_ns < 50000000u)
			break;
	}
	n = 50 * (i + 1);
	cr_assert_gt(r1.srtt_ns, 0u);
	cr_assert_geq(r1.rto_ns, r1.srtt_ns + 99000u);
	cr_assert_lt(r1.rto_ns, 50000000u, "rto %" PRIu64 " ns", r1.rto_ns);
	/* One call at a time until the lost frame's call (the 520th frame,
	 * or earlier if a stall made a resend). */
	for (i = 0; i < 600; i++) {
		cr_assert_eq(dprpc_worker_rtt_get(a, 1, &before), 0);
		cr_assert_eq(run_calls(1, 0), 0u);
		cr_assert_eq(dprpc_agent_stats_get(a, &s), 0);
		if (s.fault_dropped == 1)
			break;
	}
	cr_assert_eq(s.fault_dropped, 1u);
	cr_assert_geq(s.retransmits, 1u);
	cr_assert_eq(dprpc_worker_rtt_get(a, 1, &after), 0);
	cr_assert_geq(after.rto_ns, 2 * before.rto_ns - 2, "%" PRIu64 " after %" PRIu64,
		after.rto_ns, before.rto_ns);
	n += i + 1;
	/* Measured again: back below the configured timeout. */
	for (i = 0; i < 10; i++) {
		cr_assert_eq(run_calls(50, 0), 0u);
		n += 50;
		cr_assert_eq(dprpc_worker_rtt_get(a, 1, &r3), 0);
		if (r3.rto_ns < 50000000u)
			break;
	}
	cr_assert_lt(r3.rto_ns, 50000000u);
	cr_assert_geq(r3.rto_ns, r3.srtt_ns + 99000u);
	cr_assert_eq(dprpc_agent_stats_get(a, &s), 0);
	cr_assert_eq(s.calls_timed_out, 0u);
	cr_assert_eq(atomic_load(&runs), n);
}
