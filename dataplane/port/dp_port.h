/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent's ports: the default one (conf.port.vdev or conf.port.id, as struct
 * dprpc_agent_conf says) and a memif port per link of the world map
 * (docs/worlds.md, "Which port reaches whom").  The thread that creates or
 * destroys the agent, but dp_ports_timer() (the poller) and
 * dp_ports_link_up() (any thread).
 */
#ifndef DP_PORT_H
#define DP_PORT_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_dev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <dprpc/dprpc_agent.h>

#include "dp_wire.h"

struct dprpc_agent_conf;

#define DP_TX_BUF 512 /* frames staged for tx_burst; >= DP_RX_BURST * 2 */
/* Most ports of one agent: its default port and a memif link to every
 * other worker. */
#define DP_MAX_PORTS (DPRPC_MAX_WORKERS + 2) /* and the join ports (join.c) */

/* A memif port's socket (dp_memif_role()): a path, or a name in the
 * abstract namespace. */
struct dp_memif_sock {
	char path[DP_SOCK_PATH_MAX];
	bool abstract;
};

/* What a memif link's server appends to its socket's path to bind it,
 * the path itself being named once its port is started (port_open.c). */
#define DP_SOCK_ALIAS "~"

/*
 * Where a port's link is in its life (struct dp_port.state), changed by
 * dp_port_set_state() only:
 *   LIVE      polled and sent on: started, or the application's port.
 *   PENDING   not started, not polled: a memif client whose server does
 *             not listen yet, started again by the timer (dp_ports_timer(),
 *             retry_tsc); a joiner's default port until it joins.
 *   CLOSING   dprpc_agent_destroy() told the worker at the other end that
 *             it closes this link, and reads it for the answer
 *             (link_close.c): polled by the destroy alone.
 *   QUIET     neither polled nor sent on until its link has been down for
 *             DP_LINK_QUIET_MS (quiet_tsc: when it was first seen down, 0
 *             before): its worker gave the last answer to ours (LEAVE_ACK,
 *             CLOSE_ACK), or dprpc_agent_destroy() is closing it; the
 *             memif PMD may tear the rings down under a poll
 *             (docs/worlds.md, "Leaving").
 *   ANSWERED  quiet, and we answered the other end's LEAVE (answered_tsc),
 *             which it may still be reading: dprpc_agent_destroy() closes
 *             the link once that end closed it, or DP_LINK_ANSWERED_WAIT_MS
 *             after the answer (link_close.c).
 *   CLOSED    as ANSWERED, the last word a CLOSE (the worker at the other
 *             end told us it closes: link_close.c): quiet no longer than
 *             DP_LINK_CLOSED_QUIET_MAX_MS after the answer should the timer
 *             miss its link going down, and gone for a leave
 *             (dp_link_gone()).
 *   RETIRED   a joiner's join port once it joined: never polled, sent on or
 *             restarted again.
 * Transitions: LIVE <-> PENDING (a start that fails or succeeds, a client
 * connected again: port_open.c, port_timer.c, dp_port_join_reset()); LIVE
 * -> CLOSING (dp_links_close()); LIVE, PENDING or CLOSING -> QUIET
 * (dp_port_go_quiet()); QUIET -> ANSWERED (dp_link_answer()) -> CLOSED
 * (dp_link_close_rx()); QUIET, ANSWERED or CLOSED -> LIVE when the quiet
 * ends (dp_ports_timer()); LIVE -> RETIRED (join.c).  Every state from
 * QUIET on is quiet (dp_port_quiet()).  What the link itself does (up,
 * lost, carrier) is the timer's reading, whatever the state.
 */
enum dp_link_state {
	DP_LINK_LIVE,
	DP_LINK_PENDING,
	DP_LINK_CLOSING,
	DP_LINK_QUIET,
	DP_LINK_ANSWERED,
	DP_LINK_CLOSED,
	DP_LINK_RETIRED,
};

/* struct dp_port.io: what the poll loop and staging test, per poll and
 * per frame, in one byte, kept by dp_port_set_state() and
 * dp_port_set_up().  RXTX: the port is polled and its staged frames go
 * to it (LIVE or CLOSING).  UP: its link as the timer last read it (a
 * link port: until it is, frames for it are dropped, tx_dropped, rather
 * than left to pile up; the default port: always). */
#define DP_IO_RXTX 1u
#define DP_IO_UP   2u

