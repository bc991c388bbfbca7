/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The world an agent belongs to: its workers by name and rank, what the
 * agent knows of their liveness, and the start-up rendezvous, leave and
 * join (docs/worlds.md in the source tree).
 */
#ifndef DPRPC_WORLD_H
#define DPRPC_WORLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An agent: opaque (dprpc_agent.h). */
struct dprpc_agent;

/** What this agent knows of a peer's liveness. */
enum dprpc_peer_state {
	DPRPC_PEER_UNKNOWN = 0, /**< nothing heard from it yet */
	DPRPC_PEER_UP = 1,	/**< heard from within peer_timeout_us */
	DPRPC_PEER_DOWN = 2,	/**< silent for peer_timeout_us: declared down */
	/** left the world gracefully (dprpc_world_leave()): forgotten, not
	 * declared down; calls to it fail with ESHUTDOWN until a new
	 * incarnation of it (a restart) is heard from */
	DPRPC_PEER_LEFT = 3,
};

/** What happened to a peer, as the application's peer_event is told. */
enum dprpc_peer_event {
	/** Declared down (silent for peer_timeout_us): its pending calls have
	 * just failed with -EHOSTDOWN; new ones fail until it is heard from. */
	DPRPC_PEER_EVENT_DOWN = 0,
	/** A peer declared down was heard from again, the same incarnation. */
	DPRPC_PEER_EVENT_UP = 1,
	/** A new incarnation of the peer was heard from (it restarted): the
	 * calls pending to the old one have just failed with -ECONNRESET. */
	DPRPC_PEER_EVENT_RESTARTED = 2,
	/** A worker joined the world with this rank (dprpc_world_join()). */
	DPRPC_PEER_EVENT_JOINED = 3,
	/** The peer left the world gracefully (dprpc_world_leave()): its
	 * pending calls have just failed with -ESHUTDOWN. */
	DPRPC_PEER_EVENT_LEFT = 4,
};

/**
 * Told of an event of a peer (dprpc_agent_conf.liveness.peer_event): @p rank the
 * peer's, @p event what happened.  A restarted peer that had been
 * declared down is told RESTARTED, then UP.  Runs on the polling thread;
 * must not block.
 */
typedef void (*dprpc_peer_event_fn_t)(
	struct dprpc_agent *agent, unsigned int rank, enum dprpc_peer_event event, void *arg);

/** Longest worker name, including the terminating NUL. */
#define DPRPC_NAME_MAX 32
/** Most workers in a world. */
#define DPRPC_MAX_WORKERS 64

/** Number of workers in the world (0 for a NULL agent). */
unsigned int dprpc_world_size(const struct dprpc_agent *agent);
/**
 * Rank of a worker by name.
 * @return the rank, -ENOENT (no such worker) or -EINVAL (a NULL argument).
 */
int dprpc_worker_rank(const struct dprpc_agent *agent, const char *name);
/**
 * Name of a worker by rank (owned by the agent), or NULL with rte_errno
 * ENOENT (a rank beyond the world) or EINVAL (a NULL agent).
 */
const char *dprpc_worker_name(const struct dprpc_agent *agent, unsigned int rank);
/**
 * What this agent knows of a worker's liveness.
 * @return an enum dprpc_peer_state, -ENOENT for a rank beyond the world,
 *         or -EINVAL for a NULL agent.
 * Thread context: any.  Memory order: relaxed (a snapshot).
 */
int dprpc_worker_state(const struct dprpc_agent *agent, unsigned int rank);

/**
 * The start-up rendezvous, init_rpc's contract: wait until every worker of
 * the world map has been heard from (dprpc_worker_state() DPRPC_PEER_UP
 * for all, or DPRPC_PEER_LEFT for one that came and left since), polling
 * the agent meanwhile unless an io lcore does.  While a
 * thread waits, the agent pings every worker it has not heard from yet
 * (counted in keepalives) every 10 ms; a worker that receives the ping
 * answers it, and so learns of the sender too.  When every worker creates
 * its agent, registers its handlers and then calls this, the world forms
 * for all of them, whatever order they start in and however late (within
 * the timeout): nobody returns before the last one has been heard from,
 * and the last one hears from those still waiting.  After it returns the
 * agent must go on being polled (an io lcore, the application's loop, or
 * calls) for the others to finish their own wait.
 *
 * The rendezvous window: from the agent's creation to the deadline of the
 * latest dprpc_world_wait() (without end while one waits with no
 * timeout), a worker never heard from is not declared down, whatever calls
 * wait for it (they stay parked until it answers or their own timeout);
 * its peer_timeout_us counts from the window's end.  A worker heard from
 * once is watched as always.
 *
 * @param timeout_us 0 waits without limit.
 * @param missing when not NULL, filled (NUL-terminated, cut with "..." if
 *        longer than @p len) with the names of the workers neither up nor
 *        left, separated by ", ": on -ETIMEDOUT, those that never came
 *        (or were declared down since); on 0, empty.
 * @param len the size of @p missing; 0 with a NULL @p missing.
 * @return 0 (every worker heard from); -ETIMEDOUT (the names are logged
 *         and in @p missing); -EINVAL (NULL @p agent, or NULL @p missing
 *         with a non-zero @p len); -EDEADLK on the agent's poller (a
 *         handler or callback: the wait would never end).
 * Thread context: any thread but the agent's poller; several may wait at
 * once.  Memory order: the peers' states are read relaxed (snapshots).
 */
