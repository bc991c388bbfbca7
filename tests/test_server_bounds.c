/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a server holds for its callers is bounded (docs/reliability.md,
 * "Budgets and reclaim"): kept responses within kept_mbufs_max, messages
 * (requests being reassembled, responses not acknowledged) within
 * msg_bytes_max, each per caller and in all; a caller declared down has
 * what it held reclaimed; at most once holds throughout.
 *
 * Three workers on a software switch (DPT_WORLD3), one thread: "a" is no
 * agent but frames forged here with the codec and injected into b's rx
 * ring, as many slots as a caller with max_outstanding 16384 would use;
 * what b sends to a is read back here (the answers' statuses counted);
 * b serves; c is a second, well-behaved caller whose calls must keep
 * working.  Everything is polled by step(), so b's internals may be read
 * between steps.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_malloc.h>

#include "dp_agent.h"
#include "dpt.h"

/* b's peer timeout (a's death is waited for): this thread polls b and c
 * alike, so c is silent to b while it stalls, and c's silence spans
 * 100 ms (b's keep-alive) and three rounds (to b's PING, to c's PONG, to
 * b reading it): rounds 2 s apart make c look dead. */
#define B_PEER_TIMEOUT_US (6000u * 1000)

#define MIB	   (1024u * 1024u)
#define A_SESSION  0x5e55u /* the forged caller's incarnation */
#define MANY_SLOTS 16384u  /* a caller's max_outstanding, within the limit */

static struct dpt_switch sw;
static struct rte_mempool *mp;
static struct dprpc_agent *b, *c;
static struct dp_world world;
static uint8_t tmpl_ab[DP_L2L4_LEN];
static atomic_uint runs;

/* What b answered a, by status. */
static struct {
	uint64_t ok, nodata, nobufs, other, acks;
} to_a;

/* Per-agent settings for start(). */
struct bounds_conf {
	unsigned int kept_mbufs_max, kept_mbufs_peer_max;
	uint64_t msg_bytes_max, msg_bytes_peer_max;
	uint32_t max_msg;
};

/* Answers {uint32 len} with len bytes (a large response to a small
 * request), counting its runs. */
static int
h_gen(struct dprpc_request *req, void *arg)
{
	static uint8_t out[4 * MIB];
	size_t len;
	const uint32_t *q = dprpc_request_payload(req, &len);

	(void)arg;
	atomic_fetch_add(&runs, 1);
	if (len != sizeof(*q) || *q > sizeof(out))
		return -EINVAL;
	return dprpc_reply(req, out, *q);
}

static struct dprpc_agent *
make(const char *name, unsigned int rank, const struct bounds_conf *bc)
{
	struct dprpc_agent_conf conf;
	struct dprpc_agent *ag;

	dprpc_agent_conf_init(&conf);
	conf.name = name;
	conf.world = DPT_WORLD3;
	conf.port.id = sw.port[rank];
	conf.port.mbuf_pool = mp;
	/* b declares a down 6 s after its last frame: long enough that no
	 * stall of this loaded machine does it (or c) early.  c never
	 * declares b down. */
	conf.liveness.keepalive_us = 100 * 1000;
	conf.liveness.peer_timeout_us = rank == 1 ? B_PEER_TIMEOUT_US : 0;
	/* No bound on the inline backlog: this thread polls all three
	 * agents, so b's poller CPU time counts the others' polls, and under
	 * ASan 1 MiB messages left unread past the default 10 ms made b
	 * answer -EBUSY (reassembly_is_bounded: 1 of 2 echoes).  These tests
	 * are about the memory bounds, not overload. */
	conf.serve.inline_wait_max_us = DPRPC_INLINE_WAIT_UNBOUNDED;
	if (bc != NULL) {
		conf.budgets.kept_mbufs_max = bc->kept_mbufs_max;
		conf.budgets.kept_mbufs_peer_max = bc->kept_mbufs_peer_max;
		conf.budgets.msg_bytes_max = bc->msg_bytes_max;
		conf.budgets.msg_bytes_peer_max = bc->msg_bytes_peer_max;
		if (bc->max_msg != 0)
			conf.calls.max_msg_size = bc->max_msg;
	}
	ag = dprpc_agent_create(&conf);
	cr_assert_not_null(ag, "agent %s: %s", name, rte_strerror(rte_errno));
	return ag;
}

static void
start(const struct bounds_conf *bc)
{
	b = make("b", 1, bc);
	c = make("c", 2, NULL);
	cr_assert_eq(dprpc_register(b, "echo", dpt_counting_echo, &runs, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(b, "gen", h_gen, NULL, DPRPC_HANDLER_INLINE), 0);
}

static void
setup(void)
{
	char err[160];

	cr_assert_geq(dpt_eal_init("bounds"), 0);
	mp = rte_pktmbuf_pool_create(
		"dpt_bounds", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	cr_assert_not_null(mp);
	cr_assert_eq(dpt_switch_make(&sw, 3), 0);
	cr_assert_eq(dp_world_parse(DPT_WORLD3, &world, err, sizeof(err)), 0, "%s", err);
	dp_l2l4_template(tmpl_ab, &world.addrs[0], &world.addrs[1], 64);
	atomic_store(&runs, 0);
	memset(&to_a, 0, sizeof(to_a));
}

/* Read what b sent a: count the answers by status, free the frames. */
static unsigned int
collect_a(void)
{
	struct dp_rx_ctx ctx = {.addrs = world.addrs, .nb_workers = world.n, .self_rank = 0};
	enum dprpc_drop_reason why;
	struct dp_parsed p;
	struct rte_mbuf *m;
	unsigned int n = 0;
	uint8_t buf[RTE_MBUF_DEFAULT_DATAROOM];

	while (rte_ring_dequeue(sw.rx[0], (void **)&m) == 0) {
		const uint8_t *f =
			m->pkt_len <= sizeof(buf) ? rte_pktmbuf_read(m, 0, m->pkt_len, buf) : NULL;

		n++;
		if (f != NULL && dp_frame_parse(f, m->pkt_len, &ctx, &p, &why)) {
			if (p.type == DP_FRAME_ACK)
				to_a.acks++;
			else if (p.type != DP_FRAME_RESPONSE)
				; /* pings */
			else if (p.status == 0)
				to_a.ok++;
			else if (p.status == ENODATA)
				to_a.nodata++;
			else if (p.status == ENOBUFS)
				to_a.nobufs++;
			else
				to_a.other++;
		}
		rte_pktmbuf_free(m);
	}
	return n;
}

/* The longest time between the starts of two rounds (TSC), reported if b
 * declares c down (B_PEER_TIMEOUT_US). */
static uint64_t step_gap_max, step_last;

/* One round: the switch, b, c, and what reached a. */
static unsigned int
step(void)
{
	uint64_t now = rte_rdtsc();
	unsigned int work;
	int n;

	if (step_last != 0 && now - step_last > step_gap_max)
		step_gap_max = now - step_last;
	step_last = now;
	work = dpt_switch_step(&sw);
	n = dprpc_poll(b, 32);
	work += n > 0 ? (unsigned int)n : 0;
	n = dprpc_poll(c, 32);
	work += n > 0 ? (unsigned int)n : 0;
	work += dpt_switch_step(&sw);
	work += collect_a();
	return work;
}

/* Step until nothing moves for a while. */
static void
settle(void)
{
	unsigned int idle = 0;

	while (idle < 200) {
		if (step() > 0)
			idle = 0;
		else
			idle++;
	}
}

/* Mbufs of the pool held by the agents at rest: in use, less the frames
 * still on the switch's rings (keep-alives). */
static unsigned int
held_at_rest(void)
{
	unsigned int n, i;

	settle();
	n = rte_mempool_in_use_count(mp);
	for (i = 0; i < sw.n; i++)
		n -= rte_ring_count(sw.rx[i]) + rte_ring_count(sw.tx[i]);
	return n;
}

static void
teardown(void)
{
	settle();
	if (c != NULL)
		cr_assert_eq(dprpc_agent_destroy(c), 0);
	if (b != NULL)
		cr_assert_eq(dprpc_agent_destroy(b), 0);
	b = c = NULL;
	for (unsigned int i = 0; i < sw.n; i++) {
		dpt_ring_drain(sw.rx[i]);
		dpt_ring_drain(sw.tx[i]);
	}
	cr_expect_eq(
		rte_mempool_in_use_count(mp), 0u, "mbufs leaked: %u", rte_mempool_in_use_count(mp));
	dpt_eal_cleanup();
}

TestSuite(server_bounds, .init = setup, .fini = teardown, .timeout = 120);

/* A frame from a to b, as a's codec would make it; false if no mbuf. */
static bool
forge(const struct dp_hdr_fields *f, const void *payload, uint32_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	uint8_t *frame;

	if (m == NULL)
		return false;
	frame = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(DP_HDRS_LEN + len));
	cr_assert_not_null(frame);
	dp_frame_write(frame, tmpl_ab, f, payload, len);
	while (rte_ring_enqueue(sw.rx[1], m) != 0)
		step();
	return true;
}

/* A single-frame request from a on @slot: @len bytes for @handler. */
static bool
forge_request(const char *handler, uint16_t slot, uint32_t req_num, const void *p, uint32_t len)
{
	struct dp_hdr_fields f = {
		.type = DP_FRAME_REQUEST,
		.src = 0,
		.dst = 1,
		.slot = slot,
		.session = A_SESSION,
		.dst_session = dp_base_of(b)->session,
		.req_num = req_num,
		.handler_id = dprpc_handler_id(handler),
	};

	return forge(&f, p, len);
}

/* Frame @idx of a @msg_len-byte request from a on @slot. */
static bool
forge_msg_frame(uint16_t slot, uint32_t req_num, uint32_t msg_len, uint32_t idx)
{
	static uint8_t chunk[DPRPC_MAX_FRAME_PAYLOAD];
	uint32_t n = (msg_len + DPRPC_MAX_FRAME_PAYLOAD - 1) / DPRPC_MAX_FRAME_PAYLOAD;
	struct dp_hdr_fields f = {
		.type = DP_FRAME_REQUEST,
		.src = 0,
		.dst = 1,
		.slot = slot,
		.session = A_SESSION,
		.dst_session = dp_base_of(b)->session,
		.req_num = req_num,
		.handler_id = dprpc_handler_id("echo"),
		.msg_len = msg_len,
		.pkt_cnt = (uint16_t)n,
		.pkt_idx = (uint16_t)idx,
	};
	uint32_t len =
		idx + 1 < n ? DPRPC_MAX_FRAME_PAYLOAD : msg_len - idx * DPRPC_MAX_FRAME_PAYLOAD;

	return forge(&f, chunk, len);
}

/* c echoes @len bytes to b: the call's result. */
static int
c_echo(size_t len)
{
	static uint8_t in[2 * MIB];
	struct dprpc_future *fut;
	const uint8_t *v;
	size_t vlen;
	int rc;

	cr_assert_leq(len, sizeof(in));
	memset(in, 0x5a, len);
	fut = dprpc_rpc_async(c, "b", "echo", in, len, 5 * 1000 * 1000);
	if (fut == NULL)
		return -rte_errno;
	while (!dprpc_future_is_done(fut))
		step();
	rc = dprpc_future_wait(fut, 0);
	if (rc == 0) {
		v = dprpc_future_value(fut, &vlen);
		cr_assert_eq(vlen, len);
		cr_assert(len == 0 || (v[0] == 0x5a && v[len - 1] == 0x5a));
	}
	dprpc_future_put(fut);
	return rc;
}

/* Step until b has declared a down (bounded: ~30 s). */
static void
wait_a_down(void)
{
	struct dprpc_agent_stats s;

	for (int i = 0; i < 300000; i++) {
		step();
		if (dprpc_worker_state(b, 0) == DPRPC_PEER_DOWN)
			break;
		usleep(100);
	}
	cr_assert_eq(dprpc_worker_state(b, 0), DPRPC_PEER_DOWN);
	cr_assert_eq(dprpc_agent_stats_get(b, &s), 0);
	cr_assert_eq(s.peers_down, 1u,
		"b declared %" PRIu64 " peers down (c too?), rounds at most %" PRIu64 " ms apart",
		s.peers_down, step_gap_max / (rte_get_tsc_hz() / 1000));
	settle();
}

static struct dprpc_agent_usage
usage(struct dprpc_agent *ag)
{
	struct dprpc_agent_usage u;

	cr_assert_eq(dprpc_agent_usage_get(ag, &u), 0);
	return u;
}

static struct dprpc_agent_stats
stats(struct dprpc_agent *ag)
{
	struct dprpc_agent_stats s;

	cr_assert_eq(dprpc_agent_stats_get(ag, &s), 0);
	return s;
}

/*
 * A caller on 16384 slots whose responses (1 KiB: kept by reference) it
 * never moves on from: without a budget b keeps one mbuf per slot until
 * the pool is empty and nobody can call it any more.  With the default
 * budgets b keeps a quarter of the pool in all, half of that for one
 * caller; the rest is sent once, unkept.  Duplicates never run again: a
 * kept response is sent again, an unkept one answers -ENODATA.  Once a is
 * declared down its kept responses are freed; its slots still refuse to
 * run anything twice.
 */
Test(server_bounds, kept_responses_are_bounded)
{
	static uint8_t kib[1024];
	struct dprpc_agent_stats s;
	unsigned int base, slot, sent = 0, peer_max, kept_c;

	start(NULL);
	peer_max = dp_rpc_of(b)->kept_peer_max;
	cr_assert_eq(dp_rpc_of(b)->kept_max, 8191u / 4, "default: a quarter of the pool");
	cr_assert_eq(peer_max, dp_rpc_of(b)->kept_max / 2);
	cr_assert_eq(c_echo(sizeof(kib)), 0);
	base = held_at_rest();
	kept_c = usage(b).kept_mbufs;
	cr_assert_eq(kept_c, 1u, "c's response is kept by reference");

	for (slot = 0; slot < MANY_SLOTS; slot++) {
		if (!forge_request("echo", (uint16_t)slot, 1000 + slot, kib, sizeof(kib)))
			break; /* the pool is empty: as a port's rx would find it */
		sent++;
		if (slot % 16 == 0)
			step();
	}
	settle();
	/* The second caller is still served. */
	cr_assert_eq(c_echo(sizeof(kib)), 0, "c's call once a used %u slots", sent);
	cr_assert_eq(sent, MANY_SLOTS, "mbufs ran out after %u requests", sent);
	cr_assert_eq(atomic_load(&runs), MANY_SLOTS + 2);
	cr_assert_eq(to_a.ok, MANY_SLOTS, "each request answered once");
	/* b holds exactly its per-caller budget for a. */
	cr_assert_eq(dp_rpc_of(b)->peers[0].srv_kept, peer_max);
	cr_assert_eq(usage(b).kept_mbufs, peer_max + kept_c);
	cr_assert_leq(usage(b).kept_mbufs, dp_rpc_of(b)->kept_max);
	cr_assert_eq(
		held_at_rest(), base + peer_max, "mbufs in use: %u, base %u", held_at_rest(), base);
	s = stats(b);
	cr_assert_eq(s.keeps_refused, MANY_SLOTS - peer_max);

	/* Every request again (a's resends): none runs again. */
	memset(&to_a, 0, sizeof(to_a));
	for (slot = 0; slot < MANY_SLOTS; slot++) {
		cr_assert(forge_request("echo", (uint16_t)slot, 1000 + slot, kib, sizeof(kib)));
		if (slot % 16 == 0)
			step();
	}
	settle();
	cr_assert_eq(atomic_load(&runs), MANY_SLOTS + 2, "a duplicate ran again");
	cr_assert_eq(to_a.ok, peer_max, "kept responses sent again");
	cr_assert_eq(to_a.nodata, MANY_SLOTS - peer_max, "unkept ones answer -ENODATA");
	cr_assert_eq(to_a.other + to_a.nobufs, 0u);
	/* At least: c's own resends on this loaded machine may add some. */
	cr_assert_geq(stats(b).requests_resent, MANY_SLOTS);

	/* a goes silent: declared down, what b kept for it is freed. */
	wait_a_down();
	s = stats(b);
	cr_assert_eq(s.reclaimed_mbufs, peer_max);
	cr_assert_eq(dp_rpc_of(b)->peers[0].srv_kept, 0u);
	cr_assert_eq(usage(b).kept_mbufs, kept_c);
	cr_assert_eq(held_at_rest(), base, "mbufs in use: %u, base %u", held_at_rest(), base);

	/* a comes back in the same session and resends: still never run
	 * twice; b no longer holds any response for it. */
	memset(&to_a, 0, sizeof(to_a));
	for (slot = 0; slot < MANY_SLOTS; slot += 97)
		cr_assert(forge_request("echo", (uint16_t)slot, 1000 + slot, kib, sizeof(kib)));
	settle();
	cr_assert_eq(atomic_load(&runs), MANY_SLOTS + 2, "a duplicate ran again");
	cr_assert_eq(to_a.nodata, (MANY_SLOTS + 96) / 97);
	cr_assert_eq(to_a.ok, 0u);
	cr_assert_eq(c_echo(sizeof(kib)), 0);

	/* The dump tells the same. */
	{
		char *dump = NULL, want[96];
		size_t len = 0;
		FILE *f = open_memstream(&dump, &len);

		cr_assert_not_null(f);
		dprpc_agent_dump(b, f);
		cr_assert_eq(fclose(f), 0);
		snprintf(want, sizeof(want), "keeps_refused %u reclaimed mbufs %u messages 0",
			MANY_SLOTS - peer_max, peer_max);
		cr_assert_not_null(strstr(dump, want), "%s", dump);
		free(dump);
	}
}

/*
 * First frames of many large messages from one caller: each reserves its
 * whole length, within the caller's budget; the rest are refused at once
 * with -ENOBUFS (not run).  All callers together stay within the total.
 * Once a is declared down, its half-received messages are freed: DPDK's
 * heap is back to where it was, no message is live; a late frame of one of
 * them gets -ENOBUFS, never a run.
 */
Test(server_bounds, reassembly_is_bounded)
{
	const struct bounds_conf bc = {
		.max_msg = MIB,
		.msg_bytes_peer_max = 4 * MIB,
		.msg_bytes_max = 6 * MIB,
	};
	struct rte_malloc_socket_stats before, now;
	struct dprpc_future *fs[3];
	static uint8_t in[MIB];
	unsigned int slot, ok = 0, nobufs = 0, i;
	uint32_t n = (MIB + DPRPC_MAX_FRAME_PAYLOAD - 1) / DPRPC_MAX_FRAME_PAYLOAD;
	struct dprpc_agent_stats s;

	start(&bc);
	cr_assert_eq(c_echo(2 * DPRPC_MAX_FRAME_PAYLOAD), 0); /* c known, heap warm */
	settle();
	cr_assert_eq(rte_malloc_get_socket_stats(0, &before), 0);

	for (slot = 0; slot < 40; slot++)
		cr_assert(forge_msg_frame((uint16_t)slot, 7000 + slot, MIB, 0));
	settle();
	cr_assert_eq(usage(b).msg_bytes, 4 * MIB);
	cr_assert_eq(usage(b).messages, 4u);
	cr_assert_eq(to_a.nobufs, 36u, "over the budget: refused at once");
	cr_assert_eq(stats(b).drops[DPRPC_DROP_OVER_BUDGET], 36u);
	cr_assert_eq(rte_malloc_get_socket_stats(0, &now), 0);
	cr_assert_leq(now.heap_allocsz_bytes - before.heap_allocsz_bytes, 4 * MIB + 64 * 1024,
		"heap grew by %zu", now.heap_allocsz_bytes - before.heap_allocsz_bytes);
	/* A refused message's later frames are not reassembled either. */
	cr_assert(forge_msg_frame(39, 7039, MIB, 1));
	cr_assert(forge_msg_frame(39, 7039, MIB, n - 1));
	settle();
	cr_assert_eq(usage(b).msg_bytes, 4 * MIB);
	cr_assert_eq(to_a.nobufs, 37u, "the last frame gets the kept refusal again");

	/* c shares the 6 MiB left by a's 4: of three 1 MiB requests sent at
	 * once, two fit, the third is refused. */
	memset(in, 1, sizeof(in));
	for (i = 0; i < 3; i++) {
		fs[i] = dprpc_rpc_async(c, "b", "echo", in, MIB, 5 * 1000 * 1000);
		cr_assert_not_null(fs[i]);
	}
	for (i = 0; i < 3; i++) {
		while (!dprpc_future_is_done(fs[i]))
			step();
		if (dprpc_future_wait(fs[i], 0) == 0)
			ok++;
		else if (dprpc_future_error(fs[i])->code == -ENOBUFS)
			nobufs++;
		else
			cr_log_error("echo %u: %d (%s)", i, dprpc_future_error(fs[i])->code,
				dprpc_future_error(fs[i])->msg);
		dprpc_future_put(fs[i]);
	}
	cr_assert_eq(ok, 2u);
	cr_assert_eq(nobufs, 1u);
	cr_assert_eq(atomic_load(&runs), 3u, "a's messages never ran");

	/* a goes silent: its half-received messages are freed. */
	wait_a_down();
	s = stats(b);
	cr_assert_eq(s.reclaimed_msgs, 4u);
	cr_assert_eq(usage(b).msg_bytes, 0u);
	cr_assert_eq(usage(b).messages, 0u);
	cr_assert_eq(usage(c).messages, 0u);
	cr_assert_eq(rte_malloc_get_socket_stats(0, &now), 0);
	cr_assert_eq(now.heap_allocsz_bytes, before.heap_allocsz_bytes,
		"DPDK heap: %zu bytes allocated, %zu before", now.heap_allocsz_bytes,
		before.heap_allocsz_bytes);

	/* The rest of a reclaimed message: refused (it never ran), nothing
	 * reassembled. */
	memset(&to_a, 0, sizeof(to_a));
	cr_assert(forge_msg_frame(0, 7000, MIB, 1));
	cr_assert(forge_msg_frame(0, 7000, MIB, n - 1));
	settle();
	cr_assert_eq(to_a.nobufs, 1u);
	cr_assert_eq(usage(b).msg_bytes, 0u);
	cr_assert_eq(atomic_load(&runs), 3u);
	/* A new request on that slot is taken again. */
	cr_assert(forge_msg_frame(0, 7100, MIB, 0));
	settle();
	cr_assert_eq(usage(b).msg_bytes, MIB);
	cr_assert_eq(c_echo(DPRPC_MAX_FRAME_PAYLOAD + 1), 0);
}

/*
 * Large responses a caller never acknowledges (a handler answering 1 MiB
 * to a 4-byte request) count against its budget: once it holds it, its
 * new requests are refused (-ENOBUFS, not run) instead of pinning more.
 * When it is declared down they are freed, and a resend gets -ENODATA.
 */
Test(server_bounds, unacknowledged_responses_are_bounded)
{
	const struct bounds_conf bc = {
		.max_msg = MIB,
		.msg_bytes_peer_max = 3 * MIB,
		.msg_bytes_max = 8 * MIB,
	};
	struct rte_malloc_socket_stats before, now;
	uint32_t q = MIB;
	unsigned int slot;

	start(&bc);
	cr_assert_eq(c_echo(2 * DPRPC_MAX_FRAME_PAYLOAD), 0);
	settle();
	cr_assert_eq(rte_malloc_get_socket_stats(0, &before), 0);
	for (slot = 0; slot < 10; slot++) {
		cr_assert(forge_request("gen", (uint16_t)slot, 500 + slot, &q, sizeof(q)));
		settle();
	}
	cr_assert_eq(atomic_load(&runs), 3u + 1u, "three responses held, then refusals");
	cr_assert_eq(usage(b).msg_bytes, 3 * MIB);
	cr_assert_eq(usage(b).messages, 3u);
	cr_assert_eq(to_a.nobufs, 7u);
	cr_assert_eq(stats(b).drops[DPRPC_DROP_OVER_BUDGET], 7u);
	/* c is not a: its calls are served. */
	cr_assert_eq(c_echo(2 * DPRPC_MAX_FRAME_PAYLOAD), 0);

	wait_a_down();
	cr_assert_eq(stats(b).reclaimed_msgs, 3u);
	cr_assert_eq(usage(b).msg_bytes, 0u);
	cr_assert_eq(usage(b).messages, 0u);
	cr_assert_eq(rte_malloc_get_socket_stats(0, &now), 0);
	cr_assert_eq(now.heap_allocsz_bytes, before.heap_allocsz_bytes);
	/* a's resends: answered, never run again. */
	memset(&to_a, 0, sizeof(to_a));
	for (slot = 0; slot < 10; slot++)
		cr_assert(forge_request("gen", (uint16_t)slot, 500 + slot, &q, sizeof(q)));
	settle();
	cr_assert_eq(atomic_load(&runs), 3u + 2u);
	cr_assert_eq(to_a.nodata, 3u);
	cr_assert_eq(to_a.nobufs, 7u);
}

/* Budgets out of range are refused at creation. */
Test(server_bounds, budgets_out_of_range_are_refused)
{
	const struct bounds_conf bad[] = {
		{.kept_mbufs_max = 8191 / 2 + 1},		     /* more than half the pool */
		{.kept_mbufs_max = 100, .kept_mbufs_peer_max = 101}, /* peer > total */
		{.kept_mbufs_peer_max = 8191},			     /* peer > the largest total */
		{.max_msg = MIB, .msg_bytes_peer_max = MIB - 1},     /* under one message */
		{.max_msg = MIB, .msg_bytes_max = 2 * MIB, .msg_bytes_peer_max = 3 * MIB},
	};
	struct dprpc_agent_conf conf;
	unsigned int i;

	for (i = 0; i < RTE_DIM(bad); i++) {
		dprpc_agent_conf_init(&conf);
		conf.name = "b";
		conf.world = DPT_WORLD3;
		conf.port.id = sw.port[1];
		conf.port.mbuf_pool = mp;
		conf.budgets.kept_mbufs_max = bad[i].kept_mbufs_max;
		conf.budgets.kept_mbufs_peer_max = bad[i].kept_mbufs_peer_max;
		conf.budgets.msg_bytes_max = bad[i].msg_bytes_max;
		conf.budgets.msg_bytes_peer_max = bad[i].msg_bytes_peer_max;
		if (bad[i].max_msg != 0)
			conf.calls.max_msg_size = bad[i].max_msg;
		cr_assert_null(dprpc_agent_create(&conf), "case %u accepted", i);
		cr_assert_eq(rte_errno, EINVAL, "case %u: %d", i, rte_errno);
	}
	/* The largest legal ones are taken. */
	b = make("b", 1,
		&(struct bounds_conf){.kept_mbufs_max = 8191 / 2,
			.kept_mbufs_peer_max = 8191 / 2,
			.max_msg = MIB,
			.msg_bytes_peer_max = MIB,
			.msg_bytes_max = MIB});
	cr_assert_eq(dp_rpc_of(b)->kept_max, 8191u / 2);
	cr_assert_eq(dp_rpc_of(b)->msg_peer_max, MIB);
}
