/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent's port: a vdev probed from conf.vdev or a port of the
 * application's, configured (one rx and one tx queue) and started unless
 * conf.port_ready says the application did; stopped, closed and removed
 * with the agent as far as we opened it.
 */
#include <errno.h>
#include <string.h>

#include <rte_dev.h>
#include <rte_ethdev.h>

#include "dp_agent.h"
#include "dp_port.h"

int
dp_port_open(struct dprpc_agent *a, const struct dprpc_agent_conf *c)
{
	struct rte_eth_conf pconf;
	struct rte_eth_dev_info info;
	uint16_t port;
	size_t n;
	int rc;

	if (c->port_id >= 0) {
		if (!rte_eth_dev_is_valid_port((uint16_t)c->port_id))
			return -ENOENT;
		port = (uint16_t)c->port_id;
	} else {
		n = strcspn(c->vdev, ",");
		if (n == 0 || n >= sizeof(a->vdev_name))
			return -EINVAL;
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
			DP_LOG(ERR, "agent %s: vdev '%s' gave no ethdev port", a->name,
				a->vdev_name);
			return -ENOENT;
		}
	}
	a->port_id = port;
	if (c->port_ready) {
		a->rxq = c->rx_queue;
		a->txq = c->tx_queue;
		return 0;
	}
	a->rxq = 0;
	a->txq = 0;
	rc = rte_eth_dev_info_get(port, &info);
	if (rc != 0)
		return rc;
	memset(&pconf, 0, sizeof(pconf));
	rc = rte_eth_dev_configure(port, 1, 1, &pconf);
	if (rc != 0)
		return rc;
	rc = rte_eth_rx_queue_setup(port, 0, 1024, rte_eth_dev_socket_id(port), NULL, a->mp);
	if (rc != 0)
		return rc;
	rc = rte_eth_tx_queue_setup(port, 0, 1024, rte_eth_dev_socket_id(port), NULL);
	if (rc != 0)
		return rc;
	rc = rte_eth_dev_start(port);
	if (rc != 0)
		return rc;
	a->port_started = true;
	/* Best effort: virtual devices mostly do not filter by MAC anyway. */
	(void)rte_eth_promiscuous_enable(port);
	return 0;
}

void
dp_port_close(struct dprpc_agent *a)
{
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
