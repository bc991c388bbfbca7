/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ARP cache (dp_arp.h): next hops by IPv4 address in an open-addressed
 * table the poller alone touches, sized at creation for every worker the
 * world may hold and a gateway, so it never fills.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ether.h>
#include <rte_ip.h>

#include "dp_arp.h"
#include "dp_base.h"
#include "dp_stage.h"
#include "dprpc_lcore.h"

/* The default port's MAC is read for a change this often. */
#define DP_ARP_MAC_CHECK_MS 100
/* The cache's timer runs this often (the poller's ticks are 100 us). */
#define DP_ARP_TICK_US 1000

static inline uint64_t
dp_arp_ms(const struct dp_base *a, unsigned int ms)
{
	return a->tsc_hz / 1000 * ms;
}

int
dp_arp_init(struct dp_base *a, const struct dprpc_agent_conf *c)
{
	struct dp_arp *r = &a->arp;
	struct in_addr in;
	rte_be32_t gw = 0;
	unsigned int i, need;
	uint8_t len = 0;

	r->from_port = rte_is_zero_ether_addr(&a->self_addr.mac);
	if (!a->port.has_default_port) {
		if (!r->from_port)
			return 0;
		DP_LOG(ERR,
			"agent %s: its map line has no MAC, and it has no default port to "
			"take one from",
			a->name);
		return -EINVAL;
	}
	if (r->from_port && (dp_port_mac_read(&a->port, &a->self_addr.mac) != 0 ||
				    rte_is_zero_ether_addr(&a->self_addr.mac))) {
		DP_LOG(ERR, "agent %s: its map line has no MAC, and its port has none", a->name);
		return -EINVAL;
	}
	(void)dp_world_subnet_of(&a->world, a->self_addr.ip, &len, &gw);
	if (c->port.ipv4_prefix_len != 0)
		len = c->port.ipv4_prefix_len;
	if (c->port.gateway != NULL) {
		if (inet_pton(AF_INET, c->port.gateway, &in) != 1 || in.s_addr == 0) {
			DP_LOG(ERR, "agent %s: conf.port.gateway '%s' is not an IPv4 address",
				a->name, c->port.gateway);
			return -EINVAL;
		}
		gw = in.s_addr;
	}
	r->mask = dp_prefix_mask(len);
	if (gw != 0 && (gw & r->mask) != (a->self_addr.ip & r->mask)) {
		DP_LOG(ERR, "agent %s: its gateway is not in its subnet (/%u)", a->name, len);
		return -EINVAL;
	}
	r->gw = gw;
	for (need = 2 * (a->world_cap + 1), r->cap = 16; r->cap < need;)
		r->cap *= 2;
	r->e = calloc(r->cap, sizeof(*r->e));
	if (r->e == NULL)
		return -ENOMEM;
	r->reachable_tsc = dp_arp_ms(a, c->port.arp_reachable_ms);
	r->retry_tsc = dp_arp_ms(a, c->port.arp_retry_ms);
	r->doubt_tsc = 10 * r->retry_tsc;
	/* A joiner learns its world later: its peers may come without MACs. */
	r->on = r->from_port || a->world.joiner;
	for (i = 0; i < a->world.n; i++)
		dp_arp_peer(a, &a->world.addrs[i]);
	r->announce = r->on;
	return 0;
}

void
dp_arp_peer(struct dp_base *a, const struct dp_addr *addr)
{
	if (a->arp.e != NULL && rte_is_zero_ether_addr(&addr->mac)) {
		a->arp.on = true;
		dp_stage_wire_update(a);
	}
}

void
dp_arp_fini(struct dp_base *a)
{
	struct dp_arp *r = &a->arp;

	for (unsigned int i = 0; r->e != NULL && i < r->cap; i++)
		for (unsigned int k = 0; k < r->e[i].nb_held; k++)
			rte_pktmbuf_free(r->e[i].held[k]);
	free(r->e);
	r->e = NULL;
}

/* The bucket of @ip: its entry, or the free bucket it would take (NULL
 * if @add is false and it has none). */
