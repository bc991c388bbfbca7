/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The poll loop: rx burst -> parse -> complete responses / dispatch
 * requests -> drain submitted calls and replies -> timers -> tx flush.
 *
 * Everything here runs on the poller (the holder of agent->polling), so the
 * session slots, tx_buf and the port queues need no synchronisation of
 * their own.  Nothing here allocates, locks or logs per frame.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_pause.h>

#include "dp_agent.h"
#include "dp_rcu.h"
#include "fut_internal.h"
#include "dprpc_atomic.h"

static void dp_send_control(struct dprpc_agent *a, unsigned int to, enum dp_ctrl_op op);
static void dp_peer_heard(struct dprpc_agent *a, unsigned int p);
static void dp_liveness(struct dprpc_agent *a, uint64_t now);
static bool dp_check_session(struct dprpc_agent *a, const struct dp_parsed *p);

__thread struct dprpc_agent *dp_tls_poller __attribute__((tls_model("initial-exec")));

static void
dp_value_free_mbuf(void *m)
{
	rte_pktmbuf_free(m);
}

static void
dp_drop_frame(struct dprpc_agent *a, struct rte_mbuf *m, enum dprpc_drop_reason why)
{
	dp_count(&a->st.drops[why], 1);
	rte_pktmbuf_free(m);
}

/*
 * The resend timeout (DESIGN.md section 5), per peer, adapts to the round
 * trip as TCP's does (RFC 6298): from the first transmission of a
 * single-frame request to its response, never a resent call's (Karn's
 * rule), srtt += (r - srtt) / 8, rttvar += (|srtt - r| - rttvar) / 4,
 * RTO = srtt + max(G, 4 rttvar), G being the period of the timer that
 * fires resends (100 us: a timeout is seen up to G late anyway), at most
 * rto_max.  Before the first sample the RTO is conf.retransmit_us.  A
 * resend doubles the peer's RTO until the next sample (dp_run_timers()),
 * so a path that became slower than the RTO (every call resent, so no
 * sample) is still learned.  With a fixed 1 ms timer a
 * call lost on a 56 us round trip (af_packet, window 32) held its slot
 * eighteen round trips: at 5% loss both ways the rate fell to 0.42 of the
 * loss-free one (perf/RESULTS.md, 2026-11-25).
 */
static inline void
dp_rtt_sample(struct dprpc_agent *a, struct dp_peer *peer, uint64_t r)
{
	/* Relaxed: only the poller writes them (dp_agent.h). */
	uint64_t srtt = dp_load_relaxed(&peer->srtt_tsc);
	uint64_t d, rto;

	if (srtt == 0) {
		srtt = r > 0 ? r : 1;
		peer->rttvar_tsc = r / 2;
	} else {
		d = r > srtt ? r - srtt : srtt - r;
		peer->rttvar_tsc = (3 * peer->rttvar_tsc + d) / 4;
		srtt = (7 * srtt + r) / 8;
	}
	dp_store_relaxed(&peer->srtt_tsc, srtt);
	rto = srtt + RTE_MAX(a->timer_period_tsc, 4 * peer->rttvar_tsc);
	dp_store_relaxed(&peer->rto_tsc, RTE_MIN(rto, a->rto_max_tsc));
}

/* Release slot @s of @peer and return the future it held (agent's ref). */
struct dprpc_future *
dp_slot_release(struct dprpc_agent *a, struct dp_peer *peer, struct dp_slot *s)
{
	struct dprpc_future *fut = s->fut;

	s->fut = NULL;
	dp_kept_clear(&s->req);
	if (unlikely(s->tx != NULL || s->rx != NULL))
		dp_msg_slot_clear(a, s);
	peer->free_slots[peer->nb_free++] = (uint16_t)(s - peer->slots);
	/* Pairs with nothing: the counter only bounds submissions. */
	atomic_fetch_sub_explicit(&peer->outstanding, 1, memory_order_relaxed);
	return fut;
}

