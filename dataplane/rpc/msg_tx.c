/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Multi-frame messages, the sending side (the protocol: docs/reliability.md,
 * "Multi-frame messages"): the message's copy, its frames within the
 * window, what ACKs tell the sender (dp_msg_rx_ack(): they move its window
 * and make it resend), the resends after a timeout, and messages to
 * ourselves.
 *
 * Copies.  The sender copies the payload once, into a dp_txmsg.  A frame is
 * made only when it is sent: a header mbuf chained to an mbuf attached to
 * the frame's slice of that copy (an external buffer, reference counted
 * through the message's shared info), so the window's frames are all that
 * exist as mbufs.
 *
 * Calls to self make no frames: the sender's copy becomes the handler's
 * payload, and the response's copy the future's value
 * (dp_msg_self_request(), dp_msg_self_response()).
 */
#include <errno.h>
#include <string.h>

#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "dp_rpc.h"
#include "dp_client.h"
#include "dp_handler.h"
#include "dp_msg.h"
#include "dp_poll.h"
#include "dp_rx.h"
#include "dp_server.h"
#include "dp_submit.h"
#include "fut_internal.h"
#include "dprpc_atomic.h"
#include <dprpc/dprpc_stats.h>

static void
dp_txmsg_free_cb(void *addr, void *opaque)
{
	(void)addr;
	rte_free(opaque);
}

struct dp_txmsg *
dp_txmsg_new(const struct dp_rpc *a, const struct dp_hdr_fields *f, const struct iovec *iov,
	unsigned int cnt, uint32_t len)
{
	struct dp_txmsg *t = rte_malloc(NULL, sizeof(*t) + len, RTE_CACHE_LINE_SIZE);
	uint32_t off = 0;

	if (t == NULL)
		return NULL;
	memset(t, 0, sizeof(*t));
	t->buf = (uint8_t *)(t + 1);
	for (unsigned int i = 0; i < cnt; i++) { /* the one copy on the sending side */
		if (iov[i].iov_len == 0)
			continue; /* its base may be NULL */
		memcpy(t->buf + off, iov[i].iov_base, iov[i].iov_len);
		off += (uint32_t)iov[i].iov_len;
	}
	t->f = *f;
	t->len = len;
	t->n = (len + DP_FRAG - 1) / DP_FRAG;
	t->window = a->credits;
	t->shinfo.free_cb = dp_txmsg_free_cb;
	t->shinfo.fcb_opaque = t;
	rte_mbuf_ext_refcnt_set(&t->shinfo, 1);
	return t;
}

void
dp_txmsg_put(struct dp_txmsg *t)
{
	/* An atomic decrement (acq_rel in DPDK), paired with every other
	 * holder's: the last one frees, after all their uses. */
	if (t != NULL && rte_mbuf_ext_refcnt_update(&t->shinfo, -1) == 0)
		rte_free(t);
}

/* An mbuf that carries @t to the poller through tx_ring or dp_submit(): a
 * header-only frame (its destination is read by the poller) with the
 * message in its metadata. */
struct rte_mbuf *
dp_carrier_new(struct dp_rpc *a, struct dp_txmsg *t)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(a->b.mp);
	uint8_t *frame;

	if (m == NULL)
		return NULL;
	frame = (uint8_t *)rte_pktmbuf_append(m, DP_HDRS_LEN);
	dp_frame_write_hdr(frame, a->peers[t->f.dst].tmpl, &t->f, 0);
	dp_meta(m)->fut = NULL;
	dp_meta(m)->deadline_tsc = 0;
	dp_meta(m)->tx = t;
	return m;
}

/* Send frame @i of @t, a probe if @probe (the receiver answers with its
 * state: DP_MSG_PROBE): false if no mbuf could be had (the timer
 * resumes). */
