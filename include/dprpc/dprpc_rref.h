/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Remote references (RRefs): remote(), to_here(), proxies, forks and
 * distributed reference counting (PyTorch's RRef; the protocol is in docs/rref.md).
 *
 * An RRef names a value that lives on one worker, its owner.  Every agent
 * keeps the values it owns and the references it holds in RCU hash tables;
 * the application only ever holds handles (struct dprpc_rref), one per
 * reference, and releases each exactly once with dprpc_rref_release().
 *
 * Values are byte strings of up to the owner's max_msg_size (default
 * 8 MiB, dprpc_agent_conf), copied once into the owner, and read-only from
 * then on: a proxy call reads the owner's value, it never changes it (an
 * RRef is created once, like a PyTorch RRef of an immutable object).
 * Values and arguments longer than a frame travel as multi-frame calls
 * (dprpc_rpc.h).  The owner's confirmation of remote() carries a value of
 * at most one frame (DPRPC_MAX_FRAME_PAYLOAD bytes), so to_here() after
 * remote() is one round trip; a longer value stays on the owner until
 * to_here() fetches it, as a normal multi-frame response.
 *
 * Reference counting (PyTorch's guarantees):
 *  - G1: the owner learns of every user that is deleted (the release of a
 *    user handle sends it a message), and frees the value when no user and
 *    no local handle is left, at once, never before.  A worker declared
 *    down or restarted is dead for RRefs: its references are dropped, on
 *    the owner and on the workers that forked children for it or hold
 *    children of an RRef it owned (docs/rref.md, "When a peer dies").
 *  - G2: a handle that was forked (dprpc_rref_fork()) keeps its reference
 *    until the owner has confirmed the child, even if the application
 *    releases it meanwhile.
 *
 * Errors of creation (the owner's handler failed, the handler does not
 * exist there, the creation timed out) are never lost: they are reported,
 * with their origin worker and message, by the RRef's next use
 * (to_here, a proxy call, a fork) and by its creation future.
 *
 * Thread context: every function here may be called from any thread,
 * including an agent's polling thread, except the *_sync and
 * dprpc_rref_to_here() calls, which wait: on the polling thread of the
 * same agent (an inline handler, a completion callback) they fail
 * -EDEADLK at once, before sending anything, as dprpc_rpc_sync() does
 * (to_here still returns a value already here).  Nothing here needs the
 * calling thread to register with liburcu: dprpc does it.
 *
 * Wire: the RRef messages are calls to handlers named "dprpc.rref.*",
 * which every agent registers at creation (names starting with "dprpc."
 * are reserved).  Every worker of a world must run dprpc with RRefs (they
 * always are).
 */
#ifndef DPRPC_RREF_H
#define DPRPC_RREF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <dprpc/dprpc_agent.h>
#include <dprpc/dprpc_future.h>
#include <dprpc/dprpc_handler.h>
#include <dprpc/dprpc_rpc.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A handle on an RRef: opaque.  One per reference held. */
struct dprpc_rref;

/** Deprecated, kept for source compatibility: the one-frame bound values
 * had before.  Values now go up to the owner's max_msg_size (a creating
 * handler replying more fails the creation with -EMSGSIZE); this is the
 * largest value the owner's confirmation of remote() carries (larger ones
 * are fetched by to_here()). */
#define DPRPC_RREF_VALUE_MAX DPRPC_MAX_FRAME_PAYLOAD
/** Deprecated, kept for source compatibility: the one-frame bound
 * arguments had before.  The arguments of remote() and of proxy calls now
 * go up to max_msg_size less the 40-byte RRef message header; up to this
 * many they travel in one frame, built without a memory allocation. */
#define DPRPC_RREF_ARGS_MAX (DPRPC_MAX_FRAME_PAYLOAD - 40)
/** Size of an RRef's fork data (dprpc_rref_fork()). */
#define DPRPC_RREF_FORK_SIZE 32

/**
 * Create an RRef on worker @p to (PyTorch's rpc.remote): the owner runs
 * the handler @p handler_id with @p args as its request payload and keeps
 * its reply as the RRef's value (an error reply becomes the RRef's error).
 *
 * The handle comes back at once; the owner confirms the creation later
 * (dprpc_rref_creation_future()).  With @p to this worker's own rank, the
 * handle is an owner handle and the handler runs locally.
 *
 * @param timeout_us the creation's timeout (DPRPC_TIMEOUT_DEFAULT,
 *                   DPRPC_TIMEOUT_NONE or microseconds); a creation that
 *                   times out fails the RRef with -ETIMEDOUT.
 * @return a handle, owned by the caller (release it with
 *         dprpc_rref_release()); NULL with rte_errno: EINVAL (NULL agent,
 *         bad rank, handler id 0, NULL args with len > 0), EMSGSIZE
 *         (len > max_msg_size - 40),
 *         ENOBUFS (no future, memory or call slot; also rpc_async's
 *         EAGAIN), EHOSTDOWN (@p to is down).  After NULL nothing was
 *         created.  A value longer than the owner's max_msg_size fails
 *         the creation with -EMSGSIZE.
 */
struct dprpc_rref *dprpc_remote_id(struct dprpc_agent *agent, unsigned int to, uint32_t handler_id,
	const void *args, size_t len, uint64_t timeout_us);

/**
 * dprpc_remote_id() with the arguments gathered from @p iovcnt buffers,
 * in order, copied straight into the call's frames (never joined first).
 * @param iov    the buffers, read before return (the caller keeps them).
 * @param iovcnt how many, 0 to DPRPC_IOV_MAX - 1 (the RRef message's
 *               header takes one).
 * @return as dprpc_remote_id(); rte_errno EINVAL also for a NULL @p iov
 *         with @p iovcnt > 0, a buffer with a NULL base and a non-zero
 *         length, or too many buffers; EMSGSIZE also when the lengths'
 *         sum overflows.
 */
struct dprpc_rref *dprpc_remote_iov(struct dprpc_agent *agent, unsigned int to, uint32_t handler_id,
	const struct iovec *iov, unsigned int iovcnt, uint64_t timeout_us);

/** dprpc_remote_id() by worker and handler names (rte_errno ENOENT if
 * @p to is not in the world). */
struct dprpc_rref *dprpc_remote(struct dprpc_agent *agent, const char *to, const char *handler,
	const void *args, size_t len, uint64_t timeout_us);

/**
 * An RRef owned by this worker holding a copy of @p value (PyTorch's
 * RRef(value)).  Confirmed at once.
 * @return an owner handle; NULL with rte_errno EINVAL, EMSGSIZE
 *         (len > the agent's max_msg_size) or ENOBUFS.
 */
struct dprpc_rref *dprpc_rref_create_local(
	struct dprpc_agent *agent, const void *value, size_t len);

/**
 * Release a handle (PyTorch: the last Python reference going).  A user
 * handle tells the owner (once its creation is confirmed, and once every
 * child forked from it is confirmed: G2); an owner handle drops a local
 * reference.  The owner frees the value when none is left.
 *
 * Every handle is released exactly once by the application, also after
 * dprpc_rref_shutdown(): shutdown drops the handle's reference to the
 * RRef but leaves its memory to the application, and this call then only
 * frees the handle.  Handles need no release after dprpc_agent_destroy(),
 * which frees them all (they are invalid from then on).
 *
 * @return 0, also for a handle that dprpc_rref_shutdown() released
 *         (nothing is sent then: shutdown did it); -EINVAL for NULL or a
 *         handle the application already released (while its memory is
 *         still held, by pending children or its DELETE; otherwise a
 *         second release is a use after free).  The handle must not be
 *         used afterwards.
 * Thread context: any thread.  Ownership: the handle's memory goes back
 * to the library.
 */
int dprpc_rref_release(struct dprpc_rref *rref);

/*
 * Accessors.  Given a NULL handle, each returns the value its comment
 * names and sets rte_errno to EINVAL.
 */

/** True if this worker owns the value (false for NULL). */
bool dprpc_rref_is_owner(const struct dprpc_rref *rref);
/** The owner's rank (UINT_MAX for NULL). */
unsigned int dprpc_rref_owner(const struct dprpc_rref *rref);
/** The owner's name (valid while the agent lives; NULL for NULL). */
const char *dprpc_rref_owner_name(const struct dprpc_rref *rref);
/** The RRef's global id: the creating worker's rank in the top 16 bits,
 * a number unique on that worker in the others, never 0 (0 for NULL). */
uint64_t dprpc_rref_id(const struct dprpc_rref *rref);
/** The agent the handle belongs to (NULL for NULL). */
struct dprpc_agent *dprpc_rref_agent(const struct dprpc_rref *rref);

/**
 * True once the owner knows of this reference: always for an owner handle;
 * for a user, once the creation (remote()) or the fork (from_fork) was
 * confirmed, successfully.  Memory order: acquire.  False, rte_errno
 * EINVAL, for NULL.
 */
bool dprpc_rref_confirmed_by_owner(const struct dprpc_rref *rref);

/**
 * The future of the owner's creation: DONE once the owner confirmed this
 * reference, FAILED with the creation's error otherwise.  For a user made
 * by remote() its value is the RRef's value when that is at most
 * DPRPC_MAX_FRAME_PAYLOAD bytes (the confirmation carries it), else empty
 * (the value stays on the owner); for a forked user it has none.  On an owner handle: the value's own
 * future (DONE with the value once the handler replied).
 * @return a new reference for the caller (put it); never NULL for a valid
 *         handle (NULL, rte_errno EINVAL, for a NULL one).
 */
struct dprpc_future *dprpc_rref_creation_future(struct dprpc_rref *rref);

/**
 * The value, on the owner (PyTorch's local_value()).
 * @param value receives a pointer to the value, valid while the handle is
 *              held (the value never changes).
 * @param len   receives its length.
 * @return 0; -EPERM if this worker is not the owner (use to_here);
 *         -EAGAIN if the owner's handler has not replied yet; the
 *         creation's error code if it failed; -ESHUTDOWN (the handle was
 *         released by dprpc_rref_shutdown()); -EINVAL.
 */
int dprpc_rref_local_value(const struct dprpc_rref *rref, const void **value, size_t *len);

/**
 * Fetch the value (PyTorch's to_here()), asynchronously.
 *
 * @param timeout_us the fetch's timeout (as for rpc_async).
 * @return a future with one reference for the caller; DONE with a copy of
 *         the value (DPRPC_PAYLOAD_ALIGN-aligned) or FAILED: the creation's
 *         error, -ENOENT if the owner no longer has the RRef, or the
 *         call's errors (dprpc_rpc.h).  Without a message when the value
 *         is already here: on the owner, the value's own future; on a user
 *         made by remote(), its creation future when the confirmation
 *         carries the value (at most DPRPC_MAX_FRAME_PAYLOAD bytes; values
 *         never change, so this copy is the value).  Those two complete
 *         when the owner's handler replies (or the creation times out),
 *         not at @p timeout_us: use dprpc_rref_to_here() for a bounded
 *         wait.  A larger value is fetched from the owner (a normal
 *         multi-frame response, up to max_msg_size); if the creation is
 *         still pending, the future fetches it once the confirmation
 *         comes, with the agent's default timeout.
 *         NULL with rte_errno as dprpc_rpc_async_id() (nothing sent), or
 *         ESHUTDOWN (the handle was released by dprpc_rref_shutdown()).
 */
struct dprpc_future *dprpc_rref_to_here_async(struct dprpc_rref *rref, uint64_t timeout_us);

/**
 * Fetch the value and wait (PyTorch's to_here(timeout)).  @p out,
 * @p out_len and @p err as for dprpc_rpc_sync(); returns as that does,
 * and -ETIMEDOUT if the value is not here within @p timeout_us (the RRef
 * stays usable: a later to_here may succeed).  On the polling thread of
 * the RRef's agent: the value (or the creation's error) if it is already
 * here (an owner's completed value, a user's value brought by its
 * confirmation), else -EDEADLK at once, nothing sent.
 */
int dprpc_rref_to_here(struct dprpc_rref *rref, uint64_t timeout_us, void *out, size_t *out_len,
	struct dprpc_error *err);

/**
 * Call a handler on the RRef's owner with the RRef's value as input
 * (PyTorch's rref.rpc_async().method(args)).  The handler reads @p args
 * with dprpc_request_payload() and the value with
 * dprpc_request_rref_value(); it replies as any handler.  If the value is
 * not ready yet, the call waits on the owner for it and the handler then
 * runs on the thread that completed the value.
 *
 * @return as dprpc_rpc_async_id(); a failed creation fails the future
 *         with its error; EMSGSIZE if len > max_msg_size - 40;
 *         ESHUTDOWN (the handle was released by dprpc_rref_shutdown()).
 */
struct dprpc_future *dprpc_rref_rpc_async_id(struct dprpc_rref *rref, uint32_t handler_id,
	const void *args, size_t len, uint64_t timeout_us);
/** dprpc_rref_rpc_async_id() with the arguments gathered from @p iovcnt
 * buffers, as dprpc_remote_iov() gathers them (and refuses them): read
 * before return, the caller keeps them.  Thread context: as
 * dprpc_rref_rpc_async_id(). */
struct dprpc_future *dprpc_rref_rpc_async_iov(struct dprpc_rref *rref, uint32_t handler_id,
	const struct iovec *iov, unsigned int iovcnt, uint64_t timeout_us);
/** dprpc_rref_rpc_async_id() by handler name. */
struct dprpc_future *dprpc_rref_rpc_async(struct dprpc_rref *rref, const char *handler,
	const void *args, size_t len, uint64_t timeout_us);

/**
 * A proxy call, waiting (PyTorch's rref.rpc_sync().method(args)):
 * dprpc_rref_rpc_async_id(), then a wait for its future.
 *
 * @param handler_id dprpc_handler_id() of the handler's name.
 * @param args, len  the arguments, copied before return (as for
 *                   dprpc_rref_rpc_async_id()).
 * @param timeout_us the call's timeout (DPRPC_TIMEOUT_DEFAULT,
 *                   DPRPC_TIMEOUT_NONE or microseconds); the wait ends
 *                   with the call.
 * @param out, out_len, err as for dprpc_rpc_sync(): @p out is the
 *                   caller's, written before return.
 * @return 0; -EINVAL (NULL @p rref, handler id 0, NULL @p args with
 *         @p len > 0); -EDEADLK on the polling thread of the RRef's agent,
 *         nothing sent; -ESHUTDOWN (the handle was released by
 *         dprpc_rref_shutdown()); -EMSGSIZE (@p len > max_msg_size - 40,
 *         or the response longer than *out_len, as for dprpc_rpc_sync());
 *         the creation's error if it failed; rpc_async's errors and the
 *         call's (dprpc_rpc.h) as negative errno.
 * Thread context: any thread but the polling thread of the RRef's agent;
 * when no io lcore polls, the calling thread polls while it waits.
 */
int dprpc_rref_rpc_sync_id(struct dprpc_rref *rref, uint32_t handler_id, const void *args,
	size_t len, uint64_t timeout_us, void *out, size_t *out_len, struct dprpc_error *err);

/** dprpc_rref_rpc_sync_id() by handler name (-EINVAL for a NULL
 * @p handler). */
int dprpc_rref_rpc_sync(struct dprpc_rref *rref, const char *handler, const void *args, size_t len,
	uint64_t timeout_us, void *out, size_t *out_len, struct dprpc_error *err);

/**
 * A new RRef on the owner of @p rref whose value is what the handler
 * replies when called with @p rref's value and @p args (PyTorch's
 * rref.remote().method(args)).
 *
 * @param handler_id dprpc_handler_id() of the handler's name.
 * @param args, len  the arguments, copied before return (the caller keeps
 *                   @p args).
 * @param timeout_us the creation's timeout, as for dprpc_remote_id().
 * @return a handle owned by the caller, as dprpc_remote_id(); NULL with
 *         rte_errno as dprpc_remote_id() (EINVAL also for a NULL
 *         @p rref), ESHUTDOWN if @p rref was released by
 *         dprpc_rref_shutdown(), or the creation's error if @p rref's
 *         creation failed.  After NULL nothing was created.
 * Thread context: any thread.
 */
struct dprpc_rref *dprpc_rref_remote_id(struct dprpc_rref *rref, uint32_t handler_id,
	const void *args, size_t len, uint64_t timeout_us);

/** dprpc_rref_remote_id() by handler name (rte_errno EINVAL for a NULL
 * @p handler). */
struct dprpc_rref *dprpc_rref_remote(struct dprpc_rref *rref, const char *handler, const void *args,
	size_t len, uint64_t timeout_us);

/** dprpc_rref_remote_id() with the arguments gathered from @p iovcnt
 * buffers, as dprpc_remote_iov() gathers them (and refuses them): read
 * before return, the caller keeps them.  Thread context: as
 * dprpc_rref_remote_id(). */
struct dprpc_rref *dprpc_rref_remote_iov(struct dprpc_rref *rref, uint32_t handler_id,
	const struct iovec *iov, unsigned int iovcnt, uint64_t timeout_us);

/**
 * The value an RRef proxy call was made on, in its handler.
 * @param len receives its length (may be NULL).
 * @return the owner's value (valid until the request is answered), or NULL
 *         (and *len 0) if the request is not a proxy call (or is NULL:
 *         rte_errno EINVAL).
 */
const void *dprpc_request_rref_value(const struct dprpc_request *req, size_t *len);

/**
 * Fork a handle to pass it to another worker inside a payload (PyTorch
 * pickling an RRef): writes DPRPC_RREF_FORK_SIZE bytes to @p buf.  The
 * receiver rebuilds it with dprpc_rref_from_fork(), exactly once.  Until
 * the owner confirms that child, this worker keeps a reference (G2), even
 * past dprpc_rref_release() of the handle.
 *
 * Fork data that is never rebuilt does not pin the RRef for ever: an
 * unconfirmed child is dropped (its reference released) once the owner is
 * declared down or restarts, or after the agent's default timeout as it
 * was when the child was forked (dprpc_rpc_timeout(); never if 0), counted in
 * dprpc_rref_debug.pending_forks_dropped (forks_expired on the owner).
 * Rebuilt later than that, it may find the RRef deleted (-ENOENT).  Name
 * the receiver with dprpc_rref_fork_to() to have it dropped as soon as
 * the receiver is declared down.
 *
 * Thread context: any thread.
 *
 * @return DPRPC_RREF_FORK_SIZE; -ENOSPC (@p cap too small), -ENOMEM, the
 *         creation's error code if the RRef failed (nothing is forked),
 *         -ESHUTDOWN (the handle was released by dprpc_rref_shutdown()),
 *         -EINVAL.
 */
int dprpc_rref_fork(struct dprpc_rref *rref, void *buf, size_t cap);

/**
 * dprpc_rref_fork() for worker @p to alone: dprpc_rref_from_fork() of the
 * data on any other worker fails with EINVAL.  Besides the bounds of
 * dprpc_rref_fork(), the child is dropped at once (its reference
 * released, on the parent or on the owner) if @p to is declared down or
 * restarts before it is confirmed (PyTorch's RRef pickled into a message
 * to one worker).
 *
 * @return as dprpc_rref_fork(); -EINVAL also if @p to is not a rank of
 *         the world.
 * Thread context: any thread.
 */
int dprpc_rref_fork_to(struct dprpc_rref *rref, unsigned int to, void *buf, size_t cap);

/**
 * Rebuild a forked RRef on the receiving worker (PyTorch unpickling an
 * RRef).  A user tells the owner, which confirms it (and tells the
 * parent); on the owner itself the result is an owner handle.
 *
 * @return a handle owned by the caller; NULL with rte_errno: EINVAL (not
 *         fork data of this world, or made by dprpc_rref_fork_to() for
 *         another worker), EPROTO (bad fork data), ENOENT (on the
 *         owner: the RRef was deleted), ENOBUFS.  A user rebuilt from the
 *         data of a deleted RRef comes back, but its creation future fails
 *         with -ENOENT (the owner's answer), and so do its uses.
 */
struct dprpc_rref *dprpc_rref_from_fork(struct dprpc_agent *agent, const void *buf, size_t len);

/** Counts of an agent's RRef contexts (PyTorch's
 * _rref_context_get_debug_info); a snapshot. */
struct dprpc_rref_debug {
	uint64_t num_owner_rrefs;   /**< values this worker owns */
	uint64_t num_forks;	    /**< users of those values the owner knows */
	uint64_t num_owner_handles; /**< local handles on owned values */
	uint64_t num_users;	    /**< user references this worker holds */
	uint64_t num_pending_users; /**< of those, not confirmed yet */
	uint64_t num_pending_forks; /**< children forked here, not confirmed */
	uint64_t deletes_unknown;   /**< deletions of forks the owner did not know */
	uint64_t messages_failed;   /**< RRef messages (delete, accept) that failed */
	/** Owner side: user references (forks, and placeholders of pending
	 * creations) of values owned here, dropped because the worker that
	 * held them was declared down or restarted. */
	uint64_t forks_dropped_peer_down;
	/** Children forked here dropped unconfirmed: their owner, or the
	 * worker they were forked for, was declared down or restarted, or
	 * they stayed unconfirmed for the default timeout (fork data never
	 * rebuilt). */
	uint64_t pending_forks_dropped;
	/** Owner side: forks of owner handles whose fork data was not rebuilt
	 * within the default timeout. */
	uint64_t forks_expired;
};

/** Fill @p d.  @return 0 or -EINVAL. */
int dprpc_rref_debug_get(const struct dprpc_agent *agent, struct dprpc_rref_debug *d);

/** What an entry of dprpc_rref_list() is. */
enum dprpc_rref_kind {
	DPRPC_RREF_OWNED = 0,	     /**< a value this worker owns */
	DPRPC_RREF_USER = 1,	     /**< a reference this worker holds */
	DPRPC_RREF_PENDING_FORK = 2, /**< a child forked here, unconfirmed */
};

/** One RRef context, for leak reports. */
struct dprpc_rref_info {
	uint8_t kind;	  /**< enum dprpc_rref_kind */
	bool confirmed;	  /**< USER: confirmed by the owner */
	uint16_t owner;	  /**< the owner's rank */
	uint64_t rref_id; /**< the RRef */
	uint64_t fork_id; /**< USER and PENDING_FORK: the fork; else 0 */
	uint32_t refs;	  /**< OWNED: forks + local handles; else 0 */
};

/**
 * List the RRefs this agent still owns or holds (a leak report).
 * @param out up to @p n entries are written (may be NULL with n 0).
 * @return the number of contexts (may exceed @p n), or -EINVAL.
 * Lookups and walks take no lock (RCU read side).
 */
int dprpc_rref_list(struct dprpc_agent *agent, struct dprpc_rref_info *out, unsigned int n);

/** Print the list of dprpc_rref_list() and the debug counts. */
void dprpc_rref_dump(struct dprpc_agent *agent, FILE *f);

/** dprpc_rref_shutdown() flag: log every RRef left and return their count. */
#define DPRPC_RREF_REPORT_LEAKS 1u

/**
 * Graceful RRef shutdown (PyTorch's shutdown(graceful=True), RRef part),
 * called by every worker before destroying its agent: drops the reference
 * of every handle the application still holds here (telling the owners,
 * dropping local owner references), then waits, up to @p timeout_us (0:
 * no limit), until the other workers have released theirs on the values
 * owned here and the children forked here are confirmed.
 *
 * The handles themselves stay valid memory, owned by the application,
 * until it calls dprpc_rref_release() on each (which then returns 0 and
 * sends nothing) or destroys the agent.  Meanwhile their accessors
 * (dprpc_rref_id(), dprpc_rref_owner(), dprpc_rref_is_owner(),
 * dprpc_rref_agent(), dprpc_rref_owner_name(),
 * dprpc_rref_confirmed_by_owner(), dprpc_rref_creation_future()) still
 * answer, and every use fails with ESHUTDOWN: dprpc_rref_to_here*(),
 * dprpc_rref_rpc_*(), dprpc_rref_remote*() (NULL or a negative return,
 * rte_errno ESHUTDOWN), dprpc_rref_fork() and dprpc_rref_local_value()
 * (-ESHUTDOWN).  A use racing with shutdown on another thread either
 * works or fails so, always on valid memory.
 *
 * @param flags 0 ignores what is left, as PyTorch does by default;
 *              DPRPC_RREF_REPORT_LEAKS logs it (dprpc_rref_dump()) and
 *              returns its count.
 * @return 0, or with DPRPC_RREF_REPORT_LEAKS the number of contexts left
 *         (> 0 means a leak); -EINVAL (NULL agent, a flag other than
 *         DPRPC_RREF_REPORT_LEAKS, or called on the agent's poller).
 * Thread context: not the polling thread of the agent.
 */
int dprpc_rref_shutdown(struct dprpc_agent *agent, uint64_t timeout_us, unsigned int flags);

#ifdef __cplusplus
}
#endif

#endif /* DPRPC_RREF_H */