static void
dp_handle_response(struct dprpc_agent *a, struct rte_mbuf *m, const struct dp_parsed *p)
{
	struct dp_peer *peer = &a->peers[p->src];
	struct dprpc_future *fut;
	struct dp_slot *s;
	char msg[DPRPC_ERRMSG_MAX];
	uint32_t n;

	if (p->slot >= a->max_outstanding) {
		dp_drop_frame(a, m, DPRPC_DROP_STALE);
		return;
	}
	s = &peer->slots[p->slot];
	if (s->fut == NULL || s->req_num != p->req_num) {
		dp_drop_frame(a, m, DPRPC_DROP_STALE);
		return;
	}
	if (p->pkt_cnt > 1) {
		dp_msg_rx_response(a, s, m, p);
		return;
	}
	/* now_tsc, read as this poll began, is after the request went
	 * (sent_tsc: in an earlier poll, or by a caller before it). */
	if (s->sent_tsc != 0 && (int64_t)(a->now_tsc - s->sent_tsc) >= 0)
		dp_rtt_sample(a, peer, a->now_tsc - s->sent_tsc);
	fut = dp_slot_release(a, peer, s);
	if (p->status == 0) {
		/* Zero copy: the future owns the mbuf from here on.  The
		 * agent's reference is dropped by the completion itself. */
		if (fut_complete_consume(fut, p->payload_len ? p->payload : NULL, p->payload_len,
			    dp_value_free_mbuf, m) != 0)
			rte_pktmbuf_free(m);
		dp_count(&a->st.calls_ok, 1);
	} else {
		n = RTE_MIN(p->payload_len, (uint32_t)sizeof(msg) - 1);
		memcpy(msg, p->payload, n);
		msg[n] = '\0';
		rte_pktmbuf_free(m);
		fut_fail_consume(fut, -(int)RTE_MIN(p->status, (uint32_t)INT32_MAX), p->src, msg);
		dp_count(&a->st.calls_failed, 1);
	}
}

/*
 * Payloads are handed out DPRPC_PAYLOAD_ALIGN-aligned.  In a frame the
 * payload follows 82 bytes of headers, which the parser has already read
 * into struct dp_parsed, so the payload slides back over them to the
 * boundary: at most 7 bytes, the only move the payload makes on receive.
 */
static inline void
dp_align_payload(struct dp_parsed *p)
{
	uintptr_t mis = (uintptr_t)p->payload & (DPRPC_PAYLOAD_ALIGN - 1);
	uint8_t *to;

	if (mis == 0 || p->payload_len == 0)
		return;
	to = (uint8_t *)(uintptr_t)p->payload - mis;
	memmove(to, p->payload, p->payload_len);
	p->payload = to;
	p->hdr = NULL; /* overwritten */
}

/* A frame in several segments (net_ring passes on the chains a
 * multi-frame message is sent as) or shared with its sender (net_ring
 * hands over the very mbuf, which a server keeps as its stored response):
 * the payload may be moved in place, so work on a private, contiguous
 * copy.  NULL if none can be had (counted). */
static struct rte_mbuf *
dp_rx_private(struct dprpc_agent *a, struct rte_mbuf *m)
{
	struct rte_mbuf *copy;
	const void *from;
	uint8_t *data;

	if (m->pkt_len > (uint32_t)rte_pktmbuf_data_room_size(a->mp) - RTE_PKTMBUF_HEADROOM) {
		dp_drop_frame(a, m, DPRPC_DROP_UNSUPPORTED);
		return NULL;
	}
	copy = rte_pktmbuf_alloc(a->mp);
	if (copy != NULL) {
		data = (uint8_t *)rte_pktmbuf_append(copy, (uint16_t)m->pkt_len);
		from = rte_pktmbuf_read(m, 0, m->pkt_len, data); /* copies if chained */
		if (from != data)
			memcpy(data, from, m->pkt_len);
	}
	rte_pktmbuf_free(m);
	if (copy == NULL)
		dp_count(&a->st.drops[DPRPC_DROP_NO_REQUEST], 1);
	return copy;
}

