/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * IPv4 as a host does it (docs/wire.md, "IPv4 as a host"): an agent on a
 * ring pair whose world map gives its peers no MAC announces itself by a
 * gratuitous ARP, asks for a peer's MAC (or, off its subnet, its
 * gateway's) while the frame waits, sends it once answered, refreshes a
 * MAC past its reachable time and takes a changed one, drops what waits
 * for an answer that never comes (counted); UDP checksums are filled and
 * checked, and the TTL is the configured one.  The test plays every other
 * station, reading and writing the agent's wire.
 */
#include <string.h>

#include <criterion/criterion.h>

#include <rte_arp.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_ring.h>

#include "dp_arp.h"
#include "dp_wire.h"
#include "dpt.h"

#define A_IP  RTE_IPV4(10, 0, 0, 1)
#define B_IP  RTE_IPV4(10, 0, 0, 2)
#define C_IP  RTE_IPV4(10, 9, 0, 3)
#define GW_IP RTE_IPV4(10, 0, 0, 254)
/* a and b on 10.0.0.0/24, c beyond its gateway; no MACs but a's (a ring
 * port has none to take). */
#define WORLD_ARP                               \
	"subnet 10.0.0.0/24 via 10.0.0.254\n"   \
	"a 0 02:00:00:00:00:01 10.0.0.1 7001\n" \
	"b 1 10.0.0.2 7002\n"                   \
	"c 2 10.9.0.3 7003\n"

static const struct rte_ether_addr b_mac = {{0x02, 0, 0, 0, 0, 0x02}};
static const struct rte_ether_addr b_mac2 = {{0x02, 0, 0, 0, 0, 0x22}};
static const struct rte_ether_addr gw_mac = {{0x02, 0, 0, 0, 0, 0xfe}};

struct arp_rig {
	struct dpt_ring_pair pair;
	struct rte_mempool *mp;
	struct dprpc_agent *a;
	struct rte_ether_addr a_mac; /* its port's */
};

static void
rig_up(struct arp_rig *r, const char *world, void (*tune)(struct dprpc_agent_conf *))
{
	struct dprpc_agent_conf c;

	cr_assert_geq(dpt_eal_init("arp"), 0);
	r->mp = dpt_pool_and_pair("dpt_arp", 2047, &r->pair);
	cr_assert_not_null(r->mp);
	/* A ring port has no MAC (zero, and none can be set): a's is the
	 * map's, the same in both maps. */
	r->a_mac = (struct rte_ether_addr){{0x02, 0, 0, 0, 0, 0x01}};
	dprpc_agent_conf_init(&c);
	c.name = "a";
	c.world = world;
	c.port.id = r->pair.port_a;
	c.port.mbuf_pool = r->mp;
	c.liveness.keepalive_us = 0; /* only what the test asks goes out */
	c.liveness.peer_timeout_us = 0;
	if (tune != NULL)
		tune(&c);
	r->a = dprpc_agent_create(&c);
	cr_assert_not_null(r->a, "%s", rte_strerror(rte_errno));
}

static void
rig_down(struct arp_rig *r)
{
	cr_assert_eq(dprpc_agent_destroy(r->a), 0);
	dpt_ring_drain(r->pair.ab);
	dpt_ring_drain(r->pair.ba);
	cr_expect_eq(rte_mempool_in_use_count(r->mp), 0u, "mbufs leaked");
	dpt_eal_cleanup();
}

/* Put an ARP frame on the agent's wire: @op from @sha/@sip to @tip. */
static void
rig_arp(struct arp_rig *r, uint16_t op, const struct rte_ether_addr *sha, uint32_t sip,
	uint32_t tip)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(r->mp);
	struct rte_ether_hdr *eth;
	struct rte_arp_hdr *arp;

	cr_assert_not_null(m);
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, 60);
	memset(eth, 0, 60);
	arp = (struct rte_arp_hdr *)(eth + 1);
	if (op == RTE_ARP_OP_REPLY)
		eth->dst_addr = r->a_mac;
	else
		memset(&eth->dst_addr, 0xff, RTE_ETHER_ADDR_LEN);
	eth->src_addr = *sha;
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = RTE_ETHER_ADDR_LEN;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(op);
	arp->arp_data.arp_sha = *sha;
	arp->arp_data.arp_sip = rte_cpu_to_be_32(sip);
	if (op == RTE_ARP_OP_REPLY)
		arp->arp_data.arp_tha = r->a_mac;
	arp->arp_data.arp_tip = rte_cpu_to_be_32(tip);
	cr_assert_eq(rte_ring_enqueue(r->pair.ba, m), 0);
}

