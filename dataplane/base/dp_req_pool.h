/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The request objects (struct dprpc_request) of one agent: a FIFO of free
 * objects the poller owns, fed by a ring for the objects other threads
 * free.  req_pool.c has the design.
 *
 * Thread context: dp_req_pool_get(): the poller (the thread holding the
 * poll lock).  dp_req_pool_put(): any thread; @poller true only on the
 * poller.  dp_req_pool_in_use(): any thread (exact once the poller and
 * every thread that frees are quiet).  Init and free: the thread creating
 * or destroying the agent.
 */
#ifndef DP_REQ_POOL_H
#define DP_REQ_POOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_ring.h>

struct dprpc_request;

struct dp_req_pool {
	struct dprpc_request **fifo; /* free objects, oldest at head */
	uint32_t mask;		     /* fifo's size - 1 (a power of two) */
	/* Written by the poller only; atomic for dp_req_pool_in_use()
	 * readers on other threads (relaxed: a count, ordered by nothing). */
	_Atomic uint32_t head, tail;
	struct rte_ring *away; /* objects freed off the poller: MP (RTS), SC */
	void *mem;	       /* the objects */
	unsigned int n;	       /* how many */
};

/* Make @n objects of @size bytes, all free.  0, or a negative errno
 * (-ENOMEM, -EEXIST for a ring @name already taken). */
int dp_req_pool_init(
	struct dp_req_pool *p, const char *name, unsigned int n, size_t size, int socket_id);

/* Release what dp_req_pool_init() made (objects in use included).  Safe
 * on a zeroed or half-made pool. */
void dp_req_pool_free(struct dp_req_pool *p);

/* Move the objects freed off the poller to the fifo's tail.  The poller. */
void dp_req_pool_take_away(struct dp_req_pool *p);

/* Give @req back from a thread other than the poller. */
void dp_req_pool_put_away(struct dp_req_pool *p, struct dprpc_request *req);

/* The free object that was freed first, or NULL when none is free.  The
 * poller. */
static inline struct dprpc_request *
dp_req_pool_get(struct dp_req_pool *p)
{
	uint32_t head = atomic_load_explicit(&p->head, memory_order_relaxed);
	struct dprpc_request *req;

	if (unlikely(head == atomic_load_explicit(&p->tail, memory_order_relaxed))) {
		dp_req_pool_take_away(p);
		if (head == atomic_load_explicit(&p->tail, memory_order_relaxed))
			return NULL;
	}
	req = p->fifo[head & p->mask];
	atomic_store_explicit(&p->head, head + 1, memory_order_relaxed);
	return req;
}

/* Give @req back (@poller: this thread is the poller). */
static inline void
dp_req_pool_put(struct dp_req_pool *p, struct dprpc_request *req, bool poller)
{
	uint32_t tail;

	if (!poller) {
		dp_req_pool_put_away(p, req);
		return;
	}
	/* FIFO across threads: what other threads freed first goes first.
	 * The count reads the ring's tails only, no lock. */
	if (unlikely(rte_ring_count(p->away) != 0))
		dp_req_pool_take_away(p);
	tail = atomic_load_explicit(&p->tail, memory_order_relaxed);
	p->fifo[tail & p->mask] = req;
	atomic_store_explicit(&p->tail, tail + 1, memory_order_relaxed);
}

/* Objects taken and not given back. */
unsigned int dp_req_pool_in_use(const struct dp_req_pool *p);

#endif /* DP_REQ_POOL_H */
