/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Agents: one dprpc worker each (docs/architecture.md in the source tree).
 *
 * An agent has a name and a rank in a static world map, an ethdev port (given
 * by the application or created from a vdev string) and a memif port per
 * link the world map gives it (docs/worlds.md), a mempool, handler pools
 * and the RPC state towards every peer.  dprpc_world_wait() is the start-up
 * rendezvous.  dprpc_poll() is its engine:
 * rx burst, parse, complete responses, dispatch requests, timers, tx flush.
 * It is driven in one of three ways:
 *  1. the application calls dprpc_poll() from its own lcore loop;
 *  2. the agent runs the poll loop on the EAL lcore conf.io_lcore;
 *  3. with neither, a thread waiting on one of the agent's futures polls
 *     (single-core mode, the default); with conf.waiters_park, only while
 *     its polls find frames or a message of several frames is in flight:
 *     the application polls the agent meanwhile.
 *
 * The application owns EAL: the library never calls rte_eal_init() except
 * through dprpc_eal_init() and dprpc_eal_init_local() (the set for a
 * machine without a NIC), conveniences for applications, tools and tests.
 *
 * Threads that EAL did not create: the first dprpc_rpc_async(),
 * dprpc_poll() or reply such a thread makes registers it with EAL
 * (rte_thread_register()), so that it gets an lcore id and with it a cache
 * in every mempool: without one each mbuf, request and future it takes or
 * returns is an operation on the pool's shared ring, which a thread
 * preempted in the middle holds up for the others.  rte_lcore_id() then
 * returns that id on the thread.  It is unregistered when it exits (a
 * thread-specific key's destructor), unless dprpc_eal_cleanup() ran first.
 * When EAL has no lcore id left (RTE_MAX_LCORE) the thread works without.
 *
 * Several agents may live in one process (tests do that); their names must
 * differ.
 *
 * Logs go through EAL's rte_log() under one log type per module:
 * "dprpc.dataplane" (agents, the port, the wire), "dprpc.rref" (RRefs) and
 * "dprpc.future" (futures), each at RTE_LOG_INFO by default.  EAL's
 * --log-level='dprpc.*:debug' sets them all, --log-level=dprpc.rref:debug
 * one of them; rte_log_set_level_pattern() does the same at run time.
 * Nothing is logged per frame: drops are counted (dprpc_agent_stats_get()).
 */
#ifndef DPRPC_AGENT_H
#define DPRPC_AGENT_H

#include <stdbool.h>
#include <stddef.h>
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
	/** left the world gracefully (dprpc_world_leave()): forgotten, not
	 * declared down; calls to it fail with ESHUTDOWN until a new
	 * incarnation of it (a restart) is heard from */
	DPRPC_PEER_LEFT = 3,
};

/**
 * Called when a peer is declared down (@p up false: its pending calls have
 * just failed with -EHOSTDOWN), when a peer declared down is heard from
 * again (@p up true), and when a worker joins the world (@p up true, @p rank
 * at least the world size before it: the event DPRPC_PEER_JOINED, see
 * DPRPC_PEER_JOINED() below).  Runs on the polling thread; must not block.
 */
typedef void (*dprpc_peer_event_t)(
	struct dprpc_agent *agent, unsigned int rank, bool up, void *arg);

/**
 * Whether a peer_event call with @p up true told of a worker that joined
 * the world (DPRPC_PEER_JOINED) rather than of one heard from again: true
 * while the joiner has not been heard from yet, which holds during the
 * call (the joiner is told its rank only after every member knows it).
 * Any thread; false for a NULL @p agent or an unknown @p rank.
 */
#define DPRPC_PEER_JOINED(agent, rank) (dprpc_worker_state((agent), (rank)) == DPRPC_PEER_UNKNOWN)

/** Longest worker name, including the terminating NUL. */
#define DPRPC_NAME_MAX 32
/** Most workers in a world. */
#define DPRPC_MAX_WORKERS 64
/** Most handler lcores in one agent's pool. */
#define DPRPC_MAX_HANDLER_LCORES 16
/** "No lcore" for dprpc_agent_conf.io_lcore. */
#define DPRPC_LCORE_NONE UINT32_MAX
/** dprpc_agent_conf.inline_wait_max_us: no bound on the inline backlog. */
#define DPRPC_INLINE_WAIT_UNBOUNDED UINT32_MAX
/** Default of dprpc_agent_conf.inline_wait_max_us (0 there): 10 ms, so that
 * a burst of a thousand or two short calls is not refused; a tighter bound
 * is the application's to set. */
#define DPRPC_INLINE_WAIT_DEFAULT_US 10000u
/** Largest payload of a request or response carried in one frame. */
#define DPRPC_MAX_FRAME_PAYLOAD 1420
/** Default of dprpc_agent_conf.max_msg_size: 8 MiB. */
#define DPRPC_MAX_MSG_DEFAULT (8u << 20)
/** Highest max_msg_size: a message has at most 65535 frames. */
#define DPRPC_MAX_MSG_LIMIT (65535u * DPRPC_MAX_FRAME_PAYLOAD)
/** The most buffers one message gathers (dprpc_rpc_async_iov(),
 * dprpc_reply_iov()). */
#define DPRPC_IOV_MAX 256

/**
 * Fault injection on one direction of an agent's port (docs/reliability.md),
 * for tests of loss, duplication, reordering and delay on any PMD, memif
 * included.  All zero (the default) is off and costs one branch per burst.
 * Decisions come from a generator seeded with @ref seed, so a run repeats
 * exactly for the same frames in the same order.  Liveness CONTROL frames
 * (pings, pongs, leaves) pass untouched and take no decision: how many
 * there are depends on timing.  Real loss of them: tests/netns (XDP).  A
 * call's CONTROL frames (a CANCEL and its answer) meet the faults.
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
	 * frames.  Liveness CONTROL frames are not counted.  Up to 8; 0 =
	 * unused. */
	uint64_t drop_nth[8];
};

