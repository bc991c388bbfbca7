/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Server streaming, the caller's side (the protocol: docs/serving.md,
 * "Streaming"): dprpc_rpc_stream() and the iterator (dprpc_stream_open(),
 * _next(), _close()) on any thread; on the poller, the CHUNK frames of a
 * stream call delivered in order (dp_stream_rx()), the acknowledgements
 * that grant the window, and the timer's probes (dp_stream_timer()).
 *
 * A struct dprpc_stream lives as long as its references: the slot's (from
 * the request frame, which carries it to dp_start_call()) and, for an
 * iterator, the application's.  What only the poller touches (frames held
 * beyond a gap, a chunk being joined) is freed when the slot lets go of
 * it (dp_stream_slot_clear()); the iterator's queue and its last chunk with
 * the last reference (dp_stream_put()).  A future completed (done, failed,
 * cancelled, timed out) means no chunk is queued after it: the poller
 * queues chunks before it completes the future, and the reader checks the
 * future (acquire) before its last look at the queue.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "dp_rpc.h"
#include "dp_client.h"
#include "dp_eal.h"
#include "dp_liveness.h"
#include "dp_msg.h"
#include "dp_poll.h"
#include "dp_stream.h"
#include "dp_submit.h"
#include "fut_internal.h"
#include "dprpc_atomic.h"
#include <dprpc/dprpc_stats.h>

#define DP_CHUNK_BIG 1u /* the low bit of a queued chunk: a struct dp_chunk_buf */

/* A waiting reader's longest park: dprpc_future_wait()'s (FUT_SLICE_NS,
 * future.c); its spins are in wait.c. */
#define DP_STREAM_SLICE_NS 150000u

/* Frames of a chunk of @len bytes (as the server counts them). */
static inline uint32_t
dp_chunk_frames(size_t len)
{
	return len == 0 ? 1 : (uint32_t)((len + DP_FRAG - 1) / DP_FRAG);
}

void
dp_chunk_free(void *c)
{
	if (c == NULL)
		return;
	if ((uintptr_t)c & DP_CHUNK_BIG)
		rte_free((void *)((uintptr_t)c & ~(uintptr_t)DP_CHUNK_BIG));
	else
		rte_pktmbuf_free(c);
}

static void
dp_chunk_data(void *c, const void **data, size_t *len)
{
	if ((uintptr_t)c & DP_CHUNK_BIG) {
		struct dp_chunk_buf *b = (void *)((uintptr_t)c & ~(uintptr_t)DP_CHUNK_BIG);

		*len = b->len;
		*data = b->len > 0 ? b->data : NULL;
	} else {
		struct rte_mbuf *m = c;

		*len = m->data_len;
		*data = m->data_len > 0 ? rte_pktmbuf_mtod(m, const void *) : NULL;
	}
}

/* What the poller holds of @st: frames beyond a gap, a chunk being joined. */
static void
dp_stream_poller_free(struct dprpc_stream *st)
{
	uint32_t i;

	if (st->held != NULL)
		for (i = 0; i < st->cap; i++)
			rte_pktmbuf_free(st->held[i]);
	free(st->held);
	free(st->hflags);
	st->held = NULL;
	st->hflags = NULL;
	rte_free(st->buf);
	st->buf = NULL;
}

void
dp_stream_put(struct dprpc_stream *st)
{
	void *c;

	/* acq_rel: the last one frees, after every other holder's use. */
	if (st == NULL || atomic_fetch_sub_explicit(&st->refs, 1, memory_order_acq_rel) != 1)
		return;
	dp_stream_poller_free(st);
	if (st->ready != NULL) {
		while (rte_ring_sc_dequeue(st->ready, &c) == 0)
			dp_chunk_free(c);
		rte_free(st->ready);
	}
	dp_chunk_free(st->cur);
	free(st);
}

