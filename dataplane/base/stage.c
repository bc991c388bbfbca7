/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Staging (dp_stage.h): frames in the tx_buf of the port that reaches their
 * destination (struct dp_port; one port: no choice to make), through the
 * transmit faults, handed to the port by rte_eth_tx_burst().  The poller,
 * but dp_frame_alloc() (any thread).  What is staged is classified first
 * by submit.c (calls, replies, frames to ourselves).
 */
#include <errno.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ip.h>

#include "dp_base.h"
#include "dp_stage.h"
#include "dprpc_atomic.h"
#include "dprpc_lcore.h"

struct rte_mbuf *__rte_hot
dp_frame_alloc(struct dp_base *a, uint32_t len, uint8_t **frame)
{
	struct rte_mbuf *m = dprpc_mbuf_alloc(a->mp);

	if (m == NULL)
		return NULL;
	*frame = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(DP_HDRS_LEN + len));
	if (*frame == NULL) {
		dprpc_mbuf_free(m);
		return NULL;
	}
	return m;
}

/* Hand @pt's staged frames to its tx queue (inlined into both callers). */
static __rte_always_inline unsigned int
dp_tx_flush_port(struct dp_base *a, struct dp_port *pt)
{
	uint16_t sent;

	if (pt->tx_n == 0)
		return 0;
	if (unlikely(!(pt->io & DP_IO_RXTX))) {
		/* Its worker left (struct dp_port), or a default memif
		 * client not started yet (no server listened): nothing goes
		 * on it; calls resend. */
		for (unsigned int i = 0; i < pt->tx_n; i++)
			rte_pktmbuf_free(pt->tx_buf[i]);
		dp_counter_add(&a->st.tx_dropped, pt->tx_n);
		pt->tx_n = 0;
		return 0;
	}
	sent = rte_eth_tx_burst(pt->id, pt->txq, pt->tx_buf, (uint16_t)pt->tx_n);
	if (sent < pt->tx_n) {
		memmove(pt->tx_buf, pt->tx_buf + sent, (pt->tx_n - sent) * sizeof(pt->tx_buf[0]));
		dp_count(&a->st.tx_retries, 1);
	}
	pt->tx_n -= sent;
	/* Relaxed: a statistic (struct dp_stats). */
	dp_counter_add(&a->st.tx_frames, sent);
	return sent;
}

unsigned int __rte_hot
dp_tx_flush(struct dp_base *a)
{
	unsigned int i, sent = dp_tx_flush_port(a, &a->port.ports[0]);

	for (i = 1; i < a->port.nb_ports; i++)
		sent += dp_tx_flush_port(a, &a->port.ports[i]);
	return sent;
}

bool
dp_tx_room(struct dp_base *a, unsigned int to)
{
	struct dp_port *pt =
		&a->port.ports[a->port.nb_ports > 1 && to < a->world.n ? a->port.peer_port[to] : 0];

	if (pt->tx_n == DP_TX_BUF)
		dp_tx_flush_port(a, pt);
	return pt->tx_n < DP_TX_BUF;
}

/* A frame for the wire: through the transmit faults to the port. */
void
dp_stage_out(struct dp_base *a, struct rte_mbuf *m)
{
	struct rte_mbuf *out[2];
	unsigned int i, n;

	if (likely(!a->ftx.on)) {
		dp_stage_port(a, m);
		return;
	}
	n = dp_fault_one(&a->ftx, m, out, rte_rdtsc(),
		dp_frame_of_call(dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *))));
	for (i = 0; i < n; i++)
		dp_stage_port(a, out[i]);
}

/* Put @m in @pt's tx_buf, flushing it first when full and once it holds
 * DP_TX_FLUSH_AT; false, @m still the caller's, if the port pushes back
 * and tx_buf stays full. */
static inline bool
dp_port_push(struct dp_base *a, struct dp_port *pt, struct rte_mbuf *m)
{
	if (unlikely(pt->tx_n == DP_TX_BUF))
		dp_tx_flush_port(a, pt);
	if (unlikely(pt->tx_n == DP_TX_BUF))
		return false;
	pt->tx_buf[pt->tx_n++] = m;
	if (pt->tx_n >= DP_TX_FLUSH_AT)
		dp_tx_flush_port(a, pt);
	return true;
}

void
dp_stage_raw(struct dp_base *a, struct rte_mbuf *m)
{
	if (!a->port.has_default_port || !dp_port_push(a, &a->port.ports[0], m)) {
		dp_count(&a->st.tx_dropped, 1);
		rte_pktmbuf_free(m);
	}
}

