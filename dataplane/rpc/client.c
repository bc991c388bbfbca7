/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The client side of calls: session slots (one per call in flight towards
 * a peer), starting a call, resending it, and failing it on its timeout or
 * its peer's loss.  Poller only.  Matching a response (dp_handle_response())
 * and its round-trip sample (dp_rtt_sample()) are inline in dp_client.h.
 * The resend timeout adapts per peer as TCP's does (RFC 6298, Karn's
 * rule): docs/reliability.md, "Resends and the adaptive RTO".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_mbuf.h>

#include "dp_rpc.h"
#include "dp_client.h"
#include "dp_handler.h"
#include "dp_liveness.h"
#include "dp_msg.h"
#include "dp_server.h"
#include "dp_stream.h"
#include "dp_submit.h"
#include "fut_internal.h"
#include "dprpc_atomic.h"
#include "dprpc_lcore.h"
#include <dprpc/dprpc_stats.h>

void __rte_hot
dp_value_free_mbuf(void *m)
{
	dprpc_mbuf_free(m);
}

/* Let go of what slot @s holds (its request, messages, stream) and
 * return the future it held (agent's ref); the slot itself stays taken. */
static inline struct dprpc_future *__rte_hot
dp_slot_empty(struct dp_rpc *a, struct dp_slot *s)
{
	struct dprpc_future *fut = s->fut;

	s->fut = NULL;
	/* Relaxed: a thread that still finds the future there takes its own
	 * reference and checks the future itself (fut_expire()). */
	atomic_store_explicit(&s->watch, NULL, memory_order_relaxed);
	s->parked = false;
	dp_kept_clear(&s->req);
	if (unlikely(s->tx != NULL || s->rx != NULL))
		dp_msg_slot_clear(a, s);
	if (unlikely(s->st != NULL))
		dp_stream_slot_clear(a, s);
	return fut;
}

/* Release slot @s of @peer and return the future it held (agent's ref). */
struct dprpc_future *__rte_hot
dp_slot_release(struct dp_rpc *a, struct dp_peer *peer, struct dp_slot *s)
{
	struct dprpc_future *fut = dp_slot_empty(a, s);

	s->cancel = false;
	peer->free_slots[peer->nb_free++] = (uint16_t)(s - peer->slots);
	/* Pairs with nothing: the counter only bounds submissions. */
	atomic_fetch_sub_explicit(&peer->outstanding, 1, memory_order_relaxed);
	return fut;
}

/* The budget field (dp_wire.h) of a request sent at @now for a call with
 * @deadline (0: none) towards @peer: the time left less the smoothed
 * round trip, so that the server's answer at its deadline (-ETIME) still
 * reaches us before our own timer fails the call with -ETIMEDOUT. */
static uint16_t
dp_call_budget(const struct dp_rpc *a, const struct dp_peer *peer, uint64_t deadline, uint64_t now)
{
	/* Relaxed: poller-written, read by the poller (dp_rpc.h). */
	uint64_t left, rtt = dp_load_relaxed(&peer->srtt_tsc);

	if (deadline == 0)
		return 0;
	left = deadline > now ? deadline - now : 0;
	left = left > rtt ? left - rtt : 0;
	return dp_budget_encode(dp_tsc_to_us_floor(&a->b, left));
}

/* Keep request @m of slot @s to send it again (dp_keep()).  A stream
 * call's by reference: a copy keeps no flags or credits, and a resend
 * without them would run as an ordinary call. */
static inline void
dp_keep_request(struct dp_peer *peer, struct dp_slot *s, struct rte_mbuf *m)
{
	if (unlikely(s->st != NULL)) {
		/* Ours; the PMD frees the other (as dp_keep()). */
		rte_mbuf_refcnt_update(m, 1);
		s->req.m = m;
		s->req.len = 0;
		return;
	}
	dp_keep(&s->req, dp_keep_area(peer, (unsigned int)(s - peer->slots), false), m);
}

/* A call submitted towards a peer declared down meanwhile (it was up when
 * the caller checked): fail it at once rather than send its request to a
 * peer whose calls were failed. */
