/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Multi-frame messages, the receiving side (the protocol:
 * docs/reliability.md, "Multi-frame messages"): reassembly, the credits
 * granted, ACKs and NACKs, and the delivery of a whole request to its
 * handler or of a whole response to its call.
 *
 * Copies.  The receiver copies each payload once, into the message's
 * buffer, and frees the frame at once; the whole buffer becomes the
 * handler's payload or the future's value without another copy.
 *
 * At most once.  A request is reassembled in its server slot (state
 * RECEIVING) and handed to its handler once, when whole; a complete
 * request's frames arriving again only bring an ACK back (and its last
 * frame, the client's probe, the response).  A multi-frame response is
 * kept in the slot until the client acknowledges it whole.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "dp_rpc.h"
#include "dp_client.h"
#include "dp_handler.h"
#include "dp_msg.h"
#include "dp_server.h"
#include "dp_stream.h"
#include "dp_stage.h"
#include "fut_internal.h"
#include "dprpc_atomic.h"
#include <dprpc/dprpc_stats.h>

/* Complete the call on slot @s of @peer with a whole response: status 0 and
 * @buf as the value (freed by @free_fn(@arg) when the future is done with
 * it), or the error @status with @buf as its message. */
void
dp_msg_complete(struct dp_rpc *a, struct dp_peer *peer, struct dp_slot *s, unsigned int src,
	uint32_t status, uint8_t *buf, uint32_t len, void (*free_fn)(void *), void *arg)
{
	struct dprpc_future *fut = dp_slot_release(a, peer, s);
	char msg[DPRPC_ERRMSG_MAX];

	dp_count(&a->b.st.msgs_received, 1);
	if (status == 0) {
		if (fut_complete_consume(fut, buf, len, free_fn, arg) == 0) {
			dp_count(&a->b.st.calls_ok, 1);
		} else {
			/* Failed past its deadline by dp_expire_stalled() or a
			 * waiter (fut_set_expiry()), as in dp_handle_response(). */
			free_fn(arg);
			dp_count(&a->b.st.calls_failed, 1);
			dp_count(&a->b.st.calls_timed_out, 1);
		}
		return;
	}
	snprintf(msg, sizeof(msg), "%.*s", (int)RTE_MIN(len, sizeof(msg) - 1), (const char *)buf);
	fut_fail_consume(fut, -(int)RTE_MIN(status, (uint32_t)INT32_MAX), src, msg);
	free_fn(arg);
	dp_count(&a->b.st.calls_failed, 1);
}

static struct dp_rxmsg *
dp_rxmsg_new(const struct dp_parsed *p)
{
	size_t head =
		RTE_ALIGN_CEIL(sizeof(struct dp_rxmsg) + (p->pkt_cnt + 63u) / 64 * sizeof(uint64_t),
			RTE_CACHE_LINE_SIZE);
	struct dp_rxmsg *r;
	void *mem = rte_malloc(NULL, head + p->msg_len, RTE_CACHE_LINE_SIZE);

	if (mem == NULL)
		return NULL;
	memset(mem, 0, head);
	r = mem;
	r->req_num = p->req_num;
	r->len = p->msg_len;
	r->n = p->pkt_cnt;
	r->handler_id = p->handler_id;
	r->status = p->status;
	r->buf = (uint8_t *)mem + head;
	return r;
}

void
dp_rxmsg_free(void *r)
{
	rte_free(r);
}

/* Store a frame: 1 if the message is now whole, 0 if not (or a duplicate,
 * *dup set), -1 if the frame does not belong to it. */
static int
dp_rxmsg_add(struct dp_rxmsg *r, const struct dp_parsed *p, bool *dup)
{
	uint32_t i = p->pkt_idx;
	uint64_t bit = 1ull << (i % 64);

	*dup = false;
	if (p->msg_len != r->len || p->pkt_cnt != r->n || p->handler_id != r->handler_id ||
		p->status != r->status)
		return -1;
	if (r->bits[i / 64] & bit) {
		*dup = true;
		r->dups++;
		return r->have == r->n;
	}
	memcpy(r->buf + (size_t)i * DP_FRAG, p->payload, p->payload_len);
	r->bits[i / 64] |= bit;
	r->have++;
	if (i >= r->hi)
		r->hi = i + 1;
	r->jumped = false;
	if (i == r->cum) {
		while (r->cum < r->n && (r->bits[r->cum / 64] & (1ull << (r->cum % 64))))
			r->cum++;
		/* A resend filled a gap: frames held beyond it count from the
		 * next gap, if any (right after it when two frames in a row
		 * were lost). */
		r->jumped = r->cum - i > 1 || r->have > r->cum;
		r->ooo = r->have - r->cum;
	} else {
		r->ooo++;
	}
	return r->have == r->n;
}

