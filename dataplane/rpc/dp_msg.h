/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Multi-frame messages (msg_tx.c sends them, msg_rx.c receives them):
 * splitting, reassembly, acknowledgements, credits and the recovery of lost
 * frames; the protocol is docs/reliability.md's, "Multi-frame messages".
 *
 * Message buffers come from DPDK's heap (rte_malloc), mapped once and never
 * given back, so a message pays no page fault per 4 KiB; what a server
 * holds of them counts against its budgets (dp_srv_over_budget()).
 *
 * Everything here runs on the poller, but dp_txmsg_new(), dp_carrier_new()
 * and dp_txmsg_put() (any thread).
 */
#ifndef DP_MSG_H
#define DP_MSG_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "dp_rpc.h"
#include "dp_wire.h"

#define DP_FRAG DPRPC_MAX_FRAME_PAYLOAD

/*
 * A message longer than one frame's payload is copied once into a
 * dp_txmsg; its frames are made on demand, each a header mbuf chained to
 * an mbuf attached (no copy) to its slice of the copy, so only the
 * window's frames exist at a time.  The receiver copies each frame's
 * payload into a dp_rxmsg (one copy) and acknowledges.
 */
struct dp_txmsg {
	/* Holds one reference for the agent, one per frame in flight; the
	 * last one frees the message (any thread: the PMD frees frames). */
	struct rte_mbuf_ext_shared_info shinfo;
	struct dp_hdr_fields f; /* every frame's header but the frame fields */
	uint32_t len, n;	/* bytes, frames */
	uint32_t next;		/* the next frame to send */
	uint32_t hi;		/* frames below this were sent at least once */
	uint32_t acked;		/* the receiver holds every frame below this */
	uint32_t window;	/* the receiver's credits beyond acked */
	bool probing;		/* the resend timer asked the receiver where it stands */
	uint8_t *buf;
};

struct dp_rxmsg {
	uint32_t req_num, len, n;
	uint32_t handler_id, status;
	uint32_t have;	    /* frames received */
	uint32_t cum;	    /* every frame below this is here */
	uint32_t hi;	    /* no frame from this on is here */
	uint32_t ooo, dups; /* frames beyond a gap at cum; duplicates */
	bool jumped;	    /* the last frame moved cum over frames held */
	uint8_t *buf;	    /* len bytes, cache-line aligned */
	uint64_t bits[];    /* frames received */
};

/* msg_tx.c */
/* A message of @len bytes gathered from @cnt buffers. */
struct dp_txmsg *dp_txmsg_new(const struct dp_rpc *a, const struct dp_hdr_fields *f,
	const struct iovec *iov, unsigned int cnt, uint32_t len);
void dp_txmsg_put(struct dp_txmsg *t);
struct rte_mbuf *dp_carrier_new(struct dp_rpc *a, struct dp_txmsg *t);
/* Start a multi-frame call on slot @s: its frames go out at once, or, for
 * a parked slot, from dp_msg_send_parked() once the peer is heard from. */
void dp_msg_start_call(struct dp_rpc *a, struct dp_slot *s, struct dp_txmsg *t);
void dp_msg_send_parked(struct dp_rpc *a, struct dp_slot *s);
void dp_msg_start_response(struct dp_rpc *a, struct dp_txmsg *t);
void dp_msg_rx_ack(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_parsed *p);
void dp_msg_resend(struct dp_rpc *a, unsigned int to, struct dp_slot *s);
bool dp_msg_resend_response(struct dp_rpc *a, unsigned int from, uint16_t slot);
void dp_msg_slot_clear(struct dp_rpc *a, struct dp_slot *s);
void dp_self_fail(struct dp_rpc *a, uint16_t slot, uint32_t req_num, int code, const char *why);

/* msg_rx.c */
void dp_rxmsg_free(void *r);
void dp_msg_rx_request(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_parsed *p);
void dp_msg_rx_response(
	struct dp_rpc *a, struct dp_slot *s, struct rte_mbuf *m, const struct dp_parsed *p);
/* Free what server slot @e of @peer holds (kept response, messages) and
 * mark it EMPTY; its req_num stays. */
void dp_msg_srv_clear(struct dp_rpc *a, struct dp_peer *peer, struct dp_srv_slot *e);
/* Complete the call on slot @s of @peer with a whole response. */
void dp_msg_complete(struct dp_rpc *a, struct dp_peer *peer, struct dp_slot *s, unsigned int src,
	uint32_t status, uint8_t *buf, uint32_t len, void (*free_fn)(void *), void *arg);
/* Acknowledge frames of a message of @of_type (or ask for an ACK, with
 * DP_ACK_PROBE in @flags): nothing to ourselves or without an mbuf. */
void dp_send_ack(struct dp_rpc *a, unsigned int to, uint8_t of_type, uint16_t slot,
	uint32_t req_num, uint32_t cum, uint32_t hi, uint32_t n, uint16_t flags);

/* Messages held by slots, up or down by @d. */
static inline void
dp_msgs_live(struct dp_rpc *a, int d)
{
	dp_count(&a->b.st.msgs_live, (uint64_t)(int64_t)d);
}

#endif /* DP_MSG_H */
