/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Server streaming, the server's side (the protocol: docs/serving.md,
 * "Streaming"): dprpc_stream_send() and dprpc_stream_end() on the thread
 * holding the request, and on the poller the frames kept until the caller
 * acknowledges them (dp_stream_stage()), the acknowledgements and the
 * resends they ask for (dp_stream_rx_ack()).  The server has no timer:
 * the caller's probes recover what is lost.
 *
 * Window.  The sender may have frames st_next - consumed <= st_weff
 * outstanding, consumed being st_limit - st_window (the caller's limit
 * less its window), so it never has more than the window sent and not
 * consumed; a chunk longer than the window goes alone.  st_limit only
 * grows (serial order), written by the poller.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_pause.h>

#include "dp_rpc.h"
#include "dp_eal.h"
#include "dp_handler.h"
#include "dp_msg.h"
#include "dp_server.h"
#include "dp_stream.h"
#include "dp_submit.h"
#include "dprpc_atomic.h"
#include <dprpc/dprpc_stats.h>

/* Frames of a chunk of @len bytes (an empty chunk is one frame). */
static inline uint32_t
dp_chunk_frames(size_t len)
{
	return len == 0 ? 1 : (uint32_t)((len + DP_FRAG - 1) / DP_FRAG);
}

/* Write frame @seq of @req's stream, @len bytes of @data, into @m. */
static void
dp_stream_frame(struct dprpc_request *req, struct rte_mbuf *m, uint32_t seq, uint16_t flags,
	uint32_t status, const void *data, uint32_t len)
{
	struct dp_rpc *a = req->rpc;
	struct dp_hdr_fields f = {
		.type = DP_FRAME_CHUNK,
		.src = a->b.rank,
		.dst = req->src,
		.slot = req->slot,
		.session = a->b.session,
		.dst_session = req->src_session,
		.req_num = req->req_num,
		.handler_id = seq,
		.status = status,
		.flags = flags,
	};
	uint8_t *frame = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(DP_HDRS_LEN + len));

	/* An mbuf of the agent's pool holds a whole frame (dp_frame_alloc()). */
	dp_frame_write(frame, a->peers[req->src].tmpl, &f, data, len);
	dp_meta_plain(m);
}

/* dprpc_stream_send(), counting a full window in stream_window_full only
 * if @count (a waiting sender counts its first refusal alone). */
int
dp_stream_send(struct dprpc_request *req, const void *data, size_t len, bool count)
{
	struct rte_mbuf *small[16], **ms = small;
	struct dp_rpc *a;
	uint32_t k, i, out, consumed, off;
	const uint8_t *p = data;

	if (req == NULL || (data == NULL && len > 0))
		return -EINVAL;
	a = req->rpc;
	if (!req->stream)
		return -ENOTSUP;
	/* Relaxed: a hint; the sender alone answers the request (one thread
	 * at a time), so it cannot become answered under us. */
	if ((atomic_load_explicit(&req->state, memory_order_relaxed) & DP_REQ_PHASE) != DP_REQ_LIVE)
		return -EALREADY;
	if (len > a->max_msg)
		return -EMSGSIZE;
	/* Relaxed: a hint (struct dprpc_request). */
	if (atomic_load_explicit(&req->cancelled, memory_order_relaxed) & DP_REQ_CANCELLED)
		return -ECANCELED;
	k = dp_chunk_frames(len);
	/* Relaxed: a bound only (struct dprpc_request). */
	consumed = atomic_load_explicit(&req->st_limit, memory_order_relaxed) - req->st_window;
	out = req->st_next - consumed;
	if (out > 0 && out + k > req->st_weff) {
		if (count)
			dp_count_mt(&a->b.st.stream_window_full, 1);
		return -EAGAIN;
	}
	dp_thread_lcore(); /* mempool caches for this thread */
	if (k > RTE_DIM(small)) {
		ms = malloc(k * sizeof(*ms));
		if (ms == NULL)
			return -ENOBUFS;
	}
	/* All or nothing: a chunk is never sent in part. */
	if (rte_pktmbuf_alloc_bulk(a->b.mp, ms, k) != 0) {
		if (ms != small)
			free(ms);
		return -ENOBUFS;
	}
	for (i = 0, off = 0; i < k; i++, off += DP_FRAG) {
		uint32_t n = (uint32_t)RTE_MIN(len - off, (size_t)DP_FRAG);

		dp_stream_frame(req, ms[i], req->st_next + i, i + 1 == k ? DP_CHUNK_LAST : 0, 0,
			n > 0 ? p + off : NULL, n);
	}
	req->st_next += k;
	for (i = 0; i < k; i++)
		dp_submit(a, ms[i], true);
	if (ms != small)
		free(ms);
	dp_count_mt(&a->b.st.stream_chunks_sent, 1);
	return 0;
}

