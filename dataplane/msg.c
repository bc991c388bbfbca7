/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Multi-frame messages (DESIGN.md sections 4 and 5): splitting, reassembly,
 * acknowledgements, credits and the recovery of lost frames.
 *
 * A request or response longer than DPRPC_MAX_FRAME_PAYLOAD bytes travels
 * as n frames; every frame but the last is full, each names its index, the
 * frame count and the message length.
 *
 * Memory.  Message buffers come from DPDK's heap (rte_malloc): memory
 * that stays mapped and faulted in once used, so a message does not pay a
 * page fault per 4 KiB as fresh malloc() memory would (glibc hands large
 * blocks back to the kernel: measured at about 1 us per page here), and
 * whose IOVA is known.  Size DPDK's memory (-m) for the messages in flight,
 * counting what the server holds: a request being reassembled holds its
 * whole length from its first frame, and a multi-frame response is kept
 * until the client acknowledges all of it.  The server has no timer of its
 * own: both are freed when the client's next request takes the slot, when
 * the client restarts (a new session), or with the agent; a client that
 * stops mid-message pins up to max_msg_size per slot until then (a peer
 * declared down keeps its slots: it may come back in the same session).
 *
 * Copies.  The sender copies the payload once, into a dp_txmsg.  A frame is
 * made only when it is sent: a header mbuf chained to an mbuf attached to
 * the frame's slice of that copy (an external buffer, reference counted
 * through the message's shared info), so the window's frames are all that
 * exist as mbufs.  The receiver copies each payload once, into the
 * message's buffer, and frees the frame at once; the whole buffer becomes
 * the handler's payload or the future's value without another copy.
 *
 * Flow control.  A sender may have `window` frames beyond the last one
 * acknowledged: its own credits until the receiver's first ACK, then what
 * the receiver grants (its credits) in every ACK.  The sender marks every
 * quarter window's frame and the window's last with DP_MSG_ACK_NOW and the
 * receiver acknowledges those, so a steady sender is never idle whatever
 * the two sides' credits.  A receiver whose mbuf pool is under a quarter
 * full grants an eighth of its credits: senders slow down instead of
 * having frames dropped.
 *
 * Loss.  The receiver keeps a bitmap and accepts frames in any order; a
 * frame beyond a gap makes it send a NACK for the first missing frame
 * (again every half window of frames beyond the same gap, and at once for
 * the next gap when a resend fills one), which the sender answers by
 * resending that frame.  Every ACK also says how far the receiver holds
 * frames (hi).  Whatever else is lost (a resent frame, an ACK, the tail of
 * a message) is recovered by the caller's timer, which asks where the
 * receiver stands: the client sends its request's first unacknowledged
 * frame asking for an ACK, or a PROBE acknowledgement of the response.
 * The answer (or the probe, at the server) makes the sender resend the
 * first missing frame and everything it sent beyond hi; gaps in between
 * follow by NACK.  The server itself keeps no timer.  Duplicates are
 * counted and dropped by the bitmap.
 *
 * At most once.  A request is reassembled in its server slot (state
 * RECEIVING) and handed to its handler once, when whole; a complete
 * request's frames arriving again only bring an ACK back (and its last
 * frame, the client's probe, the response).  A multi-frame response is
 * kept in the slot until the client acknowledges it whole.
 *
 * Everything here runs on the poller, but dp_txmsg_new(), dp_carrier_new()
 * and dp_txmsg_put() (any thread).  Calls to self make no frames: the
 * sender's copy becomes the handler's payload, and the response's copy the
 * future's value (dp_msg_self_request(), dp_msg_self_response()).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_malloc.h>

#include "dp_agent.h"
#include "fut_internal.h"

#define DP_FRAG DPRPC_MAX_FRAME_PAYLOAD

static void
dp_txmsg_free_cb(void *addr, void *opaque)
{
	(void)addr;
	rte_free(opaque);
}

struct dp_txmsg *
dp_txmsg_new(
	const struct dprpc_agent *a, const struct dp_hdr_fields *f, const void *data, uint32_t len)
{
	struct dp_txmsg *t = rte_malloc(NULL, sizeof(*t) + len, RTE_CACHE_LINE_SIZE);

	if (t == NULL)
		return NULL;
	memset(t, 0, sizeof(*t));
	t->buf = (uint8_t *)(t + 1);
	memcpy(t->buf, data, len); /* the one copy on the sending side */
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
	if (t != NULL && rte_mbuf_ext_refcnt_update(&t->shinfo, -1) == 0)
		rte_free(t);
}

