/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frame codec: build and parse version-2 frames (see dp_wire.h).
 *
 * The parser trusts nothing: every length is checked against the bytes
 * actually received before anything behind it is read, and every failure
 * names one drop reason so the poller can count it.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include <rte_ip.h>

#include "dp_wire.h"
#include <dprpc/dprpc_stats.h>

void
dp_l2l4_template(uint8_t *tmpl, const struct dp_addr *src, const struct dp_addr *dst, uint8_t ttl)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)tmpl;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	memset(tmpl, 0, DP_L2L4_LEN);
	rte_ether_addr_copy(&dst->mac, &eth->dst_addr);
	rte_ether_addr_copy(&src->mac, &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->type_of_service = 0;
	ip->packet_id = 0;
	/* Never fragmented: DF set, offset 0. */
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = ttl;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = src->ip;
	ip->dst_addr = dst->ip;
	udp->src_port = src->port;
	udp->dst_port = dst->port;
	/* UDP checksum 0: not computed (allowed on IPv4); the dprpc header and
	 * the Ethernet FCS cover what the UDP checksum would. */
	udp->dgram_cksum = 0;
	/* Template only, never sent as is: the checksum field holds the
	 * ones'-complement sum of the header with length and checksum 0, so
	 * dp_frame_write() only adds the length (RFC 1624 style). */
	ip->total_length = 0;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_raw_cksum(ip, sizeof(*ip));
}

void __rte_hot
dp_frame_write(uint8_t *frame, const uint8_t *tmpl, const struct dp_hdr_fields *f,
	const void *payload, uint32_t len)
{
	struct dp_wire_hdr *h = dp_frame_hdr(frame);

	/* Payload first: it may overlap the headers' place (a reply built in
	 * its request's mbuf, whose payload was slid back by up to 7 bytes
	 * for alignment); memmove, or nothing when already in place. */
	if (len > 0 && payload != (const void *)(h + 1))
		memmove(h + 1, payload, len);
	dp_frame_write_hdr(frame, tmpl, f, len);
}

void
dp_frame_write_iov(uint8_t *frame, const uint8_t *tmpl, const struct dp_hdr_fields *f,
	const struct iovec *iov, unsigned int cnt, uint32_t len)
{
	uint8_t *dst = (uint8_t *)(dp_frame_hdr(frame) + 1);

	if (cnt == 1) {
		dp_frame_write(frame, tmpl, f, iov[0].iov_base, len);
		return;
	}
	for (unsigned int i = 0; i < cnt; i++) {
		if (iov[i].iov_len == 0)
			continue; /* its base may be NULL */
		memcpy(dst, iov[i].iov_base, iov[i].iov_len);
		dst += iov[i].iov_len;
	}
	dp_frame_write_hdr(frame, tmpl, f, len);
}