static struct dp_arp_entry *
dp_arp_find(struct dp_arp *r, rte_be32_t ip, bool add)
{
	unsigned int i = (unsigned int)((uint32_t)ip * 2654435761u) & (r->cap - 1);

	for (unsigned int n = 0; n < r->cap; n++, i = (i + 1) & (r->cap - 1)) {
		struct dp_arp_entry *e = &r->e[i];

		if (e->state == DP_ARP_FREE) {
			if (!add)
				return NULL;
			memset(e, 0, sizeof(*e));
			e->ip = ip;
			e->state = DP_ARP_ASKING;
			return e;
		}
		if (e->ip == ip)
			return e;
	}
	return NULL;
}

/* The next hop of a frame to @ip: itself on our subnet or without a
 * gateway, else the gateway. */
static inline rte_be32_t
dp_arp_next_hop(const struct dp_arp *r, const struct dp_base *a, rte_be32_t ip)
{
	if (r->gw == 0 || ((ip ^ a->self_addr.ip) & r->mask) == 0)
		return ip;
	return r->gw;
}

/* Send an ARP request for @tip to @dst (NULL: broadcast) on the default
 * port; counted. */
static void
dp_arp_send(struct dp_base *a, rte_be32_t tip, const struct rte_ether_addr *dst)
{
	struct rte_mbuf *m = dprpc_mbuf_alloc(a->mp);
	uint8_t *f;

	if (m == NULL)
		return;
	f = (uint8_t *)rte_pktmbuf_append(m, DP_ARP_FRAME_LEN);
	if (f == NULL) {
		dprpc_mbuf_free(m);
		return;
	}
	dp_arp_request_write(f, &a->self_addr, tip, dst);
	dp_count(&a->st.arp_sent, 1);
	dp_stage_raw(a, m);
}

static void
dp_arp_ask(struct dp_base *a, struct dp_arp_entry *e, bool unicast)
{
	e->asked_tsc = a->now_tsc;
	if (e->probes < UINT8_MAX)
		e->probes++;
	dp_arp_send(a, e->ip, unicast ? &e->mac : NULL);
}

/* Whether @e's last request has waited its due: conf.port.arp_retry_ms
 * after the first, doubling per request after it, up to 64 times. */
static inline bool
dp_arp_due(const struct dp_arp *r, const struct dp_arp_entry *e, uint64_t now)
{
	unsigned int n = e->probes != 0 ? e->probes - 1u : 0u;

	return now - e->asked_tsc >= r->retry_tsc << RTE_MIN(n, 6u);
}

/* Drop the frames @e holds, counted as unresolved. */
static void
dp_arp_drop_held(struct dp_base *a, struct dp_arp_entry *e)
{
	for (unsigned int k = 0; k < e->nb_held; k++)
		rte_pktmbuf_free(e->held[k]);
	dp_count(&a->st.arp_unresolved, e->nb_held);
	e->nb_held = 0;
}

bool
dp_arp_out(struct dp_base *a, struct rte_mbuf *m)
{
	struct dp_arp *r = &a->arp;
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)f;
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth + 1);
	struct dp_arp_entry *e;

	rte_ether_addr_copy(&a->self_addr.mac, &eth->src_addr);
	if (!rte_is_zero_ether_addr(&eth->dst_addr))
		return true;
	e = dp_arp_find(r, dp_arp_next_hop(r, a, ip->dst_addr), true);
	if (unlikely(e == NULL)) {
		dp_count(&a->st.arp_unresolved, 1);
		rte_pktmbuf_free(m);
		return false;
	}
	e->used = true;
	if (likely(e->state == DP_ARP_KNOWN)) {
		rte_ether_addr_copy(&e->mac, &eth->dst_addr);
		return true;
	}
	if (e->nb_held == DP_ARP_HOLD) {
		/* The oldest goes: its call has resent it since, or will. */
		rte_pktmbuf_free(e->held[0]);
		memmove(e->held, e->held + 1, (DP_ARP_HOLD - 1) * sizeof(e->held[0]));
		e->nb_held--;
		dp_count(&a->st.arp_unresolved, 1);
	}
	e->held[e->nb_held++] = m;
	if (e->asked_tsc == 0 || dp_arp_due(r, e, a->now_tsc))
		dp_arp_ask(a, e, false);
	return false;
}

