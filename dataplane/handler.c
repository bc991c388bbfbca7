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
 * on the lcore owns the request until its reply (or dp_request_free())
 * returns it to req_pool.  A full ring never blocks the poller: the request
 * is answered -EBUSY (or dp_redispatch() fails with -EBUSY).  The lcore
 * loops until it sees stop (acquire, paired with the release store in
 * dp_lcores_stop()); what its ring still holds then is freed by
 * dp_drain_rings().
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "dp_agent.h"
#include "dp_handler.h"
#include "dp_msg.h"
#include "dp_poll.h"
#include "dp_tx.h"

uint32_t
dprpc_handler_id(const char *name)
{
	uint32_t h = 2166136261u; /* FNV-1a, 32 bits */

	if (name == NULL)
		return 0; /* no handler has id 0 */
	for (; *name != '\0'; name++) {
		h ^= (uint8_t)*name;
		h *= 16777619u;
	}
	return h != 0 ? h : 1; /* 0 marks a free bucket */
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

const void *
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

void
dp_request_free(struct dprpc_request *req)
{
	struct dprpc_agent *a = req->agent;

	if (req->hook != NULL)
		req->hook->release(req);
	rte_pktmbuf_free(req->m);
	if (req->rx != NULL)
		dp_rxmsg_free(req->rx); /* a reassembled request's payload */
	dp_txmsg_put(req->tx);
	rte_mempool_put(a->req_pool, req);
}

/*
 * Answer @req with @status and @len bytes of @data and release it.  On the
 * poller (an inline handler), the response is built in the request's own
 * mbuf, as an echo would, instead of a new one; an echoed payload is then
 * already in place.  -ENOBUFS (no mbuf) leaves the request unanswered.
 */
static int
dp_respond(struct dprpc_request *req, uint32_t status, const void *data, uint32_t len)
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
	};
	uint8_t *frame;

	if (req->hook != NULL) {
		req->hook->reply(req, &status, &data, &len);
		f.status = status;
	}
	if (unlikely(len > DPRPC_MAX_FRAME_PAYLOAD)) {
		struct dp_txmsg *t = dp_txmsg_new(a, &f, data, len);

		m = t != NULL ? dp_carrier_new(a, t) : NULL;
		if (m == NULL) {
			dp_txmsg_put(t);
			return -ENOBUFS;
		}
		dp_request_free(req);
		dp_submit(a, m, true);
		return 0;
	}
	if (dp_tls_poller == a && m != NULL && rte_mbuf_refcnt_read(m) == 1 && RTE_MBUF_DIRECT(m) &&
		m->data_off + DP_HDRS_LEN + len <= m->buf_len) {
		req->m = NULL;
		m->data_len = (uint16_t)(DP_HDRS_LEN + len);
		m->pkt_len = m->data_len;
		frame = rte_pktmbuf_mtod(m, uint8_t *);
	} else {
		m = dp_frame_alloc(a, len, &frame);
		if (m == NULL)
			return -ENOBUFS;
	}
	dp_frame_write(frame, a->peers[req->src].tmpl, &f, data, len);
	dp_meta_plain(m);
	dp_request_free(req);
	dp_submit(a, m, true);
	return 0;
}

int
dprpc_reply(struct dprpc_request *req, const void *data, size_t len)
{
	if (req == NULL || (data == NULL && len > 0))
		return -EINVAL;
	if (len > req->agent->max_msg)
		return -EMSGSIZE;
	return dp_respond(req, 0, data, (uint32_t)len);
}

int
dprpc_reply_error(struct dprpc_request *req, int code, const char *msg)
{
	if (req == NULL)
		return -EINVAL;
	if (code == 0)
		code = -EIO;
	if (code < 0)
		code = -code;
	return dp_respond(req, (uint32_t)code, msg,
		msg != NULL ? (uint32_t)strnlen(msg, DPRPC_ERRMSG_MAX - 1) : 0);
}

