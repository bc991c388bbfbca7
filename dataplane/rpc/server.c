/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The server side of calls: every request from a peer passes here
 * (dp_dispatch_request()) on its way to its handler, and every response to
 * a peer is kept here (dp_keep_response()) until the peer moves on.
 *
 * At-most-once (docs/reliability.md, "At-most-once"): per peer and slot of
 * the peer's numbering, the last request number and, once answered, its
 * kept response until the peer sends a newer request there.  A duplicate
 * of an answered request gets the kept answer; of one still running, or
 * older, is dropped.  Poller only.
 *
 * The slots are numbered by the client up to its own max_outstanding:
 * rather than a handshake, the server's state for a peer grows to the next
 * power of two the first time the peer uses a slot beyond it (at most
 * 65536 entries, about 19 MiB).  What the slots hold beyond their state is
 * bounded by the budgets ("Budgets and reclaim"): dp_keep_response(),
 * dp_srv_over_budget(), dp_srv_reclaim().
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_mbuf.h>

#include "dp_rpc.h"
#include "dp_handler.h"
#include "dp_liveness.h"
#include "dp_msg.h"
#include "dp_server.h"
#include "dp_stream.h"
#include "dp_submit.h"
#include "dprpc_lcore.h"
#include <dprpc/dprpc_stats.h>

void
dp_srv_reset(struct dp_rpc *a, struct dp_peer *peer)
{
	unsigned int i;

	for (i = 0; i < peer->srv_cap; i++)
		dp_msg_srv_clear(a, peer, &peer->srv[i]);
}

void
dp_srv_keep_error(
	struct dp_peer *peer, struct dp_srv_slot *e, uint32_t handler_id, int code, const char *msg)
{
	uint8_t *area = dp_keep_area(peer, (unsigned int)(e - peer->srv), true);
	size_t n = strnlen(msg, DP_KEEP_BYTES - 8);
	uint32_t v;

	/* As dp_keep() stores a frame's: handler id and status in wire
	 * order, then the payload (the message). */
	v = rte_cpu_to_be_32(handler_id);
	memcpy(area, &v, 4);
	v = rte_cpu_to_be_32((uint32_t)-code);
	memcpy(area + 4, &v, 4);
	memcpy(area + 8, msg, n);
	e->resp.m = NULL;
	e->resp.len = (uint16_t)(8 + n);
}

void
dp_srv_refuse(struct dp_rpc *a, struct dp_peer *peer, struct dp_srv_slot *e,
	const struct dp_parsed *p, int code, const char *msg, uint16_t hint)
{
	uint8_t *area = dp_keep_area(peer, p->slot, true);
	uint32_t v;

	if (code == -ENOBUFS)
		dp_count(&a->b.st.drops[DPRPC_DROP_OVER_BUDGET], 1);
	dp_msg_srv_clear(a, peer, e); /* the peer moved on */
	e->req_num = p->req_num;
	e->state = DP_SRV_DONE;
	e->unrun = true;
	dp_srv_keep_error(peer, e, p->handler_id, code, msg);
	/* The hint above the errno in the kept status word (dp_keep()). */
	v = rte_cpu_to_be_32((uint32_t)-code | (uint32_t)hint << 16);
	memcpy(area + 4, &v, 4);
	/* No mbuf: as if this answer were lost, the resend gets it. */
	(void)dp_kept_send(a, &e->resp, dp_keep_area(peer, p->slot, true), DP_FRAME_RESPONSE,
		p->src, p->slot, p->req_num, 0);
}

/* Message bytes @e holds (what a new request on it would free). */
static uint64_t
dp_srv_slot_bytes(const struct dp_srv_slot *e)
{
	return (e->rx != NULL ? e->rx->len : 0) + (e->tx != NULL ? e->tx->len : 0);
}

/* dp_srv_over_budget() beyond its quick check: counting what the new
 * request frees, what its slot holds. */
bool
dp_srv_over_budget_exact(const struct dp_rpc *a, const struct dp_peer *peer,
	const struct dp_srv_slot *e, uint64_t need)
{
	/* Relaxed: the poller's own gauge, read back (struct dp_stats). */
	uint64_t total = dp_load_relaxed(&a->b.st.msg_bytes), freed = dp_srv_slot_bytes(e);

	return peer->srv_bytes - freed + need > a->msg_peer_max ||
	       total - freed + need > a->msg_max;
}

