/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Opening the agent's ports: the default one, treated as
 * dprpc_agent_conf.port.id documents, and the world map's memif links
 * (port_link.c).  A memif client that cannot start yet is left pending for
 * the timer (port_timer.c); docs/worlds.md, "Which port reaches whom".
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_kvargs.h>

#include "dp_log.h"
#include "dp_port.h"
#include "dp_port_int.h"

/*
 * Whether the application's port runs queues @rxq and @txq: 0, -EINVAL, or
 * the errno of a failing ethdev call.  DPDK 22.11 has no "is the port
 * started" query: rte_eth_dev_{rx,tx}_queue_start() answers -EINVAL on a
 * stopped port (or a queue not set up, or a hairpin one), -ENOTSUP on a
 * started port whose PMD has no per-queue start, and starts a queue set up
 * with deferred start, which the agent needs anyway.
 */
static int
dp_port_queues_run(struct dp_ports *a, uint16_t port, uint16_t rxq, uint16_t txq)
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
dp_port_take_ready(
	struct dp_ports *a, struct dp_port *pt, const struct dprpc_agent_conf *c, uint16_t port)
{
	struct rte_eth_dev_info info;
	struct rte_eth_conf pconf;
	int rc = rte_eth_dev_info_get(port, &info);

	if (rc != 0) {
		DP_LOG(ERR, "agent %s: port %u: no device info: %s", a->name, port, strerror(-rc));
		return rc;
	}
	if (c->port.rx_queue >= info.nb_rx_queues || c->port.tx_queue >= info.nb_tx_queues) {
		DP_LOG(ERR,
			"agent %s: port %u has %u rx and %u tx queues: no rx queue %u or tx "
			"queue %u",
			a->name, port, info.nb_rx_queues, info.nb_tx_queues, c->port.rx_queue,
			c->port.tx_queue);
		return -EINVAL;
	}
	rc = dp_port_queues_run(a, port, c->port.rx_queue, c->port.tx_queue);
	if (rc != 0)
		return rc;
	/* The application's configuration says whether the port fills
	 * UDP checksums. */
	pt->udp_csum_offload = rte_eth_dev_conf_get(port, &pconf) == 0 &&
			       (pconf.txmode.offloads & RTE_ETH_TX_OFFLOAD_UDP_CKSUM) != 0;
	pt->rxq = c->port.rx_queue;
	pt->txq = c->port.tx_queue;
	return 0;
}

/* When a pending default memif client (dp_port.restart) tries to start
 * again, from @now: DP_LINK_RETRY_MS, as a link's client, when its socket
 * file can be watched (dp_port_waits()); DP_LINK_RESTART_MS in the
 * abstract namespace, which has none. */
uint64_t
dp_default_retry_tsc(const struct dp_ports *a, const struct dp_port *pt, uint64_t now)
{
	return now + a->tsc_hz / 1000 * (pt->client ? DP_LINK_RETRY_MS : DP_LINK_RESTART_MS);
}

/* A started server link port bound at pt->sock and DP_SOCK_ALIAS
 * (dp_port.alias): pt->sock made a second name of its socket file, which
 * its client waits for.  A file left there (a server that died) is
 * replaced. */
int
dp_port_name_sock(struct dp_ports *a, struct dp_port *pt)
{
	/* No longer than a socket's name (dp_port.alias). */
	char bound[DP_SOCK_PATH_MAX + sizeof(DP_SOCK_ALIAS)];
	int rc;

	snprintf(bound, sizeof(bound), "%s" DP_SOCK_ALIAS, pt->sock);
	if (link(bound, pt->sock) == 0 ||
		(errno == EEXIST && unlink(pt->sock) == 0 && link(bound, pt->sock) == 0)) {
		pt->named = true;
		return 0;
	}
	rc = -errno;
	DP_LOG(ERR, "agent %s: memif socket %s: cannot name it %s: %s", a->name, bound, pt->sock,
		strerror(-rc));
	return rc;
}

/* A port of the agent's: one rx and one tx queue (0), started.  A memif
 * client whose start fails is one whose server does not listen yet (the
 * PMD's connect() failed): a link port is left pending, the default port
 * not started (dp_port.restart), and the timer starts it later
 * (dp_ports_timer()). */
