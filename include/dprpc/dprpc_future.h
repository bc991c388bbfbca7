/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Lock-free futures (docs/futures.md).
 *
 * A future is completed once, by one atomic transition, either with a value
 * (DONE) or with an error (FAILED).  Callbacks added before completion run
 * exactly once, on the completing thread, right after the transition;
 * callbacks added after completion run at once on the adding thread.
 * Waiting spins briefly and then parks the thread on a futex; no mutex is
 * taken anywhere on the completion path.
 *
 * Futures come from a fixed-size pool created up front (nothing on the
 * completion path calls malloc).  They are reference counted: the creator
 * holds one reference; dprpc_future_get() adds one; dprpc_future_put()
 * drops one; the last put frees the value and returns the future to its pool.
 *
 * This module does not depend on EAL or on DPDK ports; it may be used from
 * any thread, registered with EAL or not.
 *
 * Errors follow the library convention: int returns are 0 (or a count) on
 * success and a negative errno on failure; pointer returns are NULL with
 * rte_errno set.
 */
#ifndef DPRPC_FUTURE_H
#define DPRPC_FUTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A future: opaque. */
struct dprpc_future;
/** A fixed-size pool of futures and callback nodes: opaque. */
struct dprpc_future_pool;

/** States of a future.  PENDING changes once, to DONE or FAILED. */
enum dprpc_future_state {
	DPRPC_FUTURE_PENDING = 0, /**< not completed yet */
	DPRPC_FUTURE_DONE = 1,	  /**< completed with a value */
	DPRPC_FUTURE_FAILED = 2,  /**< completed with an error */
};

/** Longest error message kept, including the terminating NUL. */
#define DPRPC_ERRMSG_MAX 128

/** Worker id used as the origin of errors raised on the local worker
 * before any worker rank is known (for example by futures not tied to an
 * agent). */
#define DPRPC_ORIGIN_LOCAL UINT16_MAX

/**
 * An error: the one a failed future carries (PyTorch's RemoteException),
 * and the one every call taking a struct dprpc_error * fills in on failure
 * (dprpc_rpc_sync(), the collectives, dprpc_shutdown(), ...).
 */
struct dprpc_error {
	int code;	 /**< negative errno, e.g. -ETIMEDOUT, -EREMOTEIO */
	uint16_t origin; /**< rank of the worker that raised it */
	/** With -EBUSY from an overloaded worker: how long it suggests
	 * waiting before calling again, in microseconds (an estimate of
	 * the time its queues need; 0: no hint).  0 for other errors. */
	uint32_t retry_after_us;
	char msg[DPRPC_ERRMSG_MAX]; /**< NUL-terminated message, may be empty */
	/** The workers concerned, one bit per rank (bit r: rank r); set by
	 * the collectives (dprpc_collective.h says which), 0 otherwise. */
	uint64_t workers;
};

/**
 * Releases a value when the last reference to its future goes.
 * @param opaque the free_arg given with the value.
 */
typedef void (*dprpc_value_free_fn_t)(void *opaque);

/**
 * A completion callback.
 * @param f   the completed future; valid for the duration of the call
 *            (the callback does not own a reference unless it takes one).
 * @param arg the argument given at registration.
 *
 * Runs on the thread that completed the future, or on the thread that
 * added it if the future was already complete.  It must not block: on an
 * agent's future it runs on the polling thread, except for a call failed
 * with -ETIMEDOUT by a waiting thread (dprpc_rpc.h) and for -ESHUTDOWN.
 */
typedef void (*dprpc_callback_fn_t)(struct dprpc_future *f, void *arg);

/** A then() step's return value meaning "I keep dst and complete it later"
 * (dprpc_then_fn_t); the value of a handler's DPRPC_DEFERRED. */
#define DPRPC_THEN_DEFERRED 1