void
dp_srv_reclaim(struct dp_rpc *a, unsigned int p)
{
	struct dp_peer *peer = &a->peers[p];
	char msg[DP_KEEP_BYTES - 8]; /* what a kept answer holds */
	unsigned int i;

	for (i = 0; i < peer->srv_cap && (peer->srv_kept > 0 || peer->srv_bytes > 0); i++) {
		struct dp_srv_slot *e = &peer->srv[i];
		uint32_t handler_id;

		if (e->state == DP_SRV_RECEIVING) {
			/* Not run: the caller may call again. */
			handler_id = e->rx->handler_id;
			dp_msg_srv_clear(a, peer, e);
			e->state = DP_SRV_DONE;
			snprintf(msg, sizeof(msg),
				"worker %s dropped the request half received: %s was declared down",
				a->b.name, a->b.world.w[p].name);
			dp_srv_keep_error(peer, e, handler_id, -ENOBUFS, msg);
			dp_count(&a->b.st.reclaimed_msgs, 1);
		} else if (e->state == DP_SRV_DONE && (e->tx != NULL || e->resp.m != NULL)) {
			/* Run: a resend must not run it again. */
			if (e->tx != NULL) {
				handler_id = e->tx->f.handler_id;
				dp_count(&a->b.st.reclaimed_msgs, 1);
			} else {
				handler_id = rte_be_to_cpu_32(
					dp_frame_hdr(rte_pktmbuf_mtod(e->resp.m, uint8_t *))
						->handler_id);
				dp_count(&a->b.st.reclaimed_mbufs, 1);
			}
			dp_msg_srv_clear(a, peer, e);
			e->state = DP_SRV_DONE;
			snprintf(msg, sizeof(msg),
				"worker %s no longer holds the response: %s was declared down",
				a->b.name, a->b.world.w[p].name);
			dp_srv_keep_error(peer, e, handler_id, -ENODATA, msg);
		} else if (e->st != NULL) {
			/* A stream: its request was flagged cancelled
			 * (dp_srv_cancel_all()); nothing more is sent. */
			dp_stream_srv_free(a, peer, e);
		}
	}
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

void
dp_srv_keep_refused(
	struct dp_rpc *a, struct dp_peer *peer, struct dp_srv_slot *e, uint32_t handler_id)
{
	char msg[DP_KEEP_BYTES - 8]; /* what a kept answer holds */

	dp_count(&a->b.st.keeps_refused, 1);
	/* Relaxed: the poller's own write, read back (struct dp_peer). */
	if (dp_load_relaxed(&peer->state) >= DPRPC_PEER_DOWN)
		snprintf(msg, sizeof(msg),
			"worker %s ran the request but no longer holds its response: "
			"%s %s",
			a->b.name, a->b.world.w[peer - a->peers].name,
			dp_load_relaxed(&peer->state) == DPRPC_PEER_DOWN ? "was declared down"
									 : "left the world");
	else
		snprintf(msg, sizeof(msg),
			"worker %s ran the request but no longer holds its response "
			"(over its kept_mbufs budget)",
			a->b.name);
	dp_srv_keep_error(peer, e, handler_id, -ENODATA, msg);
}

/* A response staged for the port: keep it if it answers the request its
 * slot is running, as a copy, or by reference within the budgets; else
 * keep the error a resend gets instead (the request is never run twice). */
void __rte_hot
dp_keep_response(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_wire_hdr *h)
{
	struct dp_peer *peer = &a->peers[rte_be_to_cpu_16(h->dst_worker)];
	unsigned int slot = rte_be_to_cpu_16(h->slot);
	struct dp_srv_slot *e;

	e = dp_srv_find(peer, slot);
	if (e == NULL || !peer->session_known)
		return;
	if (e->state != DP_SRV_RUNNING || e->req_num != rte_be_to_cpu_32(h->req_num))
		return;
	e->state = DP_SRV_DONE;
	e->unrun = (rte_be_to_cpu_16(h->flags) & DP_RESP_UNRUN) != 0;
	if (unlikely(e->st != NULL))
		dp_stream_srv_free(a, peer, e); /* a reply ends a stream at once */
	if (likely(dp_keep_fits(m))) {
		dp_keep(&e->resp, dp_keep_area(peer, slot, true), m);
		return;
	}
	if (likely(dp_srv_may_keep_mbuf(a, peer))) {
		dp_keep(&e->resp, dp_keep_area(peer, slot, true), m);
		dp_srv_kept_add(a, peer, 1);
		return;
	}
	dp_srv_keep_refused(a, peer, e, rte_be_to_cpu_32(h->handler_id));
}

/* Keep @m, a single-frame request or response about to be sent, for
 * sending again (struct dp_kept): its handler id and status (wire order)
 * then its payload, or a reference. */
void __rte_hot
dp_keep(struct dp_kept *k, uint8_t *area, struct rte_mbuf *m)
{
	uint32_t plen = m->data_len - DP_HDRS_LEN;

	if (likely(dp_keep_fits(m))) {
		const struct dp_wire_hdr *h = dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *));

		/* The status word holds the budget field above the errno
		 * (an errno fits 16 bits): a resend of an overload answer
		 * carries its retry-after hint again (dp_kept_send()). */
		uint32_t st = rte_cpu_to_be_32((rte_be_to_cpu_32(h->status) & 0xffffu) |
					       (uint32_t)rte_be_to_cpu_16(h->budget) << 16);

		memcpy(area, &h->handler_id, 4);
		memcpy(area + 4, &st, 4);
		/* memcpy, not rte_memcpy: at most DP_KEEP_BYTES, and
		 * rte_memcpy's inline expansion would put kilobytes of code
		 * on the path of every call. */
		memcpy(area + 8, rte_pktmbuf_mtod_offset(m, const void *, DP_HDRS_LEN), plen);
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
 * @req_num with @budget (what the frame's headers held besides the kept
 * bytes; a frame kept by reference goes as it was first made); false
 * if nothing is kept or no mbuf could be had (the caller's timer or the
 * peer's next duplicate tries again). */
bool
dp_kept_send(struct dp_rpc *a, const struct dp_kept *k, const uint8_t *area, uint8_t type,
	unsigned int to, uint16_t slot, uint32_t req_num, uint16_t budget)
{
	struct dp_hdr_fields f = {
		.type = type,
		.src = a->b.rank,
		.dst = (uint16_t)to,
		.slot = slot,
		.session = a->b.session,
		.dst_session = a->peers[to].session,
		.req_num = req_num,
		.budget = budget,
	};
	struct rte_mbuf *m = k->m;
	uint32_t v;
	uint8_t *frame;

	if (m != NULL) {
		/* One more for the PMD, paired with its free's decrement. */
		rte_mbuf_refcnt_update(m, 1);
	} else {
		if (k->len < 8 || (m = dp_frame_alloc(&a->b, k->len - 8u, &frame)) == NULL)
			return false;
		memcpy(&v, area, 4);
		f.handler_id = rte_be_to_cpu_32(v);
		memcpy(&v, area + 4, 4);
		v = rte_be_to_cpu_32(v);
		f.status = v & 0xffffu;
		if (budget == 0)
			f.budget = (uint16_t)(v >> 16);
		dp_frame_write(frame, a->peers[to].tmpl, &f, area + 8, k->len - 8u);
		dp_meta_plain(m);
	}
	dp_stage_tx(a, m);
	return true;
}

void
dp_kept_free_mbuf(struct dp_kept *k)
{
	dprpc_mbuf_free(k->m);
	k->m = NULL;
}

/* Tell the caller of slot @slot, request @req_num, from peer @src that
 * this agent holds it and expects to answer in @wait TSC cycles (a HELD):
 * its resend timer waits for that rather than for a round trip. */
static void
dp_srv_held(struct dp_rpc *a, unsigned int src, uint16_t slot, uint32_t req_num, uint64_t wait)
{
	dp_count(&a->b.st.holds_sent, 1);
	dp_send_slot_ctrl(a, src, slot, req_num, DP_CTRL_HELD, 0,
		dp_budget_encode(RTE_MAX(dp_tsc_to_us(&a->b, wait), (uint64_t)1)));
}

/* Decide on a request from a peer: true to run it; false if it was a
 * duplicate (answered again, told it is held, or dropped; @m is
 * consumed). */
static bool
dp_srv_check(struct dp_rpc *a, struct rte_mbuf *m, struct dp_srv_slot *e, const struct dp_parsed *p)
{
	int32_t d;

	if (e->state == DP_SRV_EMPTY)
		return true;
	/* Serial-number order: request numbers wrap. */
	d = (int32_t)(p->req_num - e->req_num);
	if (d > 0)
		return true;
	if (d == 0 && e->state == DP_SRV_RUNNING && e->st == NULL) {
		/* A copy of a request still queued or running: its caller's
		 * timer fired before the answer; tell it we have it. */
		dp_count(&a->b.st.drops[DPRPC_DROP_DUPLICATE], 1);
		dp_srv_held(a, p->src, p->slot, p->req_num, dp_pool_wait_tsc(a));
	} else if (d != 0 || e->state != DP_SRV_DONE ||
		   !dp_msg_resend_response(a, p->src, p->slot)) {
		dp_count(&a->b.st.drops[DPRPC_DROP_DUPLICATE], 1);
	}
	rte_pktmbuf_free(m);
	return false;
}

/* A new request from @peer, which holds its budget in responses it has
 * not acknowledged: not run, answered -ENOBUFS. */
static void __rte_cold
dp_srv_refuse_busy(
	struct dp_rpc *a, struct dp_peer *peer, struct dp_srv_slot *e, const struct dp_parsed *p)
{
	char msg[DP_KEEP_BYTES - 8]; /* what a kept answer holds */

	snprintf(msg, sizeof(msg),
		"worker %s refused the request: %" PRIu64 " bytes of messages held for %s",
		a->b.name, peer->srv_bytes, a->b.world.w[p->src].name);
	dp_srv_refuse(a, peer, e, p, -ENOBUFS, msg, 0);
}

/* A new request from @peer over a bound of what this agent holds (@what:
 * the caller's requests or all requests): not run, answered -EBUSY with a
 * retry-after hint. */
static void __rte_cold
dp_srv_refuse_overload(struct dp_rpc *a, struct dp_peer *peer, struct dp_srv_slot *e,
	const struct dp_parsed *p, const char *what)
{
	char msg[DP_KEEP_BYTES - 8]; /* what a kept answer holds */

	snprintf(msg, sizeof(msg), "worker %s is overloaded: too many requests held %s", a->b.name,
		what);
	dp_srv_refuse(a, peer, e, p, -EBUSY, msg, dp_retry_hint(a));
}

void __rte_hot
dp_dispatch_request(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_parsed *p)
{
	struct dp_srv_slot *e = NULL;
	struct dp_peer *peer = NULL;
	struct dp_srv_stream *st = NULL;
	struct dprpc_request *req;
	uint64_t wait;

	if (p->pkt_cnt > 1) {
		dp_msg_rx_request(a, m, p);
		return;
	}
	/* Calls to self never cross the port: nothing to de-duplicate.  The
	 * frame's session is the peer's current one (dp_check_session()). */
	if (p->src != a->b.rank) {
		peer = &a->peers[p->src];
		e = dp_srv_slot(peer, p->slot);
		if (unlikely(e == NULL)) {
			/* No memory for the slot's at-most-once state: as if
			 * lost (the caller's resend tries again), rather than
			 * run it unguarded or answer that it did not run (a
			 * later copy might). */
			dp_count(&a->b.st.drops[DPRPC_DROP_NO_MEMORY], 1);
			rte_pktmbuf_free(m);
			return;
		}
		if (!dp_srv_check(a, m, e, p))
			return;
		if (unlikely(dp_srv_over_budget(a, peer, e, 0))) {
			rte_pktmbuf_free(m);
			dp_srv_refuse_busy(a, peer, e, p);
			return;
		}
	}
	if (unlikely(peer != NULL && dp_srv_live(peer) >= a->peer_req_max)) {
		rte_pktmbuf_free(m);
		dp_count(&a->b.st.rejected_peer, 1);
		dp_srv_refuse_overload(a, peer, e, p, "for this caller");
		return;
	}
	/* A stream call (dp_stream.h): its state before anything else. */
	if (unlikely(p->flags & DP_REQ_STREAM) && e != NULL) {
		st = dp_stream_srv_new(a, p);
		if (st == NULL) {
			rte_pktmbuf_free(m);
			dp_count(&a->b.st.drops[DPRPC_DROP_NO_MEMORY], 1);
			dp_srv_refuse(a, peer, e, p, -ENOMEM, "no memory for the stream", 0);
			return;
		}
	}
	req = dp_req_new(a, p);
	if (req == NULL) {
		rte_pktmbuf_free(m);
		if (st != NULL) {
			free(st->q);
			free(st);
		}
		if (p->src == a->b.rank) {
			dp_self_fail(a, p->slot, p->req_num, -ENOBUFS,
				"no request object free for a call to self");
			return;
		}
		dp_count(&a->b.st.rejected_requests, 1);
		dp_srv_refuse_overload(a, peer, e, p, "in all");
		return;
	}
	req->m = m;
	if (e != NULL) {
		dp_msg_srv_clear(a, peer, e); /* the peer moved on */
		e->req_num = p->req_num;
		e->state = DP_SRV_RUNNING;
		e->req = req;
		e->st = st;
	}
	wait = dp_req_start(a, req);
	/* Queued behind work that outlasts half a timer period: the caller's
	 * resend timeout, a round trip plus at least one period, would fire
	 * first.  A stream's caller has its own timer. */
	if (wait > a->b.timer_period_tsc / 2 && e != NULL && st == NULL)
		dp_srv_held(a, p->src, p->slot, p->req_num, wait);
}

/* @e's request object if it still is the RUNNING request of @e (slot
 * @slot of peer @p): the object may have been answered, released and
 * reused since.  Only the poller writes a request's identity (dp_req_new()),
 * so reading it here races with nothing; a reused object names a newer
 * request or another slot. */
struct dprpc_request *
dp_srv_live_req(struct dp_rpc *a, unsigned int p, unsigned int slot, struct dp_srv_slot *e)
{
	struct dprpc_request *req = e->req;

	if (e->state != DP_SRV_RUNNING || req == NULL || req->src != p || req->slot != slot ||
		req->req_num != e->req_num || req->src_session != a->peers[p].session)
		return NULL;
	/* Relaxed: the object stays in req_pool's memory whatever its
	 * phase; a stale look only sets the flag of a request that ends
	 * anyway. */
	if ((atomic_load_explicit(&req->state, memory_order_relaxed) & DP_REQ_PHASE) != DP_REQ_LIVE)
		return NULL;
	return req;
}

/* Tell @req (held by whoever runs, queues or deferred it) that its caller
 * gave up; the flags it had before (DP_REQ_CANCELLED set: told already, a
 * CANCEL sent again; DP_REQ_STARTED clear: its handler never runs, see
 * dp_req_begin()). */
static uint8_t
dp_req_cancel(struct dprpc_request *req)
{
	/* Relaxed: a hint (struct dprpc_request); the order with a handler
	 * lcore's start is the read-modify-write's. */
	return atomic_fetch_or_explicit(&req->cancelled, DP_REQ_CANCELLED, memory_order_relaxed);
}

/* The CANCEL of request @p->req_num on slot @e, which holds that request
 * (d == 0): act on it once; a copy sent again finds it done.  What it
 * found, as every copy's answer says it (enum dp_srv_cancel). */
static uint8_t
dp_srv_cancel_held(
	struct dp_rpc *a, struct dp_peer *peer, struct dp_srv_slot *e, const struct dp_parsed *p)
{
	struct dprpc_request *req;
	char msg[DP_KEEP_BYTES - 8];
	uint32_t handler_id;
	uint8_t f;

	if (e->cancel != DP_SRV_CANCEL_NONE)
		return e->cancel; /* a copy */
	if (e->state == DP_SRV_RECEIVING) {
		/* Half received: never run.  What a late frame or resend
		 * finds instead is the cancellation. */
		handler_id = e->rx->handler_id;
		dp_msg_srv_clear(a, peer, e);
		e->state = DP_SRV_DONE;
		snprintf(msg, sizeof(msg), "cancelled by the caller");
		dp_srv_keep_error(peer, e, handler_id, -ECANCELED, msg);
		dp_count(&a->b.st.cancels_received, 1);
		dp_count(&a->b.st.requests_cancelled, 1);
		return e->cancel = DP_SRV_CANCEL_STOPPED;
	}
	req = dp_srv_live_req(a, p->src, p->slot, e);
	if (e->st != NULL && e->state == DP_SRV_RUNNING) {
		/* A stream: its frames are let go and nothing more is sent
		 * (dp_stream_stage()); ended already, the slot is done. */
		handler_id = e->st->handler_id;
		dp_stream_srv_free(a, peer, e);
		if (req == NULL) {
			e->state = DP_SRV_DONE;
			dp_srv_keep_error(
				peer, e, handler_id, -ECANCELED, "the stream was cancelled");
		}
	}
	if (req == NULL) {
		/* Answered already: too late, unless the answer was a refusal
		 * (it never ran).  Or released unrun (expired) and its answer
		 * not staged yet: said started, the safe side. */
		return e->cancel = e->state == DP_SRV_DONE && e->unrun ? DP_SRV_CANCEL_STOPPED
								       : DP_SRV_CANCEL_STARTED;
	}
	f = dp_req_cancel(req);
	if (!(f & DP_REQ_CANCELLED))
		dp_count(&a->b.st.cancels_received, 1);
	return e->cancel = (f & DP_REQ_STARTED) ? DP_SRV_CANCEL_STARTED : DP_SRV_CANCEL_STOPPED;
}

void
dp_srv_cancel(struct dp_rpc *a, const struct dp_parsed *p)
{
	struct dp_peer *peer = &a->peers[p->src];
	struct dp_srv_slot *e;
	uint8_t found;
	int32_t d;

	/* No server slot for a call to self (it is never sent). */
	if (p->src == a->b.rank)
		return;
	/* Addressed to another incarnation of ours: tell the caller which
	 * one we are; seeing our restart, it lets its calls go. */
	if (p->dst_session != a->b.session) {
		dp_count(&a->b.st.drops[DPRPC_DROP_WRONG_INCARNATION], 1);
		dp_nudge(a, p->src);
		return;
	}
	e = dp_srv_slot(peer, p->slot);
	if (unlikely(e == NULL)) {
		dp_count(&a->b.st.drops[DPRPC_DROP_NO_MEMORY], 1); /* resent, or stale */
		return;
	}
	/* Serial-number order: request numbers wrap. */
	d = (int32_t)(p->req_num - e->req_num);
	if (e->state == DP_SRV_EMPTY || d > 0) {
		/* Its request never came (lost, or still on its way): the
		 * slot takes the cancellation as its answer, so that a copy
		 * arriving late is answered with it, never run. */
		dp_msg_srv_clear(a, peer, e); /* the peer moved on */
		e->req_num = p->req_num;
		e->state = DP_SRV_DONE;
		dp_srv_keep_error(peer, e, 0, -ECANCELED, "cancelled by the caller");
		dp_count(&a->b.st.cancels_received, 1);
		found = e->cancel = DP_SRV_CANCEL_STOPPED;
	} else if (d < 0) {
		/* For a request before the slot's last: the caller moved on. */
		dp_count(&a->b.st.drops[DPRPC_DROP_DUPLICATE], 1);
		return;
	} else {
		found = dp_srv_cancel_held(a, peer, e, p);
	}
	/* Every copy is answered, the same: an earlier answer may have been
	 * lost. */
	if (p->flags & DP_CANCEL_ACK_WANTED)
		dp_send_slot_ctrl(a, p->src, p->slot, p->req_num, DP_CTRL_CANCEL_ACK,
			found == DP_SRV_CANCEL_STOPPED ? DP_CANCEL_STOPPED : 0, 0);
}

void
dp_srv_cancel_all(struct dp_rpc *a, unsigned int p)
{
	struct dp_peer *peer = &a->peers[p];
	struct dprpc_request *req;
	unsigned int i;

	if (dp_srv_live(peer) == 0)
		return;
	for (i = 0; i < peer->srv_cap; i++) {
		req = dp_srv_live_req(a, p, i, &peer->srv[i]);
		if (req != NULL)
			(void)dp_req_cancel(req); /* its caller is gone: nobody asks */
	}
}
