/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Handlers: the handler registry, the request object and the reply path
 * (from any thread), running a request inline or on a handler lcore.
 *
 * Registry: an open-addressing table of max_handlers * 2 (power of two)
 * buckets keyed by wire id.  dprpc_register() fills a bucket under
 * reg_lock and publishes it by storing the id last with release;
 * dp_handler_find() probes with acquire loads and takes no lock.  Buckets
 * are never freed or reused, so a reader can never see a torn entry.
 * Readers make progress whatever the writers do; the table lives as long
 * as the agent, so nothing is reclaimed under a reader.
 *
 * Handler lcores: each has its own ring, single-producer (the poller:
 * dp_req_start(), dp_redispatch() on the poller) and single-consumer (its
 * lcore: dp_lcore_handler()).  The enqueue hands the request object over:
 * DPDK's rte_ring orders the producer's writes of the request before its
 * tail update and the consumer's reads after its load of it, and from then
 * on the lcore holds the request until its handler answers or defers it.  A full ring never blocks the poller: the request
 * is answered -EBUSY (or dp_redispatch() fails with -EBUSY).  The lcore
 * loops until it sees stop (acquire, paired with the release store in
 * dp_lcores_stop()); what its ring still holds then is freed by
 * dp_drain_rings().
 *
 * The handler contract (dprpc_handler_t) is enforced, not assumed: a
 * request carries an atomic state (dp_agent.h: its phase and the number of
 * handler runs executing it).  Every answer first claims the request
 * (LIVE -> REPLYING, one CAS), so exactly one answer is ever sent and a
 * second reply gets -EALREADY (counted) without touching anything else.
 * The object goes back to req_pool when it is answered and no run holds
 * it: a reply made while its handler still runs leaves the freeing to the
 * run's end, so a second reply in the same handler finds the object
 * intact; a reply after the handler returned (deferred) frees it at once.
 * After the handler returns, dp_run_handler() checks its return against
 * the state: an errno after a reply, or 0 or another value without one,
 * is counted, and an unanswered request is answered (dp_handler_returned()).
 * The pool is FIFO (no cache: req_pool.c), so a freed
 * object is handed out again only after every other free one; until then
 * a late reply finds it FREE and is refused.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "dp_agent.h"
#include "dp_eal.h"
#include "dp_handler.h"
#include "dp_msg.h"
#include "dp_poll.h"
#include "dp_tx.h"
#include "dprpc_lcore.h"

/* The request whose handler runs on this thread (innermost run), for the
 * deadline of calls made from inside it (dprpc_rpc_async_id()). */
__thread const struct dprpc_request *dp_tls_req __attribute__((tls_model("initial-exec")));
__thread uint64_t dp_tls_bound_tsc __attribute__((tls_model("initial-exec")));

/*
 * The names this process computed handler ids of (dprpc_handler_id(), so
 * every by-name call): a caller's call to a handler its destination does
 * not have is answered with the id alone (the wire carries no name), and
 * the caller names it from here on that failure path
 * (dp_unknown_handler_msg()).  Two-way, DP_NAMES_N sets; a name seen
 * when both of its slots hold others replaces the first.  dprpc_handler_id()
 * pays one load and compare of a slot's id (relaxed: it only asks whether
 * the slot holds its id); names are written and read under the lock, a
 * slot's id cleared while its name changes.
 */
#define DP_NAMES_N 256
static _Atomic uint32_t dp_name_ids[DP_NAMES_N];
static char dp_names[DP_NAMES_N][DPRPC_HANDLER_NAME_MAX];
static pthread_mutex_t dp_names_lock = PTHREAD_MUTEX_INITIALIZER;

static inline unsigned int
dp_name_slot(uint32_t id, unsigned int way)
{
	return (way == 0 ? id : id >> 16) & (DP_NAMES_N - 1);
}

