/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Agents: one dprpc worker each (docs/architecture.md in the source tree).
 *
 * An agent has a name and a rank in a static world map, an ethdev port (given
 * by the application or created from a vdev string), a mempool, handler
 * pools and the RPC state towards every peer.  dprpc_poll() is its engine:
 * rx burst, parse, complete responses, dispatch requests, timers, tx flush.
 * It is driven in one of three ways:
 *  1. the application calls dprpc_poll() from its own lcore loop;
 *  2. the agent runs the poll loop on the EAL lcore conf.io_lcore;
 *  3. with neither, a thread waiting on one of the agent's futures polls
 *     (single-core mode, the default).
 *
 * The application owns EAL: the library never calls rte_eal_init() except
 * through dprpc_eal_init(), a convenience for tools and examples.
 *
 * Several agents may live in one process (tests do that); their names must
 * differ.
 */
#ifndef DPRPC_AGENT_H
#define DPRPC_AGENT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rte_mempool;

/** An agent: opaque. */
struct dprpc_agent;

/** What this agent knows of a peer's liveness. */
enum dprpc_peer_state {
	DPRPC_PEER_UNKNOWN = 0, /**< nothing heard from it yet */
	DPRPC_PEER_UP = 1,	/**< heard from within peer_timeout_us */
	DPRPC_PEER_DOWN = 2,	/**< silent for peer_timeout_us: declared down */
};

/**
 * Called when a peer is declared down (@p up false: its pending calls have
 * just failed with -EHOSTDOWN) and when a peer declared down is heard from
 * again (@p up true).  Runs on the polling thread; must not block.
 */
typedef void (*dprpc_peer_event_t)(
	struct dprpc_agent *agent, unsigned int rank, bool up, void *arg);

/** Longest worker name, including the terminating NUL. */
#define DPRPC_NAME_MAX 32
/** Most workers in a world. */
#define DPRPC_MAX_WORKERS 64
/** Most handler lcores in one agent's pool. */
#define DPRPC_MAX_HANDLER_LCORES 16
/** "No lcore" for dprpc_agent_conf.io_lcore. */
#define DPRPC_LCORE_NONE UINT32_MAX
/** Largest payload of a request or response carried in one frame. */
#define DPRPC_MAX_FRAME_PAYLOAD 1432
/** Default of dprpc_agent_conf.max_msg_size: 8 MiB. */
#define DPRPC_MAX_MSG_DEFAULT (8u << 20)
/** Highest max_msg_size: a message has at most 65535 frames. */
#define DPRPC_MAX_MSG_LIMIT (65535u * DPRPC_MAX_FRAME_PAYLOAD)

/**
 * Fault injection on one direction of an agent's port (docs/reliability.md),
 * for tests of loss, duplication, reordering and delay on any PMD, memif
 * included.  All zero (the default) is off and costs one branch per burst.
 * Decisions come from a generator seeded with @ref seed, so a run repeats
 * exactly for the same frames in the same order.
 */
struct dprpc_fault_conf {
	uint64_t seed;	      /**< generator seed; 0 picks a fixed one */
	uint32_t drop_ppm;    /**< frames dropped, per million */
	uint32_t dup_ppm;     /**< frames sent (or received) twice, per million */
	uint32_t reorder_ppm; /**< frames held back behind the next ones, per million */
	uint32_t delay_ppm;   /**< frames held back for @ref delay_us, per million */
	uint32_t delay_us;    /**< delay of a delayed frame */
	/** Drop exactly the Nth frames listed (1 = the first frame in this
	 * direction since the agent's creation): deterministic loss of chosen
	 * frames.  Up to 8; 0 = unused. */
	uint64_t drop_nth[8];
};

/**
 * Agent configuration.  Fill it with dprpc_agent_conf_init() and change
 * what you need; the strings are copied by dprpc_agent_create().
 */
