/* SPDX-License-Identifier: BSD-3-Clause */
/* dpdk_app: a DPDK application owning EAL, its port and its loop lends agents queues (port_ready).
 * Run: dpdk_app --no-pci --no-huge -m 256 --huge-unlink=never --no-shconf --vdev net_ring0 */
#include <stdio.h>
#include <rte_eal.h>
#include <rte_ethdev.h>

#include <dprpc/dprpc.h>

static int
pong(struct dprpc_request *req, void *arg)
{
	return dprpc_reply(req, "pong", 4);
}

int
main(int argc, char **argv)
{
	struct dprpc_agent_conf c;
	struct dprpc_agent *ag[2];
	struct rte_mbuf *m[4];
	int rc = 0, sent = 0, got = 0;

	if (rte_eal_init(argc, argv) < 0) /* EAL is the application's */
		return 1;
	/* Port 0, net_ring0, loops each queue to itself: a sends on 2 where b receives, b on 1. */
	struct rte_mempool *mp = rte_pktmbuf_pool_create("app", 1023, 0, 0, 2048 + 128, 0);
	rc |= rte_eth_dev_configure(0, 3, 3, &(struct rte_eth_conf){0});
	for (uint16_t q = 0; q < 3; q++)
		rc |= rte_eth_rx_queue_setup(0, q, 512, 0, NULL, mp) |
		      rte_eth_tx_queue_setup(0, q, 512, 0, NULL);
	rc |= rte_eth_dev_start(0);
	dprpc_agent_conf_init(&c);
	c.world = "a 0 02:00:00:00:00:01 10.0.0.1 7000; b 1 02:00:00:00:00:02 10.0.0.2 7000";
	c.port.id = 0;
	c.port.ready = true; /* configured and started by the application, which keeps it */
	c.serve.handlers = &(const struct dprpc_handler_def){.name = "ping", .fn = pong};
	c.serve.nb_handlers = 1;
	for (int i = 0; i < 2; i++) {
		c.name = i ? "b" : "a";
		c.port.rx_queue = 1 + i;
		c.port.tx_queue = 2 - i;
		ag[i] = rc == 0 ? dprpc_agent_create(&c) : NULL;
	}
	struct dprpc_future *f = dprpc_rpc_async(ag[0], "b", "ping", NULL, 0, 60000000);
	sent = rc == 0 && rte_pktmbuf_alloc_bulk(mp, m, 4) == 0 ? rte_eth_tx_burst(0, 0, m, 4) : 0;
	while (dprpc_future_state(f) == DPRPC_FUTURE_PENDING) { /* its loop: queue 0, the agents */
		got += rte_eth_rx_burst(0, 0, &m[got], sent - got); /* its frames, back in m */
		dprpc_poll(ag[0], 32);
		dprpc_poll(ag[1], 32);
	}
	rte_pktmbuf_free_bulk(m, got);
	rc |= dprpc_future_wait(f, 0) | (got != sent); /* done: the call's answer or its error */
	printf("dpdk_app: queue 0 %d/%d, a's call: %s\n", got, sent, rc ? "failed" : "pong");
	dprpc_future_put(f);
	rc |= dprpc_agent_destroy(ag[0]) | dprpc_agent_destroy(ag[1]);
	rc |= rte_eth_dev_stop(0) | rte_eth_dev_close(0);
	dprpc_eal_cleanup();
	return rc == 0 ? 0 : 1;
}