struct dprpc_handler_def; /* dprpc_rpc.h */

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
	 * Ranks are 0..n-1 (n at most DPRPC_MAX_WORKERS), each once; names
	 * and IPv4:port pairs are unique (workers may share a MAC: several
	 * behind one port).  "link" and "mesh" are not worker names.
	 *
	 * A worker that only memif links reach (below) may be given as
	 *     NAME RANK
	 * e.g. "w0 0; w1 1; mesh memif:/tmp/w": its address is made from its
	 * rank, MAC 02:64:00:00:00:R, IPv4 127.100.0.R, UDP port 7000, R =
	 * rank + 1 (frames on memif links never meet a kernel).  A map in
	 * which another worker would reach such a worker through the default
	 * port (no mesh line, and no link line joins the two) is EINVAL, the
	 * message naming both.  A joiner's line (rank "-") needs its address.
	 *
	 * Which port reaches whom (docs/worlds.md).  By default every worker
	 * is reached through the agent's one port (@ref port_id or @ref vdev):
	 * an L2 segment such as a Linux bridge (net_af_packet) reaches them
	 * all.  Two kinds of lines give workers memif links of their own,
	 * one port each, which the agent creates and removes itself:
	 *     link NAME_A NAME_B memif:SOCKET_PATH
	 *         a memif link between A and B, A the memif server (it
	 *         listens on SOCKET_PATH), B the client;
	 *     mesh memif:DIR
	 *         a memif link between every two workers that have no link
	 *         line, on DIR/LOW-HIGH.sock (LOW and HIGH the two names by
	 *         rank; LOW the server).  dprpc_agent_create() makes DIR if
	 *         it is missing (mode 0700; not its parents) and never
	 *         removes it: removing it is the application's.
	 * At most 256 link lines; socket paths under 108 bytes.  A worker
	 * reached through a link needs no default port: an agent all of
	 * whose peers are linked may have neither port_id nor vdev.  Workers
	 * may start in any order: a memif client whose server does not listen
	 * yet connects once it does (the poll loop retries every 50 ms), and
	 * frames for a link that is not up are dropped (counted in
	 * tx_dropped) and resent by their calls.
	 */
	const char *world;
	/**
	 * The port: an ethdev port id of the application's, or -1 to create
	 * one from @ref vdev.  What the agent does to it:
	 *  - @ref vdev (port_id -1): the port is the agent's.  Creation probes
	 *    the vdev, configures one rx and one tx queue (queue 0, 1024
	 *    descriptors, filled from the agent's mbuf pool), enables
	 *    promiscuous mode and starts it; destroy stops, closes and
	 *    removes it.  A memif client vdev whose link is not up 500 ms
	 *    after it started is stopped and started again (the poller's
	 *    timer) until its link first comes up: DPDK 22.11's memif PMD
	 *    turns away for good a client that connects to a server port not
	 *    configured yet.  One that cannot start because no server listens
	 *    on its socket yet does not fail creation: it is started again
	 *    once its socket file exists (every 500 ms for a socket in the
	 *    abstract namespace), and frames for it are dropped meanwhile
	 *    (tx_dropped; calls resend).  So a wrong socket path shows as a
	 *    link that never comes up: dprpc_agent_wait_link() or
	 *    dprpc_world_wait() time out.
	 *  - port_id, port_ready false: the application hands the port over.
	 *    It must be stopped and have at most one rx and one tx queue (as
	 *    rte_eth_dev_info_get() reports them: never configured, or left so
	 *    by an earlier agent); creation configures and starts it as for a
	 *    vdev, destroy stops it and leaves it configured, its rx queue
	 *    still set up on the agent's mbuf pool (set the queues up again
	 *    before starting it yourself).  A started port, or one with more
	 *    queues, is the application's: EBUSY, and the port is untouched.
	 *  - port_id, port_ready true: the port stays the application's,
	 *    configured and started by it.  The agent receives on @ref rx_queue
	 *    and sends on @ref tx_queue only, and never configures, starts,
	 *    stops or closes the port; other queues may serve other parts of
	 *    the application (or other agents).  Creation checks that the port
	 *    is started and has both queues (EINVAL otherwise); a queue set up
	 *    with deferred start is started.
	 * A port_id that names no port is EINVAL.  Every refusal is logged
	 * and leaves the port as it was.
	 */
	int port_id;
	/** A vdev string for rte_dev_probe(), e.g.
	 * "net_memif0,role=server,socket=/tmp/x.sock"; used when port_id < 0.
	 * With neither (port_id -1, vdev NULL) the world map's links must
	 * reach every other worker. */
	const char *vdev;
	/** True if the application configured and started @ref port_id itself
	 * (see there); not with a vdev (EINVAL). */
	bool port_ready;
	/** With port_ready, the queues the agent uses, below the port's
	 * nb_rx_queues and nb_tx_queues; without it, 0 (EINVAL otherwise). */
	uint16_t rx_queue;
	uint16_t tx_queue; /**< see @ref rx_queue */
	/** Mbuf pool for rx and tx; NULL: the agent creates one of nb_mbufs. */
	struct rte_mempool *mbuf_pool;
	unsigned int nb_mbufs; /**< default 8191 */
	int socket_id;	       /**< NUMA socket for memory; default SOCKET_ID_ANY */
	/** EAL lcore that runs the poll loop (way 2), or DPRPC_LCORE_NONE. */
	unsigned int io_lcore;
	/** Without an io lcore: a thread waiting on one of the agent's
	 * futures (dprpc_future_wait(), and the library's own waits: a
	 * collective, a shutdown) polls only while its polls find frames,
	 * or while a message of several frames is in flight (its window
	 * moves only as fast as someone polls), then parks, waking to poll
	 * once per slice (150 us) until its future completes.  Set it when an application thread polls the
	 * agent at all times (a background poller, as the Python package
	 * runs): a long wait then costs no CPU.  Default false: waiters poll
	 * until their future completes (way 3 above). */
	bool waiters_park;
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
	/**
	 * Handlers registered by dprpc_agent_create() before the agent
	 * receives anything (struct dprpc_handler_def, dprpc_rpc.h):
	 * @ref nb_handlers of them; NULL with 0 for none (the default).  An
	 * agent with an io lcore answers requests from the moment create
	 * returns, and its peers may call it as soon as they hear from it (a
	 * world's workers once dprpc_world_wait() returns): a request that
	 * arrives before a dprpc_register() made after create is answered
	 * -ENOENT.  Handlers the world calls at once belong here (PyTorch's
	 * functions exist before init_rpc()).  Each entry is checked as
	 * dprpc_register() checks its arguments; a bad one, a duplicate name
	 * or wire id, or more than @ref max_handlers, fails the creation with
	 * EINVAL, naming the entry in the log.  The array is read during the
	 * call only; the names are copied.
	 */
	const struct dprpc_handler_def *handlers;
	unsigned int nb_handlers; /**< entries of @ref handlers */
	/** Incoming requests being handled at once (inline, queued to the
	 * pool, or deferred); default 1024. */
	unsigned int max_requests;
	/** Retransmission of a call's request until its response comes.
	 * The resend timeout adapts to each peer's round trip as TCP's does
	 * (RFC 6298): the smoothed round trip of single-frame calls answered
	 * without a resend, less the time the server held each (so the path's,
	 * not the server's queue), plus the larger of four times its
	 * variation and the resend timer's 100 us period, so 0.1-0.3 ms on
	 * memif or af_packet.  A server that queues a request behind work,
	 * or gets a copy of one it holds, says so (a HELD frame, with when it
	 * expects to answer), and the resend waits for that instead.  This is
	 * the timeout towards a peer not measured yet (and towards one called
	 * only with multi-frame messages); a call's timeout doubles at each
	 * resend, up to 64 times this; 0 turns retransmission off.  Default
	 * 1000.  The server runs each request at most once whatever arrives
	 * twice, so a resend on a stall of either side costs a duplicate
	 * frame per doubling the stall outlasts, which the server answers
	 * from its kept response, with a HELD, or drops.  The same timer recovers multi-frame
	 * messages in both directions (lost tails, lost resends, lost ACKs;
	 * a gap followed by frames that arrive is NACKed without it): with
	 * 0, such a loss leaves the call to its timeout, or to peer-down. */
	uint32_t retransmit_us;
	/** Liveness: a peer this agent has heard from, or has calls pending
	 * to, gets a keep-alive after keepalive_us of silence (default 100 ms;
	 * 0: none), and is declared down after peer_timeout_us with nothing
	 * heard (default 1 s; 0: never; up to twice that while frames wait
	 * unread in this agent's port queue).  Then every call pending towards it
	 * fails with -EHOSTDOWN and new calls fail at once with EHOSTDOWN
	 * until it is heard from again.  A worker never heard from is not
	 * declared down within the rendezvous window (dprpc_world_wait()). */
	uint32_t keepalive_us;
	uint32_t peer_timeout_us;
	/** Told of peers going down and coming back; may be NULL. */
	dprpc_peer_event_t peer_event;
	void *peer_event_arg;
	/** RRefs: most values owned plus user references held at once by
	 * this agent (each takes a future of a pool made up front); default
	 * 16384. */
	unsigned int max_rrefs;
	/**
	 * Told of every RRef value this agent owns when it is freed (every
	 * reference released, or the agent destroyed): once per value, with
	 * the value as its creating handler replied it (dprpc_remote()) or as
	 * dprpc_rref_create_local() was given it; not for a creation that
	 * failed or never completed.  An application that keeps an object
	 * behind each value (a language binding) frees it here.  Runs on
	 * liburcu's call_rcu thread, or on the thread destroying the agent;
	 * must not block or call into the agent.  @p value is valid during
	 * the call only.  NULL (the default): nobody is told.
	 */
	void (*rref_value_free)(const void *value, size_t len, void *arg);
	void *rref_value_free_arg; /**< passed to rref_value_free */
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
	/**
	 * Budgets of what this agent holds for its callers as a server, so
	 * that no caller, by accident (a large max_outstanding) or on
	 * purpose (forged frames), can exhaust its memory or the mbufs its
	 * reception needs (docs/reliability.md, "Budgets and reclaim").
	 *
	 * Kept responses.  A response is kept until its caller's next request
	 * on the same slot, to answer a resend without running the request
	 * again: one whose payload fits in 248 bytes as a copy (no mbuf), a
	 * larger one by a reference to its mbuf.  @ref kept_mbufs_max bounds
	 * the mbufs so held for all callers (0: a quarter of the mbuf pool;
	 * at most half of it, so that reception, transmission and requests
	 * being handled always find mbufs), @ref kept_mbufs_peer_max those
	 * held for one caller (0: half of kept_mbufs_max; at most
	 * kept_mbufs_max).  A response beyond either is sent all the same but
	 * not kept (counted in keeps_refused): if it is lost, the caller's
	 * resend is answered -ENODATA (the request ran, and is never run
	 * twice).
	 */
	unsigned int kept_mbufs_max;
	unsigned int kept_mbufs_peer_max;
	/**
	 * Message bytes: the DPDK heap held for callers' multi-frame messages,
	 * i.e. requests being reassembled (their whole length, reserved when
	 * their first frame arrives) and responses kept until acknowledged
	 * whole.  @ref msg_bytes_max for all callers (0: 16 times
	 * max_msg_size), @ref msg_bytes_peer_max for one (0: 4 times
	 * max_msg_size, at most msg_bytes_max); max_msg_size <=
	 * msg_bytes_peer_max <= msg_bytes_max, else EINVAL.  A request that
	 * would take its caller, or all callers together, beyond them (a
	 * multi-frame request: by its length; any other: once they are
	 * reached, by responses not yet acknowledged) is not run: the call
	 * fails with -ENOBUFS (counted in drops[DPRPC_DROP_OVER_BUDGET]).
	 *
	 * Reclaim.  When a caller is declared down (peer_timeout_us) its
	 * kept responses and half-received requests are freed; the at-most-once
	 * state of its slots stays: a resend of a request that ran is answered
	 * -ENODATA, one of a request half received -ENOBUFS (it did not run).
	 */
	uint64_t msg_bytes_max;
	uint64_t msg_bytes_peer_max;
	/**
	 * Bounded queues (docs/serving.md).  A request beyond one is not
	 * run: its caller gets -EBUSY at once, with a retry-after hint
	 * (dprpc_error.retry_after_us), instead of waiting for its timeout.
	 *  - @ref handler_queue_max: requests queued to one handler lcore
	 *    (DPRPC_HANDLER_POOL) and not started; 0: 4095, the most;
	 *    counted in rejected_pool.
	 *  - @ref peer_requests_max: requests of one caller held at once
	 *    (queued, running or deferred); 0: max_requests, the most;
	 *    counted in rejected_peer.
	 *  - max_requests bounds them for all callers: a request finding no
	 *    request object is answered -EBUSY too (rejected_requests).
	 *  - @ref inline_wait_max_us: the inline backlog.  An inline handler
	 *    runs on the poller as its request is received, so its queue is
	 *    the port's rx queue.  While the poller's rx bursts come back
	 *    full (frames are left in the queue) and, since the queue was
	 *    last seen empty, the poller has run inline handlers for more than
	 *    this many microseconds (its CPU time since caps it; receiving
	 *    frames, a large request's own among them, does not count), a
	 *    request for an inline handler is answered -EBUSY without running
	 *    its handler (the agent's own internal handlers excepted), with
	 *    that time as its retry-after hint; counted in rejected_inline.
	 *    0: DPRPC_INLINE_WAIT_DEFAULT_US (10000 us);
	 *    DPRPC_INLINE_WAIT_UNBOUNDED: no bound.
	 *  - @ref queue_delay_max_us: the handler pool's queue by time rather
	 *    than count.  A request for a DPRPC_HANDLER_POOL handler whose
	 *    handler lcore has more work queued than this, estimated as the
	 *    requests in its queue times its mean service time (a moving
	 *    average of the time its handlers took), is answered -EBUSY
	 *    without being queued, that estimate as its retry-after hint;
	 *    counted in rejected_delay.  Bounds the queueing delay of the
	 *    requests accepted when handlers are slow (handler_queue_max,
	 *    a count, lets a queue of slow requests grow long).  0 (the
	 *    default): off.
	 *  - @ref service_time_us: how long one DPRPC_HANDLER_POOL request
	 *    is expected to take, if the application knows.  The service
	 *    time above is measured from the first request a handler lcore
	 *    finishes on; before that, a cold pool's retry-after hints, HELD
	 *    answers (a caller's resend timer, docs/serving.md) and
	 *    queue_delay_max_us use this value, or how long the running
	 *    request has run if that is more.  0 (the default): none
	 *    declared; a cold pool then knows only that age, a lower bound.
	 */
	unsigned int handler_queue_max;
	unsigned int peer_requests_max;
	uint32_t inline_wait_max_us;
	uint32_t queue_delay_max_us;
	uint32_t service_time_us;
	/**
	 * The world's capacity: most workers this agent knows, those of the
	 * map and those that join it later (dprpc_world_join()) together.
	 * The state towards every peer is sized for it at creation and never
	 * moves.  0 (the default): DPRPC_MAX_WORKERS.  Out of range (below the
	 * map's workers, above DPRPC_MAX_WORKERS): creation fails EINVAL.  A
	 * worker joining a world that has this many fails -ENOSPC; give every
	 * worker the same value (a member whose capacity is smaller than the
	 * world's never acknowledges the joiner, which then times out).
	 */
	unsigned int max_workers;
	/**
	 * The barrier of a graceful dprpc_shutdown() (dprpc_collective.h):
	 * false (the default), the whole world but the workers that left it,
	 * so that a worker declared down fails it at once with -EHOSTDOWN,
	 * naming it; true, the live world (DPRPC_WORLD_LIVE): the workers
	 * declared down are left out and the barrier passes among the others.
	 */
	bool shutdown_live;
};