/**
 * The step of a then() chain (PyTorch's Future.then() callback, whose
 * return value, or exception, completes the derived future).
 * @param src the completed source future (DONE or FAILED).
 * @param dst the pending future returned by dprpc_future_then().  The
 *            step may complete or fail it before it returns, or return
 *            DPRPC_THEN_DEFERRED and complete or fail it later, from any
 *            thread; to do so it takes a reference with dprpc_future_get()
 *            (it does not own one otherwise).
 * @param arg the argument given to dprpc_future_then().
 * @return what becomes of @p dst if it is still pending when the step
 *         returns (once completed, by the step or any thread, it stays as
 *         it was completed, whatever the step returns):
 *          - 0: DONE with an empty value (a callback returning None);
 *          - a negative errno: FAILED with it, origin DPRPC_ORIGIN_LOCAL,
 *            message "then() step failed";
 *          - DPRPC_THEN_DEFERRED: left pending for the step to complete;
 *          - any other positive value: FAILED with -EPROTO, origin
 *            DPRPC_ORIGIN_LOCAL, message "then() step returned N: not 0,
 *            DPRPC_THEN_DEFERRED or an errno".
 *         So @p dst never stays pending unless the step said it would
 *         complete it.
 */
typedef int (*dprpc_then_fn_t)(struct dprpc_future *src, struct dprpc_future *dst, void *arg);

/**
 * A hook that makes progress on behalf of a waiting thread.
 *
 * dprpc_future_wait() calls it while the future is pending.  It returns
 * the amount of work it did (>= 0); -EDEADLK when the waiting thread is
 * the one that must make progress and cannot (an agent's hook, called on
 * that agent's polling thread: a completion callback or an inline handler
 * waiting; nobody else polls while it waits), in which case the wait ends
 * at once with -EDEADLK if the future is still pending; or another
 * negative value when progress is made elsewhere (another thread polls),
 * in which case the waiter parks for a short while and then calls the hook
 * again.
 */
typedef int (*dprpc_progress_fn_t)(void *arg);

/**
 * Create a pool.
 *
 * @param nb_futures   number of futures (> 0).
 * @param nb_cb_nodes  number of extra callback nodes shared by the pool's
 *                     futures: every future holds one callback inline, so
 *                     this counts callbacks beyond the first per future.
 * @return the pool, or NULL with rte_errno set: EINVAL (nb_futures is 0 or
 *         too large), ENOMEM.
 *
 * Thread context: any thread, EAL need not be initialised.
 * Ownership: the caller owns the pool until dprpc_future_pool_release().
 */
struct dprpc_future_pool *dprpc_future_pool_create(
	unsigned int nb_futures, unsigned int nb_cb_nodes);

/**
 * Drop the creator's hold on a pool.  The memory is freed at once if no
 * future of the pool is in use, otherwise when the last one is put.
 *
 * Thread context: any thread; no future may be taken from the pool after.
 */
void dprpc_future_pool_release(struct dprpc_future_pool *pool);

/**
 * Number of futures of the pool currently in use (taken and not yet
 * returned by their last put).  For leak checks.  0, rte_errno EINVAL, for
 * a NULL @p pool.
 * Thread context: any.  Memory order: relaxed; exact when quiescent.
 */
unsigned int dprpc_future_pool_in_use(const struct dprpc_future_pool *pool);

/**
 * Number of extra callback nodes currently in use.  For leak checks.  0,
 * rte_errno EINVAL, for a NULL @p pool.
 * Thread context: any.  Memory order: relaxed; exact when quiescent.
 */
unsigned int dprpc_future_pool_cb_in_use(const struct dprpc_future_pool *pool);

/**
 * Take a pending future from a pool, with one reference held by the caller.
 *
 * @return the future, or NULL with rte_errno = ENOBUFS when the pool is
 *         exhausted, EINVAL for a NULL @p pool.
 *
 * Thread context: any thread (multi-producer, multi-consumer pool).
 */
struct dprpc_future *dprpc_future_new(struct dprpc_future_pool *pool);

/**
 * Add a reference.  Thread context: any thread; the caller must already
 * hold a reference.  Memory order: relaxed (the reference held protects
 * the object).  A NULL @p f is ignored.
 */