int dprpc_world_wait(struct dprpc_agent *agent, uint64_t timeout_us, char *missing, size_t len);

/**
 * Leave the world gracefully, this worker alone: tell every worker that is
 * up for this agent (DPRPC_PEER_UP) that it leaves, and wait until each has
 * acknowledged, polling the agent meanwhile unless an io lcore does.  A
 * worker reached over a memif link of its own (a link of the world map, or
 * the default port when it is a memif port reaching that worker alone)
 * whose link went down is not waited for: it stopped its port and can no
 * longer be told.  A worker leaving at the same time, whose LEAVE crossed
 * this one's on such a link, is not waited for either (it is gone from
 * the world too), except by the end of the higher rank, which waits for
 * the other's answer: of the two, that end then knows the other no longer
 * reads the link and closes it first at dprpc_agent_destroy().  A
 * worker told forgets it without declaring it down: its state for it
 * becomes DPRPC_PEER_LEFT (counted in peers_left, not peers_down), its
 * calls pending to it fail with -ESHUTDOWN ("worker NAME left the world")
 * and new ones at once with ESHUTDOWN, what it holds for it as a server is
 * freed, it neither pings it nor declares it down any more, and frames of
 * this incarnation do not bring it back; a new incarnation (the worker
 * restarted) is UP again when heard from.  Its peer_event is told
 * DPRPC_PEER_EVENT_LEFT (not DOWN).  Call it once the worker's work is done (its own calls
 * answered), then dprpc_agent_destroy(); meanwhile the agent still answers
 * requests.
 * @param timeout_us 0 waits without limit.
 * @return 0 (every worker up acknowledged, and the answer owed by a
 *         crossed LEAVE came); -ETIMEDOUT (some did not: they
 *         will declare it down after their peer_timeout_us instead);
 *         -EINVAL (NULL @p agent); -EDEADLK on the agent's poller.
 * Thread context: any thread but the agent's poller, one at a time.
 */
int dprpc_world_leave(struct dprpc_agent *agent, uint64_t timeout_us);

/**
 * Join a running world: this agent's world map has only its own line,
 * with rank "-" ("NAME - MAC IPV4 UDP_PORT"), and @p member names one
 * worker of the world ("NAME MAC IPV4 UDP_PORT", reached through the
 * agent's default port, an L2 segment such as a Linux bridge, or, in
 * a world with a "mesh memif:DIR" line: the joiner's map has the same
 * line, and it reaches the member through its join socket DIR/NAME.join;
 * docs/worlds.md).  A CONTROL JOIN is sent
 * to it every 10 ms until answered; it relays to the world's assigner (its
 * lowest rank up), which gives the joiner the next unused rank, tells every
 * member (each tells its peer_event DPRPC_PEER_EVENT_JOINED) and, once all have
 * acknowledged, has the member answer with the rank and every worker.
 * Then it waits until it has heard from every member (the rendezvous of
 * dprpc_world_wait(), within the same @p timeout_us).  When it returns 0
 * this agent has its rank (dprpc_agent_rank()), the world its size
 * (dprpc_world_size(), dprpc_worker_info_list()), and calls go both ways
 * by name and rank; it may leave as any worker
 * (dprpc_world_leave(), dprpc_shutdown()).  Resent JOINs (lost answers)
 * get the same rank.  A worker that joins under a name the world has, with
 * that worker's MAC, IPv4 address and UDP port (the same command started
 * again after a crash, a new agent: a new incarnation), gets that name's
 * rank back (ranks are never reused), whether the old incarnation is down,
 * left or still taken for up: the members take it for that worker's
 * restart (its old incarnation's pending calls fail -ECONNRESET, its
 * frames are dropped from then on; docs/reliability.md), and every member
 * learns the new incarnation before it is answered.  Polls the agent
 * meanwhile unless an io lcore does.
 * Before it returns 0, dprpc_agent_rank() is UINT16_MAX and the world
 * empty: RRefs and collectives are used after it.
 * @param timeout_us 0 waits without limit.
 * @return 0; -EINVAL (NULL @p agent or @p member, @p member not
 *         "NAME MAC IPV4 UDP_PORT"); -EALREADY (this agent is in the world:
 *         its map gave it a rank, or it joined); -EBUSY (another thread is
 *         joining); -EDEADLK on the agent's poller; -ETIMEDOUT (no answer:
 *         the member or the world is unreachable, or a member never
 *         acknowledged; calling again with the same agent continues, and
 *         gets the rank it may have been given; or it joined, its rank and
 *         world are set, but some member was not heard from in time); -ENOSPC (the world has
 *         max_workers workers, or more than this agent's max_workers);
 *         -EEXIST (a worker of the world has this name with another
 *         MAC, IPv4 address or UDP port, or this IPv4 address and port
 *         under another name, or this name is the member named's or the
 *         assigner's own, which are up); -EOPNOTSUPP (the member has no default port to reach the
 *         joiner through); -ENOMEM (no memory for the join's tables or
 *         a member's state); with a `mesh memif:DIR` line, the error of
 *         opening the join port or plugging a member's link
 *         (-ENAMETOOLONG for a socket path too long, -ENOSPC with every
 *         port of the agent taken, or the ethdev's errno).
 * Thread context: any thread but the agent's poller, one at a time.
 * @p member is read during the call (copied); the caller keeps it.
 */
