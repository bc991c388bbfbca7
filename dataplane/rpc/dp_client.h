/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The client side of calls (client.c): session slots, starting a call,
 * matching its response, the resend timers and their adaptive timeout,
 * failing the calls pending towards a peer.  Poller only.  Matching a
 * response and its round-trip sample are inline: the rx demux runs them
 * for every response.
 */
#ifndef DP_CLIENT_H
#define DP_CLIENT_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <rte_cycles.h>

#include "dp_msg.h"
#include "dp_rpc.h"
#include "dp_server.h"
#include "fut_internal.h"
#include <dprpc/dprpc_stats.h>

/* A session slot: one call in flight towards a peer.  Poller only, but
 * for watch. */
struct dp_slot {
	struct dprpc_future *fut; /* NULL when free */
	/* fut if the call has a deadline, else NULL, for dp_expire_stalled(),
	 * which fails the calls past it when the poller stalls: written by
	 * the poller (release in dp_start_call(), relaxed in
	 * dp_slot_release()), read by any thread (acquire).  Beside fut: no
	 * other cache line per call. */
	struct dprpc_future *_Atomic watch;
	uint32_t req_num;
	/* The peer's incarnation is not known yet: the request is kept (or
	 * the message held) unsent until the peer is heard from
	 * (dp_client_unpark()); its timer sends pings meanwhile.  In
	 * req_num's padding: a slot is 88 bytes, not 96. */
	bool parked;
	/* The call was cancelled (fut is NULL) and its CANCEL is resent with
	 * the call's resend timer until the server answers it: a CANCEL_ACK
	 * or the call's response for req_num frees the slot
	 * (dp_slot_cancelled(), docs/serving.md).  In the same padding. */
	bool cancel;
	/* The server said it holds the request (a HELD): the next resend is
	 * a probe for an answer it expects to send, not a sign of loss, and
	 * does not back off the peer's timeout (dp_client_timers()). */
	bool held;
	uint64_t deadline_tsc;
	struct dp_kept req;  /* the request, for resending */
	struct dp_txmsg *tx; /* a multi-frame request: ours until the slot is freed */
	struct dp_rxmsg *rx; /* a multi-frame response being reassembled */
	uint64_t rtx_tsc;    /* next resend */
	uint64_t rto_tsc;    /* current resend interval */
	union {
		/* First transmission of a single-frame request, for a
		 * round-trip sample; 0 once resent (Karn: an answer to which
		 * copy is unknown) or for a multi-frame one (its transfer is
		 * not a round trip). */
		uint64_t sent_tsc;
		/* Held for its CANCEL (cancel): the future, a reference of
		 * the agent's, that learns the server's answer
		 * (fut_set_cancel_outcome()); NULL if nobody is told. */
		struct dprpc_future *cancel_fut;
	};
	/* A stream call (dp_stream.h): what is received of it; NULL else. */
	struct dprpc_stream *st;
};

/* call.c: rpc_sync's end, once the future was polled for (wait.c): wait
 * for @fut up to @timeout_us (0: no limit), copy its value out and put
 * it; a response longer than *@out_len is kept for the calling thread
 * when @keep (rpc_sync, dprpc_rpc_sync_take()), else released. */
int dp_sync_finish(struct dp_rpc *a, struct dprpc_future *fut, uint64_t timeout_us, void *out,
	size_t *out_len, struct dprpc_error *err, bool keep);
/* Frees a response's mbuf, the future's value (zero copy). */
void dp_value_free_mbuf(void *m);
/* Release slot @s of @peer and return the future it held (agent's ref). */
struct dprpc_future *dp_slot_release(struct dp_rpc *a, struct dp_peer *peer, struct dp_slot *s);
/* Give a submitted request its slot and request number.  @fresh: its
 * future comes straight from dp_call() on this thread and was handed to
 * nobody yet, so it cannot have been cancelled (no check); false for a
 * call taken from tx_ring, whose caller holds the future already. */
void dp_start_call(struct dp_rpc *a, struct rte_mbuf *m, uint64_t now, bool fresh);
/* The calls' timers, once per timer period (dp_run_timers()): resend what
 * is late, fail what timed out.  How many calls it resent or failed. */