struct dprpc_agent_conf {
	/** This worker's name; it must appear in the world map. */
	const char *name;
	/**
	 * The world map: its text, or "@" followed by a file path.  One
	 * worker per line (';' also separates entries; '#' starts a comment):
	 *     NAME RANK MAC IPV4 UDP_PORT
	 * e.g. "w0 0 02:00:00:00:00:01 10.0.0.1 7000; w1 1 02:...".
	 * Ranks are 0..n-1, each once; names and IPv4:port pairs are unique
	 * (workers may share a MAC: several behind one port).
	 */
	const char *world;
	/** An existing ethdev port id, or -1 to create one from @ref vdev. */
	int port_id;
	/** A vdev string for rte_dev_probe(), e.g.
	 * "net_memif0,role=server,socket=/tmp/x.sock"; used when port_id < 0. */
	const char *vdev;
	/** True if the application configured and started the port itself
	 * (the agent then uses rx_queue/tx_queue and never stops it). */
	bool port_ready;
	uint16_t rx_queue; /**< rx queue used by the agent (with port_ready) */
	uint16_t tx_queue; /**< tx queue used by the agent (with port_ready) */
	/** Mbuf pool for rx and tx; NULL: the agent creates one of nb_mbufs. */
	struct rte_mempool *mbuf_pool;
	unsigned int nb_mbufs; /**< default 8191 */
	int socket_id;	       /**< NUMA socket for memory; default SOCKET_ID_ANY */
	/** EAL lcore that runs the poll loop (way 2), or DPRPC_LCORE_NONE. */
	unsigned int io_lcore;
	/** EAL lcores of the handler pool (handlers registered in
	 * DPRPC_HANDLER_POOL mode run there); may be 0 if none is used. */
	unsigned int nb_handler_lcores;
	unsigned int handler_lcores[DPRPC_MAX_HANDLER_LCORES];
	/** Most calls in flight towards one peer (session slots); default 64,
	 * at most 65535.  Peers need not agree on it: a worker keeps the
	 * at-most-once state of as many slots as each caller uses, starting
	 * with this many per peer and growing (to the next power of two)
	 * when a caller with a larger max_outstanding uses more. */
	unsigned int max_outstanding;
	/** Timeout of calls given DPRPC_TIMEOUT_DEFAULT, in microseconds;
	 * 0 means none, and so does one too long for the TSC to reach.
	 * Default 60 s (PyTorch's default). */
	uint64_t default_timeout_us;
	/** Idle back-off: empty polls before pausing, before yielding and
	 * before sleeping; and the sleep.  Defaults 256, 4096, 32768, 50 us. */
	unsigned int idle_pause_polls;
	unsigned int idle_yield_polls;
	unsigned int idle_sleep_polls;
	unsigned int idle_sleep_us;
	/** Most handlers registered; default 256. */
	unsigned int max_handlers;
	/** Incoming requests being handled at once (inline, queued to the
	 * pool, or deferred); default 1024. */
	unsigned int max_requests;
	/** Retransmission of a call's request until its response comes.
	 * The resend timeout adapts to each peer's round trip as TCP's does
	 * (RFC 6298): the smoothed round trip of single-frame calls answered
	 * without a resend, plus the larger of four times its variation and
	 * the resend timer's 100 us period, so 0.1-0.3 ms on memif or
	 * af_packet.  This is the timeout towards a peer not measured yet
	 * (and towards one called only with multi-frame messages); a call's
	 * timeout doubles at each resend, up to 64 times this; 0 turns
	 * retransmission off.  Default 1000.  The server runs each request
	 * at most once whatever arrives twice, so a resend on a stall of
	 * either side (or to a handler slower than the timeout) costs a
	 * duplicate frame per doubling the stall outlasts, which the server
	 * answers from its kept response or drops.  The same timer recovers multi-frame
	 * messages in both directions (lost tails, lost resends, lost ACKs;
	 * a gap followed by frames that arrive is NACKed without it): with
	 * 0, such a loss leaves the call to its timeout, or to peer-down. */
	uint32_t retransmit_us;
	/** Liveness: a peer this agent has heard from, or has calls pending
	 * to, gets a keep-alive after keepalive_us of silence (default 100 ms;
	 * 0: none), and is declared down after peer_timeout_us with nothing
	 * heard (default 1 s; 0: never).  Then every call pending towards it
	 * fails with -EHOSTDOWN and new calls fail at once with EHOSTDOWN
	 * until it is heard from again. */
	uint32_t keepalive_us;
	uint32_t peer_timeout_us;
	/** Told of peers going down and coming back; may be NULL. */
	dprpc_peer_event_t peer_event;
	void *peer_event_arg;
	/** RRefs: most values owned plus user references held at once by
	 * this agent (each takes a future of a pool made up front); default
	 * 16384. */
	unsigned int max_rrefs;
	/** Faults injected on transmit and on receive; off by default. */
	struct dprpc_fault_conf fault_tx;
	struct dprpc_fault_conf fault_rx;
	/** Largest message (request or response payload), in bytes; default
	 * DPRPC_MAX_MSG_DEFAULT (8 MiB), from DPRPC_MAX_FRAME_PAYLOAD to
	 * DPRPC_MAX_MSG_LIMIT.  Longer calls and replies fail with -EMSGSIZE,
	 * and so does a call whose request or response is longer than its
	 * receiver's own max_msg_size.  Messages longer than
	 * DPRPC_MAX_FRAME_PAYLOAD travel as several frames (dprpc_rpc.h). */
	uint32_t max_msg_size;
	/** Flow control: the frames of one multi-frame message a sender may
	 * have beyond those acknowledged: the window this agent grants as a
	 * receiver, cut to an eighth while its mbuf pool is under a quarter
	 * full (counted in credits_cut).  Default 64; 1 to 1024. */
	unsigned int credits;
};

