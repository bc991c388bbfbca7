/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Liveness (docs/reliability.md).  Any frame from a peer proves it alive.
 * A peer heard from before, or with calls waiting on it, gets a CONTROL
 * PING after keepalive_tsc of silence, which it answers with a PONG; after
 * peer_timeout_tsc of silence it is declared down: its pending calls fail
 * with -EHOSTDOWN, new ones fail at submission, and the application's
 * peer_event is told.  Pings go on, so a peer that comes back is seen.
 *
 * Incarnations (dp_new_session(), dp_check_session() in dp_liveness.h):
 * a peer seen with a newer session restarted.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include <rte_mbuf.h>

#include "dp_agent.h"
#include "dp_client.h"
#include "dp_liveness.h"
#include "dp_server.h"
#include "dp_tx.h"
#include "dprpc_atomic.h"

/* The last session id handed out, for dp_new_session(): agents may be
 * created by several threads at once. */
static pthread_mutex_t dp_session_lock = PTHREAD_MUTEX_INITIALIZER;

/* An incarnation id: the creation time in ms, so that a restarted worker's
 * frames compare newer than its old ones (serial-number order, good across
 * 24 days), and strictly newer than the last one made in this process even
 * within the same millisecond. */
uint32_t
dp_new_session(void)
{
	static uint32_t last;
	struct timespec ts;
	uint32_t s;

	clock_gettime(CLOCK_REALTIME, &ts);
	s = (uint32_t)((uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000);
	pthread_mutex_lock(&dp_session_lock);
	if ((int32_t)(s - last) <= 0)
		s = last + 1;
	last = s;
	pthread_mutex_unlock(&dp_session_lock);
	return s;
}

void
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

static void
dp_peer_down(struct dprpc_agent *a, unsigned int p, uint64_t silent_tsc)
{
	char msg[DPRPC_ERRMSG_MAX];

	/* Relaxed: the poller is the only writer of state (struct dp_peer). */
	dp_store_relaxed(&a->peers[p].state, DPRPC_PEER_DOWN);
	dp_count(&a->st.peers_down, 1);
	snprintf(msg, sizeof(msg), "worker %s is down: nothing heard for %" PRIu64 " ms",
		a->world.w[p].name, silent_tsc * 1000 / a->tsc_hz);
	dp_fail_peer_slots(a, p, -EHOSTDOWN, msg);
	/* What the server side holds for it goes too (docs/reliability.md,
	 * "Budgets and reclaim"). */
	dp_srv_reclaim(a, p);
	if (a->peer_event != NULL)
		a->peer_event(a, p, false, a->peer_event_arg);
}

void
dp_liveness(struct dprpc_agent *a, uint64_t now)
{
	unsigned int p;

	for (p = 0; p < a->world.n; p++) {
		struct dp_peer *peer = &a->peers[p];
		/* Relaxed: the poller's own write, read back. */
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
