/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frame codec and world map: round trips, every malformed-frame drop reason,
 * and a bounded random-mutation pass (run under ASan by the sanitizer job:
 * the parser must never read outside the frame).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include <criterion/criterion.h>

#include "dp_wire.h"
#include <dprpc/dprpc_conf.h>
#include <dprpc/dprpc_rpc.h>
#include <dprpc/dprpc_stats.h>

#define WORLD3                                   \
	"# three workers\n"                      \
	"w0 0 02:00:00:00:00:01 10.0.0.1 7000\n" \
	"w1 1 02:00:00:00:00:02 10.0.0.2 7000; w2 2 02:00:00:00:00:03 10.0.0.2 7001\n"

static struct dp_world world;
static struct dp_rx_ctx ctx;
static uint8_t frame[2048];
static uint32_t frame_len;

static void
build(uint8_t type, uint16_t src, uint16_t dst, const void *payload, uint32_t len)
{
	uint8_t tmpl[DP_L2L4_LEN];
	struct dp_hdr_fields f = {
		.type = type,
		.src = src,
		.dst = dst,
		.slot = 5,
		.session = UINT64_C(0x1122334455667788),
		.dst_session = UINT64_C(0x99aabbccddeeff01),
		.req_num = 77,
		.handler_id = 0xabcdef01,
		.status = 0,
	};

	dp_l2l4_template(tmpl, &world.addrs[src], &world.addrs[dst], 64);
	dp_frame_write(frame, tmpl, &f, payload, len);
	frame_len = DP_HDRS_LEN + len;
}

static void
setup(void)
{
	char err[160];

	cr_assert_eq(dp_world_parse(WORLD3, &world, err, sizeof(err)), 0, "%s", err);
	ctx = (struct dp_rx_ctx){.addrs = world.addrs, .nb_workers = world.n, .self_rank = 1};
	build(DP_FRAME_REQUEST, 0, 1, "payload!", 8);
}

TestSuite(codec, .init = setup, .timeout = 30);

static enum dprpc_drop_reason
parse_fails(void)
{
	struct dp_parsed p;
	enum dprpc_drop_reason why = DPRPC_DROP_MAX;

	cr_assert_not(dp_frame_parse(frame, frame_len, &ctx, &p, &why));
	return why;
}

static struct rte_ipv4_hdr *
ip_hdr(void)
{
	return (struct rte_ipv4_hdr *)(frame + sizeof(struct rte_ether_hdr));
}

static void
fix_ip_csum(void)
{
	ip_hdr()->hdr_checksum = 0;
	ip_hdr()->hdr_checksum = rte_ipv4_cksum(ip_hdr());
}

Test(codec, round_trip_keeps_every_field)
{
	struct dp_parsed p;
	enum dprpc_drop_reason why;

	cr_assert(dp_frame_parse(frame, frame_len, &ctx, &p, &why));
	cr_assert_eq(p.type, DP_FRAME_REQUEST);
	cr_assert_eq(p.src, 0);
	cr_assert_eq(p.slot, 5);
	cr_assert_eq(p.session, UINT64_C(0x1122334455667788));
	cr_assert_eq(p.dst_session, UINT64_C(0x99aabbccddeeff01));
	cr_assert_eq(p.req_num, 77u);
	cr_assert_eq(p.handler_id, 0xabcdef01u);
	cr_assert_eq(p.status, 0u);
	cr_assert_eq(p.payload_len, 8u);
	cr_assert_arr_eq(p.payload, "payload!", 8);
	cr_assert_eq(frame_len, 42u + 72u + 8u);
}

/* Version 3's header, byte for byte at the offsets docs/wire.md gives:
 * the 64-bit incarnations big-endian at 16 and 24; world id, seq and tag
 * left 0 by the writer (the stager stamps them). */