void dprpc_future_get(struct dprpc_future *f);

/**
 * Drop a reference.  The last put releases the value (its free function is
 * called) and returns the future to its pool.  A future may be put while
 * pending; its completer must then hold its own reference.  A NULL @p f
 * is ignored.
 *
 * Thread context: any thread.  Memory order: release on the decrement,
 * acquire before freeing, so every access by other holders happens before
 * the free.
 */
void dprpc_future_put(struct dprpc_future *f);

/**
 * Complete a future with a value.
 *
 * @param data,len the value; the future keeps the pointer (no copy).
 * @param free_fn  called with @p free_arg when the last reference goes;
 *                 may be NULL when the value needs no release.
 * @return 0, or -EALREADY if the future was already completed (the value
 *         then stays owned by the caller and @p free_fn is not called),
 *         -EINVAL if @p f is NULL or @p data is NULL with @p len > 0.
 *
 * Runs the callbacks registered so far on the calling thread, then wakes
 * parked waiters.  Memory order: release; a thread that observes the
 * completion (state, wait, callback) sees the value.
 * Ownership: on success the future owns the value.
 */
int dprpc_future_complete(struct dprpc_future *f, const void *data, size_t len,
	dprpc_value_free_fn_t free_fn, void *free_arg);

/**
 * Complete a future with a copy of a value.  The copy is made with malloc
 * when @p len is larger than the future's inline storage
 * (DPRPC_FUTURE_INLINE_MAX bytes): not for the fast path.
 *
 * @return 0, -EALREADY, -EINVAL, or -ENOMEM (the future stays pending).
 */
int dprpc_future_complete_copy(struct dprpc_future *f, const void *data, size_t len);

/** Values up to this size are copied inline by dprpc_future_complete_copy(). */
#define DPRPC_FUTURE_INLINE_MAX 64

/**
 * Fail a future.
 *
 * @param code   a negative errno (a positive one is negated; 0 is -EINVAL).
 * @param origin rank of the worker that raised the error.
 * @param msg    message, copied and truncated to DPRPC_ERRMSG_MAX - 1
 *               bytes; may be NULL.
 * @return 0, -EALREADY if already completed, -EINVAL if @p f is NULL.
 *
 * Thread context and memory order: as dprpc_future_complete().
 */
int dprpc_future_fail(struct dprpc_future *f, int code, uint16_t origin, const char *msg);

/** What dprpc_future_cancel() did. */
enum dprpc_cancel_result {
	/** This call failed the future with -ECANCELED. */
	DPRPC_CANCEL_DONE = 0,
	/** An earlier cancel had (the future is FAILED with -ECANCELED):
	 * nothing more was done. */
	DPRPC_CANCEL_ALREADY = 1,
	/** Too late: the future had completed (a value, or another error)
	 * before; it is left as it was. */
	DPRPC_CANCEL_TOO_LATE = 2,
};

/**
 * Cancel a pending future: fail it with -ECANCELED (origin
 * DPRPC_ORIGIN_LOCAL, message "cancelled"), running its callbacks and
 * waking its waiters as any failure does.  Idempotent.
 *
 * For the future of a call (dprpc_rpc_async()) the agent, at its next
 * poll, on its polling thread, also frees the call's
 * session slot and what it held, and, if the request was sent, tells the
 * destination with a CANCEL frame: a request still queued there is dropped
 * unrun, one running or deferred sees dprpc_request_cancelled() (its
 * answer, if any, is dropped here as stale).  A call not started yet is
 * never sent.  With retransmission on (dprpc_agent_conf.calls.retransmit_us),
 * the CANCEL is resent on the network's round trip until the
 * destination answers it, and the slot stays taken (dprpc_agent_usage_get()
 * calls) until then, so a lost CANCEL does not let a queued request run,
 * and its answer says whether the request ran (dprpc_future_cancel_outcome());
 * with retransmission off it goes once.  Counted in calls_cancelled (and
 * calls_failed) and cancels_resent by the caller's agent, cancels_received and
 * requests_cancelled by the destination's (dprpc_agent_stats).  A call to
 * the agent itself is not cancelled at its handler.
 *
 * @return a dprpc_cancel_result (>= 0); -EINVAL for a NULL @p f.  The
 *         caller keeps its reference (put it as usual).
 * Thread context: any thread, including callbacks and handlers.
 */