static void
dp_call_refuse(struct dp_rpc *a, struct rte_mbuf *m, unsigned int to)
{
	struct dp_call_meta *meta = dp_meta(m);
	char msg[DPRPC_ERRMSG_MAX];

	/* Relaxed: the poller's own write, read back. */
	bool left = dp_load_relaxed(&a->peers[to].state) == DPRPC_PEER_LEFT;

	snprintf(msg, sizeof(msg), left ? "worker %s left the world" : "worker %s is down",
		a->b.world.w[to].name);
	dp_txmsg_put(meta->tx);
	dp_stream_put(dp_stream_of(m));
	fut_fail_consume(meta->fut, left ? -ESHUTDOWN : -EHOSTDOWN, a->b.rank, msg);
	/* Relaxed: a bound only, pairs with nothing (as in dp_slot_release()). */
	atomic_fetch_sub_explicit(&a->peers[to].outstanding, 1, memory_order_relaxed);
	dp_count(&a->b.st.calls_failed, 1);
	rte_pktmbuf_free(m);
}

/* Give the call submitted in @m (meta @meta) a free slot of @peer and its
 * request number, and address its request: slot, request number and the
 * peer's incarnation, in the frame or, for a multi-frame request, in its
 * message.  @parked: the request is not sent now, its timers start when
 * it is (dp_client_unpark()). */
static inline struct dp_slot *
dp_slot_start(struct dp_rpc *a, struct dp_peer *peer, struct rte_mbuf *m, struct dp_call_meta *meta,
	bool remote, bool parked, uint64_t now)
{
	struct dp_wire_hdr *h = dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *));
	struct dp_slot *s;
	uint16_t idx;

	/* A free slot exists: outstanding <= max_outstanding was checked by
	 * the submitter, and each call in flight holds one slot. */
	idx = peer->free_slots[--peer->nb_free];
	if (unlikely(idx >= peer->slots_hi))
		peer->slots_hi = idx + 1u;
	s = &peer->slots[idx];
	s->fut = meta->fut;
	s->st = dp_stream_of(m); /* a stream call: the frame's reference */
	s->req_num = ++peer->next_req;
	s->parked = parked;
	s->held = false;
	s->deadline_tsc = meta->deadline_tsc;
	/* Release: pairs with the acquire load in dp_expire_stalled(), which
	 * then sees the future's expiry, set by its submitter before it was
	 * handed to us. */
	if (s->deadline_tsc != 0)
		atomic_store_explicit(&s->watch, s->fut, memory_order_release);
	meta->fut = NULL; /* started: a re-staged frame is a plain frame */
	s->rto_tsc = 0;	  /* 0: never resent */
	s->sent_tsc = 0;
	if (a->rto_tsc != 0 && remote) {
		s->rto_tsc = dp_load_relaxed(&peer->rto_tsc); /* poller-written */
		s->rtx_tsc = now + s->rto_tsc;
		if (meta->tx == NULL)
			s->sent_tsc = now;
	}
	dp_count(&a->b.st.calls_sent, 1);
	if (unlikely(meta->tx != NULL)) {
		meta->tx->f.slot = idx;
		meta->tx->f.req_num = s->req_num;
		meta->tx->f.dst_session = peer->session;
		meta->tx->f.budget = dp_call_budget(a, peer, s->deadline_tsc, now);
	} else {
		h->slot = rte_cpu_to_be_16(idx);
		h->req_num = rte_cpu_to_be_32(s->req_num);
		h->dst_session = rte_cpu_to_be_64(peer->session);
		h->budget = rte_cpu_to_be_16(dp_call_budget(a, peer, s->deadline_tsc, now));
	}
	return s;
}

/* dp_start_call() of a call cancelled before it started, or towards a
 * remote peer that is down, or whose incarnation is not known yet: the
 * call is failed -ECANCELED, refused, or parked (its request kept unsent,
 * and the peer pinged); dp_client_unpark() sends it when the peer is first
 * heard from.  Apart: the common path stays small. */
static void __rte_noinline __rte_cold
dp_start_call_unready(
	struct dp_rpc *a, struct rte_mbuf *m, struct dp_peer *peer, unsigned int to, uint64_t now)
{
	struct dp_call_meta *meta = dp_meta(m);
	struct dp_txmsg *t = meta->tx;
	struct dp_slot *s;