static void __rte_noinline
dp_name_note(uint32_t id, const char *name, size_t len)
{
	unsigned int s0 = dp_name_slot(id, 0), s1 = dp_name_slot(id, 1), s;

	pthread_mutex_lock(&dp_names_lock);
	if (atomic_load_explicit(&dp_name_ids[s0], memory_order_relaxed) != id &&
		atomic_load_explicit(&dp_name_ids[s1], memory_order_relaxed) != id) {
		s = atomic_load_explicit(&dp_name_ids[s0], memory_order_relaxed) != 0 &&
				    atomic_load_explicit(&dp_name_ids[s1], memory_order_relaxed) ==
					    0
			    ? s1
			    : s0;
		atomic_store_explicit(&dp_name_ids[s], 0, memory_order_relaxed);
		memcpy(dp_names[s], name, len);
		dp_names[s][len] = '\0';
		atomic_store_explicit(&dp_name_ids[s], id, memory_order_relaxed);
	}
	pthread_mutex_unlock(&dp_names_lock);
}

bool
dp_handler_name(uint32_t id, char *name, size_t cap)
{
	bool found = false;

	if (id == 0 || cap == 0)
		return false;
	pthread_mutex_lock(&dp_names_lock);
	for (unsigned int way = 0; way < 2 && !found; way++) {
		unsigned int s = dp_name_slot(id, way);

		if (atomic_load_explicit(&dp_name_ids[s], memory_order_relaxed) == id) {
			snprintf(name, cap, "%s", dp_names[s]);
			found = true;
		}
	}
	pthread_mutex_unlock(&dp_names_lock);
	return found;
}

uint32_t
dprpc_handler_id(const char *name)
{
	uint32_t h = 2166136261u; /* FNV-1a, 32 bits */
	const char *p;

	if (name == NULL)
		return 0; /* no handler has id 0 */
	for (p = name; *p != '\0'; p++) {
		h ^= (uint8_t)*p;
		h *= 16777619u;
	}
	h = h != 0 ? h : 1; /* 0 marks a free bucket */
	if (unlikely(atomic_load_explicit(&dp_name_ids[dp_name_slot(h, 0)], memory_order_relaxed) !=
			     h &&
		     atomic_load_explicit(&dp_name_ids[dp_name_slot(h, 1)], memory_order_relaxed) !=
			     h) &&
		(size_t)(p - name) < DPRPC_HANDLER_NAME_MAX && p != name)
		dp_name_note(h, name, (size_t)(p - name));
	return h;
}

const struct dp_handler *
dp_handler_find(const struct dprpc_agent *a, uint32_t id)
{
	unsigned int i, b;

	/* 0 marks a free bucket: no handler has it (a frame may carry it;
	 * found by tests/fuzz/fuzz_msg.c). */
	if (id == 0)
		return NULL;
	for (i = 0, b = id & a->handler_mask; i <= a->handler_mask;
		i++, b = (b + 1) & a->handler_mask) {
		/* Acquire: pairs with the release store of id in
		 * dprpc_register(), so fn, arg and mode are visible. */
		uint32_t cur = atomic_load_explicit(&a->handlers[b].id, memory_order_acquire);

		if (cur == id)
			return &a->handlers[b];
		if (cur == 0)
			return NULL;
	}
	return NULL;
}

bool
dp_handler_internal(const struct dprpc_agent *a, uint32_t id)
{
	const struct dp_handler *h = dp_handler_find(a, id);

	return h != NULL && h->internal;
}

/* Handler names the library keeps for itself (the RRef messages). */
#define DP_RESERVED_PREFIX "dprpc."

int
dp_register(struct dprpc_agent *a, const char *name, dprpc_handler_t fn, void *arg,
	enum dprpc_handler_mode mode, bool internal)
{
	unsigned int b, i;
	uint32_t id;
	size_t len;
	int rc = 0;

	if (a == NULL || name == NULL || fn == NULL)
		return -EINVAL;
	len = strlen(name);
	if (len == 0 || len >= DPRPC_HANDLER_NAME_MAX)
		return -EINVAL;
	if (!internal && strncmp(name, DP_RESERVED_PREFIX, strlen(DP_RESERVED_PREFIX)) == 0)
		return -EINVAL;
	if (mode != DPRPC_HANDLER_INLINE && mode != DPRPC_HANDLER_POOL)
		return -EINVAL;
	if (mode == DPRPC_HANDLER_POOL && a->nb_hl == 0)
		return -EINVAL;
	id = dprpc_handler_id(name);