/* The window this agent grants: its credits, or an eighth of them while
 * its mbuf pool is under a quarter full (checked once per ACK). */
static uint16_t
dp_grant(struct dp_rpc *a)
{
	if (rte_mempool_avail_count(a->b.mp) < a->b.mp->size / 4) {
		dp_count(&a->b.st.credits_cut, 1);
		return (uint16_t)RTE_MAX(a->credits / 8, 1u);
	}
	return (uint16_t)a->credits;
}

void
dp_send_ack(struct dp_rpc *a, unsigned int to, uint8_t of_type, uint16_t slot, uint32_t req_num,
	uint32_t cum, uint32_t hi, uint32_t n, uint16_t flags)
{
	struct dp_hdr_fields f = {
		.type = DP_FRAME_ACK,
		.src = a->b.rank,
		.dst = (uint16_t)to,
		.slot = slot,
		.session = a->b.session,
		.dst_session = a->peers[to].session,
		.req_num = req_num,
		.status = of_type,
		.pkt_idx = (uint16_t)cum,
		.pkt_cnt = (uint16_t)n,
		.msg_len = hi,
		.flags = flags,
	};
	struct rte_mbuf *m;
	uint8_t *frame;

	if (to == a->b.rank)
		return; /* the loopback loses nothing */
	m = rte_pktmbuf_alloc(a->b.mp);
	if (m == NULL)
		return; /* the sender's timer makes up for it */
	f.credits = dp_grant(a);
	frame = (uint8_t *)rte_pktmbuf_append(m, DP_HDRS_LEN);
	dp_frame_write_hdr(frame, a->peers[to].tmpl, &f, 0);
	dp_meta_plain(m);
	dp_count(&a->b.st.acks_sent, 1);
	dp_stage_out(&a->b, m);
}

/* After storing a frame that did not complete @r: ACK, NACK or answer a
 * probe as docs/reliability.md, "Multi-frame messages", says (one gap per
 * round trip, no timer). */
static void
dp_rxmsg_ack(struct dp_rpc *a, struct dp_rxmsg *r, const struct dp_parsed *p, bool dup)
{
	uint32_t quarter = RTE_MAX(a->credits / 4, 1u), half = RTE_MAX(a->credits / 2, 1u);
	bool asked = (p->flags & DP_MSG_ACK_NOW) != 0;
	uint16_t flags = 0;

	if (!dup && r->ooo > 0 && (r->jumped || r->ooo == 1 || r->ooo % half == 0))
		flags = DP_ACK_NACK;
	else if (!asked && !(!dup && r->jumped) && (!dup || r->dups % quarter != 1 % quarter))
		return;
	if (p->flags & DP_MSG_PROBE)
		flags |= DP_ACK_ANSWER;
	dp_send_ack(a, p->src, p->type, p->slot, p->req_num, r->cum, r->hi, r->n, flags);
}

/* A whole request: hand it to its handler.  False if no request object is
 * free: it stays whole in its slot and the client's next resend retries. */
static bool
dp_msg_deliver_request(struct dp_rpc *a, struct dp_srv_slot *e, const struct dp_parsed *p)
{
	struct dp_rxmsg *r = e->rx;
	struct dprpc_request *req = dp_req_new(a, p);

	if (req == NULL)
		return false;
	e->rx = NULL;
	e->state = DP_SRV_RUNNING;
	e->req = req;
	/* The request object owns it now (bounded by max_requests). */
	dp_srv_bytes_add(a, &a->peers[p->src], -(int64_t)r->len);
	dp_msgs_live(a, -1);
	dp_count(&a->b.st.msgs_received, 1);
	dp_send_ack(a, p->src, DP_FRAME_REQUEST, p->slot, p->req_num, r->n, r->n, r->n, 0);
	req->rx = r;
	req->payload = r->buf;
	req->len = r->len;
	dp_req_start(a, req);
	return true;
}

