/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Joining a running world, the members' side (join.c has the protocol):
 * the assigner of ranks, installing a worker, the announcements to every
 * member, the answers to the joiner.  The poller.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "dp_membership.h"
#include "dp_eal.h"
#include "dp_join.h"
#include "dp_liveness.h"
#include "dp_poll.h"
#include "dp_port.h"
#include "dp_rendezvous.h"
#include "dprpc_atomic.h"
#include <dprpc/dprpc_stats.h>

/* Whether a joiner can be reached from here: through the default port, or
 * a memif link of the map's mesh, hot-plugged as it joins. */
bool
dp_join_reachable(const struct dp_membership *a)
{
	return a->r.b.port.has_default_port || a->r.b.world.mesh_dir[0] != '\0';
}

/* The assigner as this worker sees it: the lowest rank up, or its own;
 * never the worker named @joiner (it is joining again: that rank's old
 * incarnation cannot answer). */
unsigned int
dp_join_assigner(const struct dp_membership *a, const char *joiner)
{
	unsigned int r;

	for (r = 0; r < a->r.b.rank; r++)
		/* Relaxed: the poller's own write, read back. */
		if (dp_load_relaxed(&a->r.peers[r].state) == DPRPC_PEER_UP &&
			strcmp(a->r.b.world.w[r].name, joiner) != 0)
			return r;
	return a->r.b.rank;
}

static int
dp_join_find(const struct dp_membership *a, const struct dp_world_entry *e, bool *same)
{
	unsigned int r;

	for (r = 0; r < a->r.b.world.n; r++) {
		const struct dp_world_entry *w = &a->r.b.world.w[r];
		bool addr = w->addr.ip == e->addr.ip && w->addr.port == e->addr.port;

		if (strcmp(w->name, e->name) == 0 || addr) {
			*same = strcmp(w->name, e->name) == 0 && addr &&
				memcmp(&w->addr.mac, &e->addr.mac, sizeof(w->addr.mac)) == 0;
			return (int)r;
		}
	}
	return -1;
}

/* The state towards @r, allocated once: an install that failed after it
 * (its port) is made again on the next ANNOUNCE with it; one that failed
 * half-way through the allocations starts again from nothing. */
int
dp_join_peer(struct dp_membership *a, unsigned int r)
{
	struct dp_peer *peer = &a->r.peers[r];

	if (peer->slots != NULL && peer->free_slots != NULL && peer->keep != NULL &&
		peer->srv != NULL)
		return 0;
	free(peer->slots);
	free(peer->free_slots);
	free(peer->keep);
	free(peer->srv);
	free(peer->srv_keep);
	peer->slots = NULL;
	peer->free_slots = NULL;
	peer->keep = NULL;
	peer->srv = NULL;
	peer->srv_keep = NULL;
	peer->srv_cap = 0;
	return dp_peer_init(&a->r, r);
}

/* Worker @e becomes rank @r == world.n (the poller): 0 or -errno. */
static int
dp_join_install(
	struct dp_membership *a, unsigned int r, const struct dp_world_entry *e, uint64_t session)
{
	int rc;

	if (r >= a->r.b.world_cap)
		return -ENOSPC;
	a->r.b.world.w[r] = *e;
	a->r.b.world.addrs[r] = e->addr;
	rc = dp_join_peer(a, r);
	if (rc != 0)
		return rc;
	/* Its memif link hot-plugged here (the poller owns the ports; a
	 * memif server's probe and start wait for nobody), or the default
	 * port. */
	rc = dp_port_link_add(&a->r.b.port, a->r.b.rank, r);
	if (rc != 0)
		return rc;
	a->join.session[r] = session;
	a->r.b.rx_ctx.nb_workers = r + 1;
	/* Release: the entry, peer and port above before the size (pairs
	 * with the acquire load in dp_world_n()). */
	__atomic_store_n(&a->r.b.world.n, r + 1, __ATOMIC_RELEASE);
	DP_LOG(INFO, "agent %s: worker %s joined the world as rank %u", a->r.b.name, e->name, r);
	dp_ext_peer_event(&a->r.b, r, DP_PEER_EV_JOINED);
	dp_peer_tell(&a->r, r, DPRPC_PEER_EVENT_JOINED);
	return 0;
}

/* The answer to the joiner of @q: its rank and a page of members from
 * @q->have, or the refusal @status. */
