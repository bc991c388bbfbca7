/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ports on the poller's timer (port_open.c has the overview): pending
 * memif clients started again, links read, quiet links used again.
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
#include "dp_port.h"
#include "dp_port_int.h"

/*
 * Whether pending client port @pt waits: until its server's socket file
 * exists (looked at every link check), then at most every
 * DP_LINK_RETRY_MS.  A closing server removes the file first, so no client
 * connects to a server being torn down.
 */
static bool
dp_port_waits(struct dp_port *pt, uint64_t now)
{
	struct stat sb;

	if (pt->state != DP_LINK_PENDING)
		return false;
	if (pt->client && stat(pt->sock, &sb) != 0) {
		pt->retry_tsc = 0;
		return true;
	}
	return now < pt->retry_tsc;
}

/* A quiet port is used again DP_LINK_QUIET_MS after its link was first
 * seen down (@up false): the PMD is done with the disconnect by then. */
static void
dp_port_quiet_timer(struct dp_ports *a, struct dp_port *pt, bool up, uint64_t now)
{
	if (!up && pt->quiet_tsc == 0)
		pt->quiet_tsc = now;
	if (pt->quiet_tsc != 0 && now - pt->quiet_tsc >= a->tsc_hz / 1000 * DP_LINK_QUIET_MS) {
		dp_port_set_state(pt, DP_LINK_LIVE);
	} else if (pt->state == DP_LINK_CLOSED && pt->quiet_tsc == 0 &&
		   now >= pt->answered_tsc + a->tsc_hz / 1000 * DP_LINK_CLOSED_QUIET_MAX_MS) {
		/* Closed by its worker (link_close.c), and never seen down
		 * since: the link up now is its successor's. */
		DP_LOG(NOTICE,
			"agent %s: port %u closed by its worker %d ms ago is up: polled again",
			a->name, pt->id, DP_LINK_CLOSED_QUIET_MAX_MS);
		dp_port_set_state(pt, DP_LINK_LIVE);
	}
}

/* The default port, a memif client the agent probed (dp_port.restart):
 * connected again as a link's client is until its link first comes up;
 * after that, a server gone is its worker leaving or dead (docs/worlds.md,
 * "Leaving"). */
static void
dp_port_restart_timer(struct dp_ports *a, struct dp_port *pt, uint64_t now)
{
	uint64_t ms = a->tsc_hz / 1000;
	struct rte_eth_link link;

	if (pt->started && rte_eth_link_get_nowait(pt->id, &link) == 0 &&
		link.link_status == RTE_ETH_LINK_UP) {
		pt->restart = false;
		return;
	}
	if (dp_port_quiet(pt))
		return;
	if (pt->state == DP_LINK_PENDING) {
		if (dp_port_waits(pt, now))
			return;
		pt->retry_tsc = dp_default_retry_tsc(a, pt, now);
	} else if (now - pt->start_tsc < ms * DP_LINK_RESTART_MS) {
		return;
	} else {
		DP_LOG(NOTICE,
			"agent %s: memif port %u not up %d ms after connecting: connecting again",
			a->name, pt->id, DP_LINK_RESTART_MS);
		(void)rte_eth_dev_stop(pt->id);
	}
	pt->started = rte_eth_dev_start(pt->id) == 0;
	dp_port_set_state(pt, pt->started ? DP_LINK_LIVE : DP_LINK_PENDING);
	pt->start_tsc = now;
	if (pt->started)
		(void)rte_eth_promiscuous_enable(pt->id);
}

/* The default port when it reaches one worker (dp_port.one_peer): lost
 * and quiet as a link port's, nothing else. */
static void
dp_port_one_peer_timer(struct dp_ports *a, struct dp_port *pt, uint64_t now)
{
	struct rte_eth_link link;
	bool up =
		rte_eth_link_get_nowait(pt->id, &link) == 0 && link.link_status == RTE_ETH_LINK_UP;

	if (up)
		pt->lost = false;
	else if (pt->carrier && !dp_port_quiet(pt))
		pt->lost = true;
	pt->carrier = up;
	if (dp_port_quiet(pt))
		dp_port_quiet_timer(a, pt, up, now);
}