/* An error answer the library itself owes (no handler, a handler that
 * failed, a full pool): if no mbuf can be had, count it and release the
 * request.  A remote caller's call times out (or its peer goes down); a
 * call to self has no resend to wait for, so on the poller, which owns its
 * slot, it fails at once with @code.  (On a handler lcore the slot cannot
 * be touched: that call to self waits for its timeout.) */
void
dp_reply_error_or_drop(struct dprpc_request *req, int code, const char *msg)
{
	struct dprpc_agent *a = req->agent;
	uint16_t slot = req->slot;
	uint32_t req_num = req->req_num;
	bool self = req->src == a->rank;

	if (dprpc_reply_error(req, code, msg) != -ENOBUFS)
		return;
	dp_count_mt(&a->st.reply_nombuf, 1);
	dp_request_free(req);
	if (self && dp_tls_poller == a)
		dp_self_fail(a, slot, req_num, code, msg);
}

void
dp_run_handler(struct dprpc_request *req)
{
	struct dprpc_agent *a = req->agent;
	const struct dp_handler *h = req->h;
	char msg[DPRPC_ERRMSG_MAX];
	int rc;

	rc = h->fn(req, h->arg);
	if (rc >= 0)
		return; /* replied, or deferred */
	snprintf(msg, sizeof(msg), "handler '%s' on worker %s failed: %s", h->name, a->name,
		strerror(-rc));
	dp_reply_error_or_drop(req, rc, msg);
}

/* A request object for @p (payload in place, no frame attached), or NULL
 * if the pool is empty (counted). */
struct dprpc_request *
dp_req_new(struct dprpc_agent *a, const struct dp_parsed *p)
{
	struct dprpc_request *req;
	void *obj;

	if (rte_mempool_get(a->req_pool, &obj) != 0) {
		dp_count(&a->st.drops[DPRPC_DROP_NO_REQUEST], 1);
		return NULL;
	}
	req = obj;
	req->agent = a;
	req->m = NULL;
	req->payload = p->payload;
	req->len = p->payload_len;
	req->src = p->src;
	req->slot = p->slot;
	req->req_num = p->req_num;
	req->handler_id = p->handler_id;
	req->src_session = p->session;
	req->hook = NULL;
	req->in_val = NULL;
	req->in_len = 0;
	req->rx = NULL;
	req->tx = NULL;
	req->h = dp_handler_find(a, p->handler_id);
	return req;
}

/* Run @req's handler inline or queue it to the pool, or answer that there
 * is no such handler or no room. */
void
dp_req_start(struct dprpc_agent *a, struct dprpc_request *req)
{
	const struct dp_handler *h = req->h;
	char msg[DPRPC_ERRMSG_MAX];

	if (h == NULL) {
		dp_count(&a->st.requests_unknown, 1);
		snprintf(msg, sizeof(msg), "no handler with id 0x%08x on worker %s",
			req->handler_id, a->name);
		dp_reply_error_or_drop(req, -ENOENT, msg);
		return;
	}
	dp_count(&a->st.requests_handled, 1);
	if (h->mode == DPRPC_HANDLER_INLINE) {
		dp_run_handler(req);
		return;
	}
	/* Pool: round robin over the handler lcores.  SP: only the poller
	 * enqueues. */
	if (rte_ring_sp_enqueue(a->hl[a->hl_next].ring, req) != 0) {
		dp_count(&a->st.drops[DPRPC_DROP_HANDLER_FULL], 1);
		snprintf(msg, sizeof(msg), "handler pool of worker %s is full", a->name);
		dp_reply_error_or_drop(req, -EBUSY, msg);
		return;
	}
	a->hl_next = a->hl_next + 1 == a->nb_hl ? 0 : a->hl_next + 1;
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
	unsigned int n, i, empty = 0;

	/* Acquire: pairs with the release store of stop in destroy. */
	while (!atomic_load_explicit(&a->stop, memory_order_acquire)) {
		n = rte_ring_sc_dequeue_burst(hl->ring, (void **)reqs, DP_RX_BURST, NULL);
		if (n == 0) {
			dp_idle(a, &empty);
			continue;
		}
		empty = 0;
		for (i = 0; i < n; i++)
			dp_run_handler(reqs[i]);
	}
	return 0;
}
