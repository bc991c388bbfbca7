/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for the reassembly path (dataplane/rpc/msg_rx.c): a worker is
 * fed frames of multi-frame requests, responses and ACKs, shaped by the
 * input, through its real rx path (a net_ring port and dprpc_poll()).
 *
 * The worker under test ("b") has a call of several frames in flight to
 * "a" (which does not exist: whatever b sends is freed), so the input can
 * aim ACKs and response frames at a live session slot as well as requests
 * at its server slots.  A fresh agent is made for each input; after it is
 * destroyed every mbuf must be back in the pool and DPDK's heap must hold
 * exactly what it held before (no message buffer leaked), else abort().
 * ASan and UBSan check the rest.
 *
 * Input: 12 bytes per frame (see fuzz_one_frame()).  An input whose
 * length leaves 6 or more bytes past its last whole frame is a world with
 * a key (docs/security.md): b has it, every frame is tagged and stamped
 * as a's agent would, a's challenges of b's are answered (so frames get
 * past the proof of a's incarnation), and a frame whose credits byte is
 * 0xff has its tag broken.
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
#include "dp_auth.h"
#include "../dpt.h"
#include "fuzz_env.h"

#define FUZZ_WORLD                              \
	"a 0 02:00:00:00:00:01 10.0.0.1 7001\n" \
	"b 1 02:00:00:00:00:02 10.0.0.2 7002\n"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rte_mempool *mp;
static struct rte_ring *ab, *ba;
static int port_b;
static struct dp_world world;
static uint8_t tmpl_ab[DP_L2L4_LEN];
static const uint8_t fuzz_key[32] = "the fuzzed world's key, 32 bytes";
static struct dp_auth_keys keys;
static uint32_t world_id;
static bool keyed;
static uint64_t ctl_seq;

static int
h_echo(struct dprpc_request *req, void *arg)
{
	size_t len;
	const void *p = dprpc_request_payload(req, &len);

	(void)arg;
	return dprpc_reply(req, p, len);
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
	c.calls.max_msg_size = 32 * DPRPC_MAX_FRAME_PAYLOAD; /* some inputs exceed it */
	c.calls.credits = 8;
	c.liveness.keepalive_us = 0;
	c.liveness.peer_timeout_us = 0;
	c.calls.retransmit_us = 1;
	if (keyed) {
		c.auth.key = fuzz_key;
		c.auth.key_len = sizeof(fuzz_key);
	}
	b = dprpc_agent_create(&c);
	if (b == NULL || dprpc_register(b, "echo", h_echo, NULL, DPRPC_HANDLER_INLINE) != 0)
		abort();
	return b;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[160];

	(void)argc;
	(void)argv;
	/* b receives from ab and sends into ba. */
	port_b = fuzz_env_up("fuzz_msg", &mp, &ab, &ba);
	if (dp_world_parse(FUZZ_WORLD, &world, err, sizeof(err)) != 0)
		abort();
	dp_l2l4_template(tmpl_ab, &world.addrs[0], &world.addrs[1], 64);
	if (dp_auth_derive(fuzz_key, sizeof(fuzz_key), &keys, &world_id) != 0)
		abort();
	/* What the first agent of a process sets up for good (the mbuf
	 * dynamic field's registry, telemetry) is not a leak per input. */
	if (dprpc_agent_destroy(make_b()) != 0)
		abort();
	return 0;
}

/* Send b frame @f from a (@pay payload bytes of @payload), stamped and
 * tagged as a's agent would in a world with a key; its tag broken if
 * @bad. */
static void
fuzz_send(const struct dp_hdr_fields *f, const uint8_t *payload, uint32_t pay, bool bad)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	struct dp_wire_hdr *h;
	uint8_t *frame;

	if (m == NULL)
		return;
	frame = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(DP_HDRS_LEN + pay));
	dp_frame_write(frame, tmpl_ab, f, payload, pay);
	if (keyed) {
		h = dp_frame_hdr(frame);
		h->world_id = world_id;
		if (f->type == DP_FRAME_CONTROL)
			h->seq = rte_cpu_to_be_64(++ctl_seq);
		dp_frame_tag(frame, NULL, pay, &keys, h->tag);
		if (bad)
			h->tag[0] ^= 1;
	}
	if (rte_ring_enqueue(ab, m) != 0)
		rte_pktmbuf_free(m);
}

/* What b sent: gone, but in a world with a key its challenges to a's
 * incarnation @session are answered by a's PONG, as a's agent would. */
static void
fuzz_answer(struct dprpc_agent *b, uint64_t session)
{
	struct rte_mbuf *m;

	while (rte_ring_dequeue(ba, (void **)&m) == 0) {
		const struct dp_wire_hdr *h = dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *));

		if (keyed && m->data_len >= DP_HDRS_LEN && h->type == DP_FRAME_CONTROL &&
			h->handler_id == rte_cpu_to_be_32(DP_CTRL_PING) &&
			(h->req_num | h->status) != 0 &&
			rte_be_to_cpu_64(h->dst_session) >= session &&
			rte_be_to_cpu_64(h->dst_session) < session + 128) {
			struct dp_hdr_fields f = {
				.type = DP_FRAME_CONTROL,
				.src = 0,
				.dst = 1,
				.session = rte_be_to_cpu_64(h->dst_session),
				.dst_session = dp_base_of(b)->session,
				.req_num = rte_be_to_cpu_32(h->req_num),
				.status = rte_be_to_cpu_32(h->status),
				.handler_id = DP_CTRL_PONG,
			};

			fuzz_send(&f, NULL, 0, false);
		}
		rte_pktmbuf_free(m);
	}
}