static bool
dp_txmsg_frame(struct dp_rpc *a, struct dp_txmsg *t, uint32_t i, bool probe)
{
	uint32_t off = i * DP_FRAG, len = RTE_MIN((uint32_t)DP_FRAG, t->len - off);
	struct dp_hdr_fields f = t->f;
	struct rte_mbuf *ms[2];
	uint8_t *frame;

	if (rte_pktmbuf_alloc_bulk(a->b.mp, ms, 2) != 0)
		return false;
	frame = (uint8_t *)rte_pktmbuf_append(ms[0], DP_HDRS_LEN);
	f.pkt_idx = (uint16_t)i;
	f.pkt_cnt = (uint16_t)t->n;
	f.msg_len = t->len;
	/* Ask for an ACK every quarter window and at the window's end: the
	 * sender knows its window, the receiver may not (its grant was cut,
	 * or it has not granted yet). */
	if (probe || (i >= t->acked && ((i + 1 - t->acked) % RTE_MAX(t->window / 4, 1u) == 0 ||
					       i + 1 == t->acked + t->window || i + 1 == t->n)))
		f.flags = DP_MSG_ACK_NOW;
	if (probe)
		f.flags |= DP_MSG_PROBE;
	dp_frame_write_hdr(frame, a->peers[f.dst].tmpl, &f, len);
	/* The frame's, paired with the decrement when the frame is freed. */
	rte_mbuf_ext_refcnt_update(&t->shinfo, 1);
	rte_pktmbuf_attach_extbuf(ms[1], t->buf + off, rte_malloc_virt2iova(t) + sizeof(*t) + off,
		(uint16_t)len, &t->shinfo);
	ms[1]->data_len = (uint16_t)len;
	ms[1]->pkt_len = len;
	rte_pktmbuf_chain(ms[0], ms[1]);
	dp_meta_plain(ms[0]);
	if (i < t->hi)
		dp_count(&a->b.st.frames_resent, 1);
	else
		t->hi = i + 1;
	if (f.dst == a->b.rank)
		dp_rx_local(a, ms[0]);
	else
		dp_stage_out(&a->b, ms[0]);
	return true;
}

/* Send what the window allows. */
static void
dp_txmsg_pump(struct dp_rpc *a, struct dp_txmsg *t)
{
	uint32_t end = RTE_MIN(t->n, t->acked + t->window);

	while (t->next < end && dp_txmsg_frame(a, t, t->next, false))
		t->next++;
}

/* Go back to the first frame not acknowledged. */
static void
dp_txmsg_rewind(struct dp_rpc *a, struct dp_txmsg *t)
{
	t->next = t->acked;
	dp_txmsg_pump(a, t);
}

/* Fail the call to self on slot @slot, if still pending: the loopback has
 * no timer to recover what it could not deliver. */
void
dp_self_fail(struct dp_rpc *a, uint16_t slot, uint32_t req_num, int code, const char *why)
{
	struct dp_peer *peer = &a->peers[a->b.rank];
	struct dp_slot *s;

	if (slot >= a->max_outstanding)
		return;
	s = &peer->slots[slot];
	if (s->fut == NULL || s->req_num != req_num)
		return;
	fut_fail_consume(dp_slot_release(a, peer, s), code, a->b.rank, why);
	dp_count(&a->b.st.calls_failed, 1);
}

static void
dp_txmsg_put_cb(void *t)
{
	dp_txmsg_put(t);
}

/* Calls to self skip the frames: the sender's copy of a message is handed
 * over whole, as the handler's payload or the future's value. */
static void
dp_msg_self_request(struct dp_rpc *a, struct dp_txmsg *t)
{
	struct dp_parsed p = {
		.type = DP_FRAME_REQUEST,
		.src = a->b.rank,
		.session = a->b.session,
		.slot = t->f.slot,
		.req_num = t->f.req_num,
		.handler_id = t->f.handler_id,
		.payload = t->buf,
		.payload_len = t->len,
		.msg_len = t->len,
		.pkt_cnt = (uint16_t)t->n,
	};
	struct dprpc_request *req = dp_req_new(a, &p);

	if (req == NULL) {
		dp_self_fail(a, p.slot, p.req_num, -ENOBUFS,
			"no request object free for a call to self");
		dp_txmsg_put(t);
		return;
	}
	dp_count(&a->b.st.msgs_received, 1);
	req->tx = t;
	dp_req_start(a, req);
}

