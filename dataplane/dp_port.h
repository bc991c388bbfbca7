/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent's port (port_open.c, port_link.c, port_timer.c): a vdev probed from conf.vdev, or a port of the
 * application's, handed over (configured and started by the agent) or
 * ready (conf.port_ready: configured and started by the application, only
 * its queues conf.rx_queue and conf.tx_queue used); stopped with the agent
 * if the agent started it, and closed if it probed it (the contract: struct
 * dprpc_agent_conf's port_id); and a memif port per link of the world map
 * (port_open.c's top).  The thread that creates or destroys the agent, but
 * dp_ports_timer() (the poller) and dp_ports_link_up() (any thread).
 */
#ifndef DP_PORT_H
#define DP_PORT_H

#include <stdbool.h>
#include <stdint.h>

struct dprpc_agent;
struct dprpc_agent_conf;
struct dp_memif_sock;
struct dp_port;

/* How often the poller looks at its link ports (link state, and starting
 * a pending memif client again). */
#define DP_LINK_CHECK_MS 1
/* A quiet link port (struct dp_port) is used again this long after its
 * link was seen down: the PMD has finished tearing it down. */
#define DP_LINK_QUIET_MS 50
/* How often a pending memif client tries to connect again (the PMD logs
 * each failure). */
#define DP_LINK_RETRY_MS 50
/* How long a memif client's link may stay down after it started before it
 * connects again. */
#define DP_LINK_RESTART_MS 500
/* A link closed by its worker is quiet at most this long if the timer
 * never sees it go down (its worker's successor already reconnected). */
#define DP_LINK_CLOSED_QUIET_MAX_MS 1000

/* Check @c's port fields and open @a's port as they say: 0, or a negative
 * errno, logged (dp_port_close() undoes what was done). */
int dp_port_open(struct dprpc_agent *a, const struct dprpc_agent_conf *c);
/* Stop the port if we started it, and close it if we probed it
 * (port_close.c): with link ports, on the EAL interrupt thread, waited
 * for, working around DPDK 22.11's memif PMD (memif_unhook.c's top). */
void dp_port_close(struct dprpc_agent *a);
/* As dp_port_close(), for the ports whose close_now is set only (memif
 * links dp_links_close() is done with while it waits for others). */
void dp_ports_close_picked(struct dprpc_agent *a);
/* The poller, on its timer: start pending link ports, read their link
 * state, at most every DP_LINK_CHECK_MS.  Whether a link port's link came
 * up. */
bool dp_ports_timer(struct dprpc_agent *a, uint64_t now);
/* Whether every port is started and its link up. */
bool dp_ports_link_up(struct dprpc_agent *a);

/* Hot-plugged on the poller (join.c): the memif link of the world map's
 * mesh to worker @r, who just joined (or, on a joiner, to each member),
 * or the default port for it (peer_port[r]); 0, or -errno (logged). */
int dp_port_link_add(struct dprpc_agent *a, unsigned int r);
/* The join port (agent->join_port): a memif server on DIR/NAME.join for
 * joiners (@member NULL, a member of a meshed world), or a joiner's client
 * to DIR/MEMBER.join.  The poller, or creation.  0 or -errno. */
int dp_port_join_open(struct dprpc_agent *a, const char *member);
/* A member hangs up on the joiner it answered and listens again. */
void dp_port_join_reset(struct dprpc_agent *a);
/* memif_sock.c: before a memif server binds @path, remove a socket file
 * there that nobody listens on (a killed process's); 0, -EADDRINUSE
 * (logged) if a live process listens on it, or another -errno. */
int dp_memif_sock_reclaim(struct dprpc_agent *a, const char *path);

/* Whether @pt is worker @p's own memif link: a link port of the world
 * map, or the default port when it reaches @p alone (dp_port.one_peer). */
bool dp_own_link(const struct dp_port *pt, unsigned int p);
/* Neither poll nor send on @pt until its link has been down a while
 * (struct dp_port.quiet; dp_ports_timer() ends it).  The poller. */
void dp_port_go_quiet(struct dp_port *pt);

/* What ethdev port @id is, read from its device arguments with DPDK
 * 22.11's memif defaults: -1 not a memif port (or unreadable), 0 a memif
 * client, 1 a memif server; for 0 and 1 its socket into @s (the server
 * listens on it, the client connects to it).  Any thread. */
int dp_memif_role(uint16_t id, struct dp_memif_sock *s);

#endif /* DP_PORT_H */
