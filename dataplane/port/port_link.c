/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The link ports (port_open.c has the overview): a memif port per link of
 * the world map, hot-plugged as workers join, and the join port.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_kvargs.h>

#include "dp_log.h"
#include "dp_memif2211.h"
#include "dp_port.h"
#include "dp_port_int.h"

/* The rings of a link port: 2^8 descriptors each way, not the PMD's 2^10:
 * one peer's frames in flight are bounded by its senders, tx_buf absorbs a
 * full ring, and the 1 MB of shared memory (not 4) is made and freed in
 * every start-up and shutdown (perf/RESULTS.md). */
#define DP_LINK_RSIZE "8"

/* Count port @pt (ports[nb_ports]) in: with release, as other threads
 * read nb_ports (dp_ports_link_up()); the poller is its only writer. */
static void
dp_port_publish(struct dp_ports *a)
{
	__atomic_store_n(&a->nb_ports, a->nb_ports + 1, __ATOMIC_RELEASE);
}

/* The memif port of the world map's link to worker @r, if one reaches it:
 * 1, 0 (none: the default port), or -errno. */
static int
dp_port_link_one(struct dp_ports *a, unsigned int self, unsigned int r, bool have_default)
{
	char path[DP_SOCK_PATH_MAX], spec[RTE_DEV_NAME_MAX_LEN + DP_SOCK_PATH_MAX + 64], err[160];
	struct dp_port *pt;
	bool server;
	int rc;

	rc = dp_world_link_of(a->world, self, r, path, &server, err, sizeof(err));
	if (rc < 0) {
		DP_LOG(ERR, "agent %s: %s", a->name, err);
		return rc;
	}
	if (rc == 0) {
		if (!have_default) {
			DP_LOG(ERR,
				"agent %s: no port reaches worker %s: give a vdev or a "
				"port_id, or a link in the world map",
				a->name, a->world->w[r].name);
			return -EINVAL;
		}
		return 0;
	}
	if (a->nb_ports == DP_MAX_PORTS)
		return -ENOSPC;
	pt = &a->ports[a->nb_ports];
	memset(pt, 0, offsetof(struct dp_port, tx_buf));
	dp_port_set_state(pt, DP_LINK_LIVE); /* down until the timer reads it up */
	pt->kind = DP_PORT_LINK;
	pt->client = !server;
	pt->peer = (uint16_t)r;
	memcpy(pt->sock, path, sizeof(pt->sock));
	/* A server's socket file gets the link's name once its port is
	 * started (dp_port.alias): bound as PATH~, or as PATH if that is too
	 * long for a socket's name. */
	pt->alias = server && strlen(path) + strlen(DP_SOCK_ALIAS) < sizeof(pt->sock);
	snprintf(spec, sizeof(spec),
		"net_memif_dp%u_%u,role=%s,rsize=" DP_LINK_RSIZE ",socket-abstract=no,socket=%s%s",
		a->instance, r, server ? "server" : "client", path, pt->alias ? DP_SOCK_ALIAS : "");
	if (server) {
		char bound[DP_SOCK_PATH_MAX + sizeof(DP_SOCK_ALIAS)];

		snprintf(bound, sizeof(bound), "%s%s", path, pt->alias ? DP_SOCK_ALIAS : "");
		rc = dp_memif_sock_reclaim(a, bound);
		if (rc != 0)
			return rc;
	}
	a->nb_link_ports++;
	a->peer_port[r] = (uint8_t)a->nb_ports;
	rc = dp_port_probe(a, pt, spec);
	/* Counted in after its probe (its id set for dp_ports_link_up()),
	 * failed or not: dp_port_close() undoes what was done to it. */
	dp_port_publish(a);
	return rc != 0 ? rc : 1;
}

