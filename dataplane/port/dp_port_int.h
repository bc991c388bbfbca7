/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the port's files share (port_open.c, port_link.c, port_timer.c,
 * port_close.c, memif2211/):
 * the steps of opening a port, which the link ports and the timer take
 * again.  Never included outside them.
 */
#ifndef DP_PORT_INT_H
#define DP_PORT_INT_H

#include <stdbool.h>
#include <stdint.h>

struct dp_ports;
struct dp_port;

/* port_open.c: when a pending default memif client (dp_port.restart)
 * tries to start again, from @now. */
uint64_t dp_default_retry_tsc(const struct dp_ports *a, const struct dp_port *pt, uint64_t now);
/* port_open.c: a started server link port's socket named pt->sock, which
 * its client waits for (dp_port.alias): 0 or -errno (logged). */
int dp_port_name_sock(struct dp_ports *a, struct dp_port *pt);
/* port_open.c: configure @port as @pt (one rx and one tx queue) and start
 * it; a memif client that cannot start yet is left pending. */
int dp_port_setup(struct dp_ports *a, struct dp_port *pt, uint16_t port);
/* port_open.c: probe the vdev @spec as @pt, then set it up. */
int dp_port_probe(struct dp_ports *a, struct dp_port *pt, const char *spec);
/* port_link.c: the memif ports of the world map's links that reach this
 * agent's peers (dp_port_open()). */
int dp_ports_links(struct dp_ports *a, unsigned int self, bool have_default);
/* port_link.c: whether the default port is a memif port, and whether it
 * reaches one worker only (dp_port.one_peer). */
void dp_port_default_peer(struct dp_ports *a, unsigned int self);
/* port_close.c: stop what dp_port_open() started and close what it probed,
 * of the ports picked (close_now); on the interrupt thread with memif
 * ports (memif_unhook.c). */
void dp_ports_stop_close(struct dp_ports *a);

#endif /* DP_PORT_INT_H */
