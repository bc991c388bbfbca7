/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Agent life cycle: configuration, world, pools, extensions, lcores,
 * teardown; the process's registry of agents; the accessors of the agent
 * and its workers.
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
#include "fut_internal.h"
#include "dprpc_atomic.h"
#include "dprpc_mempool_free.h"

/* Names of the agents alive in this process, to refuse duplicates. */
static pthread_mutex_t dp_agents_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dprpc_agent *dp_agents[64];
static unsigned int dp_instances;

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
dp_agent_name_take(struct dprpc_agent *a)
{
	unsigned int i, free_i = RTE_DIM(dp_agents);
	int rc = 0;

	pthread_mutex_lock(&dp_agents_lock);
	for (i = 0; i < RTE_DIM(dp_agents); i++) {
		if (dp_agents[i] == NULL) {
			if (free_i == RTE_DIM(dp_agents))
				free_i = i;
		} else if (strcmp(dp_agents[i]->name, a->name) == 0) {
			rc = -EEXIST;
		}
	}
	if (rc == 0 && free_i == RTE_DIM(dp_agents))
		rc = -ENOSPC;
	if (rc == 0) {
		dp_agents[free_i] = a;
		a->instance = dp_instances++;
	}
	pthread_mutex_unlock(&dp_agents_lock);
	return rc;
}

void
dp_agents_foreach(void (*fn)(struct dprpc_agent *a, void *arg), void *arg)
{
	unsigned int i;

	pthread_mutex_lock(&dp_agents_lock);
	for (i = 0; i < RTE_DIM(dp_agents); i++)
		if (dp_agents[i] != NULL)
			fn(dp_agents[i], arg);
	pthread_mutex_unlock(&dp_agents_lock);
}

static void
dp_agent_name_drop(struct dprpc_agent *a)
{
	unsigned int i;

	pthread_mutex_lock(&dp_agents_lock);
	for (i = 0; i < RTE_DIM(dp_agents); i++)
		if (dp_agents[i] == a)
			dp_agents[i] = NULL;
	pthread_mutex_unlock(&dp_agents_lock);
}

int
dp_peer_init(struct dprpc_agent *a, unsigned int p)
{
	struct dp_peer *peer = &a->peers[p];
	unsigned int i;

	dp_l2l4_template(peer->tmpl, &a->self_addr, &a->world.addrs[p]);
	snprintf(peer->expire_msg, sizeof(peer->expire_msg), "call to %s timed out",
		a->world.w[p].name);
	peer->slots = calloc(a->max_outstanding, sizeof(*peer->slots));
	peer->free_slots = calloc(a->max_outstanding, sizeof(*peer->free_slots));
	/* Each slot's area on its own cache lines: a kept frame is
	 * written once per call (see dp_srv_grow() for the server's). */
	peer->keep = aligned_alloc(RTE_CACHE_LINE_SIZE, (size_t)a->max_outstanding * DP_KEEP_BYTES);
	/* The server side as large as our own numbering to start with:
	 * a world of equal max_outstanding never grows it. */
	if (peer->slots == NULL || peer->free_slots == NULL || peer->keep == NULL ||
		dp_srv_grow(peer, a->max_outstanding) != 0)
		return -ENOMEM;
	/* Stack of free slots, lowest index on top. */
	for (i = 0; i < a->max_outstanding; i++)
		peer->free_slots[i] = (uint16_t)(a->max_outstanding - 1 - i);
	peer->nb_free = a->max_outstanding;
	peer->next_req = (uint32_t)rte_rand();
	peer->ans_req = peer->next_req; /* nothing answered after it yet */
	/* Until the first round trip: before the peer is published
	 * (the agent shared, or world.n stored with release). */
	dp_store_relaxed(&peer->rto_tsc, a->rto_tsc);
	return 0;
}

/* peers[] for the world's capacity: joiners' entries are allocated as
 * they join (join.c), the array never moves. */