/* What a port is, fixed at its creation (struct dp_port.kind). */
enum dp_port_kind {
	DP_PORT_DEFAULT, /* ports[0]: conf.port.vdev or conf.port.id */
	DP_PORT_LINK,	 /* a memif link of the world map (link port) */
	/* A join port (join.c, agent->join_port), a link port too: a
	 * member's memif server for joiners, polled on the timer tick only
	 * (dp_run_timers()), or a joiner's client to the member it names,
	 * retired (never polled, sent on or restarted again) once it
	 * joined. */
	DP_PORT_JOIN,
};

/* One of the agent's ports: what was done to it, its queues and the
 * frames staged for it.  The poller's, but for what creation and destroy
 * do. */
struct dp_port {
	unsigned int tx_n; /* frames staged in tx_buf */
	uint8_t io;	   /* DP_IO_RXTX, DP_IO_UP: what the poll loop tests */
	/* enum dp_link_state; dp_port_set_state() alone writes it. */
	uint8_t state;
	uint16_t id, rxq, txq;
	bool probed;  /* we created it from a vdev string */
	bool started; /* we configured and started it */
	uint8_t kind; /* enum dp_port_kind (a link port: not DP_PORT_DEFAULT) */
	/* A link port whose worker is the memif client, or a pending default
	 * memif client with a socket file (restart): dp_port_waits() looks
	 * at its sock. */
	bool client;
	/* The default port is a memif device reaching one worker only
	 * (dp_port_open()): watched as a link port is (lost, quiet), but
	 * never counted down by the timer, nor started or stopped (it may be
	 * the application's) but as restart says. */
	bool one_peer;
	bool memif; /* the default port is a memif port (dp_port_open()) */
	/* The default port fills UDP checksums (RTE_ETH_TX_OFFLOAD_UDP_CKSUM
	 * configured): dp_stage_port() asks it to rather than sum them. */
	bool udp_csum_offload;
	/* The default port, a memif client the agent probed from conf.port.vdev,
	 * whose link has not come up yet: connected again, as a link's client
	 * is, when its link is not up DP_LINK_RESTART_MS after it started
	 * (dp_ports_timer()); cleared once it is up. */
	bool restart;
	uint16_t peer; /* a link port or a one_peer port: the worker it reaches */
	/* Quiet (enum dp_link_state): when its link was first seen down, 0
	 * before. */
	uint64_t quiet_tsc;
	/* CLOSING: the worker at the other end answered (link_close.c). */
	bool close_acked;
	/* ANSWERED or CLOSED: when we answered. */
	uint64_t answered_tsc;
	/* Its link was seen up, then down (and not up again since): the
	 * worker at the other end stopped its port (dp_ports_timer()). */
	bool lost;
	bool carrier; /* a one_peer port: its link as the timer last saw it */
	/* Picked for the close that runs next (port_close.c): every port at
	 * dp_port_close(), the links done early at dp_ports_close_picked(). */
	bool close_now;
	/* Poller only: when a pending port starts again; when a client's
	 * port last started (its link is restarted if it does not come up). */
	uint64_t retry_tsc, start_tsc;
	char vdev_name[RTE_DEV_NAME_MAX_LEN];
	/* A link port: its memif socket, which a client connects to once the
	 * file exists.  A server binds sock DP_SOCK_ALIAS (alias) and names
	 * it sock once started (named; unlinked at close). */
	char sock[DP_SOCK_PATH_MAX];
	bool alias, named;
	struct rte_mbuf *tx_buf[DP_TX_BUF];
};

/* @pt's link enters @s (enum dp_link_state). */
static inline void
dp_port_set_state(struct dp_port *pt, enum dp_link_state s)
{
	pt->state = (uint8_t)s;
	pt->io = (uint8_t)((pt->io & DP_IO_UP) |
			   (s == DP_LINK_LIVE || s == DP_LINK_CLOSING ? DP_IO_RXTX : 0));
}

/* The timer read @pt's link @up (or something stands in for its
 * reading: struct dp_port.io). */
static inline void
dp_port_set_up(struct dp_port *pt, bool up)
{
	pt->io = (uint8_t)((pt->io & DP_IO_RXTX) | (up ? DP_IO_UP : 0));
}

static inline bool
dp_port_up(const struct dp_port *pt)
{
	return (pt->io & DP_IO_UP) != 0;
}

