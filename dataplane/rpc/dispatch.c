/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Running a request inline or on a handler lcore (handler.c has the
 * overview; the contract a run enforces is at the top of reply.c).
 *
 * Handler lcores: each has its own ring, single-producer (the poller:
 * dp_req_start(), dp_redispatch() on the poller) and single-consumer (its
 * lcore: dp_lcore_handler()).  The enqueue hands the request object over:
 * DPDK's rte_ring orders the producer's writes of the request before its
 * tail update and the consumer's reads after its load of it, and from then
 * on the lcore holds the request until its handler answers or defers
 * it.  A full ring never blocks the poller: the request is answered
 * -EBUSY (or dp_redispatch() fails with -EBUSY).  The lcore
 * loops until it sees stop (acquire, paired with the release store in
 * dp_lcores_stop()); what its ring still holds then is freed by
 * dp_drain_rings().
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
#include "dprpc_lcore.h"
#include <dprpc/dprpc_handler.h>
#include <dprpc/dprpc_stats.h>

/* The request whose handler runs on this thread (innermost run), for the
 * deadline of calls made from inside it (dprpc_rpc_async_id()). */
__thread const struct dprpc_request *dp_tls_req __attribute__((tls_model("initial-exec")));
__thread uint64_t dp_tls_bound_tsc __attribute__((tls_model("initial-exec")));

/* What a handler's return @rc (not DPRPC_DEFERRED) asks of @req, which the
 * run still holds: a negative errno is answered unless the handler
 * replied; 0 must follow a reply; nothing else is allowed.  A broken
 * contract is counted and, if the request is unanswered, answered -EPROTO
 * (documented in dprpc_handler.h). */
static void
dp_handler_returned(struct dprpc_request *req, const struct dp_handler *h, int rc)
{
	struct dp_rpc *a = req->rpc;
	char msg[DPRPC_ERRMSG_MAX];

	if (rc == 0) {
		/* Relaxed: a hint only (the common case, answered, skips the
		 * message); the claim below decides. */
		if ((atomic_load_explicit(&req->state, memory_order_relaxed) & DP_REQ_PHASE) !=
			DP_REQ_LIVE)
			return;
		/* A long name truncates the message, like any message. */
		if (snprintf(msg, sizeof(msg),
			    "handler '%s' on worker %s returned without replying", h->name,
			    a->b.name) < 0)
			msg[0] = '\0';
		if (dp_reply_error_or_drop(req, -EPROTO, msg))
			dp_count_mt(&a->b.st.handler_unanswered, 1);
		return;
	}
	if (rc < 0) {
		snprintf(msg, sizeof(msg), "handler '%s' on worker %s failed: %s", h->name,
			a->b.name, strerror(-rc));
		if (!dp_reply_error_or_drop(req, rc, msg))
			dp_count_mt(&a->b.st.handler_error_after_reply, 1);
		return;
	}
	dp_count_mt(&a->b.st.handler_bad_return, 1);
	if (snprintf(msg, sizeof(msg),
		    "handler '%s' on worker %s returned %d: not 0, DPRPC_DEFERRED or an errno",
		    h->name, a->b.name, rc) < 0)
		msg[0] = '\0';
	(void)dp_reply_error_or_drop(req, -EPROTO, msg);
}

/* The end of a run of @req whose handler returned @rc: its return checked
 * against the state (dp_handler_returned()), then the run's count taken
 * back, freeing the request if it was answered and no run is left. */
static void __rte_noinline
dp_run_end(struct dprpc_request *req, const struct dp_handler *h, int rc)
{
	uint32_t old;

	if (rc != DPRPC_DEFERRED)
		dp_handler_returned(req, h, rc);
	/* Answered, with this run the only one left: nobody can change the
	 * state any more (DONE is final, and a run starts only on a LIVE
	 * request, by the thread that holds it), so this run frees it with
	 * no read-modify-write.  Acquire: pairs with the release half of the
	 * answer's dp_req_done() and of other runs' ends, as below. */
	if (atomic_load_explicit(&req->state, memory_order_acquire) == DP_REQ_RUN + DP_REQ_DONE) {
		dp_req_release(req);
		return;
	}
	/* acq_rel: the release half publishes the handler's use of the
	 * request to whoever frees it (an answer on another thread, or
	 * another run's end); the acquire half, when this end frees it, pairs
	 * with their release (dp_req_done(), the other runs' ends). */
	old = atomic_fetch_sub_explicit(&req->state, DP_REQ_RUN, memory_order_acq_rel);
	if (old == DP_REQ_RUN + DP_REQ_DONE)
		dp_req_release(req);
}