/**
 * Fill a configuration with defaults: no name, no world, port_id -1, no
 * vdev, no io lcore, no handler lcores, and the defaults listed above.
 * A NULL @p conf is ignored.
 */
void dprpc_agent_conf_init(struct dprpc_agent_conf *conf);

/**
 * Create an agent: parse the world, create or take the port, configure and
 * start it (unless port_ready: see dprpc_agent_conf.port_id), create pools
 * and rings, register dprpc_agent_conf.handlers, and launch the io lcore
 * and handler lcores if configured.
 *
 * @return the agent, or NULL with rte_errno set: EINVAL (bad configuration
 *         or world map, a bad entry of conf.handlers, a port_id that names no port, port_ready queues the
 *         port lacks or a port_ready port not started, a worker reached by
 *         no port; the reason is logged), ENOENT (name not in the world, a vdev that gave no
 *         port, or a mesh directory whose parent is missing), ENOTDIR (the
 *         mesh directory's path is a file), EACCES (no permission to make
 *         the mesh directory or to make sockets in it), EEXIST (an agent of that name exists in this process),
 *         ENOSPC (64 agents exist in this process, the most it holds),
 *         EBUSY (an lcore is not available, or a port given without
 *         port_ready is started or has several queues), ENOMEM, or the
 *         errno of a failing ethdev call.
 *
 * Thread context: any thread after rte_eal_init(); not concurrently with
 * dprpc_agent_destroy() of the same name.
 * Ownership: the caller owns the agent until dprpc_agent_destroy(); an
 * application's mempool, and its port given with port_ready, stay the
 * application's (a port handed over without port_ready is configured,
 * started and stopped by the agent: dprpc_agent_conf.port_id).
 */