void
dp_frame_write_hdr(uint8_t *frame, const uint8_t *tmpl, const struct dp_hdr_fields *f, uint32_t len)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(frame + sizeof(struct rte_ether_hdr));
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	struct dp_wire_hdr *h = dp_frame_hdr(frame);
	uint32_t sum;

	memcpy(frame, tmpl, DP_L2L4_LEN);
	ip->total_length =
		rte_cpu_to_be_16((uint16_t)(sizeof(*ip) + sizeof(*udp) + sizeof(*h) + len));
	/* The template's partial sum plus the length word, folded. */
	sum = (uint32_t)ip->hdr_checksum + ip->total_length;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	ip->hdr_checksum = (uint16_t)~sum;
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(sizeof(*udp) + sizeof(*h) + len));

	h->magic = rte_cpu_to_be_16(DP_WIRE_MAGIC);
	h->version = DP_WIRE_VERSION;
	h->type = f->type;
	h->flags = rte_cpu_to_be_16(f->flags);
	h->src_worker = rte_cpu_to_be_16(f->src);
	h->dst_worker = rte_cpu_to_be_16(f->dst);
	h->slot = rte_cpu_to_be_16(f->slot);
	h->req_num = rte_cpu_to_be_32(f->req_num);
	h->session = rte_cpu_to_be_64(f->session);
	h->dst_session = rte_cpu_to_be_64(f->dst_session);
	/* pkt_cnt 0: a message of one frame, @len long. */
	h->pkt_idx = rte_cpu_to_be_16(f->pkt_cnt == 0 ? 0 : f->pkt_idx);
	h->pkt_cnt = rte_cpu_to_be_16(f->pkt_cnt == 0 ? 1 : f->pkt_cnt);
	h->msg_len = rte_cpu_to_be_32(f->pkt_cnt == 0 ? len : f->msg_len);
	h->handler_id = rte_cpu_to_be_32(f->handler_id);
	h->status = rte_cpu_to_be_32(f->status);
	h->credits = rte_cpu_to_be_16(f->credits);
	h->budget = rte_cpu_to_be_16(f->budget);
	/* Stamped as the frame is staged (dp_auth_stamp()), if at all. */
	h->world_id = 0;
	h->seq = 0;
	memset(h->tag, 0, sizeof(h->tag));
}

static inline bool
dp_drop(enum dprpc_drop_reason *why, enum dprpc_drop_reason r)
{
	*why = r;
	return false;
}

/* 8 bytes from @p, whatever its alignment. */
static inline uint64_t
dp_load_u64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The first 6 bytes of an 8-byte load. */
#if RTE_BYTE_ORDER == RTE_LITTLE_ENDIAN
#define DP_MAC_MASK 0x0000ffffffffffffull
#else
#define DP_MAC_MASK 0xffffffffffff0000ull
#endif
static_assert(offsetof(struct dp_addr, mac) == 0 && sizeof(struct dp_addr) >= 8,
	"an 8-byte load at a dp_addr's MAC stays inside it");

bool __rte_hot
dp_frame_parse(const uint8_t *frame, uint32_t len, const struct dp_rx_ctx *ctx,
	struct dp_parsed *out, enum dprpc_drop_reason *why)
{
	const struct rte_ether_hdr *eth = (const struct rte_ether_hdr *)frame;
	const struct rte_ipv4_hdr *ip;
	const struct rte_udp_hdr *udp;
	const struct dp_wire_hdr *h;
	const struct dp_addr *self, *peer;
	uint32_t ihl, ip_len, udp_len, msg_len, pay_len;
	uint16_t src, dst, cnt, idx;

