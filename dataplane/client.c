/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The client side of calls: session slots (one per call in flight towards
 * a peer), starting a call, resending it, and failing it on its timeout or
 * its peer's loss.  Poller only.  Matching a response (dp_handle_response())
 * and its round-trip sample (dp_rtt_sample()) are inline in dp_client.h:
 * the rx demux runs them for every response.
 *
 * The resend timeout (docs/reliability.md), per peer, adapts to the round
 * trip as TCP's does (RFC 6298): from the first transmission of a
 * single-frame request to its response, never a resent call's (Karn's
 * rule), srtt += (r - srtt) / 8, rttvar += (|srtt - r| - rttvar) / 4,
 * RTO = srtt + max(G, 4 rttvar), G being the period of the timer that
 * fires resends (100 us: a timeout is seen up to G late anyway), at most
 * rto_max.  Before the first sample the RTO is conf.retransmit_us.  A
 * resend doubles the peer's RTO until the next sample (dp_client_timers()),
 * so a path that became slower than the RTO (every call resent, so no
 * sample) is still learned.  With a fixed 1 ms timer a
 * call lost on a 56 us round trip (af_packet, window 32) held its slot
 * eighteen round trips: at 5% loss both ways the rate fell to 0.42 of the
 * loss-free one (perf/RESULTS.md, 2026-11-25).
 */
#include <errno.h>
#include <stdio.h>

#include <rte_mbuf.h>

#include "dp_agent.h"
#include "dp_client.h"
#include "dp_liveness.h"
#include "dp_msg.h"
#include "dp_server.h"
#include "dp_tx.h"
#include "fut_internal.h"
#include "dprpc_atomic.h"

void
dp_value_free_mbuf(void *m)
{
	rte_pktmbuf_free(m);
}

/* Release slot @s of @peer and return the future it held (agent's ref). */
struct dprpc_future *
dp_slot_release(struct dprpc_agent *a, struct dp_peer *peer, struct dp_slot *s)
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
	peer->free_slots[peer->nb_free++] = (uint16_t)(s - peer->slots);
	/* Pairs with nothing: the counter only bounds submissions. */
	atomic_fetch_sub_explicit(&peer->outstanding, 1, memory_order_relaxed);
	return fut;
}

/* A call submitted towards a peer declared down meanwhile (it was up when
 * the caller checked): fail it at once rather than send its request to a
 * peer whose calls were failed. */
static void
dp_call_refuse(struct dprpc_agent *a, struct rte_mbuf *m, unsigned int to)
{
	struct dp_call_meta *meta = dp_meta(m);
	char msg[DPRPC_ERRMSG_MAX];

	/* Relaxed: the poller's own write, read back. */
	bool left = dp_load_relaxed(&a->peers[to].state) == DPRPC_PEER_LEFT;

	snprintf(msg, sizeof(msg), left ? "worker %s left the world" : "worker %s is down",
		a->world.w[to].name);
	dp_txmsg_put(meta->tx);
	fut_fail_consume(meta->fut, left ? -ESHUTDOWN : -EHOSTDOWN, a->rank, msg);
	/* Relaxed: a bound only, pairs with nothing (as in dp_slot_release()). */
	atomic_fetch_sub_explicit(&a->peers[to].outstanding, 1, memory_order_relaxed);
	dp_count(&a->st.calls_failed, 1);
	rte_pktmbuf_free(m);
}

/* Give a submitted request its slot and request number, and send it,
 * addressed to the peer's incarnation (docs/reliability.md, at most once
 * across restarts).  While that incarnation is not known the request is
 * parked: kept unsent, and the peer pinged; dp_client_unpark() sends it
 * when the peer is first heard from. */