	/* Cancelled before it started: never sent. */
	if (fut_cancelled(meta->fut)) {
		dp_txmsg_put(t);
		dp_stream_put(dp_stream_of(m));
		fut_set_cancel_outcome(meta->fut, DPRPC_CANCEL_STOPPED);
		(void)fut_fail_consume(meta->fut, -ECANCELED, a->b.rank, NULL); /* drops our ref */
		/* Relaxed: a bound only, pairs with nothing. */
		atomic_fetch_sub_explicit(&peer->outstanding, 1, memory_order_relaxed);
		dp_count(&a->b.st.calls_failed, 1);
		dp_count(&a->b.st.calls_cancelled, 1);
		rte_pktmbuf_free(m);
		return;
	}
	/* Relaxed: the poller's own write, read back. */
	if (dp_load_relaxed(&peer->state) >= DPRPC_PEER_DOWN) {
		dp_call_refuse(a, m, to); /* down, or left the world */
		return;
	}
	s = dp_slot_start(a, peer, m, meta, true, true, now);
	if (t != NULL) {
		rte_pktmbuf_free(m);
		dp_msg_start_call(a, s, t); /* held while parked */
	} else {
		/* Kept whatever retransmit_us says: it goes out later.  The
		 * frame itself is ours to free (a copy was kept, or one more
		 * reference). */
		dp_keep_request(peer, s, m);
		rte_pktmbuf_free(m);
	}
	/* Relaxed: poller-written, read by the poller (dp_rpc.h). */
	dp_hello(a, to, now, dp_load_relaxed(&peer->rto_tsc));
}

/* Give a submitted request its slot and request number, and send it,
 * addressed to the peer's incarnation (docs/reliability.md, at most once
 * across restarts).  Towards a peer that is down or not heard from yet:
 * dp_start_call_unready(). */
void __rte_hot
dp_start_call(struct dp_rpc *a, struct rte_mbuf *m, uint64_t now, bool fresh)
{
	struct dp_wire_hdr *h = dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *));
	struct dp_call_meta *meta = dp_meta(m);
	unsigned int to = rte_be_to_cpu_16(h->dst_worker);
	struct dp_peer *peer = &a->peers[to];
	bool remote = to != a->b.rank;
	struct dp_slot *s;

	if (unlikely((remote && peer->tx_session == 0) || (!fresh && fut_cancelled(meta->fut)))) {
		dp_start_call_unready(a, m, peer, to, now);
		return;
	}
	s = dp_slot_start(a, peer, m, meta, remote, false, now);
	if (unlikely(meta->tx != NULL)) {
		struct dp_txmsg *t = meta->tx;

		rte_pktmbuf_free(m);
		dp_msg_start_call(a, s, t);
		return;
	}
	/* Keep the request to send it again if no response comes (the
	 * loopback never loses a frame: calls to self are not kept). */
	if (a->rto_tsc != 0 && remote)
		dp_keep_request(peer, s, m);
	dp_stage_tx(a, m);
}

void
dp_client_unpark(struct dp_rpc *a, unsigned int p)
{
	struct dp_peer *peer = &a->peers[p];
	unsigned int i;
	uint16_t budget;

	if (peer->nb_free == a->max_outstanding)
		return;
	for (i = 0; i < peer->slots_hi; i++) {
		struct dp_slot *s = &peer->slots[i];

		if (s->fut == NULL || !s->parked)
			continue;
		if (unlikely(fut_cancelled(s->fut))) {
			dp_slot_cancelled(a, p, i); /* never sent */
			continue;
		}
		s->parked = false;
		/* The first transmission is now: the resend timer and the
		 * round-trip sample start from it. */
		if (s->rto_tsc != 0) {
			s->rtx_tsc = a->b.now_tsc + s->rto_tsc;
			if (s->tx == NULL)
				s->sent_tsc = a->b.now_tsc;
		}
		if (s->tx != NULL) {
			s->tx->f.dst_session = peer->session;
			dp_msg_send_parked(a, s);
			continue;
		}
		budget = dp_call_budget(a, peer, s->deadline_tsc, a->b.now_tsc);
		/* A frame kept by reference was never staged: ours alone, its
		 * header may still be written. */
		if (s->req.m != NULL) {
			struct dp_wire_hdr *h = dp_frame_hdr(rte_pktmbuf_mtod(s->req.m, uint8_t *));

			h->dst_session = rte_cpu_to_be_64(peer->session);
			h->budget = rte_cpu_to_be_16(budget);
		}
		(void)dp_kept_send(a, &s->req, dp_keep_area(peer, i, false), DP_FRAME_REQUEST, p,
			(uint16_t)i, s->req_num, budget);
		if (a->rto_tsc == 0)
			dp_kept_clear(&s->req); /* no resends: nothing to keep */
	}
}