struct dprpc_agent *dprpc_agent_create(const struct dprpc_agent_conf *conf);

/**
 * Destroy an agent: stop its lcores, fail every pending call with
 * -ESHUTDOWN, answer -ESHUTDOWN the requests that wait for an RRef value
 * this agent owns (failing those values), release unanswered the requests
 * still queued to its handler lcores, stop the port if it configured it
 * (and close and remove it if it probed the vdev; a port_ready port is left
 * as it is), free its pools and rings.
 *
 * Before its memif links close (a link of the world map, or a memif
 * default port reaching one worker), it tells the worker at the other end
 * of each that is up (a CLOSE) and waits, polling those links itself, for
 * its answer, at most 50 ms (the whole wait, see below: at most about
 * 150 ms): that worker then polls the link no more
 * (its links_closed), and DPDK 22.11's memif PMD cannot unmap the rings
 * under its rx_burst when the link goes down, which killed such a worker
 * with SIGSEGV.  Nothing else changes for that worker: this one is not
 * taken to have left the world (dprpc_world_leave() does that), and is
 * declared down when its peer timeout passes (but its own leave no longer
 * waits for this one).  A worker that does not poll meanwhile costs the
 * 50 ms.  Frames other than the answers that arrive meanwhile are
 * dropped: the agent is going.  The other way round, a link on which this
 * agent answered the other worker's LEAVE (dprpc_world_leave()) or CLOSE
 * (its agent destroyed) is closed only once that worker closed its end,
 * or 100 ms after the answer: it may still be reading the answer.  So an
 * agent waits for the destroys of the workers whose goodbye it answered
 * (the one of two destroyed at once over a link whose rank is the lower
 * waits for the other's close); one destroyed while a worker that left
 * the world keeps its agent alive waits up to those 100 ms, and so does
 * one destroyed on the EAL interrupt thread (an alarm callback), where the
 * other end's close cannot be seen before it returns.
 *
 * It decides first: while the application keeps a deferred request
 * unanswered, it returns -EBUSY and leaves the agent as it was: pending
 * calls and RRef values stay pending (a value whose creating request is
 * deferred can still be completed and read), queued requests stay queued,
 * and the lcores run again (they are stopped only while it counts).  Reply
 * to those requests and retry.  Should an lcore fail to restart
 * (rte_eal_remote_launch() refused: something else was launched on it in
 * between), that is logged, -EBUSY is still returned, and the agent goes
 * on without that lcore: without its io lcore, waiting threads or the
 * application poll it (as with no io lcore); requests queued to a handler
 * lcore that does not run wait there until a later destroy releases them.
 *
 * @return 0; -EBUSY (deferred requests unanswered, see above); -EINVAL on
 *         NULL.
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
 * Wait until the links of all the agent's ports are up (memif peers
 * connected), polling the agent meanwhile.
 * @param timeout_us 0 waits without limit.
 * @return 0, or -ETIMEDOUT.
 * Thread context: any thread that may poll the agent.
 */