	pthread_mutex_lock(&a->reg_lock);
	for (i = 0, b = id & a->handler_mask; i <= a->handler_mask;
		i++, b = (b + 1) & a->handler_mask) {
		struct dp_handler *h = &a->handlers[b];
		/* Relaxed: writers are serialised by reg_lock, whose
		 * acquire orders this read after the last registration. */
		uint32_t cur = atomic_load_explicit(&h->id, memory_order_relaxed);

		if (cur == id) {
			rc = strcmp(h->name, name) == 0 ? -EEXIST : -EADDRINUSE;
			break;
		}
		if (cur != 0)
			continue;
		if (a->nb_handlers == a->max_handlers) {
			rc = -ENOSPC;
			break;
		}
		memcpy(h->name, name, len + 1);
		h->fn = fn;
		h->arg = arg;
		h->mode = mode;
		h->internal = internal;
		/* Release: publishes the fields above to dp_handler_find(). */
		atomic_store_explicit(&h->id, id, memory_order_release);
		a->nb_handlers++;
		break;
	}
	pthread_mutex_unlock(&a->reg_lock);
	return rc;
}

int
dprpc_register(struct dprpc_agent *a, const char *name, dprpc_handler_t fn, void *arg,
	enum dprpc_handler_mode mode)
{
	return dp_register(a, name, fn, arg, mode, false);
}

const void *__rte_hot
dprpc_request_payload(const struct dprpc_request *req, size_t *len)
{
	if (req == NULL) {
		if (len != NULL)
			*len = 0;
		rte_errno = EINVAL;
		return NULL;
	}
	if (len != NULL)
		*len = req->len;
	return req->len > 0 ? req->payload : NULL;
}

/* A held payload: @obj, freed by @free_fn, holds its @len bytes at @data. */
struct dprpc_payload {
	void (*free_fn)(void *obj);
	void *obj;
	void *data;
	size_t len;
};

/* Whether @len bytes at @p lie in the @n bytes at @buf. */
static bool
dp_within(const uint8_t *p, size_t len, const uint8_t *buf, size_t n)
{
	return p >= buf && len <= n && (size_t)(p - buf) <= n - len;
}