static void
dp_msg_self_response(struct dp_rpc *a, struct dp_txmsg *t)
{
	struct dp_peer *peer = &a->peers[a->b.rank];
	struct dp_slot *s = t->f.slot < a->max_outstanding ? &peer->slots[t->f.slot] : NULL;

	if (s == NULL || s->fut == NULL || s->req_num != t->f.req_num) {
		dp_txmsg_put(t); /* the call timed out meanwhile */
		return;
	}
	dp_msg_complete(a, peer, s, a->b.rank, t->f.status, t->buf, t->len, dp_txmsg_put_cb, t);
}

void
dp_msg_start_call(struct dp_rpc *a, struct dp_slot *s, struct dp_txmsg *t)
{
	dp_count(&a->b.st.msgs_sent, 1);
	if (t->f.dst == a->b.rank) {
		dp_msg_self_request(a, t);
		return;
	}
	s->tx = t;
	dp_msgs_live(a, 1);
	if (!s->parked)
		dp_txmsg_pump(a, t);
}

void
dp_msg_send_parked(struct dp_rpc *a, struct dp_slot *s)
{
	dp_txmsg_pump(a, s->tx);
}

void
dp_msg_start_response(struct dp_rpc *a, struct dp_txmsg *t)
{
	struct dp_peer *peer;
	struct dp_srv_slot *e;

	dp_count(&a->b.st.msgs_sent, 1);
	if (t->f.dst == a->b.rank) {
		dp_msg_self_response(a, t);
		return;
	}
	peer = &a->peers[t->f.dst];
	e = dp_srv_find(peer, t->f.slot);
	if (e == NULL || e->state != DP_SRV_RUNNING || e->req_num != t->f.req_num) {
		/* The peer restarted meanwhile: nobody waits for it. */
		dp_txmsg_put(t);
		return;
	}
	e->state = DP_SRV_DONE;
	/* Relaxed: the poller's own write, read back (struct dp_peer). */
	if (unlikely(dp_load_relaxed(&peer->state) >= DPRPC_PEER_DOWN)) { /* or LEFT */
		/* Its frames could not be sent without keeping it, and the
		 * peer is gone (dp_srv_reclaim()): a resend, if it comes
		 * back, gets -ENODATA. */
		dp_srv_keep_refused(a, peer, e, t->f.handler_id);
		dp_txmsg_put(t);
		return;
	}
	e->tx = t;
	dp_srv_bytes_add(a, peer, t->len);
	dp_msgs_live(a, 1);
	dp_txmsg_pump(a, t);
}

