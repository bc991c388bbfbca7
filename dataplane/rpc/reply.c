/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reply path (handler.c has the overview), from any thread.
 *
 * The handler contract (dprpc_handler_fn_t) is enforced, not assumed
 * (docs/architecture.md, "The handler contract, enforced"): every answer
 * first claims the request (LIVE -> REPLYING, one CAS), so exactly one is
 * sent; the object goes back to the FIFO req_pool once answered and no
 * handler run holds it, so a late reply finds it FREE for as long as
 * possible and is refused.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "dp_rpc.h"
#include "dp_eal.h"
#include "dp_handler.h"
#include "dp_msg.h"
#include "dp_poll.h"
#include "dp_submit.h"
#include "dprpc_lcore.h"
#include <dprpc/dprpc_conf.h>
#include <dprpc/dprpc_handler.h>
#include <dprpc/dprpc_stats.h>

/* Give @req back to req_pool with what it holds: its hook's release, its
 * frame, its reassembled or self-sent message.  Once per object, by the
 * thread that leaves its state at DONE with no run (dp_req_done(),
 * dp_run_handler()). */
void __rte_hot
dp_req_release(struct dprpc_request *req)
{
	struct dp_rpc *a = req->rpc;

	if (req->hook != NULL)
		req->hook->release(req);
	/* Calls to self are not bounded per peer. */
	if (req->src != a->b.rank) {
		if (dp_tls_poller == &a->b)
			a->peers[req->src].srv_freed_here++;
		else
			/* Relaxed: a bound only (struct dp_peer). */
			atomic_fetch_add_explicit(
				&a->peers[req->src].srv_freed_away, 1, memory_order_relaxed);
	}
	dprpc_mbuf_free(req->m);
	if (req->rx != NULL)
		dp_rxmsg_free(req->rx); /* a reassembled request's payload */
	dp_txmsg_put(req->tx);
	/* Relaxed: FREE only lets a late reply on this object see that it
	 * was answered (dp_req_claim()).  Stored before the put, after which
	 * the object may be handed out again.  What orders it before
	 * dp_req_new()'s store: on the poller, program order (and the poll
	 * lock between pollers); from another thread, the pool's ring
	 * (release on enqueue, acquire on the poller's dequeue, req_pool.c). */
	atomic_store_explicit(&req->state, DP_REQ_FREE, memory_order_relaxed);
	dp_req_pool_put(&a->b.rq, req, dp_tls_poller == &a->b);
}

/* Claim the answer of @req: LIVE -> REPLYING.  -EALREADY if it was
 * answered (or released), or another thread is answering it. */
static int __rte_hot
dp_req_claim(struct dprpc_request *req)
{
	uint32_t s = atomic_load_explicit(&req->state, memory_order_relaxed);

	do {
		if ((s & DP_REQ_PHASE) != DP_REQ_LIVE)
			return -EALREADY;
		/* Acquire on success: pairs with the release of the state's
		 * last change (a run's end, a failed answer's return to LIVE),
		 * so what that thread did with the request happens before this
		 * answer reads it.  The run count may change meanwhile (a run
		 * starting or ending on another thread): the CAS then fails and
		 * retries with what it found. */
	} while (!atomic_compare_exchange_weak_explicit(
		&req->state, &s, s + DP_REQ_REPLYING, memory_order_acquire, memory_order_relaxed));
	return 0;
}

/* Give up a claim that sent nothing: REPLYING -> LIVE, to be answered
 * again. */
void
dp_req_unclaim(struct dprpc_request *req)
{
	/* Release: pairs with the acquire of the next claim.  Only the
	 * claim's holder changes the phase from REPLYING: subtracting it
	 * leaves the run count alone. */
	atomic_fetch_sub_explicit(&req->state, DP_REQ_REPLYING, memory_order_release);
}

/* End the claim the caller holds: REPLYING -> DONE.  The object goes back
 * to the pool now if no handler run holds it; otherwise the last run's end
 * gives it back. */
void __rte_hot
dp_req_done(struct dprpc_request *req)
{
	/* acq_rel: the release half publishes this thread's use of the
	 * request to the run whose end frees it (its decrement acquires); the
	 * acquire half, when no run is left and this thread frees it, pairs
	 * with the release of every run's end. */
	uint32_t old = atomic_fetch_add_explicit(
		&req->state, DP_REQ_DONE - DP_REQ_REPLYING, memory_order_acq_rel);

	if (old / DP_REQ_RUN == 0)
		dp_req_release(req);
}

void
dp_request_free(struct dprpc_request *req)
{
	/* Released unanswered: LIVE -> DONE, through a claim, so that a
	 * request answered meanwhile is left alone. */
	if (dp_req_claim(req) == 0)
		dp_req_done(req);
}