/* What the agent sent, classified. */
struct seen {
	unsigned int garp;		/* gratuitous: sip == tip == a */
	unsigned int ask[3];		/* broadcast requests for b, c, the gateway */
	unsigned int probe_b;		/* unicast requests for b, to b_mac */
	unsigned int ipv4;		/* dprpc frames */
	struct rte_ether_addr last_dst; /* of the last dprpc frame */
	uint32_t last_ip_dst;
	uint8_t last_ttl;
	uint16_t last_udp_csum;
	bool last_ip_sum_ok, last_udp_ok;
};

static void
rig_read(struct arp_rig *r, struct seen *s)
{
	struct rte_mbuf *m;

	while (rte_ring_dequeue(r->pair.ab, (void **)&m) == 0) {
		const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);

		cr_assert(rte_is_same_ether_addr(&eth->src_addr, &r->a_mac),
			"every frame comes from the port's MAC");
		if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP)) {
			const struct rte_arp_hdr *arp = (const struct rte_arp_hdr *)(eth + 1);
			uint32_t tip = rte_be_to_cpu_32(arp->arp_data.arp_tip);
			bool bcast = rte_is_broadcast_ether_addr(&eth->dst_addr);

			cr_assert_eq(m->data_len, DP_ARP_FRAME_LEN);
			cr_assert_eq(arp->arp_opcode, rte_cpu_to_be_16(RTE_ARP_OP_REQUEST));
			cr_assert(rte_is_same_ether_addr(&arp->arp_data.arp_sha, &r->a_mac));
			cr_assert_eq(arp->arp_data.arp_sip, rte_cpu_to_be_32(A_IP));
			if (tip == A_IP && bcast)
				s->garp++;
			else if (tip == B_IP && bcast)
				s->ask[0]++;
			else if (tip == C_IP && bcast)
				s->ask[1]++;
			else if (tip == GW_IP && bcast)
				s->ask[2]++;
			else if (tip == B_IP && rte_is_same_ether_addr(&eth->dst_addr, &b_mac))
				s->probe_b++;
			else
				cr_assert_fail("an unexpected ARP request for %08x", tip);
		} else {
			const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth + 1);
			const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)(ip + 1);
			uint32_t sum;

			cr_assert_eq(eth->ether_type, rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4));
			s->ipv4++;
			s->last_dst = eth->dst_addr;
			s->last_ip_dst = rte_be_to_cpu_32(ip->dst_addr);
			s->last_ttl = ip->time_to_live;
			s->last_ip_sum_ok = dp_ipv4_hdr_sum(ip, sizeof(*ip)) == 0xffff;
			s->last_udp_csum = udp->dgram_cksum;
			sum = (uint32_t)rte_raw_cksum(udp, rte_be_to_cpu_16(udp->dgram_len)) +
			      rte_ipv4_phdr_cksum(ip, 0);
			sum = (sum & 0xffff) + (sum >> 16);
			sum = (sum & 0xffff) + (sum >> 16);
			s->last_udp_ok = sum == 0xffff;
		}
		rte_pktmbuf_free(m);
	}
}

/* Poll until @done says so (at most 20 s of polls: the test waits on
 * events, not on time). */
static void
rig_poll_until(
	struct arp_rig *r, struct seen *s, bool (*done)(const struct seen *, void *), void *arg)
{
	uint64_t end = rte_get_tsc_cycles() + 20 * rte_get_tsc_hz();

	do {
		dprpc_poll(r->a, 32);
		rig_read(r, s);
	} while (!done(s, arg) && rte_get_tsc_cycles() < end);
	cr_assert(done(s, arg), "the awaited frames never came");
}

static bool
asked_b(const struct seen *s, void *arg)
{
	(void)arg;
	return s->garp >= 1 && s->ask[0] >= 1;
}

static bool
got_ipv4(const struct seen *s, void *arg)
{
	return s->ipv4 >= *(unsigned int *)arg;
}

static void
stats(struct arp_rig *r, struct dprpc_agent_stats *st)
{
	cr_assert_eq(dprpc_agent_stats_get(r->a, st), 0);
}

/* The agent announces itself, asks for b's MAC while the frame to b waits,
 * and sends it to the MAC b answered with. */