	if (len < sizeof(*eth))
		return dp_drop(why, DPRPC_DROP_TRUNCATED);
	self = ctx->self != NULL ? ctx->self : &ctx->addrs[ctx->self_rank];
	/* A promiscuous port sees the segment's frames for other stations.
	 * One 8-byte compare, masked to the destination's 6 (len >= 14). */
	if (unlikely(((dp_load_u64(frame) ^ dp_load_u64(&self->mac)) & DP_MAC_MASK) != 0) &&
		!rte_is_broadcast_ether_addr(&eth->dst_addr))
		return dp_drop(why, DPRPC_DROP_OTHER_MAC);
	if (eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4))
		return dp_drop(why, DPRPC_DROP_NOT_DPRPC);
	if (len < sizeof(*eth) + sizeof(*ip))
		return dp_drop(why, DPRPC_DROP_TRUNCATED);
	ip = (const struct rte_ipv4_hdr *)(eth + 1);
	if ((ip->version_ihl >> 4) != 4)
		return dp_drop(why, DPRPC_DROP_NOT_DPRPC);
	ihl = (uint32_t)(ip->version_ihl & 0xf) * 4;
	if (ihl < sizeof(*ip))
		return dp_drop(why, DPRPC_DROP_BAD_LENGTH);
	if (len < sizeof(*eth) + ihl)
		return dp_drop(why, DPRPC_DROP_TRUNCATED);
	if (ip->next_proto_id != IPPROTO_UDP || ip->dst_addr != self->ip)
		return dp_drop(why, DPRPC_DROP_NOT_DPRPC);
	/* Fragments (MF set or an offset) are never sent by dprpc. */
	if ((rte_be_to_cpu_16(ip->fragment_offset) &
		    (RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)) != 0)
		return dp_drop(why, DPRPC_DROP_NOT_DPRPC);
	/* A correct header sums, checksum included, to 0xffff. */
	if (dp_ipv4_hdr_sum(ip, ihl) != 0xffff)
		return dp_drop(why, DPRPC_DROP_BAD_CSUM);
	ip_len = rte_be_to_cpu_16(ip->total_length);
	if (ip_len < ihl + sizeof(*udp))
		return dp_drop(why, DPRPC_DROP_BAD_LENGTH);
	/* Ethernet may pad short frames: the IP length rules, but must fit. */
	if (ip_len > len - sizeof(*eth))
		return dp_drop(why, DPRPC_DROP_TRUNCATED);
	udp = (const struct rte_udp_hdr *)((const uint8_t *)ip + ihl);
	if (udp->dst_port != self->port)
		return dp_drop(why, DPRPC_DROP_NOT_DPRPC);
	udp_len = rte_be_to_cpu_16(udp->dgram_len);
	if (udp_len != ip_len - ihl)
		return dp_drop(why, DPRPC_DROP_BAD_LENGTH);
	if (udp_len < sizeof(*udp) + sizeof(*h))
		return dp_drop(why, DPRPC_DROP_TRUNCATED);
	h = (const struct dp_wire_hdr *)(udp + 1);
	if (h->magic != rte_cpu_to_be_16(DP_WIRE_MAGIC))
		return dp_drop(why, DPRPC_DROP_BAD_MAGIC);
	if (h->version != DP_WIRE_VERSION)
		return dp_drop(why, DPRPC_DROP_BAD_VERSION);
	if (h->world_id != ctx->world_id)
		return dp_drop(why, DPRPC_DROP_OTHER_WORLD);
	if (h->type < DP_FRAME_REQUEST || h->type > DP_FRAME_STREAM_ACK)
		return dp_drop(why, DPRPC_DROP_BAD_TYPE);
	src = rte_be_to_cpu_16(h->src_worker);
	dst = rte_be_to_cpu_16(h->dst_worker);
	if (dst == DP_RANK_NONE && h->type == DP_FRAME_CONTROL) {
		/* A join frame (dp_wire.h): between a worker and one not in
		 * its world, whose rank and address nothing here can check;
		 * join.c reads who it is from the payload. */
	} else {
		if (dst != ctx->self_rank || src >= ctx->nb_workers)
			return dp_drop(why, DPRPC_DROP_FOREIGN);
		/* The sender must be the worker it claims: its address and
		 * port. */
		peer = &ctx->addrs[src];
		if (ip->src_addr != peer->ip || udp->src_port != peer->port)
			return dp_drop(why, DPRPC_DROP_FOREIGN);
	}
	cnt = rte_be_to_cpu_16(h->pkt_cnt);
	idx = rte_be_to_cpu_16(h->pkt_idx);
	msg_len = rte_be_to_cpu_32(h->msg_len);
	pay_len = udp_len - (uint32_t)sizeof(*udp) - (uint32_t)sizeof(*h);
	if (h->type == DP_FRAME_ACK) {
		/* pkt_idx is how many frames the receiver holds in order,
		 * msg_len one more than the last it holds: at most all. */
		if (cnt < 2 || idx > cnt || msg_len > cnt || pay_len != 0 ||
			(h->status != rte_cpu_to_be_32(DP_FRAME_REQUEST) &&
				h->status != rte_cpu_to_be_32(DP_FRAME_RESPONSE)))
			return dp_drop(why, DPRPC_DROP_BAD_LENGTH);
	} else if (cnt == 0 || idx >= cnt) {
		return dp_drop(why, DPRPC_DROP_BAD_LENGTH);
	} else if (cnt == 1) {
		if (msg_len != pay_len || msg_len > DPRPC_MAX_FRAME_PAYLOAD)
			return dp_drop(why, DPRPC_DROP_BAD_LENGTH);
	} else {
		/* Every frame but the last is full; the last holds the rest.
		 * The first test also bounds msg_len, so nothing overflows. */
		if (msg_len <= (uint32_t)(cnt - 1) * DPRPC_MAX_FRAME_PAYLOAD ||
			msg_len > (uint32_t)cnt * DPRPC_MAX_FRAME_PAYLOAD ||
			h->type >= DP_FRAME_CONTROL) /* CONTROL, CHUNK, STREAM_ACK: one frame */
			return dp_drop(why, DPRPC_DROP_BAD_LENGTH);
		if (pay_len !=
			(idx + 1u < cnt ? DPRPC_MAX_FRAME_PAYLOAD
					: msg_len - (uint32_t)(cnt - 1) * DPRPC_MAX_FRAME_PAYLOAD))
			return dp_drop(why, DPRPC_DROP_BAD_LENGTH);
	}

	out->hdr = h;
	out->payload = (const uint8_t *)(h + 1);
	out->payload_len = pay_len;
	out->msg_len = msg_len;
	out->pkt_idx = idx;
	out->pkt_cnt = cnt;
	out->flags = rte_be_to_cpu_16(h->flags);
	out->credits = rte_be_to_cpu_16(h->credits);
	out->budget = rte_be_to_cpu_16(h->budget);
	out->type = h->type;
	out->src = src;
	out->dst = dst;
	out->slot = rte_be_to_cpu_16(h->slot);
	out->session = rte_be_to_cpu_64(h->session);
	out->dst_session = rte_be_to_cpu_64(h->dst_session);
	out->req_num = rte_be_to_cpu_32(h->req_num);
	out->handler_id = rte_be_to_cpu_32(h->handler_id);
	out->status = rte_be_to_cpu_32(h->status);
	return true;
}

