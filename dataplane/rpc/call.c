/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Calls, the client's API: dprpc_rpc_async*() build a request frame (or a
 * multi-frame message's carrier), take a future and hand the frame to the
 * poller (or send it at once when nobody polls); dprpc_rpc_sync*() (wait.c)
 * wait for the future, polling when nobody else does.  Any thread.
 *
 * A response dprpc_rpc_sync*() cannot copy out (longer than the caller's
 * buffer) is not thrown away: the handler ran, and may not run twice.  Its
 * future is kept for the calling thread (agent->sync_kept, at most one per
 * thread, a new one replacing the old) until dprpc_rpc_sync_take*() or the
 * agent's destroy.  The slow path only, so a mutex and a list.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include "dp_rpc.h"
#include "dp_client.h"
#include "dp_eal.h"
#include "dp_handler.h"
#include "dp_msg.h"
#include "dp_poll.h"
#include "dp_stream.h"
#include "dp_submit.h"
#include "fut_internal.h"
#include "dprpc_atomic.h"

/* A call of @len bytes gathered from @cnt buffers (checked by the
 * caller), or with @st a stream's call (dp_stream.h).  Inlined into every
 * entry point: an ordinary call's copy has no stream to test for. */
static __rte_always_inline struct dprpc_future *
dp_call_inline(struct dp_rpc *a, unsigned int to, uint32_t handler_id, const struct iovec *iov,
	unsigned int cnt, size_t len, uint64_t timeout_us, struct dprpc_stream *st)
{
	struct dp_hdr_fields f;
	struct dp_call_meta *meta;
	struct dprpc_future *fut;
	struct dp_peer *peer;
	struct rte_mbuf *m;
	uint8_t *frame;
	uint64_t now, deadline;

	if (a == NULL || to >= dp_world_n(&a->b) || handler_id == 0) {
		rte_errno = EINVAL;
		return NULL;
	}
	if (len > a->max_msg) {
		rte_errno = EMSGSIZE;
		return NULL;
	}
	/* Relaxed: only the flag matters (dp_refuse_calls()); a call racing
	 * with it goes or is refused.  Extensions' calls still go. */
	if (unlikely(dp_load_relaxed(&a->b.refusing)) && !dp_handler_internal(a, handler_id)) {
		rte_errno = ESHUTDOWN;
		return NULL;
	}
	/* The call starts now: its deadline counts from here, not from after
	 * the pools (a thread preempted in between had its calls fail late). */
	now = rte_rdtsc();
	dp_thread_lcore(); /* mempool caches for this thread */
	peer = &a->peers[to];
	/* Relaxed: liveness is a snapshot; a call that slips past a peer
	 * going down is failed by the poller's next liveness check. */
	if (unlikely(dp_load_relaxed(&peer->state) >= DPRPC_PEER_DOWN)) {
		/* Down, or left the world (dprpc_world_leave()). */
		rte_errno =
			dp_load_relaxed(&peer->state) == DPRPC_PEER_DOWN ? EHOSTDOWN : ESHUTDOWN;
		return NULL;
	}
	/* Relaxed: a bound only; the poller's decrement publishes nothing. */
	if (atomic_fetch_add_explicit(&peer->outstanding, 1, memory_order_relaxed) >=
		a->max_outstanding) {
		atomic_fetch_sub_explicit(&peer->outstanding, 1, memory_order_relaxed);
		rte_errno = EAGAIN;
		return NULL;
	}
	if (timeout_us == DPRPC_TIMEOUT_DEFAULT)
		/* Relaxed: the value alone (dp_rpc.h). */
		timeout_us = dp_load_relaxed(&a->default_timeout_us);
	deadline = dp_deadline_tsc(&a->b, now, timeout_us);
	/* Made from inside a handler: it never outlives the request it
	 * serves (the sooner deadline; the TSC is the same on every agent of
	 * the process). */
	if (unlikely(dp_tls_req != NULL) && dp_tls_req->deadline_tsc != 0 &&
		(deadline == 0 || dp_tls_req->deadline_tsc < deadline))
		deadline = dp_tls_req->deadline_tsc;
	/* Made by a thread that entered a request it works for (deferred
	 * work, dprpc_request_enter()): the same. */
	if (unlikely(dp_tls_bound_tsc != 0) && (deadline == 0 || dp_tls_bound_tsc < deadline))
		deadline = dp_tls_bound_tsc;
	/* Two references: the caller's, and the agent's, which the
	 * completion drops.  Its expiry, DP_STALL_US past the deadline (never
	 * past UINT64_MAX), lets waiters fail it when the poller's timer
	 * stalls (docs/architecture.md, "Timeouts"). */
	fut = fut_new_call(a->b.fpool, a->b.progress, dp_agent_handle(&a->b),
		deadline == 0				  ? 0
		: deadline >= UINT64_MAX - a->b.stall_tsc ? UINT64_MAX
							  : deadline + a->b.stall_tsc,
		a->b.rank, peer->expire_msg);
	if (fut == NULL)
		goto fail_outstanding;
	f = (struct dp_hdr_fields){
		.type = DP_FRAME_REQUEST,
		.src = a->b.rank,
		.dst = (uint16_t)to,
		.session = a->b.session,
		.handler_id = handler_id,
	};
	if (unlikely(st != NULL)) {
		/* A stream call (dp_stream.h): one frame (the caller checked). */
		f.flags = DP_REQ_STREAM;
		f.credits = (uint16_t)st->window;
	}
	if (unlikely(len > DPRPC_MAX_FRAME_PAYLOAD)) {
		struct dp_txmsg *t = dp_txmsg_new(a, &f, iov, cnt, (uint32_t)len);

		m = t != NULL ? dp_carrier_new(a, t) : NULL;
		if (m == NULL) {
			dp_txmsg_put(t);
			goto fail_future;
		}
	} else {
		m = dp_frame_alloc(&a->b, (uint32_t)len, &frame);
		if (m == NULL)
			goto fail_future;
		dp_frame_write_iov(frame, peer->tmpl, &f, iov, cnt, (uint32_t)len);
		dp_meta(m)->tx = NULL;
	}
	meta = dp_meta(m);
	meta->fut = fut;
	if (unlikely(st != NULL))
		*dp_stream_field(m) = st; /* the frame's reference, taken below */
	meta->deadline_tsc = deadline;
	if (unlikely(st != NULL))
		/* Relaxed: the frame's hand-over (the ring, or the poll flag)
		 * publishes it. */
		atomic_fetch_add_explicit(&st->refs, 1, memory_order_relaxed);
	if (!a->b.io_launched && dp_tls_poller != &a->b && dp_poll_trylock(&a->b)) {
		/* Caller-driven and nobody polls: send it ourselves now rather
		 * than through the ring (after what the ring holds, keeping
		 * this thread's calls in order).  The calls in the ring start
		 * at now too, not at the last poll's time. */
		a->b.now_tsc = now;
		dp_drain_tx_ring(a);
		dp_start_call(a, m, now, true);
		dp_tx_flush(&a->b);
		dp_poll_unlock(&a->b);
		return fut;
	}
	if (dp_submit(a, m, false) != 0) {
		dp_txmsg_put(meta->tx);
		if (unlikely(st != NULL))
			dp_stream_put(st); /* the frame's, never handed over */
		rte_pktmbuf_free(m);
		goto fail_future;
	}
	return fut;

fail_future:
	/* Never shared: both references go, nothing else holds it. */
	dprpc_future_put(fut);
	dprpc_future_put(fut);
fail_outstanding:
	/* Relaxed: a bound only, as above. */
	atomic_fetch_sub_explicit(&peer->outstanding, 1, memory_order_relaxed);
	rte_errno = ENOBUFS;
	return NULL;
}