/* Run @req's handler on this thread, which holds @req.  @fresh: the poller
 * took @req from the pool and has handed it to nobody (LIVE, no run). */
static inline void
dp_run(struct dprpc_request *req, bool fresh)
{
	const struct dp_handler *h = req->h;
	const struct dprpc_request *outer = dp_tls_req; /* runs nest */
	int rc;

	/* Relaxed: this thread holds the request (handed over by a ring, by
	 * dp_req_start() or by the extension that kept it), which orders what
	 * the handler reads; the count only keeps the object out of the pool
	 * until the run ends, and every other change of the state is a
	 * read-modify-write that sees it.  A fresh request's state no other
	 * thread can change yet: a store does (no locked instruction). */
	if (fresh) {
		atomic_store_explicit(&req->state, DP_REQ_LIVE + DP_REQ_RUN, memory_order_relaxed);
		/* Inline, on the poller, which alone acts on CANCELs. */
		atomic_store_explicit(&req->cancelled, DP_REQ_STARTED, memory_order_relaxed);
	} else
		atomic_fetch_add_explicit(&req->state, DP_REQ_RUN, memory_order_relaxed);
	dp_tls_req = req;
	rc = h->fn(req, h->arg);
	dp_tls_req = outer;
	/* The common end: answered, 0 returned, this run the only one left
	 * (see dp_run_end(), which checks and frees the same way). */
	if (likely(rc == 0) && atomic_load_explicit(&req->state, memory_order_acquire) ==
				       DP_REQ_RUN + DP_REQ_DONE) {
		dp_req_release(req);
		return;
	}
	dp_run_end(req, h, rc);
}

void
dp_run_handler(struct dprpc_request *req)
{
	dp_run(req, false);
}

/* A request object for @p (payload in place, no frame attached), or NULL
 * if the pool is empty (counted). */
struct dprpc_request *__rte_hot
dp_req_new(struct dp_rpc *a, const struct dp_parsed *p)
{
	struct dprpc_request *req = dp_req_pool_get(&a->b.rq);

	if (req == NULL) {
		dp_count(&a->b.st.drops[DPRPC_DROP_NO_REQUEST], 1);
		return NULL;
	}
	req->rpc = a;
	/* Relaxed: the object is the poller's until it hands it over (a ring
	 * or a run), which publishes this store with the rest. */
	atomic_store_explicit(&req->state, DP_REQ_LIVE, memory_order_relaxed);
	req->m = NULL;
	req->payload = p->payload;
	req->len = p->payload_len;
	req->src = p->src;
	req->slot = p->slot;
	req->req_num = p->req_num;
	req->handler_id = p->handler_id;
	req->src_session = p->session;
	req->rx_tsc = a->b.now_tsc;
	req->hook = NULL;
	req->in_val = NULL;
	req->in_len = 0;
	req->rx = NULL;
	req->tx = NULL;
	req->h = dp_handler_find(a, p->handler_id);
	req->deadline_tsc =
		p->budget == 0 ? 0
			       : a->b.now_tsc + dp_us_to_tsc(&a->b, dp_budget_decode(p->budget));
	/* Relaxed: published with the rest by the hand-over (above). */
	atomic_store_explicit(&req->cancelled, 0, memory_order_relaxed);
	req->retry_hint = 0;
	req->stream = (p->flags & DP_REQ_STREAM) != 0 && p->src != a->b.rank;
	if (unlikely(req->stream)) {
		/* Its window: the caller's (at least 1), of which at most our
		 * credits (dp_stream.h). */
		req->st_window = RTE_MAX(p->credits, (uint16_t)1);
		req->st_weff = (uint16_t)RTE_MIN((uint32_t)req->st_window, a->credits);
		req->st_next = 0;
		/* Relaxed: published with the rest by the hand-over. */
		atomic_store_explicit(&req->st_limit, req->st_window, memory_order_relaxed);
	}
	if (p->src != a->b.rank)
		a->peers[p->src].srv_taken++; /* poller only (struct dp_peer) */
	return req;
}

/* Handler lcore @hl's service time (TSC): its EWMA, or, before its first
 * sample, the service time the application declared
 * (conf.serve.service_time_us) or how long the request it runs has run so far
 * (a lower bound that grows until the first request ends), the larger;
 * 0 if neither.  @now: the TSC.  Any thread (relaxed: an estimate,
 * struct dp_hlcore). */