bool
dp_frame_udp_ok(const uint8_t *frame, const struct dp_parsed *p)
{
	const struct rte_ipv4_hdr *ip =
		(const struct rte_ipv4_hdr *)(frame + sizeof(struct rte_ether_hdr));
	const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)p->hdr - 1;

	/* Over the IPv4 total length, which dp_frame_parse() found equal to
	 * the UDP length and the header's. */
	return rte_ipv4_udptcp_cksum_verify(ip, udp) == 0;
}

int
dp_wire_hdr_str(const struct dp_wire_hdr *h, char *buf, size_t size)
{
	static const char *const types[] = {"?", "REQ", "RESP", "ACK", "CTRL"};
	uint8_t t = h->type < RTE_DIM(types) ? h->type : 0;

	return snprintf(buf, size,
		"%s v%u magic 0x%04x flags 0x%04x %u->%u slot %u session 0x%016" PRIx64
		" dst_session 0x%016" PRIx64 " req %u pkt %u/%u len %u handler 0x%08x status %u",
		types[t], h->version, rte_be_to_cpu_16(h->magic), rte_be_to_cpu_16(h->flags),
		rte_be_to_cpu_16(h->src_worker), rte_be_to_cpu_16(h->dst_worker),
		rte_be_to_cpu_16(h->slot), rte_be_to_cpu_64(h->session),
		rte_be_to_cpu_64(h->dst_session), rte_be_to_cpu_32(h->req_num),
		rte_be_to_cpu_16(h->pkt_idx), rte_be_to_cpu_16(h->pkt_cnt),
		rte_be_to_cpu_32(h->msg_len), rte_be_to_cpu_32(h->handler_id),
		rte_be_to_cpu_32(h->status));
}