Test(codec, header_bytes_at_their_offsets)
{
	static const uint8_t want[72] = {
		0xd9, 0xc1, 3, DP_FRAME_REQUEST, 0, 0,		/* magic, version, type, flags */
		0, 0, 0, 1, 0, 5,				/* src 0, dst 1, slot 5 */
		0, 0, 0, 77,					/* req_num */
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, /* session */
		0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x01, /* dst_session */
		0, 0, 0, 1, 0, 0, 0, 8,				/* pkt 0 of 1, msg_len 8 */
		0xab, 0xcd, 0xef, 0x01, 0, 0, 0, 0,		/* handler_id, status */
		0, 0, 0, 0,					/* credits, budget */
		0, 0, 0, 0,					/* world_id */
		0, 0, 0, 0, 0, 0, 0, 0,				/* seq */
		0, 0, 0, 0, 0, 0, 0, 0,				/* tag */
	};

	cr_assert_eq(sizeof(struct dp_wire_hdr), sizeof(want));
	cr_assert_arr_eq(frame + DP_L2L4_LEN, want, sizeof(want));
	cr_assert_arr_eq(frame + DP_HDRS_LEN, "payload!", 8);
}

Test(codec, empty_and_largest_payloads_parse)
{
	static uint8_t big[DPRPC_MAX_FRAME_PAYLOAD];
	struct dp_parsed p;
	enum dprpc_drop_reason why;

	build(DP_FRAME_RESPONSE, 2, 1, NULL, 0);
	cr_assert(dp_frame_parse(frame, frame_len, &ctx, &p, &why));
	cr_assert_eq(p.payload_len, 0u);
	cr_assert_eq(p.src, 2);
	memset(big, 0x5a, sizeof(big));
	build(DP_FRAME_RESPONSE, 0, 1, big, sizeof(big));
	cr_assert(dp_frame_parse(frame, frame_len, &ctx, &p, &why));
	cr_assert_eq(p.payload_len, (uint32_t)DPRPC_MAX_FRAME_PAYLOAD);
	/* Ethernet padding after the IP datagram is allowed. */
	build(DP_FRAME_REQUEST, 0, 1, "x", 1);
	frame_len += 20;
	cr_assert(dp_frame_parse(frame, frame_len, &ctx, &p, &why));
	cr_assert_eq(p.payload_len, 1u);
}

Test(codec, every_truncation_is_dropped)
{
	uint32_t full = frame_len, l;

	for (l = 0; l < full; l++) {
		frame_len = l;
		enum dprpc_drop_reason why = parse_fails();

		cr_assert(why == DPRPC_DROP_TRUNCATED || why == DPRPC_DROP_BAD_LENGTH,
			"length %u: %s", l, dprpc_drop_reason_str(why));
	}
}

Test(codec, wrong_magic_version_type)
{
	struct dp_wire_hdr *h = dp_frame_hdr(frame);

	h->magic ^= 1;
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_MAGIC);
	h->magic ^= 1;
	h->version = 1; /* the 40-byte header with 32-bit sessions */
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_VERSION);
	h->version = 2; /* the 52-byte header, without world id or tag */
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_VERSION);
	h->version = 4;
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_VERSION);
	h->version = DP_WIRE_VERSION;
	h->type = 9;
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_TYPE);
	h->type = 0;
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_TYPE);
	h->type = DP_FRAME_STREAM_ACK + 1;
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_TYPE);
	h->type = DP_FRAME_REQUEST;
	/* Another world's id: dropped before anything else reads it. */
	h->world_id = rte_cpu_to_be_32(7);
	cr_assert_eq(parse_fails(), DPRPC_DROP_OTHER_WORLD);
	ctx.world_id = rte_cpu_to_be_32(7);
	{
		struct dp_parsed p;

		enum dprpc_drop_reason why;

		cr_assert(dp_frame_parse(frame, frame_len, &ctx, &p, &why));
	}
	ctx.world_id = 0;
}

/* Frame @idx of a message of @cnt frames and @msg_len bytes, carrying
 * @len bytes (zeros); an ACK if @type says so. */
static void
build_part(uint8_t type, uint16_t idx, uint16_t cnt, uint32_t msg_len, uint32_t len)
{
	static const uint8_t zeros[DPRPC_MAX_FRAME_PAYLOAD + 8];
	uint8_t tmpl[DP_L2L4_LEN];
	struct dp_hdr_fields f = {
		.type = type,
		.src = 0,
		.dst = 1,
		.slot = 5,
		.req_num = 77,
		.status = type == DP_FRAME_ACK ? DP_FRAME_REQUEST : 0,
		.pkt_idx = idx,
		.pkt_cnt = cnt,
		.msg_len = msg_len,
		.flags = type == DP_FRAME_ACK ? DP_ACK_NACK : 0,
		.credits = 64,
	};

	dp_l2l4_template(tmpl, &world.addrs[0], &world.addrs[1], 64);
	dp_frame_write(frame, tmpl, &f, zeros, len);
	frame_len = DP_HDRS_LEN + len;
}