struct dprpc_payload *
dprpc_request_payload_hold(struct dprpc_request *req)
{
	struct dprpc_payload *h;

	if (req == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	h = malloc(sizeof(*h));
	if (h == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	h->len = req->len;
	if (req->rx != NULL && dp_within(req->payload, req->len, req->rx->buf, req->rx->len)) {
		/* Reassembled: the message is the hold's now (dp_req_release()
		 * skips it), the request's pointer into it still valid. */
		h->obj = req->rx;
		h->data = (uint8_t *)req->rx->buf + (req->payload - req->rx->buf);
		h->free_fn = dp_rxmsg_free;
		req->rx = NULL;
	} else {
		h->obj = malloc(req->len > 0 ? req->len : 1);
		if (h->obj == NULL) {
			free(h);
			rte_errno = ENOMEM;
			return NULL;
		}
		if (req->len > 0)
			memcpy(h->obj, req->payload, req->len);
		h->data = h->obj;
		h->free_fn = free;
	}
	return h;
}

void *
dprpc_payload_data(const struct dprpc_payload *p, size_t *len)
{
	if (p == NULL) {
		if (len != NULL)
			*len = 0;
		rte_errno = EINVAL;
		return NULL;
	}
	if (len != NULL)
		*len = p->len;
	return p->len > 0 ? p->data : NULL;
}

void
dprpc_payload_release(struct dprpc_payload *p)
{
	if (p == NULL)
		return;
	p->free_fn(p->obj);
	free(p);
}

unsigned int
dprpc_request_caller(const struct dprpc_request *req)
{
	if (req == NULL) {
		rte_errno = EINVAL;
		return UINT_MAX;
	}
	return req->src;
}

struct dprpc_agent *
dprpc_request_agent(const struct dprpc_request *req)
{
	if (req == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	return req->agent;
}

uint64_t
dprpc_request_deadline_tsc(const struct dprpc_request *req)
{
	if (req == NULL) {
		rte_errno = EINVAL;
		return 0;
	}
	return req->deadline_tsc;
}

uint64_t
dprpc_request_remaining_us(const struct dprpc_request *req)
{
	uint64_t now;

	if (req == NULL) {
		rte_errno = EINVAL;
		return 0;
	}
	if (req->deadline_tsc == 0)
		return DPRPC_NO_DEADLINE;
	now = rte_rdtsc();
	return now >= req->deadline_tsc ? 0 : dp_tsc_to_us(req->agent, req->deadline_tsc - now);
}

uint64_t
dprpc_request_timeout(const struct dprpc_request *req, uint64_t timeout_us)
{
	uint64_t left;

	if (req == NULL) {
		rte_errno = EINVAL;
		return 0;
	}
	if (timeout_us == DPRPC_TIMEOUT_DEFAULT)
		timeout_us = req->agent->default_timeout_us;
	left = dprpc_request_remaining_us(req);
	if (left == DPRPC_NO_DEADLINE)
		return timeout_us;
	if (left == 0)
		left = 1; /* passed: the shortest timeout, not none */
	return timeout_us == DPRPC_TIMEOUT_NONE || left < timeout_us ? left : timeout_us;
}

uint64_t
dprpc_request_enter(const struct dprpc_request *req)
{
	uint64_t prev = dp_tls_bound_tsc;

	if (req == NULL) {
		rte_errno = EINVAL;
		return prev;
	}
	dp_tls_bound_tsc = req->deadline_tsc;
	return prev;
}

void
dprpc_request_leave(uint64_t prev)
{
	dp_tls_bound_tsc = prev;
}

bool
dprpc_request_cancelled(const struct dprpc_request *req)
{
	if (req == NULL) {
		rte_errno = EINVAL;
		return false;
	}
	/* Relaxed: a hint (struct dprpc_request). */
	return (atomic_load_explicit(&req->cancelled, memory_order_relaxed) & DP_REQ_CANCELLED) !=
	       0;
}

void
dp_req_set_hook(struct dprpc_request *req, const struct dp_req_hook *hook, void *arg0, void *arg1)
{
	req->hook = hook;
	req->hook_arg[0] = arg0;
	req->hook_arg[1] = arg1;
}

void *
dp_req_hook_arg(const struct dprpc_request *req, unsigned int i)
{
	return req->hook_arg[i];
}

void
dp_req_set_hook_arg(struct dprpc_request *req, unsigned int i, void *arg)
{
	req->hook_arg[i] = arg;
}

void
dp_req_set_input(struct dprpc_request *req, const void *val, uint32_t len)
{
	req->in_val = val;
	req->in_len = len;
}

const void *
dp_req_input(const struct dprpc_request *req, uint32_t *len)
{
	*len = req->in_val != NULL ? req->in_len : 0;
	return req->in_val;
}

/* Give @req back to req_pool with what it holds: its hook's release, its
 * frame, its reassembled or self-sent message.  Once per object, by the
 * thread that leaves its state at DONE with no run (dp_req_done(),
 * dp_run_handler()). */
static void __rte_hot
dp_req_release(struct dprpc_request *req)
{
	struct dprpc_agent *a = req->agent;

	if (req->hook != NULL)
		req->hook->release(req);
	/* Calls to self are not bounded per peer. */
	if (req->src != a->rank) {
		if (dp_tls_poller == a)
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
	dp_req_pool_put(&a->rq, req, dp_tls_poller == a);
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
 * the claim ends (dp_req_done()) and the frame goes out.  On the poller
 * (an inline handler), a response of one buffer is built in the request's
 * own mbuf, as an echo would, instead of a new one; an echoed payload is
 * then already in place.  -ENOBUFS (no mbuf): nothing was sent and the
 * caller still holds the claim.
 */
static int __rte_hot
dp_respond_iov(struct dprpc_request *req, uint32_t status, const struct iovec *iov,
	unsigned int cnt, uint32_t len)
{
	struct dprpc_agent *a = req->agent;
	struct rte_mbuf *m = req->m;
	struct dp_hdr_fields f = {
		.type = DP_FRAME_RESPONSE,
		.src = a->rank,
		.dst = req->src,
		.slot = req->slot,
		.session = a->session,
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
		now = dp_tls_poller == a ? a->now_tsc : rte_rdtsc();
		if (now - req->rx_tsc >= a->tsc_hz / 1000000)
			f.budget = dp_hold_encode(dp_tsc_to_us(a, now - req->rx_tsc));
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
	if (cnt <= 1 && dp_tls_poller == a && m != NULL && rte_mbuf_refcnt_read(m) == 1 &&
		RTE_MBUF_DIRECT(m) && m->data_off + DP_HDRS_LEN + len <= m->buf_len) {
		req->m = NULL;
		m->data_len = (uint16_t)(DP_HDRS_LEN + len);
		m->pkt_len = m->data_len;
		frame = rte_pktmbuf_mtod(m, uint8_t *);
	} else {
		m = dp_frame_alloc(a, len, &frame);
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
	dp_count_mt(&req->agent->st.reply_again, 1);
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
	if (len > req->agent->max_msg)
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
	if (len > req->agent->max_msg) {
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
	struct dprpc_agent *a;
	int rc;

	if (req == NULL)
		return -EINVAL;
	a = req->agent;
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
	dp_count_mt(&a->st.rejected_handler, 1); /* req may be reused by now */
	return 0;
}

int
dprpc_reply_expired(struct dprpc_request *req, const char *msg)
{
	struct dprpc_agent *a;
	int rc;

	if (req == NULL)
		return -EINVAL;
	a = req->agent;
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
	dp_count_mt(&a->st.requests_expired, 1);
	return 1;
}

/* An error answer the library itself owes (no handler, a handler that
 * failed or broke its contract, a full pool): if no mbuf can be had, count
 * it and release the request.  A remote caller's call times out (or its
 * peer goes down); a call to self has no resend to wait for, so on the
 * poller, which owns its slot, it fails at once with @code.  (On a handler
 * lcore the slot cannot be touched: that call to self waits for its
 * timeout.)  False, doing nothing, if @req was answered already. */
bool
dp_reply_error_or_drop(struct dprpc_request *req, int code, const char *msg)
{
	struct dprpc_agent *a = req->agent;
	uint16_t slot = req->slot;
	uint32_t req_num = req->req_num;
	bool self = req->src == a->rank;

	if (dp_req_claim(req) != 0)
		return false;
	if (dp_respond_error(req, code, msg) != -ENOBUFS)
		return true;
	dp_count_mt(&a->st.reply_nombuf, 1);
	dp_req_done(req); /* released unanswered */
	if (self && dp_tls_poller == a)
		dp_self_fail(a, slot, req_num, code, msg);
	return true;
}

/* What a handler's return @rc (not DPRPC_DEFERRED) asks of @req, which the
 * run still holds: a negative errno is answered unless the handler
 * replied; 0 must follow a reply; nothing else is allowed.  A broken
 * contract is counted and, if the request is unanswered, answered -EPROTO
 * (documented in dprpc_rpc.h). */
static void
dp_handler_returned(struct dprpc_request *req, const struct dp_handler *h, int rc)
{
	struct dprpc_agent *a = req->agent;
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
			    a->name) < 0)
			msg[0] = '\0';
		if (dp_reply_error_or_drop(req, -EPROTO, msg))
			dp_count_mt(&a->st.handler_unanswered, 1);
		return;
	}
	if (rc < 0) {
		snprintf(msg, sizeof(msg), "handler '%s' on worker %s failed: %s", h->name, a->name,
			strerror(-rc));
		if (!dp_reply_error_or_drop(req, rc, msg))
			dp_count_mt(&a->st.handler_error_after_reply, 1);
		return;
	}
	dp_count_mt(&a->st.handler_bad_return, 1);
	if (snprintf(msg, sizeof(msg),
		    "handler '%s' on worker %s returned %d: not 0, DPRPC_DEFERRED or an errno",
		    h->name, a->name, rc) < 0)
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
dp_req_new(struct dprpc_agent *a, const struct dp_parsed *p)
{
	struct dprpc_request *req = dp_req_pool_get(&a->rq);

	if (req == NULL) {
		dp_count(&a->st.drops[DPRPC_DROP_NO_REQUEST], 1);
		return NULL;
	}
	req->agent = a;
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
	req->rx_tsc = a->now_tsc;
	req->hook = NULL;
	req->in_val = NULL;
	req->in_len = 0;
	req->rx = NULL;
	req->tx = NULL;
	req->h = dp_handler_find(a, p->handler_id);
	req->deadline_tsc =
		p->budget == 0 ? 0 : a->now_tsc + dp_us_to_tsc(a, dp_budget_decode(p->budget));
	/* Relaxed: published with the rest by the hand-over (above). */
	atomic_store_explicit(&req->cancelled, 0, memory_order_relaxed);
	req->retry_hint = 0;
	req->stream = (p->flags & DP_REQ_STREAM) != 0 && p->src != a->rank;
	if (unlikely(req->stream)) {
		/* Its window: the caller's (at least 1), of which at most our
		 * credits (dp_stream.h). */
		req->st_window = RTE_MAX(p->credits, (uint16_t)1);
		req->st_weff = (uint16_t)RTE_MIN((uint32_t)req->st_window, a->credits);
		req->st_next = 0;
		/* Relaxed: published with the rest by the hand-over. */
		atomic_store_explicit(&req->st_limit, req->st_window, memory_order_relaxed);
	}
	if (p->src != a->rank)
		a->peers[p->src].srv_taken++; /* poller only (struct dp_peer) */
	return req;
}

/* Handler lcore @hl's service time (TSC): its EWMA, or, before its first
 * sample, the service time the application declared
 * (conf.service_time_us) or how long the request it runs has run so far
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
	return RTE_MAX(hl->agent->service_declared_tsc, busy != 0 && now > busy ? now - busy : 0);
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
dp_pool_wait_tsc(const struct dprpc_agent *a)
{
	uint64_t wait = 0, now = rte_rdtsc();
	unsigned int i;

	for (i = 0; i < a->nb_hl; i++)
		wait += (dp_hl_queued(&a->hl[i]) + 1) * dp_hl_service(&a->hl[i], now);
	return a->nb_hl == 0 ? 0 : wait / a->nb_hl;
}

uint16_t
dp_retry_hint(const struct dprpc_agent *a)
{
	uint64_t us = dp_tsc_to_us(a, dp_pool_wait_tsc(a));

	return dp_budget_encode(RTE_MAX(us, (uint64_t)DP_RETRY_MIN_US));
}

/* @req may not run (dp_req_runnable()): its caller cancelled it (released
 * unanswered: nobody waits for the answer) or its deadline passed while it
 * waited (answered -ETIME); counted either way.  False. */
static bool __rte_noinline
dp_req_unrunnable(struct dprpc_request *req)
{
	struct dprpc_agent *a = req->agent;
	char msg[DPRPC_ERRMSG_MAX];

	/* Relaxed: a hint (struct dprpc_request). */
	if (atomic_load_explicit(&req->cancelled, memory_order_relaxed) & DP_REQ_CANCELLED) {
		dp_count_mt(&a->st.requests_cancelled, 1);
		dp_request_free(req);
		return false;
	}
	dp_count_mt(&a->st.requests_expired, 1);
	/* A long name truncates the message, like any message. */
	if (snprintf(msg, sizeof(msg),
		    "worker %s did not run '%s': its deadline passed while queued", a->name,
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

/* The inline backlog's bounds (conf.inline_wait_max_us and the request's
 * deadline, docs/serving.md): asked only while the rx bursts come back
 * full.  A request whose deadline passed is answered -ETIME (true is
 * returned).  The poller has been behind since the first of them, and
 * has run inline handlers for rx_handler_tsc since (those before @req in
 * this burst included): the work that requests still in the port's queue
 * wait behind.  Beyond the bound, @req is answered -EBUSY unrun, with
 * that time as its retry-after hint (about the time the backlog needs to
 * drain), and true is returned.  @now: the TSC.  The poller. */
static bool
dp_inline_late(struct dprpc_agent *a, struct dprpc_request *req, uint64_t now)
{
	uint64_t age = a->rx_handler_tsc, us;
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
	age = RTE_MIN(age, dp_rx_behind_cpu(a, now));
	if (age <= a->inline_max_tsc)
		return false;
	dp_count(&a->st.rejected_inline, 1);
	us = RTE_MIN(dp_tsc_to_us(a, age), (uint64_t)UINT32_MAX);
	snprintf(msg, sizeof(msg), "worker %s: inline backlog %" PRIu64 " us old", a->name, us);
	req->retry_hint = dp_budget_encode(RTE_MAX(us, (uint64_t)DP_RETRY_MIN_US));
	dp_reply_error_or_drop(req, -EBUSY, msg);
	return true;
}

/* The pool's queue-delay bound (conf.queue_delay_max_us, docs/serving.md):
 * @req would wait behind what handler lcore @hl has queued, that many
 * requests times its mean service time (the EWMA of dp_lcore_handler()).
 * Beyond the bound it is answered -EBUSY unrun, that wait as its
 * retry-after hint, and true is returned.  The poller. */
static bool __rte_noinline
dp_pool_slow(struct dprpc_agent *a, struct dprpc_request *req, const struct dp_hlcore *hl)
{
	uint64_t wait = dp_hl_queued(hl) * dp_hl_service(hl, a->now_tsc), us;
	char msg[DPRPC_ERRMSG_MAX];

	if (wait <= a->queue_delay_max_tsc)
		return false;
	dp_count(&a->st.rejected_delay, 1);
	us = RTE_MIN(dp_tsc_to_us(a, wait), (uint64_t)UINT32_MAX);
	snprintf(msg, sizeof(msg), "worker %s: handler queue %" PRIu64 " us long", a->name, us);
	req->retry_hint = dp_budget_encode(RTE_MAX(us, (uint64_t)DP_RETRY_MIN_US));
	dp_reply_error_or_drop(req, -EBUSY, msg);
	return true;
}

/* An inline request while the poller is behind (rx_backlog): refused if
 * late (dp_inline_late(); the agent's own handlers never are), else run,
 * its run's time added to what the requests still queued wait behind
 * (rx_handler_tsc). */
static void __rte_noinline __rte_hot
dp_run_behind(struct dprpc_agent *a, struct dprpc_request *req)
{
	uint64_t t0 = rte_rdtsc();

	if (!req->h->internal && dp_inline_late(a, req, t0))
		return;
	dp_run(req, true);
	a->rx_handler_tsc += rte_rdtsc() - t0;
}

uint64_t __rte_hot
dp_req_start(struct dprpc_agent *a, struct dprpc_request *req)
{
	const struct dp_handler *h = req->h;
	char msg[DPRPC_ERRMSG_MAX];
	struct dp_hlcore *hl;
	uint64_t wait;

	if (h == NULL) {
		dp_count(&a->st.requests_unknown, 1);
		snprintf(msg, sizeof(msg), "no handler with id 0x%08x on worker %s",
			req->handler_id, a->name);
		dp_reply_error_or_drop(req, -ENOENT, msg);
		return 0;
	}
	/* Relaxed: dp_refuse_calls() publishes nothing but the flag; a
	 * request racing with it is served or refused, either is right. */
	if (unlikely(dp_load_relaxed(&a->refusing)) && !h->internal) {
		snprintf(msg, sizeof(msg), "worker %s is shutting down", a->name);
		dp_reply_error_or_drop(req, -ESHUTDOWN, msg);
		return 0;
	}
	dp_count(&a->st.requests_handled, 1);
	/* A multi-frame request waited for its last frame: it may be late. */
	if (unlikely(!dp_req_runnable(req, a->now_tsc)))
		return 0;
	if (h->mode == DPRPC_HANDLER_INLINE) {
		if (unlikely(a->rx_backlog))
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
		dp_count(&a->st.drops[DPRPC_DROP_HANDLER_FULL], 1);
		dp_count(&a->st.rejected_pool, 1);
		snprintf(msg, sizeof(msg), "handler pool of worker %s is full", a->name);
		req->retry_hint = dp_retry_hint(a);
		dp_reply_error_or_drop(req, -EBUSY, msg);
		return 0;
	}
	a->hl_next = a->hl_next + 1 == a->nb_hl ? 0 : a->hl_next + 1;
	/* Relaxed: an estimate (struct dp_hlcore). */
	return (wait + dp_load_relaxed(&hl->burst_left) + 1) * dp_hl_service(hl, a->now_tsc);
}

int
dp_redispatch(struct dprpc_request *req, uint32_t handler_id, const void *payload, uint32_t len)
{
	struct dprpc_agent *a = req->agent;
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
	if (h->mode == DPRPC_HANDLER_INLINE || dp_tls_poller != a) {
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
	struct dprpc_agent *a = hl->agent;
	struct dprpc_request *reqs[DP_RX_BURST];
	unsigned int n, i, ran, empty = 0;
	uint64_t t0, t1, avg;

	/* Acquire: pairs with the release store of stop in destroy. */
	while (!atomic_load_explicit(&a->stop, memory_order_acquire)) {
		n = rte_ring_sc_dequeue_burst(hl->ring, (void **)reqs, DP_RX_BURST, NULL);
		if (n == 0) {
			dp_idle(a, &empty);
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
