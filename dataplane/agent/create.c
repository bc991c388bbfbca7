/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Agent life cycle: configuration, world, pools, extensions, lcores
 * (the teardown: destroy.c; the process's registry of agents: registry.c;
 * the accessors of the agent and its workers: info.c, peer.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_random.h>

#include "dp_agent.h"
#include "dp_client.h"
#include "dp_conf.h"
#include "dp_eal.h"
#include "dp_handler.h"
#include "dp_link_close.h"
#include "dp_liveness.h"
#include "dp_mbuf_pool.h"
#include "dp_msg.h"
#include "dp_poll.h"
#include "dp_port.h"
#include "dp_server.h"
#include "dp_stream.h"
#include "dp_submit.h"
#include "fut_internal.h"
#include "dprpc_atomic.h"
#include "dprpc_mempool_free.h"
#include <dprpc/dprpc_handler.h>

static int
dp_pools_init(struct dprpc_agent *a, const struct dprpc_agent_conf *c)
{
	char name[RTE_MEMPOOL_NAMESIZE];
	unsigned int nfut, i, sz;
	int rc;

	if (c->port.mbuf_pool != NULL) {
		a->m.r.b.mp = c->port.mbuf_pool;
	} else {
		snprintf(name, sizeof(name), "dprpc%u_mb", a->m.r.b.instance);
		a->m.r.b.mp =
			dp_mbuf_pool_create(name, c->port.nb_mbufs, c->port.socket_id, c->port.id);
		if (a->m.r.b.mp == NULL)
			return -rte_errno;
		a->m.r.b.own_mp = true;
	}
	/* A FIFO, never a LIFO cache, so that a late reply finds its object
	 * FREE for as long as possible (req_pool.c; the guarantee is in
	 * dprpc_handler.h). */
	snprintf(name, sizeof(name), "dprpc%u_rq", a->m.r.b.instance);
	rc = dp_req_pool_init(&a->m.r.b.rq, name, c->serve.max_requests,
		sizeof(struct dprpc_request), c->port.socket_id);
	if (rc != 0)
		return rc;
	/* The map's workers; those that join share the pool (a call that
	 * finds it empty fails -ENOBUFS). */
	nfut = RTE_MAX(a->m.r.b.world.n, 2u) * a->m.r.max_outstanding * 2 + 1024;
	snprintf(name, sizeof(name), "dprpc%u_fut", a->m.r.b.instance);
	a->m.r.b.fpool = fut_pool_create_mempool(name, nfut, nfut, c->port.socket_id);
	if (a->m.r.b.fpool != NULL)
		fut_pool_set_cancel_hook(a->m.r.b.fpool, dp_client_cancel_kick, &a->m.r);
	if (a->m.r.b.fpool == NULL)
		return -rte_errno;
	snprintf(name, sizeof(name), "dprpc%u_tx", a->m.r.b.instance);
	a->m.r.b.tx_ring = rte_ring_create(
		name, DP_RING_SIZE, c->port.socket_id, RING_F_MP_RTS_ENQ | RING_F_SC_DEQ);
	if (a->m.r.b.tx_ring == NULL)
		return -rte_errno;
	for (sz = 2; sz < c->serve.max_handlers * 2; sz <<= 1)
		;
	a->m.r.handlers = calloc(sz, sizeof(*a->m.r.handlers));
	if (a->m.r.handlers == NULL)
		return -ENOMEM;
	a->m.r.handler_mask = sz - 1;
	a->m.r.max_handlers = c->serve.max_handlers;
	for (i = 0; i < c->lcores.nb_pool; i++) {
		struct dp_hlcore *hl = &a->m.r.hl[i];

		snprintf(name, sizeof(name), "dprpc%u_h%u", a->m.r.b.instance, i);
		hl->ring = rte_ring_create(
			name, DP_RING_SIZE, c->port.socket_id, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (hl->ring == NULL)
			return -rte_errno;
		hl->rpc = &a->m.r;
		hl->lcore = c->lcores.pool[i];
		a->m.r.nb_hl++;
	}
	return 0;
}

/* conf.serve.handlers, registered before the port opens: no request can find
 * one of them missing.  EINVAL for any entry refused, logged by name. */
static int
dp_handlers_init(struct dprpc_agent *a, const struct dprpc_agent_conf *c)
{
	unsigned int i;
	int rc;

	if (c->serve.nb_handlers > 0 && c->serve.handlers == NULL) {
		DP_LOG(ERR, "agent %s: nb_handlers %u with no handlers", a->m.r.b.name,
			c->serve.nb_handlers);
		return -EINVAL;
	}
	for (i = 0; i < c->serve.nb_handlers; i++) {
		const struct dprpc_handler_def *d = &c->serve.handlers[i];

		rc = dp_register(a, d->name, d->fn, d->arg, d->mode, false);
		if (rc != 0) {
			DP_LOG(ERR, "agent %s: handlers[%u] (%s): %s", a->m.r.b.name, i,
				d->name != NULL ? d->name : "no name", strerror(-rc));
			return -EINVAL;
		}
	}
	return 0;
}

/* The server's bounds and budgets, against the mbuf pool and max_msg_size. */
static int
dp_budgets_init(struct dprpc_agent *a, const struct dprpc_agent_conf *c)
{
	struct dp_budgets b;
	int rc;

	rc = dp_conf_budgets(c, a->m.r.b.mp->size, &b);
	if (rc != 0)
		return rc;
	a->m.r.hl_queue_max = c->serve.handler_queue_max;
	a->m.r.peer_req_max = b.peer_requests_max;
	a->m.r.inline_max_tsc = c->serve.inline_wait_max_us == DPRPC_INLINE_WAIT_UNBOUNDED
					? UINT64_MAX
					: dp_us_to_tsc(&a->m.r.b, c->serve.inline_wait_max_us);
	a->m.r.queue_delay_max_tsc = c->serve.queue_delay_max_us != 0
					     ? dp_us_to_tsc(&a->m.r.b, c->serve.queue_delay_max_us)
					     : 0;
	a->m.r.service_declared_tsc = dp_us_to_tsc(&a->m.r.b, c->serve.service_time_us);
	a->m.r.kept_max = b.kept_max;
	a->m.r.kept_peer_max = b.kept_peer_max;
	a->m.r.msg_max = b.msg_max;
	a->m.r.msg_peer_max = b.msg_peer_max;
	return 0;
}

struct dprpc_agent *
dprpc_agent_create(const struct dprpc_agent_conf *c)
{
	struct dprpc_agent *a;
	char err[160];
	int rc, rank;

	if (c == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	rc = dp_conf_check(c);
	if (rc != 0) {
		rte_errno = -rc;
		return NULL;
	}
	dp_telemetry_register();
	if (dp_meta_offset < 0) {
		rc = dp_register_dynfield();
		if (rc != 0) {
			rte_errno = -rc;
			return NULL;
		}
	}
	a = calloc(1, sizeof(*a));
	if (a == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	snprintf(a->m.r.b.name, sizeof(a->m.r.b.name), "%s", c->name);
	pthread_mutex_init(&a->m.r.reg_lock, NULL);
	pthread_mutex_init(&a->m.r.sync_kept_lock, NULL);
	a->io_lcore = DPRPC_LCORE_NONE;
	rc = dp_agent_name_take(a);
	if (rc != 0) {
		pthread_mutex_destroy(&a->m.r.reg_lock);
		pthread_mutex_destroy(&a->m.r.sync_kept_lock);
		free(a);
		rte_errno = -rc;
		return NULL;
	}
	rc = dp_world_parse(c->world, &a->m.r.b.world, err, sizeof(err));
	if (rc != 0) {
		DP_LOG(ERR, "agent %s: %s", a->m.r.b.name, err);
		goto fail;
	}
	rank = -ENOENT;
	for (unsigned int i = 0; i < a->m.r.b.world.n; i++)
		if (strcmp(a->m.r.b.world.w[i].name, a->m.r.b.name) == 0)
			rank = (int)i;
	if (a->m.r.b.world.joiner && strcmp(a->m.r.b.world.self.name, a->m.r.b.name) == 0)
		rank = DP_RANK_NONE; /* joins later (dprpc_world_join()) */
	if (rank < 0) {
		DP_LOG(ERR, "agent %s: not in the world map", a->m.r.b.name);
		rc = -ENOENT;
		goto fail;
	}
	a->m.r.b.world_cap = c->max_workers;
	if (a->m.r.b.world_cap < a->m.r.b.world.n) {
		DP_LOG(ERR,
			"agent %s: conf.max_workers = %u is out of range [%u, %d] (the map's "
			"workers and more)",
			a->m.r.b.name, c->max_workers, a->m.r.b.world.n, DPRPC_MAX_WORKERS);
		rc = -EINVAL;
		goto fail;
	}
	a->m.join.port_owner = DP_RANK_NONE;
	a->m.r.b.port.join_port = -1;
	a->m.r.b.rank = (uint16_t)rank;
	a->m.r.b.self_addr =
		rank == DP_RANK_NONE ? a->m.r.b.world.self.addr : a->m.r.b.world.addrs[rank];
	a->m.r.b.ttl = (uint8_t)c->port.ttl;
	a->m.r.b.session = dp_new_session();
	a->m.r.b.rx_ctx = (struct dp_rx_ctx){.addrs = a->m.r.b.world.addrs,
		.nb_workers = a->m.r.b.world.n,
		.self_rank = a->m.r.b.rank,
		.self = &a->m.r.b.self_addr};
	rc = dp_auth_init(&a->m.r.b, c);
	if (rc != 0)
		goto fail;
	a->m.r.max_outstanding = c->calls.max_outstanding;
	a->m.r.max_msg = c->calls.max_msg_size;
	a->m.r.credits = c->calls.credits;
	a->m.r.default_timeout_us = c->calls.timeout_us;
	a->m.r.b.progress = dp_progress;
	a->m.r.b.poll = dprpc_poll;
	a->m.r.b.tsc_hz = rte_get_tsc_hz();
	a->m.r.b.us_per_tsc_q32 = (uint64_t)((UINT64_C(1000000) << 32) / a->m.r.b.tsc_hz);
	a->m.r.rto_tsc = (uint64_t)c->calls.retransmit_us * a->m.r.b.tsc_hz / 1000000;
	a->m.r.rto_max_tsc = a->m.r.rto_tsc * 64;
	a->m.r.keepalive_tsc = dp_us_to_tsc(&a->m.r.b, c->liveness.keepalive_us);
	a->m.r.peer_timeout_tsc = dp_us_to_tsc(&a->m.r.b, c->liveness.peer_timeout_us);
	a->m.r.peer_event = c->liveness.peer_event;
	a->m.r.peer_event_arg = c->liveness.peer_event_arg;
	a->m.r.b.idle_pause = c->lcores.idle_pause_polls;
	a->m.r.b.idle_yield = c->lcores.idle_yield_polls;
	a->m.r.b.waiters_park = c->lcores.waiters_park;
	a->m.r.b.idle_sleep = c->lcores.idle_sleep_polls;
	a->m.r.b.idle_sleep_us = c->lcores.idle_sleep_us;
	/* Timeouts are checked every 100 us: that is their resolution. */
	a->m.r.b.timer_period_tsc = a->m.r.b.tsc_hz / 10000;
	a->m.link_answered_wait_tsc = a->m.r.b.tsc_hz / 1000 * DP_LINK_ANSWERED_WAIT_MS;
	a->next_timer_tsc = rte_rdtsc() + a->m.r.b.timer_period_tsc;
	a->m.r.b.stall_tsc = a->m.r.b.tsc_hz / 1000000 * DP_STALL_US;
	/* Not shared yet: the first tick is due now (dp_expire_stalled()). */
	dp_store_relaxed(&a->m.r.b.tick_tsc, rte_rdtsc());

	rc = dp_pools_init(a, c);
	if (rc != 0)
		goto fail;
	rc = dp_budgets_init(a, c);
	if (rc != 0)
		goto fail;
	rc = dp_ext_init_all(&a->m.r.b, c);
	if (rc != 0)
		goto fail;
	rc = dp_peers_init(&a->m.r);
	if (rc != 0)
		goto fail;
	dp_fault_init(&a->m.r.b.ftx, &c->faults.tx, a->m.r.b.mp, a->m.r.b.tsc_hz);
	dp_fault_init(&a->m.r.b.frx, &c->faults.rx, a->m.r.b.mp, a->m.r.b.tsc_hz);
	rc = dp_handlers_init(a, c);
	if (rc != 0)
		goto fail;
	/* What the ports read of the agent (struct dp_ports). */
	a->m.r.b.port.name = a->m.r.b.name;
	a->m.r.b.port.instance = a->m.r.b.instance;
	a->m.r.b.port.tsc_hz = a->m.r.b.tsc_hz;
	a->m.r.b.port.mp = a->m.r.b.mp;
	a->m.r.b.port.world = &a->m.r.b.world;
	a->m.r.b.port.world_cap = a->m.r.b.world_cap;
	rc = dp_port_open(&a->m.r.b.port, c, a->m.r.b.rank);
	if (rc != 0)
		goto fail;
	rc = dp_arp_init(&a->m.r.b, c);
	if (rc != 0)
		goto fail;
	dp_stage_wire_init(&a->m.r.b, c);
	/* Memif and net_ring frames only cross memory: no station to fear. */
	if (!a->m.r.b.auth.on && dp_port_has_wire(&a->m.r.b.port))
		DP_LOG(WARNING,
			"agent %s: no world key: any station on its segment can speak for its "
			"world's workers (docs/security.md)",
			a->m.r.b.name);
	a->io_lcore = c->lcores.io;
	rc = dp_lcores_launch(a);
	if (rc != 0) {
		dp_lcores_stop(a);
		goto fail;
	}
	return a;
fail:
	dp_agent_free(a);
	rte_errno = -rc;
	return NULL;
}