/**
 * Fill a configuration with defaults: no name, no world, port_id -1, no
 * vdev, no io lcore, no handler lcores, and the defaults listed above.
 */
void dprpc_agent_conf_init(struct dprpc_agent_conf *conf);

/**
 * Create an agent: parse the world, create or take the port, configure and
 * start it (unless port_ready), create pools and rings, and launch the io
 * lcore and handler lcores if configured.
 *
 * @return the agent, or NULL with rte_errno set: EINVAL (bad configuration
 *         or world map; the reason is logged), ENOENT (name not in the
 *         world, or no such port/vdev), EEXIST (an agent of that name
 *         exists in this process), EBUSY (an lcore is not available),
 *         ENOMEM, or the errno of a failing ethdev call.
 *
 * Thread context: any thread after rte_eal_init(); not concurrently with
 * dprpc_agent_destroy() of the same name.
 * Ownership: the caller owns the agent until dprpc_agent_destroy(); an
 * application-given port or mempool stays the application's.
 */
struct dprpc_agent *dprpc_agent_create(const struct dprpc_agent_conf *conf);

/**
 * Destroy an agent: stop its lcores, fail every pending call with
 * -ESHUTDOWN, free what it created (its port if it probed the vdev, its
 * pools and rings).
 *
 * @return 0; -EBUSY if deferred requests are still unanswered (the agent
 *         is left intact; reply to them and retry); -EINVAL on NULL.
 *
 * Thread context: any thread but the agent's own lcores and callbacks;
 * no other call on the agent may run concurrently or follow.  Futures the
 * application still holds stay valid (failed) until their last put.
 */
int dprpc_agent_destroy(struct dprpc_agent *agent);

/**
 * Poll the agent once: receive up to @p budget frames, dispatch them, drain
 * replies and submitted calls, run timers, transmit.
 *
 * @return the number of events handled (frames, replies, calls, timers),
 *         0 if idle; -EBUSY if another thread is polling this agent right
 *         now (calls are serialised, never concurrent); -EINVAL on NULL.
 *
 * Thread context: any thread (way 1: the application's lcore loop; the
 * agent's io lcore and waiting threads call it too).  Completion callbacks
 * of the agent's futures and inline handlers run inside it.  Memory order:
 * an internal flag taken with acquire and released with release orders one
 * poller's work before the next one's.
 */
int dprpc_poll(struct dprpc_agent *agent, unsigned int budget);

/**
 * Wait until the port's link is up (a memif peer connected), polling the
 * agent meanwhile.
 * @param timeout_us 0 waits without limit.
 * @return 0, or -ETIMEDOUT.
 * Thread context: any thread that may poll the agent.
 */
int dprpc_agent_wait_link(struct dprpc_agent *agent, uint64_t timeout_us);

/*
 * Accessors.  They read what was fixed at creation: any thread, no
 * ordering needed; returned strings are owned by the agent and live as long
 * as it does.
 */

/** This agent's rank. */
unsigned int dprpc_agent_rank(const struct dprpc_agent *agent);
/** This agent's name (owned by the agent). */
const char *dprpc_agent_name(const struct dprpc_agent *agent);
/** Number of workers in the world. */
unsigned int dprpc_world_size(const struct dprpc_agent *agent);
/**
 * Rank of a worker by name.
 * @return the rank, or -ENOENT.
 */