int dprpc_future_cancel(struct dprpc_future *f);

/** What the destination of a cancelled call did with it
 * (dprpc_future_cancel_outcome()). */
enum dprpc_cancel_outcome {
	/** Not known yet: no answer to the CANCEL has come (or the future
	 * is not a cancelled call's). */
	DPRPC_CANCEL_UNCONFIRMED = 0,
	/** Confirmed: the request never ran and never will (it never left
	 * this agent, or the destination had not started its handler when
	 * the CANCEL came, or had not received it). */
	DPRPC_CANCEL_STOPPED = 1,
	/** The destination had started the request's handler, or answered
	 * it, when the CANCEL came: it ran or runs (a handler still running
	 * sees dprpc_request_cancelled()). */
	DPRPC_CANCEL_STARTED = 2,
	/** No answer will come: the destination restarted or was declared
	 * down first, the agent was destroyed, retransmission is off
	 * (dprpc_agent_conf.calls.retransmit_us 0: the CANCEL went once), or the
	 * call was to the agent itself.  The request may have run. */
	DPRPC_CANCEL_UNKNOWN = 3,
};

/**
 * Whether a cancelled call's destination confirmed that the request never
 * runs.  After dprpc_future_cancel() returned DPRPC_CANCEL_DONE for a
 * call's future, the outcome is DPRPC_CANCEL_UNCONFIRMED until the
 * caller's agent learns it, then one of the three others, for good (until
 * the last reference is put): typically within a round trip of the
 * cancel, the CANCEL being resent on the network's round trip while
 * unanswered (docs/reliability.md, "Cancellation").  Poll it, or wait in
 * a loop with the agent polled, as dprpc_future_wait() does.
 *
 * @return an enum dprpc_cancel_outcome (>= 0); -EINVAL for a NULL @p f.
 * Thread context: any thread holding a reference.  Memory order: acquire.
 */
int dprpc_future_cancel_outcome(const struct dprpc_future *f);

/**
 * Current state.  Memory order: acquire; after it returns DONE or FAILED
 * the value or error may be read.  FAILED, with rte_errno EINVAL, for a
 * NULL @p f (and dprpc_future_error() of NULL is NULL).
 */
enum dprpc_future_state dprpc_future_state(const struct dprpc_future *f);

/** True when the state is DONE or FAILED (acquire); false, rte_errno
 * EINVAL, for a NULL @p f. */
bool dprpc_future_is_done(const struct dprpc_future *f);

/**
 * The value of a DONE future.
 * @param len if not NULL, receives the value's length.
 * @return the value (valid while a reference is held), or NULL if the
 *         future is pending, failed or NULL (then *len is 0).
 */
const void *dprpc_future_value(const struct dprpc_future *f, size_t *len);

/**
 * The error of a FAILED future, or NULL if it is pending or DONE (or NULL,
 * with rte_errno EINVAL).  Valid while a reference is held.
 */
const struct dprpc_error *dprpc_future_error(const struct dprpc_future *f);