int
dp_port_setup(struct dp_ports *a, struct dp_port *pt, uint16_t port)
{
	struct dp_memif_sock ms;
	struct rte_eth_dev_info info;
	struct rte_eth_conf pconf;
	int rc;

	pt->rxq = 0;
	pt->txq = 0;
	memset(&pconf, 0, sizeof(pconf));
	/* UDP checksums by the port where it can (the default port's
	 * frames, dp_stage_port()); checked on receive where it can. */
	if (pt->kind == DP_PORT_DEFAULT && rte_eth_dev_info_get(port, &info) == 0) {
		pt->udp_csum_offload = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM) != 0;
		if (pt->udp_csum_offload)
			pconf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
		if (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_UDP_CKSUM)
			pconf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
	}
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
	if (rc == 0) {
		rc = rte_eth_dev_start(port);
		if (rc != 0 && pt->kind != DP_PORT_DEFAULT) {
			dp_port_set_state(pt, DP_LINK_PENDING);
			return 0;
		}
		if (rc != 0 && pt->probed && dp_memif_role(port, &ms) == 0) {
			DP_LOG(NOTICE,
				"agent %s: memif port %u cannot connect to %s yet: trying again "
				"once a server listens",
				a->name, port, ms.path);
			/* Pending as a link's client is (dp_port_waits()): not
			 * polled, and started again once its socket file exists;
			 * one in the abstract namespace has none to look at. */
			dp_port_set_state(pt, DP_LINK_PENDING);
			pt->client = !ms.abstract;
			if (pt->client)
				snprintf(pt->sock, sizeof(pt->sock), "%s", ms.path);
			pt->start_tsc = rte_rdtsc();
			pt->retry_tsc = dp_default_retry_tsc(a, pt, pt->start_tsc);
			return 0;
		}
	}
	if (rc != 0) {
		DP_LOG(ERR, "agent %s: cannot set port %u up: %s", a->name, port, strerror(-rc));
		return rc;
	}
	pt->started = true;
	pt->start_tsc = rte_rdtsc();
	/* Best effort: virtual devices mostly do not filter by MAC anyway. */
	(void)rte_eth_promiscuous_enable(port);
	return pt->alias ? dp_port_name_sock(a, pt) : 0;
}

/* Probe the vdev @spec (its name before the first comma) as @pt. */
int
dp_port_probe(struct dp_ports *a, struct dp_port *pt, const char *spec)
{
	uint16_t port;
	size_t n;
	int rc;

	n = strcspn(spec, ",");
	if (n == 0 || n >= sizeof(pt->vdev_name)) {
		DP_LOG(ERR, "agent %s: vdev '%s': no device name, or a longer one than %zu bytes",
			a->name, spec, sizeof(pt->vdev_name) - 1);
		return -EINVAL;
	}
	memcpy(pt->vdev_name, spec, n);
	pt->vdev_name[n] = '\0';
	rc = rte_dev_probe(spec);
	if (rc < 0) {
		DP_LOG(ERR, "agent %s: cannot create vdev '%s': %s", a->name, spec, strerror(-rc));
		return rc;
	}
	pt->probed = true;
	if (rte_eth_dev_get_port_by_name(pt->vdev_name, &port) != 0) {
		DP_LOG(ERR, "agent %s: vdev '%s' gave no ethdev port", a->name, pt->vdev_name);
		return -ENOENT;
	}
	pt->id = port;
	return dp_port_setup(a, pt, port);
}

/* DPDK 22.11's memif PMD, for a vdev that does not say: a client, on the
 * socket /run/memif.sock, in the abstract namespace. */
#define DP_MEMIF_DEFAULT_SOCK "/run/memif.sock"

int
dp_memif_role(uint16_t id, struct dp_memif_sock *s)
{
	const char *role, *sock, *abstract;
	const struct rte_devargs *da;
	struct rte_eth_dev_info info;
	struct rte_kvargs *kv;
	int server;

	if (rte_eth_dev_info_get(id, &info) != 0 || info.driver_name == NULL ||
		strcmp(info.driver_name, "net_memif") != 0 || info.device == NULL)
		return -1;
	da = rte_dev_devargs(info.device);
	kv = rte_kvargs_parse(da != NULL && da->args != NULL ? da->args : "", NULL);
	if (kv == NULL)
		return -1;
	role = rte_kvargs_get(kv, "role");
	sock = rte_kvargs_get(kv, "socket");
	abstract = rte_kvargs_get(kv, "socket-abstract");
	server = role != NULL && strcmp(role, "server") == 0;
	snprintf(s->path, sizeof(s->path), "%s", sock != NULL ? sock : DP_MEMIF_DEFAULT_SOCK);
	s->abstract = abstract == NULL || strcmp(abstract, "no") != 0;
	rte_kvargs_free(kv);
	return server;
}

