/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Inspection and shutdown: dprpc_rref_debug_get(), dprpc_rref_list(),
 * dprpc_rref_dump() and dprpc_rref_shutdown() (the tables: table.c).
 *
 * Design
 * ======
 *
 * What is read.  The counts (ctx->n_*, deletes_unknown, messages_failed,
 * the drops of peers.c) are statistics: relaxed loads (rr_load()), exact only when the agent is
 * quiescent.  The walks run inside one read-side section per call, so no
 * entry they reach is freed under them; the tables may change meanwhile,
 * and a report is a snapshot, not an atomic view of the four tables.
 *
 * Handles.  A handle stays in the handles table until its memory goes
 * (user.c); one whose reference has ended (refs 0) waits there only for
 * the application's dprpc_rref_release() or its DELETE, and is neither
 * counted nor listed.
 *
 * Shutdown.  It drops the application's reference of every handle (the
 * CAS of r->app from HELD to SHUTDOWN, paired with the exchange in
 * dprpc_rref_release(), user.c), but not the application's hold on the
 * handle's memory: the handles stay valid until the application releases
 * them (or destroys the agent).  Then it polls until the RRefs are
 * settled: no owner entry, no user handle, no
 * pending fork, and no bookkeeping message unanswered (msgs_waiting read
 * with acquire, paired with the release decrements in msg.c).  The wait
 * is bounded by the caller's timeout.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>

#include <urcu/urcu-qsbr.h>
#include <urcu/rculfhash.h>

#include <dprpc/dprpc_rref.h>

#include "dp_ext.h"
#include "dp_rcu.h"
#include "dprpc_atomic.h"
#include "rr_internal.h"

/* --- inspection and shutdown -------------------------------------------- */

int
dprpc_rref_debug_get(const struct dprpc_agent *a, struct dprpc_rref_debug *d)
{
	struct rr_ctx *ctx;
	struct cds_lfht_iter it;
	struct dprpc_rref *r;
	uint64_t pending = 0;

	if (a == NULL || (ctx = rr_ctx_of(a)) == NULL || d == NULL)
		return -EINVAL;
	dp_rcu_read_lock();
	rr_for_each_entry(ctx->handles, &it, r, n.node)
	{
		if (!r->is_owner && rr_handle_live(r) && !dprpc_future_is_done(r->created))
			pending++;
	}
	dp_rcu_read_unlock();
	*d = (struct dprpc_rref_debug){
		.num_owner_rrefs = rr_load(&ctx->n_owners),
		.num_forks = rr_load(&ctx->n_forks),
		.num_owner_handles = rr_load(&ctx->n_owner_handles),
		.num_users = rr_load(&ctx->n_users),
		.num_pending_users = pending,
		.num_pending_forks = rr_load(&ctx->n_pending_forks),
		.deletes_unknown = rr_load(&ctx->deletes_unknown),
		.messages_failed = rr_load(&ctx->messages_failed),
		.forks_dropped_peer_down = rr_load(&ctx->forks_dropped_peer_down),
		.pending_forks_dropped = rr_load(&ctx->pending_forks_dropped),
		.forks_expired = rr_load(&ctx->forks_expired),
	};
	return 0;
}

int
dprpc_rref_list(struct dprpc_agent *a, struct dprpc_rref_info *out, unsigned int n)
{
	struct cds_lfht_iter it;
	struct rr_ctx *ctx;
	struct rr_owner *o;
	struct dprpc_rref *r;
	struct rr_pending *p;
	unsigned int k = 0;

	if (a == NULL || (ctx = rr_ctx_of(a)) == NULL || (out == NULL && n > 0))
		return -EINVAL;
	dp_rcu_read_lock();
	rr_for_each_entry(ctx->owners, &it, o, n.node)
	{
		if (k < n)
			out[k] = (struct dprpc_rref_info){.kind = DPRPC_RREF_OWNED,
				.confirmed = true,
				.owner = ctx->rank,
				.rref_id = o->n.key,
				/* relaxed: a snapshot for the report;
				 * nothing is read through it. */
				.refs = atomic_load_explicit(&o->refs, memory_order_relaxed)};
		k++;
	}
	rr_for_each_entry(ctx->handles, &it, r, n.node)
	{
		if (r->is_owner || !rr_handle_live(r))
			continue; /* counted in its owner entry, or ended */
		if (k < n)
			out[k] = (struct dprpc_rref_info){.kind = DPRPC_RREF_USER,
				.confirmed = dprpc_rref_confirmed_by_owner(r),
				.owner = r->owner,
				.rref_id = r->rref_id,
				.fork_id = r->n.key};
		k++;
	}
	rr_for_each_entry(ctx->pending, &it, p, n.node)
	{
		if (k < n)
			out[k] = (struct dprpc_rref_info){.kind = DPRPC_RREF_PENDING_FORK,
				.owner = p->parent->owner,
				.rref_id = p->parent->rref_id,
				.fork_id = p->n.key};
		k++;
	}
	dp_rcu_read_unlock();
	return (int)k;
}