int
dprpc_stream_send(struct dprpc_request *req, const void *data, size_t len)
{
	return dp_stream_send(req, data, len, true);
}

int
dprpc_stream_end(struct dprpc_request *req, int status)
{
	struct dp_rpc *a;
	char msg[DPRPC_ERRMSG_MAX];
	struct rte_mbuf *m;
	uint32_t st = 0, n = 0;
	int rc;

	if (req == NULL)
		return -EINVAL;
	a = req->rpc;
	if (!req->stream)
		return -ENOTSUP;
	rc = dp_reply_claim(req);
	if (rc != 0)
		return rc;
	if (status != 0) {
		st = (uint32_t)(status < 0 ? -status : status);
		n = (uint32_t)snprintf(msg, sizeof(msg),
			"handler '%s' on worker %s ended the stream: %s",
			req->h != NULL ? req->h->name : "?", a->b.name, strerror((int)st));
		n = RTE_MIN(n, (uint32_t)sizeof(msg) - 1);
	}
	dp_thread_lcore(); /* mempool caches for this thread */
	m = rte_pktmbuf_alloc(a->b.mp);
	if (m == NULL) {
		dp_req_unclaim(req);
		return -ENOBUFS;
	}
	dp_stream_frame(req, m, req->st_next, DP_CHUNK_END, st, n > 0 ? msg : NULL, n);
	dp_req_done(req); /* the request may be freed from here on */
	dp_submit(a, m, true);
	return 0;
}

struct dp_srv_stream *
dp_stream_srv_new(const struct dp_rpc *a, const struct dp_parsed *p)
{
	uint32_t w = RTE_MAX(RTE_MIN((uint32_t)p->credits, a->credits), 1u);
	struct dp_srv_stream *st = calloc(1, sizeof(*st));

	if (st == NULL)
		return NULL;
	st->cap = rte_align32pow2(w);
	st->q = calloc(st->cap, sizeof(*st->q));
	if (st->q == NULL) {
		free(st);
		return NULL;
	}
	st->limit = RTE_MAX((uint32_t)p->credits, 1u);
	st->handler_id = p->handler_id;
	return st;
}

/* Drop the kept frames of @st from its base up to @to (excluded). */
static void
dp_stream_release(struct dp_rpc *a, struct dp_peer *peer, struct dp_srv_stream *st, uint32_t to)
{
	for (; st->base != to; st->base++) {
		struct rte_mbuf **q = &st->q[st->base & (st->cap - 1)];

		if (*q != NULL) {
			rte_pktmbuf_free(*q); /* our reference */
			*q = NULL;
			dp_srv_kept_add(a, peer, -1);
		}
	}
}

void
dp_stream_srv_free(struct dp_rpc *a, struct dp_peer *peer, struct dp_srv_slot *e)
{
	struct dp_srv_stream *st = e->st;

	dp_stream_release(a, peer, st, st->next);
	free(st->q);
	free(st);
	e->st = NULL;
}

/* Make room in @st's ring for frames up to base + @need - 1; false if no
 * memory. */
static bool
dp_stream_grow(struct dp_srv_stream *st, uint32_t need)
{
	uint32_t cap = rte_align32pow2(need), s;
	struct rte_mbuf **q;

	if (cap == 0 || (q = calloc(cap, sizeof(*q))) == NULL)
		return false;
	for (s = st->base; s != st->next; s++)
		q[s & (cap - 1)] = st->q[s & (st->cap - 1)];
	free(st->q);
	st->q = q;
	st->cap = cap;
	return true;
}