int dprpc_worker_rank(const struct dprpc_agent *agent, const char *name);
/**
 * Name of a worker by rank (owned by the agent), or NULL with rte_errno
 * ENOENT.
 */
const char *dprpc_worker_name(const struct dprpc_agent *agent, unsigned int rank);
/**
 * What this agent knows of a worker's liveness.
 * @return an enum dprpc_peer_state, or -ENOENT for a bad rank.
 * Thread context: any.  Memory order: relaxed (a snapshot).
 */
int dprpc_worker_state(const struct dprpc_agent *agent, unsigned int rank);

/** What an agent has measured of the round trip to a worker. */
struct dprpc_worker_rtt {
	/** Smoothed round trip of calls answered without a resend, in ns;
	 * 0 while none has been. */
	uint64_t srtt_ns;
	/** The resend timeout a new call to the worker starts with, in ns
	 * (dprpc_agent_conf.retransmit_us until the first measurement; 0
	 * with retransmission off). */
	uint64_t rto_ns;
};

/**
 * The round trip and resend timeout towards a worker (see
 * dprpc_agent_conf.retransmit_us), e.g. to tune timeouts or watch a path.
 * A round trip runs from the request's transmission to the poll that
 * receives the response, so it includes the handler's time on the
 * destination and, when the application drives progress itself, the
 * time until it polls again.
 * @param rtt filled on success.
 * @return 0; -EINVAL (NULL @p agent or @p rtt); -ENOENT (a bad rank, or
 *         this agent's own rank: calls to self are never resent).
 * Thread context: any.  Memory order: relaxed (a snapshot of what the
 * poller last computed; the two fields may come from different samples).
 */
int dprpc_worker_rtt(
	const struct dprpc_agent *agent, unsigned int rank, struct dprpc_worker_rtt *rtt);

/** The ethdev port the agent uses (the application's if it gave one). */
uint16_t dprpc_agent_port(const struct dprpc_agent *agent);

/** Why a received frame was dropped. */
enum dprpc_drop_reason {
	DPRPC_DROP_TRUNCATED = 0, /**< shorter than its headers or lengths say */
	DPRPC_DROP_NOT_DPRPC,	  /**< not IPv4/UDP to our address and port */
	DPRPC_DROP_BAD_CSUM,	  /**< IPv4 header checksum wrong */
	DPRPC_DROP_BAD_MAGIC,	  /**< dprpc magic wrong */
	DPRPC_DROP_BAD_VERSION,	  /**< unsupported dprpc version */
	DPRPC_DROP_BAD_TYPE,	  /**< unknown frame type or flags */
	DPRPC_DROP_BAD_LENGTH,	  /**< lengths inconsistent */
	DPRPC_DROP_FOREIGN,	  /**< source is not the world's worker it claims,
				       or destination is not this worker */
	DPRPC_DROP_UNSUPPORTED,	  /**< chained mbuf larger than one mbuf can hold */
	DPRPC_DROP_STALE,	  /**< response to no pending call (late, duplicate) */
	DPRPC_DROP_NO_REQUEST,	  /**< no request object left for an incoming call */
	DPRPC_DROP_HANDLER_FULL,  /**< handler pool ring full */
	DPRPC_DROP_DUPLICATE,	  /**< a request whose handler still runs, or an
				       older request than the slot's last */
	DPRPC_DROP_OLD_SESSION,	  /**< from an earlier incarnation of its sender */
	DPRPC_DROP_TOO_BIG,	  /**< a message longer than max_msg_size */
	DPRPC_DROP_NO_MEMORY,	  /**< no memory to reassemble a message, or to
				       keep state for a slot beyond those the
				       peer used before (the sender resends it
				       later) */
	DPRPC_DROP_MAX
};

/** A short name for a drop reason, e.g. "truncated" ("unknown" for a value
 * out of range); a static string.  Thread context: any. */
const char *dprpc_drop_reason_str(enum dprpc_drop_reason reason);

/**
 * Counters of an agent.  Each is written by the polling thread (except
 * reply_nombuf) and may be read at any time; a snapshot is not atomic as a
 * whole.
 */
