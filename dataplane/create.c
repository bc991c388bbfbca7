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

void
dprpc_agent_conf_init(struct dprpc_agent_conf *c)
{
	if (c == NULL)
		return;
	memset(c, 0, sizeof(*c));
	c->port_id = -1;
	c->nb_mbufs = 8191;
	c->socket_id = SOCKET_ID_ANY;
	c->io_lcore = DPRPC_LCORE_NONE;
	c->max_outstanding = 64;
	c->default_timeout_us = 60ull * 1000 * 1000;
	c->idle_pause_polls = 256;
	c->idle_yield_polls = 4096;
	c->idle_sleep_polls = 32768;
	c->idle_sleep_us = 50;
	c->max_handlers = 256;
	c->max_requests = 1024;
	c->retransmit_us = 1000;
	c->max_msg_size = DPRPC_MAX_MSG_DEFAULT;
	c->credits = 64;
	c->keepalive_us = 100 * 1000;
	c->peer_timeout_us = 1000 * 1000;
	c->max_rrefs = 16384;
}

static int
dp_check_conf(const struct dprpc_agent_conf *c)
{
	unsigned int i;

	if (c->name == NULL || c->name[0] == '\0' || strlen(c->name) >= DPRPC_NAME_MAX) {
		DP_LOG(ERR, "agent name missing or longer than %d bytes", DPRPC_NAME_MAX - 1);
		return -EINVAL;
	}
	if (c->max_outstanding == 0 || c->max_outstanding > UINT16_MAX || c->max_handlers == 0 ||
		c->max_handlers > (1u << 20) || c->max_requests == 0 || c->max_rrefs == 0 ||
		c->max_rrefs > (1u << 24) || c->nb_handler_lcores > DPRPC_MAX_HANDLER_LCORES ||
		c->nb_mbufs < 1024 || c->max_msg_size < DPRPC_MAX_FRAME_PAYLOAD ||
		c->max_msg_size > DPRPC_MAX_MSG_LIMIT || c->credits == 0 || c->credits > 1024 ||
		c->handler_queue_max > DP_RING_SIZE - 1 || c->peer_requests_max > c->max_requests) {
		DP_LOG(ERR, "agent %s: configuration value out of range", c->name);
		return -EINVAL;
	}
	for (i = 0; i < c->nb_handler_lcores; i++) {
		if (!rte_lcore_is_enabled(c->handler_lcores[i]) ||
			c->handler_lcores[i] == rte_get_main_lcore() ||
			c->handler_lcores[i] == c->io_lcore) {
			DP_LOG(ERR, "agent %s: handler lcore %u is not a free worker lcore",
				c->name, c->handler_lcores[i]);
			return -EBUSY;
		}
	}
	if (c->io_lcore != DPRPC_LCORE_NONE &&
		(!rte_lcore_is_enabled(c->io_lcore) || c->io_lcore == rte_get_main_lcore())) {
		DP_LOG(ERR, "agent %s: io lcore %u is not a worker lcore", c->name, c->io_lcore);
		return -EBUSY;
	}
	return 0;
}