int dprpc_world_join(struct dprpc_agent *agent, const char *member, uint64_t timeout_us);

/**
 * A worker as PyTorch's WorkerInfo describes it, plus where and how it is
 * reached.  Calls take its name (dprpc_rpc_sync(), dprpc_rpc_async()) or
 * its rank (their _id forms: dprpc_rpc_async_id()).
 */
struct dprpc_worker_info {
	char name[DPRPC_NAME_MAX]; /**< its name in the world map */
	unsigned int rank;	   /**< its rank (PyTorch's id) */
	uint8_t mac[6];		   /**< its MAC address as the world map gives it;
				        all zero where the map gives none (frames to
				        it take their next hop's MAC from ARP) */
	uint32_t ipv4;		   /**< its IPv4 address, network byte order */
	uint16_t udp_port;	   /**< its UDP port, host byte order */
	uint16_t port_id;	   /**< the ethdev port this agent reaches it through
				        (its default port for itself) */
	int state;		   /**< enum dprpc_peer_state, as dprpc_worker_state() */
};

/**
 * Describe a worker of the agent's world by rank (the agent itself at
 * dprpc_agent_rank()).
 * @param rank the worker's rank.
 * @param info filled on success (the caller's).
 * @return 0; -EINVAL (NULL @p agent or @p info); -ENOENT (a rank beyond
 *         the world, as dprpc_worker_state(); on an agent that has not
 *         joined its world yet, dprpc_world_join(), every rank).
 * Thread context: any.  A worker's name, rank and addresses never change
 * once it is in the world (the map's at creation, a joiner's from its
 * join on: the world's size grows, dprpc_world_size()); the state is a
 * relaxed snapshot.
 */
int dprpc_worker_info_get_id(
	const struct dprpc_agent *agent, unsigned int rank, struct dprpc_worker_info *info);

/**
 * dprpc_worker_info_get_id() by name (PyTorch's get_worker_info()).
 * @param name the worker's name; NULL for the agent's own worker.
 * @param info filled on success.
 * @return 0; -EINVAL (NULL @p agent or @p info); -ENOENT (no worker of
 *         that name, or a NULL @p name on an agent that has not joined its
 *         world yet, dprpc_world_join()).
 * Thread context: any, as dprpc_worker_info_get_id().
 */
int dprpc_worker_info_get(
	const struct dprpc_agent *agent, const char *name, struct dprpc_worker_info *info);

/**
 * Describe every worker of the agent's world, by rank.
 * @param infos filled for ranks 0 to min(@p cap, world size) - 1; may be
 *        NULL with @p cap 0, to learn the world size.
 * @return the world size (which may exceed @p cap: only @p cap entries
 *         are filled); -EINVAL (NULL @p agent, or NULL @p infos with a
 *         non-zero @p cap).
 * Thread context: any, as dprpc_worker_info_get().
 */
int dprpc_worker_info_list(
	const struct dprpc_agent *agent, struct dprpc_worker_info *infos, unsigned int cap);

/** What an agent has measured of the round trip to a worker. */
struct dprpc_worker_rtt {
	/** Smoothed round trip of calls answered without a resend, in ns;
	 * 0 while none has been. */
	uint64_t srtt_ns;
	/** The resend timeout a new call to the worker starts with, in ns
	 * (dprpc_agent_conf.calls.retransmit_us until the first measurement; 0
	 * with retransmission off). */
	uint64_t rto_ns;
};

/**
 * The round trip and resend timeout towards a worker (see
 * dprpc_agent_conf.calls.retransmit_us), e.g. to tune timeouts or watch a path.
 * A round trip runs from the request's transmission to the poll that
 * receives the response, less the time the destination held the request
 * (its queue and handler, which the response states), so it includes
 * both pollers' delays and, when the application drives progress itself,
 * the time until it polls again.
 * @param rtt filled on success.
 * @return 0; -EINVAL (NULL @p agent or @p rtt); -ENOENT (a bad rank, or
 *         this agent's own rank: calls to self are never resent).
 * Thread context: any.  Memory order: relaxed (a snapshot of what the
 * poller last computed; the two fields may come from different samples).
 */
int dprpc_worker_rtt_get(
	const struct dprpc_agent *agent, unsigned int rank, struct dprpc_worker_rtt *rtt);

#ifdef __cplusplus
}
#endif

#endif /* DPRPC_WORLD_H */
