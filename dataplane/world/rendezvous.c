/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The world's membership (docs/worlds.md, "The rendezvous", "The rendezvous
 * window", "Leaving"): dprpc_world_wait()'s pings to every worker not heard
 * from, the window in which such a worker is not declared down
 * (down_after_tsc), dprpc_world_leave()'s LEAVE to every worker up until
 * it answers, a LEAVE received (dp_peer_left(): forgotten, not declared
 * down), and what a worker knows of the others.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_pause.h>

#include "dp_membership.h"
#include "dp_client.h"
#include "dp_eal.h"
#include "dp_link_close.h"
#include "dp_liveness.h"
#include "dp_poll.h"
#include "dp_port.h"
#include "dp_rendezvous.h"
#include "dp_server.h"
#include "dp_stage.h"
#include "dprpc_atomic.h"

/* Whether @pt is worker @p's own memif link and went down (pt->lost): @p
 * stopped its port, has nothing left to read and cannot be told, so a
 * leave does not wait for it (docs/worlds.md, "Leaving"). */
static bool
dp_link_gone(const struct dp_port *pt, unsigned int p)
{
	/* Or its worker said it closes it (link_close.c): the link is quiet
	 * from then on, and the timer no longer sets lost. */
	return dp_own_link(pt, p) && (pt->lost || pt->state == DP_LINK_CLOSED);
}

void
dp_rendezvous_timer(struct dp_membership *a, uint64_t now)
{
	/* Relaxed, both: hints (struct dprpc_agent, struct dp_base). */
	bool leaving = dp_load_relaxed(&a->leaving);
	bool waiting = dp_load_relaxed(&a->r.b.startup_waiters) != 0;
	unsigned int p;

	if (a->rdv_ping_tsc != 0 && now - a->rdv_ping_tsc < a->r.b.tsc_hz / 1000 * DP_RDV_PING_MS)
		return;
	a->rdv_ping_tsc = now;
	for (p = 0; p < a->r.b.world.n; p++) {
		/* Relaxed: the poller's own write, read back. */
		uint8_t state = dp_load_relaxed(&a->r.peers[p].state);
		const struct dp_port *pt = &a->r.b.port.ports[a->r.b.port.peer_port[p]];

		if (p == a->r.b.rank)
			continue;
		if (leaving && dp_link_gone(pt, p)) {
			/* Relaxed: flags (struct dp_peer). */
			if (state == DPRPC_PEER_UP)
				atomic_store_explicit(
					&a->leave[p].leave_acked, true, memory_order_relaxed);
			atomic_store_explicit(&a->leave[p].answer_due, false, memory_order_relaxed);
			continue;
		}
		if (!dp_port_up(pt))
			continue;
		/* Relaxed: a flag (struct dp_peer).  Its LEAVE crossed ours
		 * and we wait for its answer: ours again, should it not have
		 * had it (a LEAVE not sent: no mbuf, a full tx ring), else
		 * neither would ever answer. */
		if (leaving &&
			atomic_load_explicit(&a->leave[p].answer_due, memory_order_relaxed)) {
			dp_send_control(&a->r, p, DP_CTRL_LEAVE);
			continue;
		}
		if (leaving && state == DPRPC_PEER_UP &&
			!atomic_load_explicit(&a->leave[p].leave_acked, memory_order_relaxed)) {
			dp_send_control(&a->r, p, DP_CTRL_LEAVE);
			/* Relaxed: a flag (struct dp_peer). */
			atomic_store_explicit(&a->leave[p].leave_sent, true, memory_order_relaxed);
		} else if (waiting && state != DPRPC_PEER_UP) {
			dp_count(&a->r.b.st.keepalives, 1);
			dp_send_control(&a->r, p, DP_CTRL_PING);
		}
	}
}