int dprpc_agent_wait_link(struct dprpc_agent *agent, uint64_t timeout_us);

/*
 * Accessors.  They read what was fixed at creation: any thread, no
 * ordering needed; returned strings are owned by the agent and live as long
 * as it does.  Given a NULL agent, each returns the value its comment names
 * and sets rte_errno to EINVAL.
 */

/** This agent's rank (UINT_MAX for a NULL agent). */
unsigned int dprpc_agent_rank(const struct dprpc_agent *agent);
/** This agent's name (owned by the agent; NULL for a NULL agent). */
const char *dprpc_agent_name(const struct dprpc_agent *agent);
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
 * restarted) is UP again when heard from.  Its peer_event is not called:
 * nothing went down.  Call it once the worker's work is done (its own calls
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
 * member (each calls its peer_event, DPRPC_PEER_JOINED) and, once all have
 * acknowledged, has the member answer with the rank and every worker.
 * Then it waits until it has heard from every member (the rendezvous of
 * dprpc_world_wait(), within the same @p timeout_us).  When it returns 0
 * this agent has its rank (dprpc_agent_rank()), the world its size
 * (dprpc_world_size(), dprpc_get_worker_infos()), and calls go both ways
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
 * its rank (dprpc_rpc_async_id()).
 */
struct dprpc_worker_info {
	char name[DPRPC_NAME_MAX]; /**< its name in the world map */
	unsigned int rank;	   /**< its rank (PyTorch's id) */
	uint8_t mac[6];		   /**< its MAC address */
	uint32_t ipv4;		   /**< its IPv4 address, network byte order */
	uint16_t udp_port;	   /**< its UDP port, host byte order */
	uint16_t port_id;	   /**< the ethdev port this agent reaches it through
				        (its default port for itself) */
	int state;		   /**< enum dprpc_peer_state, as dprpc_worker_state() */
};

