/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * An agent's configuration (dprpc_agent_create(), dprpc_agent.h).
 */
#ifndef DPRPC_CONF_H
#define DPRPC_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dprpc/dprpc_world.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rte_mempool;

/** Most handler lcores in one agent's pool. */
#define DPRPC_MAX_HANDLER_LCORES 16
/** "No lcore" for dprpc_lcore_conf.io. */
#define DPRPC_LCORE_NONE UINT32_MAX
/** dprpc_serve_conf.inline_wait_max_us: no bound on the inline backlog. */
#define DPRPC_INLINE_WAIT_UNBOUNDED UINT32_MAX
/** Default of dprpc_serve_conf.inline_wait_max_us: 10 ms, so that
 * a burst of a thousand or two short calls is not refused; a tighter bound
 * is the application's to set. */
#define DPRPC_INLINE_WAIT_DEFAULT_US 10000u
/** Largest payload of a request or response carried in one frame. */
#define DPRPC_MAX_FRAME_PAYLOAD 1400
/** Default of dprpc_call_conf.max_msg_size: 8 MiB. */
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

/** A budget of dprpc_budget_conf, or dprpc_serve_conf.peer_requests_max,
 * derived at creation from other fields (each field says from which):
 * what dprpc_agent_conf_init() writes there. */
#define DPRPC_CONF_AUTO 0

/**
 * Told of every RRef value this agent owns when it is freed
 * (dprpc_rref_conf.value_free): @p value as its creating handler replied
 * it, valid during the call only; @p arg the value_free_arg.
 */
typedef void (*dprpc_rref_free_fn_t)(const void *value, size_t len, void *arg);

/**
 * The agent's default port: the one that reaches every worker no memif
 * link of the world map reaches (dprpc_agent_conf.world).
 */
/** Which frames get a UDP checksum (dprpc_port_conf.udp_checksum): filled
 * by the port where it offers to (RTE_ETH_TX_OFFLOAD_UDP_CKSUM), else in
 * software. */
enum dprpc_udp_csum {
	DPRPC_UDP_CSUM_OFF = 0, /**< none: 0, as IPv4 allows */
	DPRPC_UDP_CSUM_ON,	/**< every frame on the default port */
	/** Those on a default port with a wire under it: not a memif or a
	 * net_ring port, whose frames only cross memory. */
	DPRPC_UDP_CSUM_WIRE,
};

struct dprpc_port_conf {
	/**
	 * The port: an ethdev port id of the application's, or -1 (the
	 * default) to create one from @ref vdev.  What the agent does to it:
	 *  - @ref vdev (id -1): the port is the agent's.  Creation probes
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
	 *  - id, ready false: the application hands the port over.
	 *    It must be stopped and have at most one rx and one tx queue (as
	 *    rte_eth_dev_info_get() reports them: never configured, or left so
	 *    by an earlier agent); creation configures and starts it as for a
	 *    vdev, destroy stops it and leaves it configured, its rx queue
	 *    still set up on the agent's mbuf pool (set the queues up again
	 *    before starting it yourself).  A started port, or one with more
	 *    queues, is the application's: EBUSY, and the port is untouched.
	 *  - id, ready true: the port stays the application's,
	 *    configured and started by it.  The agent receives on @ref rx_queue
	 *    and sends on @ref tx_queue only, and never configures, starts,
	 *    stops or closes the port; other queues may serve other parts of
	 *    the application (or other agents).  Creation checks that the port
	 *    is started and has both queues (EINVAL otherwise); a queue set up
	 *    with deferred start is started.
	 * An id that names no port is EINVAL.  Every refusal is logged
	 * and leaves the port as it was.
	 */
	int id;
	/** A vdev string for rte_dev_probe(), e.g.
	 * "net_memif0,role=server,socket=/tmp/x.sock"; used when id < 0.
	 * With neither (id -1, vdev NULL) the world map's links must
	 * reach every other worker. */
	const char *vdev;
	/** True if the application configured and started @ref id itself
	 * (see there); not with a vdev (EINVAL). */
	bool ready;
	/** With ready, the queues the agent uses, below the port's
	 * nb_rx_queues and nb_tx_queues; without it, 0 (EINVAL otherwise). */
	uint16_t rx_queue;
	uint16_t tx_queue; /**< see @ref rx_queue */
	/** Mbuf pool for rx and tx; NULL: the agent creates one of nb_mbufs. */
	struct rte_mempool *mbuf_pool;
	unsigned int nb_mbufs; /**< default 8191; at least 1024 */
	int socket_id;	       /**< NUMA socket for memory; default SOCKET_ID_ANY */
	/* IPv4 on the default port (docs/wire.md, "IPv4 as a host"). */
	/** This worker's subnet prefix length, 1..32, for peers the map
	 * gives no MAC; 0 (the default): that of the map's "subnet" line
	 * holding its address, or none (every peer is on its link). */
	unsigned int ipv4_prefix_len;
	/** The gateway to peers off its subnet, a dotted quad inside the
	 * subnet; NULL (the default): the map's "subnet" line's, or none.
	 * Read at creation: the caller may free it then. */
	const char *gateway;
	/** IPv4 TTL of what it sends, 1..255; default 64. */
	unsigned int ttl;
	/** UDP checksums of the frames it sends on the default port (enum
	 * dprpc_udp_csum; default DPRPC_UDP_CSUM_WIRE).  Received frames'
	 * are checked whenever they are not 0, whatever this says. */
	unsigned int udp_checksum;
	/** How long a MAC found by ARP is used before it is asked for again
	 * (while in use), ms; default 30000; 0: never. */
	unsigned int arp_reachable_ms;
	/** How long an ARP request waits for its answer, ms, 1..10000,
	 * doubling per request unanswered up to 64 times; default 10. */
	unsigned int arp_retry_ms;
};

