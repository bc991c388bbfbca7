/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An agent as a host on its segment: it answers an ARP request for its
 * IPv4 address and an ICMP echo request to it (ping), and nothing else
 * that is not dprpc's (docs/wire.md, "ARP and ICMP echo").  The codec's
 * answers are checked byte by byte; then an agent on a ring pair answers
 * frames put on its wire, counted.
 */
#include <string.h>

#include <criterion/criterion.h>

#include <rte_arp.h>
#include <rte_ether.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_ring.h>

#include "dp_wire.h"
#include "dpt.h"

static const struct rte_ether_addr self_mac = {{0x02, 0, 0, 0, 0, 0x01}};
static const struct rte_ether_addr asker_mac = {{0x02, 0, 0, 0, 0, 0x09}};
#define SELF_IP	 RTE_IPV4(10, 0, 0, 1)
#define ASKER_IP RTE_IPV4(10, 0, 0, 9)

/* An ARP request from the asker for @tip. */
static uint32_t
arp_request(uint8_t *f, uint32_t tip)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)f;
	struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eth + 1);

	memset(f, 0, 64);
	memset(&eth->dst_addr, 0xff, RTE_ETHER_ADDR_LEN);
	eth->src_addr = asker_mac;
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = RTE_ETHER_ADDR_LEN;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REQUEST);
	arp->arp_data.arp_sha = asker_mac;
	arp->arp_data.arp_sip = rte_cpu_to_be_32(ASKER_IP);
	arp->arp_data.arp_tip = rte_cpu_to_be_32(tip);
	return 60; /* padded to Ethernet's minimum, as on the wire */
}

/* An ICMP echo request from the asker to @dst, id 7, seq @seq, 56 bytes
 * of data as ping sends. */
static uint32_t
echo_request(uint8_t *f, uint32_t dst, uint16_t seq)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)f;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_icmp_hdr *icmp = (struct rte_icmp_hdr *)(ip + 1);
	uint8_t *data = (uint8_t *)(icmp + 1);

	memset(f, 0, 128);
	eth->dst_addr = self_mac;
	eth->src_addr = asker_mac;
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16(sizeof(*ip) + sizeof(*icmp) + 56);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_ICMP;
	ip->src_addr = rte_cpu_to_be_32(ASKER_IP);
	ip->dst_addr = rte_cpu_to_be_32(dst);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	icmp->icmp_type = RTE_IP_ICMP_ECHO_REQUEST;
	icmp->icmp_ident = rte_cpu_to_be_16(7);
	icmp->icmp_seq_nb = rte_cpu_to_be_16(seq);
	for (unsigned int i = 0; i < 56; i++)
		data[i] = (uint8_t)i;
	icmp->icmp_cksum = (uint16_t)~rte_raw_cksum(icmp, sizeof(*icmp) + 56);
	return sizeof(*eth) + sizeof(*ip) + sizeof(*icmp) + 56;
}

static const struct dp_addr self = {
	.mac = {{0x02, 0, 0, 0, 0, 0x01}},
	.ip = RTE_BE32(SELF_IP),
	.port = RTE_BE16(7001),
};

Test(host, arp_request_for_our_address_becomes_its_reply)
{
	uint8_t f[128];
	uint32_t len = arp_request(f, SELF_IP);
	const struct rte_ether_hdr *eth = (const struct rte_ether_hdr *)f;
	const struct rte_arp_hdr *arp = (const struct rte_arp_hdr *)(eth + 1);

	cr_assert_eq(dp_host_answer(f, len, &self, 64), DP_HOST_ARP);
	cr_assert(rte_is_same_ether_addr(&eth->dst_addr, &asker_mac));
	cr_assert(rte_is_same_ether_addr(&eth->src_addr, &self_mac));
	cr_assert_eq(arp->arp_opcode, rte_cpu_to_be_16(RTE_ARP_OP_REPLY));
	cr_assert(rte_is_same_ether_addr(&arp->arp_data.arp_sha, &self_mac));
	cr_assert_eq(arp->arp_data.arp_sip, rte_cpu_to_be_32(SELF_IP));
	cr_assert(rte_is_same_ether_addr(&arp->arp_data.arp_tha, &asker_mac));
	cr_assert_eq(arp->arp_data.arp_tip, rte_cpu_to_be_32(ASKER_IP));
}

Test(host, echo_request_to_us_becomes_its_reply_checksums_right)
{
	uint8_t f[128], sent[128];
	uint32_t len = echo_request(f, SELF_IP, 3);
	const struct rte_ether_hdr *eth = (const struct rte_ether_hdr *)f;
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth + 1);
	const struct rte_icmp_hdr *icmp = (const struct rte_icmp_hdr *)(ip + 1);

	memcpy(sent, f, sizeof(f));
	cr_assert_eq(dp_host_answer(f, len, &self, 64), DP_HOST_ECHO);
	cr_assert(rte_is_same_ether_addr(&eth->dst_addr, &asker_mac));
	cr_assert(rte_is_same_ether_addr(&eth->src_addr, &self_mac));
	cr_assert_eq(ip->src_addr, rte_cpu_to_be_32(SELF_IP));
	cr_assert_eq(ip->dst_addr, rte_cpu_to_be_32(ASKER_IP));
	cr_assert_eq(rte_raw_cksum(ip, sizeof(*ip)), 0xffff, "IPv4 header checksum");
	cr_assert_eq(icmp->icmp_type, RTE_IP_ICMP_ECHO_REPLY);
	cr_assert_eq(icmp->icmp_code, 0);
	cr_assert_eq(icmp->icmp_ident, rte_cpu_to_be_16(7));
	cr_assert_eq(icmp->icmp_seq_nb, rte_cpu_to_be_16(3));
	cr_assert_eq(rte_raw_cksum(icmp, sizeof(*icmp) + 56), 0xffff, "ICMP checksum");
	cr_assert_eq(memcmp(icmp + 1, (const uint8_t *)sent + (len - 56), 56), 0, "data echoed");
}

