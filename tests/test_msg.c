/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Multi-frame messages on a net_ring pair: requests and responses from
 * 1 KiB to 8 MiB arrive byte-exact; limits give -EMSGSIZE; lost, duplicated
 * and reordered frames (the dataplane's fault injection) are recovered with
 * every handler run exactly once; a receiver short of mbufs cuts its
 * credits; nothing leaks (mbufs, futures, requests, message buffers).
 *
 * a calls, caller-driven; b serves on io lcore 1.  Payloads are a
 * position-dependent pattern seeded per call, so a frame put at the wrong
 * offset or a stale frame of another call shows.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <rte_errno.h>

#include "dp_agent.h"
#include "dpt.h"

#define MIB (1024u * 1024u)

static struct dpt_ring_pair pair;
static struct rte_mempool *mp;
static struct dprpc_agent *a, *b;
static atomic_uint runs;

/* Per-agent settings for the next start_agents(). */
struct side {
	struct dprpc_fault_conf tx;
	uint32_t max_msg;
	uint32_t retransmit_us;
	unsigned int credits;
};

static void
fill(uint8_t *p, size_t len, uint32_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
	size_t i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

/* True if @p holds fill(len, seed). */
static bool
check(const uint8_t *p, size_t len, uint32_t seed)
{
	uint8_t *want = malloc(len ? len : 1);
	bool ok;

	cr_assert_not_null(want);
	fill(want, len, seed);
	ok = memcmp(p, want, len) == 0;
	free(want);
	return ok;
}

/* Request: {uint32 len, uint32 seed}; answers fill(len, seed). */
static int
h_gen(struct dprpc_request *req, void *arg)
{
	size_t len;
	const uint32_t *q = dprpc_request_payload(req, &len);
	uint8_t *out;
	int rc;

	(void)arg;
	atomic_fetch_add(&runs, 1);
	if (len != 8)
		return -EINVAL;
	out = malloc(q[0] ? q[0] : 1);
	if (out == NULL)
		return -ENOMEM;
	fill(out, q[0], q[1]);
	rc = dprpc_reply(req, out, q[0]);
	free(out);
	return rc;
}

/* Answers 4 bytes: 1 if the payload is fill(len, its first byte's seed
 * given in the handler's arg), else 0. */
static int
h_sink(struct dprpc_request *req, void *arg)
{
	size_t len;
	const uint8_t *p = dprpc_request_payload(req, &len);
	uint32_t ok = check(p, len, (uint32_t)(uintptr_t)arg);

	atomic_fetch_add(&runs, 1);
	return dprpc_reply(req, &ok, sizeof(ok));
}

static struct dprpc_agent *
make(const char *name, int port, unsigned int io_lcore, const struct side *s)
{
	struct dprpc_agent_conf c;
	struct dprpc_agent *ag;

	dprpc_agent_conf_init(&c);
	c.name = name;
	c.world = DPT_WORLD2;
	c.port_id = port;
	c.mbuf_pool = mp;
	c.io_lcore = io_lcore;
	c.keepalive_us = 0;
	c.peer_timeout_us = 0;
	if (s != NULL) {
		c.fault_tx = s->tx;
		if (s->max_msg != 0)
			c.max_msg_size = s->max_msg;
		if (s->retransmit_us != 0)
			c.retransmit_us = s->retransmit_us;
		if (s->credits != 0)
			c.credits = s->credits;
	}
	ag = dprpc_agent_create(&c);
	cr_assert_not_null(ag, "agent %s: %s", name, rte_strerror(rte_errno));
	return ag;
}

static void
start_agents(const struct side *sa, const struct side *sb)
{
	a = make("a", pair.port_a, DPRPC_LCORE_NONE, sa);
	b = make("b", pair.port_b, 1, sb);
	cr_assert_eq(dprpc_register(b, "echo", dpt_counting_echo, &runs, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(b, "gen", h_gen, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(
		dprpc_register(b, "sink", h_sink, (void *)(uintptr_t)7, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(a, "echo", dpt_counting_echo, &runs, DPRPC_HANDLER_INLINE), 0);
}

static void
setup(void)
{
	cr_assert_geq(dpt_eal_init("msg"), 0);
	mp = dpt_pool_and_pair("dpt_msg", 8191, &pair);
	cr_assert_not_null(mp);
	atomic_store(&runs, 0);
}

static void
assert_idle(struct dprpc_agent *ag)
{
	struct dprpc_agent_usage u;

	cr_assert_eq(dprpc_agent_usage(ag, &u), 0);
	cr_expect_eq(u.futures, 0u, "futures in use: %u", u.futures);
	cr_expect_eq(u.requests, 0u, "requests in use: %u", u.requests);
	cr_expect_eq(u.calls, 0u, "calls in flight: %u", u.calls);
}

static void
teardown(void)
{
	if (a != NULL) {
		assert_idle(a);
		cr_assert_eq(dprpc_agent_destroy(a), 0);
	}
	if (b != NULL) {
		assert_idle(b);
		cr_assert_eq(dprpc_agent_destroy(b), 0);
	}
	a = b = NULL;
	/* Frames still on the wire when the agents went (final ACKs nobody
	 * polled for) are freed with the rings, not leaked by anyone. */
	dpt_ring_drain(pair.ab);
	dpt_ring_drain(pair.ba);
	cr_expect_eq(
		rte_mempool_in_use_count(mp), 0u, "mbufs leaked: %u", rte_mempool_in_use_count(mp));
	dpt_eal_cleanup();
}

TestSuite(msg, .init = setup, .fini = teardown, .timeout = 120);

/* Echo @len bytes of fill(seed) to @to; asserts the answer. */
static void
echo_one(struct dprpc_agent *from, const char *to, size_t len, uint32_t seed)
{
	uint8_t *in = malloc(len), *out = malloc(len + 1);
	size_t out_len = len + 1;
	struct dprpc_error err;
	int rc;

	cr_assert(in != NULL && out != NULL);
	fill(in, len, seed);
	rc = dprpc_rpc_sync(from, to, "echo", in, len, 0, out, &out_len, &err);
	cr_assert_eq(rc, 0, "echo of %zu bytes: %d %s", len, rc, rc ? err.msg : "");
	cr_assert_eq(out_len, len);
	cr_assert(check(out, len, seed), "echo of %zu bytes differs", len);
	free(in);
	free(out);
}

Test(msg, sizes_round_trip_byte_exact)
{
	static const size_t sizes[] = {1024, DPRPC_MAX_FRAME_PAYLOAD, DPRPC_MAX_FRAME_PAYLOAD + 1,
		2 * DPRPC_MAX_FRAME_PAYLOAD, 64 * 1024, MIB, 8 * MIB};
	struct dprpc_agent_stats sa, sb;
	struct dprpc_agent_usage u;
	unsigned int i, multi = 0;

	start_agents(NULL, NULL);
	for (i = 0; i < RTE_DIM(sizes); i++) {
		echo_one(a, "b", sizes[i], i + 1);
		multi += sizes[i] > DPRPC_MAX_FRAME_PAYLOAD;
	}
	cr_assert_eq(atomic_load(&runs), RTE_DIM(sizes));
	cr_assert_eq(dprpc_agent_stats_get(a, &sa), 0);
	cr_assert_eq(dprpc_agent_stats_get(b, &sb), 0);
	/* Each multi-frame echo is one message each way. */
	cr_assert_eq(sa.msgs_sent, multi);
	cr_assert_eq(sb.msgs_received, multi);
	cr_assert_eq(sb.msgs_sent, multi);
	cr_assert_eq(sa.msgs_received, multi);
	cr_assert_gt(sa.acks_sent, 0u);
	cr_assert_gt(sb.acks_sent, 0u);
	/* Loss-free: nothing dropped but what the 1 ms resend timer may send
	 * twice when this machine stalls (a handler copying 8 MiB may). */
	cr_assert_eq(sa.dropped - sa.drops[DPRPC_DROP_DUPLICATE] - sa.drops[DPRPC_DROP_STALE], 0u);
	cr_assert_eq(sb.dropped - sb.drops[DPRPC_DROP_DUPLICATE] - sb.drops[DPRPC_DROP_STALE], 0u);
	/* The server let go of each response once acknowledged whole. */
	cr_assert_eq(dprpc_agent_usage(b, &u), 0);
	cr_assert_eq(u.messages, 0u);
	cr_assert_eq(dprpc_agent_usage(a, &u), 0);
	cr_assert_eq(u.messages, 0u);
}

/* A large request with a small answer, a small request with a large one,
 * and a window of large calls in flight at once. */
Test(msg, one_way_and_windows)
{
	struct dprpc_future *fs[6];
	uint32_t ok = 0, q[2] = {3 * MIB + 5, 99};
	size_t len = sizeof(ok);
	uint8_t *big = malloc(2 * MIB);
	const uint8_t *v;
	unsigned int i;

	cr_assert_not_null(big);
	start_agents(NULL, NULL);
	fill(big, 2 * MIB, 7);
	cr_assert_eq(dprpc_rpc_sync(a, "b", "sink", big, 2 * MIB, 0, &ok, &len, NULL), 0);
	cr_assert_eq(ok, 1u);
	fs[0] = dprpc_rpc_async(a, "b", "gen", q, sizeof(q), 0);
	cr_assert_not_null(fs[0]);
	cr_assert_eq(dprpc_future_wait(fs[0], 0), 0);
	v = dprpc_future_value(fs[0], &len);
	cr_assert_eq(len, q[0]);
	cr_assert_eq((uintptr_t)v % DPRPC_PAYLOAD_ALIGN, 0u);
	cr_assert(check(v, len, 99));
	dprpc_future_put(fs[0]);
	for (i = 0; i < RTE_DIM(fs); i++) {
		fill(big, 256 * 1024 + i, 100 + i);
		fs[i] = dprpc_rpc_async(a, "b", "echo", big, 256 * 1024 + i, 0);
		cr_assert_not_null(fs[i]);
	}
	cr_assert_eq(dprpc_future_wait_all(fs, RTE_DIM(fs), 0), 0);
	for (i = 0; i < RTE_DIM(fs); i++) {
		v = dprpc_future_value(fs[i], &len);
		cr_assert_eq(len, 256 * 1024 + i);
		cr_assert(check(v, len, 100 + i));
		dprpc_future_put(fs[i]);
	}
	free(big);
}

/* Calls to self loop back without the wire, frames and all. */
Test(msg, call_to_self)
{
	struct dprpc_agent_usage u;

	start_agents(NULL, NULL);
	echo_one(a, "a", 300 * 1000, 5);
	echo_one(a, "a", 3000, 6);
	cr_assert_eq(atomic_load(&runs), 2u);
	cr_assert_eq(dprpc_agent_usage(a, &u), 0);
	cr_assert_eq(u.messages, 0u);
}

Test(msg, limits_give_emsgsize)
{
	struct side sb = {.max_msg = 64 * 1024};
	struct dprpc_agent_stats s;
	struct dprpc_agent_conf c;
	uint32_t q[2] = {100 * 1000, 1};
	uint8_t *big = calloc(1, DPRPC_MAX_MSG_DEFAULT + 1);
	uint8_t out[16];
	size_t len = sizeof(out);
	struct dprpc_error err;

	cr_assert_not_null(big);
	start_agents(NULL, &sb);
	/* Over the caller's own limit: refused at once. */
	cr_assert_null(dprpc_rpc_async(a, "b", "echo", big, DPRPC_MAX_MSG_DEFAULT + 1, 0));
	cr_assert_eq(rte_errno, EMSGSIZE);
	/* Over the server's: its answer. */
	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", big, 65 * 1024, 0, out, &len, &err), -EMSGSIZE);
	cr_assert_eq(err.origin, 1u);
	cr_assert(strstr(err.msg, "max_msg_size") != NULL, "%s", err.msg);
	/* A reply over the server's limit: the handler's dprpc_reply()
	 * fails, so the handler fails the call. */
	len = sizeof(out);
	cr_assert_eq(dprpc_rpc_sync(a, "b", "gen", q, sizeof(q), 0, out, &len, &err), -EMSGSIZE);
	cr_assert_eq(dprpc_agent_stats_get(b, &s), 0);
	cr_assert_eq(s.drops[DPRPC_DROP_TOO_BIG], 1u);
	/* The agent still works. */
	echo_one(a, "b", 60 * 1024, 3);
	/* Configuration bounds. */
	dprpc_agent_conf_init(&c);
	cr_assert_eq(c.max_msg_size, DPRPC_MAX_MSG_DEFAULT);
	c.name = "c";
	c.world = DPT_WORLD2;
	c.port_id = pair.port_a;
	c.max_msg_size = DPRPC_MAX_MSG_LIMIT + 1;
	cr_assert_null(dprpc_agent_create(&c));
	c.max_msg_size = DPRPC_MAX_MSG_DEFAULT;
	c.credits = 0;
	cr_assert_null(dprpc_agent_create(&c));
	free(big);
}

/* A response longer than the client's limit fails the call with
 * -EMSGSIZE, and the server is told to let it go. */
Test(msg, response_over_client_limit)
{
	struct side sa = {.max_msg = 32 * 1024};
	uint32_t q[2] = {40 * 1024, 2};
	struct dprpc_agent_usage u;
	struct dprpc_error err;
	uint8_t out[16];
	size_t len = sizeof(out);
	unsigned int i;

	start_agents(&sa, NULL);
	cr_assert_eq(dprpc_rpc_sync(a, "b", "gen", q, sizeof(q), 0, out, &len, &err), -EMSGSIZE);
	cr_assert(strstr(err.msg, "exceeds max_msg_size") != NULL, "%s", err.msg);
	for (i = 0; i < 1000; i++) {
		cr_assert_eq(dprpc_agent_usage(b, &u), 0);
		if (u.messages == 0)
			break;
		usleep(1000);
	}
	cr_assert_eq(u.messages, 0u);
}

/* The first and the last frame of a request are lost: both recover, the
 * handler runs once per call. */
Test(msg, lost_first_and_last_request_frames)
{
	/* a's frames 1..20 are the first request's (b acknowledges later). */
	struct side sa = {.tx = {.drop_nth = {1, 20}}, .retransmit_us = 500};
	struct dprpc_agent_stats st;

	start_agents(&sa, NULL);
	echo_one(a, "b", 20 * DPRPC_MAX_FRAME_PAYLOAD, 11);
	echo_one(a, "b", 20 * DPRPC_MAX_FRAME_PAYLOAD, 12);
	cr_assert_eq(atomic_load(&runs), 2u);
	cr_assert_eq(dprpc_agent_stats_get(a, &st), 0);
	cr_assert_eq(st.fault_dropped, 2u);
	cr_assert_geq(st.frames_resent, 2u);
}

/* The first and the last frame of a response are lost: the client asks
 * for them again; the handler is not run again. */
Test(msg, lost_first_and_last_response_frames)
{
	/* The request fits one frame: b's frames 1..20 are the response. */
	struct side sb = {.tx = {.drop_nth = {1, 20}}, .retransmit_us = 500};
	uint32_t q[2] = {20 * DPRPC_MAX_FRAME_PAYLOAD, 13};
	struct dprpc_agent_stats st;
	struct dprpc_future *f;
	const uint8_t *v;
	size_t len;

	start_agents(NULL, &sb);
	f = dprpc_rpc_async(a, "b", "gen", q, sizeof(q), 0);
	cr_assert_not_null(f);
	cr_assert_eq(dprpc_future_wait(f, 0), 0);
	v = dprpc_future_value(f, &len);
	cr_assert_eq(len, q[0]);
	cr_assert(check(v, len, 13));
	dprpc_future_put(f);
	cr_assert_eq(atomic_load(&runs), 1u);
	cr_assert_eq(dprpc_agent_stats_get(b, &st), 0);
	cr_assert_eq(st.fault_dropped, 2u);
	cr_assert_geq(st.frames_resent, 2u);
}

/* Random loss, duplication and reordering both ways over windows of
 * large calls: every call completes byte-exact, every handler runs once. */
static void
lossy_windows(uint32_t drop_ppm, unsigned int rounds)
{
	struct side sa = {
		.tx = {.seed = 41, .drop_ppm = drop_ppm, .dup_ppm = 20000, .reorder_ppm = 50000},
		.retransmit_us = 300};
	struct side sb = {
		.tx = {.seed = 42, .drop_ppm = drop_ppm, .dup_ppm = 20000, .reorder_ppm = 50000},
		.retransmit_us = 300};
	struct dprpc_future *fs[4];
	struct dprpc_agent_stats sta, stb;
	uint8_t *buf = malloc(200 * 1000);
	unsigned int r, i;

	cr_assert_not_null(buf);
	start_agents(&sa, &sb);
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < RTE_DIM(fs); i++) {
			size_t len = 1000 + (r * 37 + i) * 9973 % (199 * 1000);

			fill(buf, len, r * 4 + i);
			fs[i] = dprpc_rpc_async(a, "b", "echo", buf, len, 0);
			cr_assert_not_null(fs[i]);
		}
		cr_assert_eq(dprpc_future_wait_all(fs, RTE_DIM(fs), 0), 0);
		for (i = 0; i < RTE_DIM(fs); i++) {
			size_t len;
			const uint8_t *v = dprpc_future_value(fs[i], &len);

			cr_assert_eq(len, 1000 + (r * 37 + i) * 9973 % (199 * 1000));
			cr_assert(check(v, len, r * 4 + i), "round %u call %u differs", r, i);
			dprpc_future_put(fs[i]);
		}
	}
	cr_assert_eq(atomic_load(&runs), rounds * RTE_DIM(fs));
	cr_assert_eq(dprpc_agent_stats_get(a, &sta), 0);
	cr_assert_eq(dprpc_agent_stats_get(b, &stb), 0);
	cr_assert_gt(sta.fault_dropped + stb.fault_dropped, 0u);
	cr_assert_gt(sta.frames_resent + stb.frames_resent, 0u);
	cr_assert_eq(sta.calls_ok, rounds * RTE_DIM(fs));
	free(buf);
}

Test(msg, loss_1pct_dup_reorder)
{
	lossy_windows(10000, 30);
}

Test(msg, loss_5pct_dup_reorder)
{
	lossy_windows(50000, 20);
}

Test(msg, loss_20pct_dup_reorder)
{
	lossy_windows(200000, 8);
}

/* A receiver whose mbuf pool is under a quarter full grants fewer
 * credits; the transfer goes on, slower, and completes. */
Test(msg, short_of_mbufs_cuts_credits)
{
	static struct rte_mbuf *held[6400];
	struct dprpc_agent_stats s;
	unsigned int n;

	start_agents(NULL, NULL);
	for (n = 0; n < RTE_DIM(held); n++) {
		held[n] = rte_pktmbuf_alloc(mp);
		if (held[n] == NULL)
			break;
	}
	cr_assert_lt(rte_mempool_avail_count(mp), mp->size / 4);
	echo_one(a, "b", 300 * 1000, 9);
	rte_pktmbuf_free_bulk(held, n);
	cr_assert_eq(dprpc_agent_stats_get(b, &s), 0);
	cr_assert_gt(s.credits_cut, 0u);
	cr_assert_eq(dprpc_agent_stats_get(a, &s), 0);
	cr_assert_gt(s.credits_cut, 0u);
	echo_one(a, "b", 300 * 1000, 10);
}

/* Malformed and stale acknowledgements are counted and dropped. */
Test(msg, stray_acks_are_dropped)
{
	struct dprpc_agent_stats s;
	struct dp_hdr_fields f = {
		.type = DP_FRAME_ACK,
		.src = 0,
		.dst = 1,
		.slot = 3,
		.req_num = 77,
		.status = DP_FRAME_RESPONSE,
		.pkt_idx = 2,
		.pkt_cnt = 9,
	};
	struct rte_mbuf *m;
	uint8_t *frame;

	start_agents(NULL, NULL);
	echo_one(a, "b", 10, 1); /* b learns a's session */
	f.session = a->session;
	m = rte_pktmbuf_alloc(mp);
	frame = (uint8_t *)rte_pktmbuf_append(m, DP_HDRS_LEN);
	dp_frame_write_hdr(frame, a->peers[1].tmpl, &f, 0);
	cr_assert_eq(rte_ring_enqueue(pair.ab, m), 0);
	dpt_poll_until_drops(b, DPRPC_DROP_STALE, 1, &s);
	f.pkt_idx = 10; /* beyond pkt_cnt */
	m = rte_pktmbuf_alloc(mp);
	frame = (uint8_t *)rte_pktmbuf_append(m, DP_HDRS_LEN);
	dp_frame_write_hdr(frame, a->peers[1].tmpl, &f, 0);
	cr_assert_eq(rte_ring_enqueue(pair.ab, m), 0);
	dpt_poll_until_drops(b, DPRPC_DROP_BAD_LENGTH, 1, &s);
	cr_assert_eq(s.drops[DPRPC_DROP_STALE], 1u);
	cr_assert_eq(s.drops[DPRPC_DROP_BAD_LENGTH], 1u);
}
