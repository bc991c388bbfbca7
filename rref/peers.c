/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What an agent's RRef context drops when a peer dies, and the bound on
 * fork data that is never rebuilt (the rules: docs/rref.md, "When a user
 * dies" and "When the owner dies").
 *
 * Design
 * ======
 *
 * A worker declared down (silent for peer_timeout_us) or restarted (a
 * frame of a newer incarnation) is treated as dead for RRefs, as PyTorch's
 * owner keeps a value only for live users: what it held is gone and what
 * it would have sent will not come.  The dataplane tells the extension so
 * on the poller (rr_ctx_peer_event(), dp_ext.h); a peer heard from again
 * (UP) changes nothing: what was dropped stays dropped.
 *
 * On DOWN or RESTARTED of worker w:
 *  - owner side: every fork (user reference) w holds is dropped, and with
 *    it its reference on the owner entry; so is every placeholder made for
 *    a creation by w (its REMOTE will not come), whose value fails so that
 *    the requests waiting on it are answered.  Counted in
 *    forks_dropped_peer_down.  A value no other user or local handle holds
 *    is freed at once.
 *  - parent side: every pending child whose owner is w (its ACCEPT will
 *    not come) or that was forked for w (dprpc_rref_fork_to(): w will not
 *    rebuild it) is dropped with its reference on the parent handle.
 *    Counted in pending_forks_dropped.
 *
 * Fork data never rebuilt.  A child forked here stays unconfirmed until
 * the owner hears of it; if the fork data is never handed to
 * dprpc_rref_from_fork() (lost, or its receiver never calls it) nothing
 * else would end it.  So an unconfirmed child lives at most the agent's
 * default timeout (the bound of the NOTIFY that would confirm it, and of
 * every call) as it was when the child was made (rr_fork_deadline():
 * dprpc_rpc_timeout_set() changes it for later ones): a pending child is
 * then dropped (pending_forks_dropped), and a fork the owner made for its
 * own fork data is dropped (forks_expired).  The poller looks every eighth
 * of the timeout as it is now (from 1 ms to 1 s; 1 s with none: children
 * made before may still expire), and only while some are unconfirmed.
 * A child rebuilt later than that may find the RRef deleted: its NOTIFY is
 * answered -ENOENT, a clean error.
 *
 * Threads.  Both run on the poller: rr_ctx_peer_event() from the
 * dataplane's liveness and session checks, rr_sweep() from the timer.
 * They never block: they walk the tables inside one read-side section
 * (dp_rcu_read_lock()), remove what they drop (rr_fork_drop(),
 * rr_pending_drop(): the remover is whoever's cds_lfht_del() succeeds, as
 * everywhere, table.c) and may send DELETEs (a parent handle whose last
 * reference goes), which never wait (msg.c).
 *
 * Ordering.  A fork's holder is a relaxed atomic (written at insertion,
 * before publication, or by the confirming NOTIFY on the poller; read here
 * on the poller); its deadline and a pending child's are written before
 * insertion and never change.  The counters are statistics (rr_inc()).
 * The placeholder exchange is the acq_rel one of owner.c: exactly one of
 * the REMOTE, the creator's DELETE and this takes the placeholder's
 * reference.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_common.h>
#include <rte_cycles.h>

#include <urcu/urcu-qsbr.h>
#include <urcu/rculfhash.h>

#include <dprpc/dprpc_rref.h>

#include "dp_ext.h"
#include "dp_rcu.h"
#include "dprpc_atomic.h"
#include "rr_internal.h"

/* --- dead peers --------------------------------------------------------- */

/* Inside a read-side section: drop the forks worker @w holds and the
 * placeholders of its creations. */
static void
rr_drop_user(struct rr_ctx *ctx, unsigned int w, int code, const char *why)
{
	struct cds_lfht_iter it;
	struct rr_owner *o;
	struct rr_fork *f;

	rr_for_each_entry(ctx->forks, &it, f, n.node)
	{
		/* relaxed: see the file comment (poller-written, read here). */
		if (atomic_load_explicit(&f->holder, memory_order_relaxed) == w &&
			rr_fork_drop(ctx, f))
			rr_inc(&ctx->forks_dropped_peer_down);
	}
	rr_for_each_entry(ctx->owners, &it, o, n.node)
	{
		/* relaxed pre-check: only the exchange decides (owner.c). */
		if (rr_creator(o->n.key) != w ||
			!atomic_load_explicit(&o->placeholder, memory_order_relaxed))
			continue;
		/* acq_rel: pairs with the exchanges in rr_h_remote() and
		 * rr_h_delete() (owner.c); the one that finds true takes the
		 * placeholder's reference. */
		if (!atomic_exchange_explicit(&o->placeholder, false, memory_order_acq_rel))
			continue;
		(void)dprpc_future_fail(o->val, code, ctx->rank, why);
		rr_owner_put(o);
		rr_inc(&ctx->forks_dropped_peer_down);
	}
}

