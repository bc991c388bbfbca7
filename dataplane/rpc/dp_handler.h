/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Handlers (handler.c; request.c, reply.c, dispatch.c): the registry of
 * handlers by wire id, the request
 * object and the reply path, running a request inline or on a handler
 * lcore.  dp_handler_find() and dp_run_handler(): any thread (the registry
 * is read without a lock); dp_reply_error_or_drop(): the thread that holds
 * the request; dp_req_new(), dp_req_start(): the poller;
 * dp_lcore_handler(): a handler lcore's loop.  The functions an extension
 * uses (dp_register(), dp_redispatch(), dp_request_free(), the request's
 * hook and input) are declared in dp_ext.h.
 */
#ifndef DP_HANDLER_H
#define DP_HANDLER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <dprpc/dprpc_rpc.h>
#include <dprpc/dprpc_handler.h>

struct dp_rpc;
struct dp_parsed;
struct rte_ring;

struct dp_handler {
	/* Wire id; 0 while the bucket is free.  Written last, with release,
	 * by dprpc_register(); read with acquire by dp_handler_find(). */
	_Atomic uint32_t id;
	enum dprpc_handler_mode mode;
	/* Registered by an extension (dp_register(..., internal = true)):
	 * still served once the agent refuses calls (dp_refuse_calls()). */
	bool internal;
	dprpc_handler_fn_t fn;
	void *arg;
	char name[DPRPC_HANDLER_NAME_MAX];
};

struct dp_hlcore {
	struct dp_rpc *rpc;
	unsigned int lcore;
	struct rte_ring *ring; /* SP (poller) / SC (this lcore) */
	/* Mean time one request took on this lcore, in TSC cycles, an EWMA
	 * over bursts: written by the lcore, read by the poller for the
	 * retry-after hint of an overload answer (relaxed: an estimate). */
	_Atomic uint64_t service_tsc;
	/* The TSC at which the lcore began its current burst, 0 while idle:
	 * until the first sample, the age of the running request is the
	 * service time's lower bound (dp_hl_service()). */
	_Atomic uint64_t busy_tsc;
	/* Requests of the lcore's current burst not started yet: out of the
	 * ring already, still ahead of what is queued (relaxed: an
	 * estimate). */
	atomic_uint burst_left;
	bool launched;
};

/* A request object for @p (payload in place, no frame attached), or NULL
 * if the pool is empty (counted). */
struct dprpc_request *dp_req_new(struct dp_rpc *a, const struct dp_parsed *p);
/* Run @req's handler inline or queue it to the pool, or answer that there
 * is no such handler or no room.  Queued to a handler lcore: about how
 * long it will wait there and run (TSC; 0 while the lcore's service time
 * is unknown); else 0. */
uint64_t dp_req_start(struct dp_rpc *a, struct dprpc_request *req);
/* The name this process last computed handler id @id of
 * (dprpc_handler_id()), into @name: false if none is known.  Any thread;
 * takes a lock: for failure paths. */
bool dp_handler_name(uint32_t id, char *name, size_t cap);
/* True if @id is a handler an extension registered here (internal): the
 * calls and requests an agent refusing calls still lets through. */
bool dp_handler_internal(const struct dp_rpc *a, uint32_t id);
/* The library's own error answer to @req (no handler, a failed handler, a
 * full pool): released unanswered if no mbuf can be had (counted).  False,
 * doing nothing, if @req was answered already. */
bool dp_reply_error_or_drop(struct dprpc_request *req, int code, const char *msg);
/* Run @req's handler on this thread and enforce its contract
 * (dprpc_handler_fn_t): answer, count or keep the request as its return asks;
 * the request goes back to the pool when this run ends if it was answered
 * and no other run holds it. */
void dp_run_handler(struct dprpc_request *req);
int dp_lcore_handler(void *hlcore_arg);
/* The answer's claim, for answers made outside reply.c (a stream's end,
 * stream_tx.c): dp_reply_claim() takes it (-EALREADY, counted, if @req
 * was answered); dp_req_unclaim() gives it up having sent nothing;
 * dp_req_done() ends it once the answer is built (the request may be
 * freed then). */
int dp_reply_claim(struct dprpc_request *req);
void dp_req_unclaim(struct dprpc_request *req);
void dp_req_done(struct dprpc_request *req);
/* Give @req back to req_pool with what it holds (reply.c): the thread
 * that leaves its state at DONE with no run. */
void dp_req_release(struct dprpc_request *req);
/* The request whose handler runs on this thread, NULL outside a handler. */
extern __thread const struct dprpc_request *dp_tls_req __attribute__((tls_model("initial-exec")));
/* The deadline (TSC, 0: none) of the request the thread entered
 * (dprpc_request_enter()): its calls never outlive it. */
extern __thread uint64_t dp_tls_bound_tsc __attribute__((tls_model("initial-exec")));
/* How long the handler lcores need for what is queued to them and what
 * they run, in TSC cycles: requests times each lcore's service time
 * (dp_hl_service()), spread over the lcores.  Any thread (an estimate:
 * relaxed loads and ring counts). */
uint64_t dp_pool_wait_tsc(const struct dp_rpc *a);
/* The retry-after hint of an overload answer (encoded as a budget,
 * dp_wire.h): dp_pool_wait_tsc(), at least DP_RETRY_MIN_US.  Any
 * thread. */
#define DP_RETRY_MIN_US 100
uint16_t dp_retry_hint(const struct dp_rpc *a);

#endif /* DP_HANDLER_H */