struct dprpc_future *__rte_hot
dprpc_rpc_async_id(struct dprpc_agent *agent, unsigned int to, uint32_t handler_id,
	const void *data, size_t len, uint64_t timeout_us)
{
	struct dp_rpc *a = dp_rpc_of(agent);
	struct iovec v = {.iov_base = (void *)(uintptr_t)data, .iov_len = len};

	if (data == NULL && len > 0) {
		rte_errno = EINVAL;
		return NULL;
	}
	return dp_call_inline(a, to, handler_id, &v, 1, len, timeout_us, NULL);
}

struct dprpc_future *
dprpc_rpc_async_iov(struct dprpc_agent *agent, unsigned int to, uint32_t handler_id,
	const struct iovec *iov, unsigned int iovcnt, uint64_t timeout_us)
{
	struct dp_rpc *a = dp_rpc_of(agent);
	size_t len;
	int rc = dp_iov_len(iov, iovcnt, DPRPC_IOV_MAX, &len);

	if (rc != 0) {
		rte_errno = -rc;
		return NULL;
	}
	return dp_call_inline(a, to, handler_id, iov, iovcnt, len, timeout_us, NULL);
}

struct dprpc_future *
dp_call(struct dp_rpc *a, unsigned int to, uint32_t handler_id, const void *data, size_t len,
	uint64_t timeout_us, struct dprpc_stream *st)
{
	struct iovec v = {.iov_base = (void *)(uintptr_t)data, .iov_len = len};

	if (data == NULL && len > 0) {
		rte_errno = EINVAL;
		return NULL;
	}
	return dp_call_inline(a, to, handler_id, &v, 1, len, timeout_us, st);
}