void
dprpc_rref_dump(struct dprpc_agent *a, FILE *f)
{
	static const char *const kinds[] = {"owned", "user", "pending fork"};
	struct dprpc_rref_info info[64];
	struct dprpc_rref_debug d;
	int n, i;

	if (a == NULL || f == NULL || dprpc_rref_debug_get(a, &d) != 0)
		return;
	fprintf(f,
		"rrefs of %s: owned %" PRIu64 " (forks %" PRIu64 ", local handles %" PRIu64
		"), users %" PRIu64 " (pending %" PRIu64 "), pending forks %" PRIu64
		", unknown deletes %" PRIu64 ", failed messages %" PRIu64
		", forks dropped (peer down) %" PRIu64 ", pending forks dropped %" PRIu64
		", forks expired %" PRIu64 "\n",
		dprpc_agent_name(a), d.num_owner_rrefs, d.num_forks, d.num_owner_handles,
		d.num_users, d.num_pending_users, d.num_pending_forks, d.deletes_unknown,
		d.messages_failed, d.forks_dropped_peer_down, d.pending_forks_dropped,
		d.forks_expired);
	n = dprpc_rref_list(a, info, RTE_DIM(info));
	for (i = 0; i < n && i < (int)RTE_DIM(info); i++)
		fprintf(f, "  %-12s rref %016" PRIx64 " fork %016" PRIx64 " owner %u%s refs %u\n",
			kinds[info[i].kind], info[i].rref_id, info[i].fork_id, info[i].owner,
			info[i].confirmed ? "" : " (unconfirmed)", info[i].refs);
	if (n > (int)RTE_DIM(info))
		fprintf(f, "  ... %d more\n", n - (int)RTE_DIM(info));
}

/* Drop the application's reference of every handle (shutdown), not its
 * hold on the handle's memory. */
static void
rr_release_all_handles(struct rr_ctx *ctx)
{
	struct cds_lfht_iter it;
	struct dprpc_rref *r;
	uint8_t held;

	dp_rcu_read_lock();
	rr_for_each_entry(ctx->handles, &it, r, n.node)
	{
		/* acq_rel: pairs with the exchange in dprpc_rref_release()
		 * (user.c); exactly one of them moves the state from HELD and
		 * drops the application's reference.  relaxed on failure:
		 * nothing is read. */
		held = RR_APP_HELD;
		if (atomic_compare_exchange_strong_explicit(&r->app, &held, RR_APP_SHUTDOWN,
			    memory_order_acq_rel, memory_order_relaxed))
			rr_handle_put(r);
	}
	dp_rcu_read_unlock();
}

static bool
rr_settled(struct rr_ctx *ctx)
{
	/* acquire (msgs_waiting): pairs with the release decrements in msg.c,
	 * so the last messages' doings (their failures counted) are seen. */
	return rr_load(&ctx->n_owners) == 0 && rr_load(&ctx->n_users) == 0 &&
	       rr_load(&ctx->n_pending_forks) == 0 &&
	       atomic_load_explicit(&ctx->msgs_waiting, memory_order_acquire) <= 0;
}

int
dprpc_rref_shutdown(struct dprpc_agent *a, uint64_t timeout_us, unsigned int flags)
{
	struct rr_ctx *ctx;
	__uint128_t until;
	uint64_t deadline;
	int left;

	if (a == NULL || (flags & ~DPRPC_RREF_REPORT_LEAKS) != 0 || (ctx = rr_ctx_of(a)) == NULL ||
		dp_on_poller(a))
		return -EINVAL;
	rr_release_all_handles(ctx);
	/* Saturated: a deadline beyond the TSC's range is none. */
	until = (__uint128_t)timeout_us * rte_get_tsc_hz() / 1000000 + rte_rdtsc();
	deadline = timeout_us == 0 || until > UINT64_MAX ? UINT64_MAX : (uint64_t)until;
	while (!rr_settled(ctx) && rte_rdtsc() < deadline) {
		if (dp_agent_has_io_lcore(a) || dprpc_poll(a, 0) <= 0)
			usleep(100);
	}
	if (!(flags & DPRPC_RREF_REPORT_LEAKS))
		return 0;
	left = dprpc_rref_list(a, NULL, 0);
	if (left > 0) {
		RR_LOG(WARNING, "agent %s: %d RRef contexts left at shutdown", dprpc_agent_name(a),
			left);
		dprpc_rref_dump(a, stderr);
	}
	return left;
}
