/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers shared by the dprpc test suites: EAL start-up with the rules of
 * this machine (no PCI, no hugepages, a private file prefix), net_ring port
 * pairs, and a two-worker world.
 */
#ifndef DPT_H
#define DPT_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <dprpc/dprpc.h>

#define DPT_WORLD2                              \
	"a 0 02:00:00:00:00:01 10.0.0.1 7001\n" \
	"b 1 02:00:00:00:00:02 10.0.0.2 7002\n"

/* EAL for one test process: the no-NIC set of dprpc_eal_init_local(),
 * with lcores 0..3 mapped onto the two CPUs so pool and io lcores exist
 * even on a 2-core machine, and a file prefix dpt_TAG_PID. */
static inline int
dpt_eal_init(const char *tag)
{
	struct dprpc_eal_local_conf c;
	char args[128];

	snprintf(args, sizeof(args), "--lcores=0@0,1@1,2@1,3@0 --file-prefix=dpt_%s_%d", tag,
		(int)getpid());
	dprpc_eal_local_conf_init(&c);
	c.args = args;
	return dprpc_eal_init_local(&c);
}

/* Remove the EAL runtime directory of a test process that was killed
 * (dpt_eal_init(@tag) in process @pid). */
static inline void
dpt_remove_runtime_dir(const char *tag, pid_t pid)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf /var/run/dpdk/dpt_%s_%d", tag, (int)pid);
	if (system(cmd) != 0)
		fprintf(stderr, "dpt: could not remove the runtime dir of %d\n", (int)pid);
}

/* The end of a test process: EAL down, its runtime directory removed. */
static inline void
dpt_eal_cleanup(void)
{
	(void)dprpc_eal_cleanup();
}

/* Two ethdev ports joined back to back by two rte_rings. */
struct dpt_ring_pair {
	struct rte_ring *ab, *ba;
	int port_a, port_b;
};

static inline int
dpt_ring_pair(struct dpt_ring_pair *p)
{
	p->ab = rte_ring_create("dpt_ab", 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	p->ba = rte_ring_create("dpt_ba", 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (p->ab == NULL || p->ba == NULL)
		return -1;
	/* a receives on ba and sends on ab; b the other way round. */
	p->port_a = rte_eth_from_rings("dpt_ring_a", &p->ba, 1, &p->ab, 1, SOCKET_ID_ANY);
	p->port_b = rte_eth_from_rings("dpt_ring_b", &p->ab, 1, &p->ba, 1, SOCKET_ID_ANY);
	return p->port_a < 0 || p->port_b < 0 ? -1 : 0;
}

#define DPT_WORLD3                              \
	"a 0 02:00:00:00:00:01 10.0.0.1 7001\n" \
	"b 1 02:00:00:00:00:02 10.0.0.2 7002\n" \
	"c 2 02:00:00:00:00:03 10.0.0.3 7003\n"

/* A software switch for several agents in one process: port i receives
 * on rx[i] and sends on tx[i]; dpt_switch_step() moves each frame from a
 * tx ring to the rx ring of the port whose MAC (02:00:00:00:00:0<i+1>,
 * as in DPT_WORLD3) is its destination, and drops the others. */
#define DPT_SWITCH_MAX 6
struct dpt_switch {
	unsigned int n;
	struct rte_ring *rx[DPT_SWITCH_MAX], *tx[DPT_SWITCH_MAX];
	int port[DPT_SWITCH_MAX];
	uint64_t dropped;
};

static inline int
dpt_switch_make(struct dpt_switch *sw, unsigned int n)
{
	char name[32];
	unsigned int i;

	if (n > DPT_SWITCH_MAX)
		return -1;
	sw->n = n;
	sw->dropped = 0;
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "dpt_sw_rx%u", i);
		sw->rx[i] = rte_ring_create(name, 1024, SOCKET_ID_ANY, RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "dpt_sw_tx%u", i);
		sw->tx[i] = rte_ring_create(name, 1024, SOCKET_ID_ANY, RING_F_SC_DEQ);
		if (sw->rx[i] == NULL || sw->tx[i] == NULL)
			return -1;
		snprintf(name, sizeof(name), "dpt_sw%u", i);
		sw->port[i] = rte_eth_from_rings(name, &sw->rx[i], 1, &sw->tx[i], 1, SOCKET_ID_ANY);
		if (sw->port[i] < 0)
			return -1;
	}
	return 0;
}

/* Move what the ports sent.  Returns the number of frames moved.  One
 * thread at a time. */
static inline unsigned int
dpt_switch_step(struct dpt_switch *sw)
{
	struct rte_mbuf *m[32];
	unsigned int i, k, n, moved = 0;

	for (i = 0; i < sw->n; i++) {
		n = rte_ring_dequeue_burst(sw->tx[i], (void **)m, 32, NULL);
		for (k = 0; k < n; k++) {
			const uint8_t *dst = rte_pktmbuf_mtod(m[k], const uint8_t *);
			unsigned int to = (unsigned int)dst[5] - 1;

			if (to < sw->n && rte_ring_enqueue(sw->rx[to], m[k]) == 0) {
				moved++;
			} else {
				rte_pktmbuf_free(m[k]);
				sw->dropped++;
			}
		}
	}
	return moved;
}

/* Poll @a, bounded (10 s: the frames may wait for another thread that a
 * busy machine keeps off its CPU), until its drop counter @why reaches @n;
 * @s holds the last counters read.  The caller asserts on them. */
static inline void
dpt_poll_until_drops(
	struct dprpc_agent *a, enum dprpc_drop_reason why, uint64_t n, struct dprpc_agent_stats *s)
{
	for (int i = 0; i < 40000; i++) {
		dprpc_poll(a, 32);
		if (dprpc_agent_stats_get(a, s) == 0 && s->drops[why] >= n)
			return;
		usleep(250);
	}
}

/* The mbuf pool and net_ring pair an in-process suite starts from; NULL if
 * either cannot be made. */
static inline struct rte_mempool *
dpt_pool_and_pair(const char *pool_name, unsigned int nb_mbufs, struct dpt_ring_pair *pair)
{
	struct rte_mempool *mp = rte_pktmbuf_pool_create(pool_name, nb_mbufs,
		RTE_MIN(256u, nb_mbufs / 8), 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);

	if (mp == NULL || dpt_ring_pair(pair) != 0)
		return NULL;
	return mp;
}

/* A handler that answers with its request's payload. */
static inline int
dpt_echo(struct dprpc_request *req, void *arg)
{
	size_t len;
	const void *p = dprpc_request_payload(req, &len);

	(void)arg;
	return dprpc_reply(req, p, len);
}

/* dpt_echo(), counting its runs in the atomic_uint @arg points to. */
static inline int
dpt_counting_echo(struct dprpc_request *req, void *arg)
{
	atomic_fetch_add((atomic_uint *)arg, 1);
	return dpt_echo(req, NULL);
}

/* Free whatever a ring of a net_ring pair still holds (frames nobody polled
 * for when the agents went); returns how many. */
static inline unsigned int
dpt_ring_drain(struct rte_ring *r)
{
	struct rte_mbuf *m;
	unsigned int n = 0;

	while (rte_ring_dequeue(r, (void **)&m) == 0) {
		rte_pktmbuf_free(m);
		n++;
	}
	return n;
}

#endif /* DPT_H */
