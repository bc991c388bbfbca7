/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a host answers on its segment: an ARP request for its IPv4 address
 * and an ICMP echo request to it, each turned into its reply in place
 * (docs/wire.md, "IPv4 as a host"); and the ARP frames an agent reads
 * and sends to find its peers (base/arp.c).
 */
#include <string.h>

#include <rte_arp.h>
#include <rte_ether.h>
#include <rte_icmp.h>
#include <rte_ip.h>

#include "dp_wire.h"

/* Whether @eth (@len bytes) holds an Ethernet/IPv4 ARP header. */
static bool
dp_arp_ok(const struct rte_ether_hdr *eth, uint32_t len)
{
	const struct rte_arp_hdr *arp = (const struct rte_arp_hdr *)(eth + 1);

	return len >= sizeof(*eth) + sizeof(*arp) &&
	       eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP) &&
	       arp->arp_hardware == rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) &&
	       arp->arp_protocol == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) &&
	       arp->arp_hlen == RTE_ETHER_ADDR_LEN && arp->arp_plen == 4;
}

bool
dp_arp_sender(const uint8_t *frame, uint32_t len, rte_be32_t *ip, struct rte_ether_addr *mac)
{
	const struct rte_ether_hdr *eth = (const struct rte_ether_hdr *)frame;
	const struct rte_arp_hdr *arp = (const struct rte_arp_hdr *)(eth + 1);

	if (len < sizeof(*eth) || !dp_arp_ok(eth, len) ||
		(arp->arp_opcode != rte_cpu_to_be_16(RTE_ARP_OP_REQUEST) &&
			arp->arp_opcode != rte_cpu_to_be_16(RTE_ARP_OP_REPLY)))
		return false;
	*ip = arp->arp_data.arp_sip;
	*mac = arp->arp_data.arp_sha;
	return true;
}

void
dp_arp_request_write(uint8_t *frame, const struct dp_addr *self, rte_be32_t tip,
	const struct rte_ether_addr *dst)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)frame;
	struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eth + 1);

	memset(frame, 0, DP_ARP_FRAME_LEN);
	if (dst != NULL)
		rte_ether_addr_copy(dst, &eth->dst_addr);
	else
		memset(&eth->dst_addr, 0xff, sizeof(eth->dst_addr));
	rte_ether_addr_copy(&self->mac, &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = RTE_ETHER_ADDR_LEN;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REQUEST);
	arp->arp_data.arp_sha = self->mac;
	arp->arp_data.arp_sip = self->ip;
	/* arp_tha stays zero: unknown. */
	arp->arp_data.arp_tip = tip;
}

/* An ARP request for @self's address, made its reply. */
static enum dp_host_reply
dp_host_arp(struct rte_ether_hdr *eth, uint32_t len, const struct dp_addr *self)
{
	struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eth + 1);

	if (!dp_arp_ok(eth, len) || arp->arp_opcode != rte_cpu_to_be_16(RTE_ARP_OP_REQUEST) ||
		arp->arp_data.arp_tip != self->ip || arp->arp_data.arp_sip == self->ip)
		return DP_HOST_NONE;
	arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REPLY);
	arp->arp_data.arp_tha = arp->arp_data.arp_sha;
	arp->arp_data.arp_tip = arp->arp_data.arp_sip;
	arp->arp_data.arp_sha = self->mac;
	arp->arp_data.arp_sip = self->ip;
	rte_ether_addr_copy(&eth->src_addr, &eth->dst_addr);
	rte_ether_addr_copy(&self->mac, &eth->src_addr);
	return DP_HOST_ARP;
}

/* An ICMP echo request to @self, checksums right, made its reply. */
static enum dp_host_reply
dp_host_echo(struct rte_ether_hdr *eth, uint32_t len, const struct dp_addr *self, uint8_t ttl)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_icmp_hdr *icmp;
	uint32_t ihl, ip_len;

	if (len < sizeof(*eth) + sizeof(*ip) || (ip->version_ihl >> 4) != 4)
		return DP_HOST_NONE;
	ihl = (uint32_t)(ip->version_ihl & 0xf) * 4;
	ip_len = rte_be_to_cpu_16(ip->total_length);
	if (ihl < sizeof(*ip) || ip_len < ihl + sizeof(*icmp) || ip_len > len - sizeof(*eth) ||
		ip->next_proto_id != IPPROTO_ICMP || ip->dst_addr != self->ip ||
		(rte_be_to_cpu_16(ip->fragment_offset) &
			(RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)) != 0 ||
		dp_ipv4_hdr_sum(ip, ihl) != 0xffff)
		return DP_HOST_NONE;
	icmp = (struct rte_icmp_hdr *)((uint8_t *)ip + ihl);
	if (icmp->icmp_type != RTE_IP_ICMP_ECHO_REQUEST || icmp->icmp_code != 0 ||
		rte_raw_cksum(icmp, ip_len - ihl) != 0xffff)
		return DP_HOST_NONE;
	icmp->icmp_type = RTE_IP_ICMP_ECHO_REPLY;
	icmp->icmp_cksum = 0;
	icmp->icmp_cksum = (uint16_t)~rte_raw_cksum(icmp, ip_len - ihl);
	ip->dst_addr = ip->src_addr;
	ip->src_addr = self->ip;
	ip->time_to_live = ttl;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = (uint16_t)~dp_ipv4_hdr_sum(ip, ihl);
	rte_ether_addr_copy(&eth->src_addr, &eth->dst_addr);
	rte_ether_addr_copy(&self->mac, &eth->src_addr);
	return DP_HOST_ECHO;
}

enum dp_host_reply
dp_host_answer(uint8_t *frame, uint32_t len, const struct dp_addr *self, uint8_t ttl)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)frame;

	if (len < sizeof(*eth))
		return DP_HOST_NONE;
	if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP))
		return dp_host_arp(eth, len, self);
	if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4))
		return dp_host_echo(eth, len, self, ttl);
	return DP_HOST_NONE;
}
