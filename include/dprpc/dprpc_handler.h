/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Handlers: what a worker runs for its callers, and how it answers.
 *
 * A handler runs either inline on the polling thread (short handlers) or on
 * one of the agent's handler lcores (DPRPC_HANDLER_POOL).  It replies with
 * bytes or an error, at once or later from any thread (PyTorch's
 * \@async_execution): it returns DPRPC_DEFERRED and keeps the request.
 *
 * Calling out of a handler.  An inline handler and a completion callback
 * run on the agent's polling thread, and while that thread waits nobody
 * polls the agent: a response could never arrive.  So the waiting calls
 * (dprpc_rpc_sync(), dprpc_future_wait() on one of the agent's pending
 * futures, dprpc_rref_to_here(), dprpc_rref_rpc_sync()) never block there:
 * they fail -EDEADLK at once, before sending anything.  The way to call
 * another worker from a handler is to defer:
 *
 * @code
 * static void done(struct dprpc_future *f, void *arg)
 * {
 *         struct dprpc_request *req = arg;
 *         const struct dprpc_error *e = dprpc_future_error(f);
 *         size_t len;
 *         const void *v = dprpc_future_value(f, &len);
 *
 *         if (e != NULL)
 *                 dprpc_reply_error(req, e->code, e->msg);
 *         else
 *                 dprpc_reply(req, v, len);
 * }
 *
 * static int handler(struct dprpc_request *req, void *arg)
 * {
 *         size_t len;
 *         const void *p = dprpc_request_payload(req, &len);
 *         struct dprpc_future *f = dprpc_rpc_async(dprpc_request_agent(req),
 *                 "other", "work", p, len, DPRPC_TIMEOUT_DEFAULT);
 *         int rc;
 *
 *         if (f == NULL)
 *                 return -rte_errno;
 *         rc = dprpc_future_add_callback(f, done, req);
 *         dprpc_future_put(f);          // the agent keeps its own reference
 *         return rc == 0 ? DPRPC_DEFERRED : rc;
 * }
 * @endcode
 *
 * The callback runs on the polling thread when the response (or the
 * call's failure) comes, and answers the deferred request there.
 */
#ifndef DPRPC_HANDLER_H
#define DPRPC_HANDLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <dprpc/dprpc_rpc.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An incoming call, handed to a handler: opaque. */
struct dprpc_request;

/** A handler's return value meaning "I keep the request and reply later". */
#define DPRPC_DEFERRED 1

/** Where a handler runs. */
enum dprpc_handler_mode {
	/** On the polling thread, inside dprpc_poll(): for short handlers. */
	DPRPC_HANDLER_INLINE = 0,
	/** On a handler lcore of the agent, fed through an rte_ring. */
	DPRPC_HANDLER_POOL = 1,
};

/**
 * A handler.
 *
 * @param req the call: read it with dprpc_request_payload() and friends;
 *            answer it exactly once with dprpc_reply() or
 *            dprpc_reply_error().
 * @param arg the argument given at registration.
 * @return 0 once it has replied; DPRPC_DEFERRED if it will reply later
 *         (from any thread; the request stays valid until then; a reply
 *         made before returning, by this or another thread, is fine too);
 *         a negative errno without replying, which the library sends back
 *         as that error with a generic message.
 *
 * The contract is enforced: whatever the handler does, the caller gets
 * exactly one answer, nothing is freed twice and no request is leaked (so
 * dprpc_agent_destroy() is not refused for it).  Each breach is counted in
 * dprpc_agent_stats (and handler_misuse, their sum):
 *  - a negative errno after replying: the reply stands, nothing more is
 *    sent (handler_error_after_reply);
 *  - 0 without a reply: the caller gets -EPROTO, "handler 'NAME' on worker
 *    W returned without replying" (handler_unanswered);
 *  - a positive value other than DPRPC_DEFERRED: the caller gets -EPROTO
 *    ("... returned N: not 0, DPRPC_DEFERRED or an errno") unless the
 *    handler replied, whose reply stands (handler_bad_return);
 *  - a second reply, in the handler or from any thread: -EALREADY, nothing
 *    sent (reply_again; see dprpc_reply() for how long this holds).
 * A request handed to another thread together with a return of 0 (rather
 * than DPRPC_DEFERRED) is answered -EPROTO unless that thread replied
 * first; its later reply then gets -EALREADY.
 *
 * Thread context: the polling thread (inline) or a handler lcore (pool).
 * It must not block in either: to wait for something, defer.
 */
typedef int (*dprpc_handler_fn_t)(struct dprpc_request *req, void *arg);

/**
 * Register a handler.
 *
 * @param name  1 to DPRPC_HANDLER_NAME_MAX - 1 bytes.
 * @param mode  DPRPC_HANDLER_INLINE or DPRPC_HANDLER_POOL (the latter
 *              needs handler lcores in the agent's configuration).
 * @return 0; -EEXIST (the name is registered), -EADDRINUSE (another name
 *         has the same wire id), -ENOSPC (max_handlers reached), -EINVAL
 *         (bad name, mode, NULL fn, or POOL without handler lcores).
 *
 * Thread context: any thread, at any time; a registration is visible to
 * the polling thread once this returns (release store, paired with the
 * lookup's acquire load).  Handlers cannot be unregistered.  A request
 * that arrives before it returns is answered -ENOENT: an agent with an io
 * lcore receives from the moment dprpc_agent_create() returns, and a
 * world's workers call as soon as they hear from it.  Handlers the others
 * may call at once belong in dprpc_agent_conf.serve.handlers, registered before
 * the agent receives anything.
 */
int dprpc_register(struct dprpc_agent *agent, const char *name, dprpc_handler_fn_t fn, void *arg,
	enum dprpc_handler_mode mode);

/**
 * A handler registered at the agent's creation (dprpc_agent_conf.serve.handlers):
 * the arguments of dprpc_register(), which dprpc_agent_create() applies
 * before the agent receives its first frame.
 */
struct dprpc_handler_def {
	const char *name;	      /**< as dprpc_register()'s @p name */
	dprpc_handler_fn_t fn;	      /**< the handler */
	void *arg;		      /**< passed to it */
	enum dprpc_handler_mode mode; /**< DPRPC_HANDLER_INLINE or _POOL */
};

/**
 * The payload of a request.
 * @param len receives its length (may be NULL).
 * @return a pointer valid until the request is answered, owned by the
 *         library, DPRPC_PAYLOAD_ALIGN-aligned (NULL with *len 0 for an
 *         empty payload, and for a NULL @p req, with rte_errno EINVAL).
 */
const void *dprpc_request_payload(const struct dprpc_request *req, size_t *len);

/** A request's payload kept beyond its answer (dprpc_request_payload_hold()): opaque. */
struct dprpc_payload;

/**
 * Keep the payload of a request for after its answer, e.g. for arrays that
 * a handler's result or state goes on using, and that the holder may
 * write.  A payload that came in several frames (longer than
 * DPRPC_MAX_FRAME_PAYLOAD), which the library reassembled in DPDK heap
 * memory, is taken over without a copy; any other payload (one frame, so
 * that no mbuf of the agent's pool stays pinned; a call to self) is
 * copied.  Held payloads count against no bound of the agent
 * (max_requests bounds only live requests): the caller bounds what it
 * keeps.
 *
 * @param req a request not yet answered.
 * @return a handle (read it with dprpc_payload_data(), give it back with
 *         dprpc_payload_release()), or NULL with rte_errno EINVAL (NULL
 *         @p req) or ENOMEM.  The request's own payload pointer stays
 *         valid while the request is unanswered and the hold is not
 *         released.
 * Thread context: the thread that holds the request.
 */
struct dprpc_payload *dprpc_request_payload_hold(struct dprpc_request *req);

/**
 * The bytes of a held payload, the holder's alone to read and write.
 * @param len receives their number (may be NULL).
 * @return a pointer valid until dprpc_payload_release(),
 *         DPRPC_PAYLOAD_ALIGN-aligned (NULL with *len 0 for an empty
 *         payload, or a NULL @p p, with rte_errno EINVAL).
 * Thread context: any thread; the holder orders its own accesses.
 */
void *dprpc_payload_data(const struct dprpc_payload *p, size_t *len);

/**
 * Give back a held payload (NULL: nothing).  It does not need the agent:
 * a payload may outlive the agent of its request, but not EAL
 * (dprpc_eal_cleanup()), whose heap may hold it.
 * Thread context: any thread.
 */
void dprpc_payload_release(struct dprpc_payload *p);

/** dprpc_request_remaining_us() of a request whose caller set no deadline. */
#define DPRPC_NO_DEADLINE UINT64_MAX

/**
 * The time left before the caller's deadline, in microseconds: 0 once it
 * passed, DPRPC_NO_DEADLINE if the call has none (DPRPC_TIMEOUT_NONE).
 * The deadline travels with the request as a budget (docs/serving.md): the
 * caller's time left when it sent the request, less its smoothed round
 * trip to this worker (so an answer sent by the deadline still reaches it
 * in time), counted from when this worker received the request (the time
 * in flight is not known, so it is not taken off).  0, rte_errno EINVAL,
 * for a NULL @p req.
 * Thread context: whichever thread holds the request.
 */
uint64_t dprpc_request_remaining_us(const struct dprpc_request *req);

/**
 * The same deadline as an absolute TSC value (rte_rdtsc()), 0 if the call
 * has none (and, rte_errno EINVAL, for a NULL @p req).
 * Thread context: whichever thread holds the request.
 */
uint64_t dprpc_request_deadline_tsc(const struct dprpc_request *req);

/**
 * The timeout to give a call made on behalf of @p req so that it never
 * outlives it: the smaller of @p timeout_us (DPRPC_TIMEOUT_DEFAULT: the
 * agent's default; DPRPC_TIMEOUT_NONE: none) and the request's time left
 * (at least 1 us once that passed, so the call fails at once rather than
 * never).  Calls made on the thread running the request's handler, during
 * the handler, get this without asking; use it from elsewhere (a
 * completion callback of a deferred request, another thread), or enter
 * the request there (dprpc_request_enter()).
 * 0, rte_errno EINVAL, for a NULL @p req.
 * Thread context: whichever thread holds the request.
 */
uint64_t dprpc_request_timeout(const struct dprpc_request *req, uint64_t timeout_us);

/**
 * The calling thread works for @p req from now on: every call it makes
 * never outlives the request's deadline (the sooner of the two, as calls
 * made by the handler's own thread during the handler), whatever timeout
 * it is given, until dprpc_request_leave().  For work a handler deferred:
 * a thread that takes a deferred request from a queue enters it while it
 * works on it, and its inner calls keep the caller's deadline without
 * dprpc_request_timeout() at each.  The deadline is copied: the thread
 * may go on after answering the request (until it leaves).  Entering
 * another request replaces the bound (nest with the returned value).
 *
 * @return what dprpc_request_leave() restores: the bound the thread had
 *         before (unchanged, rte_errno EINVAL, for a NULL @p req).
 * Thread context: any thread; the bound is the calling thread's alone.
 */
uint64_t dprpc_request_enter(const struct dprpc_request *req);

/** End dprpc_request_enter(): the thread's calls get back the bound
 * @p prev (what enter returned; 0: none).  Thread context: any thread. */
void dprpc_request_leave(uint64_t prev);

/**
 * True once the caller cancelled the call (dprpc_future_cancel()), or was
 * declared down or restarted, while this worker held the request (running
 * it, or deferred).  Nobody waits for the answer any more: a handler may
 * stop and answer at once (e.g. dprpc_reply_error(req, -ECANCELED, NULL));
 * it must still answer or release it as always.  A request cancelled
 * before its handler started is never run.  false, rte_errno EINVAL, for a
 * NULL @p req.
 * Thread context: whichever thread holds the request; relaxed (the flag
 * is set on the polling thread and seen soon after, not at once).
 */
bool dprpc_request_cancelled(const struct dprpc_request *req);

/** Rank of the calling worker (UINT_MAX, rte_errno EINVAL, for a NULL
 * @p req).  Thread context (this and the two other request accessors):
 * whichever thread holds the request, until it is answered. */
unsigned int dprpc_request_caller(const struct dprpc_request *req);

/** The agent that received the request (owned by the application; NULL,
 * rte_errno EINVAL, for a NULL @p req). */
struct dprpc_agent *dprpc_request_agent(const struct dprpc_request *req);

/**
 * Answer a request with bytes (copied; the caller keeps @p data).
 *
 * A reply longer than DPRPC_MAX_FRAME_PAYLOAD is copied once into memory
 * from DPDK's heap and sent as several frames (see dprpc_rpc_async_id());
 * the server keeps it until the caller has acknowledged all of it.
 *
 * @return 0; -EMSGSIZE if @p len exceeds the agent's max_msg_size (the
 *         request stays unanswered: reply again, e.g. with an error);
 *         -ENOBUFS if no mbuf or no memory for a long reply could be had
 *         (likewise); -EALREADY if the request was answered already (or
 *         another thread is answering it right now): nothing is sent and
 *         the breach is counted (dprpc_agent_stats.reply_again); -EINVAL.
 *         On success the request is consumed and must not be used again.
 *
 * A second reply is refused with -EALREADY for as long as the request
 * object has not been handed out again: always while the handler that
 * received the request is still running (the object goes back to the pool
 * only when the handler returns), and after that until the object is
 * reused.  The pool of request objects is FIFO: an object is handed out
 * again only after every object that was already free when it was
 * released, i.e. after as many new incoming requests as there were other
 * free objects then (max_requests - 1 - the requests in use).  A reply on
 * a request whose object was reused is undefined: it may answer the
 * request now using the object.
 *
 * Thread context: any thread (handler, handler lcore, or a thread the
 * handler deferred to).  From other threads than the poller the reply goes
 * through the agent's multi-producer tx ring; on a full ring it waits for
 * the poller, which is why it must not be called while holding up the poll
 * loop of the same agent.
 */
int dprpc_reply(struct dprpc_request *req, const void *data, size_t len);

/**
 * dprpc_reply() of a message gathered from @p iovcnt buffers, in order:
 * they are copied straight into the frames (or, for a long reply, into
 * the one DPDK heap copy), never joined first.  For a message whose parts
 * lie apart, e.g. a header and a large array.
 *
 * @param iov    the buffers (read before return; the caller keeps them).
 *               They may lie in the request's own payload.
 * @param iovcnt how many, 0 to DPRPC_IOV_MAX.
 * @return as dprpc_reply(); -EINVAL also for a NULL @p iov with
 *         @p iovcnt > 0, a buffer with a NULL base and a non-zero length,
 *         or @p iovcnt > DPRPC_IOV_MAX; -EMSGSIZE also when the lengths'
 *         sum overflows.  -ENOBUFS also if the request has an extension's
 *         hook (an RRef's creation), whose answer is first joined in
 *         malloc() memory, and none could be had.  After an error the
 *         request stays unanswered.
 * Thread context: as dprpc_reply().
 */
int dprpc_reply_iov(struct dprpc_request *req, const struct iovec *iov, unsigned int iovcnt);

/**
 * Answer a request with an error.
 *
 * @param code a negative errno (positive is negated; 0 becomes -EIO).
 * @param msg  a message for the caller (truncated to DPRPC_ERRMSG_MAX - 1
 *             bytes), or NULL.
 * @return as dprpc_reply() (-EALREADY for a request answered already,
 *         counted; never -EMSGSIZE).
 */
int dprpc_reply_error(struct dprpc_request *req, int code, const char *msg);

/**
 * Answer a request "overloaded, retry later": -EBUSY with a retry-after
 * hint, as the agent's own bounded queues answer (docs/serving.md).  For
 * an application that queues requests itself (a batcher refusing at
 * admission).  The caller reads the hint in dprpc_error.retry_after_us of
 * its failed future (rounded down by less than 1/1024, at most about 50
 * days).  Counted in rejected_handler (and rejected_overload) of
 * dprpc_agent_stats.
 *
 * @param retry_after_us the hint, in microseconds; 0: the agent's own
 *        estimate (what its handler lcores have queued times their
 *        service time, at least 100 us).
 * @param msg a message for the caller (truncated to DPRPC_ERRMSG_MAX - 1
 *        bytes), or NULL.
 * @return 0 (the request is consumed); -EINVAL for a NULL @p req;
 *         -EALREADY for a request answered already (counted in
 *         reply_again); -ENOBUFS if no mbuf could be had (nothing sent,
 *         the request is still the caller's to answer).
 * Thread context: as dprpc_reply().
 */
int dprpc_reply_busy(struct dprpc_request *req, uint32_t retry_after_us, const char *msg);

/**
 * Answer a request whose deadline has passed -ETIME, as the agent answers
 * one that waited in its own queues too long (docs/serving.md), or do
 * nothing if it has not.  For an application that queues requests itself
 * (a deferred handler's queue): call it as each request comes out of the
 * queue, and run only those it returns 0 for.  The caller gets -ETIME
 * (the server's answer, origin: this worker), distinct from the
 * -ETIMEDOUT of its own timer.  Counted in requests_expired of
 * dprpc_agent_stats.
 *
 * @param msg a message for the caller (truncated to DPRPC_ERRMSG_MAX - 1
 *        bytes), or NULL for a default one.
 * @return 1: its deadline had passed and it was answered -ETIME (the
 *         request is consumed); 0: it has no deadline or the deadline has
 *         not passed (nothing sent; the request is still the caller's);
 *         -EINVAL for a NULL @p req; -EALREADY for a request answered
 *         already (counted in reply_again); -ENOBUFS if no mbuf could be
 *         had (nothing sent, the request is still the caller's).
 * Thread context: as dprpc_reply(); the deadline is compared with
 * rte_rdtsc() of the calling thread (dprpc_request_deadline_tsc()).
 */
int dprpc_reply_expired(struct dprpc_request *req, const char *msg);

#ifdef __cplusplus
}
#endif

#endif /* DPRPC_HANDLER_H */