/* Answer a request too long for this agent with -EMSGSIZE, kept as its
 * response like any other. */
static void
dp_msg_refuse(struct dp_rpc *a, struct dp_srv_slot *e, const struct dp_parsed *p)
{
	struct dprpc_request *req;
	char msg[DPRPC_ERRMSG_MAX];

	dp_count(&a->b.st.drops[DPRPC_DROP_TOO_BIG], 1);
	req = dp_req_new(a, p);
	if (req == NULL)
		return;
	dp_msg_srv_clear(a, &a->peers[p->src], e);
	e->req_num = p->req_num;
	e->state = DP_SRV_RUNNING;
	req->payload = NULL;
	req->len = 0;
	snprintf(msg, sizeof(msg), "request of %u bytes exceeds max_msg_size %u of worker %s",
		p->msg_len, a->max_msg, a->b.name);
	dp_reply_error_or_drop(req, -EMSGSIZE, msg);
}

void
dp_msg_rx_request(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_parsed *p)
{
	struct dp_peer *peer = &a->peers[p->src];
	char msg[DP_KEEP_BYTES - 8]; /* what a kept answer holds */
	struct dp_srv_slot *e;
	struct dp_rxmsg *rx;
	bool dup;
	int rc;

	e = dp_srv_slot(peer, p->slot);
	if (e == NULL) {
		/* Nothing to keep the slot's state in: as if lost, the
		 * client's resend tries again. */
		dp_count(&a->b.st.drops[DPRPC_DROP_NO_MEMORY], 1);
		rte_pktmbuf_free(m);
		return;
	}
	if (e->state != DP_SRV_EMPTY && e->req_num == p->req_num) {
		if (e->state == DP_SRV_RECEIVING)
			goto add;
		/* Whole already: tell the client, and answer its probe. */
		rte_pktmbuf_free(m);
		dp_send_ack(a, p->src, DP_FRAME_REQUEST, p->slot, p->req_num, p->pkt_cnt,
			p->pkt_cnt, p->pkt_cnt, (p->flags & DP_MSG_PROBE) ? DP_ACK_ANSWER : 0);
		if (e->state == DP_SRV_DONE && p->pkt_idx + 1u == p->pkt_cnt &&
			dp_msg_resend_response(a, p->src, p->slot))
			return;
		dp_count(&a->b.st.drops[DPRPC_DROP_DUPLICATE], 1);
		return;
	}
	if (e->state != DP_SRV_EMPTY && (int32_t)(p->req_num - e->req_num) < 0) {
		dp_count(&a->b.st.drops[DPRPC_DROP_DUPLICATE], 1);
		rte_pktmbuf_free(m);
		return;
	}
	/* A new request on the slot: the peer moved on.  What the slot keeps
	 * goes only once the new request has what it needs, so a failure here
	 * leaves the old one's state (and its duplicates still recognised). */
	if (p->msg_len > a->max_msg) {
		rte_pktmbuf_free(m);
		dp_msg_refuse(a, e, p);
		return;
	}
	/* Its whole length is reserved now, or it is not taken at all: no
	 * caller pins more than its share of the heap with first frames. */
	if (dp_srv_over_budget(a, peer, e, p->msg_len)) {
		rte_pktmbuf_free(m);
		snprintf(msg, sizeof(msg),
			"worker %s refused a request of %u bytes: %" PRIu64
			" bytes of messages held for %s",
			a->b.name, p->msg_len, peer->srv_bytes, a->b.world.w[p->src].name);
		dp_srv_refuse(a, peer, e, p, -ENOBUFS, msg, 0);
		return;
	}
	rx = dp_rxmsg_new(p);
	if (rx == NULL) {
		dp_count(&a->b.st.drops[DPRPC_DROP_NO_MEMORY], 1);
		rte_pktmbuf_free(m);
		return;
	}
	dp_msg_srv_clear(a, peer, e);
	e->rx = rx;
	e->req_num = p->req_num;
	e->state = DP_SRV_RECEIVING;
	dp_srv_bytes_add(a, peer, rx->len);
	dp_msgs_live(a, 1);
add:
	rc = dp_rxmsg_add(e->rx, p, &dup);
	rte_pktmbuf_free(m);
	if (rc < 0) {
		dp_count(&a->b.st.drops[DPRPC_DROP_BAD_LENGTH], 1);
		return;
	}
	if (dup && rc == 0)
		dp_count(&a->b.st.drops[DPRPC_DROP_DUPLICATE], 1);
	if (rc == 0 || !dp_msg_deliver_request(a, e, p))
		dp_rxmsg_ack(a, e->rx, p, dup);
}

