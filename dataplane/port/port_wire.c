/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the default port is on the wire: its MAC as it is now (a port bound
 * to a kernel interface, net_af_packet: rte_eth_dev_info's if_index, has
 * the interface's, which the kernel may change under it: ip link set ...
 * address; any other, what the ethdev holds), and whether it has a wire at
 * all.
 */
#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_ethdev.h>

#include "dp_port.h"

int
dp_port_mac_read(const struct dp_ports *a, struct rte_ether_addr *mac)
{
	struct rte_eth_dev_info info;
	char name[IF_NAMESIZE];
	struct ifreq ifr;
	int fd, rc;

	if (!a->has_default_port)
		return -ENODEV;
	if (rte_eth_dev_info_get(a->ports[0].id, &info) != 0)
		return -ENODEV;
	if (info.if_index == 0 || if_indextoname(info.if_index, name) == NULL)
		return rte_eth_macaddr_get(a->ports[0].id, mac);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, name, sizeof(name));
	rc = ioctl(fd, SIOCGIFHWADDR, &ifr) == 0 ? 0 : -errno;
	close(fd);
	if (rc == 0)
		memcpy(mac->addr_bytes, ifr.ifr_hwaddr.sa_data, RTE_ETHER_ADDR_LEN);
	return rc;
}

bool
dp_port_has_wire(const struct dp_ports *a)
{
	struct rte_eth_dev_info info;

	if (!a->has_default_port || a->ports[0].memif)
		return false;
	return rte_eth_dev_info_get(a->ports[0].id, &info) != 0 || info.driver_name == NULL ||
	       (strcmp(info.driver_name, "net_memif") != 0 &&
		       strcmp(info.driver_name, "net_ring") != 0);
}
