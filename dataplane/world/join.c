/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Joining a running world (docs/worlds.md, "Joining"; the operations in
 * dp_wire.h): a worker whose map gives it no rank joins by naming one
 * member; every member learns it, it learns every member.
 *
 *   joiner J --JOIN--> member M --JOIN_RELAY--> assigner A
 *   A: J's rank r = its world size (ranks are never reused), J installed,
 *      ANNOUNCE(r) to every member below r, resent until each ANNOUNCE_ACKs
 *   A --JOIN_DONE--> M --JOIN_ACK--> J (its rank, the members from "have")
 *
 * Only the assigner's announcements keep state between frames: a lost
 * frame is made up by J's next JOIN or A's next round.  A member accepts
 * ANNOUNCE(r) only when r is its world size, so every world stays 0..n-1.
 * Installing a worker (dp_join_install()) stores world.n last, with
 * release, for dp_world_n()'s acquire.
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
#include "dp_stage.h"
#include "dp_stamp.h"
#include "dprpc_atomic.h"
#include <dprpc/dprpc_stats.h>

/* Send a join operation @op with @len payload bytes, headers from @tmpl,
 * to rank @dst (DP_RANK_NONE: a worker not in the world); @nonce in the
 * header's req_num and status (a challenge, or its echo; else 0). */
void
dp_join_send(struct dp_membership *a, const uint8_t *tmpl, uint16_t dst, uint64_t dst_session,
	enum dp_ctrl_op op, const void *payload, uint32_t len, uint64_t nonce)
{
	struct dp_hdr_fields f = {
		.type = DP_FRAME_CONTROL,
		.src = a->r.b.rank,
		.dst = dst,
		.session = a->r.b.session,
		.dst_session = dst_session,
		.req_num = (uint32_t)(nonce >> 32),
		.status = (uint32_t)nonce,
		.handler_id = op,
	};
	struct rte_mbuf *m = rte_pktmbuf_alloc(a->r.b.mp);
	uint8_t *frame;

	if (m == NULL) {
		dp_count(&a->r.b.st.tx_dropped, 1); /* resent with the next round */
		return;
	}
	frame = (uint8_t *)rte_pktmbuf_append(m, DP_HDRS_LEN + len);
	if (frame == NULL) {
		rte_pktmbuf_free(m);
		dp_count(&a->r.b.st.tx_dropped, 1);
		return;
	}
	dp_frame_write(frame, tmpl, &f, payload, len);
	dp_meta_plain(m);
	dp_stage_out(&a->r.b, m);
}

/* To member @r. */
void
dp_join_send_member(struct dp_membership *a, unsigned int r, enum dp_ctrl_op op,
	const struct dp_join_msg *msg, uint32_t len)
{
	dp_join_send(a, a->r.peers[r].tmpl, (uint16_t)r, a->r.peers[r].session, op, msg, len, 0);
}

/* The joiner: JOIN to the member named, echoing its last challenge. */
static void
dp_join_send_join(struct dp_membership *a)
{
	struct dp_join_msg q;

	memset(&q, 0, sizeof(q));
	dp_join_entry_out(&q.joiner, &a->r.b.world.self);
	q.session = rte_cpu_to_be_64(a->r.b.session);
	q.have = rte_cpu_to_be_16(a->join.have);
	dp_join_send(a, a->join.tmpl, DP_RANK_NONE, 0, DP_CTRL_JOIN, &q, sizeof(q), a->join.echo);
}

/* A member of a world with a key: whether the JOIN @p (@q) echoes our
 * challenge of this second or the one before to its session, so its
 * incarnation is alive now.  If not, counted unconfirmed and challenged
 * (a JOIN_ACK with EAGAIN and the nonce): a JOIN replayed from an
 * incarnation that is gone is never relayed. */
static bool
dp_join_proven(struct dp_membership *a, const struct dp_parsed *p, const struct dp_join_msg *q)
{
	if (dp_auth_echo_ok(&a->r.b, p->session, dp_parsed_nonce(p)))
		return true;
	dp_count(&a->r.b.st.drops[DPRPC_DROP_UNCONFIRMED], 1);
	dp_join_answer(a, q, 0, EAGAIN,
		dp_auth_nonce(&a->r.b, p->session, a->r.b.now_tsc / a->r.b.tsc_hz));
	return false;
}