void
dp_msg_rx_response(
	struct dp_rpc *a, struct dp_slot *s, struct rte_mbuf *m, const struct dp_parsed *p)
{
	struct dp_peer *peer = &a->peers[p->src];
	char msg[DPRPC_ERRMSG_MAX];
	struct dprpc_future *fut;
	struct dp_rxmsg *r;
	bool dup;
	int rc;

	if (s->rx == NULL) {
		if (p->msg_len > a->max_msg) {
			rte_pktmbuf_free(m);
			dp_count(&a->b.st.drops[DPRPC_DROP_TOO_BIG], 1);
			/* Let the server drop it, and fail the call. */
			dp_send_ack(a, p->src, DP_FRAME_RESPONSE, p->slot, p->req_num, p->pkt_cnt,
				p->pkt_cnt, p->pkt_cnt, 0);
			snprintf(msg, sizeof(msg),
				"response of %u bytes from %s exceeds max_msg_size %u", p->msg_len,
				a->b.world.w[p->src].name, a->max_msg);
			fut = dp_slot_release(a, peer, s);
			fut_fail_consume(fut, -EMSGSIZE, a->b.rank, msg);
			dp_count(&a->b.st.calls_failed, 1);
			return;
		}
		s->rx = dp_rxmsg_new(p);
		if (s->rx == NULL) {
			dp_count(&a->b.st.drops[DPRPC_DROP_NO_MEMORY], 1);
			rte_pktmbuf_free(m);
			return;
		}
		dp_msgs_live(a, 1);
	}
	rc = dp_rxmsg_add(s->rx, p, &dup);
	rte_pktmbuf_free(m);
	if (rc < 0) {
		dp_count(&a->b.st.drops[DPRPC_DROP_BAD_LENGTH], 1);
		return;
	}
	if (dup)
		dp_count(&a->b.st.drops[DPRPC_DROP_DUPLICATE], 1);
	if (!dup && s->rto_tsc != 0) {
		/* Progress: the resend timer starts over. */
		/* Relaxed: poller-written, read here by the poller. */
		s->rto_tsc = dp_load_relaxed(&a->peers[p->src].rto_tsc);
		s->rtx_tsc = a->b.now_tsc + s->rto_tsc;
	}
	if (rc == 0) {
		dp_rxmsg_ack(a, s->rx, p, dup);
		return;
	}
	/* Whole: let the server drop its copy, and complete the call with
	 * the buffer as the value (the future frees it). */
	r = s->rx;
	s->rx = NULL;
	dp_msgs_live(a, -1);
	dp_send_ack(a, p->src, DP_FRAME_RESPONSE, p->slot, p->req_num, r->n, r->n, r->n, 0);
	dp_msg_complete(a, peer, s, p->src, r->status, r->buf, r->len, dp_rxmsg_free, r);
}

void __rte_hot
dp_msg_srv_clear(struct dp_rpc *a, struct dp_peer *peer, struct dp_srv_slot *e)
{
	if (e->resp.m != NULL)
		dp_srv_kept_add(a, peer, -1);
	dp_kept_clear(&e->resp);
	if (e->tx != NULL) {
		dp_srv_bytes_add(a, peer, -(int64_t)e->tx->len);
		dp_txmsg_put(e->tx);
		e->tx = NULL;
		dp_msgs_live(a, -1);
	}
	if (e->rx != NULL) {
		dp_srv_bytes_add(a, peer, -(int64_t)e->rx->len);
		rte_free(e->rx);
		e->rx = NULL;
		dp_msgs_live(a, -1);
	}
	if (unlikely(e->st != NULL))
		dp_stream_srv_free(a, peer, e);
	e->state = DP_SRV_EMPTY;
	e->cancel = DP_SRV_CANCEL_NONE;
	e->unrun = false;
}