void
dp_arp_learn(struct dp_base *a, const uint8_t *frame, uint32_t len)
{
	struct dp_arp *r = &a->arp;
	struct rte_ether_addr mac;
	struct dp_arp_entry *e;
	struct rte_mbuf *held[DP_ARP_HOLD];
	unsigned int k, n;
	rte_be32_t ip;

	if (!r->on || !dp_arp_sender(frame, len, &ip, &mac) || ip == 0 || ip == a->self_addr.ip ||
		!rte_is_valid_assigned_ether_addr(&mac))
		return;
	/* Only next hops we asked for or know: a segment's other stations
	 * take no room in the cache. */
	e = dp_arp_find(r, ip, false);
	if (e == NULL)
		return;
	if (e->state != DP_ARP_KNOWN || !rte_is_same_ether_addr(&e->mac, &mac))
		dp_count(&a->st.arp_resolved, 1);
	e->mac = mac;
	e->state = DP_ARP_KNOWN;
	e->seen_tsc = a->now_tsc;
	e->probes = 0;
	e->used = false;
	n = e->nb_held;
	memcpy(held, e->held, n * sizeof(held[0]));
	e->nb_held = 0;
	for (k = 0; k < n; k++)
		if (dp_arp_out(a, held[k]))
			dp_stage_raw(a, held[k]);
}

void
dp_arp_doubt(struct dp_base *a, rte_be32_t ip)
{
	struct dp_arp *r = &a->arp;
	struct dp_arp_entry *e;

	if (!r->on)
		return;
	e = dp_arp_find(r, dp_arp_next_hop(r, a, ip), false);
	if (e == NULL || e->state != DP_ARP_KNOWN || a->now_tsc - e->asked_tsc < r->doubt_tsc)
		return;
	dp_arp_ask(a, e, false);
}

/* Whether our port's MAC changed: taken, and announced. */
static void
dp_arp_check_mac(struct dp_base *a)
{
	struct rte_ether_addr mac;

	if (dp_port_mac_read(&a->port, &mac) != 0 || rte_is_zero_ether_addr(&mac) ||
		rte_is_same_ether_addr(&mac, &a->self_addr.mac))
		return;
	/* world.addrs keeps the map's zero: joiners are told to ask. */
	a->self_addr.mac = mac;
	a->arp.announce = true;
}

void
dp_arp_timer(struct dp_base *a, uint64_t now)
{
	struct dp_arp *r = &a->arp;
	unsigned int i;

	if (now < r->next_tick_tsc)
		return;
	r->next_tick_tsc = now + a->tsc_hz / 1000000 * DP_ARP_TICK_US;
	if (r->from_port && now >= r->next_mac_tsc) {
		r->next_mac_tsc = now + dp_arp_ms(a, DP_ARP_MAC_CHECK_MS);
		dp_arp_check_mac(a);
	}
	if (r->announce) {
		r->announce = false;
		dp_arp_send(a, a->self_addr.ip, NULL);
	}
	for (i = 0; i < r->cap; i++) {
		struct dp_arp_entry *e = &r->e[i];

		if (e->state == DP_ARP_ASKING) {
			if (e->nb_held != 0 && e->probes >= DP_ARP_TRIES)
				dp_arp_drop_held(a, e);
			/* Asked again, backing off, while frames wait. */
			if (e->nb_held != 0 && dp_arp_due(r, e, now))
				dp_arp_ask(a, e, false);
		} else if (e->state == DP_ARP_KNOWN && e->used && r->reachable_tsc != 0 &&
			   now - e->seen_tsc >= r->reachable_tsc && dp_arp_due(r, e, now)) {
			/* Past its reachable time and in use: confirmed at the
			 * MAC it has, then by broadcast; used meanwhile. */
			dp_arp_ask(a, e, e->probes < DP_ARP_UNICAST_TRIES);
		}
	}
}