void
dp_stream_slot_clear(struct dp_rpc *a, struct dp_slot *s)
{
	(void)a;
	dp_stream_poller_free(s->st);
	dp_stream_put(s->st);
	s->st = NULL;
}

/* A chunk was queued for @st's reader, or its future completed: wake the
 * reader if it parks.  seq_cst: the Dekker pair with dp_stream_park(),
 * which increments waiters and then loads wake: either the reader loads
 * this increment (and then sees what was queued or completed before it)
 * or this load sees its waiters count and wakes it (a FUTEX_WAIT after
 * the increment finds the word changed and returns at once). */
static void
dp_stream_wake(struct dprpc_stream *st)
{
	atomic_fetch_add_explicit(&st->wake, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&st->waiters, memory_order_seq_cst) != 0)
		(void)syscall(SYS_futex, &st->wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* An iterator's future completed (however: its end, a timeout, a
 * cancellation...): wake the reader, drop the callback's reference. */
static void
dp_stream_done_cb(struct dprpc_future *f, void *arg)
{
	struct dprpc_stream *st = arg;

	(void)f;
	dp_stream_wake(st);
	dp_stream_put(st);
}

/* A stream for a call of agent @a, with the creator's reference. */
static struct dprpc_stream *
dp_stream_new(struct dp_rpc *a, dprpc_chunk_fn_t on_chunk, void *arg)
{
	struct dprpc_stream *st = calloc(1, sizeof(*st));
	unsigned int rsize;

	if (st == NULL)
		return NULL;
	st->a = a;
	st->on_chunk = on_chunk;
	st->arg = arg;
	st->window = a->credits;
	st->cap = rte_align32pow2(st->window);
	st->ack_limit = st->window; /* what the request grants */
	atomic_init(&st->refs, 1);
	st->held = calloc(st->cap, sizeof(*st->held));
	st->hflags = calloc(st->cap, sizeof(*st->hflags));
	if (st->held == NULL || st->hflags == NULL)
		goto fail;
	if (on_chunk == NULL) {
		/* Chunks not read: at most the window, one more for a chunk
		 * larger than it; rte_ring holds size - 1. */
		rsize = rte_align32pow2(st->window + 2);
		st->ready = rte_malloc(NULL, rte_ring_get_memsize(rsize), RTE_CACHE_LINE_SIZE);
		if (st->ready == NULL || rte_ring_init(st->ready, "dprpc_stream", rsize,
						 RING_F_SP_ENQ | RING_F_SC_DEQ) != 0)
			goto fail;
	}
	return st;
fail:
	dp_stream_put(st);
	return NULL;
}

/* Whether a stream call to rank @to may be made, before its stream is:
 * 0, or the errno that refuses it. */
static int
dp_stream_check(
	const struct dp_rpc *a, unsigned int to, uint32_t handler_id, const void *data, size_t len)
{
	if (a == NULL || to >= dp_world_n(&a->b) || handler_id == 0 || (data == NULL && len > 0))
		return EINVAL;
	if (to == a->b.rank)
		return ENOTSUP;
	return len > DPRPC_MAX_FRAME_PAYLOAD ? EMSGSIZE : 0;
}

struct dprpc_future *
dprpc_rpc_stream_id(struct dprpc_agent *agent, unsigned int to, uint32_t handler_id,
	const void *data, size_t len, uint64_t timeout_us, dprpc_chunk_fn_t on_chunk, void *arg)
{
	struct dp_rpc *a = dp_rpc_of(agent);
	int e = on_chunk == NULL ? EINVAL : dp_stream_check(a, to, handler_id, data, len);
	struct dprpc_stream *st;
	struct dprpc_future *f;

	if (e == 0 && (st = dp_stream_new(a, on_chunk, arg)) == NULL)
		e = ENOMEM;
	if (e != 0) {
		rte_errno = e;
		return NULL;
	}
	f = dp_call(a, to, handler_id, data, len, timeout_us, st);
	dp_stream_put(st); /* the slot holds its own */
	return f;
}

