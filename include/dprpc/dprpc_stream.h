/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Server streaming (docs/serving.md, "Streaming"): a handler answers one
 * call with 0..N chunks, then an end carrying a final status (LLM tokens,
 * partial results).
 *
 * Server side: a handler of a stream call sends chunks with
 * dprpc_stream_send() and ends with dprpc_stream_end(), from the handler
 * or later from any thread after returning DPRPC_DEFERRED, exactly like a
 * deferred reply.  Caller side: dprpc_rpc_stream() runs a callback per
 * chunk, in order, and returns a future completed at the end;
 * dprpc_stream_open() gives an iterator instead (dprpc_stream_next()).
 * Each has an _id form taking the worker's rank and the handler's id.
 *
 * Chunks are sequenced: each travels as one frame or, over
 * DPRPC_MAX_FRAME_PAYLOAD bytes, as several; lost frames are resent
 * (the caller acknowledges and asks for what it misses, the server keeps
 * what is not acknowledged), duplicates are dropped and counted
 * (dprpc_agent_stats.drops[DPRPC_DROP_DUPLICATE]), and the request runs
 * once however often it is resent.
 *
 * Flow control: the caller's window is its dprpc_agent_conf.calls.credits (at
 * most the server's own credits), in frames: the server never has more
 * than a window of frames sent and not consumed by the caller (a chunk of
 * one frame is one frame; a longer chunk counts its frames, and one larger
 * than the window goes alone, when nothing is outstanding).  A chunk is
 * consumed when its callback returns, or when dprpc_stream_next() hands it
 * out.  When the window is full dprpc_stream_send() returns -EAGAIN at
 * once: it never waits, so it may be called on a polling thread; try again
 * later (e.g. from a timer or a thread of yours), or send from a thread
 * that may wait with dprpc_stream_send_wait(), which returns once the
 * window has room.  The end is not a chunk and always goes.
 *
 * Timeout: a stream's timeout is its total time, as for any call: the
 * deadline counted from dprpc_rpc_stream() travels with the request
 * (dprpc_request_remaining_us() on the server) and the stream fails
 * -ETIMEDOUT when it passes without an end, chunks not yet received
 * dropped.  DPRPC_TIMEOUT_NONE: no limit.
 *
 * Cancellation: dprpc_future_cancel() on the stream's future (or
 * dprpc_stream_close() before the end, or a chunk callback returning
 * non-zero) stops it: no chunk is delivered after it, the server is told
 * (the CANCEL frame), its handler sees dprpc_request_cancelled() and
 * dprpc_stream_send() returns -ECANCELED; the handler still ends the
 * request (dprpc_stream_end(), or any reply) to release it, and nothing
 * more is sent.
 *
 * Limits: a stream's request is at most DPRPC_MAX_FRAME_PAYLOAD bytes; a
 * stream to the agent itself is not supported; each chunk is at most the
 * server's max_msg_size and the caller's (over the caller's, the stream
 * fails -EMSGSIZE).
 */
#ifndef DPRPC_STREAM_H
#define DPRPC_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include <dprpc/dprpc_agent.h>
#include <dprpc/dprpc_future.h>
#include <dprpc/dprpc_handler.h>
#include <dprpc/dprpc_rpc.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A stream read with an iterator (dprpc_stream_open()): opaque. */
struct dprpc_stream;

/**
 * A chunk callback.
 *
 * @param data the chunk (DPRPC_PAYLOAD_ALIGN-aligned; NULL for an empty
 *             chunk), owned by the library, valid only during the call.
 * @param len  its length.
 * @param arg  the argument given to dprpc_rpc_stream().
 * @return 0 to go on; anything else cancels the stream (the future fails
 *         -ECANCELED, as with dprpc_future_cancel()).
 *
 * Thread context: the caller's agent's polling thread, once per chunk, in
 * order, never concurrently.  It must not block or wait for the agent (as
 * a completion callback); while it runs, the chunk is not consumed, so a
 * slow callback slows the server down (flow control).
 */
typedef int (*dprpc_chunk_fn_t)(const void *data, size_t len, void *arg);

