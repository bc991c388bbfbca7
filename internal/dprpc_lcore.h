/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Mempool gets and puts with the calling thread's lcore id read from a
 * variable of our own: the mbufs (dataplane/) and the futures (future/)
 * of a call.
 *
 * Why.  rte_mempool_get(), rte_mempool_put(), rte_pktmbuf_alloc() and
 * rte_pktmbuf_free() find the thread's per-lcore cache by rte_lcore_id(),
 * EAL's thread-local variable.  From a shared library that variable is
 * reached through __tls_get_addr(), a call into the dynamic loader: four
 * of them per call on a W=32 client (the request's mbuf and future taken,
 * the response's mbuf and the future given back), 11 instructions each
 * besides the call (perf/instr.sh).  dprpc_tls_lcore_id is ours and
 * initial-exec, a plain %fs-relative load.
 *
 * Invariants.  dprpc_tls_lcore_id is DPRPC_LCORE_ASK (its initial value:
 * ask EAL, rte_lcore_id(), as DPDK's own functions do) or an lcore id that
 * stays the thread's for as long as the variable holds it.  Only
 * dp_thread_lcore_slow() (dataplane/port/eal.c) sets an id, and only one that
 * cannot be taken away under us: an EAL lcore's, whose id is fixed, or
 * the one it registered the thread for itself, which its key destructor
 * gives back (setting DPRPC_LCORE_ASK first) when the thread exits.  A
 * thread the application registered itself keeps DPRPC_LCORE_ASK: the
 * application may unregister it, and a stale id would share another
 * thread's cache.
 *
 * Thread context: any thread; each reads only its own variable.
 */
#ifndef DPRPC_LCORE_H
#define DPRPC_LCORE_H

#include <rte_branch_prediction.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

/* Not an lcore id (those are below RTE_MAX_LCORE), nor LCORE_ID_ANY. */
#define DPRPC_LCORE_ASK (UINT32_MAX - 1)

extern __thread uint32_t dprpc_tls_lcore_id __attribute__((tls_model("initial-exec")));

/* The calling thread's cache in @mp, or NULL (none: the pool's ring). */
static inline struct rte_mempool_cache *
dprpc_mp_cache(struct rte_mempool *mp)
{
	uint32_t id = dprpc_tls_lcore_id;

	if (unlikely(id == DPRPC_LCORE_ASK))
		id = rte_lcore_id();
	return rte_mempool_default_cache(mp, id);
}

/* rte_mempool_get() of one object: 0, or -ENOENT if none is left. */
static inline int
dprpc_mp_get(struct rte_mempool *mp, void **obj)
{
	return rte_mempool_generic_get(mp, obj, 1, dprpc_mp_cache(mp));
}

/* rte_mempool_put() of one object. */
static inline void
dprpc_mp_put(struct rte_mempool *mp, void *obj)
{
	rte_mempool_generic_put(mp, &obj, 1, dprpc_mp_cache(mp));
}

/* rte_pktmbuf_alloc(): a reset mbuf of @mp, or NULL if none is left. */
static inline struct rte_mbuf *
dprpc_mbuf_alloc(struct rte_mempool *mp)
{
	void *obj;

	if (dprpc_mp_get(mp, &obj) != 0)
		return NULL;
	rte_pktmbuf_reset(obj);
	return obj;
}

/* rte_pktmbuf_free(): every segment of @m (NULL: nothing), each given back
 * to its own pool once its last reference goes (rte_pktmbuf_prefree_seg(),
 * which also detaches indirect and external buffers). */
static inline void
dprpc_mbuf_free(struct rte_mbuf *m)
{
	struct rte_mbuf *next;

	while (m != NULL) {
		next = m->next;
		m = rte_pktmbuf_prefree_seg(m);
		if (likely(m != NULL))
			dprpc_mp_put(m->pool, m);
		m = next;
	}
}

#endif /* DPRPC_LCORE_H */
