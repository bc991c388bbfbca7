/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Joining a running world (docs/worlds.md "Joining", the operations in
 * dp_wire.h): a worker whose map gives it no rank joins by naming one
 * member; every member learns it, it learns every member.
 *
 *   joiner J --JOIN--> member M --JOIN_RELAY--> assigner A
 *   A: J's rank r = its world size (ranks are never reused), J installed,
 *      ANNOUNCE(r) to every member below r, resent until each ANNOUNCE_ACKs
 *   A --JOIN_DONE--> M --JOIN_ACK--> J (its rank, the members from "have")
 *
 * The assigner is the lowest rank up (or self) as the member sees it, the
 * leader collectives use: one assigner while the members agree on who is
 * up, so two joiners through two members get two ranks.  Nothing but the
 * assigner's announcements keeps state between frames: J resends JOIN
 * (with how many members it holds) every DP_RDV_PING_MS until the last
 * page of members; each JOIN is relayed anew, and A answers it only once
 * every member acknowledged J's rank, so a lost JOIN, RELAY, DONE or ACK
 * is made up by the next JOIN, a lost ANNOUNCE or ANNOUNCE_ACK by the next
 * round.  A duplicate JOIN (same name, address and incarnation) finds J's
 * rank and gets it again; one of a new incarnation (J restarted) gets that
 * rank back, announced anew to every member (dp_join_rejoin()); another
 * worker under a taken name or address is refused EEXIST.  A member accepts ANNOUNCE(r) only when r is its world
 * size, so every member's world stays 0..n-1 whatever the order frames
 * arrive in.
 *
 * Installing a worker (dp_join_install()) is the poller's: its entry, its
 * peer (allocated: peers[] was sized for max_workers at creation and never
 * moves), the port that reaches it (the default port), then world.n with
 * release, so that any thread that reads the size with acquire
 * (dp_world_n()) sees all of it.  The joiner installs the whole world the
 * same way once it has every member.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "dp_agent.h"
#include "dp_eal.h"
#include "dp_join.h"
#include "dp_liveness.h"
#include "dp_poll.h"
#include "dp_port.h"
#include "dp_rendezvous.h"
#include "dp_tx.h"
#include "dprpc_atomic.h"

static void
dp_join_entry_out(struct dp_join_entry *o, const struct dp_world_entry *e)
{
	memset(o, 0, sizeof(*o));
	memcpy(o->name, e->name, sizeof(o->name));
	memcpy(o->mac, e->addr.mac.addr_bytes, sizeof(o->mac));
	o->ip = e->addr.ip;
	o->port = e->addr.port;
}

static void
dp_join_entry_in(struct dp_world_entry *e, const struct dp_join_entry *o)
{
	memcpy(e->name, o->name, sizeof(e->name));
	e->name[sizeof(e->name) - 1] = '\0';
	memcpy(e->addr.mac.addr_bytes, o->mac, sizeof(o->mac));
	e->addr.ip = o->ip;
	e->addr.port = o->port;
}

/* Send a join operation @op with @len payload bytes, headers from @tmpl,
 * to rank @dst (DP_RANK_NONE: a worker not in the world). */
static void
dp_join_send(struct dprpc_agent *a, const uint8_t *tmpl, uint16_t dst, uint64_t dst_session,
	enum dp_ctrl_op op, const void *payload, uint32_t len)
{
	struct dp_hdr_fields f = {
		.type = DP_FRAME_CONTROL,
		.src = a->rank,
		.dst = dst,
		.session = a->session,
		.dst_session = dst_session,
		.handler_id = op,
	};
	struct rte_mbuf *m = rte_pktmbuf_alloc(a->mp);
	uint8_t *frame;

	if (m == NULL) {
		dp_count(&a->st.tx_dropped, 1); /* resent with the next round */
		return;
	}
	frame = (uint8_t *)rte_pktmbuf_append(m, DP_HDRS_LEN + len);
	if (frame == NULL) {
		rte_pktmbuf_free(m);
		dp_count(&a->st.tx_dropped, 1);
		return;
	}
	dp_frame_write(frame, tmpl, &f, payload, len);
	dp_meta_plain(m);
	dp_stage_out(a, m);
}