/**
 * Describe a worker of the agent's world by name, or the agent itself.
 * @param name the worker's name; NULL for the agent's own worker.
 * @param info filled on success.
 * @return 0; -EINVAL (NULL @p agent or @p info); -ENOENT (no worker of
 *         that name, or a NULL @p name on an agent that has not joined its
 *         world yet, dprpc_world_join()).
 * Thread context: any.  A worker's name, rank and addresses never change
 * once it is in the world (the map's at creation, a joiner's from its
 * join on: the world's size grows, dprpc_world_size()); the state is a
 * relaxed snapshot.
 */
int dprpc_get_worker_info(
	const struct dprpc_agent *agent, const char *name, struct dprpc_worker_info *info);

/**
 * Describe every worker of the agent's world, by rank.
 * @param infos filled for ranks 0 to min(@p cap, world size) - 1; may be
 *        NULL with @p cap 0, to learn the world size.
 * @return the world size (which may exceed @p cap: only @p cap entries
 *         are filled); -EINVAL (NULL @p agent, or NULL @p infos with a
 *         non-zero @p cap).
 * Thread context: any, as dprpc_get_worker_info().
 */
int dprpc_get_worker_infos(
	const struct dprpc_agent *agent, struct dprpc_worker_info *infos, unsigned int cap);

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
int dprpc_worker_rtt(
	const struct dprpc_agent *agent, unsigned int rank, struct dprpc_worker_rtt *rtt);

/** The ethdev port the agent uses (the application's if it gave one): its
 * default port, or with none its first memif link's (the port reaching
 * each worker: dprpc_get_worker_info()); UINT16_MAX, rte_errno EINVAL, for
 * a NULL agent. */
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
	DPRPC_DROP_STALE,	  /**< response to no pending call (late, duplicate),
				       or an answer to a CANCEL already answered */
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
	/** Addressed to another incarnation of this worker: a previous one,
	 * or none (its sender never heard from it).  A request so addressed
	 * is never run (docs/reliability.md). */
	DPRPC_DROP_WRONG_INCARNATION,
	DPRPC_DROP_OVER_BUDGET, /**< a request not run because its caller (or
				       all callers) hold their message budget
				       (dprpc_agent_conf.msg_bytes_max): answered
				       -ENOBUFS */
	DPRPC_DROP_MAX
};

/** A short name for a drop reason, e.g. "truncated" ("unknown" for a value
 * out of range); a static string.  Thread context: any. */
const char *dprpc_drop_reason_str(enum dprpc_drop_reason reason);

/**
 * Counters of an agent.  Each is written by the polling thread (except
 * reply_nombuf and the handler contract's, written by whichever thread
 * sees the event) and may be read at any time; a snapshot is not atomic
 * as a whole.
 */
