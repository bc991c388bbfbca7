/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for the server's budgets and reclaim (server.c,
 * msg_rx.c, msg_tx.c; docs/reliability.md, "Budgets and reclaim"): one
 * server agent ("b") is fed a sequence of forged frames from two callers
 * ("a" and "c") on up to 4096 slots each, as the input says: single-frame
 * requests whose responses are kept as copies or by reference, handlers
 * answering large responses, deferred requests answered later, frames of
 * multi-frame requests of any length, acknowledgements of b's responses,
 * and simulated peer-downs of either caller.
 *
 * After every frame the budgets must hold: mbufs kept as responses within
 * kept_mbufs_max and kept_mbufs_peer_max, bytes reserved for reassembly
 * within msg_bytes_max and msg_bytes_peer_max.  After the input the
 * agent's counts must equal a recount of its slots; then both callers are
 * declared down, and every mbuf and every byte of DPDK's heap b held must
 * be back, with no message live; and again after b is destroyed.  Any
 * violation abort()s; ASan and UBSan check the rest.
 *
 * Input: 8 bytes per operation (see fuzz_op()).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "dp_agent.h"
#include "../dpt.h"
#include "fuzz_env.h"

#define FUZZ_WORLD                              \
	"a 0 02:00:00:00:00:01 10.0.0.1 7001\n" \
	"b 1 02:00:00:00:00:02 10.0.0.2 7002\n" \
	"c 2 02:00:00:00:00:03 10.0.0.3 7003\n"
#define MAX_MSG	  (8 * DPRPC_MAX_FRAME_PAYLOAD)
#define PEER_MSG  (3 * MAX_MSG)
#define TOTAL_MSG (5 * MAX_MSG)
#define PEER_KEPT 12
#define KEPT	  20
#define HELD_MAX  8 /* deferred requests held at once (max_requests 16) */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rte_mempool *mp;
static struct rte_ring *to_b, *from_b;
static int port_b;
static struct dp_world world;
static uint8_t tmpl[3][DP_L2L4_LEN]; /* from a (0) and c (2) to b */
static struct dprpc_request *held[HELD_MAX];
static unsigned int nb_held;

static int
h_echo(struct dprpc_request *req, void *arg)
{
	size_t len;
	const void *p = dprpc_request_payload(req, &len);

	(void)arg;
	return dprpc_reply(req, p, len);
}

/* Answers as many bytes as its first payload bytes say (a large response
 * to a small request; beyond max_msg_size the reply fails). */
static int
h_gen(struct dprpc_request *req, void *arg)
{
	static uint8_t out[2 * MAX_MSG];
	size_t len;
	const uint8_t *p = dprpc_request_payload(req, &len);
	uint32_t n = len >= 2 ? ((uint32_t)p[0] << 8 | p[1]) % sizeof(out) : 0;

	(void)arg;
	return dprpc_reply(req, out, n);
}

/* Keeps the request, answered later by the input (or at its end). */
static int
h_defer(struct dprpc_request *req, void *arg)
{
	(void)arg;
	if (nb_held == HELD_MAX)
		return -EBUSY;
	held[nb_held++] = req;
	return DPRPC_DEFERRED;
}

