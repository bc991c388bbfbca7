/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The state towards each peer (struct dp_peer): allocated for the world
 * at creation and for a worker as it joins, freed with the agent; what the
 * application reads of it (dprpc_worker_state(), dprpc_worker_rtt_get()).
 * The rpc configuration's accessors: the default timeout (read and set at
 * run time, dprpc_rpc_timeout_set()), max_msg_size.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <rte_errno.h>
#include <rte_random.h>

#include "dp_rpc.h"
#include "dp_client.h"
#include "dp_server.h"
#include "dprpc_atomic.h"

int
dp_peer_init(struct dp_rpc *a, unsigned int p)
{
	struct dp_peer *peer = &a->peers[p];
	unsigned int i;

	dp_l2l4_template(peer->tmpl, &a->b.self_addr, &a->b.world.addrs[p], a->b.ttl);
	dp_arp_peer(&a->b, &a->b.world.addrs[p]);
	snprintf(peer->expire_msg, sizeof(peer->expire_msg), "call to %s timed out",
		a->b.world.w[p].name);
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
int
dp_peers_init(struct dp_rpc *a)
{
	unsigned int p;
	int rc;

	a->peers = calloc(a->b.world_cap, sizeof(*a->peers));
	if (a->peers == NULL)
		return -ENOMEM;
	for (p = 0; p < a->b.world.n; p++) {
		rc = dp_peer_init(a, p);
		if (rc != 0)
			return rc;
	}
	return 0;
}

void
dp_peers_free(struct dp_rpc *a)
{
	unsigned int p;

	if (a->peers == NULL)
		return;
	for (p = 0; p < a->b.world_cap; p++) {
		free(a->peers[p].slots);
		free(a->peers[p].free_slots);
		free(a->peers[p].srv);
		free(a->peers[p].srv_keep);
		free(a->peers[p].keep);
	}
	free(a->peers);
	a->peers = NULL;
}

int
dprpc_worker_state(const struct dprpc_agent *agent, unsigned int rank)
{
	const struct dp_rpc *a = dp_rpc_of(agent);

	if (a == NULL)
		return -EINVAL;
	if (rank >= dp_world_n(&a->b))
		return -ENOENT;
	if (rank == a->b.rank)
		return DPRPC_PEER_UP;
	/* Relaxed: a snapshot of a poller-written state; publishes nothing. */
	return dp_load_relaxed(&a->peers[rank].state);
}

int
dprpc_worker_rtt_get(
	const struct dprpc_agent *agent, unsigned int rank, struct dprpc_worker_rtt *rtt)
{
	const struct dp_rpc *a = dp_rpc_of(agent);

	if (a == NULL || rtt == NULL)
		return -EINVAL;
	if (rank >= dp_world_n(&a->b) || rank == a->b.rank)
		return -ENOENT;
	/* Relaxed: snapshots of the poller's estimates (dp_rpc.h). */
	rtt->srtt_ns = dp_tsc_to_ns(&a->b, dp_load_relaxed(&a->peers[rank].srtt_tsc));
	rtt->rto_ns = dp_tsc_to_ns(&a->b, dp_load_relaxed(&a->peers[rank].rto_tsc));
	return 0;
}

uint64_t
dp_agent_default_timeout_us(const struct dprpc_agent *agent)
{
	const struct dp_rpc *a = dp_rpc_of(agent);

	/* Relaxed: the value alone (dp_rpc.h). */
	return dp_load_relaxed(&a->default_timeout_us);
}

uint64_t
dprpc_rpc_timeout(const struct dprpc_agent *agent)
{
	if (agent == NULL) {
		rte_errno = EINVAL;
		return 0;
	}
	return dp_agent_default_timeout_us(agent);
}

int
dprpc_rpc_timeout_set(struct dprpc_agent *agent, uint64_t timeout_us)
{
	struct dp_rpc *a = dp_rpc_of(agent);

	if (a == NULL || timeout_us == DPRPC_TIMEOUT_DEFAULT)
		return -EINVAL;
	/* Relaxed: the value alone; calls already started keep the
	 * deadline they computed (dp_rpc.h). */
	dp_store_relaxed(&a->default_timeout_us, timeout_us);
	return 0;
}

uint32_t
dp_agent_max_msg(const struct dprpc_agent *agent)
{
	const struct dp_rpc *a = dp_rpc_of(agent);

	return a->max_msg;
}