void
dp_rx_frame(struct dprpc_agent *a, struct rte_mbuf *m)
{
	enum dprpc_drop_reason why;
	struct dp_parsed p;

	if (unlikely(m->nb_segs != 1 || rte_mbuf_refcnt_read(m) > 1)) {
		m = dp_rx_private(a, m);
		if (m == NULL)
			return;
	}
	if (!dp_frame_parse(
		    rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, &a->rx_ctx, &p, &why)) {
		dp_drop_frame(a, m, why);
		return;
	}
	if (p.src != a->rank) {
		if (!dp_check_session(a, &p)) {
			dp_drop_frame(a, m, DPRPC_DROP_OLD_SESSION);
			return;
		}
		dp_peer_heard(a, p.src);
	}
	if (unlikely(p.type == DP_FRAME_CONTROL)) {
		if (p.handler_id == DP_CTRL_PING)
			dp_send_control(a, p.src, DP_CTRL_PONG);
		rte_pktmbuf_free(m);
		return;
	}
	if (unlikely(p.type == DP_FRAME_ACK)) {
		dp_msg_rx_ack(a, m, &p);
		return;
	}
	/* A message's frames are copied out: no need to align them. */
	if (p.pkt_cnt == 1)
		dp_align_payload(&p);
	if (p.type == DP_FRAME_RESPONSE)
		dp_handle_response(a, m, &p);
	else
		dp_dispatch_request(a, m, &p);
}

/* A frame addressed to ourselves (a call to self, or its reply): deliver it
 * as if received, without the wire. */
static void
dp_loopback(struct dprpc_agent *a, struct rte_mbuf *m)
{
	dp_rx_frame(a, m);
}

unsigned int
dp_tx_flush(struct dprpc_agent *a)
{
	uint16_t sent;

	if (a->tx_n == 0)
		return 0;
	sent = rte_eth_tx_burst(a->port_id, a->txq, a->tx_buf, (uint16_t)a->tx_n);
	if (sent < a->tx_n) {
		memmove(a->tx_buf, a->tx_buf + sent, (a->tx_n - sent) * sizeof(a->tx_buf[0]));
		dp_count(&a->st.tx_retries, 1);
	}
	a->tx_n -= sent;
	dp_counter_add(&a->st.tx_frames, sent);
	return sent;
}

static void dp_stage_port(struct dprpc_agent *a, struct rte_mbuf *m);

void
dp_stage_tx(struct dprpc_agent *a, struct rte_mbuf *m)
{
	const struct dp_wire_hdr *h = dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *));

	if (unlikely(dp_meta(m)->tx != NULL)) {
		/* A multi-frame response handed over by dp_respond(). */
		struct dp_txmsg *t = dp_meta(m)->tx;

		rte_pktmbuf_free(m);
		dp_msg_start_response(a, t);
		return;
	}
	if (rte_be_to_cpu_16(h->dst_worker) == a->rank) {
		dp_loopback(a, m);
		return;
	}
	if (h->type == DP_FRAME_RESPONSE)
		dp_keep_response(a, m, h);
	dp_stage_out(a, m);
}

/* A frame for the wire: through the transmit faults to the port. */
void
dp_stage_out(struct dprpc_agent *a, struct rte_mbuf *m)
{
	struct rte_mbuf *out[2];
	unsigned int i, n;

	if (likely(!a->ftx.on)) {
		dp_stage_port(a, m);
		return;
	}
	n = dp_fault_one(&a->ftx, m, out, rte_rdtsc());
	for (i = 0; i < n; i++)
		dp_stage_port(a, out[i]);
}

