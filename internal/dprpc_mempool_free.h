/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Freeing a mempool whose objects are all back, without DPDK 22.11's walk
 * of every object: the agent's mbuf pool (dataplane/agent/destroy.c) and the
 * any-thread future pools (future/future.c).
 *
 * Why.  rte_mempool_free() (22.11, rte_mempool_free_memchunks()) takes
 * the objects out of the pool one at a time, a ring dequeue of one object
 * per element of the pool's list of objects, following that list through
 * every object's header: for the 8191 mbufs of an agent's default pool,
 * 2.2 KB apart, 8191 dependent cache misses and ring operations, 1.2 ms of
 * CPU at every graceful shutdown, a quarter of what a worker's shutdown
 * costs (perf/RESULTS.md).  Nothing is done with the objects it takes out:
 * their memory is freed right after, chunk by chunk, from the pool's list
 * of memory chunks, and the ring with the pool.  So the list of objects
 * (a public field of struct rte_mempool) is emptied first, and the free
 * goes straight to the chunks, the ring and the header.
 *
 * Only for a pool whose objects no one holds any more (its in-use count 0)
 * and that no other thread uses: the caller's check.  Thread context: the
 * thread that frees the pool.
 */
#ifndef DPRPC_MEMPOOL_FREE_H
#define DPRPC_MEMPOOL_FREE_H

#include <rte_mempool.h>

static inline void
dprpc_mempool_free_idle(struct rte_mempool *mp)
{
	if (mp == NULL)
		return;
	STAILQ_INIT(&mp->elt_list);
	mp->populated_size = 0;
	rte_mempool_free(mp);
}

#endif /* DPRPC_MEMPOOL_FREE_H */