static uint64_t
dp_hl_service(const struct dp_hlcore *hl, uint64_t now)
{
	uint64_t t = dp_load_relaxed(&hl->service_tsc), busy;

	if (t != 0)
		return t;
	busy = dp_load_relaxed(&hl->busy_tsc);
	return RTE_MAX(hl->rpc->service_declared_tsc, busy != 0 && now > busy ? now - busy : 0);
}

/* Requests waiting for handler lcore @hl: in its ring, and dequeued in
 * its current burst but not started.  Any thread (an estimate). */
static inline unsigned int
dp_hl_queued(const struct dp_hlcore *hl)
{
	/* Relaxed: an estimate (struct dp_hlcore). */
	return rte_ring_count(hl->ring) + dp_load_relaxed(&hl->burst_left);
}

uint64_t
dp_pool_wait_tsc(const struct dp_rpc *a)
{
	uint64_t wait = 0, now = rte_rdtsc();
	unsigned int i;

	for (i = 0; i < a->nb_hl; i++)
		wait += (dp_hl_queued(&a->hl[i]) + 1) * dp_hl_service(&a->hl[i], now);
	return a->nb_hl == 0 ? 0 : wait / a->nb_hl;
}

uint16_t
dp_retry_hint(const struct dp_rpc *a)
{
	uint64_t us = dp_tsc_to_us(&a->b, dp_pool_wait_tsc(a));

	return dp_budget_encode(RTE_MAX(us, (uint64_t)DP_RETRY_MIN_US));
}

/* @req may not run (dp_req_runnable()): its caller cancelled it (released
 * unanswered: nobody waits for the answer) or its deadline passed while it
 * waited (answered -ETIME); counted either way.  False. */
static bool __rte_noinline
dp_req_unrunnable(struct dprpc_request *req)
{
	struct dp_rpc *a = req->rpc;
	char msg[DPRPC_ERRMSG_MAX];

	/* Relaxed: a hint (struct dprpc_request). */
	if (atomic_load_explicit(&req->cancelled, memory_order_relaxed) & DP_REQ_CANCELLED) {
		dp_count_mt(&a->b.st.requests_cancelled, 1);
		dp_request_free(req);
		return false;
	}
	dp_count_mt(&a->b.st.requests_expired, 1);
	/* A long name truncates the message, like any message. */
	if (snprintf(msg, sizeof(msg),
		    "worker %s did not run '%s': its deadline passed while queued", a->b.name,
		    req->h->name) < 0)
		msg[0] = '\0';
	(void)dp_reply_error_or_drop(req, -ETIME, msg);
	return false;
}

/* Whether @req may run now (@now: a TSC): not if its caller cancelled it
 * or its deadline passed while it waited (dp_req_unrunnable()).  The
 * thread that holds the request. */
static inline bool
dp_req_runnable(struct dprpc_request *req, uint64_t now)
{
	/* Relaxed: a hint (struct dprpc_request). */
	if (likely(!(atomic_load_explicit(&req->cancelled, memory_order_relaxed) &
			   DP_REQ_CANCELLED) &&
		    (req->deadline_tsc == 0 || now < req->deadline_tsc)))
		return true;
	return dp_req_unrunnable(req);
}

/* dp_req_runnable() on a handler lcore, and the mark that its handler
 * starts: STARTED is set only while CANCELLED is not (a CAS), so the
 * poller's CANCEL either finds it set (too late) or stops the request
 * before it runs (dp_srv_cancel()). */
static inline bool
dp_req_begin(struct dprpc_request *req, uint64_t now)
{
	/* Relaxed: the flags publish nothing; their order is the CAS's. */
	uint8_t f = atomic_load_explicit(&req->cancelled, memory_order_relaxed);

	if (!dp_req_runnable(req, now))
		return false;
	while (!(f & DP_REQ_CANCELLED)) {
		if ((f & DP_REQ_STARTED) || atomic_compare_exchange_weak_explicit(&req->cancelled,
						    &f, (uint8_t)(f | DP_REQ_STARTED),
						    memory_order_relaxed, memory_order_relaxed))
			return true;
	}
	return dp_req_unrunnable(req);
}

/* The inline backlog's bounds, asked only while rx bursts come back full
 * (docs/serving.md, "Bounded queues and the overload answer"): true if
 * @req was answered instead of run, -ETIME past its deadline or -EBUSY
 * past conf.serve.inline_wait_max_us of handler time (rx_handler_tsc), that time
 * its retry-after hint.  @now: the TSC.  The poller. */