/**
 * Call a stream handler: each chunk goes to @p on_chunk in order.
 *
 * @param to          the destination worker's rank (not this agent's own:
 *                    see the file comment).
 * @param handler_id  dprpc_handler_id() of the handler's name.
 * @param data, len   the request, copied before return; at most
 *                    DPRPC_MAX_FRAME_PAYLOAD.
 * @param timeout_us  the whole stream's timeout (see the file comment),
 *                    DPRPC_TIMEOUT_NONE or DPRPC_TIMEOUT_DEFAULT.
 * @param on_chunk    the chunk callback (not NULL).
 * @param arg         its argument.
 * @return a future with one reference for the caller, completed once the
 *         end was received, after every chunk's callback: DONE with an
 *         empty value for an end with status 0; FAILED with the end's
 *         negative status (origin: the server) for an error end, or with
 *         any error a call can end with (dprpc_rpc.h: -ETIMEDOUT,
 *         -EHOSTDOWN, -ECONNRESET, -ESHUTDOWN, -EBUSY, -ENOENT, ...;
 *         -ECANCELED once cancelled; -EMSGSIZE for a chunk over this
 *         agent's max_msg_size; -EPROTO if the server broke the window).
 *         A handler that answers with dprpc_reply() or dprpc_reply_error()
 *         (or whose request the library answers, e.g. -EPROTO for a
 *         handler returning 0 without an end) ends the stream at once
 *         with that answer as the future's value or error; chunks not
 *         received by then are dropped.
 *         NULL with rte_errno: EINVAL (NULL agent or callback, a rank
 *         beyond the world, handler id 0, NULL data with len > 0),
 *         EMSGSIZE (request over DPRPC_MAX_FRAME_PAYLOAD), ENOTSUP (@p to
 *         is this agent), ENOMEM (no memory for the stream's state), and
 *         rpc_async's (EAGAIN, ENOBUFS, EHOSTDOWN, ESHUTDOWN).  After NULL
 *         nothing was sent.
 *
 * Thread context: any thread (as dprpc_rpc_async_id()).  Ownership:
 * @p data is the caller's (copied); the future's reference is the
 * caller's, to put; @p arg is the caller's, and must stay valid until the
 * future completes.
 */
struct dprpc_future *dprpc_rpc_stream_id(struct dprpc_agent *agent, unsigned int to,
	uint32_t handler_id, const void *data, size_t len, uint64_t timeout_us,
	dprpc_chunk_fn_t on_chunk, void *arg);

/**
 * dprpc_rpc_stream_id() by names, as dprpc_rpc_async() names them:
 * resolves @p to in the world (rte_errno ENOENT if absent) and hashes
 * @p handler; rte_errno EINVAL also for a NULL @p to or @p handler.
 */
struct dprpc_future *dprpc_rpc_stream(struct dprpc_agent *agent, const char *to,
	const char *handler, const void *data, size_t len, uint64_t timeout_us,
	dprpc_chunk_fn_t on_chunk, void *arg);

/**
 * Call a stream handler and read its chunks with dprpc_stream_next().
 * Parameters and errors as dprpc_rpc_stream_id() without a callback (NULL
 * with rte_errno).
 *
 * @return the stream, owned by the caller until dprpc_stream_close();
 *         received chunks wait in it, unconsumed (at most the window),
 *         until read.  Close every stream before dprpc_agent_destroy():
 *         the chunks it holds are mbufs of the agent's pool.
 *
 * Thread context: any thread.
 */
struct dprpc_stream *dprpc_stream_open_id(struct dprpc_agent *agent, unsigned int to,
	uint32_t handler_id, const void *data, size_t len, uint64_t timeout_us);

/**
 * dprpc_stream_open_id() by names, as dprpc_rpc_stream() names them
 * (rte_errno ENOENT for an unknown worker, EINVAL for a NULL name).
 */
struct dprpc_stream *dprpc_stream_open(struct dprpc_agent *agent, const char *to,
	const char *handler, const void *data, size_t len, uint64_t timeout_us);

/** dprpc_stream_next() at the end of a stream that ended with status 0. */
#define DPRPC_STREAM_END 1

/** dprpc_stream_next()'s timeout that does not wait (a timeout of 1 us
 * is taken as this). */
#define DPRPC_STREAM_POLL 1

/**
 * The next chunk of @p s, in order.
 *
 * @param data receives the chunk (DPRPC_PAYLOAD_ALIGN-aligned; NULL for an
 *             empty one), owned by the stream, valid until the next call
 *             of dprpc_stream_next() or dprpc_stream_close() on @p s.
 * @param len  receives its length.
 * @param timeout_us how long to wait for a chunk or the end, in
 *             microseconds: DPRPC_TIMEOUT_NONE (0) without limit (the
 *             stream's own timeout still ends it); DPRPC_STREAM_POLL not
 *             at all: it looks, polls the agent once if nobody else does
 *             (not on the agent's polling thread), and looks again.
 *             While it waits it polls the agent when nobody else does
 *             (a caller-driven agent), else (an io lcore, or another
 *             thread, polls) it parks, woken by the next chunk or the end,
 *             looking at the agent again every 150 us in case its other
 *             poller stopped: as dprpc_future_wait().
 * @return 0: a chunk (consumed now: the server may send one more);
 *         DPRPC_STREAM_END: every chunk was read and the stream ended with
 *         status 0; a negative errno: every chunk received was read and
 *         the stream failed with it (the future's error: an error end, a
 *         timeout, a cancellation...); -EAGAIN: no chunk within
 *         @p timeout_us (at once for DPRPC_STREAM_POLL), the stream goes
 *         on; -EDEADLK: nothing to hand out on the agent's polling thread
 *         (a completion callback, an inline handler) with a timeout other
 *         than DPRPC_STREAM_POLL: nothing can come while it waits, so
 *         nothing waited; -EINVAL: NULL @p s, @p data or @p len.
 *
 * Thread context: any thread, one at a time per stream.
 */