/* Inside a read-side section: drop the pending children whose owner is
 * @w or that were forked for @w. */
static void
rr_drop_children_of(struct rr_ctx *ctx, unsigned int w)
{
	struct cds_lfht_iter it;
	struct rr_pending *p;

	rr_for_each_entry(ctx->pending, &it, p, n.node)
	{
		if ((p->parent->owner == w || p->to == w) && rr_pending_drop(ctx, p))
			rr_inc(&ctx->pending_forks_dropped);
	}
}

/* The extension's peer_event (dp_ext.h): on the poller. */
void
rr_ctx_peer_event(void *state, unsigned int rank, enum dp_peer_event ev)
{
	struct rr_ctx *ctx = state;
	char why[DPRPC_ERRMSG_MAX];
	int code;

	if (ev == DP_PEER_EV_JOINED) {
		/* This agent joined the world: its rank from now on (it
		 * makes no RRef before dprpc_world_join() returned). */
		if (rank == dprpc_agent_rank(ctx->a))
			ctx->rank = (uint16_t)rank;
		return;
	}
	if (ev == DP_PEER_EV_UP || rank == ctx->rank)
		return; /* what was dropped at DOWN stays dropped */
	code = ev == DP_PEER_EV_DOWN ? -EHOSTDOWN : -ECONNRESET;
	snprintf(why, sizeof(why), "the RRef's creator, worker %s, %s",
		dprpc_worker_name(ctx->a, rank), ev == DP_PEER_EV_DOWN ? "is down" : "restarted");
	dp_rcu_read_lock();
	rr_drop_user(ctx, rank, code, why);
	rr_drop_children_of(ctx, rank);
	dp_rcu_read_unlock();
}

/* --- fork data never rebuilt ------------------------------------------- */

/* The deadline of a child unconfirmed from now: now plus the agent's
 * default timeout as it is now; 0 (none) without one, or past the TSC's
 * range.  Any thread. */
uint64_t
rr_fork_deadline(const struct rr_ctx *ctx)
{
	uint64_t now = rte_rdtsc();
	__uint128_t t =
		(__uint128_t)dp_agent_default_timeout_us(ctx->a) * rte_get_tsc_hz() / 1000000;

	return t == 0 || t >= UINT64_MAX - now ? 0 : now + (uint64_t)t;
}

/* The sweep's period: an eighth of the default timeout as it is now, from
 * 1 ms to 1 s; 1 s without one. */
static uint64_t
rr_sweep_period(const struct rr_ctx *ctx)
{
	uint64_t t = dp_agent_default_timeout_us(ctx->a);

	if (t == 0 || t / 8 >= 1000000)
		return rte_get_tsc_hz();
	return RTE_MAX(t / 8, UINT64_C(1000)) * rte_get_tsc_hz() / 1000000;
}

/* From the extension's timer, on the poller: drop the children that
 * stayed unconfirmed past the fork timeout.  Returns how many. */
unsigned int
rr_sweep(struct rr_ctx *ctx)
{
	struct cds_lfht_iter it;
	struct rr_pending *p;
	struct rr_fork *f;
	unsigned int n = 0;
	uint64_t now;

	if (rr_load(&ctx->n_pending_forks) == 0 && rr_load(&ctx->n_unconfirmed) == 0)
		return 0;
	now = rte_rdtsc();
	if (now < ctx->next_sweep_tsc)
		return 0;
	ctx->next_sweep_tsc = now + rr_sweep_period(ctx);
	dp_rcu_read_lock();
	rr_for_each_entry(ctx->pending, &it, p, n.node)
	{
		if (p->deadline_tsc != 0 && p->deadline_tsc <= now && rr_pending_drop(ctx, p)) {
			rr_inc(&ctx->pending_forks_dropped);
			n++;
		}
	}
	if (rr_load(&ctx->n_unconfirmed) != 0) {
		rr_for_each_entry(ctx->forks, &it, f, n.node)
		{
			/* relaxed: the flag is only a filter here; rr_fork_drop()
			 * decides with its exchange. */
			if (f->deadline_tsc == 0 || f->deadline_tsc > now ||
				atomic_load_explicit(&f->confirmed, memory_order_relaxed))
				continue;
			if (rr_fork_drop(ctx, f)) {
				rr_inc(&ctx->forks_expired);
				n++;
			}
		}
	}
	dp_rcu_read_unlock();
	return n;
}