int
dp_resolve(const struct dprpc_agent *agent, const char *to, const char *hname)
{
	const struct dp_rpc *a = dp_rpc_of(agent);
	int rank;

	if (a == NULL || to == NULL || hname == NULL) {
		rte_errno = EINVAL;
		return -1;
	}
	rank = dprpc_worker_rank(agent, to);
	if (rank < 0) {
		rte_errno = -rank;
		return -1;
	}
	return rank;
}

struct dprpc_future *
dprpc_rpc_async(struct dprpc_agent *agent, const char *to, const char *handler, const void *data,
	size_t len, uint64_t timeout_us)
{
	int rank = dp_resolve(agent, to, handler);

	return rank < 0 ? NULL
			: dprpc_rpc_async_id(agent, (unsigned int)rank, dprpc_handler_id(handler),
				  data, len, timeout_us);
}

/* Numbers that tell threads apart for their kept responses: never
 * reused, unlike a pthread_t, which a thread started after this one ended
 * may get (and with it a stranger's response). */
static _Atomic uint64_t dp_thread_ids;
static __thread uint64_t dp_tls_thread_id;

static uint64_t
dp_thread_id(void)
{
	/* Relaxed: only the numbers' uniqueness matters, which the atomic
	 * increment gives; nothing is published through them. */
	if (dp_tls_thread_id == 0)
		dp_tls_thread_id =
			atomic_fetch_add_explicit(&dp_thread_ids, 1, memory_order_relaxed) + 1;
	return dp_tls_thread_id;
}

/* Where the link to thread @me's kept response is (*result NULL: none).
 * Under sync_kept_lock. */
static struct dp_sync_kept **
dp_sync_kept_find(struct dp_rpc *a, uint64_t me)
{
	struct dp_sync_kept **pp;

	for (pp = &a->sync_kept; *pp != NULL; pp = &(*pp)->next)
		if ((*pp)->thread == me)
			break;
	return pp;
}

/* Keep @fut (DONE; the caller's reference passes to the list) for the
 * calling thread, releasing what it kept before.  False, with @fut still
 * the caller's, when no memory is left for the record. */
static bool
dp_sync_keep(struct dp_rpc *a, struct dprpc_future *fut)
{
	struct dp_sync_kept *n = malloc(sizeof(*n)), **pp;
	struct dprpc_future *old = NULL;
	uint64_t me = dp_thread_id();

	if (n == NULL)
		return false;
	pthread_mutex_lock(&a->sync_kept_lock);
	pp = dp_sync_kept_find(a, me);
	if (*pp != NULL) {
		old = (*pp)->fut;
		(*pp)->fut = fut;
	} else {
		*n = (struct dp_sync_kept){.next = a->sync_kept, .thread = me, .fut = fut};
		a->sync_kept = n;
		n = NULL;
	}
	pthread_mutex_unlock(&a->sync_kept_lock);
	free(n);
	if (old != NULL)
		dprpc_future_put(old);
	return true;
}