/* An mbuf that carries @t to the poller through tx_ring or dp_submit(): a
 * header-only frame (its destination is read by the poller) with the
 * message in its metadata. */
struct rte_mbuf *
dp_carrier_new(struct dprpc_agent *a, struct dp_txmsg *t)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(a->mp);
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

/* Send frame @i of @t, asking for an ACK if @ask: false if no mbuf could
 * be had (the timer resumes). */
static bool
dp_txmsg_frame(struct dprpc_agent *a, struct dp_txmsg *t, uint32_t i, bool ask)
{
	uint32_t off = i * DP_FRAG, len = RTE_MIN((uint32_t)DP_FRAG, t->len - off);
	struct dp_hdr_fields f = t->f;
	struct rte_mbuf *ms[2];
	uint8_t *frame;

	if (rte_pktmbuf_alloc_bulk(a->mp, ms, 2) != 0)
		return false;
	frame = (uint8_t *)rte_pktmbuf_append(ms[0], DP_HDRS_LEN);
	f.pkt_idx = (uint16_t)i;
	f.pkt_cnt = (uint16_t)t->n;
	f.msg_len = t->len;
	/* Ask for an ACK every quarter window and at the window's end: the
	 * sender knows its window, the receiver may not (its grant was cut,
	 * or it has not granted yet). */
	if (ask || (i >= t->acked && ((i + 1 - t->acked) % RTE_MAX(t->window / 4, 1u) == 0 ||
					     i + 1 == t->acked + t->window || i + 1 == t->n)))
		f.flags = DP_MSG_ACK_NOW;
	dp_frame_write_hdr(frame, a->peers[f.dst].tmpl, &f, len);
	rte_mbuf_ext_refcnt_update(&t->shinfo, 1); /* the frame's */
	rte_pktmbuf_attach_extbuf(ms[1], t->buf + off, rte_malloc_virt2iova(t) + sizeof(*t) + off,
		(uint16_t)len, &t->shinfo);
	ms[1]->data_len = (uint16_t)len;
	ms[1]->pkt_len = len;
	rte_pktmbuf_chain(ms[0], ms[1]);
	dp_meta_plain(ms[0]);
	if (i < t->hi)
		dp_count(&a->st.frames_resent, 1);
	else
		t->hi = i + 1;
	if (f.dst == a->rank)
		dp_rx_frame(a, ms[0]);
	else
		dp_stage_out(a, ms[0]);
	return true;
}

/* Send what the window allows. */
static void
dp_txmsg_pump(struct dprpc_agent *a, struct dp_txmsg *t)
{
	uint32_t end = RTE_MIN(t->n, t->acked + t->window);

	while (t->next < end && dp_txmsg_frame(a, t, t->next, false))
		t->next++;
}

/* Go back to the first frame not acknowledged. */
static void
dp_txmsg_rewind(struct dprpc_agent *a, struct dp_txmsg *t)
{
	t->next = t->acked;
	dp_txmsg_pump(a, t);
}

static void
dp_msgs_live(struct dprpc_agent *a, int d)
{
	dp_count(&a->st.msgs_live, (uint64_t)(int64_t)d);
}

/* Fail the call to self on slot @slot, if still pending: the loopback has
 * no timer to recover what it could not deliver. */
void
dp_self_fail(struct dprpc_agent *a, uint16_t slot, uint32_t req_num, int code, const char *why)
{
	struct dp_peer *peer = &a->peers[a->rank];
	struct dp_slot *s;

	if (slot >= a->max_outstanding)
		return;
	s = &peer->slots[slot];
	if (s->fut == NULL || s->req_num != req_num)
		return;
	fut_fail_consume(dp_slot_release(a, peer, s), code, a->rank, why);
	dp_count(&a->st.calls_failed, 1);
}

/* Complete the call on slot @s of @peer with a whole response: status 0 and
 * @buf as the value (freed by @free_fn(@arg) when the future is done with
 * it), or the error @status with @buf as its message. */
static void
dp_msg_complete(struct dprpc_agent *a, struct dp_peer *peer, struct dp_slot *s, unsigned int src,
	uint32_t status, uint8_t *buf, uint32_t len, void (*free_fn)(void *), void *arg)
{
	struct dprpc_future *fut = dp_slot_release(a, peer, s);
	char msg[DPRPC_ERRMSG_MAX];

	dp_count(&a->st.msgs_received, 1);
	if (status == 0) {
		if (fut_complete_consume(fut, buf, len, free_fn, arg) != 0)
			free_fn(arg);
		dp_count(&a->st.calls_ok, 1);
		return;
	}
	snprintf(msg, sizeof(msg), "%.*s", (int)RTE_MIN(len, sizeof(msg) - 1), (const char *)buf);
	fut_fail_consume(fut, -(int)RTE_MIN(status, (uint32_t)INT32_MAX), src, msg);
	free_fn(arg);
	dp_count(&a->st.calls_failed, 1);
}