/* Slot @i of peer @p holds a call its caller cancelled: fail its future
 * and, if the request went out, send the server a CANCEL.  With resends on
 * the slot is held until the server answers, so it carries no new call
 * before the server let go of the old one (docs/serving.md, "Cancellation"). */
void
dp_slot_cancelled(struct dp_rpc *a, unsigned int p, unsigned int i)
{
	struct dp_peer *peer = &a->peers[p];
	struct dp_slot *s = &peer->slots[i];
	bool sent = !s->parked && p != a->b.rank;
	bool hold = sent && s->rto_tsc != 0;
	struct dprpc_future *fut;

	if (hold) {
		fut = dp_slot_empty(a, s);
		s->cancel = true;
		s->held = false;
		/* The agent's reference, handed over to the slot until the
		 * server answers. */
		dprpc_future_get(fut);
		s->cancel_fut = fut;
		/* The peer's timeout, not the call's: a call resent for long
		 * (a slow handler) has backed off far beyond a round trip,
		 * and the peer's measures the path alone (dp_rtt_of()). */
		s->rto_tsc = dp_load_relaxed(&peer->rto_tsc); /* poller-written */
		s->rtx_tsc = a->b.now_tsc + s->rto_tsc;
	} else {
		fut = dp_slot_release(a, peer, s);
		/* Never sent: it never runs.  Sent once with no answer to
		 * come, or to ourselves (not cancelled at the handler): not
		 * known. */
		fut_set_cancel_outcome(
			fut, sent || p == a->b.rank ? DPRPC_CANCEL_UNKNOWN : DPRPC_CANCEL_STOPPED);
	}
	(void)fut_fail_consume(fut, -ECANCELED, a->b.rank, NULL);
	dp_count(&a->b.st.calls_failed, 1);
	dp_count(&a->b.st.calls_cancelled, 1);
	if (sent)
		dp_send_slot_ctrl(a, p, (uint16_t)i, s->req_num, DP_CTRL_CANCEL,
			hold ? DP_CANCEL_ACK_WANTED : 0, 0);
}

void
dp_slot_cancel_done(struct dp_rpc *a, struct dp_peer *peer, struct dp_slot *s, int outcome)
{
	struct dprpc_future *fut = s->cancel_fut;

	s->sent_tsc = 0;		   /* the union's other side */
	(void)dp_slot_release(a, peer, s); /* holds no call's future */
	if (fut != NULL) {
		fut_set_cancel_outcome(fut, outcome);
		dprpc_future_put(fut);
	}
}

void
dp_client_cancel_acked(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_parsed *p)
{
	struct dp_peer *peer = &a->peers[p->src];
	struct dp_slot *s;

	if (p->src == a->b.rank || p->dst_session != a->b.session ||
		p->slot >= a->max_outstanding || !(s = &peer->slots[p->slot])->cancel ||
		s->req_num != p->req_num) {
		/* A second answer (the CANCEL was resent), or a late one. */
		dp_drop_frame(&a->b, m, DPRPC_DROP_STALE);
		return;
	}
	dp_peer_answered(a, peer, p->req_num);
	dp_slot_cancel_done(a, peer, s,
		(p->flags & DP_CANCEL_STOPPED) ? DPRPC_CANCEL_STOPPED : DPRPC_CANCEL_STARTED);
	rte_pktmbuf_free(m);
}

void
dp_client_held(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_parsed *p)
{
	struct dp_peer *peer = &a->peers[p->src];
	uint64_t wait, rto;
	struct dp_slot *s;

	rte_pktmbuf_free(m);
	dp_count(&a->b.st.holds_received, 1);
	if (p->src != a->b.rank)
		dp_peer_answered(a, peer, p->req_num);
	/* One for a call answered since (each copy of a request a server
	 * holds is answered) is no drop: it only comes late. */
	if (p->src == a->b.rank || p->dst_session != a->b.session ||
		p->slot >= a->max_outstanding || (s = &peer->slots[p->slot])->fut == NULL ||
		s->req_num != p->req_num || s->parked || s->rto_tsc == 0)
		return;
	/* Sent when the request was taken: a round trip of the path alone,
	 * from its first sending (Karn). */
	if (s->sent_tsc != 0 && (int64_t)(a->b.now_tsc - s->sent_tsc) >= 0)
		dp_rtt_sample(a, peer, a->b.now_tsc - s->sent_tsc);
	/* Resend only if no answer came well after the server expects to
	 * send it: twice its estimate, plus a round trip's timeout. */
	rto = dp_load_relaxed(&peer->rto_tsc); /* poller-written */
	wait = 2 * dp_us_to_tsc(&a->b, dp_budget_decode(p->budget)) + rto;
	s->held = true;
	s->rtx_tsc = a->b.now_tsc + RTE_MAX(wait, s->rto_tsc);
}