int dprpc_stream_next(struct dprpc_stream *s, const void **data, size_t *len, uint64_t timeout_us);

/**
 * The future of @p s (completed at the stream's end, as dprpc_rpc_stream()
 * describes), borrowed: valid until dprpc_stream_close() (take a reference
 * with dprpc_future_get() to keep it longer).  Use it to wait for the end,
 * read the final error or cancel the stream (dprpc_future_cancel()).
 * NULL, rte_errno EINVAL, for a NULL @p s.
 * Thread context: any thread.
 */
struct dprpc_future *dprpc_stream_future(const struct dprpc_stream *s);

/**
 * Release @p s: a stream that has not ended is cancelled first
 * (dprpc_future_cancel()); the chunks it holds are freed.  @p s must not
 * be used again.
 * @return 0; -EINVAL for NULL.
 * Thread context: any thread, not concurrently with dprpc_stream_next() on
 * @p s.
 */
int dprpc_stream_close(struct dprpc_stream *s);

/**
 * Send a chunk of a stream call (server side).
 *
 * @param req  a request of a stream call (dprpc_rpc_stream(),
 *             dprpc_stream_open()), not ended.
 * @param data, len the chunk, copied before return (NULL with len 0: an
 *             empty chunk); len at most the agent's max_msg_size.
 * @return 0: the chunk is on its way (the library resends what is lost);
 *         -EAGAIN: the caller's window is full (the caller has not
 *         consumed enough), nothing sent, counted in
 *         dprpc_agent_stats.stream_window_full: try again later;
 *         -ECANCELED: the caller cancelled the stream (or was declared
 *         down or restarted): stop, and end the request;
 *         -ENOTSUP: @p req is not a stream call;
 *         -EALREADY: the stream was ended (or answered) already;
 *         -EMSGSIZE: over max_msg_size; -ENOBUFS: no mbufs for it, nothing
 *         sent; -EINVAL: NULL @p req, NULL @p data with len > 0.
 *
 * Thread context: any thread holding the request (the handler, or the
 * thread it deferred to), one thread at a time per request.  Never waits:
 * -EAGAIN rather than block, so the polling thread may call it.  From a
 * thread other than the poller the frames go through the agent's tx ring
 * (as a deferred reply: on a full ring it retries, polling when nobody
 * else does).
 */
int dprpc_stream_send(struct dprpc_request *req, const void *data, size_t len);

/**
 * dprpc_stream_send(), waiting while the caller's window is full: the
 * chunk goes as soon as the caller has consumed enough.  While it waits
 * the calling thread polls the agent if nobody else does (the caller's
 * credits come in frames), else it pauses, then sleeps 10 to 100 us
 * between looks.  Counted once in dprpc_agent_stats.stream_window_full
 * however long it waits.
 *
 * @param timeout_us how long to wait at most, in microseconds;
 *                   DPRPC_TIMEOUT_DEFAULT: the agent's default timeout;
 *                   DPRPC_TIMEOUT_NONE: no limit of its own (it returns
 *                   -ECANCELED once the caller cancelled the stream or was
 *                   declared down).
 * @return as dprpc_stream_send(), but never -EAGAIN: -ETIMEDOUT if the
 *         window stayed full for @p timeout_us (nothing sent); -EDEADLK
 *         at once on the agent's polling thread (an inline handler), where
 *         the window could open only by the poll it holds up.
 * Thread context: as dprpc_stream_send(), but not the polling thread.
 */
int dprpc_stream_send_wait(
	struct dprpc_request *req, const void *data, size_t len, uint64_t timeout_us);

/**
 * End a stream call (server side): after every chunk sent, the caller's
 * future completes with @p status.
 *
 * @param status 0, or a negative errno (positive is negated): the stream
 *               ends with that error, after its chunks.
 * @return 0: the request is answered and consumed (must not be used
 *         again), also after -ECANCELED from dprpc_stream_send() (then
 *         nothing is sent, though -ENOBUFS below can still come first);
 *         -EALREADY: ended or answered already (counted
 *         in reply_again); -ENOTSUP: not a stream call; -ENOBUFS: no mbuf,
 *         the request is still the caller's (end it again); -EINVAL: NULL.
 *
 * Thread context: as dprpc_stream_send().
 */
int dprpc_stream_end(struct dprpc_request *req, int status);

#ifdef __cplusplus
}
#endif

#endif /* DPRPC_STREAM_H */