/* An ACK: progress and credits from the receiver of one of our messages. */
void
dp_msg_rx_ack(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_parsed *p)
{
	struct dp_peer *peer = &a->peers[p->src];
	struct dp_slot *s = NULL;
	struct dp_srv_slot *e = NULL;
	struct dp_txmsg *t = NULL;
	uint32_t cum = p->pkt_idx, hi = RTE_MAX(p->msg_len, cum);

	rte_pktmbuf_free(m);
	if (p->status == DP_FRAME_REQUEST) {
		s = p->slot < a->max_outstanding ? &peer->slots[p->slot] : NULL;
		if (s != NULL && s->fut != NULL && s->req_num == p->req_num)
			t = s->tx;
	} else {
		e = dp_srv_find(peer, p->slot);
		if (e != NULL && e->state == DP_SRV_DONE && e->req_num == p->req_num)
			t = e->tx;
	}
	if (unlikely(t == NULL) && e != NULL && e->state == DP_SRV_DONE &&
		e->req_num == p->req_num && e->resp.len != 0) {
		/* The client asks for the rest of a response that was
		 * reclaimed (dp_srv_reclaim()): the error kept instead. */
		if (!dp_msg_resend_response(a, p->src, p->slot))
			dp_count(&a->b.st.drops[DPRPC_DROP_STALE], 1);
		return;
	}
	if (t == NULL || p->pkt_cnt != t->n) {
		dp_count(&a->b.st.drops[DPRPC_DROP_STALE], 1);
		return;
	}
	if (cum > t->acked) {
		t->acked = cum;
		if (t->next < cum)
			t->next = cum;
		if (s != NULL && s->rto_tsc != 0) {
			/* Relaxed: poller-written, read by the poller. */
			s->rto_tsc = dp_load_relaxed(&peer->rto_tsc);
			s->rtx_tsc = a->b.now_tsc + s->rto_tsc;
		}
	}
	if (e != NULL && t->acked == t->n) {
		/* The client has the whole response: the kept copy goes; a
		 * late duplicate of the request is dropped from now on. */
		e->tx = NULL;
		dp_srv_bytes_add(a, peer, -(int64_t)t->len);
		dp_txmsg_put(t);
		dp_msgs_live(a, -1);
		return;
	}
	t->window = p->credits == 0 ? 1 : RTE_MIN((uint32_t)p->credits, 1024u);
	if ((p->flags & DP_ACK_PROBE) || (t->probing && (p->flags & DP_ACK_ANSWER))) {
		/* The receiver's state after a resend timeout (its probe, or
		 * the answer to ours): frame cum is missing if below hi, what
		 * went beyond hi is lost, gaps between come back by NACK.
		 * Only DP_ACK_ANSWER answers our probe: an ACK sent before it
		 * arrived has an old hi (docs/reliability.md). */
		t->probing = false;
		if (cum < hi)
			(void)dp_txmsg_frame(a, t, cum, false);
		if (t->next > hi)
			t->next = RTE_MAX(hi, t->acked);
	} else if ((p->flags & DP_ACK_NACK) && cum < t->next) {
		(void)dp_txmsg_frame(a, t, cum, false);
	}
	dp_txmsg_pump(a, t);
}

/* The client's resend timer fired for slot @s (no response yet, or only
 * part of it). */
void
dp_msg_resend(struct dp_rpc *a, unsigned int to, struct dp_slot *s)
{
	struct dp_txmsg *t = s->tx;

	if (s->rx != NULL) {
		/* Part of the response came: ask for the rest. */
		dp_send_ack(a, to, DP_FRAME_RESPONSE, (uint16_t)(s - a->peers[to].slots),
			s->req_num, s->rx->cum, s->rx->hi, s->rx->n, DP_ACK_PROBE);
		return;
	}
	if (t->acked < t->n) {
		/* Ask where the server stands (dp_msg_rx_ack() resumes from
		 * its answer) rather than sending the whole window again. */
		t->probing = true;
		(void)dp_txmsg_frame(a, t, t->acked, true);
	} else {
		(void)dp_txmsg_frame(a, t, t->n - 1, false); /* whole there: a probe */
	}
}

/* A duplicate of an answered request whose response is a multi-frame
 * message: go back to what the client acknowledged.  False if the response
 * is gone (acknowledged whole). */
bool
dp_msg_resend_response(struct dp_rpc *a, unsigned int from, uint16_t slot)
{
	struct dp_srv_slot *e = &a->peers[from].srv[slot];

	if (e->tx != NULL) {
		dp_count(&a->b.st.requests_resent, 1);
		dp_txmsg_rewind(a, e->tx);
		return true;
	}
	if (dp_kept_send(a, &e->resp, dp_keep_area(&a->peers[from], slot, true), DP_FRAME_RESPONSE,
		    from, slot, e->req_num, 0)) {
		dp_count(&a->b.st.requests_resent, 1);
		return true;
	}
	return false;
}

void
dp_msg_slot_clear(struct dp_rpc *a, struct dp_slot *s)
{
	if (s->tx != NULL) {
		dp_txmsg_put(s->tx);
		s->tx = NULL;
		dp_msgs_live(a, -1);
	}
	if (s->rx != NULL) {
		rte_free(s->rx);
		s->rx = NULL;
		dp_msgs_live(a, -1);
	}
}
