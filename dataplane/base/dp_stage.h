/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Staging (stage.c): frames staged in the tx_buf of the port that reaches
 * their destination, through the transmit faults, for rte_eth_tx_burst(),
 * and flushed.  dp_frame_alloc(): any thread; the rest: the poller.  What
 * a frame is (a call, a reply, one to ourselves) is for dp_stage_tx()
 * (dp_submit.h) to say before it is staged.
 */
#ifndef DP_STAGE_H
#define DP_STAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "dp_base.h"

struct rte_mbuf *dp_frame_alloc(struct dp_base *a, uint32_t len, uint8_t **frame);
void dp_stage_out(struct dp_base *a, struct rte_mbuf *m);
void dp_stage_port(struct dp_base *a, struct rte_mbuf *m);
/* A frame that is not dprpc's (its parse said not_dprpc): an ARP frame
 * teaches the ARP cache (arp.c); true if it was an ARP request for this
 * agent's address or an ICMP echo request to it, answered on the default
 * port (counted, the mbuf gone); false, the mbuf untouched, otherwise.
 * The poller. */
bool dp_host_rx(struct dp_base *a, struct rte_mbuf *m);
/* A frame ready for the wire (ARP, a host's answer, a frame the ARP cache
 * held) straight to the default port's tx_buf; dropped, counted, if there
 * is none or it stays full.  The poller. */
void dp_stage_raw(struct dp_base *a, struct rte_mbuf *m);

/* Once the ports are open and the ARP cache set up: who fills the UDP
 * checksums (conf.port.udp_checksum), then dp_stage_wire_update(). */
void dp_stage_wire_init(struct dp_base *a, const struct dprpc_agent_conf *c);
/* What staging does to a frame (dp_base.wire_out) from the UDP checksum's
 * filler, the ARP cache's state and the world's stamp; again whenever the
 * ARP cache turns on (a peer without a MAC).  The poller, or creation. */
void dp_stage_wire_update(struct dp_base *a);

/* Who fills the UDP checksums of the default port's frames
 * (dp_base.udp_csum, conf.port.udp_checksum). */
enum dp_udp_csum_by {
	DP_CSUM_NONE, /* nobody: 0 */
	DP_CSUM_SOFT, /* dp_stage_port(), in software */
	DP_CSUM_PORT, /* the port (RTE_ETH_TX_OFFLOAD_UDP_CKSUM) */
};
unsigned int dp_tx_flush(struct dp_base *a);
/* Whether the port that reaches worker @to can stage one more frame once
 * what it holds was offered to the port.  A resend asks first: parked on
 * tx_ring, a silent peer's resends would pile up until calls could not be
 * submitted (-ENOBUFS). */
bool dp_tx_room(struct dp_base *a, unsigned int to);

/* The most frames staged for any one port.  Inline: dp_drain_tx_ring()
 * asks every poll. */
static inline unsigned int
dp_tx_fill(const struct dp_base *a)
{
	unsigned int i, n = a->port.ports[0].tx_n;

	for (i = 1; i < a->port.nb_ports; i++)
		n = RTE_MAX(n, a->port.ports[i].tx_n);
	return n;
}

/* The common case of dp_stage_out(): no transmit faults, one port whose
 * frames need no ARP or UDP checksum (a world's stamp they may), room in
 * its tx_buf.  Inlined into dp_stage_tx() (every request and reply goes
 * through it), it takes no call of its own and no register saves, and the
 * flush every DP_TX_FLUSH_AT frames is dp_tx_flush(), out of line (with
 * one port it flushes that one).  False: dp_stage_out() must stage it. */
static __rte_always_inline bool
dp_stage_fast(struct dp_base *a, struct rte_mbuf *m)
{
	struct dp_port *pt = &a->port.ports[0];

	if (unlikely(a->ftx.on || a->port.nb_ports > 1 || (a->wire_out & DP_OUT_L2) ||
		     pt->tx_n >= DP_TX_BUF))
		return false;
	if (unlikely(a->wire_out))
		dp_auth_stamp(a, m);
	pt->tx_buf[pt->tx_n++] = m;
	if (pt->tx_n >= DP_TX_FLUSH_AT)
		(void)dp_tx_flush(a);
	return true;
}

/* Free a stale frame, counted in tx_discarded. */
static inline void
dp_tx_discard(struct dp_base *a, struct rte_mbuf *m)
{
	dp_count(&a->st.tx_discarded, 1);
	rte_pktmbuf_free(m);
}

#endif /* DP_STAGE_H */
