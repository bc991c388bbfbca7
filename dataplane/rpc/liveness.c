/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Liveness (docs/reliability.md, "Liveness"): keep-alives, peers declared
 * down or forgotten when they leave, and incarnations (dp_new_session();
 * dp_check_session() in dp_liveness.h).  The poller, but dp_new_session().
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "dp_rpc.h"
#include "dp_client.h"
#include "dp_liveness.h"
#include "dp_server.h"
#include "dp_submit.h"
#include "dprpc_atomic.h"
#include <dprpc/dprpc_stats.h>

/* What dp_new_session() hands out, serialised: agents may be created by
 * several threads at once. */
static pthread_mutex_t dp_session_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t dp_session_last, dp_session_count, dp_session_forced;

/* splitmix64's finaliser: a bijection that spreads every input bit. */
static uint64_t
dp_mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

/* An incarnation id (docs/reliability.md, "Incarnations and restarts"):
 * 64 random bits, or the clock, TSC and pid mixed without entropy; never 0
 * (dst_session's "not known") nor the id handed out just before; the count
 * mixed in keeps one process's ids apart. */
uint64_t
dp_new_session(void)
{
	struct timespec ts;
	uint64_t s;

	if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != (ssize_t)sizeof(s)) {
		clock_gettime(CLOCK_REALTIME, &ts);
		s = dp_mix64((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
		    dp_mix64(rte_rdtsc() ^ ((uint64_t)getpid() << 32));
	}
	pthread_mutex_lock(&dp_session_lock);
	s ^= dp_mix64(++dp_session_count);
	if (dp_session_forced != 0) {
		s = dp_session_forced;
		dp_session_forced = 0;
	}
	while (s == 0 || s == dp_session_last)
		s = dp_mix64(s + 1);
	dp_session_last = s;
	pthread_mutex_unlock(&dp_session_lock);
	return s;
}

void
dp_set_next_session(uint64_t id)
{
	pthread_mutex_lock(&dp_session_lock);
	dp_session_forced = id;
	pthread_mutex_unlock(&dp_session_lock);
}

void
dp_send_control(struct dp_rpc *a, unsigned int to, enum dp_ctrl_op op)
{
	/* Its session 0 while not known; lost for want of an mbuf, a later
	 * keep-alive will do. */
	dp_send_nonce(a, to, op, a->peers[to].session, 0);
}

void
dp_send_slot_ctrl(struct dp_rpc *a, unsigned int to, uint16_t slot, uint32_t req_num,
	enum dp_ctrl_op op, uint16_t flags, uint16_t budget)
{
	struct dp_hdr_fields f = {
		.type = DP_FRAME_CONTROL,
		.src = a->b.rank,
		.dst = (uint16_t)to,
		.slot = slot,
		.session = a->b.session,
		.dst_session = a->peers[to].session,
		.req_num = req_num,
		.handler_id = op,
		.flags = flags,
		.budget = budget,
	};
	struct rte_mbuf *m = rte_pktmbuf_alloc(a->b.mp);
	uint8_t *frame;

	if (m == NULL) {
		/* As if lost: a CANCEL wanting its answer is resent; one
		 * that is not lets the request run, its answer stale. */
		dp_count(&a->b.st.tx_dropped, 1);
		return;
	}
	frame = (uint8_t *)rte_pktmbuf_append(m, DP_HDRS_LEN);
	dp_frame_write(frame, a->peers[to].tmpl, &f, NULL, 0);
	dp_meta_plain(m);
	dp_stage_tx(a, m);
}

void
dp_send_cancel(struct dp_rpc *a, unsigned int to, uint16_t slot, uint32_t req_num)
{
	dp_send_slot_ctrl(a, to, slot, req_num, DP_CTRL_CANCEL, 0, 0);
}

void
dp_hello(struct dp_rpc *a, unsigned int p, uint64_t now, uint64_t interval)
{
	struct dp_peer *peer = &a->peers[p];

	if (peer->last_ping_tsc != 0 && now - peer->last_ping_tsc < RTE_MAX(interval, 1u))
		return;
	peer->last_ping_tsc = now;
	dp_count(&a->b.st.keepalives, 1);
	dp_send_control(a, p, DP_CTRL_PING);
}

void
dp_nudge(struct dp_rpc *a, unsigned int src)
{
	struct dp_peer *peer = &a->peers[src];

	/* Tell the sender who we are: our PONG carries our session, so it
	 * sees our restart (or learns us) now rather than at its next
	 * keep-alive.  One per timer period and peer: a window of requests
	 * in flight needs one answer, not one each. */
	if (peer->nudge_tsc != 0 && a->b.now_tsc - peer->nudge_tsc < a->b.timer_period_tsc)
		return;
	peer->nudge_tsc = a->b.now_tsc;
	dp_send_control(a, src, DP_CTRL_PONG);
}

void
dp_wrong_incarnation(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_parsed *p)
{
	dp_drop_frame(&a->b, m, DPRPC_DROP_WRONG_INCARNATION);
	if (p->type == DP_FRAME_REQUEST)
		dp_nudge(a, p->src);
}

static void
dp_peer_down(struct dp_rpc *a, unsigned int p, uint64_t silent_tsc)
{
	char msg[DPRPC_ERRMSG_MAX];

	/* Relaxed: the poller is the only writer of state (struct dp_peer). */
	dp_store_relaxed(&a->peers[p].state, DPRPC_PEER_DOWN);
	dp_peer_addressable(&a->peers[p]);
	dp_count(&a->b.st.peers_down, 1);
	snprintf(msg, sizeof(msg), "worker %s is down: nothing heard for %" PRIu64 " ms",
		a->b.world.w[p].name, silent_tsc * 1000 / a->b.tsc_hz);
	dp_fail_peer_slots(a, p, -EHOSTDOWN, msg);
	/* What the server side holds for it goes too (docs/reliability.md,
	 * "Budgets and reclaim"). */
	dp_srv_reclaim(a, p);
	dp_srv_cancel_all(a, p); /* nobody waits for those answers */
	dp_ext_peer_event(&a->b, p, DP_PEER_EV_DOWN);
	dp_peer_tell(a, p, DPRPC_PEER_EVENT_DOWN);
}

/* Worker @p left the world (its LEAVE): forgotten, not declared down. */
void
dp_peer_left(struct dp_rpc *a, unsigned int p)
{
	struct dp_peer *peer = &a->peers[p];
	char msg[DPRPC_ERRMSG_MAX];

	/* Relaxed: the poller is the only writer of state (struct dp_peer). */
	dp_store_relaxed(&peer->state, DPRPC_PEER_LEFT);
	dp_peer_addressable(peer);
	peer->left_session = peer->session;
	dp_count(&a->b.st.peers_left, 1);
	snprintf(msg, sizeof(msg), "worker %s left the world", a->b.world.w[p].name);
	dp_fail_peer_slots(a, p, -ESHUTDOWN, msg);
	/* What the server side holds for it goes, as at peer-down. */
	dp_srv_reclaim(a, p);
	/* For the extensions it is gone as a worker declared down is. */
	dp_ext_peer_event(&a->b, p, DP_PEER_EV_DOWN);
	dp_peer_tell(a, p, DPRPC_PEER_EVENT_LEFT);
}

void
dp_liveness(struct dp_rpc *a, uint64_t now)
{
	/* This poll left frames unread (after this agent's own stall, say):
	 * a silent peer's may be among them, so it is declared down only
	 * once they are read, or at twice the timeout. */
	uint64_t timeout =
		a->b.rx_full_tsc == a->b.now_tsc ? 2 * a->peer_timeout_tsc : a->peer_timeout_tsc;
	unsigned int p;

	for (p = 0; p < a->b.world.n; p++) {
		struct dp_peer *peer = &a->peers[p];
		/* Relaxed: the poller's own write, read back. */
		uint8_t state = dp_load_relaxed(&peer->state);
		bool busy = peer->nb_free != a->max_outstanding;
		uint64_t since;

		if (p == a->b.rank || (state == DPRPC_PEER_UNKNOWN && !busy) ||
			state == DPRPC_PEER_LEFT)
			continue;
		if (state == DPRPC_PEER_DOWN) {
			/* Calls that slipped in as it went down. */
			if (busy)
				dp_fail_peer_slots(a, p, -EHOSTDOWN, "worker is down");
			since = peer->last_rx_tsc;
		} else if (state == DPRPC_PEER_UNKNOWN) {
			if (peer->silent_since_tsc == 0)
				peer->silent_since_tsc = now;
			/* Never heard from: not declared down within the
			 * rendezvous window, its silence counted from the
			 * window's end (rendezvous.c).  Relaxed: a time. */
			since = RTE_MAX(
				peer->silent_since_tsc, dp_load_relaxed(&a->down_after_tsc));
			if (since > now)
				continue;
		} else {
			since = peer->last_rx_tsc;
		}
		if (timeout != 0 && state != DPRPC_PEER_DOWN && now - since >= timeout) {
			dp_peer_down(a, p, now - since);
			continue;
		}
		if (a->keepalive_tsc != 0 && now - since >= a->keepalive_tsc &&
			now - peer->last_ping_tsc >= a->keepalive_tsc) {
			/* Silent: maybe its MAC changed (arp.c). */
			if (now - since >= 2 * a->keepalive_tsc)
				dp_arp_doubt(&a->b, a->b.world.addrs[p].ip);
			peer->last_ping_tsc = now;
			dp_count(&a->b.st.keepalives, 1);
			dp_send_control(a, p, DP_CTRL_PING);
		}
	}
}