/* Every frame of a message but the last is full, the last holds the rest;
 * an ACK names at most all frames and carries nothing. */
Test(codec, message_frames_and_acks)
{
	const uint32_t full = DPRPC_MAX_FRAME_PAYLOAD, len = 2 * full + 100;
	struct dp_wire_hdr *h = dp_frame_hdr(frame);
	enum dprpc_drop_reason why;
	struct dp_parsed p;

	build_part(DP_FRAME_REQUEST, 1, 3, len, full);
	cr_assert(dp_frame_parse(frame, frame_len, &ctx, &p, &why));
	cr_assert_eq(p.pkt_idx, 1);
	cr_assert_eq(p.pkt_cnt, 3);
	cr_assert_eq(p.msg_len, len);
	cr_assert_eq(p.payload_len, full);
	build_part(DP_FRAME_RESPONSE, 2, 3, len, 100);
	cr_assert(dp_frame_parse(frame, frame_len, &ctx, &p, &why));
	cr_assert_eq(p.payload_len, 100u);
	/* A short middle frame, a long last one. */
	build_part(DP_FRAME_REQUEST, 1, 3, len, full - 1);
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_LENGTH);
	build_part(DP_FRAME_REQUEST, 2, 3, len, 101);
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_LENGTH);
	/* msg_len that needs fewer or more frames than pkt_cnt. */
	build_part(DP_FRAME_REQUEST, 0, 3, 2 * full, full);
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_LENGTH);
	build_part(DP_FRAME_REQUEST, 0, 3, 3 * full + 1, full);
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_LENGTH);
	build_part(DP_FRAME_REQUEST, 0, 65535, UINT32_MAX, full);
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_LENGTH);
	/* A CONTROL frame is never split. */
	build_part(DP_FRAME_CONTROL, 0, 3, len, full);
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_LENGTH);
	/* ACKs. */
	build_part(DP_FRAME_ACK, 3, 3, 0, 0);
	cr_assert(dp_frame_parse(frame, frame_len, &ctx, &p, &why));
	cr_assert_eq(p.pkt_idx, 3);
	cr_assert_eq(p.flags, DP_ACK_NACK);
	cr_assert_eq(p.credits, 64);
	build_part(DP_FRAME_ACK, 4, 3, 0, 0);
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_LENGTH);
	/* msg_len: one past the highest frame held, at most pkt_cnt. */
	build_part(DP_FRAME_ACK, 1, 3, 3, 0);
	cr_assert(dp_frame_parse(frame, frame_len, &ctx, &p, &why));
	cr_assert_eq(p.msg_len, 3u);
	build_part(DP_FRAME_ACK, 1, 3, 4, 0);
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_LENGTH);
	build_part(DP_FRAME_ACK, 0, 1, 0, 0);
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_LENGTH);
	build_part(DP_FRAME_ACK, 1, 3, 0, 4);
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_LENGTH);
	build_part(DP_FRAME_ACK, 1, 3, 0, 0);
	h->status = rte_cpu_to_be_32(DP_FRAME_CONTROL);
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_LENGTH);
}

Test(codec, wrong_lengths)
{
	struct dp_wire_hdr *h = dp_frame_hdr(frame);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip_hdr() + 1);

	h->msg_len = rte_cpu_to_be_32(9);
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_LENGTH);
	h->msg_len = rte_cpu_to_be_32(8);
	udp->dgram_len = rte_cpu_to_be_16(rte_be_to_cpu_16(udp->dgram_len) - 1);
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_LENGTH);
	udp->dgram_len = rte_cpu_to_be_16(rte_be_to_cpu_16(udp->dgram_len) + 1);
	/* IP total length beyond the received bytes. */
	ip_hdr()->total_length = rte_cpu_to_be_16(rte_be_to_cpu_16(ip_hdr()->total_length) + 4);
	fix_ip_csum();
	cr_assert_eq(parse_fails(), DPRPC_DROP_TRUNCATED);
	build(DP_FRAME_REQUEST, 0, 1, "payload!", 8);
	h->pkt_cnt = 0;
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_LENGTH);
	/* Two frames, but this one holds the whole message. */
	h->pkt_cnt = rte_cpu_to_be_16(2);
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_LENGTH);
	h->pkt_idx = rte_cpu_to_be_16(2);
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_LENGTH);
	/* IHL below 5. */
	build(DP_FRAME_REQUEST, 0, 1, "payload!", 8);
	ip_hdr()->version_ihl = 0x44;
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_LENGTH);
}