/*
 * Answer @req, whose claim the caller holds, with @status and @len bytes
 * gathered from @cnt buffers (at most one if @req has a hook); on success
 * the claim ends and the frame goes out.  On the poller, a one-buffer
 * response is built in the request's own mbuf (an echo is then in place).
 * -ENOBUFS: nothing was sent and the caller still holds the claim.
 */
static int __rte_hot
dp_respond_iov(struct dprpc_request *req, uint32_t status, const struct iovec *iov,
	unsigned int cnt, uint32_t len)
{
	struct dp_rpc *a = req->rpc;
	struct rte_mbuf *m = req->m;
	struct dp_hdr_fields f = {
		.type = DP_FRAME_RESPONSE,
		.src = a->b.rank,
		.dst = req->src,
		.slot = req->slot,
		.session = a->b.session,
		.dst_session = req->src_session,
		.req_num = req->req_num,
		.handler_id = req->handler_id,
		.status = status,
		.budget = status == EBUSY ? req->retry_hint : 0,
		/* Relaxed: STARTED was set on this thread or before the
		 * request was handed to it. */
		.flags = status != 0 && !(atomic_load_explicit(
						  &req->cancelled, memory_order_relaxed) &
						DP_REQ_STARTED)
				 ? DP_RESP_UNRUN
				 : 0,
	};
	uint64_t now;
	struct iovec hv;
	uint8_t *frame;

	dp_thread_lcore(); /* a deferred reply's thread: mempool caches */
	if (status != EBUSY) {
		/* How long it was held, for the caller's round-trip sample
		 * (dp_handle_response()); on the poller, an inline handler's
		 * poll is the one that took the request. */
		now = dp_tls_poller == &a->b ? a->b.now_tsc : rte_rdtsc();
		if (now - req->rx_tsc >= a->b.tsc_hz / 1000000)
			f.budget = dp_hold_encode(dp_tsc_to_us(&a->b, now - req->rx_tsc));
	}
	if (req->hook != NULL) {
		const void *data = cnt > 0 ? iov[0].iov_base : NULL;

		req->hook->reply(req, &status, &data, &len);
		f.status = status;
		hv = (struct iovec){.iov_base = (void *)(uintptr_t)data, .iov_len = len};
		iov = &hv;
		cnt = 1;
	}
	if (unlikely(len > DPRPC_MAX_FRAME_PAYLOAD)) {
		struct dp_txmsg *t = dp_txmsg_new(a, &f, iov, cnt, len);

		m = t != NULL ? dp_carrier_new(a, t) : NULL;
		if (m == NULL) {
			dp_txmsg_put(t);
			return -ENOBUFS;
		}
		dp_req_done(req);
		dp_submit(a, m, true);
		return 0;
	}
	/* Parts may lie in the request's payload: only one is moved in place. */
	if (cnt <= 1 && dp_tls_poller == &a->b && m != NULL && rte_mbuf_refcnt_read(m) == 1 &&
		RTE_MBUF_DIRECT(m) && m->data_off + DP_HDRS_LEN + len <= m->buf_len) {
		req->m = NULL;
		m->data_len = (uint16_t)(DP_HDRS_LEN + len);
		m->pkt_len = m->data_len;
		frame = rte_pktmbuf_mtod(m, uint8_t *);
	} else {
		m = dp_frame_alloc(&a->b, len, &frame);
		if (m == NULL)
			return -ENOBUFS;
	}
	dp_frame_write_iov(frame, a->peers[req->src].tmpl, &f, iov, cnt, len);
	dp_meta_plain(m);
	dp_req_done(req);
	dp_submit(a, m, true);
	return 0;
}

static int __rte_hot
dp_respond(struct dprpc_request *req, uint32_t status, const void *data, uint32_t len)
{
	struct iovec v = {.iov_base = (void *)(uintptr_t)data, .iov_len = len};

	return dp_respond_iov(req, status, &v, 1, len);
}

/* The claim of an application's reply: -EALREADY, counted, if @req was
 * answered already. */
int
dp_reply_claim(struct dprpc_request *req)
{
	if (dp_req_claim(req) == 0)
		return 0;
	dp_count_mt(&req->rpc->b.st.reply_again, 1);
	return -EALREADY;
}

int __rte_hot
dprpc_reply(struct dprpc_request *req, const void *data, size_t len)
{
	int rc;

	if (req == NULL || (data == NULL && len > 0))
		return -EINVAL;
	rc = dp_reply_claim(req);
	if (rc != 0)
		return rc;
	if (len > req->rpc->max_msg)
		rc = -EMSGSIZE;
	else
		rc = dp_respond(req, 0, data, (uint32_t)len);
	if (rc != 0)
		dp_req_unclaim(req);
	return rc;
}