/* Stage a frame for the port (faults already applied). */
static void
dp_stage_port(struct dprpc_agent *a, struct rte_mbuf *m)
{
	if (unlikely(a->tx_n == DP_TX_BUF))
		dp_tx_flush(a);
	if (likely(a->tx_n < DP_TX_BUF)) {
		a->tx_buf[a->tx_n++] = m;
		if (a->tx_n >= DP_TX_FLUSH_AT)
			dp_tx_flush(a);
		return;
	}
	/* The port pushes back and tx_buf is full (the rx budget and the ring
	 * drain leave room for everything they stage, so only frames staged
	 * by callbacks and handlers get here): park the frame on the tx ring
	 * for a later poll.  Its call, if any, already holds its slot. */
	if (rte_ring_mp_enqueue(a->tx_ring, m) != 0) {
		dp_count(&a->st.tx_dropped, 1);
		rte_pktmbuf_free(m);
	}
}

/* Give a submitted request its slot and request number. */
void
dp_start_call(struct dprpc_agent *a, struct rte_mbuf *m, uint64_t now)
{
	struct dp_wire_hdr *h = dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *));
	struct dp_call_meta *meta = dp_meta(m);
	struct dp_peer *peer = &a->peers[rte_be_to_cpu_16(h->dst_worker)];
	struct dp_slot *s;
	uint16_t idx;

	/* A free slot exists: outstanding <= max_outstanding was checked by
	 * the submitter, and each call in flight holds one slot. */
	idx = peer->free_slots[--peer->nb_free];
	if (unlikely(idx >= peer->slots_hi))
		peer->slots_hi = idx + 1u;
	s = &peer->slots[idx];
	s->fut = meta->fut;
	s->req_num = ++peer->next_req;
	s->deadline_tsc = meta->deadline_tsc;
	meta->fut = NULL; /* started: a re-staged frame is a plain frame */
	s->rto_tsc = 0;	  /* 0: never resent */
	s->sent_tsc = 0;
	if (a->rto_tsc != 0 && peer != &a->peers[a->rank]) {
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
		dp_msg_start_call(a, s, t);
		return;
	}
	h->slot = rte_cpu_to_be_16(idx);
	h->req_num = rte_cpu_to_be_32(s->req_num);
	/* Keep the request to send it again if no response comes (the
	 * loopback never loses a frame: calls to self are not kept). */
	if (a->rto_tsc != 0 && peer != &a->peers[a->rank])
		dp_keep(&s->req, dp_keep_area(peer, idx, false), m);
	dp_stage_tx(a, m);
}

unsigned int
dp_drain_tx_ring(struct dprpc_agent *a)
{
	struct rte_mbuf *ms[DP_RX_BURST];
	unsigned int n, i, room;

	room = DP_TX_BUF - a->tx_n;
	if (room <= DP_RX_BURST)
		return 0;
	n = rte_ring_sc_dequeue_burst(a->tx_ring, (void **)ms,
		RTE_MIN(room - DP_RX_BURST, (unsigned int)DP_RX_BURST), NULL);
	for (i = 0; i < n; i++) {
		if (dp_meta(ms[i])->fut != NULL)
			dp_start_call(a, ms[i], a->now_tsc);
		else
			dp_stage_tx(a, ms[i]);
	}
	return n;
}

static unsigned int
dp_run_timers(struct dprpc_agent *a, uint64_t now)
{
	unsigned int p, i, n = 0;
	char msg[DPRPC_ERRMSG_MAX];

	a->next_timer_tsc = now + a->timer_period_tsc;
	dp_liveness(a, now);
	/* This thread is between read-side sections: a quiescent state for
	 * an io lcore or a poll that stays online (dp_rcu.h). */
	dp_rcu_quiescent();
	for (i = 0; i < DP_EXT_MAX && dp_extensions[i] != NULL; i++)
		if (a->ext[i] != NULL)
			n += dp_extensions[i]->timer(a->ext[i]);
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
}

void
dp_fail_all_slots(struct dprpc_agent *a, int code, const char *msg)
{
	unsigned int p;

	for (p = 0; p < a->world.n; p++)
		dp_fail_peer_slots(a, p, code, msg);
}

