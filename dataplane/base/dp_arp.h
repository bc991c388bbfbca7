/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Finding the next hop's MAC by ARP (arp.c, docs/wire.md "IPv4 as a
 * host"): a frame for the default port whose destination MAC is zero (a
 * peer the world map gives no MAC) gets its next hop's, the peer or, off
 * the agent's subnet, its gateway, from a cache that expires and is
 * refreshed; until an answer comes the last DP_ARP_HOLD frames wait, an
 * older one dropped for each that comes (calls resend).  With the cache
 * on, the agent announces its MAC by a gratuitous ARP at start and when
 * its port's MAC changes.  The poller, all of it.
 */
#ifndef DP_ARP_H
#define DP_ARP_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_mbuf.h>

#include <dprpc/dprpc_conf.h>

#include "dp_wire.h"

struct dp_base;

/* Frames held per next hop while it is asked for. */
#define DP_ARP_HOLD 4
/* Requests after which held frames are dropped (asking goes on, backing
 * off, while frames come). */
#define DP_ARP_TRIES 5
/* Unicast requests to a known MAC past its reachable time before the
 * cache asks by broadcast. */
#define DP_ARP_UNICAST_TRIES 3

enum dp_arp_state {
	DP_ARP_FREE,   /* unused bucket */
	DP_ARP_ASKING, /* no MAC yet */
	DP_ARP_KNOWN,  /* a MAC, refreshed past reachable_tsc */
};

struct dp_arp_entry {
	rte_be32_t ip;	/* the next hop */
	uint8_t state;	/* enum dp_arp_state */
	uint8_t probes; /* requests since the last answer */
	uint8_t nb_held;
	bool used; /* a frame went through it since it was last confirmed */
	struct rte_ether_addr mac;
	uint64_t seen_tsc;  /* last answer (or update) */
	uint64_t asked_tsc; /* last request */
	struct rte_mbuf *held[DP_ARP_HOLD];
};

struct dp_arp {
	bool on;	     /* some peer (or our own MAC) is found at run time */
	bool from_port;	     /* our MAC is the port's, watched for a change */
	bool announce;	     /* a gratuitous ARP is due */
	rte_be32_t mask, gw; /* our subnet and gateway (0: none), network order */
	unsigned int cap;    /* buckets, a power of two */
	struct dp_arp_entry *e;
	uint64_t reachable_tsc, retry_tsc, doubt_tsc;
	uint64_t next_tick_tsc, next_mac_tsc;
};

/* Set the cache up from @c and the world map (our subnet and gateway)
 * once the default port is open, our MAC the port's if the map gives us
 * none: 0, -ENOMEM, or -EINVAL (logged: no MAC to take, a bad gateway). */
int dp_arp_init(struct dp_base *a, const struct dprpc_agent_conf *c);
/* Peer address @addr came into the world: the cache is on if it has no
 * MAC. */
void dp_arp_peer(struct dp_base *a, const struct dp_addr *addr);
/* Free the cache and the frames it holds. */
void dp_arp_fini(struct dp_base *a);
/* A frame for the default port: our MAC as its source and, if its
 * destination MAC is zero, its next hop's.  True: send it; false: it is
 * held or dropped (counted), no longer the caller's. */
bool dp_arp_out(struct dp_base *a, struct rte_mbuf *m);
/* A received frame that is not dprpc's: if it is an ARP request or reply
 * from a next hop the cache asks for or knows, its MAC is learned (held
 * frames go out).  The frame is left as it is (dp_host_rx() answers it). */
void dp_arp_learn(struct dp_base *a, const uint8_t *frame, uint32_t len);
/* Requests due, refreshes, our MAC's change, the gratuitous ARP: from the
 * poller's timer. */
void dp_arp_timer(struct dp_base *a, uint64_t now);
/* A peer at @ip stopped answering: ask again for its next hop's MAC
 * (broadcast), at most once per doubt interval.  Nothing for a peer whose
 * MAC the map gives. */
void dp_arp_doubt(struct dp_base *a, rte_be32_t ip);

#endif /* DP_ARP_H */
