/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The server side of calls: every request from a peer passes here
 * (dp_dispatch_request()) on its way to its handler, and every response to
 * a peer is kept here (dp_keep_response()) until the peer moves on.
 *
 * At-most-once execution (docs/reliability.md).  For each peer and each slot
 * of the peer's numbering, the server remembers the last request number and,
 * once answered, keeps its response (struct dp_kept) until the peer
 * sends a newer request on that slot.  A duplicate of an answered request
 * gets the kept response again; a duplicate of one still running, or an
 * older request, is dropped.  A new session id from the peer (it
 * restarted) clears its slots (dp_check_session()).  Poller only.
 *
 * The slots are the client's: it numbers them up to its own
 * max_outstanding, which nothing makes equal to ours.  Instead of a
 * handshake to agree on one number (a round trip before the first call,
 * and a frame whose loss must be recovered too), the server's state for a
 * peer grows, to the next power of two, the first time the peer uses a
 * slot beyond it: a malloc on the poller, at most log2(65536 /
 * max_outstanding) times per peer, never in the steady state.  A slot is a
 * 16-bit field, so a peer can make us hold at most 65536 entries
 * (65536 * (sizeof(struct dp_srv_slot) + DP_KEEP_BYTES), about 19 MiB).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_mbuf.h>
#include <rte_memcpy.h>

#include "dp_agent.h"
#include "dp_handler.h"
#include "dp_msg.h"
#include "dp_server.h"
#include "dp_tx.h"

void
dp_srv_reset(struct dprpc_agent *a, struct dp_peer *peer)
{
	unsigned int i;

	for (i = 0; i < peer->srv_cap; i++)
		dp_msg_srv_clear(a, &peer->srv[i]);
}

void
dp_srv_peer_down(struct dprpc_agent *a, struct dp_peer *peer)
{
	unsigned int i;

	for (i = 0; i < peer->srv_cap; i++)
		if (peer->srv[i].state == DP_SRV_RECEIVING)
			dp_msg_srv_clear(a, &peer->srv[i]);
}

int
dp_srv_grow(struct dp_peer *peer, unsigned int cap)
{
	struct dp_srv_slot *srv;
	uint8_t *keep;

	if (cap <= peer->srv_cap)
		return 0;
	/* Each slot's area on its own cache lines: a kept frame is written
	 * once per call.  Only the bytes a dp_kept says it holds are ever
	 * read, so the new areas need no zeroing. */
	keep = aligned_alloc(RTE_CACHE_LINE_SIZE, (size_t)cap * DP_KEEP_BYTES);
	srv = keep != NULL ? realloc(peer->srv, (size_t)cap * sizeof(*srv)) : NULL;
	if (srv == NULL) {
		free(keep);
		return -ENOMEM;
	}
	/* Entries hold pointers, not addresses of their own or of their
	 * areas (dp_keep_area() is computed at each use): moving is safe. */
	memset(srv + peer->srv_cap, 0, (size_t)(cap - peer->srv_cap) * sizeof(*srv));
	if (peer->srv_cap > 0)
		memcpy(keep, peer->srv_keep, (size_t)peer->srv_cap * DP_KEEP_BYTES);
	free(peer->srv_keep);
	peer->srv = srv;
	peer->srv_keep = keep;
	peer->srv_cap = cap;
	return 0;
}

struct dp_srv_slot *
dp_srv_slot(struct dp_peer *peer, uint16_t slot)
{
	if (likely(slot < peer->srv_cap))
		return &peer->srv[slot];
	if (dp_srv_grow(peer, rte_align32pow2((uint32_t)slot + 1)) != 0)
		return NULL;
	return &peer->srv[slot];
}

/* A response staged for the port: keep it if it answers the request its
 * slot is running. */
void
dp_keep_response(struct dprpc_agent *a, struct rte_mbuf *m, const struct dp_wire_hdr *h)
{
	struct dp_peer *peer = &a->peers[rte_be_to_cpu_16(h->dst_worker)];
	unsigned int slot = rte_be_to_cpu_16(h->slot);
	struct dp_srv_slot *e;

	e = dp_srv_find(peer, slot);
	if (e == NULL || !peer->session_known)
		return;
	if (e->state != DP_SRV_RUNNING || e->req_num != rte_be_to_cpu_32(h->req_num))
		return;
	dp_keep(&e->resp, dp_keep_area(peer, slot, true), m);
	e->state = DP_SRV_DONE;
}

/* Keep @m, a single-frame request or response about to be sent, for
 * sending again (struct dp_kept): its handler id and status (wire order)
 * then its payload, or a reference. */
