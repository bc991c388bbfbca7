/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transmission: frames handed to the poller through tx_ring, staged in
 * the tx_buf of the port that reaches their destination (stage.c), or
 * looped back when addressed to ourselves.
 *
 * tx_ring is multi-producer (RTS mode, see struct dp_base),
 * single-consumer:
 *  - Invariants.  Any thread enqueues (dp_submit(); the poller too, when
 *    dp_stage_port() parks a frame the port pushed back); only the poller
 *    dequeues (dp_drain_tx_ring(); dp_drain_rings() at destroy, once the
 *    lcores stopped).  Every mbuf on it has its struct dp_call_meta set; a
 *    call not started yet (meta->fut set) holds the agent's reference to
 *    its future and one unit of its peer's outstanding count.  tx_buf and
 *    tx_n are the poller's alone.
 *  - Ordering.  The ring's enqueue publishes the frame and its metadata,
 *    written before it, to the dequeue (DPDK's rte_ring orders the
 *    producer's writes of the objects before its tail update, and the
 *    consumer's reads after its load of it); nothing else is shared.
 *    tx_buf passes from one poller to the next under the poll flag
 *    (poll_lock.c).
 *  - Progress.  Enqueue and dequeue never wait for another thread.  On a
 *    full ring a call fails (-ENOBUFS); a reply, which must not be lost,
 *    retries, polling itself when nobody else does (caller-driven mode),
 *    so the ring drains; a frame the poller parks is dropped (tx_dropped).
 *    The poller takes no more than tx_buf has room for, keeping
 *    DP_RX_BURST free for what a poll's received frames stage, but for
 *    DP_RX_MIN frames per poll while tx_buf is full, so that calls
 *    waiting here get their slot and deadline (dp_drain_tx_ring()).
 *  - Reclamation.  An mbuf is taken off the ring once; the poller then
 *    owns it: staged (and freed by the PMD once sent), looped back, or
 *    freed.  What remains at destroy is failed and freed by
 *    dp_drain_rings().
 */
#include <errno.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf_dyn.h>
#include <rte_pause.h>

#include "dp_rpc.h"
#include "dp_client.h"
#include "dp_msg.h"
#include "dp_poll.h"
#include "dp_rx.h"
#include "dp_server.h"
#include "dp_stream.h"
#include "dp_submit.h"
#include "dprpc_atomic.h"
#include "dprpc_lcore.h"

/* Hand a finished frame to the poller: staged directly when we are the
 * poller, else through the MP tx ring.  With @must the ring is retried
 * until it has room (a reply must not be lost); without it a full ring
 * fails with -ENOBUFS. */
int __rte_hot
dp_submit(struct dp_rpc *a, struct rte_mbuf *m, bool must)
{
	if (dp_tls_poller == &a->b) {
		if (dp_meta(m)->fut != NULL)
			/* Only dp_call() submits a call's frame (its caller
			 * has no future yet): fresh.  a->b.now_tsc: inside a
			 * poll, just read. */
			dp_start_call(a, m, a->b.now_tsc, true);
		else
			dp_stage_tx(a, m);
		return 0;
	}
	/* rte_ring_enqueue(): follows the ring's RTS mode (the _mp_ variant
	 * would not). */
	while (rte_ring_enqueue(a->b.tx_ring, m) != 0) {
		if (!must)
			return -ENOBUFS;
		/* The poller drains the ring; when nobody polls (caller-driven
		 * mode) poll ourselves. */
		if (!a->b.io_launched)
			a->b.poll(dp_agent_handle(&a->b), DP_RX_BURST);
		rte_pause();
	}
	return 0;
}

/* A frame addressed to ourselves (a call to self, or its reply): deliver it
 * as if received, without the wire. */
static void
dp_loopback(struct dp_rpc *a, struct rte_mbuf *m)
{
	dp_rx_local(a, m);
}

void __rte_hot
dp_stage_tx(struct dp_rpc *a, struct rte_mbuf *m)
{
	const struct dp_wire_hdr *h = dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *));

	if (unlikely(dp_meta(m)->tx != NULL)) {
		/* A multi-frame response handed over by dp_respond(). */
		struct dp_txmsg *t = dp_meta(m)->tx;

		rte_pktmbuf_free(m);
		dp_msg_start_response(a, t);
		return;
	}
	if (rte_be_to_cpu_16(h->dst_worker) == a->b.rank) {
		dp_loopback(a, m);
		return;
	}
	if (h->type == DP_FRAME_RESPONSE)
		dp_keep_response(a, m, h);
	else if (unlikely(h->type == DP_FRAME_CHUNK)) {
		dp_stream_stage(a, m, h); /* kept until acknowledged, then out */
		return;
	}
	if (!dp_stage_fast(&a->b, m))
		dp_stage_out(&a->b, m);
}