void
dp_start_call(struct dprpc_agent *a, struct rte_mbuf *m, uint64_t now)
{
	struct dp_wire_hdr *h = dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *));
	struct dp_call_meta *meta = dp_meta(m);
	unsigned int to = rte_be_to_cpu_16(h->dst_worker);
	struct dp_peer *peer = &a->peers[to];
	bool remote = to != a->rank;
	struct dp_slot *s;
	uint16_t idx;

	/* Relaxed: the poller's own write, read back. */
	if (unlikely(remote && dp_load_relaxed(&peer->state) >= DPRPC_PEER_DOWN)) {
		dp_call_refuse(a, m, to);
		return;
	}
	/* A free slot exists: outstanding <= max_outstanding was checked by
	 * the submitter, and each call in flight holds one slot. */
	idx = peer->free_slots[--peer->nb_free];
	if (unlikely(idx >= peer->slots_hi))
		peer->slots_hi = idx + 1u;
	s = &peer->slots[idx];
	s->fut = meta->fut;
	s->req_num = ++peer->next_req;
	s->deadline_tsc = meta->deadline_tsc;
	/* Release: pairs with the acquire load in dp_expire_stalled(), which
	 * then sees the future's expiry, set by its submitter before it was
	 * handed to us. */
	if (s->deadline_tsc != 0)
		atomic_store_explicit(&s->watch, s->fut, memory_order_release);
	meta->fut = NULL; /* started: a re-staged frame is a plain frame */
	s->rto_tsc = 0;	  /* 0: never resent */
	s->sent_tsc = 0;
	s->parked = remote && !peer->session_known;
	if (a->rto_tsc != 0 && remote) {
		s->rto_tsc = dp_load_relaxed(&peer->rto_tsc); /* poller-written */
		s->rtx_tsc = now + s->rto_tsc;
		if (meta->tx == NULL)
			s->sent_tsc = now;
	}
	dp_count(&a->st.calls_sent, 1);
	if (unlikely(meta->tx != NULL)) {
		struct dp_txmsg *t = meta->tx;

		rte_pktmbuf_free(m);
		t->f.slot = idx;
		t->f.req_num = s->req_num;
		t->f.dst_session = peer->session;
		dp_msg_start_call(a, s, t); /* held while parked */
		/* Relaxed: poller-written, read by the poller (dp_agent.h). */
		if (unlikely(s->parked))
			dp_hello(a, to, now, dp_load_relaxed(&peer->rto_tsc));
		return;
	}
	h->slot = rte_cpu_to_be_16(idx);
	h->req_num = rte_cpu_to_be_32(s->req_num);
	h->dst_session = rte_cpu_to_be_64(peer->session);
	if (unlikely(s->parked)) {
		/* Kept whatever retransmit_us says: it goes out later.  The
		 * frame itself is ours to free (a copy was kept, or one more
		 * reference). */
		dp_keep(&s->req, dp_keep_area(peer, idx, false), m);
		rte_pktmbuf_free(m);
		/* Relaxed: poller-written, read by the poller (dp_agent.h). */
		dp_hello(a, to, now, dp_load_relaxed(&peer->rto_tsc));
		return;
	}
	/* Keep the request to send it again if no response comes (the
	 * loopback never loses a frame: calls to self are not kept). */
	if (a->rto_tsc != 0 && remote)
		dp_keep(&s->req, dp_keep_area(peer, idx, false), m);
	dp_stage_tx(a, m);
}

void
dp_client_unpark(struct dprpc_agent *a, unsigned int p)
{
	struct dp_peer *peer = &a->peers[p];
	unsigned int i;

	if (peer->nb_free == a->max_outstanding)
		return;
	for (i = 0; i < peer->slots_hi; i++) {
		struct dp_slot *s = &peer->slots[i];

		if (s->fut == NULL || !s->parked)
			continue;
		s->parked = false;
		/* The first transmission is now: the resend timer and the
		 * round-trip sample start from it. */
		if (s->rto_tsc != 0) {
			s->rtx_tsc = a->now_tsc + s->rto_tsc;
			if (s->tx == NULL)
				s->sent_tsc = a->now_tsc;
		}
		if (s->tx != NULL) {
			s->tx->f.dst_session = peer->session;
			dp_msg_send_parked(a, s);
			continue;
		}
		/* A frame kept by reference was never staged: ours alone, its
		 * header may still be written. */
		if (s->req.m != NULL)
			dp_frame_hdr(rte_pktmbuf_mtod(s->req.m, uint8_t *))->dst_session =
				rte_cpu_to_be_64(peer->session);
		(void)dp_kept_send(a, &s->req, dp_keep_area(peer, i, false), DP_FRAME_REQUEST, p,
			(uint16_t)i, s->req_num);
		if (a->rto_tsc == 0)
			dp_kept_clear(&s->req); /* no resends: nothing to keep */
	}
}