struct dprpc_agent_stats {
	uint64_t rx_frames;	   /**< frames received from the port */
	uint64_t tx_frames;	   /**< frames handed to the port */
	uint64_t tx_retries;	   /**< tx bursts that left frames for later */
	uint64_t tx_dropped;	   /**< frames dropped because the port pushed back
				        and the tx ring was full as well, or
				        because the memif link to their
				        destination was not up (docs/worlds.md) */
	uint64_t tx_discarded;	   /**< frames queued for a peer and not sent: their
				        call failed (the peer went down or
				        restarted) or the peer's incarnation they
				        were addressed to is gone */
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
	uint64_t keepalives;	   /**< pings sent: keep-alives, to learn the
				        incarnation of a peer calls wait for, and
				        the rendezvous's (dprpc_world_wait()) */
	uint64_t peers_down;	   /**< times a peer was declared down */
	uint64_t peers_restarted;  /**< times a peer was seen to have restarted */
	uint64_t peers_left;	   /**< times a peer left the world gracefully
				        (dprpc_world_leave()) */
	uint64_t links_closed;	   /**< memif links whose worker said it closes
				        them (its agent destroyed without a
				        leave): answered, polled no more */
	uint64_t msgs_sent;	   /**< multi-frame messages started (requests and
				        responses) */
	uint64_t msgs_received;	   /**< multi-frame messages reassembled whole */
	uint64_t frames_resent;	   /**< frames of multi-frame messages sent again
				        (lost, or their acknowledgement was) */
	uint64_t acks_sent;	   /**< acknowledgements (credit returns) sent */
	uint64_t credits_cut;	   /**< acknowledgements granting a reduced window
				        because this agent's mbuf pool ran low */
	uint64_t keeps_refused;	   /**< responses sent but not kept for resends:
				        the keep budget (kept_mbufs_max,
				        kept_mbufs_peer_max) was full or the
				        caller down; a resend is answered
				        -ENODATA */
	uint64_t reclaimed_mbufs;  /**< kept responses freed because their caller
				        was declared down */
	uint64_t reclaimed_msgs;   /**< multi-frame messages freed because their
				        caller was declared down: requests half
				        received, responses not acknowledged */
	uint64_t dropped;	   /**< sum of drops[] */
	uint64_t drops[DPRPC_DROP_MAX];
	/** Injected faults (dprpc_fault_conf), transmit and receive together. */
	uint64_t fault_dropped, fault_duplicated, fault_reordered, fault_delayed;
	/** The handler contract broken (dprpc_handler_t in dprpc_rpc.h), once
	 * per event; the caller got exactly one answer each time. */
	uint64_t reply_again;		    /**< dprpc_reply() or dprpc_reply_error() on a
					         request already answered: -EALREADY,
					         nothing sent */
	uint64_t handler_unanswered;	    /**< handlers that returned 0 without replying
					         or deferring: the caller got -EPROTO */
	uint64_t handler_error_after_reply; /**< handlers that returned a negative errno
					         after replying: nothing more sent */
	uint64_t handler_bad_return;	    /**< handlers that returned a positive value
					         other than DPRPC_DEFERRED: the caller
					         got -EPROTO, unless they had replied */
	uint64_t handler_misuse;	    /**< sum of the four above */
	/** Serving under load (docs/serving.md). */
	uint64_t requests_expired;   /**< requests not run: their caller's deadline
				          passed while they waited (queued to a
				          handler lcore, reassembled, or held for an
				          RRef value); the caller got -ETIME */
	uint64_t requests_cancelled; /**< requests not run: their caller cancelled
				          them, or was declared down or restarted,
				          while they were queued or half received */
	uint64_t cancels_received;   /**< requests of this agent's callers
				          cancelled (queued, running, deferred, half
				          received, or not received yet), each once
				          however often its CANCEL came */
	uint64_t calls_cancelled;    /**< this agent's calls cancelled by
				          dprpc_future_cancel() (in calls_failed) */
	uint64_t rejected_pool;	     /**< requests answered -EBUSY: their handler
				          lcore's queue was full (handler_queue_max) */
	uint64_t rejected_peer;	     /**< requests answered -EBUSY: their caller held
				          peer_requests_max requests already */
	uint64_t rejected_requests;  /**< requests answered -EBUSY: no request object
				          was free (max_requests) */
	uint64_t rejected_inline;    /**< requests answered -EBUSY: their inline
				          handler's backlog was older than
				          inline_wait_max_us */
	uint64_t rejected_overload;  /**< sum of the six: the four above,
				          rejected_handler and rejected_delay
				          (below) */
	uint64_t queue_depth;	     /**< gauge: requests queued to the handler
				          lcores now, not started */
	uint64_t requests_held;	     /**< gauge: request objects in use now (queued,
				          running or deferred) */
	/* Server streaming (dprpc_stream.h, docs/serving.md). */
	uint64_t stream_chunks_sent;	 /**< chunks dprpc_stream_send() handed on */
	uint64_t stream_window_full;	 /**< dprpc_stream_send() calls refused
					      -EAGAIN: the caller's window was full */
	uint64_t stream_frames_resent;	 /**< stream frames sent again (a NACK or a
					      probe from the caller) */
	uint64_t stream_chunks_received; /**< chunks of this agent's streams
					      delivered in order (callback or
					      iterator queue) */
	uint64_t rejected_handler;	 /**< requests a handler answered -EBUSY
					      with dprpc_reply_busy() (in
					      rejected_overload) */
	uint64_t rejected_delay;	 /**< requests answered -EBUSY: the work
					      queued to their handler lcore was
					      estimated beyond queue_delay_max_us */
	uint64_t cancels_resent;	 /**< CANCELs of this agent's calls sent
					      again: unanswered after a resend
					      timeout (docs/serving.md) */
	uint64_t holds_sent;		 /**< HELD answers sent: a request queued
					      behind work, or a copy of one held
					      (docs/reliability.md) */
	uint64_t holds_received;	 /**< HELD answers to this agent's calls
					      (their resends put off; late ones,
					      for calls ended since, included) */
};

/**
 * Read the counters.
 * @return 0, or -EINVAL on NULL.
 * Thread context: any thread.  Memory order: relaxed per counter.
 */
int dprpc_agent_stats_get(const struct dprpc_agent *agent, struct dprpc_agent_stats *stats);

/**
 * Print the agent's state and counters for debugging.  Prints nothing when
 * @p agent or @p f is NULL.
 * Thread context: any thread.
 */
void dprpc_agent_dump(const struct dprpc_agent *agent, FILE *f);

/**
 * Resource counts, for leak checks in tests and tools: objects currently
 * taken from the agent's pools.
 */
struct dprpc_agent_usage {
	unsigned int futures;	 /**< futures not yet returned to the pool */
	unsigned int requests;	 /**< incoming request objects in use */
	unsigned int mbufs;	 /**< mbufs of the agent-created pool in use
				      (0 if the pool is the application's) */
	unsigned int calls;	 /**< calls in flight, all peers */
	unsigned int messages;	 /**< multi-frame messages being sent (until
				      acknowledged whole) or reassembled */
	unsigned int kept_mbufs; /**< mbufs held as kept responses, all callers
				      (at most kept_mbufs_max) */
	uint64_t msg_bytes;	 /**< bytes of callers' multi-frame messages held
				      (requests being reassembled, responses
				      not yet acknowledged whole; see
				      msg_bytes_max) */
};

/**
 * Read the resource counts.
 * @return 0, or -EINVAL.
 * Thread context: any thread; exact only when the agent is quiescent.
 */
int dprpc_agent_usage(const struct dprpc_agent *agent, struct dprpc_agent_usage *usage);