/*
 * Liveness (DESIGN.md section 5).  Any frame from a peer proves it alive.
 * A peer heard from before, or with calls waiting on it, gets a CONTROL
 * PING after keepalive_tsc of silence, which it answers with a PONG; after
 * peer_timeout_tsc of silence it is declared down: its pending calls fail
 * with -EHOSTDOWN, new ones fail at submission, and the application's
 * peer_event is told.  Pings go on, so a peer that comes back is seen.
 */
static void
dp_send_control(struct dprpc_agent *a, unsigned int to, enum dp_ctrl_op op)
{
	struct dp_hdr_fields f = {
		.type = DP_FRAME_CONTROL,
		.src = a->rank,
		.dst = (uint16_t)to,
		.session = a->session,
		.handler_id = op,
	};
	struct rte_mbuf *m = rte_pktmbuf_alloc(a->mp);
	uint8_t *frame;

	if (m == NULL)
		return; /* a later keep-alive will do */
	frame = (uint8_t *)rte_pktmbuf_append(m, DP_HDRS_LEN);
	dp_frame_write(frame, a->peers[to].tmpl, &f, NULL, 0);
	dp_meta_plain(m);
	dp_stage_tx(a, m);
}

/*
 * Incarnations.  Every frame carries its sender's session, its creation
 * time in ms.  The first one seen from a peer is adopted; an older one
 * (serial-number order) is a stale frame of a previous incarnation and is
 * dropped; a newer one means the peer restarted: what it held is gone, so
 * the server state kept for it is cleared and the calls pending towards it
 * fail with -ECONNRESET (its new incarnation never saw them).  No handshake
 * frame is involved, so no single lost frame can defeat it.
 */
static bool
dp_check_session(struct dprpc_agent *a, const struct dp_parsed *p)
{
	struct dp_peer *peer = &a->peers[p->src];
	char msg[DPRPC_ERRMSG_MAX];
	int32_t d;

	if (likely(peer->session_known && p->session == peer->session))
		return true;
	if (!peer->session_known) {
		peer->session = p->session;
		peer->session_known = true;
		return true;
	}
	d = (int32_t)(p->session - peer->session);
	if (d < 0)
		return false;
	peer->session = p->session;
	dp_srv_reset(a, peer);
	dp_count(&a->st.peers_restarted, 1);
	snprintf(msg, sizeof(msg), "worker %s restarted", a->world.w[p->src].name);
	dp_fail_peer_slots(a, p->src, -ECONNRESET, msg);
	dp_ext_peer_event(a, p->src, DP_PEER_EV_RESTARTED);
	return true;
}

static void
dp_peer_heard(struct dprpc_agent *a, unsigned int p)
{
	struct dp_peer *peer = &a->peers[p];
	uint8_t was = dp_load_relaxed(&peer->state);

	peer->last_rx_tsc = a->now_tsc;
	peer->silent_since_tsc = 0;
	if (was == DPRPC_PEER_UP)
		return;
	dp_store_relaxed(&peer->state, DPRPC_PEER_UP);
	if (was == DPRPC_PEER_DOWN)
		dp_ext_peer_event(a, p, DP_PEER_EV_UP);
	if (was == DPRPC_PEER_DOWN && a->peer_event != NULL)
		a->peer_event(a, p, true, a->peer_event_arg);
}

static void
dp_peer_down(struct dprpc_agent *a, unsigned int p, uint64_t silent_tsc)
{
	char msg[DPRPC_ERRMSG_MAX];

	dp_store_relaxed(&a->peers[p].state, DPRPC_PEER_DOWN);
	dp_count(&a->st.peers_down, 1);
	snprintf(msg, sizeof(msg), "worker %s is down: nothing heard for %" PRIu64 " ms",
		a->world.w[p].name, silent_tsc * 1000 / a->tsc_hz);
	dp_fail_peer_slots(a, p, -EHOSTDOWN, msg);
	dp_ext_peer_event(a, p, DP_PEER_EV_DOWN);
	if (a->peer_event != NULL)
		a->peer_event(a, p, false, a->peer_event_arg);
}