/* The joiner: a page of members, or the refusal. */
static void
dp_join_ack_rx(struct dp_membership *a, const struct dp_parsed *p, const struct dp_join_msg *q)
{
	struct dp_join *j = &a->join;
	/* Packed: read in place, whatever the payload's alignment. */
	const struct dp_join_entry *ents = (const struct dp_join_entry *)(p->payload + sizeof(*q));
	unsigned int have = rte_be_to_cpu_16(q->have), count = rte_be_to_cpu_16(q->count);
	unsigned int n = rte_be_to_cpu_16(q->world_n), rank = rte_be_to_cpu_16(q->rank), i, r;
	const uint8_t *states = (const uint8_t *)(ents + count);
	int status = rte_be_to_cpu_16(q->status);

	if (!atomic_load_explicit(&j->active, memory_order_acquire) ||
		p->dst_session != a->r.b.session || a->r.b.world.n != 0 ||
		/* Relaxed: only the poller stores status while active; this
		 * is the poller reading its own store. */
		atomic_load_explicit(&j->status, memory_order_relaxed) != 0 ||
		p->payload_len != sizeof(*q) + count * (sizeof(*ents) + 1)) {
		dp_count(&a->r.b.st.drops[DPRPC_DROP_FOREIGN], 1);
		return;
	}
	if (status == EAGAIN && a->r.b.auth.on) {
		/* The member's challenge: echoed in our JOINs from now on,
		 * and at once. */
		j->echo = dp_parsed_nonce(p);
		dp_join_send_join(a);
		return;
	}
	if (status != 0) {
		/* Release: pairs with the joining thread's acquire. */
		atomic_store_explicit(&j->status, -status, memory_order_release);
		return;
	}
	if (n > a->r.b.world_cap || rank >= n) {
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
	j->entries[rank] = a->r.b.world.self;
	for (r = 0; r < j->n; r++) {
		a->r.b.world.w[r] = j->entries[r];
		a->r.b.world.addrs[r] = j->entries[r].addr;
	}
	a->r.b.rank = (uint16_t)rank;
	a->r.b.rx_ctx.self_rank = (uint16_t)rank;
	/* The member's join port is done with (its server hangs up once it
	 * hears from us): never polled or restarted again. */
	if (a->r.b.port.join_port >= 0) {
		struct dp_port *pt = &a->r.b.port.ports[a->r.b.port.join_port];

		dp_port_set_state(pt, DP_LINK_RETIRED);
		dp_port_set_up(pt, false);
	}
	for (r = 0; r < j->n; r++) {
		/* Our own peer too: calls to self take its slots. */
		int rc = dp_join_peer(a, r);

		if (rc == 0 && r != rank)
			rc = dp_port_link_add(&a->r.b.port, a->r.b.rank,
				r); /* a memif client, or the default port */
		if (rc != 0) {
			/* Release: pairs with the joining thread's acquire. */
			atomic_store_explicit(&j->status, rc, memory_order_release);
			return;
		}
		/* Our own rank excepted: an incarnation of ours that left
		 * before this one joined again. */
		if (j->left[r] == DPRPC_PEER_LEFT && r != rank) {
			/* Relaxed: not published yet (world.n below). */
			dp_store_relaxed(&a->r.peers[r].state, DPRPC_PEER_LEFT);
			dp_peer_addressable(&a->r.peers[r]);
		}
	}
	j->session[rank] = a->r.b.session;
	/* Named by later joiners in turn, over memif: a join port of its
	 * own (a failure only logged: over the default port it needs none). */
	if (a->r.b.world.mesh_dir[0] != '\0' && a->r.b.world_cap > j->n &&
		dp_port_join_open(&a->r.b.port, NULL) != 0)
		DP_LOG(WARNING, "agent %s: no join port: later joiners cannot name it",
			a->r.b.name);
	a->r.b.rx_ctx.nb_workers = j->n;
	/* Release: pairs with dp_world_n(). */
	__atomic_store_n(&a->r.b.world.n, j->n, __ATOMIC_RELEASE);
	/* The extensions learn our rank. */
	dp_ext_peer_event(&a->r.b, rank, DP_PEER_EV_JOINED);
	DP_LOG(INFO, "agent %s: joined a world of %u workers as rank %u", a->r.b.name, j->n, rank);
	/* Release: pairs with the joining thread's acquire. */
	atomic_store_explicit(&j->status, 1, memory_order_release);
}

void
dp_join_rx(struct dp_membership *a, const struct dp_parsed *p)
{
	struct dp_join_msg q;
	struct dp_world_entry e;
	unsigned int via, assigner;

	if (p->payload_len < sizeof(q)) {
		dp_count(&a->r.b.st.drops[DPRPC_DROP_BAD_LENGTH], 1);
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
		if (p->handler_id != DP_CTRL_JOIN || a->r.b.world.n == 0 ||
			rte_be_to_cpu_64(q.session) != p->session) {
			dp_count(&a->r.b.st.drops[DPRPC_DROP_FOREIGN], 1);
			return;
		}
		if (!dp_join_reachable(a)) {
			dp_join_answer(a, &q, 0, EOPNOTSUPP, 0);
			return;
		}
		if (a->r.b.auth.on && !dp_join_proven(a, p, &q))
			return;
		assigner = dp_join_assigner(a, e.name);
		if (assigner == a->r.b.rank) {
			dp_join_assign(a, &q, a->r.b.rank);
		} else {
			q.via = rte_cpu_to_be_16(a->r.b.rank);
			dp_join_send_member(a, assigner, DP_CTRL_JOIN_RELAY, &q, sizeof(q));
		}
		return;
	}
	/* Between members. */
	switch (p->handler_id) {
	case DP_CTRL_JOIN_RELAY:
		via = rte_be_to_cpu_16(q.via);
		if (via >= a->r.b.world.n || via == a->r.b.rank)
			break;
		dp_join_assign(a, &q, via);
		return;
	case DP_CTRL_ANNOUNCE:
		dp_join_announce_rx(a, p->src, &q);
		return;
	case DP_CTRL_ANNOUNCE_ACK: {
		unsigned int r = rte_be_to_cpu_16(q.rank);

		if (r < a->r.b.world.n && p->src < 64) {
			a->join.acked[r] |= UINT64_C(1) << p->src;
			if (a->join.announcing[r])
				(void)dp_join_announced(a, r, false);
		}
		return;
	}
	case DP_CTRL_JOIN_DONE:
		dp_join_answer(a, &q, rte_be_to_cpu_16(q.rank), rte_be_to_cpu_16(q.status), 0);
		return;
	default:
		break;
	}
	dp_count(&a->r.b.st.drops[DPRPC_DROP_FOREIGN], 1);
}

bool
dp_join_busy(struct dp_membership *a)
{
	/* Relaxed: a hint; the timer reads active again with acquire. */
	return a->join.nb_announcing != 0 || a->join.port_owner != DP_RANK_NONE ||
	       atomic_load_explicit(&a->join.active, memory_order_relaxed);
}

void
dp_join_timer(struct dp_membership *a, uint64_t now)
{
	struct dp_join *j = &a->join;
	unsigned int r;

	if (j->announce_tsc != 0 && now - j->announce_tsc < a->r.b.tsc_hz / 1000 * DP_RDV_PING_MS)
		return;
	j->announce_tsc = now;
	for (r = 0; r < a->r.b.world.n && j->nb_announcing != 0; r++)
		if (j->announcing[r])
			(void)dp_join_announced(a, r, true);
	/* Relaxed: the poller's own write, read back.  The joiner's incarnation
	 * we answered, not an earlier one of the same rank. */
	if (j->port_owner != DP_RANK_NONE &&
		dp_load_relaxed(&a->r.peers[j->port_owner].state) != DPRPC_PEER_UNKNOWN &&
		a->r.peers[j->port_owner].session == j->port_owner_session) {
		dp_port_join_reset(&a->r.b.port);
		j->port_owner = DP_RANK_NONE;
	}
	/* Relaxed status: the poller reads its own store (it alone stores
	 * status while active). */
	if (atomic_load_explicit(&j->active, memory_order_acquire) &&
		atomic_load_explicit(&j->status, memory_order_relaxed) == 0) {
		/* Over memif: our client to the member's join port first,
		 * then JOIN once its link is up (dp_ports_timer()). */
		if (a->r.b.world.mesh_dir[0] != '\0') {
			int rc = a->r.b.port.join_port >= 0
					 ? 0
					 : dp_port_join_open(&a->r.b.port, j->member);

			if (rc != 0) {
				/* Release: pairs with the joining thread's acquire. */
				atomic_store_explicit(&j->status, rc, memory_order_release);
				return;
			}
			if (!dp_port_up(&a->r.b.port.ports[a->r.b.port.join_port]))
				return;
		}

		dp_join_send_join(a);
	}
}

void
dp_join_free(struct dp_membership *a)
{
	free(a->join.entries);
	free(a->join.left);
	a->join.entries = NULL;
	a->join.left = NULL;
}

int
dp_join_begin(struct dp_membership *a, const struct dp_world_entry *m)
{
	struct dp_join *j = &a->join;
	bool idle = false;

	/* Acquire: pairs with the release of the thread that joined before
	 * (its writes to j). */
	if (!atomic_compare_exchange_strong_explicit(
		    &j->claimed, &idle, true, memory_order_acquire, memory_order_relaxed))
		return -EBUSY;
	dp_thread_lcore();
	if (j->entries == NULL) {
		j->entries = calloc(a->r.b.world_cap, sizeof(*j->entries));
		j->left = calloc(a->r.b.world_cap, 1);
		if (j->entries == NULL || j->left == NULL) {
			atomic_store_explicit(&j->claimed, false, memory_order_release);
			return -ENOMEM;
		}
	}
	dp_l2l4_template(j->tmpl, &a->r.b.self_addr, &m->addr, a->r.b.ttl);
	memcpy(j->member, m->name, sizeof(j->member));
	j->echo = 0;
	atomic_store_explicit(&j->status, 0, memory_order_relaxed);
	/* Release: tmpl, member, echo, entries and status before the poller
	 * sends (pairs with its acquires of active: dp_join_timer(),
	 * dp_join_ack_rx()). */
	atomic_store_explicit(&j->active, true, memory_order_release);
	return 0;
}

int
dp_join_status(struct dp_membership *a)
{
	/* Acquire: pairs with the poller's release (dp_join_ack_rx()):
	 * the world it installed. */
	return atomic_load_explicit(&a->join.status, memory_order_acquire);
}

void
dp_join_stop(struct dp_membership *a)
{
	/* Relaxed: the poller stops acting for the join; nothing it reads
	 * after this store was written for it. */
	atomic_store_explicit(&a->join.active, false, memory_order_relaxed);
}

void
dp_join_release(struct dp_membership *a)
{
	atomic_store_explicit(&a->join.claimed, false, memory_order_release);
}
