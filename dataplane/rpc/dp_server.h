/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The server side of calls (server.c): at-most-once execution.  Per peer
 * and slot of the peer's numbering, the last request seen and, once
 * answered, its kept response; every request from a peer passes
 * dp_dispatch_request() on its way to its handler.  Kept frames (struct
 * dp_kept, dp_keep(), dp_kept_send(), dp_kept_clear()) serve the client's
 * requests too.  Poller only.
 */
#ifndef DP_SERVER_H
#define DP_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "dp_rpc.h"

/*
 * A frame kept to be sent again (a client's request until its response, a
 * server's response until the client moves on).  Only what the slot does
 * not know is kept: a frame whose handler id, status and payload fit in
 * DP_KEEP_BYTES has those copied into the slot's area (dp_keep_area(): in
 * the peer's keep array for a request, in its srv_keep for a response),
 * and its headers are rebuilt on a resend.  For a small call that is one
 * cache line, which costs less than the reference it replaces (a locked
 * increment here, a locked decrement in the PMD's free, and an mbuf kept
 * out of the pool's per-lcore cache for the call's life).  A larger frame
 * keeps one reference to its mbuf.
 */
#define DP_KEEP_BYTES 256
struct dp_kept {
	struct rte_mbuf *m; /* a reference, or NULL */
	uint16_t len;	    /* bytes copied to the area (8 + payload), or 0 */
};

enum dp_srv_state { DP_SRV_EMPTY, DP_SRV_RECEIVING, DP_SRV_RUNNING, DP_SRV_DONE };

/* What a CANCEL of the slot's request found (dp_srv_slot.cancel): every
 * copy of it is answered the same. */
enum dp_srv_cancel { DP_SRV_CANCEL_NONE, DP_SRV_CANCEL_STOPPED, DP_SRV_CANCEL_STARTED };

struct dp_srv_slot {
	uint32_t req_num;
	uint8_t state;	     /* enum dp_srv_state */
	uint8_t cancel;	     /* enum dp_srv_cancel, for req_num */
	bool unrun;	     /* DONE: answered without running (refused, expired) */
	struct dp_kept resp; /* DONE: the response */
	struct dp_txmsg *tx; /* DONE: a multi-frame response, until acked whole */
	struct dp_rxmsg *rx; /* RECEIVING: the request being reassembled */
	/* RUNNING: the request object, for a CANCEL; it may have been
	 * answered and reused since, so dp_srv_live_req() checks that it
	 * still is this slot's request before using it. */
	struct dprpc_request *req;
	/* RUNNING, a stream (dp_stream.h): its frames not acknowledged yet. */
	struct dp_srv_stream *st;
};

/* True if @m, a single-frame request or response, is kept as a copy in
 * its slot's area (no mbuf held): one segment, payload within the area
 * after the handler id and status. */
static inline bool
dp_keep_fits(const struct rte_mbuf *m)
{
	return m->nb_segs == 1 && (uint32_t)m->data_len - DP_HDRS_LEN <= DP_KEEP_BYTES - 8;
}

/*
 * Budgets (docs/reliability.md, "Budgets and reclaim").  What the server
 * side holds for a peer is counted in the peer (srv_kept, srv_bytes) and
 * for all peers in the agent's gauges (st.kept_mbufs, st.msg_bytes), both
 * poller only (the gauges are read by dprpc_agent_usage_get() too):
 *  - srv_kept: server slots whose resp holds an mbuf reference;
 *  - srv_bytes: the lengths of the slots' rx (a request being reassembled,
 *    reserved whole at its first frame) and tx (a response until acked).
 * Every change to e->resp.m, e->rx or e->tx of a server slot goes through
 * these, so the counts are exact at any time.
 */
static inline void
dp_srv_kept_add(struct dp_rpc *a, struct dp_peer *peer, int d)
{
	peer->srv_kept += (unsigned int)d;
	dp_count(&a->b.st.kept_mbufs, (uint64_t)(int64_t)d);
}

static inline void
dp_srv_bytes_add(struct dp_rpc *a, struct dp_peer *peer, int64_t d)
{
	peer->srv_bytes += (uint64_t)d;
	dp_count(&a->b.st.msg_bytes, (uint64_t)d);
}

/* May another response to @peer be kept by reference? */
static inline bool
dp_srv_may_keep_mbuf(const struct dp_rpc *a, const struct dp_peer *peer)
{
	/* Relaxed: the poller's own writes, read back (struct dp_stats, and
	 * state in struct dp_peer). */
	return peer->srv_kept < a->kept_peer_max &&
	       dp_load_relaxed(&a->b.st.kept_mbufs) < a->kept_max &&
	       dp_load_relaxed(&peer->state) < DPRPC_PEER_DOWN; /* nor LEFT */
}

/* @slot's area for its kept frame: in @peer's keep array for a request,
 * in its srv_keep for a response (@srv). */
static inline uint8_t *
dp_keep_area(const struct dp_peer *peer, unsigned int slot, bool srv)
{
	return (srv ? peer->srv_keep : peer->keep) + slot * (size_t)DP_KEEP_BYTES;
}