static void
dp_liveness(struct dprpc_agent *a, uint64_t now)
{
	unsigned int p;

	for (p = 0; p < a->world.n; p++) {
		struct dp_peer *peer = &a->peers[p];
		uint8_t state = dp_load_relaxed(&peer->state);
		bool busy = peer->nb_free != a->max_outstanding;
		uint64_t since;

		if (p == a->rank || (state == DPRPC_PEER_UNKNOWN && !busy))
			continue;
		if (state == DPRPC_PEER_DOWN) {
			/* Calls that slipped in as it went down. */
			if (busy)
				dp_fail_peer_slots(a, p, -EHOSTDOWN, "worker is down");
			since = peer->last_rx_tsc;
		} else if (state == DPRPC_PEER_UNKNOWN) {
			if (peer->silent_since_tsc == 0)
				peer->silent_since_tsc = now;
			since = peer->silent_since_tsc;
		} else {
			since = peer->last_rx_tsc;
		}
		if (a->peer_timeout_tsc != 0 && state != DPRPC_PEER_DOWN &&
			now - since >= a->peer_timeout_tsc) {
			dp_peer_down(a, p, now - since);
			continue;
		}
		if (a->keepalive_tsc != 0 && now - since >= a->keepalive_tsc &&
			now - peer->last_ping_tsc >= a->keepalive_tsc) {
			peer->last_ping_tsc = now;
			dp_count(&a->st.keepalives, 1);
			dp_send_control(a, p, DP_CTRL_PING);
		}
	}
}

/* Received frames through the rx faults. */
static void
dp_rx_faulty(struct dprpc_agent *a, struct rte_mbuf **rx, unsigned int n)
{
	struct rte_mbuf *out[2];
	uint64_t now = rte_rdtsc();
	unsigned int i, j, k;

	for (i = 0; i < n; i++) {
		k = dp_fault_one(&a->frx, rx[i], out, now);
		for (j = 0; j < k; j++)
			dp_rx_frame(a, out[j]);
	}
}

/* Held frames that are due go on: received ones to the parser, sent ones
 * to the port. */
static unsigned int
dp_fault_release(struct dprpc_agent *a, uint64_t now)
{
	struct rte_mbuf *ms[DP_FAULT_HELD];
	unsigned int i, n, m;

	n = dp_fault_due(&a->frx, ms, DP_FAULT_HELD, now);
	for (i = 0; i < n; i++)
		dp_rx_frame(a, ms[i]);
	m = dp_fault_due(&a->ftx, ms, DP_FAULT_HELD, now);
	for (i = 0; i < m; i++)
		dp_stage_port(a, ms[i]);
	return n + m;
}

static int
dp_poll_locked(struct dprpc_agent *a, unsigned int budget)
{
	struct rte_mbuf *rx[DP_RX_BURST];
	unsigned int n, i, work = 0, room;
	uint64_t now;

	a->now_tsc = rte_rdtsc();
	if (DP_TX_BUF - a->tx_n < DP_RX_BURST)
		dp_tx_flush(a);
	/* Each frame received may stage one reply: receive no more than
	 * tx_buf has room for, so the port's push-back reaches the peer.  But
	 * never stop receiving: two workers whose tx queues are both full of
	 * calls would otherwise wait for each other for good (seen with 2048
	 * calls in flight each way).  A reply that finds tx_buf full is
	 * dropped (tx_dropped) and answered again, from the kept response,
	 * when the caller resends. */
	room = DP_TX_BUF - a->tx_n;
	if (room < DP_RX_MIN)
		room = DP_RX_MIN;
	budget = RTE_MIN(budget, (unsigned int)DP_RX_BURST);
	budget = RTE_MIN(budget, room);
	n = budget == 0 ? 0 : rte_eth_rx_burst(a->port_id, a->rxq, rx, (uint16_t)budget);
	if (n > 0) {
		dp_counter_add(&a->st.rx_frames, n);
		if (unlikely(a->frx.on)) {
			dp_rx_faulty(a, rx, n);
		} else {
			for (i = 0; i < n; i++) {
				if (i + 1 < n)
					rte_prefetch0(rte_pktmbuf_mtod(rx[i + 1], void *));
				dp_rx_frame(a, rx[i]);
			}
		}
		work += n;
	}
	work += dp_drain_tx_ring(a);
	now = rte_rdtsc();
	if (unlikely(a->frx.n_held + a->ftx.n_held > 0))
		work += dp_fault_release(a, now);
	if (now >= a->next_timer_tsc)
		work += dp_run_timers(a, now);
	dp_tx_flush(a);
	return (int)work;
}