/** Which threads run the agent (dprpc_agent.h: the three ways). */
struct dprpc_lcore_conf {
	/** EAL lcore that runs the poll loop (way 2), or DPRPC_LCORE_NONE (the
	 * default). */
	unsigned int io;
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
	 * DPRPC_HANDLER_POOL mode run there): @ref nb_pool of them, 0 (the
	 * default) to DPRPC_MAX_HANDLER_LCORES. */
	unsigned int nb_pool;
	unsigned int pool[DPRPC_MAX_HANDLER_LCORES];
	/** Idle back-off: empty polls before pausing, before yielding and
	 * before sleeping; and the sleep.  Defaults 256, 4096, 32768, 50 us. */
	unsigned int idle_pause_polls;
	unsigned int idle_yield_polls;
	unsigned int idle_sleep_polls;
	unsigned int idle_sleep_us;
};

/** This agent's calls. */
struct dprpc_call_conf {
	/** Most calls in flight towards one peer (session slots); default 64,
	 * at most 65535.  Peers need not agree on it: a worker keeps the
	 * at-most-once state of as many slots as each caller uses, starting
	 * with this many per peer and growing (to the next power of two)
	 * when a caller with a larger max_outstanding uses more. */
	unsigned int max_outstanding;
	/** Timeout of calls given DPRPC_TIMEOUT_DEFAULT (dprpc_rpc_timeout_set()
	 * changes it at run time), in microseconds;
	 * 0 means none, and so does one too long for the TSC to reach;
	 * DPRPC_TIMEOUT_DEFAULT is a call's, refused here.  Default 60 s
	 * (PyTorch's default). */
	uint64_t timeout_us;
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

/** Liveness of the peers (docs/reliability.md). */
struct dprpc_liveness_conf {
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
	/** Told of the peers' events (enum dprpc_peer_event); may be NULL. */
	dprpc_peer_event_fn_t peer_event;
	void *peer_event_arg;
	/**
	 * The barrier of a graceful dprpc_shutdown() (dprpc_collective.h):
	 * false (the default), the whole world but the workers that left it,
	 * so that a worker declared down fails it at once with -EHOSTDOWN,
	 * naming it; true, the live world (DPRPC_WORLD_LIVE): the workers
	 * declared down are left out and the barrier passes among the others.
	 */
	bool shutdown_live;
};

/** Handlers and the bounds on what waits for them (docs/serving.md). */
struct dprpc_serve_conf {
	/**
	 * Handlers registered by dprpc_agent_create() before the agent
	 * receives anything (struct dprpc_handler_def, dprpc_handler.h):
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
	/** Most handlers registered; default 256, at most 1048576. */
	unsigned int max_handlers;
	/** Incoming requests being handled at once (inline, queued to the
	 * pool, or deferred); default 1024. */
	unsigned int max_requests;
	/**
	 * Bounded queues (docs/serving.md).  A request beyond one is not
	 * run: its caller gets -EBUSY at once, with a retry-after hint
	 * (dprpc_error.retry_after_us), instead of waiting for its timeout.
	 *  - @ref handler_queue_max: requests queued to one handler lcore
	 *    (DPRPC_HANDLER_POOL) and not started; default 4095, the
	 *    most;
	 *    counted in rejected_pool.
	 *  - @ref peer_requests_max: requests of one caller held at once
	 *    (queued, running or deferred); DPRPC_CONF_AUTO:
	 *    max_requests, the most;
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
	 *    Default DPRPC_INLINE_WAIT_DEFAULT_US (10000 us);
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
};

/** What this agent holds for its callers as a server. */
struct dprpc_budget_conf {
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
	 * the mbufs so held for all callers (DPRPC_CONF_AUTO: a quarter of the mbuf pool;
	 * at most half of it, so that reception, transmission and requests
	 * being handled always find mbufs), @ref kept_mbufs_peer_max those
	 * held for one caller (DPRPC_CONF_AUTO: half of kept_mbufs_max; at most
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
	 * whole.  @ref msg_bytes_max for all callers (DPRPC_CONF_AUTO: 16 times
	 * max_msg_size), @ref msg_bytes_peer_max for one (DPRPC_CONF_AUTO: 4 times
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
};

/** RRefs (dprpc_rref.h). */
struct dprpc_rref_conf {
	/** Most RRef values owned plus user references held at once by
	 * this agent (each takes a future of a pool made up front); default
	 * 16384, at most 16777216. */
	unsigned int max;
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
	dprpc_rref_free_fn_t value_free;
	void *value_free_arg; /**< passed to value_free */
};

/** Faults injected on transmit and on receive; off by default. */
struct dprpc_faults_conf {
	struct dprpc_fault_conf tx;
	struct dprpc_fault_conf rx;
};

/** What a world's tags cover (dprpc_auth_conf.mode). */
enum dprpc_auth_mode {
	DPRPC_AUTH_OFF = 0, /**< no tags, even with a key */
	/** Every frame's dprpc header: who sent it, to whom (ranks and
	 * incarnations, whose addresses the parser checks), and what it
	 * asks (the default). */
	DPRPC_AUTH_HEADER,
	DPRPC_AUTH_PAYLOAD, /**< that and the payload */
};

/**
 * A world that refuses everyone else (docs/security.md).  With a key, every
 * frame carries a tag, a keyed MAC made with it (SipHash-2-4 over the header,
 * with UMAC-64 of the payload where covered), and a frame
 * whose tag is wrong is dropped (auth_failed) before it touches anything;
 * every frame from a member also passes a replay window (a joiner's JOIN
 * proves itself by a challenge instead).  Every worker of the world,
 * joiners included, must have the same key, world id and mode.  Without a
 * key, an agent whose default port has a wire under it logs a warning at
 * creation: any station on its segment can then speak for its world's
 * workers.  Nothing is encrypted.
 */
struct dprpc_auth_conf {
	/** The world key, @ref key_len bytes, at least 16 (32 random bytes,
	 * say); NULL (the default): none, or @ref key_file.  Copied out at
	 * creation: the caller may free it then. */
	const void *key;
	size_t key_len; /**< see @ref key */
	/** A file whose bytes (16 to 4096) are the world key; NULL: none.
	 * Read once at creation.  Not with @ref key (EINVAL). */
	const char *key_file;
	/** The world id every frame carries (a frame of another world is
	 * dropped, other_world); 0 (the default): the key's (made from it),
	 * or 0 without a key or with DPRPC_AUTH_OFF. */
	uint32_t world_id;
	/** enum dprpc_auth_mode; default DPRPC_AUTH_HEADER.  Matters only
	 * with a key. */
	unsigned int mode;
};

struct dprpc_handler_def; /* dprpc_handler.h */

/**
 * Agent configuration.  dprpc_agent_conf_init() writes every default
 * (the only place defaults come from); change what you need.  Every
 * value is taken as it is: 0 means 0 (none, off, no limit where a field
 * says so), except where a field takes DPRPC_CONF_AUTO.  A value out of
 * range fails dprpc_agent_create() with EINVAL, the log naming the field
 * and its range.  The strings are copied by dprpc_agent_create().
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
	 * is reached through the agent's one port (port.id or port.vdev):
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
	 * whose peers are linked may have neither port.id nor port.vdev.  Workers
	 * may start in any order: a memif client whose server does not listen
	 * yet connects once it does (the poll loop retries every 50 ms), and
	 * frames for a link that is not up are dropped (counted in
	 * tx_dropped) and resent by their calls.
	 */
	const char *world;
	/**
	 * The world's capacity: most workers this agent knows, those of the
	 * map and those that join it later (dprpc_world_join()) together.
	 * The state towards every peer is sized for it at creation and never
	 * moves.  Default DPRPC_MAX_WORKERS.  Out of range (below the
	 * map's workers, above DPRPC_MAX_WORKERS): creation fails EINVAL.  A
	 * worker joining a world that has this many fails -ENOSPC; give every
	 * worker the same value (a member whose capacity is smaller than the
	 * world's never acknowledges the joiner, which then times out).
	 */
	unsigned int max_workers;
	struct dprpc_port_conf port;	     /**< the default port */
	struct dprpc_lcore_conf lcores;	     /**< the io and handler lcores */
	struct dprpc_call_conf calls;	     /**< this agent's calls */
	struct dprpc_liveness_conf liveness; /**< the peers' liveness */
	struct dprpc_serve_conf serve;	     /**< handlers and their queues */
	struct dprpc_budget_conf budgets;    /**< what a server holds */
	struct dprpc_rref_conf rrefs;	     /**< RRefs */
	struct dprpc_faults_conf faults;     /**< fault injection */
	struct dprpc_auth_conf auth;	     /**< the world key */
};

/**
 * Fill a configuration with every default: no name, no world, the
 * default port from no vdev (id -1), no io lcore, no handler lcores, and
 * the defaults each field lists.  A NULL @p conf is ignored.
 */
void dprpc_agent_conf_init(struct dprpc_agent_conf *conf);

#ifdef __cplusplus
}
#endif

#endif /* DPRPC_CONF_H */
