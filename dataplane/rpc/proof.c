/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * With a world key (docs/security.md): an incarnation of a peer is taken
 * only once it proved it is alive, by echoing in a PONG a nonce of ours
 * that changes every second, so a frame of an old incarnation replayed
 * cannot make us take the peer for restarted; and the frames of the incarnation we know pass a replay
 * window (dp_liveness.h), so none replayed proves it alive.  The poller.
 */
#include "dp_rpc.h"
#include "dp_liveness.h"
#include "dp_submit.h"

void
dp_send_nonce(
	struct dp_rpc *a, unsigned int to, enum dp_ctrl_op op, uint64_t dst_session, uint64_t nonce)
{
	struct dp_hdr_fields f = {
		.type = DP_FRAME_CONTROL,
		.src = a->b.rank,
		.dst = (uint16_t)to,
		.session = a->b.session,
		.dst_session = dst_session,
		.req_num = (uint32_t)(nonce >> 32),
		.status = (uint32_t)nonce,
		.handler_id = op,
	};
	struct rte_mbuf *m = rte_pktmbuf_alloc(a->b.mp);
	uint8_t *frame;

	if (m == NULL)
		return; /* as if lost: asked again */
	frame = (uint8_t *)rte_pktmbuf_append(m, DP_HDRS_LEN);
	dp_frame_write(frame, a->peers[to].tmpl, &f, NULL, 0);
	dp_meta_plain(m);
	dp_stage_tx(a, m);
}

bool
dp_session_proven(struct dp_rpc *a, const struct dp_parsed *p)
{
	struct dp_peer *peer = &a->peers[p->src];
	bool control = p->type == DP_FRAME_CONTROL;

	if (likely(peer->session_known && p->session == peer->session))
		return true;
	if (peer->session_known && dp_session_retired(peer, p->session))
		return true;
	/* Our challenge echoed: the incarnation answering it is alive now,
	 * whichever we challenged. */
	if (control && p->handler_id == DP_CTRL_PONG &&
		dp_auth_echo_ok(&a->b, p->src, dp_parsed_nonce(p)))
		return true;
	/* Its challenge answered, always (one PONG per PING, as to anyone):
	 * our PONG is how it takes us. */
	if (control && p->handler_id == DP_CTRL_PING)
		dp_send_nonce(a, p->src, DP_CTRL_PONG, p->session, dp_parsed_nonce(p));
	if (a->b.now_tsc - peer->chal_tsc < a->b.timer_period_tsc)
		return false;
	peer->chal_tsc = a->b.now_tsc;
	dp_send_nonce(a, p->src, DP_CTRL_PING, p->session,
		dp_auth_nonce(&a->b, p->src, a->b.now_tsc / a->b.tsc_hz));
	return false;
}

bool
dp_frame_fresh(struct dp_rpc *a, const struct dp_parsed *p)
{
	struct dp_peer *peer = &a->peers[p->src];
	uint64_t seq = rte_be_to_cpu_64(p->hdr->seq), d;

	if (peer->rw_session != p->session) {
		peer->rw_session = p->session;
		peer->rw_top = seq;
		peer->rw_bits = 1;
		return true;
	}
	if (seq > peer->rw_top) {
		d = seq - peer->rw_top;
		peer->rw_bits = d >= 64 ? 1 : peer->rw_bits << d | 1;
		peer->rw_top = seq;
		return true;
	}
	d = peer->rw_top - seq;
	if (d >= 64 || (peer->rw_bits >> d & 1) != 0)
		return false;
	peer->rw_bits |= UINT64_C(1) << d;
	return true;
}