/* To member @r. */
static void
dp_join_send_member(struct dprpc_agent *a, unsigned int r, enum dp_ctrl_op op,
	const struct dp_join_msg *msg, uint32_t len)
{
	dp_join_send(a, a->peers[r].tmpl, (uint16_t)r, a->peers[r].session, op, msg, len);
}

/* Whether a joiner can be reached from here: through the default port, or
 * a memif link of the map's mesh, hot-plugged as it joins. */
static bool
dp_join_reachable(const struct dprpc_agent *a)
{
	return a->has_default_port || a->world.mesh_dir[0] != '\0';
}

/* The assigner as this worker sees it: the lowest rank up, or its own;
 * never the worker named @joiner (it is joining again: that rank's old
 * incarnation cannot answer). */
static unsigned int
dp_join_assigner(const struct dprpc_agent *a, const char *joiner)
{
	unsigned int r;

	for (r = 0; r < a->rank; r++)
		/* Relaxed: the poller's own write, read back. */
		if (dp_load_relaxed(&a->peers[r].state) == DPRPC_PEER_UP &&
			strcmp(a->world.w[r].name, joiner) != 0)
			return r;
	return a->rank;
}

static int
dp_join_find(const struct dprpc_agent *a, const struct dp_world_entry *e, bool *same)
{
	unsigned int r;

	for (r = 0; r < a->world.n; r++) {
		const struct dp_world_entry *w = &a->world.w[r];
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
static int
dp_join_peer(struct dprpc_agent *a, unsigned int r)
{
	struct dp_peer *peer = &a->peers[r];

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
	return dp_peer_init(a, r);
}

/* Worker @e becomes rank @r == world.n (the poller): 0 or -errno. */
static int
dp_join_install(
	struct dprpc_agent *a, unsigned int r, const struct dp_world_entry *e, uint64_t session)
{
	int rc;

	if (r >= a->world_cap)
		return -ENOSPC;
	a->world.w[r] = *e;
	a->world.addrs[r] = e->addr;
	rc = dp_join_peer(a, r);
	if (rc != 0)
		return rc;
	/* Its memif link hot-plugged here (the poller owns the ports; a
	 * memif server's probe and start wait for nobody), or the default
	 * port. */
	rc = dp_port_link_add(a, r);
	if (rc != 0)
		return rc;
	a->join.session[r] = session;
	a->rx_ctx.nb_workers = r + 1;
	/* Release: the entry, peer and port above before the size (pairs
	 * with the acquire load in dp_world_n()). */
	__atomic_store_n(&a->world.n, r + 1, __ATOMIC_RELEASE);
	DP_LOG(INFO, "agent %s: worker %s joined the world as rank %u", a->name, e->name, r);
	dp_ext_peer_event(a, r, DP_PEER_EV_JOINED);
	if (a->peer_event != NULL)
		a->peer_event(a, r, true, a->peer_event_arg);
	return 0;
}

/* The answer to the joiner of @q: its rank and a page of members from
 * @q->have, or the refusal @status. */
static void
dp_join_answer(struct dprpc_agent *a, const struct dp_join_msg *q, unsigned int rank, int status)
{
	uint8_t buf[DPRPC_MAX_FRAME_PAYLOAD];
	struct dp_join_msg *ack = (struct dp_join_msg *)buf;
	struct dp_join_entry *ents = (struct dp_join_entry *)(ack + 1);
	struct dp_world_entry joiner;
	unsigned int have = rte_be_to_cpu_16(q->have), n = a->world.n, count = 0, i;
	uint8_t tmpl[DP_L2L4_LEN], *states;

	*ack = *q;
	ack->rank = rte_cpu_to_be_16((uint16_t)rank);
	ack->status = rte_cpu_to_be_16((uint16_t)status);
	if (status == 0 && have < n)
		count = RTE_MIN(n - have, (unsigned int)DP_JOIN_PAGE);
	states = (uint8_t *)(ents + count);
	for (i = 0; i < count; i++) {
		dp_join_entry_out(&ents[i], &a->world.w[have + i]);
		/* Relaxed: the poller's own write, read back. */
		states[i] = have + i != a->rank && dp_load_relaxed(&a->peers[have + i].state) ==
							   DPRPC_PEER_LEFT
				    ? DPRPC_PEER_LEFT
				    : 0;
	}
	ack->world_n = rte_cpu_to_be_16((uint16_t)n);
	ack->count = rte_cpu_to_be_16((uint16_t)count);
	/* The last page through our join port: hang up once this incarnation
	 * of the joiner is heard from (dp_join_timer()). */
	if (status == 0 && have + count >= n && a->join_port >= 0 && rank < n) {
		a->join.port_owner = (uint16_t)rank;
		a->join.port_owner_session = rte_be_to_cpu_64(q->session);
	}
	dp_join_entry_in(&joiner, &q->joiner);
	dp_l2l4_template(tmpl, &a->self_addr, &joiner.addr);
	dp_join_send(a, tmpl, DP_RANK_NONE, rte_be_to_cpu_64(q->session), DP_CTRL_JOIN_ACK, ack,
		(uint32_t)(sizeof(*ack) + count * (sizeof(*ents) + 1)));
}

/* Tell the member that relayed @q (@via, maybe ourselves) the outcome. */
static void
dp_join_done(struct dprpc_agent *a, const struct dp_join_msg *q, unsigned int via,
	unsigned int rank, int status)
{
	struct dp_join_msg d = *q;

	if (via == a->rank) {
		dp_join_answer(a, q, rank, status);
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
static bool
dp_join_announced(struct dprpc_agent *a, unsigned int r, bool send)
{
	struct dp_join_msg msg;
	unsigned int m;
	bool all = true;

	memset(&msg, 0, sizeof(msg));
	dp_join_entry_out(&msg.joiner, &a->world.w[r]);
	msg.session = rte_cpu_to_be_64(a->join.session[r]);
	msg.rank = rte_cpu_to_be_16((uint16_t)r);
	for (m = 0; m < a->world.n; m++) {
		/* Relaxed: the poller's own write, read back. */
		uint8_t st = dp_load_relaxed(&a->peers[m].state);

		if (m == r || m == a->rank || (m > r && a->join.announcing[m]) ||
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
dp_join_rejoin(struct dprpc_agent *a, unsigned int r, uint64_t session)
{
	DP_LOG(INFO, "agent %s: worker %s joins again (restarted) as rank %u", a->name,
		a->world.w[r].name, r);
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
static void
dp_join_assign(struct dprpc_agent *a, const struct dp_join_msg *q, unsigned int via)
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
		if (!same || (unsigned int)r == a->rank || (unsigned int)r == via) {
			dp_join_done(a, q, via, 0, EEXIST);
			return;
		}
		if (a->join.session[r] != session) {
			/* A late JOIN of an incarnation already replaced. */
			if (session == a->join.prev_session[r] ||
				dp_session_retired(&a->peers[r], session)) {
				dp_count(&a->st.drops[DPRPC_DROP_OLD_SESSION], 1);
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
	r = (int)a->world.n;
	rc = dp_join_install(a, (unsigned int)r, &e, session);
	if (rc != 0) {
		DP_LOG(WARNING, "agent %s: worker %s cannot join: %s", a->name, e.name,
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
static void
dp_join_announce_rx(struct dprpc_agent *a, unsigned int from, const struct dp_join_msg *q)
{
	unsigned int r = rte_be_to_cpu_16(q->rank);
	struct dp_world_entry e;
	struct dp_join_msg ack;
	int rc;

	dp_join_entry_in(&e, &q->joiner);
	if (r > a->world.n) {
		/* Out of order: the ones before it first (resent). */
		dp_count(&a->st.drops[DPRPC_DROP_FOREIGN], 1);
		return;
	}
	if (r < a->world.n) {
		if (strcmp(a->world.w[r].name, e.name) != 0) {
			DP_LOG(ERR, "agent %s: told %s joined as rank %u, which is %s here",
				a->name, e.name, r, a->world.w[r].name);
			dp_count(&a->st.drops[DPRPC_DROP_FOREIGN], 1);
			return;
		}
		/* A duplicate, or the worker joined again (restarted): its
		 * incarnation, should this member assign ranks later. */
		if (r != a->rank)
			a->join.session[r] = rte_be_to_cpu_64(q->session);
	} else {
		rc = dp_join_reachable(a) ? dp_join_install(a, r, &e, rte_be_to_cpu_64(q->session))
					  : -EOPNOTSUPP;
		if (rc != 0) {
			DP_LOG(ERR, "agent %s: worker %s joined as rank %u, not installed: %s",
				a->name, e.name, r, strerror(-rc));
			dp_count(&a->st.drops[DPRPC_DROP_FOREIGN], 1);
			return;
		}
	}
	ack = *q;
	dp_join_send_member(a, from, DP_CTRL_ANNOUNCE_ACK, &ack, sizeof(ack));
}

/* The joiner: a page of members, or the refusal. */
static void
dp_join_ack_rx(struct dprpc_agent *a, const struct dp_parsed *p, const struct dp_join_msg *q)
{
	struct dp_join *j = &a->join;
	/* Packed: read in place, whatever the payload's alignment. */
	const struct dp_join_entry *ents = (const struct dp_join_entry *)(p->payload + sizeof(*q));
	unsigned int have = rte_be_to_cpu_16(q->have), count = rte_be_to_cpu_16(q->count);
	unsigned int n = rte_be_to_cpu_16(q->world_n), rank = rte_be_to_cpu_16(q->rank), i, r;
	const uint8_t *states = (const uint8_t *)(ents + count);
	int status = rte_be_to_cpu_16(q->status);

	if (!atomic_load_explicit(&j->active, memory_order_acquire) ||
		p->dst_session != a->session || a->world.n != 0 ||
		/* Relaxed: only the poller stores status while active; this
		 * is the poller reading its own store. */
		atomic_load_explicit(&j->status, memory_order_relaxed) != 0 ||
		p->payload_len != sizeof(*q) + count * (sizeof(*ents) + 1)) {
		dp_count(&a->st.drops[DPRPC_DROP_FOREIGN], 1);
		return;
	}
	if (status != 0) {
		/* Release: pairs with the joining thread's acquire. */
		atomic_store_explicit(&j->status, -status, memory_order_release);
		return;
	}
	if (n > a->world_cap || rank >= n) {
		/* Release: pairs with the joining thread's acquire. */
		atomic_store_explicit(&j->status, -ENOSPC, memory_order_release);
		return;
	}
	if (have != j->have || have + count > n)
		return; /* a page we hold, or out of order: the next JOIN asks again */
	for (i = 0; i < count; i++) {
		dp_join_entry_in(&j->entries[have + i], &ents[i]);
		j->left[have + i] = states[i];
	}
	j->have = (uint16_t)(have + count);
	j->n = (uint16_t)RTE_MAX(n, (unsigned int)j->n);
	if (j->have < j->n)
		return;
	/* Every member: the world, installed as the members install a
	 * joiner; our own rank first. */
	j->entries[rank] = a->world.self;
	for (r = 0; r < j->n; r++) {
		a->world.w[r] = j->entries[r];
		a->world.addrs[r] = j->entries[r].addr;
	}
	a->rank = (uint16_t)rank;
	a->rx_ctx.self_rank = (uint16_t)rank;
	/* The member's join port is done with (its server hangs up once it
	 * hears from us): never polled or restarted again. */
	if (a->join_port >= 0) {
		a->ports[a->join_port].retired = true;
		a->ports[a->join_port].quiet = true;
		a->ports[a->join_port].up = false;
	}
	for (r = 0; r < j->n; r++) {
		/* Our own peer too: calls to self take its slots. */
		int rc = dp_join_peer(a, r);

		if (rc == 0 && r != rank)
			rc = dp_port_link_add(a, r); /* a memif client, or the default port */
		if (rc != 0) {
			/* Release: pairs with the joining thread's acquire. */
			atomic_store_explicit(&j->status, rc, memory_order_release);
			return;
		}
		/* Our own rank excepted: an incarnation of ours that left
		 * before this one joined again. */
		if (j->left[r] == DPRPC_PEER_LEFT && r != rank) {
			/* Relaxed: not published yet (world.n below). */
			dp_store_relaxed(&a->peers[r].state, DPRPC_PEER_LEFT);
			dp_peer_addressable(&a->peers[r]);
		}
	}
	j->session[rank] = a->session;
	/* Named by later joiners in turn, over memif: a join port of its
	 * own (a failure only logged: over the default port it needs none). */
	if (a->world.mesh_dir[0] != '\0' && a->world_cap > j->n && dp_port_join_open(a, NULL) != 0)
		DP_LOG(WARNING, "agent %s: no join port: later joiners cannot name it", a->name);
	a->rx_ctx.nb_workers = j->n;
	/* Release: pairs with dp_world_n(). */
	__atomic_store_n(&a->world.n, j->n, __ATOMIC_RELEASE);
	/* The extensions learn our rank. */
	dp_ext_peer_event(a, rank, DP_PEER_EV_JOINED);
	DP_LOG(INFO, "agent %s: joined a world of %u workers as rank %u", a->name, j->n, rank);
	/* Release: pairs with the joining thread's acquire. */
	atomic_store_explicit(&j->status, 1, memory_order_release);
}

void
dp_join_rx(struct dprpc_agent *a, const struct dp_parsed *p)
{
	struct dp_join_msg q;
	struct dp_world_entry e;
	unsigned int via, assigner;

	if (p->payload_len < sizeof(q)) {
		dp_count(&a->st.drops[DPRPC_DROP_BAD_LENGTH], 1);
		return;
	}
	memcpy(&q, p->payload, sizeof(q));
	if (p->dst == DP_RANK_NONE) {
		if (p->handler_id == DP_CTRL_JOIN_ACK) {
			dp_join_ack_rx(a, p, &q);
			return;
		}
		dp_join_entry_in(&e, &q.joiner);
		/* A JOIN, from the worker it names, to a member. */
		if (p->handler_id != DP_CTRL_JOIN || a->world.n == 0 ||
			rte_be_to_cpu_64(q.session) != p->session) {
			dp_count(&a->st.drops[DPRPC_DROP_FOREIGN], 1);
			return;
		}
		if (!dp_join_reachable(a)) {
			dp_join_answer(a, &q, 0, EOPNOTSUPP);
			return;
		}
		assigner = dp_join_assigner(a, e.name);
		if (assigner == a->rank) {
			dp_join_assign(a, &q, a->rank);
		} else {
			q.via = rte_cpu_to_be_16(a->rank);
			dp_join_send_member(a, assigner, DP_CTRL_JOIN_RELAY, &q, sizeof(q));
		}
		return;
	}
	/* Between members. */
	switch (p->handler_id) {
	case DP_CTRL_JOIN_RELAY:
		via = rte_be_to_cpu_16(q.via);
		if (via >= a->world.n || via == a->rank)
			break;
		dp_join_assign(a, &q, via);
		return;
	case DP_CTRL_ANNOUNCE:
		dp_join_announce_rx(a, p->src, &q);
		return;
	case DP_CTRL_ANNOUNCE_ACK: {
		unsigned int r = rte_be_to_cpu_16(q.rank);

		if (r < a->world.n && p->src < 64) {
			a->join.acked[r] |= UINT64_C(1) << p->src;
			if (a->join.announcing[r])
				(void)dp_join_announced(a, r, false);
		}
		return;
	}
	case DP_CTRL_JOIN_DONE:
		dp_join_answer(a, &q, rte_be_to_cpu_16(q.rank), rte_be_to_cpu_16(q.status));
		return;
	default:
		break;
	}
	dp_count(&a->st.drops[DPRPC_DROP_FOREIGN], 1);
}

bool
dp_join_busy(struct dprpc_agent *a)
{
	/* Relaxed: a hint; the timer reads active again with acquire. */
	return a->join.nb_announcing != 0 || a->join.port_owner != DP_RANK_NONE ||
	       atomic_load_explicit(&a->join.active, memory_order_relaxed);
}

void
dp_join_timer(struct dprpc_agent *a, uint64_t now)
{
	struct dp_join *j = &a->join;
	unsigned int r;

	if (j->announce_tsc != 0 && now - j->announce_tsc < a->tsc_hz / 1000 * DP_RDV_PING_MS)
		return;
	j->announce_tsc = now;
	for (r = 0; r < a->world.n && j->nb_announcing != 0; r++)
		if (j->announcing[r])
			(void)dp_join_announced(a, r, true);
	/* Relaxed: the poller's own write, read back.  The joiner's incarnation
	 * we answered, not an earlier one of the same rank. */
	if (j->port_owner != DP_RANK_NONE &&
		dp_load_relaxed(&a->peers[j->port_owner].state) != DPRPC_PEER_UNKNOWN &&
		a->peers[j->port_owner].session == j->port_owner_session) {
		dp_port_join_reset(a);
		j->port_owner = DP_RANK_NONE;
	}
	/* Relaxed status: the poller reads its own store (it alone stores
	 * status while active). */
	if (atomic_load_explicit(&j->active, memory_order_acquire) &&
		atomic_load_explicit(&j->status, memory_order_relaxed) == 0) {
		struct dp_join_msg q;

		/* Over memif: our client to the member's join port first,
		 * then JOIN once its link is up (dp_ports_timer()). */
		if (a->world.mesh_dir[0] != '\0') {
			int rc = a->join_port >= 0 ? 0 : dp_port_join_open(a, j->member);

			if (rc != 0) {
				/* Release: pairs with the joining thread's acquire. */
				atomic_store_explicit(&j->status, rc, memory_order_release);
				return;
			}
			if (!a->ports[a->join_port].up)
				return;
		}

		memset(&q, 0, sizeof(q));
		dp_join_entry_out(&q.joiner, &a->world.self);
		q.session = rte_cpu_to_be_64(a->session);
		q.have = rte_cpu_to_be_16(j->have);
		dp_join_send(a, j->tmpl, DP_RANK_NONE, 0, DP_CTRL_JOIN, &q, sizeof(q));
	}
}

void
dp_join_free(struct dprpc_agent *a)
{
	free(a->join.entries);
	free(a->join.left);
	a->join.entries = NULL;
	a->join.left = NULL;
}

int
dprpc_world_join(struct dprpc_agent *a, const char *member, uint64_t timeout_us)
{
	struct dp_join *j;
	struct dp_world_entry m;
	uint64_t deadline;
	char err[160];
	bool idle = false;
	int rc;

	if (a == NULL || member == NULL)
		return -EINVAL;
	if (dp_world_parse_member(member, &m, err, sizeof(err)) != 0) {
		DP_LOG(ERR, "agent %s: %s", a->name, err);
		return -EINVAL;
	}
	if (!a->world.joiner || dp_world_n(a) != 0)
		return -EALREADY;
	if (dp_on_poller(a))
		return -EDEADLK;
	j = &a->join;
	/* Acquire: pairs with the release of the thread that joined before
	 * (its writes to j). */
	if (!atomic_compare_exchange_strong_explicit(
		    &j->claimed, &idle, true, memory_order_acquire, memory_order_relaxed))
		return -EBUSY;
	dp_thread_lcore();
	if (j->entries == NULL) {
		j->entries = calloc(a->world_cap, sizeof(*j->entries));
		j->left = calloc(a->world_cap, 1);
		if (j->entries == NULL || j->left == NULL) {
			atomic_store_explicit(&j->claimed, false, memory_order_release);
			return -ENOMEM;
		}
	}
	dp_l2l4_template(j->tmpl, &a->self_addr, &m.addr);
	memcpy(j->member, m.name, sizeof(j->member));
	atomic_store_explicit(&j->status, 0, memory_order_relaxed);
	/* Release: tmpl, entries and status before the poller sends. */
	atomic_store_explicit(&j->active, true, memory_order_release);
	deadline = dp_deadline_tsc(a, rte_rdtsc(), timeout_us);
	if (deadline == 0)
		deadline = UINT64_MAX; /* none */
	for (;;) {
		/* Acquire: pairs with the poller's release (dp_join_ack_rx()):
		 * the world it installed. */
		rc = atomic_load_explicit(&j->status, memory_order_acquire);
		if (rc != 0)
			break;
		rc = dp_wait_step(a, deadline);
		if (rc != 0)
			break;
	}
	/* Relaxed: the poller stops acting for the join; nothing it reads
	 * after this store was written for it. */
	atomic_store_explicit(&j->active, false, memory_order_relaxed);
	/* Joined: hear from every member (the rendezvous), so that each has
	 * heard from us too: the member we named then frees its join port
	 * for the next joiner, and the memif links just plugged are up. */
	if (rc == 1) {
		uint64_t now = rte_rdtsc(), left = 0;

		if (deadline != UINT64_MAX)
			left = now < deadline ? RTE_MAX(dp_tsc_to_us(a, deadline - now), 1u) : 1;
		rc = dprpc_world_wait(a, left, NULL, 0);
		if (rc == 0)
			rc = 1;
	}
	atomic_store_explicit(&j->claimed, false, memory_order_release);
	if (rc < 0 && rc != -ETIMEDOUT)
		DP_LOG(ERR, "agent %s: joining through %s refused: %s", a->name, m.name,
			strerror(-rc));
	return rc == 1 ? 0 : rc;
}