static void
dp_txmsg_put_cb(void *t)
{
	dp_txmsg_put(t);
}

/* Calls to self skip the frames: the sender's copy of a message is handed
 * over whole, as the handler's payload or the future's value. */
static void
dp_msg_self_request(struct dprpc_agent *a, struct dp_txmsg *t)
{
	struct dp_parsed p = {
		.type = DP_FRAME_REQUEST,
		.src = a->rank,
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
	dp_count(&a->st.msgs_received, 1);
	req->tx = t;
	dp_req_start(a, req);
}

static void
dp_msg_self_response(struct dprpc_agent *a, struct dp_txmsg *t)
{
	struct dp_peer *peer = &a->peers[a->rank];
	struct dp_slot *s = t->f.slot < a->max_outstanding ? &peer->slots[t->f.slot] : NULL;

	if (s == NULL || s->fut == NULL || s->req_num != t->f.req_num) {
		dp_txmsg_put(t); /* the call timed out meanwhile */
		return;
	}
	dp_msg_complete(a, peer, s, a->rank, t->f.status, t->buf, t->len, dp_txmsg_put_cb, t);
}

void
dp_msg_start_call(struct dprpc_agent *a, struct dp_slot *s, struct dp_txmsg *t)
{
	dp_count(&a->st.msgs_sent, 1);
	if (t->f.dst == a->rank) {
		dp_msg_self_request(a, t);
		return;
	}
	s->tx = t;
	dp_msgs_live(a, 1);
	dp_txmsg_pump(a, t);
}

void
dp_msg_start_response(struct dprpc_agent *a, struct dp_txmsg *t)
{
	struct dp_srv_slot *e;

	dp_count(&a->st.msgs_sent, 1);
	if (t->f.dst == a->rank) {
		dp_msg_self_response(a, t);
		return;
	}
	e = dp_srv_find(&a->peers[t->f.dst], t->f.slot);
	if (e == NULL || e->state != DP_SRV_RUNNING || e->req_num != t->f.req_num) {
		/* The peer restarted meanwhile: nobody waits for it. */
		dp_txmsg_put(t);
		return;
	}
	e->tx = t;
	e->state = DP_SRV_DONE;
	dp_msgs_live(a, 1);
	dp_txmsg_pump(a, t);
}

/* --- receiving --------------------------------------------------------- */

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
dp_grant(struct dprpc_agent *a)
{
	if (rte_mempool_avail_count(a->mp) < a->mp->size / 4) {
		dp_count(&a->st.credits_cut, 1);
		return (uint16_t)RTE_MAX(a->credits / 8, 1u);
	}
	return (uint16_t)a->credits;
}

static void
dp_send_ack(struct dprpc_agent *a, unsigned int to, uint8_t of_type, uint16_t slot,
	uint32_t req_num, uint32_t cum, uint32_t hi, uint32_t n, uint16_t flags)
{
	struct dp_hdr_fields f = {
		.type = DP_FRAME_ACK,
		.src = a->rank,
		.dst = (uint16_t)to,
		.slot = slot,
		.session = a->session,
		.req_num = req_num,
		.status = of_type,
		.pkt_idx = (uint16_t)cum,
		.pkt_cnt = (uint16_t)n,
		.msg_len = hi,
		.flags = flags,
	};
	struct rte_mbuf *m;
	uint8_t *frame;

	if (to == a->rank)
		return; /* the loopback loses nothing */
	m = rte_pktmbuf_alloc(a->mp);
	if (m == NULL)
		return; /* the sender's timer makes up for it */
	f.credits = dp_grant(a);
	frame = (uint8_t *)rte_pktmbuf_append(m, DP_HDRS_LEN);
	dp_frame_write_hdr(frame, a->peers[to].tmpl, &f, 0);
	dp_meta_plain(m);
	dp_count(&a->st.acks_sent, 1);
	dp_stage_out(a, m);
}

/* After storing a frame that did not complete @r: acknowledge the frames
 * the sender asks about (DP_MSG_ACK_NOW); NACK a gap when first seen,
 * every half window of frames past it, and as soon as a resend fills the
 * gap before it (one gap per round trip, no timer); acknowledge a filled
 * gap that leaves none (the sender's window may be waiting on it); and
 * answer a sender that resends (it lost an ACK) once per quarter window of
 * duplicates. */
static void
dp_rxmsg_ack(struct dprpc_agent *a, struct dp_rxmsg *r, const struct dp_parsed *p, bool dup)
{
	uint32_t quarter = RTE_MAX(a->credits / 4, 1u), half = RTE_MAX(a->credits / 2, 1u);
	bool asked = (p->flags & DP_MSG_ACK_NOW) != 0;
	uint16_t flags = 0;

	if (!dup && r->ooo > 0 && (r->jumped || r->ooo == 1 || r->ooo % half == 0))
		flags = DP_ACK_NACK;
	else if (!asked && !(!dup && r->jumped) && (!dup || r->dups % quarter != 1 % quarter))
		return;
	dp_send_ack(a, p->src, p->type, p->slot, p->req_num, r->cum, r->hi, r->n, flags);
}

/* A whole request: hand it to its handler.  False if no request object is
 * free: it stays whole in its slot and the client's next resend retries. */
static bool
dp_msg_deliver_request(struct dprpc_agent *a, struct dp_srv_slot *e, const struct dp_parsed *p)
{
	struct dp_rxmsg *r = e->rx;
	struct dprpc_request *req = dp_req_new(a, p);

	if (req == NULL)
		return false;
	e->rx = NULL;
	e->state = DP_SRV_RUNNING;
	dp_msgs_live(a, -1);
	dp_count(&a->st.msgs_received, 1);
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
dp_msg_refuse(struct dprpc_agent *a, struct dp_srv_slot *e, const struct dp_parsed *p)
{
	struct dprpc_request *req;
	char msg[DPRPC_ERRMSG_MAX];

	dp_count(&a->st.drops[DPRPC_DROP_TOO_BIG], 1);
	req = dp_req_new(a, p);
	if (req == NULL)
		return;
	dp_msg_srv_clear(a, e);
	e->req_num = p->req_num;
	e->state = DP_SRV_RUNNING;
	req->payload = NULL;
	req->len = 0;
	snprintf(msg, sizeof(msg), "request of %u bytes exceeds max_msg_size %u of worker %s",
		p->msg_len, a->max_msg, a->name);
	dp_reply_error_or_drop(req, -EMSGSIZE, msg);
}

void
dp_msg_rx_request(struct dprpc_agent *a, struct rte_mbuf *m, const struct dp_parsed *p)
{
	struct dp_srv_slot *e;
	struct dp_rxmsg *rx;
	bool dup;
	int rc;

	e = dp_srv_slot(&a->peers[p->src], p->slot);
	if (e == NULL) {
		/* Nothing to keep the slot's state in: as if lost, the
		 * client's resend tries again. */
		dp_count(&a->st.drops[DPRPC_DROP_NO_MEMORY], 1);
		rte_pktmbuf_free(m);
		return;
	}
	if (e->state != DP_SRV_EMPTY && e->req_num == p->req_num) {
		if (e->state == DP_SRV_RECEIVING)
			goto add;
		/* Whole already: tell the client, and answer its probe. */
		rte_pktmbuf_free(m);
		dp_send_ack(a, p->src, DP_FRAME_REQUEST, p->slot, p->req_num, p->pkt_cnt,
			p->pkt_cnt, p->pkt_cnt, 0);
		if (e->state == DP_SRV_DONE && p->pkt_idx + 1u == p->pkt_cnt &&
			dp_msg_resend_response(a, p->src, p->slot))
			return;
		dp_count(&a->st.drops[DPRPC_DROP_DUPLICATE], 1);
		return;
	}
	if (e->state != DP_SRV_EMPTY && (int32_t)(p->req_num - e->req_num) < 0) {
		dp_count(&a->st.drops[DPRPC_DROP_DUPLICATE], 1);
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
	rx = dp_rxmsg_new(p);
	if (rx == NULL) {
		dp_count(&a->st.drops[DPRPC_DROP_NO_MEMORY], 1);
		rte_pktmbuf_free(m);
		return;
	}
	dp_msg_srv_clear(a, e);
	e->rx = rx;
	e->req_num = p->req_num;
	e->state = DP_SRV_RECEIVING;
	dp_msgs_live(a, 1);
add:
	rc = dp_rxmsg_add(e->rx, p, &dup);
	rte_pktmbuf_free(m);
	if (rc < 0) {
		dp_count(&a->st.drops[DPRPC_DROP_BAD_LENGTH], 1);
		return;
	}
	if (dup && rc == 0)
		dp_count(&a->st.drops[DPRPC_DROP_DUPLICATE], 1);
	if (rc == 0 || !dp_msg_deliver_request(a, e, p))
		dp_rxmsg_ack(a, e->rx, p, dup);
}

void
dp_msg_rx_response(
	struct dprpc_agent *a, struct dp_slot *s, struct rte_mbuf *m, const struct dp_parsed *p)
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
			dp_count(&a->st.drops[DPRPC_DROP_TOO_BIG], 1);
			/* Let the server drop it, and fail the call. */
			dp_send_ack(a, p->src, DP_FRAME_RESPONSE, p->slot, p->req_num, p->pkt_cnt,
				p->pkt_cnt, p->pkt_cnt, 0);
			snprintf(msg, sizeof(msg),
				"response of %u bytes from %s exceeds max_msg_size %u", p->msg_len,
				a->world.w[p->src].name, a->max_msg);
			fut = dp_slot_release(a, peer, s);
			fut_fail_consume(fut, -EMSGSIZE, a->rank, msg);
			dp_count(&a->st.calls_failed, 1);
			return;
		}
		s->rx = dp_rxmsg_new(p);
		if (s->rx == NULL) {
			dp_count(&a->st.drops[DPRPC_DROP_NO_MEMORY], 1);
			rte_pktmbuf_free(m);
			return;
		}
		dp_msgs_live(a, 1);
	}
	rc = dp_rxmsg_add(s->rx, p, &dup);
	rte_pktmbuf_free(m);
	if (rc < 0) {
		dp_count(&a->st.drops[DPRPC_DROP_BAD_LENGTH], 1);
		return;
	}
	if (dup)
		dp_count(&a->st.drops[DPRPC_DROP_DUPLICATE], 1);
	if (!dup && s->rto_tsc != 0) {
		/* Progress: the resend timer starts over. */
		/* Relaxed: poller-written, read here by the poller. */
		s->rto_tsc = dp_load_relaxed(&a->peers[p->src].rto_tsc);
		s->rtx_tsc = a->now_tsc + s->rto_tsc;
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

/* An ACK: progress and credits from the receiver of one of our messages. */
void
dp_msg_rx_ack(struct dprpc_agent *a, struct rte_mbuf *m, const struct dp_parsed *p)
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
	if (t == NULL || p->pkt_cnt != t->n) {
		dp_count(&a->st.drops[DPRPC_DROP_STALE], 1);
		return;
	}
	if (cum > t->acked) {
		t->acked = cum;
		if (t->next < cum)
			t->next = cum;
		if (s != NULL && s->rto_tsc != 0) {
			/* Relaxed: poller-written, read by the poller. */
			s->rto_tsc = dp_load_relaxed(&peer->rto_tsc);
			s->rtx_tsc = a->now_tsc + s->rto_tsc;
		}
	}
	if (e != NULL && t->acked == t->n) {
		/* The client has the whole response: the kept copy goes; a
		 * late duplicate of the request is dropped from now on. */
		e->tx = NULL;
		dp_txmsg_put(t);
		dp_msgs_live(a, -1);
		return;
	}
	t->window = p->credits == 0 ? 1 : RTE_MIN((uint32_t)p->credits, 1024u);
	if ((p->flags & DP_ACK_PROBE) || t->probing) {
		/* The receiver's state after a resend timeout (its probe, or
		 * the answer to ours): frame cum is missing if below hi, and
		 * what was sent beyond hi is taken as lost; gaps between the
		 * two come back by NACK once cum is filled. */
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
dp_msg_resend(struct dprpc_agent *a, unsigned int to, struct dp_slot *s)
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
dp_msg_resend_response(struct dprpc_agent *a, unsigned int from, uint16_t slot)
{
	struct dp_srv_slot *e = &a->peers[from].srv[slot];

	if (e->tx != NULL) {
		dp_count(&a->st.requests_resent, 1);
		dp_txmsg_rewind(a, e->tx);
		return true;
	}
	if (dp_kept_send(a, &e->resp, dp_keep_area(&a->peers[from], slot, true), DP_FRAME_RESPONSE,
		    from, slot, e->req_num)) {
		dp_count(&a->st.requests_resent, 1);
		return true;
	}
	return false;
}

void
dp_msg_slot_clear(struct dprpc_agent *a, struct dp_slot *s)
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

void
dp_msg_srv_clear(struct dprpc_agent *a, struct dp_srv_slot *e)
{
	dp_kept_clear(&e->resp);
	if (e->tx != NULL) {
		dp_txmsg_put(e->tx);
		e->tx = NULL;
		dp_msgs_live(a, -1);
	}
	if (e->rx != NULL) {
		rte_free(e->rx);
		e->rx = NULL;
		dp_msgs_live(a, -1);
	}
	e->state = DP_SRV_EMPTY;
}
