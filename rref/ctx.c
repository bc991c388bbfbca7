/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The life cycle of an agent's RRef context: the extension (rr_ext.h,
 * dp_ext.h) and its ops: init (rr_ctx_create()), timer (rr_ctx_timer() in
 * msg.c), held_requests, closing, quiesce, free and peer_event
 * (rr_ctx_peer_event() in peers.c).
 *
 * Design
 * ======
 *
 * Threads.  init, closing, quiesce and free run on the thread that creates
 * or destroys the agent (dp_ext.h): init before the agent is shared (its
 * plain and atomic_init() writes are published with the agent), quiesce
 * after the agent's lcores stopped, free at the end of the teardown, when
 * no other thread uses the agent.
 *
 * Ordering.  ctx->closing is stored with release, paired with the acquire
 * load in rr_send_bg() (msg.c); only the flag itself matters.  Teardown
 * empties the tables (rr_table_clear(): unlinked, one grace period, freed
 * in place) and waits until every entry removed earlier has been freed by
 * its call_rcu callback (rr_rcu_drain(), table.c), before the tables, the
 * ring and the future pool go.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_ring.h>

#include <urcu/urcu-qsbr.h>
#include <urcu/rculfhash.h>

#include <dprpc/dprpc_rref.h>
#include <dprpc/dprpc_handler.h>
#include <dprpc/dprpc_world.h>

#include "dp_ext.h"
#include "dp_rcu.h"
#include "dprpc_atomic.h"
#include "rr_ext.h"
#include "rr_internal.h"

RTE_LOG_REGISTER(rr_logtype, dprpc.rref, INFO);

/* --- life cycle --------------------------------------------------------- */

/* The extension's init (dp_ext.h): the tables, the RRef future pool, the
 * retry ring, and the reserved "dprpc.rref.*" handlers. */
static int
rr_ctx_create(struct dprpc_agent *a, const struct dprpc_agent_conf *c, void **state)
{
	static const struct {
		const char *name;
		dprpc_handler_fn_t fn;
		size_t off;
	} handlers[] = {
		{"dprpc.rref.remote", rr_h_remote, offsetof(struct rr_ctx, h_remote)},
		{"dprpc.rref.fetch", rr_h_fetch, offsetof(struct rr_ctx, h_fetch)},
		{"dprpc.rref.proxy", rr_h_proxy, offsetof(struct rr_ctx, h_proxy)},
		{"dprpc.rref.notify", rr_h_notify, offsetof(struct rr_ctx, h_notify)},
		{"dprpc.rref.accept", rr_h_accept, offsetof(struct rr_ctx, h_accept)},
		{"dprpc.rref.delete", rr_h_delete, offsetof(struct rr_ctx, h_delete)},
	};
	char name[RTE_RING_NAMESIZE];
	struct rr_ctx *ctx;
	unsigned int i;
	int rc;

	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL)
		return -ENOMEM;
	ctx->a = a;
	ctx->rank = (uint16_t)dprpc_agent_rank(a);
	ctx->max_msg = c->calls.max_msg_size;
	ctx->value_free = c->rrefs.value_free;
	ctx->value_free_arg = c->rrefs.value_free_arg;
	*state = ctx;
	/* Plain initialisation: the context is not shared until the agent
	 * is (see the file comment). */
	atomic_init(&ctx->next_id, 1);
	ctx->fpool = dprpc_future_pool_create(c->rrefs.max, c->rrefs.max * 2);
	snprintf(name, sizeof(name), "dprr_%u", dp_agent_instance(a));
	ctx->retry = rte_ring_create(name, RR_RETRY_RING, c->port.socket_id, RING_F_SC_DEQ);
	ctx->owners = cds_lfht_new_flavor(
		1024, 1024, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, &urcu_qsbr_flavor, NULL);
	ctx->forks = cds_lfht_new_flavor(
		1024, 1024, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, &urcu_qsbr_flavor, NULL);
	ctx->handles = cds_lfht_new_flavor(
		1024, 1024, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, &urcu_qsbr_flavor, NULL);
	ctx->pending = cds_lfht_new_flavor(
		64, 64, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, &urcu_qsbr_flavor, NULL);
	if (ctx->fpool == NULL || ctx->retry == NULL || ctx->owners == NULL || ctx->forks == NULL ||
		ctx->handles == NULL || ctx->pending == NULL)
		return -ENOMEM; /* rr_ctx_free() releases what was made */
	for (i = 0; i < RTE_DIM(handlers); i++) {
		rc = dp_register(
			a, handlers[i].name, handlers[i].fn, ctx, DPRPC_HANDLER_INLINE, true);
		if (rc != 0)
			return rc;
		*(uint32_t *)((char *)ctx + handlers[i].off) = dprpc_handler_id(handlers[i].name);
	}
	return 0;
}

