/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The mbuf pool an agent makes for itself (conf.port.mbuf_pool NULL).
 * mbuf_pool.c has the design: in the EAL heap, or in a private mapping
 * when nothing can need DMA into it.
 *
 * Thread context: the thread that creates the agent.
 */
#ifndef DP_MBUF_POOL_H
#define DP_MBUF_POOL_H

#include <rte_mempool.h>

/*
 * The mempool driver of the agent's own mbuf pool (the future pools make
 * the same choice, future.c): HTS rings.  Any thread gets and puts, and a
 * thread preempted mid-operation holds up only itself; DPDK's default ring
 * queues the others behind it, and RTS loses objects (docs/futures.md,
 * "Progress").
 */
#define DP_POOL_OPS "ring_mt_hts"
/* Mbufs each lcore keeps in its cache of the pool (at most half the pool). */
#define DP_MBUF_CACHE 256

/* A pool of @n mbufs of RTE_MBUF_DEFAULT_BUF_SIZE (DP_POOL_OPS) named
 * @name, for an agent whose application port is @port_id (-1: none, only
 * vdevs and memif links).  rte_mempool_free() releases it.  NULL with
 * rte_errno set (ENOMEM, EEXIST for a name taken, or what
 * rte_pktmbuf_pool_create_by_ops() sets). */
struct rte_mempool *dp_mbuf_pool_create(
	const char *name, unsigned int n, int socket_id, int port_id);

#endif /* DP_MBUF_POOL_H */
