/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The request object (handler.c has the overview): what a handler reads of
 * its request (payload, caller, deadline, cancellation), the payload it
 * may hold beyond its reply, and the hooks and input value an extension
 * sets on a request it holds (dp_ext.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_errno.h>
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
	return dp_agent_handle(&req->rpc->b);
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
	return now >= req->deadline_tsc ? 0 : dp_tsc_to_us(&req->rpc->b, req->deadline_tsc - now);
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
		/* Relaxed: the value alone (dp_rpc.h). */
		timeout_us = dp_load_relaxed(&req->rpc->default_timeout_us);
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
