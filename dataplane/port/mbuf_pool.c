/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The mbuf pool an agent makes for itself (conf.port.mbuf_pool NULL): where its
 * memory comes from.
 *
 * Design
 * ======
 *
 * Two homes for the same pool (DP_POOL_OPS, nb_mbufs mbufs of
 * RTE_MBUF_DEFAULT_BUF_SIZE, a 256-mbuf cache per lcore, less for a pool
 * under 512 mbufs):
 *
 *  - The EAL heap (rte_pktmbuf_pool_create_by_ops()), always right: the
 *    memory EAL maps for DMA, so any port can fill and send these mbufs.
 *  - A private mapping of this process (dprpc_hugemap.h), when nothing
 *    can need DMA into it: EAL without hugepages, IOVA as VA, and only
 *    virtual devices, which copy or hand pointers over and never read an
 *    mbuf by IOVA (the conditions: docs/architecture.md, "Pools and
 *    preemption").
 *
 * Why a second home: DPDK 22.11's heap zeroes a freed element and faults
 * a new one in page by page, on every world's start-up and shutdown; a
 * private mapping is one mmap() and one munmap(), and the mbufs
 * (buf_iova their virtual address) are the same to the data path.
 *
 * Ownership.  The mapping belongs to the pool: the mempool's memory chunk
 * free callback unmaps it when rte_mempool_free() runs (the agent's
 * teardown, which frees the pool only once every mbuf is back).
 *
 * Thread context: the thread that creates or destroys the agent.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "dp_log.h"
#include "dp_mbuf_pool.h"
#include "dprpc_hugemap.h"

/* The per-lcore cache of a pool of @n mbufs: DP_MBUF_CACHE, or less for a
 * small pool (a mempool's cache may hold at most n / 1.5 objects). */
static unsigned int
dp_mbuf_cache(unsigned int n)
{
	return RTE_MIN(DP_MBUF_CACHE, n / 2);
}

/* A private mapping: what its free callback unmaps. */
struct dp_map {
	void *base;
	size_t len;
};

static void
dp_map_free(struct rte_mempool_memhdr *memhdr, void *opaque)
{
	struct dp_map *m = opaque;

	(void)memhdr;
	dprpc_hugemap_free(m->base, m->len);
	free(m);
}

/* @len bytes of private memory on huge pages (dprpc_hugemap.h); NULL on
 * failure. */
static struct dp_map *
dp_map_new(size_t len)
{
	struct dp_map *m = malloc(sizeof(*m));

	if (m == NULL)
		return NULL;
	m->base = dprpc_hugemap_alloc(len, &m->len);
	if (m->base == NULL) {
		free(m);
		return NULL;
	}
	return m;
}

/* The pool in a private mapping; NULL (rte_errno set) if it cannot be
 * made, nothing left behind. */
static struct rte_mempool *
dp_mbuf_pool_private(const char *name, unsigned int n, int socket_id)
{
	struct rte_pktmbuf_pool_private priv = {
		.mbuf_data_room_size = RTE_MBUF_DEFAULT_BUF_SIZE,
	};
	struct rte_mempool *mp;
	struct dp_map *m;
	size_t len;
	int rc;

	mp = rte_mempool_create_empty(name, n, sizeof(struct rte_mbuf) + RTE_MBUF_DEFAULT_BUF_SIZE,
		dp_mbuf_cache(n), sizeof(priv), socket_id, RTE_MEMPOOL_F_NO_IOVA_CONTIG);
	if (mp == NULL)
		return NULL;
	rc = rte_mempool_set_ops_byname(mp, DP_POOL_OPS, NULL);
	if (rc != 0)
		goto fail;
	rte_pktmbuf_pool_init(mp, &priv);
	/* Objects may cross pages (RTE_MEMPOOL_F_NO_IOVA_CONTIG): n of
	 * them back to back, the first aligned to a cache line. */
	len = (size_t)n * (mp->header_size + mp->elt_size + mp->trailer_size) + RTE_MEMPOOL_ALIGN;
	m = dp_map_new(len);
	if (m == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = rte_mempool_populate_virt(mp, m->base, m->len, RTE_PGSIZE_4K, dp_map_free, m);
	if (rc < 0) {
		dp_map_free(NULL, m);
		goto fail;
	}
	if ((unsigned int)rc != n) { /* the mapping is the pool's now */
		rc = -ENOMEM;
		goto fail;
	}
	rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL);
	return mp;
fail:
	rte_mempool_free(mp);
	rte_errno = -rc;
	return NULL;
}

/* Whether port @port_id (or none, -1) can be given a private pool. */
static bool
dp_port_virtual(int port_id)
{
	struct rte_eth_dev_info info;
	const struct rte_bus *bus;

	if (port_id < 0)
		return true; /* vdevs and memif links only */
	if (!rte_eth_dev_is_valid_port((uint16_t)port_id) ||
		rte_eth_dev_info_get((uint16_t)port_id, &info) != 0 || info.device == NULL)
		return false;
	bus = rte_dev_bus(info.device);
	return bus != NULL && strcmp(rte_bus_name(bus), "vdev") == 0;
}

struct rte_mempool *
dp_mbuf_pool_create(const char *name, unsigned int n, int socket_id, int port_id)
{
	struct rte_mempool *mp;

	if (!rte_eal_has_hugepages() && rte_eal_iova_mode() == RTE_IOVA_VA &&
		dp_port_virtual(port_id)) {
		mp = dp_mbuf_pool_private(name, n, socket_id);
		if (mp != NULL || rte_errno == EEXIST)
			return mp;
		DP_LOG(INFO, "mbuf pool %s: no private mapping (%s), in the EAL heap", name,
			rte_strerror(rte_errno));
	}
	return rte_pktmbuf_pool_create_by_ops(
		name, n, dp_mbuf_cache(n), 0, RTE_MBUF_DEFAULT_BUF_SIZE, socket_id, DP_POOL_OPS);
}
