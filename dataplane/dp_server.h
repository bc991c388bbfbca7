/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The server side of calls (server.c): at-most-once execution.  Per peer
 * and slot of the peer's numbering, the last request seen and, once
 * answered, its kept response; every request from a peer passes
 * dp_dispatch_request() on its way to its handler.  Kept frames (struct
 * dp_kept, dp_keep(), dp_kept_send(), dp_kept_clear()) serve the client's
 * requests too.  Poller only.
 */
/* Before the guard: dp_agent.h includes this header at its end. */
#include "dp_agent.h"

#ifndef DP_SERVER_H
#define DP_SERVER_H

#include <stdbool.h>
#include <stdint.h>

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

struct dp_srv_slot {
	uint32_t req_num;
	uint8_t state;	     /* enum dp_srv_state */
	struct dp_kept resp; /* DONE: the response */
	struct dp_txmsg *tx; /* DONE: a multi-frame response, until acked whole */
	struct dp_rxmsg *rx; /* RECEIVING: the request being reassembled */
};

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
void dp_srv_reset(struct dprpc_agent *a, struct dp_peer *peer);
/* @peer was declared down: free the requests it was sending, half received
 * (kept responses stay: it may come back in the same incarnation). */
void dp_srv_peer_down(struct dprpc_agent *a, struct dp_peer *peer);
void dp_keep_response(struct dprpc_agent *a, struct rte_mbuf *m, const struct dp_wire_hdr *h);
void dp_keep(struct dp_kept *k, uint8_t *area, struct rte_mbuf *m);
bool dp_kept_send(struct dprpc_agent *a, const struct dp_kept *k, const uint8_t *area, uint8_t type,
	unsigned int to, uint16_t slot, uint32_t req_num);
void dp_kept_clear(struct dp_kept *k);
/* A request frame from the rx demux: at most once, then to its handler. */
void dp_dispatch_request(struct dprpc_agent *a, struct rte_mbuf *m, const struct dp_parsed *p);

#endif /* DP_SERVER_H */