/**
 * Wait for completion.
 *
 * @param timeout_us microseconds to wait; 0 waits without limit (so does a
 *                   timeout too long for the clock, e.g. UINT64_MAX - 1).
 * @return 0 if DONE; the error code (negative) if FAILED; -ETIMEDOUT if the
 *         wait timed out and the future is still pending (it stays
 *         pending: the timeout is the wait's, not the future's);
 *         -EDEADLK, at once, if the future is pending and its progress hook
 *         reports that only the calling thread could make progress and it
 *         cannot (dprpc_progress_fn_t): the calling thread is the polling
 *         thread of the agent whose call (or then()/collect_all() over
 *         one) it waits for, i.e. a completion callback or an inline
 *         handler.  The future stays pending.  To call out of a handler,
 *         defer (dprpc_rpc.h).
 *
 * Spins briefly, calling the progress hook if one is set, then parks on a
 * futex (with a progress hook that reports progress is made elsewhere,
 * parks for short intervals and retries the hook).  An agent's call
 * future past its own deadline is failed with -ETIMEDOUT by the waiter
 * itself if the poller has not done so, and its callbacks run here.
 * Thread context: any thread; on an agent's polling thread, waiting for a
 * pending future of that agent fails -EDEADLK rather than blocking.
 * Memory order: acquire, as dprpc_future_state().
 */
int dprpc_future_wait(struct dprpc_future *f, uint64_t timeout_us);

/**
 * Set the hook called by waiters to make progress (single-core mode: the
 * waiting thread polls the agent).  Set by the creator before the future
 * is handed to other threads.  A NULL @p f is ignored.
 */
void dprpc_future_set_progress(struct dprpc_future *f, dprpc_progress_fn_t fn, void *arg);

/**
 * Register a callback.
 *
 * @return 0 if accepted: @p cb will run exactly once (now, if the future is
 *         already complete).  -ENOBUFS if the pool has no callback node
 *         left, -EINVAL on NULL arguments: then @p cb is never called.
 *
 * Callbacks registered before completion run in registration order.
 * Thread context: any thread.  Memory order: the callback observes the
 * completed state, value and error (acquire).
 */
int dprpc_future_add_callback(struct dprpc_future *f, dprpc_callback_fn_t cb, void *arg);

/**
 * Chain a step.  Returns a new pending future, from the same pool, with one
 * reference held by the caller; when @p f completes, @p fn runs with @p f
 * and the new future, which it completes or whose completion its return
 * value decides (dprpc_then_fn_t).  The new future
 * takes @p f's progress hook (dprpc_future_set_progress()), so waiting on
 * it makes progress where waiting on @p f would: a then() on an
 * rpc_async() future completes with nobody polling but its waiter.
 *
 * @return the new future, or NULL with rte_errno = ENOBUFS (no future or
 *         callback node left; @p fn is never called) or EINVAL.
 *
 * Thread context: any thread; @p fn runs where callbacks run.
 */
struct dprpc_future *dprpc_future_then(struct dprpc_future *f, dprpc_then_fn_t fn, void *arg);

/**
 * Wait for every future of an array.
 *
 * @param timeout_us total time to wait; 0 waits without limit.
 * @return 0 if all are DONE; the error code of the first FAILED one in array
 *         order if any failed (after all completed); -ETIMEDOUT if some are
 *         still pending at the deadline; -EDEADLK, at once, if one is
 *         pending and cannot complete while this thread waits (as
 *         dprpc_future_wait()); -EINVAL on a NULL array entry.
 */
int dprpc_future_wait_all(struct dprpc_future *const *fs, unsigned int n, uint64_t timeout_us);

/**
 * A future that completes when every future of an array has completed
 * (PyTorch's collect_all).  It completes DONE with no value even if some of
 * the inputs failed: inspect the inputs.  It holds a reference to each
 * input until then.  Waiting on it calls the progress hooks of all the
 * inputs (each distinct hook once per round), so inputs from calls to
 * several agents complete with nobody polling but the waiter.
 *
 * @return the new future (one reference held by the caller), or NULL with
 *         rte_errno = ENOBUFS, ENOMEM (inputs with different progress
 *         hooks, and no memory for the set of them) or EINVAL; on failure
 *         no reference is kept.
 */
struct dprpc_future *dprpc_future_collect_all(
	struct dprpc_future_pool *pool, struct dprpc_future *const *fs, unsigned int n);

#ifdef __cplusplus
}
#endif

#endif /* DPRPC_FUTURE_H */