/* Neither polled nor sent on: QUIET and the states after it. */
static inline bool
dp_port_quiet(const struct dp_port *pt)
{
	return pt->state >= DP_LINK_QUIET;
}

/* The agent's ports.  What they read of the agent is copied in at its
 * creation, before dp_port_open(): its name (for the logs), instance
 * (the vdevs' names), TSC rate, mbuf pool (the rx queues'), world map (the
 * agent's own, which grows as workers join: read through @world) and the
 * world's capacity. */
struct dp_ports {
	const char *name;
	unsigned int instance;
	uint64_t tsc_hz;
	struct rte_mempool *mp;
	const struct dp_world *world;
	unsigned int world_cap;
	bool has_default_port; /* ports[0] is conf.port.vdev or conf.port.id */
	int join_port;	       /* index of the join port in ports[], or -1 */
	/* ports[0] the default one when there is one, then one per memif
	 * link; peer_port[r]: the port that reaches worker r.  The ports'
	 * queues and tx buffers are the poller's. */
	unsigned int nb_ports; /* grows on the poller (join.c): dp_port_publish() */
	uint8_t peer_port[DPRPC_MAX_WORKERS];
	/* Link ports' state checked (start retried, link read) no more often
	 * than this, poller only (port_timer.c). */
	uint64_t link_check_tsc;
	unsigned int nb_link_ports;

	struct dp_port ports[DP_MAX_PORTS];
};

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

/* Check @c's port fields and open @a's port as they say, for the agent of
 * rank @self: 0, or a negative errno, logged (dp_port_close() undoes what
 * was done). */
int dp_port_open(struct dp_ports *a, const struct dprpc_agent_conf *c, unsigned int self);
/* The default port's MAC now (port_wire.c): its kernel interface's for a
 * port bound to one, else the ethdev's.  0, or -ENODEV (no default port)
 * or the failing call's negative errno. */
int dp_port_mac_read(const struct dp_ports *a, struct rte_ether_addr *mac);
/* Whether there is a default port with a wire under it: not a memif or a
 * net_ring port, whose frames only cross memory. */
bool dp_port_has_wire(const struct dp_ports *a);
/* Stop the ports we started, close those we probed (port_close.c); with
 * memif ports, on the EAL interrupt thread (memif_unhook.c). */
void dp_port_close(struct dp_ports *a);
/* As dp_port_close(), for the ports whose close_now is set only (memif
 * links dp_links_close() is done with while it waits for others). */
void dp_ports_close_picked(struct dp_ports *a);
/* The poller, on its timer: start pending link ports, read their link
 * state, at most every DP_LINK_CHECK_MS.  Whether a link port's link came
 * up. */
bool dp_ports_timer(struct dp_ports *a, uint64_t now);
/* Whether every port is started and its link up. */
bool dp_ports_link_up(struct dp_ports *a);

/* Hot-plugged on the poller (join.c): the memif link of the world map's
 * mesh to worker @r, who just joined (or, on a joiner, to each member),
 * or the default port for it (peer_port[r]), from the agent of rank
 * @self; 0, or -errno (logged). */
int dp_port_link_add(struct dp_ports *a, unsigned int self, unsigned int r);
/* The join port (agent->join_port): a memif server on DIR/NAME.join for
 * joiners (@member NULL, a member of a meshed world), or a joiner's client
 * to DIR/MEMBER.join.  The poller, or creation.  0 or -errno. */
int dp_port_join_open(struct dp_ports *a, const char *member);
/* A member hangs up on the joiner it answered and listens again. */
void dp_port_join_reset(struct dp_ports *a);

/* Whether @pt is worker @p's own memif link: a link port of the world
 * map, or the default port when it reaches @p alone (dp_port.one_peer). */
bool dp_own_link(const struct dp_port *pt, unsigned int p);
/* Neither poll nor send on @pt until its link has been down a while
 * (dp_port_quiet(); dp_ports_timer() ends it).  The poller. */
void dp_port_go_quiet(struct dp_port *pt);

/* What ethdev port @id is, read from its device arguments with DPDK
 * 22.11's memif defaults: -1 not a memif port (or unreadable), 0 a memif
 * client, 1 a memif server; for 0 and 1 its socket into @s (the server
 * listens on it, the client connects to it).  Any thread. */
int dp_memif_role(uint16_t id, struct dp_memif_sock *s);

#endif /* DP_PORT_H */