/* Thread @me's kept record, unlinked; NULL if none. */
static struct dp_sync_kept *
dp_sync_unkeep(struct dp_rpc *a, uint64_t me)
{
	struct dp_sync_kept **pp, *k;

	pthread_mutex_lock(&a->sync_kept_lock);
	pp = dp_sync_kept_find(a, me);
	k = *pp;
	if (k != NULL)
		*pp = k->next;
	pthread_mutex_unlock(&a->sync_kept_lock);
	return k;
}

void
dp_sync_kept_free(struct dp_rpc *a)
{
	struct dp_sync_kept *k, *next;

	pthread_mutex_lock(&a->sync_kept_lock);
	k = a->sync_kept;
	a->sync_kept = NULL;
	pthread_mutex_unlock(&a->sync_kept_lock);
	for (; k != NULL; k = next) {
		next = k->next;
		dprpc_future_put(k->fut);
		free(k);
	}
}

/* dp_sync_wait() (wait.c); a response longer than *out_len is kept for the
 * calling thread when @keep (rpc_sync), else released. */
int
dp_sync_finish(struct dp_rpc *a, struct dprpc_future *fut, uint64_t timeout_us, void *out,
	size_t *out_len, struct dprpc_error *err, bool keep)
{
	const void *val;
	size_t vlen;
	int rc;

	rc = dprpc_future_wait(fut, timeout_us);
	if (rc == 0) {
		val = dprpc_future_value(fut, &vlen);
		if (out_len != NULL) {
			if (vlen > *out_len) {
				rc = -EMSGSIZE;
				*out_len = vlen;
				if (keep) {
					if (dp_sync_keep(a, fut))
						return rc; /* the reference is kept */
					DP_LOG(WARNING,
						"agent %s: no memory to keep a response of %zu "
						"bytes for rpc_sync_take; released",
						a->b.name, vlen);
				}
			} else {
				if (vlen > 0)
					memcpy(out, val, vlen);
				*out_len = vlen;
			}
		}
	} else if (err != NULL && dprpc_future_error(fut) != NULL) {
		*err = *dprpc_future_error(fut); /* not on a wait that timed out */
	}
	dprpc_future_put(fut);
	return rc;
}

int
dprpc_rpc_sync_take(struct dprpc_agent *agent, void *out, size_t *out_len)
{
	struct dp_rpc *a = dp_rpc_of(agent);
	struct dp_sync_kept **pp, *k;
	const void *val;
	size_t vlen;

	if (a == NULL || out_len == NULL || (out == NULL && *out_len > 0))
		return -EINVAL;
	pthread_mutex_lock(&a->sync_kept_lock);
	pp = dp_sync_kept_find(a, dp_thread_id());
	k = *pp;
	if (k == NULL) {
		pthread_mutex_unlock(&a->sync_kept_lock);
		return -ENOENT;
	}
	val = dprpc_future_value(k->fut, &vlen);
	if (out != NULL && vlen > *out_len) {
		pthread_mutex_unlock(&a->sync_kept_lock);
		*out_len = vlen; /* still kept */
		return -EMSGSIZE;
	}
	*pp = k->next;
	pthread_mutex_unlock(&a->sync_kept_lock);
	/* Only this thread takes its own record: the copy needs no lock. */
	if (out != NULL && vlen > 0)
		memcpy(out, val, vlen);
	*out_len = vlen;
	dprpc_future_put(k->fut);
	free(k);
	return 0;
}

struct dprpc_future *
dprpc_rpc_sync_take_future(struct dprpc_agent *agent)
{
	struct dp_rpc *a = dp_rpc_of(agent);
	struct dprpc_future *fut;
	struct dp_sync_kept *k;

	if (a == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	k = dp_sync_unkeep(a, dp_thread_id());
	if (k == NULL) {
		rte_errno = ENOENT;
		return NULL;
	}
	fut = k->fut;
	free(k);
	return fut;
}