static struct dprpc_agent *
make_b(void)
{
	struct dprpc_agent_conf c;
	struct dprpc_agent *b;

	dprpc_agent_conf_init(&c);
	c.name = "b";
	c.world = FUZZ_WORLD;
	c.port.id = port_b;
	c.port.mbuf_pool = mp;
	c.calls.max_outstanding = 4;
	c.serve.max_requests = 16;
	c.rrefs.max = 64;
	c.calls.max_msg_size = MAX_MSG;
	c.calls.credits = 8;
	c.liveness.keepalive_us = 0;
	c.liveness.peer_timeout_us = 0; /* peer-downs come from the input only */
	c.calls.retransmit_us = 0;
	c.budgets.kept_mbufs_max = KEPT;
	c.budgets.kept_mbufs_peer_max = PEER_KEPT;
	c.budgets.msg_bytes_max = TOTAL_MSG;
	c.budgets.msg_bytes_peer_max = PEER_MSG;
	b = dprpc_agent_create(&c);
	if (b == NULL || dprpc_register(b, "echo", h_echo, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(b, "gen", h_gen, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(b, "defer", h_defer, NULL, DPRPC_HANDLER_INLINE) != 0)
		abort();
	return b;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[160];

	(void)argc;
	(void)argv;
	port_b = fuzz_env_up("fuzz_bounds", &mp, &to_b, &from_b);
	if (dp_world_parse(FUZZ_WORLD, &world, err, sizeof(err)) != 0)
		abort();
	dp_l2l4_template(tmpl[0], &world.addrs[0], &world.addrs[1], 64);
	dp_l2l4_template(tmpl[2], &world.addrs[2], &world.addrs[1], 64);
	if (dprpc_agent_destroy(make_b()) != 0)
		abort();
	return 0;
}

static void
fail(const char *what, unsigned long long got, unsigned long long limit)
{
	fprintf(stderr, "fuzz_bounds: %s: %llu (limit %llu)\n", what, got, limit);
	abort();
}

/* The budgets, from b's counts. */
static void
check_budgets(const struct dprpc_agent *b)
{
	uint64_t kept = dp_load_relaxed(&dp_base_of(b)->st.kept_mbufs);
	unsigned int p;

	if (kept > KEPT)
		fail("kept mbufs", kept, KEPT);
	for (p = 0; p < 3; p++)
		if (dp_rpc_of(b)->peers[p].srv_kept > PEER_KEPT)
			fail("kept mbufs of one caller", dp_rpc_of(b)->peers[p].srv_kept,
				PEER_KEPT);
}

/* Recount what b's slots hold: the counts must match, and reassembly
 * must be within the budgets. */
static void
recount(const struct dprpc_agent *b)
{
	uint64_t kept = 0, bytes = 0, rx_all = 0, live = 0;
	unsigned int p, i;

	for (p = 0; p < 3; p++) {
		const struct dp_peer *peer = &dp_rpc_of(b)->peers[p];
		uint64_t pk = 0, pb = 0, prx = 0;

		for (i = 0; i < peer->srv_cap; i++) {
			const struct dp_srv_slot *e = &peer->srv[i];

			pk += e->resp.m != NULL;
			if (e->rx != NULL) {
				pb += e->rx->len;
				prx += e->rx->len;
				live++;
				if (e->state != DP_SRV_RECEIVING)
					fail("rx outside RECEIVING", e->state, DP_SRV_RECEIVING);
			}
			if (e->tx != NULL) {
				pb += e->tx->len;
				live++;
				if (e->state != DP_SRV_DONE)
					fail("tx outside DONE", e->state, DP_SRV_DONE);
			}
		}
		if (pk != peer->srv_kept)
			fail("srv_kept differs from a recount", peer->srv_kept, pk);
		if (pb != peer->srv_bytes)
			fail("srv_bytes differs from a recount", peer->srv_bytes, pb);
		if (prx > PEER_MSG)
			fail("reassembly bytes of one caller", prx, PEER_MSG);
		kept += pk;
		bytes += pb;
		rx_all += prx;
	}
	if (kept != dp_load_relaxed(&dp_base_of(b)->st.kept_mbufs))
		fail("kept_mbufs differs from a recount",
			dp_load_relaxed(&dp_base_of(b)->st.kept_mbufs), kept);
	if (bytes != dp_load_relaxed(&dp_base_of(b)->st.msg_bytes))
		fail("msg_bytes differs from a recount",
			dp_load_relaxed(&dp_base_of(b)->st.msg_bytes), bytes);
	if (rx_all > TOTAL_MSG)
		fail("reassembly bytes", rx_all, TOTAL_MSG);
	if (live != dp_load_relaxed(&dp_base_of(b)->st.msgs_live))
		fail("msgs_live differs from a recount",
			dp_load_relaxed(&dp_base_of(b)->st.msgs_live), live);
}

/* What dp_peer_down() does to the server side of caller @p. */
static void
peer_down(struct dprpc_agent *b, unsigned int p)
{
	dp_store_relaxed(&dp_rpc_of(b)->peers[p].state, DPRPC_PEER_DOWN);
	dp_srv_reclaim(dp_rpc_of(b), p);
	if (dp_rpc_of(b)->peers[p].srv_kept != 0 || dp_rpc_of(b)->peers[p].srv_bytes != 0)
		fail("held after reclaim",
			dp_rpc_of(b)->peers[p].srv_kept + dp_rpc_of(b)->peers[p].srv_bytes, 0);
}

static void
reply_held(unsigned int len)
{
	static uint8_t out[3 * DPRPC_MAX_FRAME_PAYLOAD];

	if (nb_held == 0)
		return;
	if (dprpc_reply(held[0], out, RTE_MIN(len, (unsigned int)sizeof(out))) != 0 &&
		dprpc_reply_error(held[0], -EIO, "no mbuf") != 0)
		abort(); /* the request would stay in use */
	memmove(held, held + 1, --nb_held * sizeof(held[0]));
}

static void
poll_b(struct dprpc_agent *b)
{
	(void)dprpc_poll(b, 32);
	dpt_ring_drain(from_b);
	check_budgets(b);
}

/*
 * One operation from 8 input bytes:
 *   0  bits 0-2: kind (0 echo request, 1 gen request, 2 a frame of a
 *      multi-frame request, 3 an acknowledgement of b's response,
 *      4 the caller declared down, 5 a deferred request answered,
 *      6 a request to the deferring handler, 7 a whole acknowledgement);
 *      bit 3: caller c instead of a; bit 7: slots up to 4096, not 32
 *   1-2 slot
 *   3  request number: 1000 + this (signed): same, older, newer
 *   4  frame index (mod frame count)
 *   5-6 length
 *   7  payload fill; for acknowledgements, flags
 */
static void
fuzz_op(struct dprpc_agent *b, const uint8_t *in)
{
	static uint8_t payload[DPRPC_MAX_FRAME_PAYLOAD];
	unsigned int kind = in[0] & 7, src = (in[0] & 8) ? 2 : 0;
	uint16_t slot = (uint16_t)(((uint32_t)in[1] << 8 | in[2]) % ((in[0] & 0x80) ? 4096 : 32));
	uint32_t len = (uint32_t)in[5] << 8 | in[6];
	struct dp_hdr_fields f = {
		.type = DP_FRAME_REQUEST,
		.src = (uint16_t)src,
		.dst = 1,
		.slot = slot,
		.session = 0x1000 + src,
		.dst_session = dp_base_of(b)->session,
		.req_num = 1000 + (uint32_t)(int8_t)in[3],
	};
	const struct dp_srv_slot *e;
	uint32_t pay = 0, cnt;
	struct rte_mbuf *m;
	uint8_t *frame;

	switch (kind) {
	case 0:
		f.handler_id = dprpc_handler_id("echo");
		pay = len % (DPRPC_MAX_FRAME_PAYLOAD + 1);
		break;
	case 1:
		f.handler_id = dprpc_handler_id("gen");
		pay = 2;
		break;
	case 2:
		/* Over max_msg_size too: refused -EMSGSIZE. */
		f.msg_len = DPRPC_MAX_FRAME_PAYLOAD + 1 + len % (MAX_MSG + DPRPC_MAX_FRAME_PAYLOAD);
		cnt = (f.msg_len + DPRPC_MAX_FRAME_PAYLOAD - 1) / DPRPC_MAX_FRAME_PAYLOAD;
		f.pkt_cnt = (uint16_t)cnt;
		f.pkt_idx = (uint16_t)(in[4] % cnt);
		f.handler_id = dprpc_handler_id("echo");
		f.flags = in[7] & (DP_MSG_ACK_NOW | DP_MSG_PROBE);
		pay = f.pkt_idx + 1u < cnt ? DPRPC_MAX_FRAME_PAYLOAD
					   : f.msg_len - (cnt - 1) * DPRPC_MAX_FRAME_PAYLOAD;
		break;
	case 3:
	case 7:
		/* Aimed at the slot's response, if b sends one. */
		e = dp_srv_find(&dp_rpc_of(b)->peers[src], slot);
		cnt = e != NULL && e->tx != NULL ? e->tx->n : 1u + in[4] % 32;
		if (e != NULL && (in[3] & 1))
			f.req_num = e->req_num;
		f.type = DP_FRAME_ACK;
		f.status = DP_FRAME_RESPONSE;
		f.pkt_cnt = (uint16_t)cnt;
		f.pkt_idx = (uint16_t)(kind == 7 ? cnt : in[4] % (cnt + 1));
		f.msg_len = RTE_MAX((uint32_t)f.pkt_idx, in[5] % (cnt + 1));
		f.flags = in[7] & (DP_ACK_NACK | DP_ACK_PROBE | DP_ACK_ANSWER);
		f.credits = in[6];
		break;
	case 4:
		peer_down(b, src);
		poll_b(b);
		return;
	case 5:
		reply_held(len % (3 * DPRPC_MAX_FRAME_PAYLOAD));
		poll_b(b);
		return;
	case 6:
		f.handler_id = dprpc_handler_id("defer");
		pay = 8;
		break;
	}
	if (kind == 1) {
		payload[0] = in[5];
		payload[1] = in[6];
	} else {
		memset(payload, in[7], pay);
	}
	m = rte_pktmbuf_alloc(mp);
	if (m == NULL)
		abort(); /* b holds a bounded number: the pool never runs dry */
	frame = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(DP_HDRS_LEN + pay));
	dp_frame_write(frame, tmpl[src], &f, payload, pay);
	if (rte_ring_enqueue(to_b, m) != 0)
		rte_pktmbuf_free(m);
	poll_b(b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rte_malloc_socket_stats before, made, after;
	struct dprpc_agent *b;
	size_t i;

	dpt_ring_drain(to_b);
	dpt_ring_drain(from_b);
	if (rte_malloc_get_socket_stats(0, &before) != 0)
		abort();
	b = make_b();
	if (rte_malloc_get_socket_stats(0, &made) != 0)
		abort();
	for (i = 0; i + 8 <= size && i < 8 * 512; i += 8)
		fuzz_op(b, data + i);
	while (nb_held > 0)
		reply_held(0);
	poll_b(b);
	recount(b);
	/* Both callers declared down: everything b held for them goes. */
	peer_down(b, 0);
	peer_down(b, 2);
	poll_b(b);
	recount(b);
	if (dp_load_relaxed(&dp_base_of(b)->st.msgs_live) != 0)
		fail("messages live after reclaim", dp_load_relaxed(&dp_base_of(b)->st.msgs_live),
			0);
	if (dp_requests_in_use(dp_base_of(b)) != 0)
		fail("requests in use", dp_requests_in_use(dp_base_of(b)), 0);
	dpt_ring_drain(to_b);
	dpt_ring_drain(from_b);
	if (rte_mempool_in_use_count(mp) != 0)
		fail("mbufs in use after reclaim", rte_mempool_in_use_count(mp), 0);
	if (rte_malloc_get_socket_stats(0, &after) != 0 ||
		after.heap_allocsz_bytes != made.heap_allocsz_bytes)
		fail("DPDK heap bytes after reclaim", after.heap_allocsz_bytes,
			made.heap_allocsz_bytes);
	if (dprpc_agent_destroy(b) != 0)
		abort();
	dpt_ring_drain(to_b);
	dpt_ring_drain(from_b);
	if (rte_mempool_in_use_count(mp) != 0)
		fail("mbufs leaked", rte_mempool_in_use_count(mp), 0);
	if (rte_malloc_get_socket_stats(0, &after) != 0 ||
		after.heap_allocsz_bytes != before.heap_allocsz_bytes)
		fail("DPDK heap leaked", after.heap_allocsz_bytes, before.heap_allocsz_bytes);
	return 0;
}