void
dp_link_answer(struct dp_membership *a, unsigned int p, uint32_t op)
{
	struct dp_port *pt = &a->r.b.port.ports[a->r.b.port.peer_port[p]];
	unsigned int i;

	/* The answer is the last use of the link: out before the link goes
	 * quiet (a quiet port's staged frames are dropped).  Its worker
	 * reads its rx queue meanwhile, so room comes; bounded all the
	 * same, and a lost answer costs that worker its wait only. */
	dp_send_control(&a->r, p, op);
	for (i = 0; i < DP_LINK_CLOSE_FLUSH_TRIES; i++) {
		(void)dp_tx_flush(&a->r.b);
		if (pt->tx_n == 0)
			break;
		rte_pause();
	}
	dp_port_go_quiet(pt);
	dp_port_set_state(pt, DP_LINK_ANSWERED);
	pt->answered_tsc = rte_rdtsc();
}

void
dp_leave_rx(struct dp_membership *a, unsigned int p, uint32_t op)
{
	if (op == DP_CTRL_LEAVE) {
		/* Relaxed: the poller's own write, read back. */
		bool first = dp_load_relaxed(&a->r.peers[p].state) != DPRPC_PEER_LEFT;
		struct dp_port *pt = &a->r.b.port.ports[a->r.b.port.peer_port[p]];

		/* Relaxed, both: flags (struct dprpc_agent, struct dp_peer). */
		bool crossed = dp_load_relaxed(&a->leaving) &&
			       atomic_load_explicit(&a->leave[p].leave_sent, memory_order_relaxed);

		if (first)
			dp_peer_left(&a->r, p);
		if (!dp_own_link(pt, p)) {
			/* Every LEAVE is answered: the first answer may be
			 * lost. */
			dp_send_control(&a->r, p, DP_CTRL_LEAVE_ACK);
			return;
		}
		/* Its own memif link: we answer, go quiet, and close only
		 * after it closed its end (link_close.c).  Crossed LEAVEs: the
		 * lower rank's end answers, the other keeps reading for that
		 * answer (docs/worlds.md, "Leaving"). */
		if (dp_port_quiet(pt))
			return; /* answered already (a second LEAVE in one burst) */
		if (crossed && a->r.b.rank > p) {
			/* Relaxed: a flag (struct dp_peer); our leave waits. */
			atomic_store_explicit(&a->leave[p].answer_due, true, memory_order_relaxed);
			return;
		}
		dp_link_answer(a, p, DP_CTRL_LEAVE_ACK);
	} else if (op == DP_CTRL_LEAVE_ACK) {
		struct dp_port *pt = &a->r.b.port.ports[a->r.b.port.peer_port[p]];

		/* Its own memif link goes quiet too: it forgot us and will
		 * close its end once we closed ours (link_close.c); we read
		 * that link no more. */
		if (dp_own_link(pt, p) && !dp_port_quiet(pt))
			dp_port_go_quiet(pt);
		/* Release, both: the link's quiet above is written before the
		 * leaving thread, acquiring them, returns (struct dp_peer). */
		atomic_store_explicit(&a->leave[p].leave_acked, true, memory_order_release);
		atomic_store_explicit(&a->leave[p].answer_due, false, memory_order_release);
	}
}

void
dp_leave_begin(struct dp_membership *a)
{
	unsigned int p;

	/* Relaxed, here and in dp_leave_end(): flags (struct dp_peer,
	 * dprpc_agent). */
	for (p = 0; p < dp_world_n(&a->r.b); p++) {
		atomic_store_explicit(&a->leave[p].leave_acked, false, memory_order_relaxed);
		atomic_store_explicit(&a->leave[p].leave_sent, false, memory_order_relaxed);
		atomic_store_explicit(&a->leave[p].answer_due, false, memory_order_relaxed);
	}
	atomic_store_explicit(&a->leaving, true, memory_order_relaxed);
}

bool
dp_leave_told(struct dp_membership *a)
{
	unsigned int p;
	bool all = true;

	/* Told: every worker that is up for us acknowledged, and
	 * those whose LEAVE crossed ours answered it if they owe it. */
	/* Acquire: pairs with the release stores of leave_acked and
	 * answer_due in dp_leave_rx(). */
	for (p = 0; p < dp_world_n(&a->r.b) && all; p++)
		all = p == a->r.b.rank ||
		      ((dp_load_relaxed(&a->r.peers[p].state) != DPRPC_PEER_UP ||
			       atomic_load_explicit(
				       &a->leave[p].leave_acked, memory_order_acquire)) &&
			      !atomic_load_explicit(&a->leave[p].answer_due, memory_order_acquire));
	return all;
}