/* The server's entry for @slot of @peer's numbering, NULL if the peer never
 * used that slot. */
static inline struct dp_srv_slot *
dp_srv_find(const struct dp_peer *peer, unsigned int slot)
{
	return slot < peer->srv_cap ? &peer->srv[slot] : NULL;
}

/* The same, growing the peer's server state to hold @slot if it is beyond
 * what it holds; NULL if the memory cannot be had. */
struct dp_srv_slot *dp_srv_slot(struct dp_peer *peer, uint16_t slot);
/* Allocate (or grow to @cap entries) @peer's server state: 0 or -ENOMEM,
 * which leaves it as it was. */
int dp_srv_grow(struct dp_peer *peer, unsigned int cap);
/* Clear what the server keeps for @peer (it restarted, or the agent goes). */
void dp_srv_reset(struct dp_rpc *a, struct dp_peer *peer);
/* Peer @p was declared down: free the responses kept for it and the
 * requests it left half received, keeping its slots' at-most-once state
 * (a resend is answered -ENODATA or -ENOBUFS). */
void dp_srv_reclaim(struct dp_rpc *a, unsigned int p);
bool dp_srv_over_budget_exact(const struct dp_rpc *a, const struct dp_peer *peer,
	const struct dp_srv_slot *e, uint64_t need);

/* True if a new request of @len message bytes (0: a single-frame one,
 * which needs one byte of room: it is refused once the budget is reached
 * by responses not acknowledged yet) from @peer, on slot entry @e (whose
 * holdings the request would free), is over the budgets: it must be
 * refused (dp_srv_refuse()).  Inline: every request from a peer asks. */
static inline bool
dp_srv_over_budget(const struct dp_rpc *a, const struct dp_peer *peer, const struct dp_srv_slot *e,
	uint32_t len)
{
	uint64_t need = len > 0 ? len : 1;

	/* Relaxed: the poller's own gauge, read back (struct dp_stats). */
	if (likely(peer->srv_bytes + need <= a->msg_peer_max &&
		    dp_load_relaxed(&a->b.st.msg_bytes) + need <= a->msg_max))
		return false;
	return dp_srv_over_budget_exact(a, peer, e, need);
}
/* Refuse the new request @p on @e, not run (for the budgets, -ENOBUFS,
 * counted as DPRPC_DROP_OVER_BUDGET; or an overload, -EBUSY): the slot
 * takes its req_num and keeps, and sends, the error answer @code
 * (negative errno) with @msg and the retry-after hint @hint (encoded as a
 * budget, 0: none), which its resends get too. */
void dp_srv_refuse(struct dp_rpc *a, struct dp_peer *peer, struct dp_srv_slot *e,
	const struct dp_parsed *p, int code, const char *msg, uint16_t hint);
/* A response of @e (handler @handler_id) that could not be kept by
 * reference (over the budgets, or its caller declared down): counted in
 * keeps_refused, the error -ENODATA kept for a resend instead. */
void dp_srv_keep_refused(
	struct dp_rpc *a, struct dp_peer *peer, struct dp_srv_slot *e, uint32_t handler_id);
/* Keep the error answer @code (negative errno) with @msg in @e's area,
 * instead of a response: e->resp must hold no mbuf. */
void dp_srv_keep_error(struct dp_peer *peer, struct dp_srv_slot *e, uint32_t handler_id, int code,
	const char *msg);
void dp_keep_response(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_wire_hdr *h);
void dp_keep(struct dp_kept *k, uint8_t *area, struct rte_mbuf *m);
bool dp_kept_send(struct dp_rpc *a, const struct dp_kept *k, const uint8_t *area, uint8_t type,
	unsigned int to, uint16_t slot, uint32_t req_num, uint16_t budget);
void dp_kept_free_mbuf(struct dp_kept *k);

/* Forget what @k keeps.  Inline: most kept frames are copies (k->len),
 * cleared by two stores; the out-of-line free, whose register saves would
 * cost every slot release, only for an mbuf. */
static inline void
dp_kept_clear(struct dp_kept *k)
{
	k->len = 0;
	if (unlikely(k->m != NULL))
		dp_kept_free_mbuf(k);
}
/* A CANCEL frame @p from a caller: a request of its still being received
 * is dropped (kept answer -ECANCELED), one queued, running or deferred is
 * flagged (dprpc_request_cancelled(); a queued one is dropped unrun). */
void dp_srv_cancel(struct dp_rpc *a, const struct dp_parsed *p);
/* Peer @p was declared down or restarted: flag every request of its that
 * this agent still holds as cancelled. */
void dp_srv_cancel_all(struct dp_rpc *a, unsigned int p);
/* @e's request object if it still is the RUNNING request of @e, slot
 * @slot of peer @p (it may have been answered and reused since); NULL
 * otherwise. */
struct dprpc_request *dp_srv_live_req(
	struct dp_rpc *a, unsigned int p, unsigned int slot, struct dp_srv_slot *e);
/* A request frame from the rx demux: at most once, then to its handler. */
void dp_dispatch_request(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_parsed *p);

#endif /* DP_SERVER_H */
