/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frames received that the rpc layer reads in place: made private first
 * when the payload may not be moved (dp_rx_private()), and frames looped
 * back to ourselves (dp_rx_local()).  The demux itself is inline in
 * dp_rx.h.  The poller.
 */
#include <string.h>

#include <rte_mbuf.h>

#include "dp_rpc.h"
#include "dp_rx.h"
#include <dprpc/dprpc_stats.h>

/* A frame in several segments (net_ring passes on the chains a
 * multi-frame message is sent as) or shared with its sender (net_ring
 * hands over the very mbuf, which a server keeps as its stored response):
 * the payload may be moved in place, so work on a private, contiguous
 * copy.  NULL if none can be had (counted). */
struct rte_mbuf *
dp_rx_private(struct dp_rpc *a, struct rte_mbuf *m)
{
	struct rte_mbuf *copy;
	const void *from;
	uint8_t *data;

	if (m->pkt_len > (uint32_t)rte_pktmbuf_data_room_size(a->b.mp) - RTE_PKTMBUF_HEADROOM) {
		dp_drop_frame(&a->b, m, DPRPC_DROP_UNSUPPORTED);
		return NULL;
	}
	copy = rte_pktmbuf_alloc(a->b.mp);
	if (copy != NULL) {
		data = (uint8_t *)rte_pktmbuf_append(copy, (uint16_t)m->pkt_len);
		from = rte_pktmbuf_read(m, 0, m->pkt_len, data); /* copies if chained */
		if (from != data)
			memcpy(data, from, m->pkt_len);
	}
	rte_pktmbuf_free(m);
	if (copy == NULL)
		dp_count(&a->b.st.drops[DPRPC_DROP_NO_REQUEST], 1);
	return copy;
}

void __rte_hot
dp_rx_local(struct dp_rpc *a, struct rte_mbuf *m)
{
	enum dprpc_drop_reason why;
	struct dp_parsed p;

	uint8_t *f;

	if (unlikely(m->nb_segs != 1 || rte_mbuf_refcnt_read(m) > 1)) {
		m = dp_rx_private(a, m);
		if (m == NULL)
			return;
	}
	/* Never on a wire, so never staged: our MAC (the map's may be zero,
	 * ours taken from the port, arp.c) and our world's id, as a frame
	 * from a peer has them. */
	f = rte_pktmbuf_mtod(m, uint8_t *);
	rte_ether_addr_copy(&a->b.self_addr.mac, &((struct rte_ether_hdr *)f)->dst_addr);
	dp_frame_hdr(f)->world_id = a->b.rx_ctx.world_id;
	if (!dp_frame_parse(f, m->data_len, &a->b.rx_ctx, &p, &why)) {
		dp_drop_frame(&a->b, m, why);
		return;
	}
	/* Ours: addressed to our rank, from it.  Neither the checks of a
	 * peer's frames nor the world's operations apply (dp_rx_frame()). */
	dp_rpc_rx(a, m, &p);
}