Test(codec, bad_ip_checksum)
{
	ip_hdr()->time_to_live--;
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_CSUM);
}

/* The header sum takes 32-bit words (codec.c): a flip of any bit the parse
 * does not check before the sum is caught by it, and headers whose sums
 * carry in every fold still pass. */
Test(codec, ip_checksum_catches_every_bit_and_folds_carries)
{
	static const unsigned int bytes[] = {1, 2, 3, 4, 5, 8, 10, 11, 12, 13, 14, 15};
	struct dp_parsed p;
	enum dprpc_drop_reason why;
	unsigned int i, bit;

	for (i = 0; i < RTE_DIM(bytes); i++)
		for (bit = 0; bit < 8; bit++) {
			uint8_t *b = (uint8_t *)ip_hdr() + bytes[i];

			*b ^= (uint8_t)(1u << bit);
			cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_CSUM, "byte %u bit %u", bytes[i],
				bit);
			*b ^= (uint8_t)(1u << bit);
		}
	cr_assert(dp_frame_parse(frame, frame_len, &ctx, &p, &why));
	/* All ones where the parse allows it: every fold carries. */
	ip_hdr()->type_of_service = 0xff;
	ip_hdr()->packet_id = 0xffff;
	ip_hdr()->time_to_live = 0xff;
	fix_ip_csum();
	cr_assert(dp_frame_parse(frame, frame_len, &ctx, &p, &why), "drop %d", why);
	ip_hdr()->packet_id = 0xfeff;
	cr_assert_eq(parse_fails(), DPRPC_DROP_BAD_CSUM);
}

/* The 32-bit-word sum equals rte_raw_cksum()'s on any header, all-ones
 * words (every fold carrying) included. */
Test(codec, ip_header_sum_matches_the_byte_sum)
{
	uint8_t hdr[20];
	unsigned int i, k;
	uint32_t x = 12345;

	memset(hdr, 0xff, sizeof(hdr));
	cr_assert_eq(dp_ipv4_hdr_sum(hdr, 20), rte_raw_cksum(hdr, 20));
	for (i = 0; i < 200000; i++) {
		for (k = 0; k < sizeof(hdr); k++) {
			x = x * 1103515245u + 12345u;
			/* Mostly high bytes: the sums carry often. */
			hdr[k] = (uint8_t)((x >> 16) | ((i & 1) ? 0xf0 : 0));
		}
		/* A plain comparison, the assertion only on a mismatch: 200,000
		 * Criterion assertions took this test past its 30 s under
		 * ASan on a slow minute (CI). */
		if (dp_ipv4_hdr_sum(hdr, 20) != rte_raw_cksum(hdr, 20))
			cr_assert_eq(
				dp_ipv4_hdr_sum(hdr, 20), rte_raw_cksum(hdr, 20), "header %u", i);
	}
}

Test(codec, not_for_us)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)frame;
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip_hdr() + 1);

	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	cr_assert_eq(parse_fails(), DPRPC_DROP_NOT_DPRPC);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	udp->dst_port = rte_cpu_to_be_16(9999);
	cr_assert_eq(parse_fails(), DPRPC_DROP_NOT_DPRPC);
	/* Addressed to another worker: its MAC, then ours with its IP. */
	build(DP_FRAME_REQUEST, 0, 2, "x", 1);
	ctx.self_rank = 1;
	cr_assert_eq(parse_fails(), DPRPC_DROP_OTHER_MAC);
	eth = (struct rte_ether_hdr *)frame;
	eth->dst_addr = world.addrs[1].mac;
	cr_assert_eq(parse_fails(), DPRPC_DROP_NOT_DPRPC);
	/* A fragment. */
	build(DP_FRAME_REQUEST, 0, 1, "x", 1);
	ip_hdr()->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_MF_FLAG);
	fix_ip_csum();
	cr_assert_eq(parse_fails(), DPRPC_DROP_NOT_DPRPC);
	/* UDP inside IPv4 but another protocol. */
	build(DP_FRAME_REQUEST, 0, 1, "x", 1);
	ip_hdr()->next_proto_id = IPPROTO_TCP;
	fix_ip_csum();
	cr_assert_eq(parse_fails(), DPRPC_DROP_NOT_DPRPC);
}