Test(arp, a_peer_without_a_mac_is_asked_for_and_its_frame_waits)
{
	static const uint8_t zero[6];
	struct dprpc_worker_info info;
	struct dprpc_agent_stats st;
	struct seen s = {0};
	struct dprpc_future *f;
	struct arp_rig r;
	unsigned int one = 1;

	rig_up(&r, WORLD_ARP, NULL);
	f = dprpc_rpc_async(r.a, "b", "echo", "x", 1, 0);
	cr_assert_not_null(f);
	rig_poll_until(&r, &s, asked_b, NULL);
	cr_assert_eq(s.garp, 1u, "one gratuitous ARP at start");
	cr_assert_eq(s.ipv4, 0u, "nothing goes to b before its MAC is known");
	rig_arp(&r, RTE_ARP_OP_REPLY, &b_mac, B_IP, A_IP);
	rig_poll_until(&r, &s, got_ipv4, &one);
	cr_assert(rte_is_same_ether_addr(&s.last_dst, &b_mac));
	cr_assert_eq(s.last_ip_dst, B_IP);
	stats(&r, &st);
	cr_assert_eq(st.arp_resolved, 1u);
	cr_assert_eq(st.arp_sent, (uint64_t)(s.garp + s.ask[0] + s.ask[1] + s.ask[2] + s.probe_b));
	cr_assert_eq(st.arp_unresolved, 0u);
	/* An ARP from a station it never asked for takes no room. */
	rig_arp(&r, RTE_ARP_OP_REQUEST, &gw_mac, RTE_IPV4(10, 0, 0, 77), RTE_IPV4(10, 0, 0, 78));
	dprpc_poll(r.a, 32);
	stats(&r, &st);
	cr_assert_eq(st.arp_resolved, 1u);
	/* Its info gives the map's MAC, none, not the one ARP found. */
	cr_assert_eq(dprpc_worker_info_get(r.a, "b", &info), 0);
	cr_assert_eq(info.ipv4, rte_cpu_to_be_32(B_IP));
	cr_assert_eq(memcmp(info.mac, zero, sizeof(zero)), 0);
	dprpc_future_cancel(f);
	dprpc_future_put(f);
	rig_down(&r);
}

static bool
asked_gw(const struct seen *s, void *arg)
{
	(void)arg;
	return s->ask[2] >= 1;
}

/* A peer off the agent's subnet is reached through its gateway: the agent
 * asks for the gateway's MAC, never the peer's. */
Test(arp, a_peer_off_the_subnet_goes_through_the_gateway)
{
	struct dprpc_future *f;
	struct seen s = {0};
	struct arp_rig r;
	unsigned int one = 1;

	rig_up(&r, WORLD_ARP, NULL);
	f = dprpc_rpc_async(r.a, "c", "echo", "x", 1, 0);
	cr_assert_not_null(f);
	rig_poll_until(&r, &s, asked_gw, NULL);
	rig_arp(&r, RTE_ARP_OP_REPLY, &gw_mac, GW_IP, A_IP);
	rig_poll_until(&r, &s, got_ipv4, &one);
	cr_assert(rte_is_same_ether_addr(&s.last_dst, &gw_mac));
	cr_assert_eq(s.last_ip_dst, C_IP);
	cr_assert_eq(s.ask[1], 0u, "never asked for c itself");
	dprpc_future_cancel(f);
	dprpc_future_put(f);
	rig_down(&r);
}

static bool
asked_past_tries(const struct seen *s, void *arg)
{
	(void)arg;
	return s->ask[0] > DP_ARP_TRIES;
}

/* Nobody answers: the frames waiting for b are dropped, counted (the
 * oldest when more come, the rest after DP_ARP_TRIES requests), the
 * requests go on backing off, and nothing was sent to b. */
Test(arp, frames_for_a_peer_nobody_answers_for_are_dropped_counted)
{
	struct dprpc_agent_stats st;
	struct dprpc_future *f;
	struct seen s = {0};
	struct arp_rig r;

	rig_up(&r, WORLD_ARP, NULL);
	f = dprpc_rpc_async(r.a, "b", "echo", "x", 1, 0);
	cr_assert_not_null(f);
	rig_poll_until(&r, &s, asked_past_tries, NULL);
	stats(&r, &st);
	cr_assert_geq(st.arp_unresolved, 1u);
	cr_assert_eq(s.ipv4, 0u);
	cr_assert_eq(st.arp_resolved, 0u);
	dprpc_future_cancel(f);
	dprpc_future_put(f);
	rig_down(&r);
}

static void
tune_refresh(struct dprpc_agent_conf *c)
{
	c->port.arp_reachable_ms = 1;
	c->port.arp_retry_ms = 1;
	c->calls.retransmit_us = 200; /* frames keep going to b */
}

static bool
probed_b(const struct seen *s, void *arg)
{
	(void)arg;
	return s->probe_b >= 1;
}

struct moved {
	struct arp_rig *r;
	unsigned int from;
};

/* A frame to b's new MAC after @from frames. */
static bool
to_new_mac(const struct seen *s, void *arg)
{
	const struct moved *mv = arg;

	return s->ipv4 > mv->from && rte_is_same_ether_addr(&s->last_dst, &b_mac2);
}

/* A MAC past its reachable time, in use, is asked for at that MAC; a
 * gratuitous ARP of b's new MAC is taken at once. */