static int
dp_pools_init(struct dprpc_agent *a, const struct dprpc_agent_conf *c)
{
	char name[RTE_MEMPOOL_NAMESIZE];
	unsigned int nfut, i, sz;
	int rc;

	if (c->mbuf_pool != NULL) {
		a->r.b.mp = c->mbuf_pool;
	} else {
		snprintf(name, sizeof(name), "dprpc%u_mb", a->r.b.instance);
		a->r.b.mp = dp_mbuf_pool_create(name, c->nb_mbufs, c->socket_id, c->port_id);
		if (a->r.b.mp == NULL)
			return -rte_errno;
		a->r.b.own_mp = true;
	}
	/* A FIFO, never a LIFO cache, so that a late reply finds its object
	 * FREE for as long as possible (req_pool.c; the guarantee is in
	 * dprpc_rpc.h). */
	snprintf(name, sizeof(name), "dprpc%u_rq", a->r.b.instance);
	rc = dp_req_pool_init(
		&a->r.b.rq, name, c->max_requests, sizeof(struct dprpc_request), c->socket_id);
	if (rc != 0)
		return rc;
	/* The map's workers; those that join share the pool (a call that
	 * finds it empty fails -ENOBUFS). */
	nfut = RTE_MAX(a->r.b.world.n, 2u) * a->r.max_outstanding * 2 + 1024;
	snprintf(name, sizeof(name), "dprpc%u_fut", a->r.b.instance);
	a->r.b.fpool = fut_pool_create_mempool(name, nfut, nfut, c->socket_id);
	if (a->r.b.fpool != NULL)
		fut_pool_set_cancel_hook(a->r.b.fpool, dp_client_cancel_kick, &a->r);
	if (a->r.b.fpool == NULL)
		return -rte_errno;
	snprintf(name, sizeof(name), "dprpc%u_tx", a->r.b.instance);
	a->r.b.tx_ring = rte_ring_create(
		name, DP_RING_SIZE, c->socket_id, RING_F_MP_RTS_ENQ | RING_F_SC_DEQ);
	if (a->r.b.tx_ring == NULL)
		return -rte_errno;
	for (sz = 2; sz < c->max_handlers * 2; sz <<= 1)
		;
	a->r.handlers = calloc(sz, sizeof(*a->r.handlers));
	if (a->r.handlers == NULL)
		return -ENOMEM;
	a->r.handler_mask = sz - 1;
	a->r.max_handlers = c->max_handlers;
	for (i = 0; i < c->nb_handler_lcores; i++) {
		struct dp_hlcore *hl = &a->r.hl[i];

		snprintf(name, sizeof(name), "dprpc%u_h%u", a->r.b.instance, i);
		hl->ring = rte_ring_create(
			name, DP_RING_SIZE, c->socket_id, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (hl->ring == NULL)
			return -rte_errno;
		hl->rpc = &a->r;
		hl->lcore = c->handler_lcores[i];
		a->r.nb_hl++;
	}
	return 0;
}

/* conf.handlers, registered before the port opens: no request can find
 * one of them missing.  EINVAL for any entry refused, logged by name. */
static int
dp_handlers_init(struct dprpc_agent *a, const struct dprpc_agent_conf *c)
{
	unsigned int i;
	int rc;

	if (c->nb_handlers > 0 && c->handlers == NULL) {
		DP_LOG(ERR, "agent %s: nb_handlers %u with no handlers", a->r.b.name,
			c->nb_handlers);
		return -EINVAL;
	}
	for (i = 0; i < c->nb_handlers; i++) {
		const struct dprpc_handler_def *d = &c->handlers[i];

		rc = dp_register(a, d->name, d->fn, d->arg, d->mode, false);
		if (rc != 0) {
			DP_LOG(ERR, "agent %s: handlers[%u] (%s): %s", a->r.b.name, i,
				d->name != NULL ? d->name : "no name", strerror(-rc));
			return -EINVAL;
		}
	}
	return 0;
}

/* The server's budgets (dprpc_agent_conf.kept_mbufs_max and the rest),
 * defaults applied, against the mbuf pool and max_msg_size. */
static int
dp_budgets_init(struct dprpc_agent *a, const struct dprpc_agent_conf *c)
{
	unsigned int pool = a->r.b.mp->size;
	uint64_t max_msg = c->max_msg_size;
	unsigned int kept_default = RTE_MAX(pool / 4, c->kept_mbufs_peer_max);

	a->r.hl_queue_max = c->handler_queue_max != 0 ? c->handler_queue_max : DP_RING_SIZE - 1;
	a->r.peer_req_max = c->peer_requests_max != 0 ? c->peer_requests_max : c->max_requests;
	a->r.inline_max_tsc =
		c->inline_wait_max_us == DPRPC_INLINE_WAIT_UNBOUNDED
			? UINT64_MAX
			: dp_us_to_tsc(&a->r.b, c->inline_wait_max_us != 0
							? c->inline_wait_max_us
							: DPRPC_INLINE_WAIT_DEFAULT_US);
	a->r.queue_delay_max_tsc =
		c->queue_delay_max_us != 0 ? dp_us_to_tsc(&a->r.b, c->queue_delay_max_us) : 0;
	a->r.service_declared_tsc = dp_us_to_tsc(&a->r.b, c->service_time_us);
	a->r.kept_max =
		c->kept_mbufs_max != 0 ? c->kept_mbufs_max : RTE_MIN(kept_default, pool / 2);
	a->r.kept_peer_max =
		c->kept_mbufs_peer_max != 0 ? c->kept_mbufs_peer_max : a->r.kept_max / 2;
	a->r.msg_max = c->msg_bytes_max != 0 ? c->msg_bytes_max
					     : RTE_MAX(16 * max_msg, c->msg_bytes_peer_max);
	a->r.msg_peer_max = c->msg_bytes_peer_max != 0 ? c->msg_bytes_peer_max
						       : RTE_MIN(4 * max_msg, a->r.msg_max);
	if (a->r.kept_max > pool / 2 || a->r.kept_peer_max > a->r.kept_max) {
		DP_LOG(ERR,
			"agent %s: kept_mbufs_max %u (at most half the pool of %u) or "
			"kept_mbufs_peer_max %u (at most kept_mbufs_max) out of range",
			a->r.b.name, a->r.kept_max, pool, a->r.kept_peer_max);
		return -EINVAL;
	}
	if (a->r.msg_peer_max < max_msg || a->r.msg_max < a->r.msg_peer_max) {
		DP_LOG(ERR,
			"agent %s: need max_msg_size %" PRIu64 " <= msg_bytes_peer_max %" PRIu64
			" <= msg_bytes_max %" PRIu64,
			a->r.b.name, max_msg, a->r.msg_peer_max, a->r.msg_max);
		return -EINVAL;
	}
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
	rc = dp_check_conf(c);
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
	snprintf(a->r.b.name, sizeof(a->r.b.name), "%s", c->name);
	pthread_mutex_init(&a->r.reg_lock, NULL);
	pthread_mutex_init(&a->r.sync_kept_lock, NULL);
	a->io_lcore = DPRPC_LCORE_NONE;
	rc = dp_agent_name_take(a);
	if (rc != 0) {
		pthread_mutex_destroy(&a->r.reg_lock);
		pthread_mutex_destroy(&a->r.sync_kept_lock);
		free(a);
		rte_errno = -rc;
		return NULL;
	}
	rc = dp_world_parse(c->world, &a->r.b.world, err, sizeof(err));
	if (rc != 0) {
		DP_LOG(ERR, "agent %s: %s", a->r.b.name, err);
		goto fail;
	}
	rank = -ENOENT;
	for (unsigned int i = 0; i < a->r.b.world.n; i++)
		if (strcmp(a->r.b.world.w[i].name, a->r.b.name) == 0)
			rank = (int)i;
	if (a->r.b.world.joiner && strcmp(a->r.b.world.self.name, a->r.b.name) == 0)
		rank = DP_RANK_NONE; /* joins later (dprpc_world_join()) */
	if (rank < 0) {
		DP_LOG(ERR, "agent %s: not in the world map", a->r.b.name);
		rc = -ENOENT;
		goto fail;
	}
	a->r.b.world_cap = c->max_workers != 0 ? c->max_workers : DPRPC_MAX_WORKERS;
	if (a->r.b.world_cap > DPRPC_MAX_WORKERS || a->r.b.world_cap < a->r.b.world.n) {
		DP_LOG(ERR, "agent %s: max_workers %u: want %u..%d (the map's workers and more)",
			a->r.b.name, c->max_workers, a->r.b.world.n, DPRPC_MAX_WORKERS);
		rc = -EINVAL;
		goto fail;
	}
	a->join.port_owner = DP_RANK_NONE;
	a->r.b.port.join_port = -1;
	a->r.b.rank = (uint16_t)rank;
	a->r.b.self_addr = rank == DP_RANK_NONE ? a->r.b.world.self.addr : a->r.b.world.addrs[rank];
	a->r.b.session = dp_new_session();
	a->r.b.rx_ctx = (struct dp_rx_ctx){.addrs = a->r.b.world.addrs,
		.nb_workers = a->r.b.world.n,
		.self_rank = a->r.b.rank,
		.self = &a->r.b.self_addr};
	a->r.max_outstanding = c->max_outstanding;
	a->r.max_msg = c->max_msg_size;
	a->r.credits = c->credits;
	a->r.default_timeout_us = c->default_timeout_us;
	a->r.b.progress = dp_progress;
	a->r.b.poll = dprpc_poll;
	a->r.b.tsc_hz = rte_get_tsc_hz();
	a->r.b.us_per_tsc_q32 = (uint64_t)((UINT64_C(1000000) << 32) / a->r.b.tsc_hz);
	a->r.rto_tsc = (uint64_t)c->retransmit_us * a->r.b.tsc_hz / 1000000;
	a->r.rto_max_tsc = a->r.rto_tsc * 64;
	a->r.keepalive_tsc = dp_us_to_tsc(&a->r.b, c->keepalive_us);
	a->r.peer_timeout_tsc = dp_us_to_tsc(&a->r.b, c->peer_timeout_us);
	a->r.peer_event = c->peer_event;
	a->r.peer_event_arg = c->peer_event_arg;
	a->r.b.idle_pause = c->idle_pause_polls;
	a->r.b.idle_yield = c->idle_yield_polls;
	a->r.b.waiters_park = c->waiters_park;
	a->r.b.idle_sleep = c->idle_sleep_polls;
	a->r.b.idle_sleep_us = c->idle_sleep_us;
	/* Timeouts are checked every 100 us: that is their resolution. */
	a->r.b.timer_period_tsc = a->r.b.tsc_hz / 10000;
	a->link_answered_wait_tsc = a->r.b.tsc_hz / 1000 * DP_LINK_ANSWERED_WAIT_MS;
	a->next_timer_tsc = rte_rdtsc() + a->r.b.timer_period_tsc;
	a->r.b.stall_tsc = a->r.b.tsc_hz / 1000000 * DP_STALL_US;
	/* Not shared yet: the first tick is due now (dp_expire_stalled()). */
	dp_store_relaxed(&a->r.b.tick_tsc, rte_rdtsc());

	rc = dp_pools_init(a, c);
	if (rc != 0)
		goto fail;
	rc = dp_budgets_init(a, c);
	if (rc != 0)
		goto fail;
	rc = dp_ext_init_all(&a->r.b, c);
	if (rc != 0)
		goto fail;
	rc = dp_peers_init(&a->r);
	if (rc != 0)
		goto fail;
	dp_fault_init(&a->r.b.ftx, &c->fault_tx, a->r.b.mp, a->r.b.tsc_hz);
	dp_fault_init(&a->r.b.frx, &c->fault_rx, a->r.b.mp, a->r.b.tsc_hz);
	rc = dp_handlers_init(a, c);
	if (rc != 0)
		goto fail;
	/* What the ports read of the agent (struct dp_ports). */
	a->r.b.port.name = a->r.b.name;
	a->r.b.port.instance = a->r.b.instance;
	a->r.b.port.tsc_hz = a->r.b.tsc_hz;
	a->r.b.port.mp = a->r.b.mp;
	a->r.b.port.world = &a->r.b.world;
	a->r.b.port.world_cap = a->r.b.world_cap;
	rc = dp_port_open(&a->r.b.port, c, a->r.b.rank);
	if (rc != 0)
		goto fail;
	a->io_lcore = c->io_lcore;
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