/* A frame for another station's MAC is not ours, whatever it holds; one
 * to the broadcast address is read as any other. */
Test(codec, another_stations_mac_is_dropped_first)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)frame;
	struct dp_parsed p;
	enum dprpc_drop_reason why;

	eth->dst_addr.addr_bytes[5] ^= 0x40;
	cr_assert_eq(parse_fails(), DPRPC_DROP_OTHER_MAC);
	eth->dst_addr = world.addrs[0].mac; /* worker 0's, not ours (1) */
	cr_assert_eq(parse_fails(), DPRPC_DROP_OTHER_MAC);
	memset(&eth->dst_addr, 0xff, RTE_ETHER_ADDR_LEN);
	cr_assert(dp_frame_parse(frame, frame_len, &ctx, &p, &why), "broadcast: %d", why);
	eth->dst_addr = world.addrs[1].mac;
	cr_assert(dp_frame_parse(frame, frame_len, &ctx, &p, &why), "ours: %d", why);
}

Test(codec, foreign_or_spoofed_sender)
{
	struct dp_wire_hdr *h = dp_frame_hdr(frame);

	/* Claims to be worker 2 but comes from worker 0's address. */
	h->src_worker = rte_cpu_to_be_16(2);
	cr_assert_eq(parse_fails(), DPRPC_DROP_FOREIGN);
	h->src_worker = rte_cpu_to_be_16(40);
	cr_assert_eq(parse_fails(), DPRPC_DROP_FOREIGN);
	h->src_worker = rte_cpu_to_be_16(0);
	h->dst_worker = rte_cpu_to_be_16(0);
	cr_assert_eq(parse_fails(), DPRPC_DROP_FOREIGN);
	/* Unknown source IP. */
	build(DP_FRAME_REQUEST, 0, 1, "x", 1);
	ip_hdr()->src_addr = htonl(0xc0a80001);
	fix_ip_csum();
	cr_assert_eq(parse_fails(), DPRPC_DROP_FOREIGN);
}

Test(codec, random_mutations_never_crash)
{
	static uint8_t copy[2048];
	struct dp_parsed p;
	enum dprpc_drop_reason why;
	unsigned int i, k, ok = 0;

	srand(1234);
	for (i = 0; i < 50000; i++) {
		uint32_t len = frame_len;
		uint8_t *heap;

		memcpy(copy, frame, frame_len);
		for (k = 0; k < 1 + (unsigned int)rand() % 4; k++)
			copy[(unsigned int)rand() % frame_len] = (uint8_t)rand();
		if (rand() % 4 == 0)
			len = (uint32_t)rand() % (frame_len + 1);
		/* Exact-size heap copy so ASan sees any overread. */
		heap = malloc(len ? len : 1);
		memcpy(heap, copy, len);
		if (dp_frame_parse(heap, len, &ctx, &p, &why)) {
			ok++;
			cr_assert_leq(p.payload + p.payload_len, heap + len);
		} else {
			cr_assert_lt((unsigned int)why, (unsigned int)DPRPC_DROP_MAX);
		}
		free(heap);
	}
	/* Mutations of the payload bytes leave valid frames. */
	cr_assert_gt(ok, 0u);
}

Test(codec, header_to_string)
{
	char buf[256];

	dp_wire_hdr_str(dp_frame_hdr(frame), buf, sizeof(buf));
	cr_assert_not_null(strstr(buf, "REQ v3"), "%s", buf);
	cr_assert_not_null(strstr(buf, "session 0x1122334455667788 dst_session 0x99aabbccddeeff01"),
		"%s", buf);
	cr_assert_not_null(strstr(buf, "0->1 slot 5"), "%s", buf);
	cr_assert_not_null(strstr(buf, "req 77"), "%s", buf);
}

TestSuite(world, .timeout = 30);