/* Slot @i of peer @p waits for the answer to its CANCEL: send it again,
 * backing off as a call's resend does. */
static void
dp_cancel_resend(struct dp_rpc *a, unsigned int p, unsigned int i, uint64_t now)
{
	struct dp_slot *s = &a->peers[p].slots[i];

	s->rto_tsc = RTE_MIN(s->rto_tsc * 2, a->rto_max_tsc);
	s->rtx_tsc = now + s->rto_tsc;
	dp_count(&a->b.st.cancels_resent, 1);
	dp_send_slot_ctrl(a, p, (uint16_t)i, s->req_num, DP_CTRL_CANCEL, DP_CANCEL_ACK_WANTED, 0);
}

void
dp_client_cancel_kick(void *arg)
{
	struct dp_rpc *a = arg;

	/* Release: the cancelled state, stored before, is seen by the
	 * poller that exchanges the flag. */
	atomic_store_explicit(&a->cancel_kick, true, memory_order_release);
}

unsigned int
dp_client_cancels(struct dp_rpc *a)
{
	unsigned int p, i, n = 0;

	for (p = 0; p < a->b.world.n; p++) {
		struct dp_peer *peer = &a->peers[p];

		if (peer->nb_free == a->max_outstanding)
			continue;
		for (i = 0; i < peer->slots_hi; i++)
			if (peer->slots[i].fut != NULL &&
				unlikely(fut_cancelled(peer->slots[i].fut))) {
				dp_slot_cancelled(a, p, i);
				n++;
			}
	}
	return n;
}

/* Whether slot @s of @peer, its resend timeout passed at @now, shows a
 * sign of loss: the peer answered a call made after it, or nothing for a
 * resend timeout (one probe per timeout, not one per call: a busy server
 * answers in order what it took; docs/reliability.md). */
static bool
dp_slot_lost(struct dp_rpc *a, struct dp_peer *peer, const struct dp_slot *s, uint64_t now)
{
	uint64_t rto = dp_load_relaxed(&peer->rto_tsc); /* poller-written */

	if ((int32_t)(peer->ans_req - s->req_num) > 0)
		return true;
	if (now - peer->ans_tsc < rto || now - peer->probe_tsc < rto)
		return false;
	peer->probe_tsc = now;
	return true;
}

/* The calls' timers, once per timer period (dp_run_timers()): resend what
 * is late, fail what timed out, free what was cancelled. */