struct dprpc_agent_stats {
	uint64_t rx_frames;	   /**< frames received from the port */
	uint64_t tx_frames;	   /**< frames handed to the port */
	uint64_t tx_retries;	   /**< tx bursts that left frames for later */
	uint64_t tx_dropped;	   /**< frames dropped because the port pushed back
				        and the tx ring was full as well */
	uint64_t calls_sent;	   /**< calls started: given a session slot and sent
				        (remote) or looped back (self) */
	uint64_t calls_ok;	   /**< calls completed with a value */
	uint64_t calls_failed;	   /**< calls failed (remote error, timeout, ...) */
	uint64_t calls_timed_out;  /**< of which timed out */
	uint64_t requests_handled; /**< incoming requests given to a handler */
	uint64_t requests_unknown; /**< incoming requests for no handler */
	uint64_t reply_nombuf;	   /**< replies (errors) lost for want of an mbuf */
	uint64_t requests_resent;  /**< duplicate requests answered again with the
				        stored response, the handler not run */
	uint64_t retransmits;	   /**< requests sent again for want of a response */
	uint64_t keepalives;	   /**< keep-alive pings sent */
	uint64_t peers_down;	   /**< times a peer was declared down */
	uint64_t peers_restarted;  /**< times a peer was seen to have restarted */
	uint64_t msgs_sent;	   /**< multi-frame messages started (requests and
				        responses) */
	uint64_t msgs_received;	   /**< multi-frame messages reassembled whole */
	uint64_t frames_resent;	   /**< frames of multi-frame messages sent again
				        (lost, or their acknowledgement was) */
	uint64_t acks_sent;	   /**< acknowledgements (credit returns) sent */
	uint64_t credits_cut;	   /**< acknowledgements granting a reduced window
				        because this agent's mbuf pool ran low */
	uint64_t dropped;	   /**< sum of drops[] */
	uint64_t drops[DPRPC_DROP_MAX];
	/** Injected faults (dprpc_fault_conf), transmit and receive together. */
	uint64_t fault_dropped, fault_duplicated, fault_reordered, fault_delayed;
};

/**
 * Read the counters.
 * @return 0, or -EINVAL on NULL.
 * Thread context: any thread.  Memory order: relaxed per counter.
 */
int dprpc_agent_stats_get(const struct dprpc_agent *agent, struct dprpc_agent_stats *stats);

/**
 * Print the agent's state and counters for debugging.
 * Thread context: any thread.
 */
void dprpc_agent_dump(const struct dprpc_agent *agent, FILE *f);

/**
 * Resource counts, for leak checks in tests and tools: objects currently
 * taken from the agent's pools.
 */
struct dprpc_agent_usage {
	unsigned int futures;  /**< futures not yet returned to the pool */
	unsigned int requests; /**< incoming request objects in use */
	unsigned int mbufs;    /**< mbufs of the agent-created pool in use
				    (0 if the pool is the application's) */
	unsigned int calls;    /**< calls in flight, all peers */
	unsigned int messages; /**< multi-frame messages being sent (until
				    acknowledged whole) or reassembled */
};

/**
 * Read the resource counts.
 * @return 0, or -EINVAL.
 * Thread context: any thread; exact only when the agent is quiescent.
 */
int dprpc_agent_usage(const struct dprpc_agent *agent, struct dprpc_agent_usage *usage);

/**
 * Convenience EAL initialisation for tools and examples: rte_eal_init() with
 * the given arguments, tolerating an EAL that is already up.
 *
 * @return the number of arguments consumed (as rte_eal_init()), 0 if EAL
 *         was already initialised, or a negative errno.
 * Thread context: the main thread, once, before any other call.
 */
int dprpc_eal_init(int argc, char **argv);

/**
 * Convenience EAL teardown for tools, tests and examples that run with a
 * private --file-prefix: rte_eal_cleanup(), then remove the files of EAL's
 * runtime directory (/var/run/dpdk/PREFIX: sockets, configuration) and the
 * directory, which EAL leaves behind even with --no-shconf.  Not for a
 * multi-process primary whose secondaries still use that directory.
 *
 * @return 0, or rte_eal_cleanup()'s negative errno (the directory is
 *         removed all the same).
 * Thread context: the main thread, last; no DPDK call may follow.
 */
int dprpc_eal_cleanup(void);

#ifdef __cplusplus
}
#endif

#endif /* DPRPC_AGENT_H */