unsigned int dp_client_timers(struct dp_rpc *a, uint64_t now);
void dp_fail_all_slots(struct dp_rpc *a, int code, const char *msg);
/* Fail every call pending towards @p with @code and @msg, and discard the
 * frames of theirs still queued (dp_tx_purge()). */
void dp_fail_peer_slots(struct dp_rpc *a, unsigned int p, int code, const char *msg);
/* Slot @i of peer @p holds a call its caller cancelled: fail its future
 * and, if the request went out, send the server a CANCEL; with resends on
 * the slot is held (cancel) until the server answers, else freed. */
void dp_slot_cancelled(struct dp_rpc *a, unsigned int p, unsigned int i);
/* The agent @arg's pool hook (fut_pool_set_cancel_hook()): one of its
 * futures was cancelled.  Any thread. */
void dp_client_cancel_kick(void *arg);
/* After a kick: the calls whose futures were cancelled, their slots freed
 * and CANCELs sent now (dp_slot_cancelled()).  How many.  The poller. */
unsigned int dp_client_cancels(struct dp_rpc *a);
/* A CANCEL_ACK frame @m from the rx demux: frees the slot it names if
 * that slot still waits for it; else dropped as stale. */
void dp_client_cancel_acked(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_parsed *p);
/* Slot @s of @peer, held for its CANCEL, is answered, or no answer can
 * come: free it, its future told @outcome (enum dprpc_cancel_outcome). */
void dp_slot_cancel_done(struct dp_rpc *a, struct dp_peer *peer, struct dp_slot *s, int outcome);
/* A HELD frame @m from the rx demux: the server holds the call it names
 * and expects to answer it in p->budget microseconds (one naming no
 * pending call came late: ignored); consumes @m. */
void dp_client_held(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_parsed *p);
/* @p's incarnation was just learnt: send the requests parked for it. */
void dp_client_unpark(struct dp_rpc *a, unsigned int p);

/* progress.c: fail every started call past its expiry, at @now (the last
 * tick older than stall_tsc: dp_expire_stalled()).  Any thread. */
void dp_expire_stalled_scan(struct dp_rpc *a, uint64_t now);

/* A waiter that finds the poll flag held (or an io lcore polling) fails
 * the calls past their expiry itself when the poller stalls (progress.c
 * has the design).  Inline: such a waiter asks at every step of its wait
 * (dp_progress()).  Any thread. */
static inline void
dp_expire_stalled(struct dp_rpc *a)
{
	uint64_t now = rte_rdtsc();

	/* Relaxed: a hint; fut_expire() decides on the futures themselves. */
	if (now - dp_load_relaxed(&a->b.tick_tsc) < a->b.stall_tsc)
		return;
	dp_expire_stalled_scan(a, now);
}

/* @peer answered our call numbered @req_num (a response, a HELD, a
 * CANCEL_ACK): it is not silent, and the calls it took before are not
 * lost (dp_slot_lost()). */
static inline void
dp_peer_answered(struct dp_rpc *a, struct dp_peer *peer, uint32_t req_num)
{
	if ((int32_t)(req_num - peer->ans_req) > 0)
		peer->ans_req = req_num;
	peer->ans_tsc = a->b.now_tsc;
}

/* A round-trip sample @r of @peer: the adaptive resend timeout (RFC 6298,
 * see client.c). */
static inline void
dp_rtt_sample(struct dp_rpc *a, struct dp_peer *peer, uint64_t r)
{
	/* Relaxed: only the poller writes them (dp_rpc.h). */
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
	rto = srtt + RTE_MAX(a->b.timer_period_tsc, 4 * peer->rttvar_tsc);
	dp_store_relaxed(&peer->rto_tsc, RTE_MIN(rto, a->rto_max_tsc));
}

/* The network's round trip in @elapsed, the time from a request's first
 * sending to its single-frame response @p: less how long the server held
 * it (the response's budget field, dp_wire.h), so that the resend timeout
 * measures the path, not the server's queue. */
static inline uint64_t
dp_rtt_of(const struct dp_rpc *a, const struct dp_parsed *p, uint64_t elapsed)
{
	uint64_t held;

	if (likely(p->budget == 0) || p->status == EBUSY)
		return elapsed;
	held = dp_us_to_tsc(&a->b, dp_budget_decode(p->budget));
	return elapsed > held ? elapsed - held : 0;
}