static bool
dp_inline_late(struct dp_rpc *a, struct dprpc_request *req, uint64_t now)
{
	uint64_t age = a->b.rx_handler_tsc, us;
	char msg[DPRPC_ERRMSG_MAX];

	/* Behind, the handlers before @req in its burst took time: checked
	 * against the clock just read, a request whose deadline passed
	 * meanwhile is not run (-ETIME, or released if cancelled). */
	if (unlikely(!dp_req_runnable(req, now)))
		return true;
	if (age <= a->inline_max_tsc)
		return false;
	/* Beyond the bound by the TSC, which also counts a handler's time
	 * off the poller's CPU: the poller's CPU time since it is behind
	 * caps it. */
	age = RTE_MIN(age, dp_rx_behind_cpu(&a->b, now));
	if (age <= a->inline_max_tsc)
		return false;
	dp_count(&a->b.st.rejected_inline, 1);
	us = RTE_MIN(dp_tsc_to_us(&a->b, age), (uint64_t)UINT32_MAX);
	snprintf(msg, sizeof(msg), "worker %s: inline backlog %" PRIu64 " us old", a->b.name, us);
	req->retry_hint = dp_budget_encode(RTE_MAX(us, (uint64_t)DP_RETRY_MIN_US));
	dp_reply_error_or_drop(req, -EBUSY, msg);
	return true;
}

/* The pool's queue-delay bound (conf.serve.queue_delay_max_us, docs/serving.md):
 * @req would wait behind what handler lcore @hl has queued, that many
 * requests times its mean service time (the EWMA of dp_lcore_handler()).
 * Beyond the bound it is answered -EBUSY unrun, that wait as its
 * retry-after hint, and true is returned.  The poller. */
static bool __rte_noinline
dp_pool_slow(struct dp_rpc *a, struct dprpc_request *req, const struct dp_hlcore *hl)
{
	uint64_t wait = dp_hl_queued(hl) * dp_hl_service(hl, a->b.now_tsc), us;
	char msg[DPRPC_ERRMSG_MAX];

	if (wait <= a->queue_delay_max_tsc)
		return false;
	dp_count(&a->b.st.rejected_delay, 1);
	us = RTE_MIN(dp_tsc_to_us(&a->b, wait), (uint64_t)UINT32_MAX);
	snprintf(msg, sizeof(msg), "worker %s: handler queue %" PRIu64 " us long", a->b.name, us);
	req->retry_hint = dp_budget_encode(RTE_MAX(us, (uint64_t)DP_RETRY_MIN_US));
	dp_reply_error_or_drop(req, -EBUSY, msg);
	return true;
}

/* An inline request while the poller is behind (rx_backlog): refused if
 * late (dp_inline_late(); the agent's own handlers never are), else run,
 * its run's time added to what the requests still queued wait behind
 * (rx_handler_tsc). */
static void __rte_noinline __rte_hot
dp_run_behind(struct dp_rpc *a, struct dprpc_request *req)
{
	uint64_t t0 = rte_rdtsc();

	if (!req->h->internal && dp_inline_late(a, req, t0))
		return;
	dp_run(req, true);
	a->b.rx_handler_tsc += rte_rdtsc() - t0;
}

uint64_t __rte_hot
dp_req_start(struct dp_rpc *a, struct dprpc_request *req)
{
	const struct dp_handler *h = req->h;
	char msg[DPRPC_ERRMSG_MAX];
	struct dp_hlcore *hl;
	uint64_t wait;

	if (h == NULL) {
		dp_count(&a->b.st.requests_unknown, 1);
		snprintf(msg, sizeof(msg), "no handler with id 0x%08x on worker %s",
			req->handler_id, a->b.name);
		dp_reply_error_or_drop(req, -ENOENT, msg);
		return 0;
	}
	/* Relaxed: dp_refuse_calls() publishes nothing but the flag; a
	 * request racing with it is served or refused, either is right. */
	if (unlikely(dp_load_relaxed(&a->b.refusing)) && !h->internal) {
		snprintf(msg, sizeof(msg), "worker %s is shutting down", a->b.name);
		dp_reply_error_or_drop(req, -ESHUTDOWN, msg);
		return 0;
	}
	dp_count(&a->b.st.requests_handled, 1);
	/* A multi-frame request waited for its last frame: it may be late. */
	if (unlikely(!dp_req_runnable(req, a->b.now_tsc)))
		return 0;
	if (h->mode == DPRPC_HANDLER_INLINE) {
		if (unlikely(a->b.rx_backlog))
			dp_run_behind(a, req);
		else
			dp_run(req, true); /* taken by dp_req_new(), handed to nobody */
		return 0;
	}
	/* Pool: round robin over the handler lcores, each holding at most
	 * hl_queue_max requests, and, with queue_delay_max_us, no more than
	 * that much work.  SP: only the poller enqueues. */
	hl = &a->hl[a->hl_next];
	if (unlikely(a->queue_delay_max_tsc != 0) && dp_pool_slow(a, req, hl))
		return 0;
	/* What it will wait and take, read before it is handed over: the
	 * lcore may take it, and the count change, at once. */
	wait = rte_ring_count(hl->ring);
	if (wait >= a->hl_queue_max || rte_ring_sp_enqueue(hl->ring, req) != 0) {
		dp_count(&a->b.st.drops[DPRPC_DROP_HANDLER_FULL], 1);
		dp_count(&a->b.st.rejected_pool, 1);
		snprintf(msg, sizeof(msg), "handler pool of worker %s is full", a->b.name);
		req->retry_hint = dp_retry_hint(a);
		dp_reply_error_or_drop(req, -EBUSY, msg);
		return 0;
	}
	a->hl_next = a->hl_next + 1 == a->nb_hl ? 0 : a->hl_next + 1;
	/* Relaxed: an estimate (struct dp_hlcore). */
	return (wait + dp_load_relaxed(&hl->burst_left) + 1) * dp_hl_service(hl, a->b.now_tsc);
}