void
dp_leave_end(struct dp_membership *a)
{
	atomic_store_explicit(&a->leaving, false, memory_order_relaxed);
}

/* Whether every worker is up, or was and left since; the names of the
 * others into @missing (", " between them; "..." when they do not fit). */
bool
dp_world_formed(const struct dp_membership *a, char *missing, size_t len)
{
	size_t used = 0;
	unsigned int p;
	bool formed = true;

	if (len > 0)
		missing[0] = '\0';
	for (p = 0; p < dp_world_n(&a->r.b); p++) {
		int n;

		/* Relaxed: a snapshot of the poller's write (struct dp_peer). */
		uint8_t state = dp_load_relaxed(&a->r.peers[p].state);

		if (p == a->r.b.rank || state == DPRPC_PEER_UP || state == DPRPC_PEER_LEFT)
			continue;
		formed = false;
		if (len == 0 || used >= len)
			continue;
		n = snprintf(missing + used, len - used, "%s%s", used == 0 ? "" : ", ",
			a->r.b.world.w[p].name);
		if (n < 0 || (size_t)n >= len - used) {
			/* Cut: end with "..." where it fits. */
			if (len >= 4)
				memcpy(missing + len - 4, "...", 4);
			used = len;
		} else {
			used += (size_t)n;
		}
	}
	return formed;
}

/* Raise the window's end to @end (several threads may wait at once). */
void
dp_rdv_extend(struct dp_membership *a, uint64_t end)
{
	/* Relaxed: a time read by the poller, publishes nothing. */
	uint64_t cur = dp_load_relaxed(&a->r.down_after_tsc);

	while (cur < end && !atomic_compare_exchange_weak_explicit(&a->r.down_after_tsc, &cur, end,
				    memory_order_relaxed, memory_order_relaxed))
		;
}

static void
dp_worker_info_fill(const struct dp_membership *a, unsigned int r, struct dprpc_worker_info *info)
{
	const struct dp_world_entry *e = &a->r.b.world.w[r];

	memset(info, 0, sizeof(*info));
	memcpy(info->name, e->name, sizeof(info->name));
	info->rank = r;
	memcpy(info->mac, e->addr.mac.addr_bytes, sizeof(info->mac));
	info->ipv4 = e->addr.ip;
	info->udp_port = rte_be_to_cpu_16(e->addr.port);
	info->port_id = a->r.b.port.ports[a->r.b.port.peer_port[r]].id;
	/* Relaxed: a snapshot of the poller's write (struct dp_peer). */
	info->state = r == a->r.b.rank ? DPRPC_PEER_UP : dp_load_relaxed(&a->r.peers[r].state);
}

int
dprpc_worker_info_get_id(
	const struct dprpc_agent *agent, unsigned int rank, struct dprpc_worker_info *info)
{
	const struct dp_membership *a = dp_membership_of(agent);

	if (a == NULL || info == NULL)
		return -EINVAL;
	/* Own rank too: DP_RANK_NONE until joined (dprpc_world_join()). */
	if (rank >= dp_world_n(&a->r.b))
		return -ENOENT;
	dp_worker_info_fill(a, rank, info);
	return 0;
}

int
dprpc_worker_info_get(
	const struct dprpc_agent *agent, const char *name, struct dprpc_worker_info *info)
{
	const struct dp_membership *a = dp_membership_of(agent);
	int rank;

	if (a == NULL || info == NULL)
		return -EINVAL;
	rank = name != NULL ? dprpc_worker_rank(agent, name) : (int)a->r.b.rank;
	return rank < 0 ? rank : dprpc_worker_info_get_id(agent, (unsigned int)rank, info);
}

int
dprpc_worker_info_list(
	const struct dprpc_agent *agent, struct dprpc_worker_info *infos, unsigned int cap)
{
	const struct dp_membership *a = dp_membership_of(agent);
	unsigned int r, n;

	if (a == NULL || (infos == NULL && cap != 0))
		return -EINVAL;
	n = dp_world_n(&a->r.b); /* one size for the fill and the answer */
	for (r = 0; r < n && r < cap; r++)
		dp_worker_info_fill(a, r, &infos[r]);
	return (int)n;
}