bool
dp_tx_stale(struct dp_rpc *a, struct rte_mbuf *m)
{
	const struct dp_wire_hdr *h = dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *));
	unsigned int dst = rte_be_to_cpu_16(h->dst_worker), slot;
	const struct dp_peer *peer;
	const struct dp_slot *s;

	if (h->type == DP_FRAME_CONTROL || dst == a->b.rank || dst >= a->b.world.n)
		return false;
	peer = &a->peers[dst];
	/* Addressed to an incarnation of the peer that is gone. */
	if (rte_be_to_cpu_64(h->dst_session) != peer->session)
		return true;
	if (h->type != DP_FRAME_REQUEST)
		return false;
	/* A request of a call that failed (peer down) or ended. */
	slot = rte_be_to_cpu_16(h->slot);
	if (slot >= a->max_outstanding)
		return true;
	s = &peer->slots[slot];
	return s->fut == NULL || s->req_num != rte_be_to_cpu_32(h->req_num);
}

static bool
dp_tx_stale_for(void *arg, struct rte_mbuf *m)
{
	struct dp_rpc *a = arg;

	return dp_tx_stale(a, m);
}

/* Frames staged for @p but not handed to the port yet, in tx_buf or held
 * by the transmit faults, that must not go any more (dp_tx_stale()): freed
 * and counted.  tx_ring is checked as it is drained (dp_drain_tx_ring()).
 * Frames the port has taken cannot be recalled: a restarted receiver
 * drops those addressed to its previous incarnation. */
void
dp_tx_purge(struct dp_rpc *a, unsigned int p)
{
	struct dp_port *pt = &a->b.port.ports[a->b.port.peer_port[p]];
	unsigned int i, n = 0;

	for (i = 0; i < pt->tx_n; i++) {
		struct rte_mbuf *m = pt->tx_buf[i];

		if (rte_be_to_cpu_16(dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *))->dst_worker) ==
				p &&
			dp_tx_stale(a, m))
			dp_tx_discard(&a->b, m);
		else
			pt->tx_buf[n++] = m;
	}
	pt->tx_n = n;
	if (unlikely(a->b.ftx.n_held > 0))
		dp_count(&a->b.st.tx_discarded, dp_fault_purge(&a->b.ftx, dp_tx_stale_for, a));
}

unsigned int __rte_hot
dp_drain_tx_ring(struct dp_rpc *a)
{
	struct rte_mbuf *ms[DP_RX_BURST];
	unsigned int n, i, room;

	/* Leave room in tx_buf for a burst of replies, but take a few while
	 * the port pushes back: a call waiting here has no slot, so nothing
	 * would fail it at its deadline.  Once started, the timer watches it. */
	room = DP_TX_BUF - dp_tx_fill(&a->b);
	room = room > DP_RX_BURST ? RTE_MIN(room - DP_RX_BURST, (unsigned int)DP_RX_BURST)
				  : DP_RX_MIN;
	n = rte_ring_sc_dequeue_burst(a->b.tx_ring, (void **)ms, room, NULL);
	for (i = 0; i < n; i++) {
		struct dp_call_meta *meta = dp_meta(ms[i]);

		if (meta->fut != NULL)
			dp_start_call(a, ms[i], a->b.now_tsc, false);
		else if (unlikely(meta->tx == NULL && dp_tx_stale(a, ms[i])))
			dp_tx_discard(&a->b, ms[i]); /* parked here, its call gone since */
		else
			dp_stage_tx(a, ms[i]);
	}
	return n;
}

int dp_meta_offset = -1;

int dp_stream_offset = -1;

int
dp_register_dynfield(void)
{
	static const struct rte_mbuf_dynfield desc = {
		.name = "dprpc_call_meta",
		.size = sizeof(struct dp_call_meta),
		.align = __alignof__(struct dp_call_meta),
	};
	static const struct rte_mbuf_dynfield sdesc = {
		.name = "dprpc_stream",
		.size = sizeof(struct dprpc_stream *),
		.align = __alignof__(struct dprpc_stream *),
	};
	/* Idempotent: the same name and size give back the same offset. */
	int off = rte_mbuf_dynfield_register(&desc), soff;

	if (off < 0)
		return -rte_errno;
	/* A stream call's request frame: its stream (dp_stream.h). */
	soff = rte_mbuf_dynfield_register(&sdesc);
	if (soff < 0)
		return -rte_errno;
	dp_meta_offset = off;
	dp_stream_offset = soff;
	return 0;
}