/* The default port: conf.port.id or conf.port.vdev. */
static int
dp_port_default(struct dp_ports *a, struct dp_port *pt, const struct dprpc_agent_conf *c)
{
	struct rte_eth_dev_info info;
	struct dp_memif_sock ms;
	uint16_t port;
	int rc;

	if (c->port.id >= 0) {
		if (c->port.id > UINT16_MAX || !rte_eth_dev_is_valid_port((uint16_t)c->port.id)) {
			DP_LOG(ERR, "agent %s: no port %d", a->name, c->port.id);
			return -EINVAL;
		}
		port = (uint16_t)c->port.id;
		pt->id = port;
		if (c->port.ready)
			return dp_port_take_ready(a, pt, c, port);
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
		return dp_port_setup(a, pt, port);
	}
	if (c->port.ready) {
		DP_LOG(ERR,
			"agent %s: port_ready needs the application's port (port_id), not a vdev",
			a->name);
		return -EINVAL;
	}
	rc = dp_port_probe(a, pt, c->port.vdev);
	/* A memif client whose INIT reaches a server port not configured
	 * yet is turned away by the PMD for good: connected again. */
	pt->restart = rc == 0 && dp_memif_role(pt->id, &ms) == 0;
	return rc;
}

/*
 * The mesh's directory, made if missing: mode 0700, not its parents (a
 * missing parent is more likely a typo).  0, or -errno with the reason
 * logged.  Never removed here: it is the application's (docs/worlds.md,
 * "Which port reaches whom").
 */
static int
dp_mesh_dir_make(const struct dp_ports *a)
{
	const char *dir = a->world->mesh_dir;
	struct stat sb;
	int rc;

	if (mkdir(dir, 0700) == 0) {
		DP_LOG(DEBUG, "agent %s: made the mesh directory %s", a->name, dir);
		return 0;
	}
	rc = errno;
	if (rc == EEXIST) {
		if (stat(dir, &sb) != 0) {
			rc = errno;
		} else if (!S_ISDIR(sb.st_mode)) {
			DP_LOG(ERR, "agent %s: mesh memif:%s is not a directory", a->name, dir);
			return -ENOTDIR;
		} else if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) != 0) {
			rc = errno;
			DP_LOG(ERR,
				"agent %s: mesh memif:%s: no permission to make memif sockets "
				"in it (%s)",
				a->name, dir, strerror(rc));
			return -rc;
		} else {
			return 0;
		}
	}
	DP_LOG(ERR, "agent %s: cannot make the mesh directory %s: %s%s", a->name, dir, strerror(rc),
		rc == ENOENT ? " (its parent is not made)" : "");
	return -rc;
}

int
dp_port_open(struct dp_ports *a, const struct dprpc_agent_conf *c, unsigned int self)
{
	bool have_default = c->port.id >= 0 || c->port.vdev != NULL;
	unsigned int i;
	int rc;

	for (i = 0; i < DP_MAX_PORTS; i++) {
		dp_port_set_state(&a->ports[i], DP_LINK_LIVE);
		dp_port_set_up(&a->ports[i], true);
	}
	if (!c->port.ready && (c->port.rx_queue != 0 || c->port.tx_queue != 0)) {
		DP_LOG(ERR,
			"agent %s: rx_queue/tx_queue are the application's queues: they need "
			"port_ready",
			a->name);
		return -EINVAL;
	}
	/* Before any port: a directory that cannot be used leaves nothing
	 * to undo. */
	if (a->world->mesh_dir[0] != '\0') {
		rc = dp_mesh_dir_make(a);
		if (rc != 0)
			return rc;
	}
	if (have_default) {
		a->nb_ports = 1;
		rc = dp_port_default(a, &a->ports[0], c);
		if (rc != 0)
			return rc;
		a->has_default_port = true; /* joiners are reached through it */
	}
	a->join_port = -1;
	rc = dp_ports_links(a, self, have_default);
	if (rc != 0)
		return rc;
	if (have_default)
		dp_port_default_peer(a, self);
	/* A member of a meshed world that may grow listens for joiners on
	 * DIR/NAME.join (join.c). */
	if (a->world->mesh_dir[0] != '\0' && !a->world->joiner && a->world_cap > a->world->n) {
		rc = dp_port_join_open(a, NULL);
		if (rc != 0)
			return rc;
	}
	if (a->nb_ports == 0 && !(a->world->joiner && a->world->mesh_dir[0] != '\0')) {
		DP_LOG(ERR, "agent %s: give a port_id or a vdev", a->name);
		return -EINVAL;
	}
	/* A joiner over memif has no port until it joins (dprpc_world_join()
	 * opens its join port as ports[0]): nothing to poll meanwhile. */
	if (a->nb_ports == 0)
		dp_port_set_state(&a->ports[0], DP_LINK_PENDING);
	/* Link ports count as down until the timer has seen them up. */
	for (i = 0; i < a->nb_ports; i++)
		dp_port_set_up(&a->ports[i], a->ports[i].kind == DP_PORT_DEFAULT);
	return 0;
}