/* The calls' timers, once per timer period (dp_run_timers()): resend what
 * is late, fail what timed out. */
unsigned int
dp_client_timers(struct dprpc_agent *a, uint64_t now)
{
	unsigned int p, i, n = 0;
	char msg[DPRPC_ERRMSG_MAX];

	for (p = 0; p < a->world.n; p++) {
		struct dp_peer *peer = &a->peers[p];

		if (peer->nb_free == a->max_outstanding)
			continue;
		for (i = 0; i < peer->slots_hi; i++) {
			struct dp_slot *s = &peer->slots[i];
			struct dprpc_future *fut;

			if (s->fut == NULL)
				continue;
			if (s->rto_tsc != 0 && s->rtx_tsc <= now &&
				(s->deadline_tsc == 0 || s->deadline_tsc > now)) {
				/* Resend, backing off: the frame, the response,
				 * or the handler is late; the server answers a
				 * duplicate from its kept response or drops it. */
				uint64_t prev = s->rto_tsc, peer_rto;

				s->rto_tsc = RTE_MIN(prev * 2, a->rto_max_tsc);
				s->rtx_tsc = now + s->rto_tsc;
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
					(void)dp_kept_send(a, &s->req, dp_keep_area(peer, i, false),
						DP_FRAME_REQUEST, p, (uint16_t)i, s->req_num);
					/* Karn: no sample from this call.  The
					 * peer's timeout doubles (RFC 6298 5.5)
					 * until the next sample, once per expiry
					 * of a timeout at least as long as it: the
					 * slots of one stall double it once, and a
					 * slot deep in its own backoff (a slow
					 * handler) does not lift it to its own.
					 * Only single-frame calls give samples, so
					 * only they back it off (a message's
					 * resends restart on every ACK instead). */
					s->sent_tsc = 0;
					/* Relaxed: poller-written, read by the poller. */
					peer_rto = dp_load_relaxed(&peer->rto_tsc);
					if (prev >= peer_rto)
						dp_store_relaxed(&peer->rto_tsc,
							RTE_MIN(peer_rto * 2, a->rto_max_tsc));
				}
				dp_count(&a->st.retransmits, 1);
				n++;
				continue;
			}
			if (s->deadline_tsc == 0 || s->deadline_tsc > now)
				continue;
			fut = dp_slot_release(a, peer, s);
			snprintf(msg, sizeof(msg), "call to %s timed out", a->world.w[p].name);
			fut_fail_consume(fut, -ETIMEDOUT, a->rank, msg);
			dp_count(&a->st.calls_failed, 1);
			dp_count(&a->st.calls_timed_out, 1);
			n++;
		}
	}
	return n;
}

void
dp_fail_peer_slots(struct dprpc_agent *a, unsigned int p, int code, const char *msg)
{
	unsigned int i;

	for (i = 0; i < a->peers[p].slots_hi; i++) {
		struct dp_slot *s = &a->peers[p].slots[i];
		struct dprpc_future *fut;

		if (s->fut == NULL)
			continue;
		fut = dp_slot_release(a, &a->peers[p], s);
		fut_fail_consume(fut, code, a->rank, msg);
		dp_count(&a->st.calls_failed, 1);
	}
	/* Their requests still queued must not go out after their failure. */
	dp_tx_purge(a, p);
}

void
dp_fail_all_slots(struct dprpc_agent *a, int code, const char *msg)
{
	unsigned int p;

	for (p = 0; p < a->world.n; p++)
		dp_fail_peer_slots(a, p, code, msg);
}