Test(world, parses_entries_and_file)
{
	struct dp_world w;
	char err[160], path[] = "/tmp/dprpc-world-XXXXXX";
	FILE *f;
	int fd;

	cr_assert_eq(dp_world_parse(WORLD3, &w, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(w.n, 3u);
	cr_assert_str_eq(w.w[2].name, "w2");
	cr_assert_eq(rte_be_to_cpu_16(w.addrs[2].port), 7001);
	cr_assert_eq(w.addrs[1].ip, htonl(0x0a000002));
	cr_assert_eq(w.addrs[0].mac.addr_bytes[5], 1);
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	fputs(WORLD3, f);
	fclose(f);
	char spec[64];

	snprintf(spec, sizeof(spec), "@%s", path);
	cr_assert_eq(dp_world_parse(spec, &w, err, sizeof(err)), 0, "%s", err);
	unlink(path);
	cr_assert_eq(w.n, 3u);
	cr_assert_eq(dp_world_parse("@/nonexistent/world", &w, err, sizeof(err)), -EINVAL);
	cr_assert_not_null(strstr(err, "nonexistent"));
}

static void
bad_world(const char *text, const char *needle)
{
	struct dp_world w;
	char err[160] = "";

	cr_assert_eq(dp_world_parse(text, &w, err, sizeof(err)), -EINVAL, "accepted: %s", text);
	cr_assert_not_null(strstr(err, needle), "'%s' lacks '%s'", err, needle);
}

Test(world, rejects_bad_maps_with_a_reason)
{
	bad_world("", "no worker");
	bad_world("a 0 02:00:00:00:00:01", "want");
	/* Four words: no MAC, so the third must be the address. */
	bad_world("a 0 02:00:00:00:00:01 10.0.0.1", "bad IPv4");
	bad_world("a x 02:00:00:00:00:01 10.0.0.1 1", "bad rank");
	bad_world("a 0 02:00:00:00:00 10.0.0.1 1", "bad MAC");
	bad_world("a 0 02:00:00:00:00:01 10.0.0.300 1", "bad IPv4");
	bad_world("a 0 02:00:00:00:00:01 10.0.0.1 70000", "bad UDP port");
	bad_world("a 0 02:00:00:00:00:01 10.0.0.1 0", "bad UDP port");
	bad_world("a 1 02:00:00:00:00:01 10.0.0.1 1", "rank 0 is missing");
	bad_world("a 0 02:00:00:00:00:01 10.0.0.1 1; b 0 02:00:00:00:00:02 10.0.0.2 1", "twice");
	bad_world("a 0 02:00:00:00:00:01 10.0.0.1 1; a 1 02:00:00:00:00:02 10.0.0.2 1",
		"name 'a' given twice");
	bad_world("a 0 02:00:00:00:00:01 10.0.0.1 1; b 1 02:00:00:00:00:02 10.0.0.1 1", "share");
	bad_world("a 0 02:00:00:00:00:01 10.0.0.1 1 extra", "want");
	bad_world("abcdefghijklmnopqrstuvwxyz0123456789 0 02:00:00:00:00:01 10.0.0.1 1",
		"name longer");
}

/* A worker line without a MAC ("NAME RANK IPV4 UDP_PORT") leaves it zero,
 * for ARP to find; "subnet" lines give a worker's prefix and gateway, the
 * longest prefix holding its address winning. */
Test(world, macless_entries_and_subnets)
{
	static const char text[] = "subnet 10.1.0.0/16 via 10.1.0.1\n"
				   "subnet 10.1.2.0/24 via 10.1.2.254\n"
				   "subnet 10.2.0.0/24\n"
				   "a 0 10.1.2.5 7000\n"
				   "b 1 02:00:00:00:00:02 10.2.0.9 7001\n"
				   "c 2 10.3.0.1 7002\n";
	char err[200] = "";
	struct dp_world_entry e;
	struct dp_world w;
	rte_be32_t gw = 1;
	uint8_t len = 99;

	cr_assert_eq(dp_world_parse(text, &w, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(w.n, 3u);
	cr_assert(rte_is_zero_ether_addr(&w.addrs[0].mac));
	cr_assert_eq(w.addrs[0].ip, htonl(0x0a010205));
	cr_assert_eq(rte_be_to_cpu_16(w.addrs[0].port), 7000);
	cr_assert_eq(w.addrs[1].mac.addr_bytes[5], 2);
	cr_assert_eq(w.nb_subnets, 3u);
	cr_assert_eq(dp_world_subnet_of(&w, w.addrs[0].ip, &len, &gw), 1);
	cr_assert_eq(len, 24);
	cr_assert_eq(gw, htonl(0x0a0102fe));
	cr_assert_eq(dp_world_subnet_of(&w, htonl(0x0a010909), &len, &gw), 1);
	cr_assert_eq(len, 16);
	cr_assert_eq(gw, htonl(0x0a010001));
	cr_assert_eq(dp_world_subnet_of(&w, w.addrs[1].ip, &len, &gw), 1);
	cr_assert_eq(len, 24);
	cr_assert_eq(gw, 0u, "a subnet without a gateway");
	cr_assert_eq(dp_world_subnet_of(&w, w.addrs[2].ip, &len, &gw), 0);
	cr_assert_eq(dp_prefix_mask(0), 0u);
	cr_assert_eq(dp_prefix_mask(24), htonl(0xffffff00));
	cr_assert_eq(dp_prefix_mask(32), htonl(0xffffffff));
	/* A joiner's map: its own line without a MAC, and the subnets. */
	cr_assert_eq(dp_world_parse("subnet 10.1.0.0/16 via 10.1.0.1\nj - 10.1.0.7 7000", &w, err,
			     sizeof(err)),
		0, "%s", err);
	cr_assert(w.joiner);
	cr_assert(rte_is_zero_ether_addr(&w.self.addr.mac));
	/* The member a joiner names, with or without its MAC. */
	cr_assert_eq(dp_world_parse_member("m 10.1.0.2 7000", &e, err, sizeof(err)), 0, "%s", err);
	cr_assert(rte_is_zero_ether_addr(&e.addr.mac));
	cr_assert_eq(e.addr.ip, htonl(0x0a010002));
	cr_assert_eq(
		dp_world_parse_member("m 02:00:00:00:00:09 10.1.0.2 7000", &e, err, sizeof(err)),
		0);
	cr_assert_eq(e.addr.mac.addr_bytes[5], 9);
	cr_assert_eq(dp_world_parse_member("m 10.1.0.2", &e, err, sizeof(err)), -EINVAL);
	bad_world("subnet 10.0.0.0; a 0 10.0.0.1 1", "no /LEN");
	bad_world("subnet 10.0.0.0/33; a 0 10.0.0.1 1", "bad prefix length");
	bad_world("subnet 10.0.0.0/x; a 0 10.0.0.1 1", "bad prefix length");
	bad_world("subnet 10.0.0.300/8; a 0 10.0.0.1 1", "bad IPv4");
	bad_world("subnet 10.0.0.0/24 by 10.0.0.1; a 0 10.0.0.1 1", "want 'subnet");
	bad_world("subnet 10.0.0.0/24 via 10.0.1.1; a 0 10.0.0.1 1", "not in subnet");
	bad_world("subnet 10.0.0.0/24 via 0.0.0.0; a 0 10.0.0.1 1", "bad gateway");
	/* A memif link carries frames as made: no ARP there. */
	bad_world("a 0 10.0.0.1 1; b 1 02:00:00:00:00:02 10.0.0.2 1; link a b memif:/s",
		"'a' has no MAC, but a memif link reaches it");
	bad_world("a 0 02:00:00:00:00:01 10.0.0.1 1; b 1 10.0.0.2 1\nmesh memif:/tmp/m",
		"'b' has no MAC");
}

/* Which port reaches whom: a link line, and the mesh for the other pairs;
 * the first named (or the lower rank) is the memif server. */
Test(world, links_and_mesh_say_which_port_reaches_whom)
{
	static const char text[] = WORLD3 "link w2 w0 memif:/tmp/x/ab.sock\nmesh memif:/tmp/m\n";
	char err[160] = "", path[DP_SOCK_PATH_MAX];
	struct dp_world w;
	bool server;

	cr_assert_eq(dp_world_parse(text, &w, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(w.n, 3u);
	cr_assert_eq(w.nb_links, 1u);
	cr_assert_eq(dp_world_link_of(&w, 0, 2, path, &server, err, sizeof(err)), 1);
	cr_assert_str_eq(path, "/tmp/x/ab.sock");
	cr_assert(!server);
	cr_assert_eq(dp_world_link_of(&w, 2, 0, path, &server, err, sizeof(err)), 1);
	cr_assert(server);
	cr_assert_eq(dp_world_link_of(&w, 1, 2, path, &server, err, sizeof(err)), 1);
	cr_assert_str_eq(path, "/tmp/m/w1-w2.sock");
	cr_assert(server);
	cr_assert_eq(dp_world_link_of(&w, 2, 1, path, &server, err, sizeof(err)), 1);
	cr_assert(!server);
	/* Without a mesh, unlinked pairs use the default port. */
	cr_assert_eq(
		dp_world_parse(WORLD3 "link w0 w1 memif:/s", &w, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(dp_world_link_of(&w, 0, 2, path, &server, err, sizeof(err)), 0);
	cr_assert_eq(dp_world_link_of(&w, 1, 0, path, &server, err, sizeof(err)), 1);
	cr_assert_str_eq(path, "/s");
}

/* A worker line without an address ("NAME RANK") is a worker only memif
 * links reach: its address is made from its rank; a worker some other
 * worker would reach through the default port is refused, by name. */
Test(world, workers_only_memif_links_reach_need_no_address)
{
	char err[200] = "";
	struct dp_world w;

	cr_assert_eq(
		dp_world_parse("a 0; b 1\nmesh memif:/tmp/m", &w, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(w.n, 2u);
	for (unsigned int r = 0; r < 2; r++) {
		const uint8_t mac[6] = {0x02, 0x64, 0, 0, 0, (uint8_t)(r + 1)};

		cr_assert_arr_eq(w.w[r].addr.mac.addr_bytes, mac, 6, "rank %u's MAC", r);
		cr_assert_eq(w.w[r].addr.ip, htonl(0x7f640000u | (r + 1)), "rank %u's IPv4", r);
		cr_assert_eq(w.w[r].addr.port, htons(7000));
		cr_assert_eq(memcmp(&w.addrs[r], &w.w[r].addr, sizeof(w.addrs[r])), 0);
	}
	cr_assert_str_eq(w.w[1].name, "b");
	/* Mixed, joined by link lines. */
	cr_assert_eq(dp_world_parse("a 0 02:00:00:00:00:01 10.0.0.1 7001; b 1; c 2;"
				    "link a b memif:/s; link c b memif:/t; link a c memif:/u",
			     &w, err, sizeof(err)),
		0, "%s", err);
	cr_assert_eq(w.w[0].addr.ip, htonl(0x0a000001u));
	cr_assert_eq(w.w[2].addr.ip, htonl(0x7f640003u));
	/* a reaches c through the default port: c needs its address. */
	bad_world("a 0 02:00:00:00:00:01 10.0.0.1 7001; b 1; c 2; link a b memif:/s;"
		  "link c b memif:/t",
		"worker 'c' has no address, but no link joins it to 'a'");
	bad_world("a 0; b 1", "worker 'a' has no address");
	bad_world("a 0; b 1 02:00:00:00:00:02 10.0.0.2 7000", "worker 'a' has no address");
	/* A derived address taken by another worker's own. */
	bad_world("a 0; b 1 02:00:00:00:00:02 127.100.0.1 7000; mesh memif:/tmp/m", "share");
	/* A joiner has no rank to make its address from. */
	bad_world("d -\nmesh memif:/tmp/m", "joins");
	bad_world("a 0 02:00:00:00:00:01", "want");
}

Test(world, rejects_bad_links_with_a_reason)
{
	char mesh[400];
	struct dp_world w;
	char err[160] = "", path[DP_SOCK_PATH_MAX];
	bool server;

	bad_world(WORLD3 "link w0 nobody memif:/s", "two different workers");
	bad_world(WORLD3 "link w0 w0 memif:/s", "two different workers");
	bad_world(WORLD3 "link w0 w1 memif:/s; link w1 w0 memif:/t", "linked twice");
	bad_world(WORLD3 "link w0 w1 tap:/s", "want 'link");
	bad_world(WORLD3 "link w0 w1", "want 'link");
	bad_world(WORLD3 "mesh /tmp", "want 'mesh");
	/* A mesh whose socket paths would not fit is refused when used. */
	snprintf(mesh, sizeof(mesh), WORLD3 "mesh memif:/%0100d", 0);
	cr_assert_eq(dp_world_parse(mesh, &w, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(dp_world_link_of(&w, 0, 1, path, &server, err, sizeof(err)), -EINVAL);
	cr_assert_not_null(strstr(err, "longer than"));
}
