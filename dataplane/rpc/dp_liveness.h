/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Liveness (liveness.c): incarnations (session ids), keep-alives, peers
 * declared down or seen to restart, CONTROL frames.  The poller, but
 * dp_new_session() (the thread that creates an agent).  The two checks the
 * rx demux (poll.c) makes on every frame, dp_check_session() and
 * dp_peer_heard(), are inline here.
 */
#ifndef DP_LIVENESS_H
#define DP_LIVENESS_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "dp_rpc.h"
#include "dp_client.h"
#include "dp_server.h"

/* A new incarnation id for an agent being created: random, never 0. */
uint64_t dp_new_session(void);
/* Tests: the next dp_new_session() returns @id (if not 0; an @id equal to
 * the id handed out just before is changed all the same).  Any thread. */
void dp_set_next_session(uint64_t id);
/* Send a CONTROL frame (@op) to worker @to. */
void dp_send_control(struct dp_rpc *a, unsigned int to, enum dp_ctrl_op op);
/* Send @to a CONTROL frame @op (with @flags and @budget) naming the call
 * on @slot, request @req_num: a CANCEL, a CANCEL_ACK or a HELD. */
void dp_send_slot_ctrl(struct dp_rpc *a, unsigned int to, uint16_t slot, uint32_t req_num,
	enum dp_ctrl_op op, uint16_t flags, uint16_t budget);
/* Tell @to that our call on @slot, request @req_num, was cancelled (a
 * CONTROL frame, DP_CTRL_CANCEL), once, wanting no answer. */
void dp_send_cancel(struct dp_rpc *a, unsigned int to, uint16_t slot, uint32_t req_num);
/* Ask peer @p for its incarnation (a PING, counted in keepalives) unless
 * one went less than @interval TSC ago: calls wait for its answer. */
void dp_hello(struct dp_rpc *a, unsigned int p, uint64_t now, uint64_t interval);
/* With a world key (proof.c): whether the sender's incarnation on @p is
 * the one we know (or a retired one, dp_check_session()'s to drop), or
 * has just proven itself by echoing our challenge of this second or the
 * one before in a PONG.  Otherwise false: the frame is dropped, a PING
 * among them answered, and the peer challenged (a PING carrying the nonce,
 * dp_auth_nonce()), at most once per timer period and peer. */
bool dp_session_proven(struct dp_rpc *a, const struct dp_parsed *p);
/* With a world key: whether frame @p, of the peer's current incarnation,
 * is new to its replay window (recorded); false: a replay. */
bool dp_frame_fresh(struct dp_rpc *a, const struct dp_parsed *p);
/* A CONTROL frame @op to @to carrying @nonce (req_num, status: a PING's
 * challenge, a PONG's echo of it; 0: none), addressed to incarnation
 * @dst_session. */
void dp_send_nonce(struct dp_rpc *a, unsigned int to, enum dp_ctrl_op op, uint64_t dst_session,
	uint64_t nonce);
/* A frame from @p->src addressed to another incarnation of ours (or to
 * none): dropped (wrong_incarnation); a request is answered by a PONG. */
void dp_wrong_incarnation(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_parsed *p);
/* Answer @src, which addressed us by another incarnation, with a PONG
 * (our incarnation), at most once per timer period. */
void dp_nudge(struct dp_rpc *a, unsigned int src);
/* Keep-alives and peer time-outs, once per timer period (dp_run_timers()). */
void dp_liveness(struct dp_rpc *a, uint64_t now);
/* Worker @p left the world (its LEAVE, rendezvous.c): forgotten, not
 * declared down. */
void dp_peer_left(struct dp_rpc *a, unsigned int p);

/* Whether @s is one of @peer's incarnations before its current one. */
static inline bool
dp_session_retired(const struct dp_peer *peer, uint64_t s)
{
	unsigned int i, n = RTE_MIN(peer->nb_retired, (unsigned int)DP_RETIRED);

	for (i = 0; i < n; i++)
		if (peer->retired[i] == s)
			return true;
	return false;
}

/* Recompute @peer->tx_session after its session or state changed: a peer
 * down or gone (DPRPC_PEER_LEFT) is not addressed. */
static inline void
dp_peer_addressable(struct dp_peer *peer)
{
	/* Relaxed: the poller's own write, read back. */
	peer->tx_session = peer->session_known && dp_load_relaxed(&peer->state) < DPRPC_PEER_DOWN
				   ? peer->session
				   : 0;
}

/* Whether the sender's session on frame @p passes (docs/reliability.md,
 * "Incarnations and restarts"): the first one seen is adopted, a retired
 * one is a late frame (false), any other a restart: the peer's server
 * state cleared, its pending calls failed -ECONNRESET, its old id retired. */
static inline bool
dp_check_session(struct dp_rpc *a, const struct dp_parsed *p)
{
	struct dp_peer *peer = &a->peers[p->src];
	char msg[DPRPC_ERRMSG_MAX];

	if (likely(peer->session_known && p->session == peer->session))
		return true;
	if (!peer->session_known) {
		peer->session = p->session;
		peer->session_known = true;
		dp_peer_addressable(peer);
		dp_client_unpark(a, p->src); /* calls waited for it */
		return true;
	}
	if (dp_session_retired(peer, p->session))
		return false;
	/* What the old incarnation asked for is nobody's to wait for:
	 * flagged while its session still names it. */
	dp_srv_cancel_all(a, p->src);
	peer->retired[peer->nb_retired++ % DP_RETIRED] = peer->session;
	peer->session = p->session;
	dp_peer_addressable(peer);
	dp_srv_reset(a, peer);
	dp_count(&a->b.st.peers_restarted, 1);
	snprintf(msg, sizeof(msg), "worker %s restarted", a->b.world.w[p->src].name);
	/* The calls fail, and every frame still queued for the old
	 * incarnation goes (dp_tx_purge()): requests of those calls,
	 * responses and ACKs for a client that is gone. */
	dp_fail_peer_slots(a, p->src, -ECONNRESET, msg);
	dp_ext_peer_event(&a->b, p->src, DP_PEER_EV_RESTARTED);
	dp_peer_tell(a, p->src, DPRPC_PEER_EVENT_RESTARTED);
	return true;
}

/* A frame came from peer @p: it is up. */
static inline void
dp_peer_heard(struct dp_rpc *a, unsigned int p)
{
	struct dp_peer *peer = &a->peers[p];
	/* Relaxed, here and below: the poller is the only writer of state,
	 * which other threads read as a snapshot (struct dp_peer). */
	uint8_t was = dp_load_relaxed(&peer->state);

	peer->last_rx_tsc = a->b.now_tsc;
	peer->silent_since_tsc = 0;
	if (was == DPRPC_PEER_UP)
		return;
	/* Left the world: forgotten until a new incarnation of it comes. */
	if (was == DPRPC_PEER_LEFT && peer->left_session == peer->session)
		return;
	dp_store_relaxed(&peer->state, DPRPC_PEER_UP);
	dp_peer_addressable(peer);
	if (was == DPRPC_PEER_DOWN) {
		dp_ext_peer_event(&a->b, p, DP_PEER_EV_UP);
		dp_peer_tell(a, p, DPRPC_PEER_EVENT_UP);
	}
}

#endif /* DP_LIVENESS_H */