Test(arp, a_known_mac_is_refreshed_and_a_new_one_taken)
{
	struct dprpc_agent_stats st;
	struct dprpc_future *f;
	struct seen s = {0};
	struct arp_rig r;
	struct moved mv;
	unsigned int one = 1;

	rig_up(&r, WORLD_ARP, tune_refresh);
	f = dprpc_rpc_async(r.a, "b", "echo", "x", 1, 0);
	cr_assert_not_null(f);
	rig_poll_until(&r, &s, asked_b, NULL);
	rig_arp(&r, RTE_ARP_OP_REPLY, &b_mac, B_IP, A_IP);
	rig_poll_until(&r, &s, got_ipv4, &one);
	/* b stays silent: the ping is sent again, through the MAC known. */
	rig_poll_until(&r, &s, probed_b, NULL);
	cr_assert(rte_is_same_ether_addr(&s.last_dst, &b_mac));
	/* b's MAC changes; it says so (a gratuitous ARP). */
	rig_arp(&r, RTE_ARP_OP_REQUEST, &b_mac2, B_IP, B_IP);
	mv = (struct moved){&r, s.ipv4};
	rig_poll_until(&r, &s, to_new_mac, &mv);
	stats(&r, &st);
	cr_assert_eq(st.arp_resolved, 2u, "b's first MAC, then its new one");
	cr_assert_eq(st.arp_answered, 0u, "a gratuitous ARP is not answered");
	dprpc_future_cancel(f);
	dprpc_future_put(f);
	rig_down(&r);
}

static void
tune_wire(struct dprpc_agent_conf *c)
{
	c->port.udp_checksum = DPRPC_UDP_CSUM_ON;
	c->port.ttl = 9;
}

/* A frame from b to a (a PING), its UDP checksum as @csum says: 0 none,
 * 1 right, 2 wrong. */
static void
rig_ping_from_b(struct arp_rig *r, int csum)
{
	struct dp_addr from = {.mac = b_mac, .ip = rte_cpu_to_be_32(B_IP)},
		       to = {.mac = r->a_mac, .ip = rte_cpu_to_be_32(A_IP)};
	struct dp_hdr_fields f = {.type = DP_FRAME_CONTROL,
		.src = 1,
		.dst = 0,
		.session = 77,
		.handler_id = DP_CTRL_PING};
	uint8_t tmpl[DP_L2L4_LEN], *frame;
	struct rte_mbuf *m = rte_pktmbuf_alloc(r->mp);
	struct rte_ipv4_hdr *ip;
	struct rte_udp_hdr *udp;

	from.port = rte_cpu_to_be_16(7002);
	to.port = rte_cpu_to_be_16(7001);
	cr_assert_not_null(m);
	frame = (uint8_t *)rte_pktmbuf_append(m, DP_HDRS_LEN);
	dp_l2l4_template(tmpl, &from, &to, 64);
	dp_frame_write(frame, tmpl, &f, NULL, 0);
	ip = (struct rte_ipv4_hdr *)(frame + sizeof(struct rte_ether_hdr));
	udp = (struct rte_udp_hdr *)(ip + 1);
	if (csum != 0) {
		udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
		if (csum == 2)
			udp->dgram_cksum ^= 0x0100;
	}
	cr_assert_eq(rte_ring_enqueue(r->pair.ba, m), 0);
}

/* With checksums on, what the agent sends carries a right UDP checksum and
 * the TTL it was given; a frame whose checksum is wrong is dropped,
 * counted, one without (0) or with a right one is taken. */
Test(arp, udp_checksums_filled_and_checked_and_the_ttl_given)
{
	struct dprpc_agent_stats st;
	struct dprpc_future *f;
	struct seen s = {0};
	struct arp_rig r;
	unsigned int one = 1;

	rig_up(&r, DPT_WORLD2, tune_wire);
	f = dprpc_rpc_async(r.a, "b", "echo", "x", 1, 0);
	cr_assert_not_null(f);
	rig_poll_until(&r, &s, got_ipv4, &one);
	cr_assert_eq(s.garp, 0u, "MACs from the map: no ARP");
	cr_assert_neq(s.last_udp_csum, 0);
	cr_assert(s.last_udp_ok);
	cr_assert(s.last_ip_sum_ok);
	cr_assert_eq(s.last_ttl, 9);
	rig_ping_from_b(&r, 2);
	rig_ping_from_b(&r, 0);
	rig_ping_from_b(&r, 1);
	for (int i = 0; i < 10; i++)
		dprpc_poll(r.a, 32);
	stats(&r, &st);
	cr_assert_eq(st.drops[DPRPC_DROP_BAD_UDP_CSUM], 1u);
	cr_assert_str_eq(dprpc_drop_reason_str(DPRPC_DROP_BAD_UDP_CSUM), "bad_udp_csum");
	cr_assert_eq(dprpc_worker_state(r.a, 1), DPRPC_PEER_UP, "b's good PINGs were taken");
	dprpc_future_cancel(f);
	dprpc_future_put(f);
	rig_down(&r);
}
