/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rx demux of the calls' frames (rx.c): what the rpc layer does with a
 * frame received, or looped back to ourselves (dp_rx_local()).  The agent's
 * demux (dp_rx_frame(), poll.c) checks a frame from a peer first (its
 * session, its sender heard from, the world's own operations), then hands
 * it here.  Inline: every frame goes through it.  The poller.
 */
#ifndef DP_RX_H
#define DP_RX_H

#include <stdint.h>
#include <string.h>

#include <rte_mbuf.h>

#include "dp_rpc.h"
#include "dp_client.h"
#include "dp_liveness.h"
#include "dp_msg.h"
#include "dp_server.h"
#include "dp_stream.h"

/*
 * Payloads are handed out DPRPC_PAYLOAD_ALIGN-aligned.  In a frame the
 * payload follows 82 bytes of headers, which the parser has already read
 * into struct dp_parsed, so the payload slides back over them to the
 * boundary: at most 7 bytes, the only move the payload makes on receive.
 */
static __rte_always_inline void
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

/* A frame parsed (@p), from a peer that passed the agent's checks or from
 * ourselves: the calls' CONTROL frames (cancels, holds, pings), a
 * message's ACK, a stream's frames, a response or a request.  Consumes
 * @m. */
static __rte_always_inline void
dp_rpc_rx(struct dp_rpc *a, struct rte_mbuf *m, struct dp_parsed *p)
{
	if (unlikely(p->type == DP_FRAME_CONTROL)) {
		if (p->handler_id == DP_CTRL_CANCEL_ACK) {
			dp_client_cancel_acked(a, m, p); /* consumes m */
			return;
		}
		if (p->handler_id == DP_CTRL_HELD) {
			dp_client_held(a, m, p); /* consumes m */
			return;
		}
		if (p->handler_id == DP_CTRL_PING)
			/* The PONG echoes a challenge's nonce (proof.c). */
			dp_send_nonce(a, p->src, DP_CTRL_PONG, a->peers[p->src].session,
				dp_parsed_nonce(p));
		else if (p->handler_id == DP_CTRL_CANCEL)
			dp_srv_cancel(a, p);
		rte_pktmbuf_free(m);
		return;
	}
	if (unlikely(p->type == DP_FRAME_ACK)) {
		dp_msg_rx_ack(a, m, p);
		return;
	}
	/* A message's frames are copied out: no need to align them. */
	if (p->pkt_cnt == 1)
		dp_align_payload(p);
	if (unlikely(p->type >= DP_FRAME_CHUNK)) {
		dp_stream_rx(a, m, p); /* server streaming */
		return;
	}
	if (p->type == DP_FRAME_RESPONSE)
		dp_handle_response(a, m, p);
	else
		dp_dispatch_request(a, m, p);
}

/* A frame in several segments or shared with its sender, made private
 * (rx.c); NULL if none can be had (counted). */
struct rte_mbuf *dp_rx_private(struct dp_rpc *a, struct rte_mbuf *m);
/* A frame addressed to ourselves (a call to self, its reply, a message's
 * frame), received without the wire: parsed and demuxed as if received. */
void dp_rx_local(struct dp_rpc *a, struct rte_mbuf *m);

#endif /* DP_RX_H */
