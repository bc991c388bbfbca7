/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Agents: one dprpc worker each (docs/architecture.md in the source tree):
 * create, destroy and poll.  Its configuration: dprpc_conf.h; its world:
 * dprpc_world.h; its counters: dprpc_stats.h; EAL: dprpc_eal.h.
 *
 * An agent has a name and a rank in a static world map, an ethdev port (given
 * by the application or created from a vdev string) and a memif port per
 * link the world map gives it (docs/worlds.md), a mempool, handler pools
 * and the RPC state towards every peer.  dprpc_world_wait() is the start-up
 * rendezvous.  dprpc_poll() is its engine:
 * rx burst, parse, complete responses, dispatch requests, timers, tx flush.
 * It is driven in one of three ways:
 *  1. the application calls dprpc_poll() from its own lcore loop;
 *  2. the agent runs the poll loop on the EAL lcore conf.lcores.io;
 *  3. with neither, a thread waiting on one of the agent's futures polls
 *     (single-core mode, the default); with conf.lcores.waiters_park, only while
 *     its polls find frames or a message of several frames is in flight:
 *     the application polls the agent meanwhile.
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

#include <dprpc/dprpc_conf.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An agent: opaque. */
struct dprpc_agent;

/**
 * Create an agent: parse the world, create or take the port, configure and
 * start it (unless port.ready: see dprpc_agent_conf.port.id), create pools
 * and rings, register dprpc_agent_conf.serve.handlers, and launch the io lcore
 * and handler lcores if configured.
 *
 * @return the agent, or NULL with rte_errno set: EINVAL (bad configuration
 *         or world map, a bad entry of conf.serve.handlers, a port.id that names no port, port.ready queues the
 *         port lacks or a port.ready port not started, a worker reached by
 *         no port, a map line without a MAC and no port MAC to take, a
 *         conf.port.gateway outside the subnet or not an address, a world
 *         key under 16 bytes (unless conf.auth.mode is DPRPC_AUTH_OFF),
 *         both conf.auth.key and key_file, a key file that cannot be
 *         read, or libsodium failing to start; the reason is logged), ENOENT (name not in the world, a vdev that gave no
 *         port, or a mesh directory whose parent is missing), ENOTDIR (the
 *         mesh directory's path is a file), EACCES (no permission to make
 *         the mesh directory or to make sockets in it), EEXIST (an agent of that name exists in this process),
 *         ENOSPC (64 agents exist in this process, the most it holds),
 *         EBUSY (an lcore is not available, or a port given without
 *         port.ready is started or has several queues), ENOMEM, or the
 *         errno of a failing ethdev call.
 *
 * Thread context: any thread after rte_eal_init(); not concurrently with
 * dprpc_agent_destroy() of the same name.
 * Ownership: the caller owns the agent until dprpc_agent_destroy(); an
 * application's mempool, and its port given with port.ready, stay the
 * application's (a port handed over without port.ready is configured,
 * started and stopped by the agent: dprpc_agent_conf.port.id).
 */
struct dprpc_agent *dprpc_agent_create(const struct dprpc_agent_conf *conf);

/**
 * Destroy an agent: stop its lcores, fail every pending call with
 * -ESHUTDOWN, answer -ESHUTDOWN the requests that wait for an RRef value
 * this agent owns (failing those values), release unanswered the requests
 * still queued to its handler lcores, stop the port if it configured it
 * (and close and remove it if it probed the vdev; a port.ready port is left
 * as it is), free its pools and rings.
 *
 * Before its memif links close (a link of the world map, or a memif
 * default port reaching one worker), it tells the worker at the other end
 * of each that is up (a CLOSE) and waits, polling those links itself, for
 * its answer, at most 50 ms (the whole wait, see below: at most about
 * 150 ms): that worker then polls the link no more (its links_closed),
 * so the memif PMD cannot unmap the rings under its rx_burst
 * (docs/worlds.md, "A destroy without a leave").  Nothing else changes for that worker: this one is not
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

/** The ethdev port the agent uses (the application's if it gave one): its
 * default port, or with none its first memif link's (the port reaching
 * each worker: dprpc_worker_info_get()); UINT16_MAX, rte_errno EINVAL, for
 * a NULL agent. */
uint16_t dprpc_agent_port(const struct dprpc_agent *agent);

/**
 * The agent's default timeout (PyTorch's rpc.get_rpc_timeout()): the
 * timeout, in microseconds, of the calls given DPRPC_TIMEOUT_DEFAULT
 * (dprpc_rpc.h); 0 for none.  dprpc_agent_conf.calls.timeout_us until
 * dprpc_rpc_timeout_set() changes it.
 *
 * @return the timeout in microseconds (0: none); 0 with rte_errno EINVAL
 *         for a NULL agent (as the accessors above).
 * Thread context: any.  Memory order: relaxed, see dprpc_rpc_timeout_set().
 */
uint64_t dprpc_rpc_timeout(const struct dprpc_agent *agent);

/**
 * Set the agent's default timeout (PyTorch's rpc._set_rpc_timeout()).
 *
 * Every operation of the agent given DPRPC_TIMEOUT_DEFAULT that starts
 * after it returns gets the new timeout: calls (dprpc_rpc.h), RRef
 * operations and the RRef messages the library sends itself, streams,
 * dprpc_stream_send_wait(), dprpc_request_timeout(), collectives; so does
 * the bound on fork data never rebuilt (dprpc_rref_fork()) for the
 * children forked from then on.  Those already started keep the deadline
 * they computed when they started.
 *
 * @param timeout_us in microseconds; DPRPC_TIMEOUT_NONE (0) for none (so
 *        is a timeout too long for the TSC to reach, as in
 *        dprpc_agent_conf.calls.timeout_us).
 * @return 0; -EINVAL (NULL @p agent, or @p timeout_us
 *         DPRPC_TIMEOUT_DEFAULT, which names the default itself).
 *
 * Thread context: any thread, handlers and completion callbacks included;
 * it never waits.  Memory order: relaxed store (its readers load relaxed):
 * a call started on this thread after it returns, or on a thread that
 * synchronised with this one since, gets the new timeout; one started
 * concurrently on another thread gets the old or the new.  It orders no
 * other memory.
 */
int dprpc_rpc_timeout_set(struct dprpc_agent *agent, uint64_t timeout_us);

#ifdef __cplusplus
}
#endif

#endif /* DPRPC_AGENT_H */