void
dp_stream_stage(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_wire_hdr *h)
{
	struct dp_peer *peer = &a->peers[rte_be_to_cpu_16(h->dst_worker)];
	uint32_t req_num = rte_be_to_cpu_32(h->req_num), seq = rte_be_to_cpu_32(h->handler_id);
	struct dp_srv_slot *e = dp_srv_find(peer, rte_be_to_cpu_16(h->slot));
	bool end = (h->flags & rte_cpu_to_be_16(DP_CHUNK_END)) != 0;
	struct dp_srv_stream *st;
	struct rte_mbuf **q;
	uint32_t off;

	if (e == NULL || e->state != DP_SRV_RUNNING || e->req_num != req_num || e->st == NULL) {
		/* The stream was cancelled (or its caller went): nothing more
		 * goes out.  Its end marks the request answered. */
		if (end && e != NULL && e->state == DP_SRV_RUNNING && e->req_num == req_num) {
			e->state = DP_SRV_DONE;
			dp_srv_keep_error(peer, e, rte_be_to_cpu_32(h->handler_id), -ECANCELED,
				"the stream was cancelled");
		}
		dp_tx_discard(&a->b, m);
		return;
	}
	st = e->st;
	off = seq - st->base;
	if ((int32_t)off < 0) {
		dp_stage_out(&a->b, m); /* acknowledged already: a resend parked on tx_ring */
		return;
	}
	if (off >= st->cap && !dp_stream_grow(st, off + 1)) {
		/* Not kept: if lost, the caller's probes cannot get it back,
		 * and the stream ends by its timeout. */
		dp_count(&a->b.st.drops[DPRPC_DROP_NO_MEMORY], 1);
		dp_stage_out(&a->b, m);
		return;
	}
	q = &st->q[seq & (st->cap - 1)];
	if (*q != m) {
		/* One more reference for us, paired with the PMD's free. */
		rte_mbuf_refcnt_update(m, 1);
		if (*q != NULL)
			rte_pktmbuf_free(*q); /* cannot be: one frame per seq */
		else
			dp_srv_kept_add(a, peer, 1);
		*q = m;
	}
	if ((int32_t)(seq + 1 - st->next) > 0)
		st->next = seq + 1;
	if (end) {
		st->end_staged = true;
		st->end_seq = seq;
		st->end_status = rte_be_to_cpu_32(h->status);
	}
	dp_stage_out(&a->b, m);
}

/* Send frame @seq of @st again, if kept. */
static void
dp_stream_resend(struct dp_rpc *a, struct dp_srv_stream *st, uint32_t seq)
{
	struct rte_mbuf *m;

	if (seq - st->base >= st->next - st->base)
		return;
	m = st->q[seq & (st->cap - 1)];
	if (m == NULL)
		return;
	rte_mbuf_refcnt_update(m, 1); /* for the PMD, paired with its free */
	dp_count(&a->b.st.stream_frames_resent, 1);
	dp_stage_out(&a->b, m);
}

void
dp_stream_rx_ack(struct dp_rpc *a, struct rte_mbuf *m, const struct dp_parsed *p)
{
	struct dp_peer *peer = &a->peers[p->src];
	struct dp_srv_slot *e = p->src != a->b.rank ? dp_srv_find(peer, p->slot) : NULL;
	uint32_t cum = p->handler_id, s, from;
	struct dprpc_request *req;
	struct dp_srv_stream *st;

	rte_pktmbuf_free(m);
	if (e == NULL || e->st == NULL || e->state != DP_SRV_RUNNING || e->req_num != p->req_num) {
		dp_count(&a->b.st.drops[DPRPC_DROP_STALE], 1);
		return;
	}
	st = e->st;
	/* Serial order: sequence numbers wrap. */
	if ((int32_t)(cum - st->base) > 0 && (int32_t)(st->next - cum) >= 0)
		dp_stream_release(a, peer, st, cum);
	if ((int32_t)(p->status - st->limit) > 0) {
		st->limit = p->status;
		req = dp_srv_live_req(a, p->src, p->slot, e);
		if (req != NULL)
			/* Relaxed: a bound only (struct dprpc_request). */
			atomic_store_explicit(&req->st_limit, st->limit, memory_order_relaxed);
	}
	if (p->flags & (DP_SACK_NACK | DP_SACK_PROBE))
		dp_stream_resend(a, st, cum);
	if (p->flags & DP_SACK_PROBE) {
		/* Everything beyond the highest frame the caller holds. */
		from = cum + RTE_MAX((uint32_t)p->credits, 1u);
		for (s = from; (int32_t)(st->next - s) > 0; s++)
			dp_stream_resend(a, st, s);
	}
	if (st->end_staged && st->base == st->end_seq + 1) {
		/* The caller has the whole stream: the request is answered. */
		uint32_t hid = st->handler_id, status = st->end_status;

		dp_stream_srv_free(a, peer, e);
		e->state = DP_SRV_DONE;
		dp_srv_keep_error(
			peer, e, hid, -(int)status, status != 0 ? "the stream ended" : "");
	}
}
