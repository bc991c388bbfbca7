/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Calls and handlers: the handler registry, request dispatch (inline or to
 * the handler lcores), replies from any thread, and call submission.
 *
 * Registry: an open-addressing table of max_handlers * 2 (power of two)
 * buckets keyed by wire id.  dprpc_register() fills a bucket under
 * reg_lock and publishes it by storing the id last with release;
 * dp_handler_find() probes with acquire loads and takes no lock.  Buckets
 * are never freed or reused, so a reader can never see a torn entry.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_pause.h>

#include "dp_agent.h"
#include "fut_internal.h"
#include "dprpc_atomic.h"

uint32_t
dprpc_handler_id(const char *name)
{
	uint32_t h = 2166136261u; /* FNV-1a, 32 bits */

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
	if (len != NULL)
		*len = req->len;
	return req->len > 0 ? req->payload : NULL;
}

unsigned int
dprpc_request_caller(const struct dprpc_request *req)
{
	return req->src;
}

struct dprpc_agent *
dprpc_request_agent(const struct dprpc_request *req)
{
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

/* Hand a finished frame to the poller: staged directly when we are the
 * poller, else through the MP tx ring.  With @must the ring is retried
 * until it has room (a reply must not be lost); without it a full ring
 * fails with -ENOBUFS. */
static int
dp_submit(struct dprpc_agent *a, struct rte_mbuf *m, bool must)
{
	if (dp_tls_poller == a) {
		if (dp_meta(m)->fut != NULL)
			dp_start_call(a, m, a->now_tsc); /* inside a poll: fresh */
		else
			dp_stage_tx(a, m);
		return 0;
	}
	while (rte_ring_mp_enqueue(a->tx_ring, m) != 0) {
		if (!must)
			return -ENOBUFS;
		/* The poller drains the ring; when nobody polls (caller-driven
		 * mode) poll ourselves. */
		if (!a->io_launched)
			dprpc_poll(a, DP_RX_BURST);
		rte_pause();
	}
	return 0;
}

static struct rte_mbuf *
dp_frame_alloc(struct dprpc_agent *a, uint32_t len, uint8_t **frame)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(a->mp);

	if (m == NULL)
		return NULL;
	*frame = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(DP_HDRS_LEN + len));
	if (*frame == NULL) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	return m;
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

/*
 * At-most-once execution (DESIGN.md section 5).  For each peer and each slot
 * of the peer's numbering, the server remembers the last request number and,
 * once answered, keeps its response (struct dp_kept) until the peer
 * sends a newer request on that slot.  A duplicate of an answered request
 * gets the kept response again; a duplicate of one still running, or an
 * older request, is dropped.  A newer session id from the peer (it
 * restarted) clears its slots (dp_check_session()).  Poller only.
 *
 * The slots are the client's: it numbers them up to its own
 * max_outstanding, which nothing makes equal to ours.  Instead of a
 * handshake to agree on one number (a round trip before the first call,
 * and a frame whose loss must be recovered too), the server's state for a
 * peer grows, to the next power of two, the first time the peer uses a
 * slot beyond it: a malloc on the poller, at most log2(65536 /
 * max_outstanding) times per peer, never in the steady state.  A slot is a
 * 16-bit field, so a peer can make us hold at most 65536 entries
 * (65536 * (sizeof(struct dp_srv_slot) + DP_KEEP_BYTES), about 19 MiB).
 */
void
dp_srv_reset(struct dprpc_agent *a, struct dp_peer *peer)
{
	unsigned int i;

	for (i = 0; i < peer->srv_cap; i++)
		dp_msg_srv_clear(a, &peer->srv[i]);
}

int
dp_srv_grow(struct dp_peer *peer, unsigned int cap)
{
	struct dp_srv_slot *srv;
	uint8_t *keep;

	if (cap <= peer->srv_cap)
		return 0;
	/* Each slot's area on its own cache lines: a kept frame is written
	 * once per call.  Only the bytes a dp_kept says it holds are ever
	 * read, so the new areas need no zeroing. */
	keep = aligned_alloc(RTE_CACHE_LINE_SIZE, (size_t)cap * DP_KEEP_BYTES);
	srv = keep != NULL ? realloc(peer->srv, (size_t)cap * sizeof(*srv)) : NULL;
	if (srv == NULL) {
		free(keep);
		return -ENOMEM;
	}
	/* Entries hold pointers, not addresses of their own or of their
	 * areas (dp_keep_area() is computed at each use): moving is safe. */
	memset(srv + peer->srv_cap, 0, (size_t)(cap - peer->srv_cap) * sizeof(*srv));
	if (peer->srv_cap > 0)
		memcpy(keep, peer->srv_keep, (size_t)peer->srv_cap * DP_KEEP_BYTES);
	free(peer->srv_keep);
	peer->srv = srv;
	peer->srv_keep = keep;
	peer->srv_cap = cap;
	return 0;
}