struct dprpc_future *
dprpc_rpc_stream(struct dprpc_agent *agent, const char *to, const char *handler, const void *data,
	size_t len, uint64_t timeout_us, dprpc_chunk_fn_t on_chunk, void *arg)
{
	int rank;

	if (on_chunk == NULL || (data == NULL && len > 0)) {
		rte_errno = EINVAL;
		return NULL;
	}
	rank = dp_resolve(agent, to, handler);
	return rank < 0 ? NULL
			: dprpc_rpc_stream_id(agent, (unsigned int)rank, dprpc_handler_id(handler),
				  data, len, timeout_us, on_chunk, arg);
}

struct dprpc_stream *
dprpc_stream_open_id(struct dprpc_agent *agent, unsigned int to, uint32_t handler_id,
	const void *data, size_t len, uint64_t timeout_us)
{
	struct dp_rpc *a = dp_rpc_of(agent);
	int err = dp_stream_check(a, to, handler_id, data, len);
	struct dprpc_stream *st;

	if (err == 0 && (st = dp_stream_new(a, NULL, NULL)) == NULL)
		err = ENOMEM;
	if (err != 0) {
		rte_errno = err;
		return NULL;
	}
	st->fut = dp_call(a, to, handler_id, data, len, timeout_us, st);
	if (st->fut == NULL) {
		err = rte_errno;
		dp_stream_put(st);
		rte_errno = err;
		return NULL;
	}
	/* The completion wakes a parked reader: the callback's reference
	 * (relaxed: we hold one).  Without a callback node the reader sees
	 * the end at its next slice. */
	atomic_fetch_add_explicit(&st->refs, 1, memory_order_relaxed);
	if (dprpc_future_add_callback(st->fut, dp_stream_done_cb, st) != 0)
		dp_stream_put(st);
	return st;
}

struct dprpc_stream *
dprpc_stream_open(struct dprpc_agent *agent, const char *to, const char *handler, const void *data,
	size_t len, uint64_t timeout_us)
{
	int rank;

	if (data == NULL && len > 0) {
		rte_errno = EINVAL;
		return NULL;
	}
	rank = dp_resolve(agent, to, handler);
	return rank < 0 ? NULL
			: dprpc_stream_open_id(agent, (unsigned int)rank, dprpc_handler_id(handler),
				  data, len, timeout_us);
}

