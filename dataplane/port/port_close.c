/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Closing the agent's ports (dp_port_close()): what dp_port_open() started
 * is stopped, what it probed closed and removed.  With any memif port,
 * on the EAL interrupt thread, working around two defects of DPDK 22.11's
 * memif PMD (memif_unhook.c has them).
 *
 * The thread that destroys the agent (dp_agent_free()); on the interrupt
 * thread itself (an agent destroyed from an alarm) everything runs in
 * place.
 */
#include <unistd.h>

#include <rte_dev.h>
#include <rte_ethdev.h>

#include "dp_log.h"
#include "dp_memif2211.h"
#include "dp_port.h"
#include "dp_port_int.h"

/* Interrupt thread (defect 1): stop what dp_port_open() started, close what
 * it probed.  An application's port given with port_ready is neither
 * stopped nor closed. */
void
dp_ports_stop_close(struct dp_ports *a)
{
	unsigned int i;

	for (i = 0; i < a->nb_ports; i++) {
		struct dp_port *pt = &a->ports[i];

		if (!pt->close_now)
			continue;
		/* The link's name of a server's socket (dp_port.named), first:
		 * a client finds no file, as when the PMD unlinks its own. */
		if (pt->named) {
			(void)unlink(pt->sock);
			pt->named = false;
		}
		if (pt->started) {
			(void)rte_eth_dev_stop(pt->id);
			pt->started = false;
		}
		if (pt->probed)
			(void)rte_eth_dev_close(pt->id);
	}
}

/* The ports picked (close_now) stopped and closed, on the interrupt
 * thread if any of the agent's ports is a memif port, then their vdevs
 * removed; each left closed and unpicked. */
void
dp_ports_close_picked(struct dp_ports *a)
{
	unsigned int i;

	/* Any memif port: the links, or a default port that is one (even the
	 * application's, which is only stopped: defect 1 all the same). */
	if (a->nb_link_ports > 0 || a->ports[0].memif) {
		dp_on_intr(a);
	} else {
		dp_ports_stop_close(a);
	}
	/* No PMD callback refers to the vdev device itself: removed here. */
	for (i = 0; i < a->nb_ports; i++) {
		struct dp_port *pt = &a->ports[i];

		if (pt->close_now && pt->probed) {
			(void)rte_eal_hotplug_remove("vdev", pt->vdev_name);
			pt->probed = false;
		}
		pt->close_now = false;
	}
}

void
dp_port_close(struct dp_ports *a)
{
	unsigned int i;

	for (i = 0; i < a->nb_ports; i++)
		a->ports[i].close_now = true;
	dp_ports_close_picked(a);
}