int
dp_redispatch(struct dprpc_request *req, uint32_t handler_id, const void *payload, uint32_t len)
{
	struct dp_rpc *a = req->rpc;
	const struct dp_handler *h = dp_handler_find(a, handler_id);

	if (h == NULL)
		return -ENOENT;
	req->h = h;
	req->payload = payload;
	req->len = len;
	/* It waited (for an RRef value): cancelled or late, it is not run
	 * (answered or released, counted), which is this call's success. */
	if (unlikely(!dp_req_runnable(req, rte_rdtsc())))
		return 0;
	if (h->mode == DPRPC_HANDLER_INLINE || dp_tls_poller != &a->b) {
		dp_run_handler(req);
		return 0;
	}
	/* SP: only the poller enqueues. */
	if (rte_ring_sp_enqueue(a->hl[a->hl_next].ring, req) != 0)
		return -EBUSY;
	a->hl_next = a->hl_next + 1 == a->nb_hl ? 0 : a->hl_next + 1;
	return 0;
}

int
dp_lcore_handler(void *arg)
{
	struct dp_hlcore *hl = arg;
	struct dp_rpc *a = hl->rpc;
	struct dprpc_request *reqs[DP_RX_BURST];
	unsigned int n, i, ran, empty = 0;
	uint64_t t0, t1, avg;

	/* Acquire: pairs with the release store of stop in destroy. */
	while (!atomic_load_explicit(&a->b.stop, memory_order_acquire)) {
		n = rte_ring_sc_dequeue_burst(hl->ring, (void **)reqs, DP_RX_BURST, NULL);
		if (n == 0) {
			dp_idle(&a->b, &empty);
			continue;
		}
		empty = 0;
		t0 = rte_rdtsc();
		t1 = t0;
		/* Relaxed: an estimate, read by the poller (struct dp_hlcore). */
		dp_store_relaxed(&hl->busy_tsc, t0);
		for (i = 0, ran = 0; i < n; i++) {
			/* Checked as each comes up: the handlers before it
			 * took time. */
			if (i > 0 && reqs[i]->deadline_tsc != 0)
				t1 = rte_rdtsc();
			/* Relaxed: an estimate, read by the poller. */
			dp_store_relaxed(&hl->burst_left, n - i - 1);
			if (!dp_req_begin(reqs[i], t1))
				continue;
			dp_run_handler(reqs[i]);
			ran++;
		}
		dp_store_relaxed(&hl->busy_tsc, 0);
		if (ran == 0)
			continue;
		/* The service time, for overload answers' retry-after hint
		 * and HELD answers: an EWMA (1/8) of the burst's mean, the
		 * first sample taken whole (a cold pool's first refusals
		 * would otherwise hint an eighth of it).  Relaxed: an
		 * estimate, read by the poller (struct dp_hlcore). */
		t1 = rte_rdtsc();
		avg = dp_load_relaxed(&hl->service_tsc);
		dp_store_relaxed(&hl->service_tsc, avg == 0 ? RTE_MAX((t1 - t0) / ran, (uint64_t)1)
							    : avg - avg / 8 + (t1 - t0) / ran / 8);
	}
	return 0;
}