Test(host, what_is_not_ours_is_left_untouched)
{
	uint8_t f[128], before[128];
	uint32_t len;

	len = arp_request(f, RTE_IPV4(10, 0, 0, 2)); /* another host's */
	memcpy(before, f, sizeof(f));
	cr_assert_eq(dp_host_answer(f, len, &self, 64), DP_HOST_NONE);
	cr_assert_eq(memcmp(f, before, sizeof(f)), 0);
	len = arp_request(f, SELF_IP);
	((struct rte_arp_hdr *)(f + sizeof(struct rte_ether_hdr)))->arp_opcode =
		rte_cpu_to_be_16(RTE_ARP_OP_REPLY); /* a reply: nothing to answer */
	cr_assert_eq(dp_host_answer(f, len, &self, 64), DP_HOST_NONE);
	cr_assert_eq(dp_host_answer(f, sizeof(struct rte_ether_hdr) + 10, &self, 64), DP_HOST_NONE,
		"a truncated ARP");
	len = echo_request(f, RTE_IPV4(10, 0, 0, 2), 1); /* to another host */
	cr_assert_eq(dp_host_answer(f, len, &self, 64), DP_HOST_NONE);
	len = echo_request(f, SELF_IP, 1);
	f[len - 1] ^= 1; /* ICMP checksum now wrong */
	memcpy(before, f, sizeof(f));
	cr_assert_eq(dp_host_answer(f, len, &self, 64), DP_HOST_NONE);
	cr_assert_eq(memcmp(f, before, sizeof(f)), 0);
	len = echo_request(f, SELF_IP, 1);
	f[sizeof(struct rte_ether_hdr) + 8] ^= 1; /* the TTL: IPv4 checksum wrong */
	cr_assert_eq(dp_host_answer(f, len, &self, 64), DP_HOST_NONE);
	len = echo_request(f, SELF_IP, 1);
	cr_assert_eq(
		dp_host_answer(f, len - 20, &self, 64), DP_HOST_NONE, "shorter than its IP length");
	for (uint32_t l = 0; l < 14; l++)
		cr_assert_eq(dp_host_answer(f, l, &self, 64), DP_HOST_NONE);
}

/* Agent a on a ring pair: frames put on its receive ring, its answers read
 * from its transmit ring. */
Test(host, an_agent_answers_arp_and_ping_on_its_port)
{
	struct dpt_ring_pair pair;
	struct rte_mempool *mp;
	struct dprpc_agent_conf c;
	struct dprpc_agent_stats s;
	struct dprpc_agent *a;
	struct rte_mbuf *m;
	uint32_t len;
	unsigned int answers = 0;

	cr_assert_geq(dpt_eal_init("host"), 0);
	mp = dpt_pool_and_pair("dpt_host", 2047, &pair);
	cr_assert_not_null(mp);
	dprpc_agent_conf_init(&c);
	c.name = "a";
	c.world = DPT_WORLD2;
	c.port.id = pair.port_a;
	c.port.mbuf_pool = mp;
	c.liveness.keepalive_us = 0; /* nothing of its own on the wire */
	a = dprpc_agent_create(&c);
	cr_assert_not_null(a, "%s", rte_strerror(rte_errno));
	for (unsigned int i = 0; i < 4; i++) {
		m = rte_pktmbuf_alloc(mp);
		cr_assert_not_null(m);
		len = i == 0   ? arp_request(rte_pktmbuf_mtod(m, uint8_t *), SELF_IP)
		      : i == 1 ? arp_request(rte_pktmbuf_mtod(m, uint8_t *), RTE_IPV4(10, 0, 0, 2))
			       : echo_request(rte_pktmbuf_mtod(m, uint8_t *), SELF_IP, (uint16_t)i);
		m->data_len = (uint16_t)len;
		m->pkt_len = len;
		cr_assert_eq(rte_ring_enqueue(pair.ba, m), 0);
	}
	for (unsigned int i = 0; i < 1000 && answers < 3; i++) {
		dprpc_poll(a, 32);
		while (rte_ring_dequeue(pair.ab, (void **)&m) == 0) {
			const struct rte_ether_hdr *eth =
				rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);

			cr_assert(rte_is_same_ether_addr(&eth->dst_addr, &asker_mac));
			answers++;
			rte_pktmbuf_free(m);
		}
	}
	cr_assert_eq(answers, 3u, "an ARP reply and two echo replies");
	cr_assert_eq(dprpc_agent_stats_get(a, &s), 0);
	cr_assert_eq(s.arp_answered, 1u);
	cr_assert_eq(s.echo_answered, 2u);
	cr_assert_eq(s.drops[DPRPC_DROP_NOT_DPRPC], 1u, "the ARP for another host");
	cr_assert_eq(dprpc_agent_destroy(a), 0);
	dpt_ring_drain(pair.ab);
	dpt_ring_drain(pair.ba);
	cr_expect_eq(rte_mempool_in_use_count(mp), 0u, "mbufs leaked");
	dpt_eal_cleanup();
}