/**
 * Convenience EAL initialisation for applications, tools and examples:
 * rte_eal_init() with the given arguments, tolerating an EAL that is
 * already up (then nothing is done).
 *
 * Quiet by default: EAL starts with three log types below their own
 * defaults, whose messages at those defaults are about normal events of
 * a run without a NIC (docs/launch.md lists them): lib.eal and
 * lib.telemetry at error, pmd.net.memif at critical (that PMD logs a
 * probe under --no-shconf and a client started before its server as
 * errors; the agent logs a memif port's real failures itself).  They are
 * given as --log-level options before @p argv's, so a --log-level of the
 * application's (lib.eal:info, 'pmd.*:debug') wins; one that sets the
 * global level (--log-level=debug, no type) drops them all.
 *
 * @p argv is left as rte_eal_init() leaves it (the program name before
 * the first argument not consumed): skip the returned count, as with
 * rte_eal_init().
 *
 * @return the number of arguments consumed (as rte_eal_init()), 0 if EAL
 *         was already initialised, -EINVAL if @p argc is below 1 or
 *         @p argv (or argv[0]) is NULL, -ENOMEM, or rte_eal_init()'s
 *         negative errno.
 * Thread context: the main thread, once, before any other call.
 * Ownership: @p argv stays the caller's.
 */
int dprpc_eal_init(int argc, char **argv);

/** Default of dprpc_eal_local_conf.mem_mb. */
#define DPRPC_EAL_LOCAL_MEM_DEFAULT_MB 256u

/**
 * What dprpc_eal_init_local() gives EAL.  Fill it with
 * dprpc_eal_local_conf_init() and change what you need.
 */
struct dprpc_eal_local_conf {
	/** Names the process's EAL files: --file-prefix dprpc-PID-TAG, or
	 * dprpc-PID for NULL (the default).  Up to 32 of [A-Za-z0-9_.-]. */
	const char *tag;
	/** EAL's memory (-m), in MB; 0 (the default):
	 * DPRPC_EAL_LOCAL_MEM_DEFAULT_MB. */
	unsigned int mem_mb;
	/** EAL lcores: 0 (the default) or 2: lcores 0 and 1, lcore 1 free
	 * for an agent's io lcore (dprpc_agent_conf.io_lcore); 1: lcore 0
	 * only.  Each floats over every CPU of the process's affinity (EAL
	 * pins no thread of the application).  At most 2. */
	unsigned int lcores;
	/**
	 * More EAL arguments, separated by spaces (NULL: none), e.g.
	 * "--vdev net_memif0,role=server,socket=/tmp/s.sock".  They come
	 * after the set's: a --log-level here wins over the set's levels, and
	 * an -m or --socket-mem, a --file-prefix, or an -l, -c or --lcores
	 * here replaces the set's own.  At most 48 arguments, 1023 bytes.
	 */
	const char *args;
};

/**
 * Fill @p conf with the defaults: no tag, DPRPC_EAL_LOCAL_MEM_DEFAULT_MB,
 * two lcores, no more arguments.  A NULL @p conf is ignored.  Any thread.
 */
void dprpc_eal_local_conf_init(struct dprpc_eal_local_conf *conf);

/**
 * EAL for a machine without a NIC or hugepages, one process among others
 * (the set dprpc_launch() uses): dprpc_eal_init() (quiet by default) with
 *     --no-pci --no-huge -m MEM_MB --huge-unlink=never --no-shconf
 *     --no-telemetry --file-prefix dprpc-PID[-TAG]
 *     --lcores 0@(CPUS)[,1@(CPUS)]
 * then @p conf's args.  CPUS are the CPUs of the process's affinity.  The
 * file prefix is the process's own, so several such processes run side
 * by side; dprpc_eal_cleanup() removes its runtime directory.  Devices
 * come from a vdev (dprpc_agent_conf.vdev, or --vdev in args) or the
 * world map's memif links: "w0 0; w1 1; mesh memif:/tmp/w" needs no more.
 *
 * @param conf  the set (dprpc_eal_local_conf_init()); NULL: the defaults.
 *              Read during the call only.
 * @return 0 (EAL up: now, or already, in which case nothing is done);
 *         -EINVAL (a tag that is too long or has other characters, lcores
 *         above 2, args too long or too many, or arguments EAL refuses);
 *         or rte_eal_init()'s other negative errno.
 * Thread context: the main thread, once, before any other call (as
 * dprpc_eal_init()).
 */
int dprpc_eal_init_local(const struct dprpc_eal_local_conf *conf);

/**
 * Convenience EAL teardown for tools, tests and examples that run with a
 * private --file-prefix: rte_eal_cleanup(), then remove the files of EAL's
 * runtime directory (/var/run/dpdk/PREFIX: sockets, configuration) and the
 * directory, which EAL leaves behind even with --no-shconf.  Not for a
 * multi-process primary whose secondaries still use that directory.
 *
 * Before rte_eal_cleanup() it waits (two rounds of the EAL interrupt
 * thread, microseconds when that thread has a CPU) until the interrupt
 * thread has rebuilt its epoll set after the last memif port closed: the
 * memif PMD of DPDK 22.11 leaves sources registered whose handles it
 * freed in the EAL heap, and a rebuild that runs after rte_eal_cleanup()
 * unmapped the heap kills the process (SIGSEGV in rte_intr_fd_get()).  An
 * application that calls rte_eal_cleanup() itself after destroying agents
 * with memif links should call this instead, or wait the same way.
 *
 * With --no-huge, give EAL --huge-unlink=never: otherwise DPDK 22.11's
 * rte_eal_cleanup() walks every 4 KiB segment of -m to mark it freeable
 * for hugepage files that --no-huge does not have (3.9 ms of CPU at
 * -m 256 on the 2-CPU development machine, 1.0 ms with it).  The
 * library's tools, tests and demo do.
 *
 * @return 0; -EALREADY if EAL is not up (never initialised, or cleaned
 *         up already); or rte_eal_cleanup()'s negative errno (the
 *         directory is removed all the same).
 * Thread context: the main thread, last; no DPDK call may follow.
 */
int dprpc_eal_cleanup(void);

#ifdef __cplusplus
}
#endif

#endif /* DPRPC_AGENT_H */