/*
 * One frame from 12 input bytes:
 *   0  type (low 2 bits: REQUEST, RESPONSE, ACK, CONTROL), bit 2: raw
 *      lengths instead of consistent ones, bits 3-4: flags, bits 5-7:
 *      slot (0..3, or 60000 when all set)
 *   1  request number relative to the slot's current one (signed)
 *   2  frame index (mod frame count, unless raw)
 *   3  frame count - 2 (consistent) or its low byte (raw)
 *   4-5 message length bytes past (count - 1) full frames, or raw
 *   6  credits
 *   7  handler: odd = "echo", even = an unknown id
 *   8  payload fill byte
 *   9  low 7 bits, session: 0 = a's first one, else another (b takes it
 *      for a restart of a, or for a late frame of an incarnation it
 *      retired); bit 7: addressed to another incarnation of b
 *   10-11 status
 */
static void
fuzz_one_frame(struct dprpc_agent *b, const uint8_t *in, uint64_t session)
{
	static uint8_t payload[DPRPC_MAX_FRAME_PAYLOAD];
	struct dp_hdr_fields f = {0};
	uint16_t slot = (in[0] >> 5) == 7 ? 60000 : (in[0] >> 5) & 3;
	bool raw = in[0] & 4;
	uint32_t cnt, idx, len, pay;

	f.type = (uint8_t)(1 + (in[0] & 3));
	f.src = 0;
	f.dst = 1;
	f.slot = slot;
	f.session = session + (in[9] & 0x7f);
	f.dst_session = (in[9] & 0x80) ? dp_base_of(b)->session + 1 : dp_base_of(b)->session;
	f.req_num = (slot < 4 ? dp_rpc_of(b)->peers[0].slots[slot].req_num : 0) +
		    (uint32_t)(int8_t)in[1];
	f.flags = (uint16_t)((in[0] >> 3) & 3);
	f.credits = in[6];
	f.handler_id = (in[7] & 1) ? dprpc_handler_id("echo") : in[7];
	f.status = (uint32_t)in[10] << 8 | in[11];
	if (raw) {
		cnt = in[3];
		idx = in[2];
		len = (uint32_t)in[4] << 8 | in[5];
		pay = RTE_MIN(len, (uint32_t)DPRPC_MAX_FRAME_PAYLOAD);
	} else {
		cnt = 2u + in[3] % 64;
		idx = in[2] % cnt;
		len = (cnt - 1) * DPRPC_MAX_FRAME_PAYLOAD + 1 +
		      ((uint32_t)in[4] << 8 | in[5]) % DPRPC_MAX_FRAME_PAYLOAD;
		pay = idx + 1 < cnt ? DPRPC_MAX_FRAME_PAYLOAD
				    : len - (cnt - 1) * DPRPC_MAX_FRAME_PAYLOAD;
	}
	if (f.type == DP_FRAME_ACK) {
		/* An ACK: how many frames are held in order, how far any are
		 * held, of how many. */
		f.pkt_idx = (uint16_t)idx;
		f.pkt_cnt = (uint16_t)cnt;
		f.msg_len = raw ? in[5] : idx + in[5] % (cnt - idx + 1u);
		f.status = (in[11] & 1) ? DP_FRAME_REQUEST : DP_FRAME_RESPONSE;
		pay = 0;
	} else {
		f.pkt_idx = (uint16_t)idx;
		f.pkt_cnt = (uint16_t)(cnt == 0 ? 1 : cnt);
		f.msg_len = len;
		if (f.type != DP_FRAME_RESPONSE)
			f.status = 0;
	}
	memset(payload, in[8], pay);
	fuzz_send(&f, payload, pay, in[6] == 0xff);
	(void)dprpc_poll(b, 32);
	fuzz_answer(b, session);
	(void)dprpc_poll(b, 32);
	fuzz_answer(b, session);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t big[3 * DPRPC_MAX_FRAME_PAYLOAD + 7];
	struct rte_malloc_socket_stats before, after;
	struct dprpc_future *fut[2];
	struct dprpc_agent *b;
	uint64_t session;
	size_t i;

	dpt_ring_drain(ab);
	dpt_ring_drain(ba);
	if (rte_malloc_get_socket_stats(0, &before) != 0)
		abort();
	keyed = size % 12 >= 6;
	ctl_seq = 0;
	b = make_b();
	/* Calls to a: one of several frames (slot 0's request, a's ACKs can
	 * reach it) and one of one frame; they wait for a's incarnation (b
	 * pings a), and go when a's first frame comes. */
	fut[0] = dprpc_rpc_async(b, "a", "echo", big, sizeof(big), 0);
	fut[1] = dprpc_rpc_async(b, "a", "echo", big, 8, 0);
	(void)dprpc_poll(b, 32);
	dpt_ring_drain(ba);
	/* b adopts the session of a's first frame. */
	session = 1000;
	for (i = 0; i + 12 <= size && i < 12 * 256; i += 12)
		fuzz_one_frame(b, data + i, session);
	for (i = 0; i < 2; i++)
		if (fut[i] != NULL)
			dprpc_future_put(fut[i]);
	if (dprpc_agent_destroy(b) != 0) {
		/* Deferred requests cannot exist (inline echo): a bug. */
		abort();
	}
	dpt_ring_drain(ab);
	dpt_ring_drain(ba);
	if (rte_mempool_in_use_count(mp) != 0) {
		fprintf(stderr, "fuzz_msg: %u mbufs leaked\n", rte_mempool_in_use_count(mp));
		abort();
	}
	if (rte_malloc_get_socket_stats(0, &after) != 0 ||
		after.heap_allocsz_bytes != before.heap_allocsz_bytes) {
		fprintf(stderr, "fuzz_msg: DPDK heap %zu bytes before, %zu after\n",
			before.heap_allocsz_bytes, after.heap_allocsz_bytes);
		abort();
	}
	return 0;
}