/* A response's error message @msg (@cap bytes) from worker @src for a
 * call of handler @id: the server's "no handler with id" answer is
 * rewritten to name the handler, when this process knows the name
 * (client.c).  The failure path only. */
void dp_unknown_handler_msg(
	const struct dp_rpc *a, unsigned int src, uint32_t id, char *msg, size_t cap);

/* A response frame from the rx demux: a single-frame response completes
 * its call; a multi-frame one's frames go to its reassembly. */
static inline void
dp_handle_response(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_parsed *p)
{
	struct dp_peer *peer = &a->peers[p->src];
	struct dprpc_future *fut;
	struct dp_slot *s;
	char msg[DPRPC_ERRMSG_MAX];
	uint32_t n;

	if (p->slot >= a->max_outstanding) {
		dp_drop_frame(&a->b, m, DPRPC_DROP_STALE);
		return;
	}
	dp_peer_answered(a, peer, p->req_num);
	s = &peer->slots[p->slot];
	if (s->fut == NULL || s->req_num != p->req_num) {
		/* The answer to a cancelled call whose CANCEL is not
		 * acknowledged yet answers it as well if it is a value: it
		 * ran.  An error may be a refusal (a resent one says nothing
		 * of it) or the server's answer for a request it never ran:
		 * its CANCEL_ACK says which. */
		if (unlikely(s->cancel) && s->req_num == p->req_num && p->status == 0)
			dp_slot_cancel_done(a, peer, s, DPRPC_CANCEL_STARTED);
		dp_drop_frame(&a->b, m, DPRPC_DROP_STALE);
		return;
	}
	if (p->pkt_cnt > 1) {
		dp_msg_rx_response(a, s, m, p);
		return;
	}
	/* now_tsc, read as this poll began, is after the request went
	 * (sent_tsc: in an earlier poll, or by a caller before it). */
	if (s->sent_tsc != 0 && (int64_t)(a->b.now_tsc - s->sent_tsc) >= 0)
		dp_rtt_sample(a, peer, dp_rtt_of(a, p, a->b.now_tsc - s->sent_tsc));
	fut = dp_slot_release(a, peer, s);
	if (unlikely(fut_cancelled(fut))) {
		/* Its caller cancelled it before the answer came (the timer
		 * would have freed the slot and told the server). */
		fut_set_cancel_outcome(fut, p->status != 0 && (p->flags & DP_RESP_UNRUN)
						    ? DPRPC_CANCEL_STOPPED
						    : DPRPC_CANCEL_STARTED);
		rte_pktmbuf_free(m);
		(void)fut_fail_consume(fut, -ECANCELED, a->b.rank, NULL); /* drops our ref */
		dp_count(&a->b.st.calls_failed, 1);
		dp_count(&a->b.st.calls_cancelled, 1);
		return;
	}
	if (p->status == 0) {
		/* Zero copy: the future owns the mbuf from here on.  The
		 * agent's reference is dropped by the completion itself. */
		if (fut_complete_consume(fut, p->payload_len ? p->payload : NULL, p->payload_len,
			    dp_value_free_mbuf, m) == 0) {
			dp_count(&a->b.st.calls_ok, 1);
		} else {
			/* Failed past its deadline by dp_expire_stalled() or a
			 * waiter (fut_set_expiry()). */
			rte_pktmbuf_free(m);
			dp_count(&a->b.st.calls_failed, 1);
			dp_count(&a->b.st.calls_timed_out, 1);
		}
	} else {
		n = RTE_MIN(p->payload_len, (uint32_t)sizeof(msg) - 1);
		memcpy(msg, p->payload, n);
		msg[n] = '\0';
		rte_pktmbuf_free(m);
		/* A handler the destination does not have (never run). */
		if (p->status == ENOENT && (p->flags & DP_RESP_UNRUN))
			dp_unknown_handler_msg(a, p->src, p->handler_id, msg, sizeof(msg));
		/* An overload answer's budget field is its retry-after hint. */
		fut_fail_consume_hint(fut, -(int)RTE_MIN(p->status, (uint32_t)INT32_MAX), p->src,
			msg,
			p->status == EBUSY ? (uint32_t)RTE_MIN(dp_budget_decode(p->budget),
						     (uint64_t)UINT32_MAX)
					   : 0);
		dp_count(&a->b.st.calls_failed, 1);
	}
}

#endif /* DP_CLIENT_H */