void
dp_join_answer(struct dp_membership *a, const struct dp_join_msg *q, unsigned int rank, int status,
	uint64_t nonce)
{
	uint8_t buf[DPRPC_MAX_FRAME_PAYLOAD];
	struct dp_join_msg *ack = (struct dp_join_msg *)buf;
	struct dp_join_entry *ents = (struct dp_join_entry *)(ack + 1);
	struct dp_world_entry joiner;
	unsigned int have = rte_be_to_cpu_16(q->have), n = a->r.b.world.n, count = 0, i;
	uint8_t tmpl[DP_L2L4_LEN], *states;

	*ack = *q;
	ack->rank = rte_cpu_to_be_16((uint16_t)rank);
	ack->status = rte_cpu_to_be_16((uint16_t)status);
	if (status == 0 && have < n)
		count = RTE_MIN(n - have, (unsigned int)DP_JOIN_PAGE);
	states = (uint8_t *)(ents + count);
	for (i = 0; i < count; i++) {
		dp_join_entry_out(&ents[i], &a->r.b.world.w[have + i]);
		/* Relaxed: the poller's own write, read back. */
		states[i] =
			have + i != a->r.b.rank && dp_load_relaxed(&a->r.peers[have + i].state) ==
							   DPRPC_PEER_LEFT
				? DPRPC_PEER_LEFT
				: 0;
	}
	ack->world_n = rte_cpu_to_be_16((uint16_t)n);
	ack->count = rte_cpu_to_be_16((uint16_t)count);
	/* The last page through our join port: hang up once this incarnation
	 * of the joiner is heard from (dp_join_timer()). */
	if (status == 0 && have + count >= n && a->r.b.port.join_port >= 0 && rank < n) {
		a->join.port_owner = (uint16_t)rank;
		a->join.port_owner_session = rte_be_to_cpu_64(q->session);
	}
	dp_join_entry_in(&joiner, &q->joiner);
	/* A joiner without a MAC is found by ARP, even by a world of MACs. */
	dp_arp_peer(&a->r.b, &joiner.addr);
	dp_l2l4_template(tmpl, &a->r.b.self_addr, &joiner.addr, a->r.b.ttl);
	dp_join_send(a, tmpl, DP_RANK_NONE, rte_be_to_cpu_64(q->session), DP_CTRL_JOIN_ACK, ack,
		(uint32_t)(sizeof(*ack) + count * (sizeof(*ents) + 1)), nonce);
}

/* Tell the member that relayed @q (@via, maybe ourselves) the outcome. */
static void
dp_join_done(struct dp_membership *a, const struct dp_join_msg *q, unsigned int via,
	unsigned int rank, int status)
{
	struct dp_join_msg d = *q;

	if (via == a->r.b.rank) {
		dp_join_answer(a, q, rank, status, 0);
		return;
	}
	d.rank = rte_cpu_to_be_16((uint16_t)rank);
	d.status = rte_cpu_to_be_16((uint16_t)status);
	dp_join_send_member(a, via, DP_CTRL_JOIN_DONE, &d, sizeof(d));
}

/* Whether every other member has acknowledged the announcement of @r
 * (those down or gone excepted): the members below it, and those above it
 * (one joining again) that have their world, i.e. are not being announced
 * themselves (a joiner not answered yet cannot answer). */
bool
dp_join_announced(struct dp_membership *a, unsigned int r, bool send)
{
	struct dp_join_msg msg;
	unsigned int m;
	bool all = true;

	memset(&msg, 0, sizeof(msg));
	dp_join_entry_out(&msg.joiner, &a->r.b.world.w[r]);
	msg.session = rte_cpu_to_be_64(a->join.session[r]);
	msg.rank = rte_cpu_to_be_16((uint16_t)r);
	for (m = 0; m < a->r.b.world.n; m++) {
		/* Relaxed: the poller's own write, read back. */
		uint8_t st = dp_load_relaxed(&a->r.peers[m].state);

		if (m == r || m == a->r.b.rank || (m > r && a->join.announcing[m]) ||
			st == DPRPC_PEER_DOWN || st == DPRPC_PEER_LEFT ||
			(a->join.acked[r] & (UINT64_C(1) << m)) != 0)
			continue;
		all = false;
		if (send)
			dp_join_send_member(a, m, DP_CTRL_ANNOUNCE, &msg, sizeof(msg));
	}
	if (all && a->join.announcing[r]) {
		a->join.announcing[r] = false;
		a->join.nb_announcing--;
	}
	return all;
}

/* The assigner: worker @r, same name and address, joins again as incarnation
 * @session (it restarted): it keeps its rank, and every member learns the
 * new incarnation (ANNOUNCE) before it is answered.  The members see the
 * restart as any peer's when its frames come (dp_check_session()). */
