/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Request objects: a FIFO the poller owns, fed by a ring from other
 * threads.
 *
 * Two needs shape it.  A late reply (dprpc_handler.h) must find its object
 * FREE for as long as possible, so a freed object is handed out again only
 * after every object that was already free when it was released: the
 * free list is FIFO, never a LIFO cache.  And the poller takes and frees
 * one object per incoming request, at millions a second: that must cost
 * no locked instruction.
 *
 * Only the poller takes objects (dp_req_new()).  Most are freed on the
 * poller too (an inline handler's answer), some on other threads (a
 * handler lcore's or a deferred reply's answer, destroy).  So:
 *
 *   fifo   the free objects in the order they were freed, a power-of-two
 *          array indexed by free-running head (next to take) and tail
 *          (next free place); only the poller reads or writes it, with
 *          plain loads and stores.  The poll lock (poll_lock.c) orders one
 *          poller's use before the next's.
 *   away   an rte_ring (multi-producer in RTS mode, single consumer: the
 *          poller) of the objects freed on other threads.
 *
 * Before the poller appends an object it frees, and before it takes from
 * an empty fifo, it moves what `away` holds to the fifo's tail: an object
 * freed on another thread before one freed on the poller is handed out
 * before it too, so the order is FIFO across threads (two frees that race
 * on different threads have no order to keep).  An object freed off the
 * poller waits in `away` until then, which only delays its reuse.
 *
 * `away` holds every object (its size is exact), so an enqueue never
 * fails.  Its RTS mode lets a producer preempted mid-enqueue hold up no
 * other producer; the ring's release (producer tail) and acquire (the
 * consumer's load of it) order everything the freeing thread did with the
 * object before the poller hands it out again.
 *
 * The in-use count is n less the objects in the fifo and in `away`.  head
 * and tail are atomics written with relaxed stores (plain on x86) so that
 * another thread may read them; the count is exact when the poller and
 * the threads that free are quiet (tests, destroy), an estimate otherwise
 * (stats).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include <rte_branch_prediction.h>
#include <rte_common.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_ring.h>

#include "dp_req_pool.h"

/* Objects moved from away to the fifo per dequeue. */
#define DP_REQ_AWAY_BURST 32

int
dp_req_pool_init(
	struct dp_req_pool *p, const char *name, unsigned int n, size_t size, int socket_id)
{
	uint32_t cap = rte_align32pow2(n), i;
	size_t sz = RTE_ALIGN_CEIL(size, RTE_CACHE_LINE_SIZE);

	p->n = n;
	p->mask = cap - 1;
	atomic_store_explicit(&p->head, 0, memory_order_relaxed);
	atomic_store_explicit(&p->tail, n, memory_order_relaxed);
	p->mem = rte_zmalloc_socket(name, sz * n, RTE_CACHE_LINE_SIZE, socket_id);
	p->fifo = rte_zmalloc_socket(name, sizeof(*p->fifo) * cap, RTE_CACHE_LINE_SIZE, socket_id);
	if (p->mem == NULL || p->fifo == NULL)
		return -ENOMEM;
	p->away = rte_ring_create(
		name, n, socket_id, RING_F_EXACT_SZ | RING_F_MP_RTS_ENQ | RING_F_SC_DEQ);
	if (p->away == NULL)
		return -rte_errno;
	for (i = 0; i < n; i++)
		p->fifo[i] = (struct dprpc_request *)((char *)p->mem + (size_t)i * sz);
	return 0;
}

void
dp_req_pool_free(struct dp_req_pool *p)
{
	rte_ring_free(p->away);
	rte_free(p->fifo);
	rte_free(p->mem);
	p->away = NULL;
	p->fifo = NULL;
	p->mem = NULL;
}

void
dp_req_pool_take_away(struct dp_req_pool *p)
{
	uint32_t tail = atomic_load_explicit(&p->tail, memory_order_relaxed);
	void *objs[DP_REQ_AWAY_BURST];
	unsigned int k, i;

	while ((k = rte_ring_sc_dequeue_burst(p->away, objs, DP_REQ_AWAY_BURST, NULL)) > 0)
		for (i = 0; i < k; i++)
			p->fifo[tail++ & p->mask] = objs[i];
	atomic_store_explicit(&p->tail, tail, memory_order_relaxed);
}

void
dp_req_pool_put_away(struct dp_req_pool *p, struct dprpc_request *req)
{
	/* Never full: it has room for every object. */
	(void)rte_ring_enqueue(p->away, req);
}

unsigned int
dp_req_pool_in_use(const struct dp_req_pool *p)
{
	uint32_t free_here = atomic_load_explicit(&p->tail, memory_order_relaxed) -
			     atomic_load_explicit(&p->head, memory_order_relaxed);
	unsigned int free_away = rte_ring_count(p->away);

	return p->n > free_here + free_away ? p->n - free_here - free_away : 0;
}