bool
dp_ports_timer(struct dp_ports *a, uint64_t now)
{
	struct rte_eth_link link;
	unsigned int i;
	bool up, was_up, came_up = false;

	if (now < a->link_check_tsc)
		return false;
	a->link_check_tsc = now + a->tsc_hz / 1000 * DP_LINK_CHECK_MS;
	for (i = 0; i < a->nb_ports; i++) {
		struct dp_port *pt = &a->ports[i];

		if (pt->restart)
			dp_port_restart_timer(a, pt, now);
		if (pt->one_peer) {
			dp_port_one_peer_timer(a, pt, now);
			continue;
		}
		if (pt->kind == DP_PORT_DEFAULT || pt->state == DP_LINK_RETIRED)
			continue;
		if (dp_port_waits(pt, now))
			continue;
		if (pt->state == DP_LINK_PENDING) {
			pt->retry_tsc = now + a->tsc_hz / 1000 * DP_LINK_RETRY_MS;
			if (rte_eth_dev_start(pt->id) != 0)
				continue;
			dp_port_set_state(pt, DP_LINK_LIVE);
			pt->started = true;
			pt->start_tsc = now;
			pt->retry_tsc = now; /* a server's name: at once, below */
			(void)rte_eth_promiscuous_enable(pt->id);
		}
		/* A server started here, or whose naming failed: its client
		 * waits for the name, tried again every DP_LINK_RETRY_MS. */
		if (pt->alias && pt->started && !pt->named && now >= pt->retry_tsc) {
			pt->retry_tsc = now + a->tsc_hz / 1000 * DP_LINK_RETRY_MS;
			(void)dp_port_name_sock(a, pt);
		}
		was_up = dp_port_up(pt);
		up = rte_eth_link_get_nowait(pt->id, &link) == 0 &&
		     link.link_status == RTE_ETH_LINK_UP;
		dp_port_set_up(pt, up);
		/* Up: the caller's rendezvous pings its worker at the next
		 * tick (dp_run_timers()). */
		if (up && !was_up)
			came_up = true;
		if (up)
			pt->lost = false;
		else if (was_up && !dp_port_quiet(pt))
			pt->lost = true;
		if (dp_port_quiet(pt)) {
			/* Its worker left: used again once the PMD is done
			 * with the disconnect (struct dp_port). */
			dp_port_quiet_timer(a, pt, up, now);
			dp_port_set_up(pt, false);
			continue;
		}
		/* A client connected but whose link never came up (its server
		 * was not ready for the handshake: the PMD does not try again
		 * by itself), or went down (its server went away): connect
		 * again, as a client that could not start. */
		if (!up && pt->client && pt->started &&
			now - pt->start_tsc >= a->tsc_hz / 1000 * DP_LINK_RESTART_MS) {
			DP_LOG(NOTICE,
				"agent %s: memif link to %s not up %d ms after connecting: "
				"connecting again",
				a->name,
				pt->kind == DP_PORT_JOIN ? "a member's join socket"
							 : a->world->w[pt->peer].name,
				DP_LINK_RESTART_MS);
			(void)rte_eth_dev_stop(pt->id);
			pt->started = false;
			dp_port_set_state(pt, DP_LINK_PENDING);
			pt->retry_tsc = now;
		}
	}
	return came_up;
}

bool
dp_ports_link_up(struct dp_ports *a)
{
	struct rte_eth_link link;
	unsigned int i;

	/* A pending port (not started) reads as down.  Acquire: pairs with
	 * dp_port_publish(); a join port is up only while a joiner uses it. */
	unsigned int n = __atomic_load_n(&a->nb_ports, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++)
		if (a->ports[i].kind == DP_PORT_JOIN)
			continue;
		else if (rte_eth_link_get_nowait(a->ports[i].id, &link) != 0 ||
			 link.link_status != RTE_ETH_LINK_UP)
			return false;
	return true;
}