struct dp_srv_slot *
dp_srv_slot(struct dp_peer *peer, uint16_t slot)
{
	if (likely(slot < peer->srv_cap))
		return &peer->srv[slot];
	if (dp_srv_grow(peer, rte_align32pow2((uint32_t)slot + 1)) != 0)
		return NULL;
	return &peer->srv[slot];
}

/* A response staged for the port: keep it if it answers the request its
 * slot is running. */
void
dp_keep_response(struct dprpc_agent *a, struct rte_mbuf *m, const struct dp_wire_hdr *h)
{
	struct dp_peer *peer = &a->peers[rte_be_to_cpu_16(h->dst_worker)];
	unsigned int slot = rte_be_to_cpu_16(h->slot);
	struct dp_srv_slot *e;

	e = dp_srv_find(peer, slot);
	if (e == NULL || !peer->session_known)
		return;
	if (e->state != DP_SRV_RUNNING || e->req_num != rte_be_to_cpu_32(h->req_num))
		return;
	dp_keep(&e->resp, dp_keep_area(peer, slot, true), m);
	e->state = DP_SRV_DONE;
}

/* Keep @m, a single-frame request or response about to be sent, for
 * sending again (struct dp_kept): its handler id and status (wire order)
 * then its payload, or a reference. */
void
dp_keep(struct dp_kept *k, uint8_t *area, struct rte_mbuf *m)
{
	uint32_t plen = m->data_len - DP_HDRS_LEN;

	if (likely(m->nb_segs == 1 && plen <= DP_KEEP_BYTES - 8)) {
		const struct dp_wire_hdr *h = dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *));

		memcpy(area, &h->handler_id, 4);
		memcpy(area + 4, &h->status, 4);
		rte_memcpy(area + 8, rte_pktmbuf_mtod_offset(m, const void *, DP_HDRS_LEN), plen);
		k->len = (uint16_t)(8 + plen);
		k->m = NULL;
		return;
	}
	rte_mbuf_refcnt_update(m, 1); /* ours; the PMD frees the other */
	k->m = m;
	k->len = 0;
}

/* Stage the kept frame again, a @type frame to @to on @slot for request
 * @req_num (what the frame's headers held besides the kept bytes); false
 * if nothing is kept or no mbuf could be had (the caller's timer or the
 * peer's next duplicate tries again). */
bool
dp_kept_send(struct dprpc_agent *a, const struct dp_kept *k, const uint8_t *area, uint8_t type,
	unsigned int to, uint16_t slot, uint32_t req_num)
{
	struct dp_hdr_fields f = {
		.type = type,
		.src = a->rank,
		.dst = (uint16_t)to,
		.slot = slot,
		.session = a->session,
		.req_num = req_num,
	};
	struct rte_mbuf *m = k->m;
	uint32_t v;
	uint8_t *frame;

	if (m != NULL) {
		rte_mbuf_refcnt_update(m, 1);
	} else {
		if (k->len < 8 || (m = dp_frame_alloc(a, k->len - 8u, &frame)) == NULL)
			return false;
		memcpy(&v, area, 4);
		f.handler_id = rte_be_to_cpu_32(v);
		memcpy(&v, area + 4, 4);
		f.status = rte_be_to_cpu_32(v);
		dp_frame_write(frame, a->peers[to].tmpl, &f, area + 8, k->len - 8u);
		dp_meta_plain(m);
	}
	dp_stage_tx(a, m);
	return true;
}

void
dp_kept_clear(struct dp_kept *k)
{
	rte_pktmbuf_free(k->m);
	k->m = NULL;
	k->len = 0;
}

/* Decide on a request from a peer: true to run it; false if it was a
 * duplicate (answered again or dropped; @m is consumed). */
