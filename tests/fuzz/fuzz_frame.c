/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for what parses untrusted bytes: the frame parser and
 * the world-map parser.  The first input byte picks the target and, for
 * frames, whether to fix the IPv4 checksum first so mutations reach the
 * dprpc header instead of dying at the checksum check.
 *
 * Properties checked: no out-of-bounds access (ASan, exact-size copies),
 * no undefined behaviour (UBSan), an accepted frame's payload lies inside
 * it and within the size limit, a refused one names a known reason.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dp_wire.h"

#define FUZZ_WORLD                               \
	"w0 0 02:00:00:00:00:01 10.0.0.1 7000\n" \
	"w1 1 02:00:00:00:00:02 10.0.0.2 7000\n" \
	"w2 2 02:00:00:00:00:03 10.0.0.2 7001\n"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct dp_world world;
static struct dp_rx_ctx ctx;

static void
fuzz_world(const uint8_t *data, size_t size)
{
	struct dp_world w;
	char err[160];
	char *text = malloc(size + 1);

	if (text == NULL)
		return;
	memcpy(text, data, size);
	text[size] = '\0';
	if (text[0] == '@') /* never open files named by the input */
		text[0] = ' ';
	if (dp_world_parse(text, &w, err, sizeof(err)) == 0) {
		/* 1..DPRPC_MAX_WORKERS workers, or a joiner's map: its own
		 * line alone, n 0 (dp_wire.h). */
		if (w.n > DPRPC_MAX_WORKERS || (w.n == 0) != w.joiner)
			abort();
	} else if (err[0] == '\0') {
		abort(); /* a refusal always says why */
	}
	free(text);
}

static void
fuzz_frame(uint8_t mode, const uint8_t *data, size_t size)
{
	struct rte_ipv4_hdr *ip;
	struct dp_parsed p;
	enum dprpc_drop_reason why = DPRPC_DROP_MAX;
	uint8_t *frame = malloc(size ? size : 1); /* exact size: ASan sees overreads */
	uint32_t ihl;

	if (frame == NULL)
		return;
	memcpy(frame, data, size);
	ip = (struct rte_ipv4_hdr *)(frame + sizeof(struct rte_ether_hdr));
	if ((mode & 1) && size >= sizeof(struct rte_ether_hdr) + sizeof(*ip)) {
		ihl = (uint32_t)(ip->version_ihl & 0xf) * 4;
		if (ihl >= sizeof(*ip) && size >= sizeof(struct rte_ether_hdr) + ihl) {
			ip->hdr_checksum = 0;
			ip->hdr_checksum = (uint16_t)~rte_raw_cksum(ip, ihl);
		}
	}
	ctx.self_rank = (uint16_t)((mode >> 1) % world.n);
	if (dp_frame_parse(frame, (uint32_t)size, &ctx, &p, &why)) {
		/* A join frame (a CONTROL to DP_RANK_NONE) names no rank of
		 * the world: join.c reads its sender from the payload. */
		if (p.payload < frame || p.payload + p.payload_len > frame + size ||
			p.payload_len > DPRPC_MAX_FRAME_PAYLOAD ||
			(p.src >= world.n && p.dst != DP_RANK_NONE))
			abort();
		/* The UDP checksum, as the poller checks it: in bounds. */
		if (dp_frame_udp_csum(&p) != 0)
			(void)dp_frame_udp_ok(frame, &p);
	} else if ((unsigned int)why >= DPRPC_DROP_MAX) {
		abort();
	} else if (why == DPRPC_DROP_NOT_DPRPC) {
		/* What the agent then offers to the host's answers: in bounds,
		 * and a reply leaves the same length, addressed back. */
		enum dp_host_reply r =
			dp_host_answer(frame, (uint32_t)size, &world.addrs[ctx.self_rank], 64);

		rte_be32_t sip;
		struct rte_ether_addr sha;

		/* What the ARP cache reads of it (arp.c): in bounds. */
		(void)dp_arp_sender(frame, (uint32_t)size, &sip, &sha);
		if (r != DP_HOST_NONE &&
			!rte_is_same_ether_addr(&((struct rte_ether_hdr *)frame)->src_addr,
				&world.addrs[ctx.self_rank].mac))
			abort();
	}
	free(frame);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[160];

	if (world.n == 0) {
		if (dp_world_parse(FUZZ_WORLD, &world, err, sizeof(err)) != 0)
			abort();
		ctx = (struct dp_rx_ctx){.addrs = world.addrs, .nb_workers = world.n};
	}
	if (size == 0)
		return 0;
	if (data[0] & 0x80)
		fuzz_world(data + 1, size - 1);
	else
		fuzz_frame(data[0], data + 1, size - 1);
	return 0;
}