struct dprpc_future *
dprpc_stream_future(const struct dprpc_stream *s)
{
	if (s == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	return s->fut;
}

/* The reader takes the next queued chunk of @s, if any. */
static bool
dp_stream_take(struct dprpc_stream *s, const void **data, size_t *len)
{
	void *c;

	if (rte_ring_sc_dequeue(s->ready, &c) != 0)
		return false;
	dp_chunk_free(s->cur);
	s->cur = c;
	dp_chunk_data(c, data, len);
	/* Relaxed: a bound only (struct dprpc_stream); the reader alone
	 * writes it.  The poller grants it at its next timer tick. */
	atomic_store_explicit(&s->consumed,
		atomic_load_explicit(&s->consumed, memory_order_relaxed) + dp_chunk_frames(*len),
		memory_order_relaxed);
	return true;
}

/* What the reader of @s gets without waiting: 0 and a chunk, the end
 * (DPRPC_STREAM_END or the future's error), or -EAGAIN. */
int
dp_stream_look(struct dprpc_stream *s, const void **data, size_t *len)
{
	const struct dprpc_error *e;

	if (dp_stream_take(s, data, len))
		return 0;
	if (!dprpc_future_is_done(s->fut))
		return -EAGAIN;
	/* Chunks are queued before the future completes. */
	if (dp_stream_take(s, data, len))
		return 0;
	e = dprpc_future_error(s->fut);
	return e == NULL ? DPRPC_STREAM_END : e->code;
}

/* The reader of @s parks until a chunk is queued, the future completes, a
 * slice passes or @deadline (TSC; 0: none). */
void
dp_stream_park(struct dprpc_stream *s, uint64_t deadline)
{
	uint64_t rel = DP_STREAM_SLICE_NS, now;
	struct timespec ts;
	uint32_t w;

	if (deadline != 0) {
		now = rte_rdtsc();
		if (now >= deadline)
			return;
		rel = RTE_MIN(rel, (dp_tsc_to_us(&s->a->b, deadline - now) + 1) * 1000);
	}
	/* seq_cst: the reader's half of the Dekker pair (dp_stream_wake()). */
	atomic_fetch_add_explicit(&s->waiters, 1, memory_order_seq_cst);
	w = atomic_load_explicit(&s->wake, memory_order_seq_cst);
	if (rte_ring_empty(s->ready) && !dprpc_future_is_done(s->fut)) {
		ts.tv_sec = 0;
		ts.tv_nsec = (long)rel;
		/* EAGAIN (woken before), EINTR, ETIMEDOUT: the caller looks. */
		(void)syscall(SYS_futex, &s->wake, FUTEX_WAIT_PRIVATE, w, &ts, NULL, 0);
	}
	/* Relaxed: a stale nonzero costs the waker one futile FUTEX_WAKE. */
	atomic_fetch_sub_explicit(&s->waiters, 1, memory_order_relaxed);
}

int
dprpc_stream_close(struct dprpc_stream *s)
{
	if (s == NULL)
		return -EINVAL;
	(void)dprpc_future_cancel(s->fut); /* nothing if it ended */
	dprpc_future_put(s->fut);
	s->fut = NULL;
	dp_stream_put(s);
	return 0;
}

/* Acknowledge @st, slot @slot of peer @to (call @req_num): what came in
 * order, the limit its consumption grants, what is held beyond. */
static void
dp_stream_ack(struct dp_rpc *a, unsigned int to, uint16_t slot, uint32_t req_num,
	struct dprpc_stream *st, uint16_t flags)
{
	/* Relaxed: a bound only (struct dprpc_stream). */
	uint32_t limit = atomic_load_explicit(&st->consumed, memory_order_relaxed) + st->window;
	struct dp_hdr_fields f = {
		.type = DP_FRAME_STREAM_ACK,
		.src = a->b.rank,
		.dst = (uint16_t)to,
		.slot = slot,
		.session = a->b.session,
		.dst_session = a->peers[to].session,
		.req_num = req_num,
		.handler_id = st->cum,
		.status = limit,
		.credits = (uint16_t)RTE_MIN(st->hi - st->cum, 65535u),
		.flags = flags,
	};
	struct rte_mbuf *m;
	uint8_t *frame;

	st->ack_cum = st->cum;
	st->ack_limit = limit;
	m = dp_frame_alloc(&a->b, 0, &frame);
	if (m == NULL) {
		dp_count(&a->b.st.tx_dropped, 1); /* the caller's probe says it again */
		return;
	}
	dp_frame_write(frame, a->peers[to].tmpl, &f, NULL, 0);
	dp_meta_plain(m);
	dp_count(&a->b.st.acks_sent, 1);
	dp_stage_tx(a, m);
}

/* A frame for a stream nobody here waits for (ended, cancelled, failed):
 * tell the server.  Its end: acknowledge it, so the server lets the
 * stream go; any other frame: cancel it. */
static void
dp_stream_stale(struct dp_rpc *a, const struct dp_parsed *p)
{
	struct dp_hdr_fields f = {
		.src = a->b.rank,
		.dst = p->src,
		.slot = p->slot,
		.session = a->b.session,
		.dst_session = a->peers[p->src].session,
		.req_num = p->req_num,
	};
	struct rte_mbuf *m;
	uint8_t *frame;

	if (p->flags & DP_CHUNK_END) {
		f.type = DP_FRAME_STREAM_ACK;
		f.handler_id = p->handler_id + 1;
		f.status = p->handler_id + 1;
	} else {
		dp_send_cancel(a, p->src, p->slot, p->req_num);
		return;
	}
	m = dp_frame_alloc(&a->b, 0, &frame);
	if (m == NULL)
		return;
	dp_frame_write(frame, a->peers[p->src].tmpl, &f, NULL, 0);
	dp_meta_plain(m);
	dp_stage_tx(a, m);
}

/* End the stream of slot @s of peer @src: the slot is released and its
 * future completed (@code 0: done, empty) or failed with @code and @msg. */
static void
dp_stream_finish(struct dp_rpc *a, unsigned int src, struct dp_slot *s, int code, uint16_t origin,
	const char *msg)
{
	struct dprpc_future *fut = dp_slot_release(a, &a->peers[src], s);

	if (code == 0 && fut_complete_consume(fut, NULL, 0, NULL, NULL) == 0) {
		dp_count(&a->b.st.calls_ok, 1);
		return;
	}
	if (code != 0)
		(void)fut_fail_consume(fut, code, origin, msg);
	dp_count(&a->b.st.calls_failed, 1);
	if (code == -ECANCELED)
		dp_count(&a->b.st.calls_cancelled, 1);
}

/* Hand a whole chunk (@c, @frames frames) to the application.  False if
 * the stream ended here (the slot is released). */
static bool
dp_stream_deliver(struct dp_rpc *a, unsigned int src, struct dp_slot *s, void *c, uint32_t frames)
{
	struct dprpc_stream *st = s->st;
	const void *data;
	size_t len;
	char msg[DPRPC_ERRMSG_MAX];
	int rc;

	dp_count(&a->b.st.stream_chunks_received, 1);
	if (st->on_chunk == NULL) {
		if (rte_ring_sp_enqueue(st->ready, c) == 0) {
			dp_stream_wake(st);
			return true;
		}
		/* More than the window unconsumed: the server broke it. */
		dp_chunk_free(c);
		snprintf(msg, sizeof(msg), "worker %s sent beyond the stream's window",
			a->b.world.w[src].name);
		dp_send_cancel(a, src, (uint16_t)(s - a->peers[src].slots), s->req_num);
		dp_stream_finish(a, src, s, -EPROTO, a->b.rank, msg);
		return false;
	}
	dp_chunk_data(c, &data, &len);
	rc = st->on_chunk(data, len, st->arg);
	dp_chunk_free(c);
	/* Relaxed: the poller alone writes it in this mode. */
	atomic_store_explicit(&st->consumed,
		atomic_load_explicit(&st->consumed, memory_order_relaxed) + frames,
		memory_order_relaxed);
	if (rc == 0)
		return true;
	dp_send_cancel(a, src, (uint16_t)(s - a->peers[src].slots), s->req_num);
	dp_stream_finish(a, src, s, -ECANCELED, a->b.rank, "the chunk callback stopped the stream");
	return false;
}

/* Frame @m of the stream of slot @s, the next in order (payload only,
 * @flags, @status; an end's payload is its message).  False if the
 * stream ended here. */
static bool
dp_stream_take_frame(struct dp_rpc *a, unsigned int src, struct dp_slot *s, struct rte_mbuf *m,
	uint16_t flags, uint32_t status)
{
	struct dprpc_stream *st = s->st;
	struct dp_chunk_buf *b;
	char msg[DPRPC_ERRMSG_MAX];
	uint32_t n = m->data_len, need;
	size_t ml;

	if (unlikely(flags & DP_CHUNK_END)) {
		ml = RTE_MIN((size_t)n, sizeof(msg) - 1);
		memcpy(msg, rte_pktmbuf_mtod(m, const void *), ml);
		msg[ml] = '\0';
		rte_pktmbuf_free(m);
		dp_stream_ack(a, src, (uint16_t)(s - a->peers[src].slots), s->req_num, st, 0);
		dp_stream_finish(
			a, src, s, -(int)RTE_MIN(status, (uint32_t)INT32_MAX), (uint16_t)src, msg);
		return false;
	}
	if (st->buf == NULL && (flags & DP_CHUNK_LAST))
		return dp_stream_deliver(a, src, s, m, 1); /* one frame: zero copy */
	b = st->buf;
	need = (b != NULL ? b->len : 0) + n;
	if (need > a->max_msg) {
		rte_pktmbuf_free(m);
		snprintf(msg, sizeof(msg), "a chunk from %s exceeds max_msg_size %u",
			a->b.world.w[src].name, a->max_msg);
		dp_send_cancel(a, src, (uint16_t)(s - a->peers[src].slots), s->req_num);
		dp_stream_finish(a, src, s, -EMSGSIZE, a->b.rank, msg);
		return false;
	}
	if (b == NULL || need > b->cap) {
		uint32_t cap = RTE_MAX(need, b != NULL ? 2 * b->cap : 4 * (uint32_t)DP_FRAG);
		struct dp_chunk_buf *nb;

		cap = RTE_MIN(cap, a->max_msg);
		nb = rte_realloc(b, sizeof(*nb) + cap, RTE_CACHE_LINE_SIZE);
		if (nb == NULL) {
			rte_pktmbuf_free(m);
			dp_send_cancel(a, src, (uint16_t)(s - a->peers[src].slots), s->req_num);
			dp_stream_finish(
				a, src, s, -ENOMEM, a->b.rank, "no memory to join a chunk");
			return false;
		}
		if (b == NULL) {
			nb->len = 0;
			st->buf_frames = 0;
		}
		nb->cap = cap;
		st->buf = b = nb;
	}
	memcpy(b->data + b->len, rte_pktmbuf_mtod(m, const void *), n);
	b->len += n;
	st->buf_frames++;
	rte_pktmbuf_free(m);
	if (!(flags & DP_CHUNK_LAST))
		return true;
	st->buf = NULL;
	return dp_stream_deliver(a, src, s, (void *)((uintptr_t)b | DP_CHUNK_BIG), st->buf_frames);
}

/* A CHUNK frame: deliver it in order, hold it beyond a gap, drop a
 * duplicate; acknowledge as docs/serving.md, "Streaming", says. */
static void
dp_stream_rx_chunk(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_parsed *p)
{
	struct dp_peer *peer = &a->peers[p->src];
	uint32_t seq = p->handler_id, d, q, idx;
	struct dprpc_stream *st;
	struct dp_slot *s;
	uint64_t rto;

	if (p->src == a->b.rank || p->slot >= a->max_outstanding ||
		(s = &peer->slots[p->slot])->fut == NULL || s->req_num != p->req_num ||
		s->st == NULL) {
		if (p->src != a->b.rank)
			dp_stream_stale(a, p);
		dp_drop_frame(&a->b, m, DPRPC_DROP_STALE);
		return;
	}
	if (unlikely(fut_cancelled(s->fut))) {
		/* Cancelled: nothing is delivered after it. */
		rte_pktmbuf_free(m);
		dp_slot_cancelled(a, p->src, p->slot);
		return;
	}
	st = s->st;
	d = seq - st->cum;
	if ((int32_t)d < 0 || (d > 0 && d < st->cap && st->held[seq & (st->cap - 1)] != NULL)) {
		/* Had it: the server resent it (our acknowledgement may have
		 * been lost: say it again). */
		dp_drop_frame(&a->b, m, DPRPC_DROP_DUPLICATE);
		dp_stream_ack(a, p->src, p->slot, p->req_num, st, 0);
		return;
	}
	if (d >= st->cap) {
		dp_drop_frame(&a->b, m, DPRPC_DROP_STALE); /* beyond what we hold: resent later */
		return;
	}
	/* The payload only: the chunk's bytes, aligned (dp_rpc_rx()). */
	rte_pktmbuf_adj(m, (uint16_t)(p->payload - rte_pktmbuf_mtod(m, const uint8_t *)));
	m->data_len = (uint16_t)p->payload_len;
	m->pkt_len = p->payload_len;
	if (!st->started) {
		st->started = true;
		s->sent_tsc = 0; /* no round-trip sample from a stream */
	}
	if (d > 0) {
		idx = seq & (st->cap - 1);
		st->held[idx] = m;
		st->hflags[idx] = p->flags;
		if (p->flags & DP_CHUNK_END)
			st->end_status = p->status;
		if ((int32_t)(seq + 1 - st->hi) > 0)
			st->hi = seq + 1;
	} else {
		uint16_t fl = p->flags;
		uint32_t status = p->status;

		for (;;) {
			st->cum++;
			if (!dp_stream_take_frame(a, p->src, s, m, fl, status))
				return; /* ended: the slot and st are gone */
			idx = st->cum & (st->cap - 1);
			m = st->held[idx];
			if (m == NULL)
				break;
			st->held[idx] = NULL;
			fl = st->hflags[idx];
			status = st->end_status;
		}
		if ((int32_t)(st->cum - st->hi) > 0)
			st->hi = st->cum;
		st->nacked = 0;
		/* Progress: the resend timer restarts from the peer's RTO. */
		if (s->rto_tsc != 0) {
			rto = dp_load_relaxed(&peer->rto_tsc); /* poller-written */
			s->rto_tsc = rto;
			s->rtx_tsc = a->b.now_tsc + rto;
		}
	}
	q = RTE_MAX(st->window / 4, 1u);
	if (st->hi != st->cum && st->nacked != st->cum + 1) {
		/* A gap: ask for its first frame, once per gap. */
		st->nacked = st->cum + 1;
		dp_stream_ack(a, p->src, p->slot, p->req_num, st, DP_SACK_NACK);
	} else if (st->cum - st->ack_cum >= q || (int32_t)(st->cum - st->ack_limit) >= 0 ||
		   atomic_load_explicit(&st->consumed, memory_order_relaxed) + st->window -
				   st->ack_limit >=
			   q) {
		/* A quarter window received or granted, or the server
		 * reached its limit. */
		dp_stream_ack(a, p->src, p->slot, p->req_num, st, 0);
	}
}

void
dp_stream_rx(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_parsed *p)
{
	if (p->type == DP_FRAME_STREAM_ACK)
		dp_stream_rx_ack(a, m, p);
	else
		dp_stream_rx_chunk(a, m, p);
}

bool
dp_stream_timer(struct dp_rpc *a, unsigned int p, unsigned int i, uint64_t now)
{
	struct dp_slot *s = &a->peers[p].slots[i];
	struct dprpc_stream *st = s->st;
	uint32_t limit;

	if (!st->started)
		return false; /* the request's own resends */
	/* What the reader consumed since: granted at once. */
	/* Relaxed: a bound only (struct dprpc_stream). */
	limit = atomic_load_explicit(&st->consumed, memory_order_relaxed) + st->window;
	if (limit != st->ack_limit)
		dp_stream_ack(a, p, (uint16_t)i, s->req_num, st, 0);
	if (s->rto_tsc == 0 || s->rtx_tsc > now || (s->deadline_tsc != 0 && s->deadline_tsc <= now))
		return false;
	/* Nothing came for a timeout: ask the server for what we miss. */
	s->rto_tsc = RTE_MIN(s->rto_tsc * 2, a->rto_max_tsc);
	s->rtx_tsc = now + s->rto_tsc;
	dp_stream_ack(a, p, (uint16_t)i, s->req_num, st, DP_SACK_PROBE);
	dp_count(&a->b.st.retransmits, 1);
	return true;
}
