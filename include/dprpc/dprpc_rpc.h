/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Remote calls: rpc_sync and rpc_async (docs/architecture.md); the
 * handlers they reach: dprpc_handler.h.
 *
 * A worker registers handlers by name; the wire carries a 32-bit id derived
 * from the name (dprpc_handler_id()), and a registration whose id collides
 * with another name's is refused.  A caller names the destination worker
 * and the handler and gets a future (rpc_async) or waits (rpc_sync).
 *
 * Every function that names a worker or a handler (the calls here, RRefs'
 * dprpc_rref.h, streams' dprpc_stream.h, dprpc_worker_info_get()) has an
 * _id form that takes the worker's rank and the handler's id instead, for
 * loops that resolve the names once (dprpc_worker_rank(),
 * dprpc_handler_id()).  The by-name form resolves them (ENOENT for a
 * worker not in the world, EINVAL for a NULL name) and calls the _id form,
 * which then answers as it would; the _id form pays for neither.
 *
 * Errors that come back to the caller (as the future's dprpc_error):
 *  -ENOENT      no handler of that id on the destination; the message
 *               names it, no handler "NAME" (id 0x...) on worker W, when
 *               this process computed the id from that name (every
 *               by-name call does, and dprpc_handler_id()), else the id
 *               alone;
 *  -ETIMEDOUT   the call's timeout expired, counted from the call to
 *               dprpc_rpc_async() (the slot and future are released; a late
 *               response is counted as stale and dropped).  The poller's
 *               timer (every 100 us) fails the call and frees its slot.  If
 *               it has not 0.5 ms after the deadline (a poller the
 *               scheduler took off the CPU), a thread waiting on the call,
 *               or on any of the agent's futures, fails it instead: the
 *               future's callbacks then run on that thread, and the slot
 *               is freed when the poller runs again;
 *  -ESHUTDOWN   the agent was destroyed with the call pending;
 *  -EHOSTDOWN   the destination was declared down (silent for
 *               dprpc_agent_conf.liveness.peer_timeout_us) while the call was
 *               pending, or before the agent could start it; it may have
 *               run there (what was still queued here was not sent);
 *  -ECONNRESET  the destination restarted while the call was pending: the
 *               incarnation it was sent to may have run it, no later one
 *               does (a request names the incarnation it is for);
 *  -EBUSY       the destination's handler pool was full: the request was
 *               not run (its handler lcores' rings hold DP_RING_SIZE, 4096,
 *               requests each); calling again may run it;
 *  -EMSGSIZE    the request or the response is over its receiver's
 *               max_msg_size;
 *  -EPROTO      the handler broke its contract (dprpc_handler_fn_t): it
 *               returned 0 without replying or deferring, or a positive
 *               value other than DPRPC_DEFERRED, without replying (the
 *               message names the handler and says which);
 *  -ENOBUFS     the destination did not run the request: it holds as many
 *               bytes of this caller's (or of all callers') messages as its
 *               budget allows (dprpc_agent_conf.budgets.msg_bytes_max), or it let
 *               go of the request half received when it declared this
 *               caller down.  Calling again runs it;
 *  -ENODATA     the destination ran the request, but its response was lost
 *               and the destination no longer holds it (it was over its
 *               kept-response budget, dprpc_agent_conf.budgets.kept_mbufs_max, or
 *               it declared this caller down meanwhile).  The request is not
 *               run again by this call; calling again would;
 *  any negative errno a handler replied with (origin: the handler's worker,
 *  message: the handler's).
 *
 * A lost request or response is recovered by resending the request
 * (dprpc_agent_conf.calls.retransmit_us); the destination runs each request at
 * most once and answers a duplicate from the response it kept (or with
 * -ENODATA if it could not keep it).  A call to a worker this agent has
 * never heard from waits one round trip before its request goes: the agent
 * asks the worker's incarnation first, so that no later incarnation of it
 * can run the request (docs/reliability.md).
 */
#ifndef DPRPC_RPC_H
#define DPRPC_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <dprpc/dprpc_agent.h>
#include <dprpc/dprpc_future.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Use the agent's default timeout (dprpc_rpc_timeout(): initially
 * dprpc_agent_conf.calls.timeout_us; dprpc_rpc_timeout_set() changes it),
 * read when the call starts. */
#define DPRPC_TIMEOUT_DEFAULT UINT64_MAX
/** No timeout. */
#define DPRPC_TIMEOUT_NONE 0

/** Alignment of the payloads dprpc hands out: a request's payload
 * (dprpc_request_payload()) and a call's response (dprpc_future_value()
 * of an rpc_async future) start on this boundary, so they may be read in
 * place as any scalar type. */
#define DPRPC_PAYLOAD_ALIGN 8

/** Longest handler name, including the terminating NUL. */
#define DPRPC_HANDLER_NAME_MAX 64

/**
 * The wire id of a handler name (32-bit FNV-1a; never 0).  0 for a NULL
 * name: every call taking a handler id refuses 0 with EINVAL.
 *
 * It also remembers the name (up to DPRPC_HANDLER_NAME_MAX - 1 bytes) in
 * a table of the process, for the message of a call that fails because
 * its destination has no such handler (-ENOENT above): that message then
 * names the handler, for calls by id too.  The table holds a few hundred
 * names (a name seen when both of its slots hold others replaces one); a
 * name already there costs one load and compare, a new one a lock.
 *
 * Thread context: any.
 */
uint32_t dprpc_handler_id(const char *name);

/**
 * Call a handler on a worker, asynchronously.
 *
 * @param to         the destination worker's rank (this agent's own rank
 *                   calls locally, without the wire).
 * @param handler_id dprpc_handler_id() of the handler's name.
 * @param data,len   the request payload, copied before return;
 *                   len <= the agent's max_msg_size (default 8 MiB).
 *                   Up to DPRPC_MAX_FRAME_PAYLOAD bytes travel in one
 *                   frame; a longer payload is copied once into DPDK heap
 *                   memory and sent as a multi-frame message, under flow
 *                   control (dprpc_agent_conf.calls.credits) and with lost frames
 *                   resent; the receiver reassembles it with one more copy.
 * @param timeout_us the call's timeout in microseconds, DPRPC_TIMEOUT_NONE,
 *                   or DPRPC_TIMEOUT_DEFAULT.  Any value works: one whose
 *                   deadline lies beyond the TSC's range (e.g.
 *                   UINT64_MAX - 1, the longest, meant as "for ever") is
 *                   no deadline, never a deadline wrapped into the past.
 *                   The deadline travels with the request
 *                   (dprpc_request_remaining_us()); a call made from
 *                   inside a handler, on its thread, never outlives the
 *                   request it serves (the sooner of the two deadlines).
 *                   Resolution: the poller checks deadlines every 100 us
 *                   (its timer), so a call fails at most about 100 us
 *                   after its deadline while the agent is polled, and a
 *                   waiter fails its own call when a stalled poller lets
 *                   it go 500 us past (docs/reliability.md).
 * @return a future with one reference for the caller (put it when done);
 *         its value is the response payload (zero copy: it points into
 *         the received frame, or into the reassembled message for a
 *         response of several frames; DPRPC_PAYLOAD_ALIGN-aligned, valid
 *         until the last put).  The call fails with -EMSGSIZE if the
 *         request or the response exceeds its receiver's max_msg_size.
 *         A call to self is never resent, so what a remote call would
 *         recover by resending fails it at once instead: -ENOBUFS when no
 *         request object (max_requests) is free; the library's own error
 *         answer (no such handler, full handler pool, a handler's negative
 *         return on the poller) when no mbuf is left to carry it.
 *         NULL with rte_errno: EINVAL (NULL agent, bad rank, handler id 0,
 *         NULL data with len > 0),
 *         EMSGSIZE (payload over max_msg_size), EAGAIN (max_outstanding calls to
 *         that peer in flight), ENOBUFS (no future, mbuf or ring room, or no
 *         memory for a long payload),
 *         EHOSTDOWN (the peer is declared down).
 *         After NULL nothing was sent.
 *
 * Thread context: any thread, including completion callbacks and inline
 * handlers of this agent; a thread that EAL did not create is registered
 * with EAL by its first call (dprpc_agent.h).  Memory order: the
 * submission (multi-producer ring) happens before the request is
 * transmitted.
 */
struct dprpc_future *dprpc_rpc_async_id(struct dprpc_agent *agent, unsigned int to,
	uint32_t handler_id, const void *data, size_t len, uint64_t timeout_us);

/**
 * dprpc_rpc_async_id() of a request gathered from @p iovcnt buffers, in
 * order, copied straight into the frames (or into the one DPDK heap copy
 * of a long request), never joined first.
 *
 * @param iov    the buffers, read before return (the caller keeps them).
 * @param iovcnt how many, 0 to DPRPC_IOV_MAX.
 * @return as dprpc_rpc_async_id(); rte_errno EINVAL also for a NULL
 *         @p iov with @p iovcnt > 0, a buffer with a NULL base and a
 *         non-zero length, or @p iovcnt > DPRPC_IOV_MAX; EMSGSIZE also when
 *         the lengths' sum overflows.
 * Thread context: as dprpc_rpc_async_id().
 */
struct dprpc_future *dprpc_rpc_async_iov(struct dprpc_agent *agent, unsigned int to,
	uint32_t handler_id, const struct iovec *iov, unsigned int iovcnt, uint64_t timeout_us);

/**
 * dprpc_rpc_async_id() by names: resolves @p to in the world (rte_errno
 * ENOENT if absent) and hashes @p handler.
 */
struct dprpc_future *dprpc_rpc_async(struct dprpc_agent *agent, const char *to, const char *handler,
	const void *data, size_t len, uint64_t timeout_us);

/**
 * Call a handler and wait for its response (PyTorch's rpc_sync).
 *
 * @param out      buffer for the response, may be NULL if @p out_len is
 *                 NULL or *out_len is 0.
 * @param out_len  in: capacity of @p out; out: the response's length.  May
 *                 be NULL to discard the response.
 * @param err      if not NULL, receives the error of a failed call (code,
 *                 origin worker, message); untouched on success.
 * @return 0; -EMSGSIZE if the response is longer than *out_len: nothing is
 *         copied, *out_len is set to the length needed, and the response
 *         is kept for the calling thread, to be taken with
 *         dprpc_rpc_sync_take() without calling the handler again (it
 *         ran; it may not be idempotent); the call's error (see the file
 *         comment: a call that failed with -EMSGSIZE, a message over a
 *         max_msg_size, fills @p err and leaves *out_len as it was, and
 *         keeps nothing); -EDEADLK on the agent's polling thread (nothing
 *         sent); rpc_async's errors as negative errno; -EINVAL,
 *         nothing sent, for a NULL @p out with *out_len above 0.
 *
 * Thread context: any thread but the polling thread of the same agent:
 * there (an inline handler, a completion callback) it returns -EDEADLK at
 * once and sends nothing, since nobody would poll while it waited; defer
 * instead (see the file comment).  When no io lcore polls, the calling
 * thread polls while it waits.
 */
int dprpc_rpc_sync(struct dprpc_agent *agent, const char *to, const char *handler, const void *data,
	size_t len, uint64_t timeout_us, void *out, size_t *out_len, struct dprpc_error *err);

/**
 * dprpc_rpc_sync() by rank and handler id, for loops that resolve the names
 * once (dprpc_worker_rank(), dprpc_handler_id()).  Same returns.
 */
int dprpc_rpc_sync_id(struct dprpc_agent *agent, unsigned int to, uint32_t handler_id,
	const void *data, size_t len, uint64_t timeout_us, void *out, size_t *out_len,
	struct dprpc_error *err);

/**
 * Take the response a dprpc_rpc_sync() (or _sync_id()) of this thread on
 * this agent could not copy out (it returned -EMSGSIZE with the length
 * needed), without calling the handler again.
 *
 * Each thread has at most one kept response per agent: a later -EMSGSIZE
 * of the same thread on the same agent replaces (and releases) it.  Until
 * taken it holds one of the agent's futures (dprpc_agent_usage_get()) and the
 * response's memory (an mbuf, or the reassembled message of a response of
 * several frames); dprpc_agent_destroy() releases whatever is left, e.g.
 * the response of a thread that ended without taking it.  (If no memory
 * could be had to keep it, rpc_sync logs a warning and releases it; this
 * then returns -ENOENT.)
 *
 * @param out      buffer for the response; may be NULL with *out_len 0 to
 *                 discard the kept response.
 * @param out_len  in: capacity of @p out; out: the response's length.
 * @return 0: copied (or discarded) and released, *out_len set; -ENOENT if
 *         this thread has no response kept on @p agent; -EMSGSIZE if it is
 *         still longer than *out_len (set to the length; it stays kept);
 *         -EINVAL (NULL agent or out_len, NULL out with *out_len > 0).
 *
 * Thread context: the thread whose rpc_sync kept it (responses are kept
 * per thread), any thread but the agent's polling thread included.  Takes
 * a mutex of the agent, shared with rpc_sync's -EMSGSIZE path only.
 */
int dprpc_rpc_sync_take(struct dprpc_agent *agent, void *out, size_t *out_len);

/**
 * Take the kept response of dprpc_rpc_sync_take() as the call's future
 * instead of a copy: zero copy, the value read in place with
 * dprpc_future_value() (DPRPC_PAYLOAD_ALIGN-aligned, as rpc_async's).
 *
 * @return the DONE future, with one reference that passes to the caller
 *         (dprpc_future_put() it when done; that releases the response);
 *         NULL with rte_errno ENOENT (nothing kept for this thread on
 *         @p agent) or EINVAL (NULL agent).
 *
 * Thread context: as dprpc_rpc_sync_take().
 */
struct dprpc_future *dprpc_rpc_sync_take_future(struct dprpc_agent *agent);

#ifdef __cplusplus
}
#endif

#endif /* DPRPC_RPC_H */
