/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The library's own mempools: objects in a private block of this process
 * on huge pages, and freeing without DPDK 22.11's walk of every object.
 * Used for the agent's mbuf pool when nothing can DMA into it
 * (dataplane/mbuf_pool.c) and for the any-thread future pools
 * (future/future.c).
 *
 * Populating.  dprpc_mempool_populate_private() puts a pool's objects in a
 * block from dprpc_hugemap_alloc(), one memory chunk, returned with one
 * munmap() by the chunk's free callback when the pool is freed.  From the
 * EAL heap (rte_mempool_populate_default()) the same objects are faulted
 * in page by page as the pool is made, and zeroed again (a memset of the
 * whole chunk) when it is freed.  The pool must have been created with
 * RTE_MEMPOOL_F_NO_IOVA_CONTIG: no object has an IOVA, none is given to a
 * device.
 *
 * Freeing.  rte_mempool_free() (22.11, rte_mempool_free_memchunks()) takes
 * the objects out of the pool one at a time, a ring dequeue of one object
 * per element of the pool's list of objects, following that list through
 * every object's header: for the 8191 mbufs of an agent's default pool,
 * 2.2 KB apart, 8191 dependent cache misses and ring operations, 1.2 ms of
 * CPU at every graceful shutdown, a quarter of what a worker's shutdown
 * cost (perf/RESULTS.md).  Nothing is done with the objects it takes out:
 * their memory is freed right after, chunk by chunk, from the pool's list
 * of memory chunks, and the ring with the pool.  dprpc_mempool_free_idle()
 * empties the list of objects (a public field of struct rte_mempool)
 * first, so the free goes straight to the chunks, the ring and the header.
 * Only for a pool whose objects no one holds any more (its in-use count 0)
 * and that no other thread uses: the caller's check.
 *
 * Thread context: the thread that creates or frees the pool.
 */
#ifndef DPRPC_MEMPOOL_H
#define DPRPC_MEMPOOL_H

#include <errno.h>
#include <stdlib.h>

#include <rte_mempool.h>

#include "dprpc_hugemap.h"

/* A private block: what its free callback unmaps. */
struct dprpc_mempool_block {
	void *base;
	size_t len;
};

static void
dprpc_mempool_block_free(struct rte_mempool_memhdr *memhdr, void *opaque)
{
	struct dprpc_mempool_block *b = opaque;

	(void)memhdr;
	dprpc_hugemap_free(b->base, b->len);
	free(b);
}

/* Give @mp, created empty with RTE_MEMPOOL_F_NO_IOVA_CONTIG, all its
 * objects in a private block freed with it: 0, or a negative errno
 * (-ENOMEM: the block could not be mapped; nothing of it left behind). */
static inline int
dprpc_mempool_populate_private(struct rte_mempool *mp)
{
	struct dprpc_mempool_block *b = malloc(sizeof(*b));
	size_t len;
	int rc;

	if (b == NULL)
		return -ENOMEM;
	/* Back to back, the first aligned to a cache line. */
	len = (size_t)mp->size * (mp->header_size + mp->elt_size + mp->trailer_size) +
	      RTE_MEMPOOL_ALIGN;
	b->base = dprpc_hugemap_alloc(len, &b->len);
	if (b->base == NULL) {
		free(b);
		return -ENOMEM;
	}
	rc = rte_mempool_populate_iova(
		mp, b->base, RTE_BAD_IOVA, b->len, dprpc_mempool_block_free, b);
	if (rc < 0) {
		dprpc_mempool_block_free(NULL, b);
		return rc;
	}
	/* The block is the pool's now, freed with it. */
	return (unsigned int)rc == mp->size ? 0 : -ENOMEM;
}

/* rte_mempool_free() of @mp, all its objects back, without the walk. */
static inline void
dprpc_mempool_free_idle(struct rte_mempool *mp)
{
	if (mp == NULL)
		return;
	STAILQ_INIT(&mp->elt_list);
	mp->populated_size = 0;
	rte_mempool_free(mp);
}

#endif /* DPRPC_MEMPOOL_H */
