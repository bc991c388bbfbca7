/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Server streaming (dprpc_stream.h; the protocol: docs/serving.md,
 * "Streaming", and docs/wire.md, "Server streaming"): stream_tx.c is the
 * server's side, stream_rx.c the caller's.
 *
 * Threads.  dprpc_stream_send()/_end() run on the thread holding the
 * request; their frames reach the poller like a deferred reply's
 * (dp_submit()), which keeps them in the slot's struct dp_srv_stream as it
 * stages them (dp_stream_stage()).  The sender reads the window from the
 * request (st_limit, written by the poller).  A caller's struct
 * dprpc_stream is shared by its slot (the poller) and an iterator's
 * reader: reference counted, its delivered chunks an SP/SC ring (the
 * poller produces, the reader consumes).
 */
#ifndef DP_STREAM_H
#define DP_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include <dprpc/dprpc_stream.h>

#include "dp_rpc.h"

/* The server's state of one stream, in its server slot (poller only). */
struct dp_srv_stream {
	uint32_t base;	     /* every frame below is acknowledged */
	uint32_t next;	     /* 1 + the highest frame staged */
	uint32_t limit;	     /* the caller lets us send below this */
	uint32_t cap;	     /* q's entries, a power of two */
	uint32_t handler_id; /* the request's: the kept answer once ended */
	uint32_t end_seq;    /* the end's frame, once staged */
	uint32_t end_status;
	bool end_staged;
	struct rte_mbuf **q; /* frame seq at q[seq & (cap - 1)], base <= seq < next */
};

/* The caller's side of a stream call (the public struct dprpc_stream). */
struct dprpc_stream {
	/* The slot's (or its request frame's, on the way to the slot) and
	 * the iterator's.  acq_rel: the last one frees. */
	_Atomic uint32_t refs;
	struct dp_rpc *a;
	dprpc_chunk_fn_t on_chunk; /* NULL: an iterator */
	void *arg;
	struct dprpc_future *fut; /* an iterator: the application's reference */
	uint32_t window;	  /* frames; the request's credits */
	/* Frames consumed: by the callback (the poller writes) or the
	 * iterator's reader (it writes); read by the poller for the limit it
	 * grants (relaxed: a bound only, nothing is published through it). */
	_Atomic uint32_t consumed;
	/* The iterator: chunks delivered, not read yet (SP: the poller; SC:
	 * the reader; the ring publishes each chunk), and the one last read
	 * (the reader's).  A chunk is an mbuf trimmed to its payload, or a
	 * struct dp_chunk_buf with the low bit of its address set. */
	struct rte_ring *ready;
	void *cur;
	/* The iterator's reader parks on wake (a futex word) while nothing
	 * comes; whoever queues a chunk or completes the future increments
	 * it, then wakes the reader if waiters says it parks (seq_cst both
	 * sides: dp_stream_park(), dp_stream_wake()). */
	_Atomic uint32_t wake;
	_Atomic uint32_t waiters;
	/* The poller's, while a slot holds the stream: */
	bool started;	  /* a frame came: probe, do not resend the request */
	uint32_t cum;	  /* the next frame to deliver */
	uint32_t hi;	  /* 1 + the highest frame held */
	uint32_t ack_cum; /* cum and limit as last acknowledged */
	uint32_t ack_limit;
	uint32_t nacked;	  /* 1 + the cum last NACKed, 0: none since progress */
	uint32_t cap;		  /* held's entries, a power of two >= window */
	uint32_t end_status;	  /* of a held end frame */
	struct rte_mbuf **held;	  /* frames beyond cum, payload only */
	uint16_t *hflags;	  /* their flags */
	struct dp_chunk_buf *buf; /* a chunk of several frames being joined */
	uint32_t buf_frames;
};

/* A chunk of several frames, joined (DPDK heap). */
struct dp_chunk_buf {
	uint32_t len, cap;
	uint8_t pad[56];
	uint8_t data[]; /* cache-line aligned */
};

/* The stream of a stream call's request frame (DP_REQ_STREAM), in a
 * dynamic field of its own (submit.c), set by the submitter: the frame's
 * reference to it. */
extern int dp_stream_offset;
static inline struct dprpc_stream **
dp_stream_field(struct rte_mbuf *m)
{
	return RTE_MBUF_DYNFIELD(m, dp_stream_offset, struct dprpc_stream **);
}

/* call.c: dprpc_rpc_async_id() for a stream call of @st (NULL: an
 * ordinary call); a frame that goes carries a reference to @st. */
struct dprpc_future *dp_call(struct dp_rpc *a, unsigned int to, uint32_t handler_id,
	const void *data, size_t len, uint64_t timeout_us, struct dprpc_stream *st);

/* stream_rx.c (the caller) */
/* The stream of request frame @m, or NULL for an ordinary call: the
 * frame's reference passes to the caller of this. */
static inline struct dprpc_stream *
dp_stream_of(struct rte_mbuf *m)
{
	const struct dp_wire_hdr *h = dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *));

	if (likely((h->flags & rte_cpu_to_be_16(DP_REQ_STREAM)) == 0))
		return NULL;
	return *dp_stream_field(m);
}
void dp_stream_put(struct dprpc_stream *st);
/* Free a chunk the iterator read (an mbuf, or a struct dp_chunk_buf). */
void dp_chunk_free(void *c);
/* What the reader of @s gets without waiting: 0 and a chunk, the end
 * (DPRPC_STREAM_END or the future's error), or -EAGAIN. */
int dp_stream_look(struct dprpc_stream *s, const void **data, size_t *len);
/* The reader of @s parks until a chunk is queued, the future completes, a
 * slice passes or @deadline (TSC; 0: none). */
void dp_stream_park(struct dprpc_stream *s, uint64_t deadline);
/* Slot @s is released: free what the poller holds of its stream, drop
 * the slot's reference. */
void dp_stream_slot_clear(struct dp_rpc *a, struct dp_slot *s);
/* A CHUNK or STREAM_ACK frame from the rx demux. */
void dp_stream_rx(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_parsed *p);
/* The timer of slot @i of peer @p, a stream: grant what the iterator
 * consumed; once started, probe instead of resending the request.  True
 * if it probed (the slot's resend is done for this tick). */
bool dp_stream_timer(struct dp_rpc *a, unsigned int p, unsigned int i, uint64_t now);

/* stream_tx.c (the server) */
/* A stream request @p on server slot @e: its state, NULL if no memory. */
struct dp_srv_stream *dp_stream_srv_new(const struct dp_rpc *a, const struct dp_parsed *p);
/* Free @e's stream: its kept frames, its state. */
void dp_stream_srv_free(struct dp_rpc *a, struct dp_peer *peer, struct dp_srv_slot *e);
/* A CHUNK frame to stage: kept in its stream, or discarded if the stream
 * is gone (cancelled, reset). */
void dp_stream_stage(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_wire_hdr *h);
/* Send a chunk of @len bytes of @data on @req's stream: 0, -EAGAIN (the
 * window is full; counted in stream_window_full with @count), or another
 * -errno.  Any thread that holds the request. */
int dp_stream_send(struct dprpc_request *req, const void *data, size_t len, bool count);
/* A STREAM_ACK from the caller. */
void dp_stream_rx_ack(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_parsed *p);

#endif /* DP_STREAM_H */
