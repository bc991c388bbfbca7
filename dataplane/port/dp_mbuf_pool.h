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
 * The mempool driver of the agent's own pools (mbufs, requests; the future
 * pool makes the same choice in future.c): HTS rings (head/tail sync).
 * Any thread takes from and returns to them, and threads that EAL did not
 * create have no per-lcore cache (until dp_thread_lcore() registers them;
 * the request pool has none at all), so each of their gets and puts is a
 * ring operation.  DPDK's default MP/MC ring makes each operation wait, in
 * order, until every earlier one has finished: with more threads than
 * cores one preempted mid-operation makes the others spin behind it one
 * after the other, each needing the CPU the next one waits for (perf
 * lateness: four application threads on two cores, all four in the mbuf
 * ring's dequeue under dprpc_rpc_async_id(), for up to 0.6 s).  HTS lets
 * one operation at a time in: a preempted one holds the others until it
 * runs again, but it is the only thread that needs the CPU for that.  RTS
 * (relaxed tail sync), which lets the others go on, is not safe for a
 * pool: while a preempted get holds the consumer tail back, a put of
 * objects taken since can find the ring full, and the mempool drops them
 * silently (seen: 12% of a pool gone in 5 s with six threads; the
 * lock-free stack driver's put can fail the same way while a preempted
 * get has not given its list elements back).  An HTS ring is FIFO like
 * the classic one.  Figures: perf/RESULTS.md.
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