bool
dp_host_rx(struct dp_base *a, struct rte_mbuf *m)
{
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	enum dp_host_reply r;

	if (!a->port.has_default_port)
		return false;
	dp_arp_learn(a, f, m->data_len);
	r = dp_host_answer(f, m->data_len, &a->self_addr, a->ttl);
	if (r == DP_HOST_NONE)
		return false;
	dp_count(r == DP_HOST_ARP ? &a->st.arp_answered : &a->st.echo_answered, 1);
	dp_stage_raw(a, m);
	return true;
}

void
dp_stage_wire_init(struct dp_base *a, const struct dprpc_agent_conf *c)
{
	bool sum =
		a->port.has_default_port && (c->port.udp_checksum == DPRPC_UDP_CSUM_ON ||
						    (c->port.udp_checksum == DPRPC_UDP_CSUM_WIRE &&
							    dp_port_has_wire(&a->port)));

	a->udp_csum = !sum				  ? DP_CSUM_NONE
		      : a->port.ports[0].udp_csum_offload ? DP_CSUM_PORT
							  : DP_CSUM_SOFT;
	dp_stage_wire_update(a);
}

void
dp_stage_wire_update(struct dp_base *a)
{
	a->wire_out = (a->udp_csum != DP_CSUM_NONE || a->arp.on ? DP_OUT_L2 : 0) |
		      (a->auth.on || a->auth.world_id != 0 ? DP_OUT_STAMP : 0);
}

/* A frame for the default port, what it needs there: its UDP checksum
 * (by the port, or here) and its MACs (arp.c).  False: it was held or
 * dropped, no longer ours. */
static bool
dp_stage_wire(struct dp_base *a, struct rte_mbuf *m)
{
	if (a->udp_csum != DP_CSUM_NONE) {
		struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(
			m, struct rte_ipv4_hdr *, sizeof(struct rte_ether_hdr));
		struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

		if (a->udp_csum == DP_CSUM_PORT) {
			m->l2_len = sizeof(struct rte_ether_hdr);
			m->l3_len = sizeof(*ip);
			m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_UDP_CKSUM;
			udp->dgram_cksum = rte_ipv4_phdr_cksum(ip, m->ol_flags);
		} else {
			udp->dgram_cksum = 0;
			udp->dgram_cksum = rte_ipv4_udptcp_cksum_mbuf(
				m, ip, sizeof(struct rte_ether_hdr) + sizeof(*ip));
		}
	}
	return !a->arp.on || dp_arp_out(a, m);
}

/* Stage a frame for the port that reaches its destination (faults
 * already applied).  With one port, that is all there is to choose. */
void __rte_hot
dp_stage_port(struct dp_base *a, struct rte_mbuf *m)
{
	struct dp_port *pt = &a->port.ports[0];

	if (unlikely(a->port.nb_ports > 1)) {
		unsigned int dst =
			rte_be_to_cpu_16(dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *))->dst_worker);

		/* DP_RANK_NONE (a join frame): the join port if there is
		 * one (a meshed world), else the default port. */
		pt = &a->port.ports[dst < a->world.n	     ? a->port.peer_port[dst]
				    : a->port.join_port >= 0 ? (unsigned int)a->port.join_port
							     : 0];
		if (unlikely(!(pt->io & DP_IO_UP))) {
			/* A memif link not up yet (port_timer.c): nothing to pile
			 * up for; the call resends. */
			dp_count(&a->st.tx_dropped, 1);
			rte_pktmbuf_free(m);
			return;
		}
	}
	if (unlikely(a->wire_out)) {
		if (a->wire_out & DP_OUT_STAMP)
			dp_auth_stamp(a, m);
		if ((a->wire_out & DP_OUT_L2) && pt->kind == DP_PORT_DEFAULT &&
			!dp_stage_wire(a, m))
			return;
	}
	if (likely(dp_port_push(a, pt, m)))
		return;
	/* The port pushes back and tx_buf is full (the rx budget and the ring
	 * drain leave room for everything they stage unless tx_buf is already
	 * full, so only frames staged by callbacks and handlers, and the few
	 * the drain keeps taking then, get here): park the frame on the tx
	 * ring for a later poll.  Its call, if any, already holds its slot. */
	if (rte_ring_enqueue(a->tx_ring, m) != 0) {
		dp_count(&a->st.tx_dropped, 1);
		rte_pktmbuf_free(m);
	}
}