static bool
dp_srv_check(
	struct dprpc_agent *a, struct rte_mbuf *m, struct dp_srv_slot *e, const struct dp_parsed *p)
{
	int32_t d;

	if (e->state == DP_SRV_EMPTY)
		return true;
	/* Serial-number order: request numbers wrap. */
	d = (int32_t)(p->req_num - e->req_num);
	if (d > 0)
		return true;
	if (d != 0 || e->state != DP_SRV_DONE || !dp_msg_resend_response(a, p->src, p->slot))
		dp_count(&a->st.drops[DPRPC_DROP_DUPLICATE], 1);
	rte_pktmbuf_free(m);
	return false;
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

void
dp_dispatch_request(struct dprpc_agent *a, struct rte_mbuf *m, const struct dp_parsed *p)
{
	struct dp_srv_slot *e = NULL;
	struct dprpc_request *req;

	if (p->pkt_cnt > 1) {
		dp_msg_rx_request(a, m, p);
		return;
	}
	/* Calls to self never cross the port: nothing to de-duplicate.  The
	 * frame's session is the peer's current one (dp_check_session()). */
	if (p->src != a->rank) {
		e = dp_srv_slot(&a->peers[p->src], p->slot);
		if (unlikely(e == NULL)) {
			/* No memory for the slot's at-most-once state: as if
			 * lost (the caller's resend tries again), rather than
			 * run it unguarded or answer that it did not run (a
			 * later copy might). */
			dp_count(&a->st.drops[DPRPC_DROP_NO_MEMORY], 1);
			rte_pktmbuf_free(m);
			return;
		}
		if (!dp_srv_check(a, m, e, p))
			return;
	}
	req = dp_req_new(a, p);
	if (req == NULL) {
		rte_pktmbuf_free(m);
		if (p->src == a->rank)
			dp_self_fail(a, p->slot, p->req_num, -ENOBUFS,
				"no request object free for a call to self");
		return;
	}
	req->m = m;
	if (e != NULL) {
		dp_msg_srv_clear(a, e); /* the peer moved on */
		e->req_num = p->req_num;
		e->state = DP_SRV_RUNNING;
	}
	dp_req_start(a, req);
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

struct dprpc_future *
dprpc_rpc_async_id(struct dprpc_agent *a, unsigned int to, uint32_t handler_id, const void *data,
	size_t len, uint64_t timeout_us)
{
	struct dp_hdr_fields f;
	struct dp_call_meta *meta;
	struct dprpc_future *fut;
	struct dp_peer *peer;
	struct rte_mbuf *m;
	uint8_t *frame;
	uint64_t now;

	if (a == NULL || to >= a->world.n || (data == NULL && len > 0)) {
		rte_errno = EINVAL;
		return NULL;
	}
	if (len > a->max_msg) {
		rte_errno = EMSGSIZE;
		return NULL;
	}
	peer = &a->peers[to];
	/* Relaxed: liveness is a snapshot; a call that slips past a peer
	 * going down is failed by the poller's next liveness check. */
	if (dp_load_relaxed(&peer->state) == DPRPC_PEER_DOWN) {
		rte_errno = EHOSTDOWN;
		return NULL;
	}
	/* Relaxed: a bound only; the poller's decrement publishes nothing. */
	if (atomic_fetch_add_explicit(&peer->outstanding, 1, memory_order_relaxed) >=
		a->max_outstanding) {
		atomic_fetch_sub_explicit(&peer->outstanding, 1, memory_order_relaxed);
		rte_errno = EAGAIN;
		return NULL;
	}
	/* Two references: the caller's, and the agent's, which the
	 * completion drops (fut_complete_consume()). */
	fut = fut_new_refs(a->fpool, 2);
	if (fut == NULL)
		goto fail_outstanding;
	f = (struct dp_hdr_fields){
		.type = DP_FRAME_REQUEST,
		.src = a->rank,
		.dst = (uint16_t)to,
		.session = a->session,
		.handler_id = handler_id,
	};
	if (unlikely(len > DPRPC_MAX_FRAME_PAYLOAD)) {
		struct dp_txmsg *t = dp_txmsg_new(a, &f, data, (uint32_t)len);

		m = t != NULL ? dp_carrier_new(a, t) : NULL;
		if (m == NULL) {
			dp_txmsg_put(t);
			goto fail_future;
		}
	} else {
		m = dp_frame_alloc(a, (uint32_t)len, &frame);
		if (m == NULL)
			goto fail_future;
		dp_frame_write(frame, peer->tmpl, &f, data, (uint32_t)len);
		dp_meta(m)->tx = NULL;
	}
	if (timeout_us == DPRPC_TIMEOUT_DEFAULT)
		timeout_us = a->default_timeout_us;
	meta = dp_meta(m);
	meta->fut = fut;
	now = rte_rdtsc();
	meta->deadline_tsc = timeout_us == 0 ? 0 : now + dp_us_to_tsc(a, timeout_us);
	dprpc_future_set_progress(fut, dp_progress, a);
	if (!a->io_launched && dp_tls_poller != a && dp_poll_trylock(a)) {
		/* Caller-driven and nobody polls: send it ourselves now rather
		 * than through the ring (after what the ring holds, keeping
		 * this thread's calls in order).  The calls in the ring start
		 * at now too, not at the last poll's time. */
		a->now_tsc = now;
		dp_drain_tx_ring(a);
		dp_start_call(a, m, now);
		dp_tx_flush(a);
		dp_poll_unlock(a);
		return fut;
	}
	if (dp_submit(a, m, false) != 0) {
		dp_txmsg_put(meta->tx);
		rte_pktmbuf_free(m);
		goto fail_future;
	}
	return fut;

fail_future:
	/* Never shared: both references go, nothing else holds it. */
	dprpc_future_put(fut);
	dprpc_future_put(fut);
fail_outstanding:
	atomic_fetch_sub_explicit(&peer->outstanding, 1, memory_order_relaxed);
	rte_errno = ENOBUFS;
	return NULL;
}

int
dp_resolve(const struct dprpc_agent *a, const char *to, const char *hname)
{
	int rank;

	if (a == NULL || to == NULL || hname == NULL) {
		rte_errno = EINVAL;
		return -1;
	}
	rank = dprpc_worker_rank(a, to);
	if (rank < 0) {
		rte_errno = -rank;
		return -1;
	}
	return rank;
}

struct dprpc_future *
dprpc_rpc_async(struct dprpc_agent *a, const char *to, const char *handler, const void *data,
	size_t len, uint64_t timeout_us)
{
	int rank = dp_resolve(a, to, handler);

	return rank < 0 ? NULL
			: dprpc_rpc_async_id(a, (unsigned int)rank, dprpc_handler_id(handler), data,
				  len, timeout_us);
}

int
dp_sync_wait(struct dprpc_agent *a, struct dprpc_future *fut, uint64_t timeout_us, void *out,
	size_t *out_len, struct dprpc_error *err)
{
	const void *val;
	size_t vlen;
	int rc;

	/* A call's own timeout fails its future: then wait without a limit. */
	(void)dp_poll_until_done(a, fut);
	rc = dprpc_future_wait(fut, timeout_us);
	if (rc == 0) {
		val = dprpc_future_value(fut, &vlen);
		if (out_len != NULL) {
			if (vlen > *out_len)
				rc = -EMSGSIZE;
			else if (vlen > 0)
				memcpy(out, val, vlen);
			*out_len = vlen;
		}
	} else if (err != NULL && dprpc_future_error(fut) != NULL) {
		*err = *dprpc_future_error(fut); /* not on a wait that timed out */
	}
	dprpc_future_put(fut);
	return rc;
}

int
dprpc_rpc_sync_id(struct dprpc_agent *a, unsigned int to, uint32_t handler_id, const void *data,
	size_t len, uint64_t timeout_us, void *out, size_t *out_len, struct dprpc_error *err)
{
	struct dprpc_future *fut = dprpc_rpc_async_id(a, to, handler_id, data, len, timeout_us);

	if (fut == NULL)
		return -rte_errno;
	return dp_sync_wait(a, fut, 0, out, out_len, err);
}

int
dprpc_rpc_sync(struct dprpc_agent *a, const char *to, const char *handler, const void *data,
	size_t len, uint64_t timeout_us, void *out, size_t *out_len, struct dprpc_error *err)
{
	struct dprpc_future *fut = dprpc_rpc_async(a, to, handler, data, len, timeout_us);

	if (fut == NULL)
		return -rte_errno;
	return dp_sync_wait(a, fut, 0, out, out_len, err);
}