static void
dp_join_rejoin(struct dp_membership *a, unsigned int r, uint64_t session)
{
	DP_LOG(INFO, "agent %s: worker %s joins again (restarted) as rank %u", a->r.b.name,
		a->r.b.world.w[r].name, r);
	a->join.prev_session[r] = a->join.session[r];
	a->join.session[r] = session;
	a->join.acked[r] = 0;
	if (!a->join.announcing[r]) {
		a->join.announcing[r] = true;
		a->join.nb_announcing++;
	}
	(void)dp_join_announced(a, r, true);
}

/* The assigner: the JOIN @q (ours, or relayed by @via). */
void
dp_join_assign(struct dp_membership *a, const struct dp_join_msg *q, unsigned int via)
{
	struct dp_world_entry e;
	uint64_t session = rte_be_to_cpu_64(q->session);
	bool same = false;
	int r, rc;

	dp_join_entry_in(&e, &q->joiner);
	if (!dp_join_reachable(a)) {
		dp_join_done(a, q, via, 0, EOPNOTSUPP);
		return;
	}
	r = dp_join_find(a, &e, &same);
	if (r >= 0) {
		/* Another worker under a taken name or address; or one of
		 * the two members in this exchange, which are up. */
		if (!same || (unsigned int)r == a->r.b.rank || (unsigned int)r == via) {
			dp_join_done(a, q, via, 0, EEXIST);
			return;
		}
		if (a->join.session[r] != session) {
			/* A late JOIN of an incarnation already replaced. */
			if (session == a->join.prev_session[r] ||
				dp_session_retired(&a->r.peers[r], session)) {
				dp_count(&a->r.b.st.drops[DPRPC_DROP_OLD_SESSION], 1);
				return;
			}
			dp_join_rejoin(a, (unsigned int)r, session);
		}
		/* A duplicate, or a restart: the rank it has, once every
		 * member knows this incarnation. */
		if (!a->join.announcing[r] || dp_join_announced(a, (unsigned int)r, false))
			dp_join_done(a, q, via, (unsigned int)r, 0);
		return;
	}
	r = (int)a->r.b.world.n;
	rc = dp_join_install(a, (unsigned int)r, &e, session);
	if (rc != 0) {
		DP_LOG(WARNING, "agent %s: worker %s cannot join: %s", a->r.b.name, e.name,
			strerror(-rc));
		dp_join_done(a, q, via, 0, -rc);
		return;
	}
	a->join.announcing[r] = true;
	a->join.acked[r] = 0;
	a->join.nb_announcing++;
	if (dp_join_announced(a, (unsigned int)r, true))
		dp_join_done(a, q, via, (unsigned int)r, 0);
}

/* A member: ANNOUNCE of rank @r. */
void
dp_join_announce_rx(struct dp_membership *a, unsigned int from, const struct dp_join_msg *q)
{
	unsigned int r = rte_be_to_cpu_16(q->rank);
	struct dp_world_entry e;
	struct dp_join_msg ack;
	int rc;

	dp_join_entry_in(&e, &q->joiner);
	if (r > a->r.b.world.n) {
		/* Out of order: the ones before it first (resent). */
		dp_count(&a->r.b.st.drops[DPRPC_DROP_FOREIGN], 1);
		return;
	}
	if (r < a->r.b.world.n) {
		if (strcmp(a->r.b.world.w[r].name, e.name) != 0) {
			DP_LOG(ERR, "agent %s: told %s joined as rank %u, which is %s here",
				a->r.b.name, e.name, r, a->r.b.world.w[r].name);
			dp_count(&a->r.b.st.drops[DPRPC_DROP_FOREIGN], 1);
			return;
		}
		/* A duplicate, or the worker joined again (restarted): its
		 * incarnation, should this member assign ranks later. */
		if (r != a->r.b.rank)
			a->join.session[r] = rte_be_to_cpu_64(q->session);
	} else {
		rc = dp_join_reachable(a) ? dp_join_install(a, r, &e, rte_be_to_cpu_64(q->session))
					  : -EOPNOTSUPP;
		if (rc != 0) {
			DP_LOG(ERR, "agent %s: worker %s joined as rank %u, not installed: %s",
				a->r.b.name, e.name, r, strerror(-rc));
			dp_count(&a->r.b.st.drops[DPRPC_DROP_FOREIGN], 1);
			return;
		}
	}
	ack = *q;
	dp_join_send_member(a, from, DP_CTRL_ANNOUNCE_ACK, &ack, sizeof(ack));
}