int
dprpc_reply_iov(struct dprpc_request *req, const struct iovec *iov, unsigned int iovcnt)
{
	void *tmp = NULL;
	size_t len;
	int rc;

	if (req == NULL)
		return -EINVAL;
	rc = dp_iov_len(iov, iovcnt, DPRPC_IOV_MAX, &len);
	if (rc != 0)
		return rc;
	rc = dp_reply_claim(req);
	if (rc != 0)
		return rc;
	if (len > req->rpc->max_msg) {
		dp_req_unclaim(req);
		return -EMSGSIZE;
	}
	if (req->hook != NULL && iovcnt > 1) {
		/* An extension's hook reads the answer as one buffer. */
		struct iovec v;

		tmp = malloc(len > 0 ? len : 1);
		if (tmp == NULL) {
			dp_req_unclaim(req);
			return -ENOBUFS;
		}
		v = (struct iovec){.iov_base = tmp, .iov_len = 0};
		for (unsigned int i = 0; i < iovcnt; i++) {
			if (iov[i].iov_len == 0)
				continue; /* its base may be NULL */
			memcpy((uint8_t *)tmp + v.iov_len, iov[i].iov_base, iov[i].iov_len);
			v.iov_len += iov[i].iov_len;
		}
		rc = dp_respond_iov(req, 0, &v, 1, (uint32_t)len);
	} else {
		rc = dp_respond_iov(req, 0, iov, iovcnt, (uint32_t)len);
	}
	free(tmp);
	if (rc != 0)
		dp_req_unclaim(req);
	return rc;
}

/* The wire status of error @code: positive, 0 becoming EIO. */
static uint32_t
dp_error_status(int code)
{
	if (code == 0)
		code = -EIO;
	return (uint32_t)(code < 0 ? -code : code);
}

/* The error answer of @req, whose claim the caller holds. */
static int
dp_respond_error(struct dprpc_request *req, int code, const char *msg)
{
	return dp_respond(req, dp_error_status(code), msg,
		msg != NULL ? (uint32_t)strnlen(msg, DPRPC_ERRMSG_MAX - 1) : 0);
}

int
dprpc_reply_error(struct dprpc_request *req, int code, const char *msg)
{
	int rc;

	if (req == NULL)
		return -EINVAL;
	rc = dp_reply_claim(req);
	if (rc != 0)
		return rc;
	rc = dp_respond_error(req, code, msg);
	if (rc != 0)
		dp_req_unclaim(req);
	return rc;
}

int
dprpc_reply_busy(struct dprpc_request *req, uint32_t retry_after_us, const char *msg)
{
	struct dp_rpc *a;
	int rc;

	if (req == NULL)
		return -EINVAL;
	a = req->rpc;
	rc = dp_reply_claim(req);
	if (rc != 0)
		return rc;
	/* The claim's holder alone writes the answer's fields; dp_respond()
	 * puts the hint in the response's budget field for EBUSY. */
	req->retry_hint = retry_after_us == 0 ? dp_retry_hint(a) : dp_budget_encode(retry_after_us);
	rc = dp_respond_error(req, -EBUSY, msg);
	if (rc != 0) {
		req->retry_hint = 0;
		dp_req_unclaim(req);
		return rc;
	}
	dp_count_mt(&a->b.st.rejected_handler, 1); /* req may be reused by now */
	return 0;
}

int
dprpc_reply_expired(struct dprpc_request *req, const char *msg)
{
	struct dp_rpc *a;
	int rc;

	if (req == NULL)
		return -EINVAL;
	a = req->rpc;
	rc = dp_reply_claim(req);
	if (rc != 0)
		return rc;
	/* Read under the claim: the request is this thread's. */
	if (req->deadline_tsc == 0 || rte_rdtsc() < req->deadline_tsc) {
		dp_req_unclaim(req);
		return 0;
	}
	rc = dp_respond_error(req, -ETIME,
		msg != NULL ? msg : "the deadline passed while the request was queued");
	if (rc != 0) {
		dp_req_unclaim(req);
		return rc;
	}
	dp_count_mt(&a->b.st.requests_expired, 1);
	return 1;
}

/* An error answer the library itself owes (no handler, a failed or broken
 * handler, a full pool); with no mbuf, counted and the request released: a
 * remote call times out, a call to self fails at once with @code on the
 * poller (its slot's owner), else waits for its timeout.  False if @req
 * was answered already. */
bool
dp_reply_error_or_drop(struct dprpc_request *req, int code, const char *msg)
{
	struct dp_rpc *a = req->rpc;
	uint16_t slot = req->slot;
	uint32_t req_num = req->req_num;
	bool self = req->src == a->b.rank;

	if (dp_req_claim(req) != 0)
		return false;
	if (dp_respond_error(req, code, msg) != -ENOBUFS)
		return true;
	dp_count_mt(&a->b.st.reply_nombuf, 1);
	dp_req_done(req); /* released unanswered */
	if (self && dp_tls_poller == &a->b)
		dp_self_fail(a, slot, req_num, code, msg);
	return true;
}