/* Become the poller.  Acquire: pairs with the release store in
 * dp_poll_unlock() by the previous poller, so its writes to slots, tx_buf
 * and the queues are visible to us. */
bool
dp_poll_trylock(struct dprpc_agent *a)
{
	if (atomic_exchange_explicit(&a->polling, true, memory_order_acquire))
		return false;
	dp_tls_poller = a;
	return true;
}

void
dp_poll_unlock(struct dprpc_agent *a)
{
	dp_rcu_poll_end();
	dp_tls_poller = NULL;
	/* Release: pairs with the acquire exchange in dp_poll_trylock(). */
	atomic_store_explicit(&a->polling, false, memory_order_release);
}

int
dprpc_poll(struct dprpc_agent *a, unsigned int budget)
{
	int n;

	if (a == NULL)
		return -EINVAL;
	if (!dp_poll_trylock(a))
		return -EBUSY;
	n = dp_poll_locked(a, budget == 0 ? DP_RX_BURST : budget);
	dp_poll_unlock(a);
	return n;
}

bool
dp_poll_until_done(struct dprpc_agent *a, const struct dprpc_future *fut)
{
	unsigned int empty = 0;

	if (a->io_launched || dp_tls_poller == a || !dp_poll_trylock(a))
		return false;
	while (!dprpc_future_is_done(fut)) {
		if (dp_poll_locked(a, DP_RX_BURST) > 0) {
			empty = 0;
		} else if (++empty >= a->idle_yield) {
			/* A long wait: stop hogging the flag and let the
			 * generic wait (yield, park, other pollers) take over. */
			dp_poll_unlock(a);
			return false;
		}
	}
	dp_poll_unlock(a);
	return true;
}

bool
dp_on_poller(const struct dprpc_agent *a)
{
	return dp_tls_poller == a;
}

int
dp_progress(void *arg)
{
	struct dprpc_agent *a = arg;
	int n;

	/* An io lcore polls: the waiter may park.  A thread that is already
	 * this agent's poller (a callback waiting) cannot poll recursively. */
	if (a->io_launched || dp_tls_poller == a)
		return -1;
	n = dprpc_poll(a, DP_RX_BURST);
	return n < 0 ? -1 : n;
}

void
dp_idle(const struct dprpc_agent *a, unsigned int *empty)
{
	unsigned int e = ++*empty;

	if (e < a->idle_pause)
		return;
	if (e < a->idle_yield)
		rte_pause();
	else if (e < a->idle_sleep)
		sched_yield();
	else
		usleep(a->idle_sleep_us);
}

int
dp_lcore_io(void *arg)
{
	struct dprpc_agent *a = arg;
	unsigned int empty = 0;

	/* An io lcore is an RCU reader for good (QSBR): its timer reports the
	 * quiescent states (dp_run_timers()); it goes offline to sleep. */
	dp_rcu_online_begin();
	/* Acquire: pairs with the release store of stop in destroy. */
	while (!atomic_load_explicit(&a->stop, memory_order_acquire)) {
		if (dprpc_poll(a, DP_RX_BURST) > 0) {
			empty = 0;
		} else if (empty + 1 >= a->idle_yield) {
			dp_rcu_sleep_begin();
			dp_idle(a, &empty);
			dp_rcu_sleep_end();
		} else {
			dp_idle(a, &empty);
		}
	}
	dp_rcu_online_end();
	return 0;
}