static int
dp_peers_init(struct dprpc_agent *a)
{
	unsigned int p;
	int rc;

	a->peers = calloc(a->world_cap, sizeof(*a->peers));
	if (a->peers == NULL)
		return -ENOMEM;
	for (p = 0; p < a->world.n; p++) {
		rc = dp_peer_init(a, p);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static void
dp_peers_free(struct dprpc_agent *a)
{
	unsigned int p;

	if (a->peers == NULL)
		return;
	for (p = 0; p < a->world_cap; p++) {
		free(a->peers[p].slots);
		free(a->peers[p].free_slots);
		free(a->peers[p].srv);
		free(a->peers[p].srv_keep);
		free(a->peers[p].keep);
	}
	free(a->peers);
	a->peers = NULL;
}

static int
dp_pools_init(struct dprpc_agent *a, const struct dprpc_agent_conf *c)
{
	char name[RTE_MEMPOOL_NAMESIZE];
	unsigned int nfut, i, sz;
	int rc;

	if (c->mbuf_pool != NULL) {
		a->mp = c->mbuf_pool;
	} else {
		snprintf(name, sizeof(name), "dprpc%u_mb", a->instance);
		a->mp = dp_mbuf_pool_create(name, c->nb_mbufs, c->socket_id, c->port_id);
		if (a->mp == NULL)
			return -rte_errno;
		a->own_mp = true;
	}
	/* A FIFO, never a LIFO cache, so that a late reply finds its object
	 * FREE for as long as possible (req_pool.c; the guarantee is in
	 * dprpc_rpc.h). */
	snprintf(name, sizeof(name), "dprpc%u_rq", a->instance);
	rc = dp_req_pool_init(
		&a->rq, name, c->max_requests, sizeof(struct dprpc_request), c->socket_id);
	if (rc != 0)
		return rc;
	/* The map's workers; those that join share the pool (a call that
	 * finds it empty fails -ENOBUFS). */
	nfut = RTE_MAX(a->world.n, 2u) * a->max_outstanding * 2 + 1024;
	snprintf(name, sizeof(name), "dprpc%u_fut", a->instance);
	a->fpool = fut_pool_create_mempool(name, nfut, nfut, c->socket_id);
	if (a->fpool != NULL)
		fut_pool_set_cancel_hook(a->fpool, dp_client_cancel_kick, a);
	if (a->fpool == NULL)
		return -rte_errno;
	snprintf(name, sizeof(name), "dprpc%u_tx", a->instance);
	a->tx_ring = rte_ring_create(
		name, DP_RING_SIZE, c->socket_id, RING_F_MP_RTS_ENQ | RING_F_SC_DEQ);
	if (a->tx_ring == NULL)
		return -rte_errno;
	for (sz = 2; sz < c->max_handlers * 2; sz <<= 1)
		;
	a->handlers = calloc(sz, sizeof(*a->handlers));
	if (a->handlers == NULL)
		return -ENOMEM;
	a->handler_mask = sz - 1;
	a->max_handlers = c->max_handlers;
	for (i = 0; i < c->nb_handler_lcores; i++) {
		struct dp_hlcore *hl = &a->hl[i];

		snprintf(name, sizeof(name), "dprpc%u_h%u", a->instance, i);
		hl->ring = rte_ring_create(
			name, DP_RING_SIZE, c->socket_id, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (hl->ring == NULL)
			return -rte_errno;
		hl->agent = a;
		hl->lcore = c->handler_lcores[i];
		a->nb_hl++;
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
		DP_LOG(ERR, "agent %s: nb_handlers %u with no handlers", a->name, c->nb_handlers);
		return -EINVAL;
	}
	for (i = 0; i < c->nb_handlers; i++) {
		const struct dprpc_handler_def *d = &c->handlers[i];

		rc = dp_register(a, d->name, d->fn, d->arg, d->mode, false);
		if (rc != 0) {
			DP_LOG(ERR, "agent %s: handlers[%u] (%s): %s", a->name, i,
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
	unsigned int pool = a->mp->size;
	uint64_t max_msg = c->max_msg_size;
	unsigned int kept_default = RTE_MAX(pool / 4, c->kept_mbufs_peer_max);

	a->hl_queue_max = c->handler_queue_max != 0 ? c->handler_queue_max : DP_RING_SIZE - 1;
	a->peer_req_max = c->peer_requests_max != 0 ? c->peer_requests_max : c->max_requests;
	a->inline_max_tsc = c->inline_wait_max_us == DPRPC_INLINE_WAIT_UNBOUNDED
				    ? UINT64_MAX
				    : dp_us_to_tsc(a, c->inline_wait_max_us != 0
							      ? c->inline_wait_max_us
							      : DPRPC_INLINE_WAIT_DEFAULT_US);
	a->queue_delay_max_tsc =
		c->queue_delay_max_us != 0 ? dp_us_to_tsc(a, c->queue_delay_max_us) : 0;
	a->service_declared_tsc = dp_us_to_tsc(a, c->service_time_us);
	a->kept_max = c->kept_mbufs_max != 0 ? c->kept_mbufs_max : RTE_MIN(kept_default, pool / 2);
	a->kept_peer_max = c->kept_mbufs_peer_max != 0 ? c->kept_mbufs_peer_max : a->kept_max / 2;
	a->msg_max = c->msg_bytes_max != 0 ? c->msg_bytes_max
					   : RTE_MAX(16 * max_msg, c->msg_bytes_peer_max);
	a->msg_peer_max = c->msg_bytes_peer_max != 0 ? c->msg_bytes_peer_max
						     : RTE_MIN(4 * max_msg, a->msg_max);
	if (a->kept_max > pool / 2 || a->kept_peer_max > a->kept_max) {
		DP_LOG(ERR,
			"agent %s: kept_mbufs_max %u (at most half the pool of %u) or "
			"kept_mbufs_peer_max %u (at most kept_mbufs_max) out of range",
			a->name, a->kept_max, pool, a->kept_peer_max);
		return -EINVAL;
	}
	if (a->msg_peer_max < max_msg || a->msg_max < a->msg_peer_max) {
		DP_LOG(ERR,
			"agent %s: need max_msg_size %" PRIu64 " <= msg_bytes_peer_max %" PRIu64
			" <= msg_bytes_max %" PRIu64,
			a->name, max_msg, a->msg_peer_max, a->msg_max);
		return -EINVAL;
	}
	return 0;
}

static void
dp_drain_rings(struct dprpc_agent *a)
{
	struct rte_mbuf *m;
	struct dprpc_request *req;
	unsigned int i;

	/* Calls never started and replies never sent. */
	while (rte_ring_sc_dequeue(a->tx_ring, (void **)&m) == 0) {
		struct dp_call_meta *meta = dp_meta(m);
		unsigned int dst =
			rte_be_to_cpu_16(dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *))->dst_worker);

		dp_txmsg_put(meta->tx);
		if (meta->fut != NULL) {
			dp_stream_put(dp_stream_of(m)); /* a stream call's */
			fut_fail_consume(meta->fut, -ESHUTDOWN, a->rank, "agent shut down");
			/* Relaxed: a bound only, pairs with nothing (as in
			 * dp_slot_release()). */
			atomic_fetch_sub_explicit(
				&a->peers[dst].outstanding, 1, memory_order_relaxed);
			dp_count(&a->st.calls_failed, 1);
		}
		rte_pktmbuf_free(m);
	}
	/* Requests queued to handler lcores that stopped: released unanswered
	 * (their callers fail with the port gone). */
	for (i = 0; i < a->nb_hl; i++) {
		while (rte_ring_sc_dequeue(a->hl[i].ring, (void **)&req) == 0)
			dp_request_free(req); /* its frame, message and hook too */
	}
	for (i = 0; i < a->nb_ports; i++)
		while (a->ports[i].tx_n > 0)
			rte_pktmbuf_free(a->ports[i].tx_buf[--a->ports[i].tx_n]);
}

static void
dp_agent_free(struct dprpc_agent *a)
{
	unsigned int i, in_use;

	dp_ext_closing_all(a);
	dp_port_close(a);
	if (a->tx_ring != NULL)
		dp_drain_rings(a);
	if (a->peers != NULL)
		dp_fail_all_slots(a, -ESHUTDOWN, "agent shut down");
	dp_fault_free(&a->ftx);
	dp_fault_free(&a->frx);
	if (a->peers != NULL)
		for (i = 0; i < a->world.n; i++)
			dp_srv_reset(a, &a->peers[i]);
	dp_ext_free_all(a);
	/* Their futures and response mbufs go back before the pools. */
	dp_sync_kept_free(a);
	for (i = 0; i < a->nb_hl; i++)
		rte_ring_free(a->hl[i].ring);
	rte_ring_free(a->tx_ring);
	if (a->fpool != NULL) {
		/* A future still held may be cancelled after the agent is
		 * gone (the pool then outlives it). */
		fut_pool_set_cancel_hook(a->fpool, NULL, NULL);
		dprpc_future_pool_release(a->fpool);
	}
	dp_req_pool_free(&a->rq);
	if (a->own_mp) {
		in_use = rte_mempool_in_use_count(a->mp);
		if (in_use == 0)
			dprpc_mempool_free_idle(a->mp);
		else
			/* Response values still held by futures point into
			 * these mbufs: leaking the pool is the safe choice. */
			DP_LOG(WARNING,
				"agent %s: %u mbufs still held (futures not put?); "
				"mbuf pool leaked",
				a->name, in_use);
	}
	free(a->handlers);
	dp_peers_free(a);
	pthread_mutex_destroy(&a->reg_lock);
	pthread_mutex_destroy(&a->sync_kept_lock);
	dp_join_free(a);
	dp_agent_name_drop(a);
	free(a);
}

/* Launch the handler lcores and the io lcore.  Every launch is tried and
 * checked: -EBUSY (logged) if any failed (its lcore was not waiting:
 * something else runs there), those that launched running. */
static int
dp_lcores_launch(struct dprpc_agent *a)
{
	unsigned int i;
	int rc = 0;

	/* Relaxed: rte_eal_remote_launch() hands the lcore its work through
	 * EAL's own release/acquire pair, which publishes this store too. */
	atomic_store_explicit(&a->stop, false, memory_order_relaxed);
	for (i = 0; i < a->nb_hl; i++) {
		if (rte_eal_remote_launch(dp_lcore_handler, &a->hl[i], a->hl[i].lcore) != 0) {
			DP_LOG(ERR, "agent %s: cannot launch handler lcore %u", a->name,
				a->hl[i].lcore);
			rc = -EBUSY;
			continue;
		}
		a->hl[i].launched = true;
	}
	if (a->io_lcore != DPRPC_LCORE_NONE) {
		if (rte_eal_remote_launch(dp_lcore_io, a, a->io_lcore) != 0) {
			DP_LOG(ERR, "agent %s: cannot launch io lcore %u", a->name, a->io_lcore);
			rc = -EBUSY;
		} else {
			a->io_launched = true;
		}
	}
	return rc;
}

/* rte_eal_wait_lcore() spins on the lcore's state: the thread that
 * destroys often shares its CPU with the lcore it waits for (the io lcore
 * pinned beside the main one), which then runs only once the spinner's
 * time slice ends (milliseconds).  Sleep until the lcore is back in WAIT
 * first; the wait then returns at once. */
static void
dp_lcore_join(unsigned int lcore)
{
	while (rte_eal_get_lcore_state(lcore) != WAIT)
		usleep(20);
	rte_eal_wait_lcore(lcore);
}

static void
dp_lcores_stop(struct dprpc_agent *a)
{
	unsigned int i;

	/* Release: pairs with the acquire loads in the lcore loops. */
	atomic_store_explicit(&a->stop, true, memory_order_release);
	for (i = 0; i < a->nb_hl; i++) {
		if (a->hl[i].launched)
			dp_lcore_join(a->hl[i].lcore);
		a->hl[i].launched = false;
	}
	if (a->io_launched)
		dp_lcore_join(a->io_lcore);
	a->io_launched = false;
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
	snprintf(a->name, sizeof(a->name), "%s", c->name);
	pthread_mutex_init(&a->reg_lock, NULL);
	pthread_mutex_init(&a->sync_kept_lock, NULL);
	a->io_lcore = DPRPC_LCORE_NONE;
	rc = dp_agent_name_take(a);
	if (rc != 0) {
		pthread_mutex_destroy(&a->reg_lock);
		pthread_mutex_destroy(&a->sync_kept_lock);
		free(a);
		rte_errno = -rc;
		return NULL;
	}
	rc = dp_world_parse(c->world, &a->world, err, sizeof(err));
	if (rc != 0) {
		DP_LOG(ERR, "agent %s: %s", a->name, err);
		goto fail;
	}
	rank = -ENOENT;
	for (unsigned int i = 0; i < a->world.n; i++)
		if (strcmp(a->world.w[i].name, a->name) == 0)
			rank = (int)i;
	if (a->world.joiner && strcmp(a->world.self.name, a->name) == 0)
		rank = DP_RANK_NONE; /* joins later (dprpc_world_join()) */
	if (rank < 0) {
		DP_LOG(ERR, "agent %s: not in the world map", a->name);
		rc = -ENOENT;
		goto fail;
	}
	a->world_cap = c->max_workers != 0 ? c->max_workers : DPRPC_MAX_WORKERS;
	if (a->world_cap > DPRPC_MAX_WORKERS || a->world_cap < a->world.n) {
		DP_LOG(ERR, "agent %s: max_workers %u: want %u..%d (the map's workers and more)",
			a->name, c->max_workers, a->world.n, DPRPC_MAX_WORKERS);
		rc = -EINVAL;
		goto fail;
	}
	a->join.port_owner = DP_RANK_NONE;
	a->join_port = -1;
	a->rank = (uint16_t)rank;
	a->self_addr = rank == DP_RANK_NONE ? a->world.self.addr : a->world.addrs[rank];
	a->session = dp_new_session();
	a->rx_ctx = (struct dp_rx_ctx){.addrs = a->world.addrs,
		.nb_workers = a->world.n,
		.self_rank = a->rank,
		.self = &a->self_addr};
	a->max_outstanding = c->max_outstanding;
	a->max_msg = c->max_msg_size;
	a->credits = c->credits;
	a->default_timeout_us = c->default_timeout_us;
	a->tsc_hz = rte_get_tsc_hz();
	a->us_per_tsc_q32 = (uint64_t)((UINT64_C(1000000) << 32) / a->tsc_hz);
	a->rto_tsc = (uint64_t)c->retransmit_us * a->tsc_hz / 1000000;
	a->rto_max_tsc = a->rto_tsc * 64;
	a->keepalive_tsc = dp_us_to_tsc(a, c->keepalive_us);
	a->peer_timeout_tsc = dp_us_to_tsc(a, c->peer_timeout_us);
	a->peer_event = c->peer_event;
	a->peer_event_arg = c->peer_event_arg;
	a->idle_pause = c->idle_pause_polls;
	a->idle_yield = c->idle_yield_polls;
	a->waiters_park = c->waiters_park;
	a->idle_sleep = c->idle_sleep_polls;
	a->idle_sleep_us = c->idle_sleep_us;
	/* Timeouts are checked every 100 us: that is their resolution. */
	a->timer_period_tsc = a->tsc_hz / 10000;
	a->link_answered_wait_tsc = a->tsc_hz / 1000 * DP_LINK_ANSWERED_WAIT_MS;
	a->next_timer_tsc = rte_rdtsc() + a->timer_period_tsc;
	a->stall_tsc = a->tsc_hz / 1000000 * DP_STALL_US;
	/* Not shared yet: the first tick is due now (dp_expire_stalled()). */
	dp_store_relaxed(&a->tick_tsc, rte_rdtsc());

	rc = dp_pools_init(a, c);
	if (rc != 0)
		goto fail;
	rc = dp_budgets_init(a, c);
	if (rc != 0)
		goto fail;
	rc = dp_ext_init_all(a, c);
	if (rc != 0)
		goto fail;
	rc = dp_peers_init(a);
	if (rc != 0)
		goto fail;
	dp_fault_init(&a->ftx, &c->fault_tx, a->mp, a->tsc_hz);
	dp_fault_init(&a->frx, &c->fault_rx, a->mp, a->tsc_hz);
	rc = dp_handlers_init(a, c);
	if (rc != 0)
		goto fail;
	rc = dp_port_open(a, c);
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

/* The requests the application keeps, deferred and unanswered: those in
 * use but the ones queued to the handler lcores (ours to release) and
 * those the extensions keep and will answer when quiesced.  Exact only
 * with the lcores stopped: they run handlers that may defer, and the io
 * lcore takes new requests. */
static unsigned int
dp_requests_held(struct dprpc_agent *a)
{
	unsigned int in_use = dp_requests_in_use(a), other = dp_ext_held_all(a), i;

	for (i = 0; i < a->nb_hl; i++)
		other += rte_ring_count(a->hl[i].ring);
	return in_use > other ? in_use - other : 0;
}

int
dprpc_agent_destroy(struct dprpc_agent *a)
{
	unsigned int held;

	if (a == NULL)
		return -EINVAL;
	/* Decide before changing anything: only the lcores stop, to count. */
	dp_lcores_stop(a);
	held = dp_requests_held(a);
	if (held == 0) {
		/* Requests waiting for something that will never come (an
		 * RRef value) are answered (-ESHUTDOWN) rather than left
		 * deferred: the extensions counted them above. */
		dp_ext_quiesce_all(a);
		held = dp_requests_held(a);
		if (held == 0) {
			/* Its memif links' workers stop polling them first. */
			dp_links_close(a);
			dp_agent_free(a);
			return 0;
		}
		/* Not expected: an extension kept more than it said. */
		DP_LOG(ERR, "agent %s: requests still kept after quiesce", a->name);
	}
	/* Deferred requests hold a pointer to the agent: refused, and the
	 * agent left as it was, its lcores running again. */
	DP_LOG(ERR, "agent %s: %u deferred requests unanswered, not destroyed", a->name, held);
	if (dp_lcores_launch(a) != 0)
		DP_LOG(ERR,
			"agent %s: an lcore could not be restarted after the refused destroy; "
			"the agent runs without it (dprpc_agent.h)",
			a->name);
	return -EBUSY;
}

int
dprpc_agent_wait_link(struct dprpc_agent *a, uint64_t timeout_us)
{
	uint64_t deadline;

	if (a == NULL)
		return -EINVAL;
	deadline = dp_deadline_tsc(a, rte_rdtsc(), timeout_us);
	if (deadline == 0)
		deadline = UINT64_MAX; /* none */
	for (;;) {
		if (dp_ports_link_up(a))
			return 0;
		if (rte_rdtsc() >= deadline)
			return -ETIMEDOUT;
		if (!a->io_launched)
			(void)dprpc_poll(a, DP_RX_BURST);
		usleep(1000);
	}
}

unsigned int
dprpc_agent_rank(const struct dprpc_agent *a)
{
	if (a == NULL) {
		rte_errno = EINVAL;
		return UINT_MAX;
	}
	return a->rank;
}

const char *
dprpc_agent_name(const struct dprpc_agent *a)
{
	if (a == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	return a->name;
}

unsigned int
dprpc_world_size(const struct dprpc_agent *a)
{
	if (a == NULL) {
		rte_errno = EINVAL;
		return 0;
	}
	return dp_world_n(a);
}

int
dprpc_worker_rank(const struct dprpc_agent *a, const char *name)
{
	unsigned int i, n;

	if (a == NULL || name == NULL)
		return -EINVAL;
	for (i = 0, n = dp_world_n(a); i < n; i++)
		if (strcmp(a->world.w[i].name, name) == 0)
			return (int)i;
	return -ENOENT;
}

const char *
dprpc_worker_name(const struct dprpc_agent *a, unsigned int rank)
{
	if (a == NULL || rank >= dp_world_n(a)) {
		rte_errno = a == NULL ? EINVAL : ENOENT;
		return NULL;
	}
	return a->world.w[rank].name;
}

int
dprpc_worker_state(const struct dprpc_agent *a, unsigned int rank)
{
	if (a == NULL)
		return -EINVAL;
	if (rank >= dp_world_n(a))
		return -ENOENT;
	if (rank == a->rank)
		return DPRPC_PEER_UP;
	/* Relaxed: a snapshot of a poller-written state; publishes nothing. */
	return dp_load_relaxed(&a->peers[rank].state);
}

int
dprpc_worker_rtt(const struct dprpc_agent *a, unsigned int rank, struct dprpc_worker_rtt *rtt)
{
	if (a == NULL || rtt == NULL)
		return -EINVAL;
	if (rank >= dp_world_n(a) || rank == a->rank)
		return -ENOENT;
	/* Relaxed: snapshots of the poller's estimates (dp_agent.h). */
	rtt->srtt_ns = dp_tsc_to_ns(a, dp_load_relaxed(&a->peers[rank].srtt_tsc));
	rtt->rto_ns = dp_tsc_to_ns(a, dp_load_relaxed(&a->peers[rank].rto_tsc));
	return 0;
}

uint16_t
dprpc_agent_port(const struct dprpc_agent *a)
{
	if (a == NULL) {
		rte_errno = EINVAL;
		return UINT16_MAX;
	}
	return a->ports[0].id;
}