/* The memif ports of the world map's links that reach this agent's peers. */
int
dp_ports_links(struct dp_ports *a, unsigned int self, bool have_default)
{
	unsigned int r;
	int rc;

	for (r = 0; r < a->world->n; r++) {
		if (r == self)
			continue;
		rc = dp_port_link_one(a, self, r, have_default);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int
dp_port_link_add(struct dp_ports *a, unsigned int self, unsigned int r)
{
	int rc = dp_port_link_one(a, self, r, a->has_default_port);

	if (rc < 0)
		return rc;
	if (rc == 0) {
		a->peer_port[r] = 0;	      /* the default port */
		a->ports[0].one_peer = false; /* it now reaches two workers */
	}
	return 0;
}

/*
 * Whether the default port is a memif port (closed on the interrupt
 * thread, as link ports are), and whether exactly one other worker is
 * reached through it: that worker's leave is then handled as over a link
 * port (dp_port.one_peer; docs/worlds.md, "Leaving").
 */
void
dp_port_default_peer(struct dp_ports *a, unsigned int self)
{
	struct rte_eth_dev_info info;
	unsigned int r, n = 0, peer = 0;

	if (rte_eth_dev_info_get(a->ports[0].id, &info) != 0 || info.driver_name == NULL ||
		strcmp(info.driver_name, "net_memif") != 0)
		return;
	a->ports[0].memif = true;
	for (r = 0; r < a->world->n; r++)
		if (r != self && a->peer_port[r] == 0) {
			n++;
			peer = r;
		}
	if (n == 1) {
		a->ports[0].one_peer = true;
		a->ports[0].peer = (uint16_t)peer;
	}
}

int
dp_port_join_open(struct dp_ports *a, const char *member)
{
	char spec[RTE_DEV_NAME_MAX_LEN + DP_SOCK_PATH_MAX + 64], path[DP_SOCK_PATH_MAX];
	bool server = member == NULL;
	struct dp_port *pt;
	int n, rc;

	n = snprintf(
		path, sizeof(path), "%s/%s.join", a->world->mesh_dir, server ? a->name : member);
	if (n < 0 || n >= (int)sizeof(path)) {
		DP_LOG(ERR, "agent %s: join socket under %s longer than %d bytes", a->name,
			a->world->mesh_dir, DP_SOCK_PATH_MAX - 1);
		return -ENAMETOOLONG;
	}
	if (a->nb_ports == DP_MAX_PORTS)
		return -ENOSPC;
	if (server) {
		rc = dp_memif_sock_reclaim(a, path);
		if (rc != 0)
			return rc;
	}
	pt = &a->ports[a->nb_ports];
	memset(pt, 0, offsetof(struct dp_port, tx_buf));
	dp_port_set_state(pt, DP_LINK_LIVE); /* down until the timer reads it up */
	pt->kind = DP_PORT_JOIN;
	pt->client = !server;
	pt->peer = DP_RANK_NONE;
	memcpy(pt->sock, path, sizeof(pt->sock));
	snprintf(spec, sizeof(spec),
		"net_memif_dp%u_j%s,role=%s,rsize=" DP_LINK_RSIZE ",socket-abstract=no,socket=%s",
		a->instance, server ? "s" : "c", server ? "server" : "client", path);
	a->nb_link_ports++;
	a->join_port = (int)a->nb_ports;
	rc = dp_port_probe(a, pt, spec);
	dp_port_publish(a); /* after the probe, as dp_port_link_one()'s */
	return rc;
}

void
dp_port_join_reset(struct dp_ports *a)
{
	struct dp_port *pt = &a->ports[a->join_port];

	/* The server hangs up on the joiner, here on the poller (the PMD's
	 * teardown in this thread, not under a poll of the port), and
	 * listens again for the next one. */
	if (pt->started)
		(void)rte_eth_dev_stop(pt->id);
	pt->started = false;
	dp_port_set_up(pt, false);
	if (rte_eth_dev_start(pt->id) == 0) {
		pt->started = true;
		pt->start_tsc = rte_rdtsc();
	} else {
		dp_port_set_state(pt, DP_LINK_PENDING);
		pt->retry_tsc = rte_rdtsc();
	}
}

bool
dp_own_link(const struct dp_port *pt, unsigned int p)
{
	return (pt->kind != DP_PORT_DEFAULT || pt->one_peer) && pt->peer == p;
}

void
dp_port_go_quiet(struct dp_port *pt)
{
	/* Quiet already (ANSWERED, CLOSED, RETIRED): stays so. */
	if (!dp_port_quiet(pt))
		dp_port_set_state(pt, DP_LINK_QUIET);
	pt->quiet_tsc = 0;
}