void
dp_keep(struct dp_kept *k, uint8_t *area, struct rte_mbuf *m)
{
	uint32_t plen = m->data_len - DP_HDRS_LEN;

	if (likely(m->nb_segs == 1 && plen <= DP_KEEP_BYTES - 8)) {
		const struct dp_wire_hdr *h = dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *));

		memcpy(area, &h->handler_id, 4);
		memcpy(area + 4, &h->status, 4);
		rte_memcpy(area + 8, rte_pktmbuf_mtod_offset(m, const void *, DP_HDRS_LEN), plen);
		k->len = (uint16_t)(8 + plen);
		k->m = NULL;
		return;
	}
	/* Ours; the PMD frees the other.  An atomic increment (acq_rel in
	 * DPDK), paired with the decrement of whichever free comes last. */
	rte_mbuf_refcnt_update(m, 1);
	k->m = m;
	k->len = 0;
}

/* Stage the kept frame again, a @type frame to @to on @slot for request
 * @req_num (what the frame's headers held besides the kept bytes); false
 * if nothing is kept or no mbuf could be had (the caller's timer or the
 * peer's next duplicate tries again). */
bool
dp_kept_send(struct dprpc_agent *a, const struct dp_kept *k, const uint8_t *area, uint8_t type,
	unsigned int to, uint16_t slot, uint32_t req_num)
{
	struct dp_hdr_fields f = {
		.type = type,
		.src = a->rank,
		.dst = (uint16_t)to,
		.slot = slot,
		.session = a->session,
		.dst_session = a->peers[to].session,
		.req_num = req_num,
	};
	struct rte_mbuf *m = k->m;
	uint32_t v;
	uint8_t *frame;

	if (m != NULL) {
		/* One more for the PMD, paired with its free's decrement. */
		rte_mbuf_refcnt_update(m, 1);
	} else {
		if (k->len < 8 || (m = dp_frame_alloc(a, k->len - 8u, &frame)) == NULL)
			return false;
		memcpy(&v, area, 4);
		f.handler_id = rte_be_to_cpu_32(v);
		memcpy(&v, area + 4, 4);
		f.status = rte_be_to_cpu_32(v);
		dp_frame_write(frame, a->peers[to].tmpl, &f, area + 8, k->len - 8u);
		dp_meta_plain(m);
	}
	dp_stage_tx(a, m);
	return true;
}

void
dp_kept_clear(struct dp_kept *k)
{
	rte_pktmbuf_free(k->m);
	k->m = NULL;
	k->len = 0;
}

/* Decide on a request from a peer: true to run it; false if it was a
 * duplicate (answered again or dropped; @m is consumed). */
static bool
dp_srv_check(
	struct dprpc_agent *a, struct rte_mbuf *m, struct dp_srv_slot *e, const struct dp_parsed *p)
{
	int32_t d;

	if (e->state == DP_SRV_EMPTY)
		return true;
	/* Serial-number order: request numbers wrap. */
	d = (int32_t)(p->req_num - e->req_num);
	if (d > 0)
		return true;
	if (d != 0 || e->state != DP_SRV_DONE || !dp_msg_resend_response(a, p->src, p->slot))
		dp_count(&a->st.drops[DPRPC_DROP_DUPLICATE], 1);
	rte_pktmbuf_free(m);
	return false;
}

void
dp_dispatch_request(struct dprpc_agent *a, struct rte_mbuf *m, const struct dp_parsed *p)
{
	struct dp_srv_slot *e = NULL;
	struct dprpc_request *req;

	if (p->pkt_cnt > 1) {
		dp_msg_rx_request(a, m, p);
		return;
	}
	/* Calls to self never cross the port: nothing to de-duplicate.  The
	 * frame's session is the peer's current one (dp_check_session()). */
	if (p->src != a->rank) {
		e = dp_srv_slot(&a->peers[p->src], p->slot);
		if (unlikely(e == NULL)) {
			/* No memory for the slot's at-most-once state: as if
			 * lost (the caller's resend tries again), rather than
			 * run it unguarded or answer that it did not run (a
			 * later copy might). */
			dp_count(&a->st.drops[DPRPC_DROP_NO_MEMORY], 1);
			rte_pktmbuf_free(m);
			return;
		}
		if (!dp_srv_check(a, m, e, p))
			return;
	}
	req = dp_req_new(a, p);
	if (req == NULL) {
		rte_pktmbuf_free(m);
		if (p->src == a->rank)
			dp_self_fail(a, p->slot, p->req_num, -ENOBUFS,
				"no request object free for a call to self");
		return;
	}
	req->m = m;
	if (e != NULL) {
		dp_msg_srv_clear(a, e); /* the peer moved on */
		e->req_num = p->req_num;
		e->state = DP_SRV_RUNNING;
	}
	dp_req_start(a, req);
}