unsigned int
dp_client_timers(struct dp_rpc *a, uint64_t now)
{
	unsigned int p, i, n = 0;
	char msg[DPRPC_ERRMSG_MAX];

	for (p = 0; p < a->b.world.n; p++) {
		struct dp_peer *peer = &a->peers[p];

		if (peer->nb_free == a->max_outstanding)
			continue;
		for (i = 0; i < peer->slots_hi; i++) {
			struct dp_slot *s = &peer->slots[i];
			struct dprpc_future *fut;

			if (s->fut == NULL) {
				if (unlikely(s->cancel) && s->rtx_tsc <= now) {
					dp_cancel_resend(a, p, i, now);
					n++;
				}
				continue;
			}
			if (unlikely(fut_cancelled(s->fut))) {
				dp_slot_cancelled(a, p, i);
				n++;
				continue;
			}
			if (unlikely(s->st != NULL) && dp_stream_timer(a, p, i, now)) {
				n++;
				continue;
			}
			if (s->rto_tsc != 0 && s->rtx_tsc <= now &&
				(s->deadline_tsc == 0 || s->deadline_tsc > now)) {
				/* Resend, backing off: the frame, the response,
				 * or the handler is late; the server answers a
				 * duplicate from its kept response or drops it. */
				uint64_t prev = s->rto_tsc, peer_rto;
				bool sent = true, held = s->held;

				/* No sign of loss yet: the peer answers in its
				 * time what it took before.  Asked again next
				 * tick, no back-off.  A probe after a HELD, a
				 * parked call's ping and a message's frames go
				 * on their own timers. */
				if (!held && !s->parked && s->tx == NULL && s->rx == NULL &&
					!dp_slot_lost(a, peer, s, now))
					continue;

				s->rto_tsc = RTE_MIN(prev * 2, a->rto_max_tsc);
				s->rtx_tsc = now + s->rto_tsc;
				s->held = false;
				/* Lost: maybe to a MAC the peer no longer has. */
				if (!held)
					dp_arp_doubt(&a->b, a->b.world.addrs[p].ip);
				if (unlikely(s->parked)) {
					/* Still nothing heard from the peer: ask
					 * again for its incarnation (the slots
					 * parked on it ask once per interval). */
					dp_hello(a, p, now, prev);
					n++;
					continue;
				}
				if (unlikely(s->tx != NULL || s->rx != NULL)) {
					dp_msg_resend(a, p, s);
				} else {
					/* The port pushes back, tx_buf full: the
					 * resend would only wait on tx_ring behind
					 * the frames already there (and take the
					 * room of calls not started yet).  Not
					 * sent, as if lost: the backoff goes on. */
					if (unlikely(!dp_tx_room(&a->b, p))) {
						dp_count(&a->b.st.tx_dropped, 1);
						sent = false;
					} else {
						(void)dp_kept_send(a, &s->req,
							dp_keep_area(peer, i, false),
							DP_FRAME_REQUEST, p, (uint16_t)i,
							s->req_num,
							dp_call_budget(
								a, peer, s->deadline_tsc, now));
					}
					/* Karn: no sample from this call.  The
					 * peer's timeout doubles (RFC 6298 5.5)
					 * once per expiry of a timeout at least
					 * as long as it, single-frame calls only:
					 * a stall's slots double it once. */
					s->sent_tsc = 0;
					/* Relaxed: poller-written, read by the poller. */
					peer_rto = dp_load_relaxed(&peer->rto_tsc);
					/* A probe of a request the server said it
					 * holds is no sign of a slow path. */
					if (prev >= peer_rto && !held)
						dp_store_relaxed(&peer->rto_tsc,
							RTE_MIN(peer_rto * 2, a->rto_max_tsc));
				}
				if (sent)
					dp_count(&a->b.st.retransmits, 1);
				n++;
				continue;
			}
			if (s->deadline_tsc == 0 || s->deadline_tsc > now)
				continue;
			fut = dp_slot_release(a, peer, s);
			snprintf(msg, sizeof(msg), "call to %s timed out", a->b.world.w[p].name);
			fut_fail_consume(fut, -ETIMEDOUT, a->b.rank, msg);
			dp_count(&a->b.st.calls_failed, 1);
			dp_count(&a->b.st.calls_timed_out, 1);
			n++;
		}
	}
	return n;
}

void
dp_fail_peer_slots(struct dp_rpc *a, unsigned int p, int code, const char *msg)
{
	unsigned int i;

	for (i = 0; i < a->peers[p].slots_hi; i++) {
		struct dp_slot *s = &a->peers[p].slots[i];
		struct dprpc_future *fut;

		if (s->fut == NULL) {
			if (s->cancel) /* its server is gone: no answer comes */
				dp_slot_cancel_done(a, &a->peers[p], s, DPRPC_CANCEL_UNKNOWN);
			continue;
		}
		fut = dp_slot_release(a, &a->peers[p], s);
		fut_fail_consume(fut, code, a->b.rank, msg);
		dp_count(&a->b.st.calls_failed, 1);
	}
	/* Their requests still queued must not go out after their failure. */
	dp_tx_purge(a, p);
}

void
dp_fail_all_slots(struct dp_rpc *a, int code, const char *msg)
{
	unsigned int p;

	for (p = 0; p < a->b.world.n; p++)
		dp_fail_peer_slots(a, p, code, msg);
}

void
dp_unknown_handler_msg(const struct dp_rpc *a, unsigned int src, uint32_t id, char *msg, size_t cap)
{
	static const char server[] = "no handler with id "; /* dp_req_start()'s */
	char name[DPRPC_HANDLER_NAME_MAX];

	if (strncmp(msg, server, sizeof(server) - 1) != 0 ||
		!dp_handler_name(id, name, sizeof(name)))
		return;
	snprintf(msg, cap, "no handler \"%s\" (id 0x%08x) on worker %s", name, id,
		src < a->b.world.n ? a->b.world.w[src].name : "?");
}
