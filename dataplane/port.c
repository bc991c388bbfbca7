/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent's port, as struct dprpc_agent_conf documents it:
 *  - conf.vdev: the agent's own.  Probed, configured (one rx and one tx
 *    queue) and started at creation; stopped, closed and removed at destroy.
 *  - conf.port_id without port_ready: handed over by the application,
 *    stopped, with at most one queue each way (never configured, or left so
 *    by an earlier agent).  The agent configures and starts it, and stops
 *    it at destroy (it stays configured; the port id is the application's).
 *    A port with more queues or started is the application's: refused with
 *    -EBUSY before anything is changed.
 *  - conf.port_id with port_ready: the application's, configured and
 *    started.  The agent checks that rx_queue and tx_queue exist and run,
 *    uses them only, and never configures, starts, stops or closes it.
 * Every refusal is logged and leaves the port as it was.
 */
#include <errno.h>
#include <string.h>

#include <rte_dev.h>
#include <rte_ethdev.h>

#include "dp_agent.h"
#include "dp_port.h"

/*
 * Whether the application's port runs queues @rxq and @txq: 0, -EINVAL, or
 * the errno of a failing ethdev call.  DPDK 22.11 has no public "is the
 * port started" query; rte_eth_dev_{rx,tx}_queue_start() answers it for a
 * queue below nb_{rx,tx}_queues: -EINVAL while the port is stopped (checked
 * before anything else, and as for a queue not set up or a hairpin queue,
 * which the agent cannot use either), -ENOTSUP on a started port whose PMD
 * has no per-queue start (the virtual ones), 0 on a started one whose queue
 * runs.  Its one effect: a queue the application set up with deferred start
 * is started, which is what the agent needs of its queues.
 */
static int
dp_port_queues_run(struct dprpc_agent *a, uint16_t port, uint16_t rxq, uint16_t txq)
{
	int rc = rte_eth_dev_rx_queue_start(port, rxq);

	if (rc == 0 || rc == -ENOTSUP)
		rc = rte_eth_dev_tx_queue_start(port, txq);
	if (rc == 0 || rc == -ENOTSUP)
		return 0;
	if (rc == -EINVAL)
		DP_LOG(ERR,
			"agent %s: port %u is not started, or rx queue %u / tx queue %u is not "
			"set up (port_ready: the application configures and starts it)",
			a->name, port, rxq, txq);
	else
		DP_LOG(ERR, "agent %s: port %u: cannot check queues %u/%u: %s", a->name, port, rxq,
			txq, strerror(-rc));
	return rc;
}

/* port_ready: check the application's queues, touch nothing else. */
static int
dp_port_take_ready(struct dprpc_agent *a, const struct dprpc_agent_conf *c, uint16_t port)
{
	struct rte_eth_dev_info info;
	int rc = rte_eth_dev_info_get(port, &info);

	if (rc != 0) {
		DP_LOG(ERR, "agent %s: port %u: no device info: %s", a->name, port, strerror(-rc));
		return rc;
	}
	if (c->rx_queue >= info.nb_rx_queues || c->tx_queue >= info.nb_tx_queues) {
		DP_LOG(ERR,
			"agent %s: port %u has %u rx and %u tx queues: no rx queue %u or tx "
			"queue %u",
			a->name, port, info.nb_rx_queues, info.nb_tx_queues, c->rx_queue,
			c->tx_queue);
		return -EINVAL;
	}
	rc = dp_port_queues_run(a, port, c->rx_queue, c->tx_queue);
	if (rc != 0)
		return rc;
	a->rxq = c->rx_queue;
	a->txq = c->tx_queue;
	return 0;
}

/* A port of the agent's: one rx and one tx queue (0), started. */
static int
dp_port_setup(struct dprpc_agent *a, uint16_t port)
{
	struct rte_eth_conf pconf;
	int rc;

	a->rxq = 0;
	a->txq = 0;
	memset(&pconf, 0, sizeof(pconf));
	/* Refuses a started port with -EBUSY before changing anything. */
	rc = rte_eth_dev_configure(port, 1, 1, &pconf);
	if (rc == -EBUSY) {
		DP_LOG(ERR,
			"agent %s: port %u is started: the application's (configure it, "
			"and set port_ready and the agent's queues)",
			a->name, port);
		return rc;
	}
	if (rc == 0)
		rc = rte_eth_rx_queue_setup(
			port, 0, 1024, rte_eth_dev_socket_id(port), NULL, a->mp);
	if (rc == 0)
		rc = rte_eth_tx_queue_setup(port, 0, 1024, rte_eth_dev_socket_id(port), NULL);
	if (rc == 0)
		rc = rte_eth_dev_start(port);
	if (rc != 0) {
		DP_LOG(ERR, "agent %s: cannot set port %u up: %s", a->name, port, strerror(-rc));
		return rc;
	}
	a->port_started = true;
	/* Best effort: virtual devices mostly do not filter by MAC anyway. */
	(void)rte_eth_promiscuous_enable(port);
	return 0;
}

int
dp_port_open(struct dprpc_agent *a, const struct dprpc_agent_conf *c)
{
	struct rte_eth_dev_info info;
	uint16_t port;
	size_t n;
	int rc;

	if (!c->port_ready && (c->rx_queue != 0 || c->tx_queue != 0)) {
		DP_LOG(ERR,
			"agent %s: rx_queue/tx_queue are the application's queues: they need "
			"port_ready",
			a->name);
		return -EINVAL;
	}
	if (c->port_id >= 0) {
		if (c->port_id > UINT16_MAX || !rte_eth_dev_is_valid_port((uint16_t)c->port_id)) {
			DP_LOG(ERR, "agent %s: no port %d", a->name, c->port_id);
			return -EINVAL;
		}
		port = (uint16_t)c->port_id;
		a->port_id = port;
		if (c->port_ready)
			return dp_port_take_ready(a, c, port);
		rc = rte_eth_dev_info_get(port, &info);
		if (rc != 0) {
			DP_LOG(ERR, "agent %s: port %u: no device info: %s", a->name, port,
				strerror(-rc));
			return rc;
		}
		if (info.nb_rx_queues > 1 || info.nb_tx_queues > 1) {
			DP_LOG(ERR,
				"agent %s: port %u has %u rx and %u tx queues: the application's "
				"(configure and start it, and set port_ready and the agent's "
				"queues)",
				a->name, port, info.nb_rx_queues, info.nb_tx_queues);
			return -EBUSY;
		}
		return dp_port_setup(a, port);
	}
	if (c->port_ready) {
		DP_LOG(ERR,
			"agent %s: port_ready needs the application's port (port_id), not a vdev",
			a->name);
		return -EINVAL;
	}
	n = strcspn(c->vdev, ",");
	if (n == 0 || n >= sizeof(a->vdev_name)) {
		DP_LOG(ERR, "agent %s: vdev '%s': no device name, or a longer one than %zu bytes",
			a->name, c->vdev, sizeof(a->vdev_name) - 1);
		return -EINVAL;
	}
	memcpy(a->vdev_name, c->vdev, n);
	a->vdev_name[n] = '\0';
	rc = rte_dev_probe(c->vdev);
	if (rc < 0) {
		DP_LOG(ERR, "agent %s: cannot create vdev '%s': %s", a->name, c->vdev,
			strerror(-rc));
		return rc;
	}
	a->port_probed = true;
	if (rte_eth_dev_get_port_by_name(a->vdev_name, &port) != 0) {
		DP_LOG(ERR, "agent %s: vdev '%s' gave no ethdev port", a->name, a->vdev_name);
		return -ENOENT;
	}
	a->port_id = port;
	return dp_port_setup(a, port);
}

void
dp_port_close(struct dprpc_agent *a)
{
	/* Only what dp_port_open() did: an application's port given with
	 * port_ready is neither stopped nor closed. */
	if (a->port_started) {
		(void)rte_eth_dev_stop(a->port_id);
		a->port_started = false;
	}
	if (a->port_probed) {
		(void)rte_eth_dev_close(a->port_id);
		(void)rte_eal_hotplug_remove("vdev", a->vdev_name);
		a->port_probed = false;
	}
}