/* The extension's closing: no RRef message leaves any more. */
static void
rr_ctx_closing(void *state)
{
	struct rr_ctx *ctx = state;

	/* Release: pairs with the acquire load in rr_send_bg().  Only the
	 * flag is published; the callbacks the teardown runs after this
	 * (failing the call slots) run on this thread and see it in program
	 * order. */
	atomic_store_explicit(&ctx->closing, true, memory_order_release);
}

/* The extension's quiesce: every value still pending fails with
 * -ESHUTDOWN, which answers the requests waiting for one. */
static void
rr_ctx_quiesce(void *state)
{
	struct rr_ctx *ctx = state;
	struct cds_lfht_iter it;
	struct rr_owner *o;

	dp_rcu_read_lock();
	rr_for_each_entry(ctx->owners, &it, o, n.node)(void)
		dprpc_future_fail(o->val, -ESHUTDOWN, ctx->rank, "owner shut down");
	dp_rcu_read_unlock();
}

/* The extension's held_requests: the requests waiting for a value, which
 * quiesce answers. */
static unsigned int
rr_ctx_held_requests(void *state)
{
	struct rr_ctx *ctx = state;

	/* Relaxed: read by the destroying thread once the agent's lcores
	 * stopped (their stop orders their updates before this read), and no
	 * other thread may use the agent then (dp_ext.h). */
	return (unsigned int)atomic_load_explicit(&ctx->requests_waiting, memory_order_relaxed);
}

/* The extension's free: everything, without messages, once every entry
 * removed is freed. */
static void
rr_ctx_free(void *state)
{
	struct rr_ctx *ctx = state;
	struct rr_retry *r;

	/* Release: pairs with the acquire load in rr_send_bg(), as in
	 * rr_ctx_closing().  The free callbacks queued below run on
	 * liburcu's call_rcu thread (those queued earlier) or here (what
	 * rr_table_clear() frees), and one that drops a future's last
	 * reference may run that future's callbacks (rr_user_finish() ->
	 * rr_send_bg()): they must find the flag set. */
	atomic_store_explicit(&ctx->closing, true, memory_order_release);
	rr_table_clear(ctx->pending, rr_free_node_rcu);
	rr_table_clear(ctx->handles, rr_handle_free_rcu);
	rr_table_clear(ctx->forks, rr_free_node_rcu);
	rr_table_clear(ctx->owners, rr_owner_free_rcu);
	/* Every entry removed earlier is freed after this (table.c): the
	 * futures can go back to their pool. */
	rr_rcu_drain(ctx);
	if (ctx->owners != NULL)
		(void)cds_lfht_destroy(ctx->owners, NULL);
	if (ctx->forks != NULL)
		(void)cds_lfht_destroy(ctx->forks, NULL);
	if (ctx->handles != NULL)
		(void)cds_lfht_destroy(ctx->handles, NULL);
	if (ctx->pending != NULL)
		(void)cds_lfht_destroy(ctx->pending, NULL);
	if (ctx->retry != NULL) {
		while (rte_ring_sc_dequeue(ctx->retry, (void **)&r) == 0)
			free(r);
		rte_ring_free(ctx->retry);
	}
	if (ctx->fpool != NULL)
		dprpc_future_pool_release(ctx->fpool);
	free(ctx);
}

const struct dp_ext_ops rr_extension = {
	.name = "rref",
	.init = rr_ctx_create,
	.timer = rr_ctx_timer,
	.held_requests = rr_ctx_held_requests,
	.quiesce = rr_ctx_quiesce,
	.closing = rr_ctx_closing,
	.free = rr_ctx_free,
	.peer_event = rr_ctx_peer_event,
};
