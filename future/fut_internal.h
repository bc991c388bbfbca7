/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Future entry points for the rest of the library (never installed, not
 * exported: the fut_ prefix is outside version.map's dprpc_*).
 *
 * The agent holds its own reference on every call's future from
 * submission to completion.  These variants let that reference serve as
 * the completion's guard instead of taking and dropping another, which
 * saves two locked instructions per call, and take the agent's reference
 * at creation, which saves a third.
 */
#ifndef FUT_INTERNAL_H
#define FUT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_log.h>

#include <dprpc/dprpc_future.h>

/* future/'s log type, "dprpc.future" (registered in future.c; EAL's
 * --log-level='dprpc.*:debug' or dprpc.future:debug reaches it). */
extern int fut_logtype;
/* One line at RTE_LOG_<level> under "dprpc.future". */
#define FUT_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, fut_logtype, "dprpc: " fmt "\n", ##__VA_ARGS__)

/* dprpc_future_pool_create() for a thread that has EAL: the futures live
 * in an rte_mempool called @name (per-lcore caches: no locked instruction
 * per allocation on an EAL lcore).  dprpc_future_pool_release() frees it
 * if no future is in use and otherwise leaks it, logged, so that the
 * futures still held stay valid.  NULL with rte_errno on failure. */
struct dprpc_future_pool *fut_pool_create_mempool(
	const char *name, unsigned int nb_futures, unsigned int nb_cb_nodes, int socket_id);

/* dprpc_future_new() with @refs references held by the caller. */
struct dprpc_future *fut_new_refs(struct dprpc_future_pool *pool, uint32_t refs);

/*
 * Expiry: a deadline a future carries on the TSC, at which it fails with
 * -ETIMEDOUT (origin @origin, message @msg, which must outlive the
 * future's lifetime) whoever notices first: a thread waiting on it
 * (dprpc_future_wait() and the calls built on it check between polls and
 * park slices), or a thread that finds it without holding a reference
 * (dataplane: the watch fields of the call slots, dp_expire_stalled()).
 * fut_set_expiry() is for the creator, before the future is shared; 0 (the
 * default) never expires.  fut_expire() takes a reference unless @f is
 * free, fails it if it is pending and its expiry is at or before @now, and
 * drops the reference: @f may have been completed, freed or handed out
 * again since it was found, and then either nothing happens or the checks
 * are made on its new lifetime.  Its memory must stay readable, as a
 * pool's does while the pool exists (for an agent's futures, while the
 * agent does).  True if this call failed it; its callbacks ran on this
 * thread.
 */
void fut_set_expiry(struct dprpc_future *f, uint64_t tsc, uint16_t origin, const char *msg);

/* A call's future in one function call: fut_new_refs(@pool, 2), then
 * dprpc_future_set_progress(@fn, @arg) and, unless @expiry is 0,
 * fut_set_expiry(@expiry, @origin, @msg).  NULL with rte_errno as
 * fut_new_refs(). */
struct dprpc_future *fut_new_call(struct dprpc_future_pool *pool, dprpc_progress_fn_t fn, void *arg,
	uint64_t expiry, uint16_t origin, const char *msg);
bool fut_expire(struct dprpc_future *f, uint64_t now, uint16_t origin, const char *msg);

/* dprpc_future_complete() / dprpc_future_fail() that also drop one
 * reference of the caller's, whatever they return (on -EALREADY the
 * value stays the caller's, as with the public calls).  @f must not be
 * NULL; the arguments are not checked. */
int fut_complete_consume(struct dprpc_future *f, const void *data, size_t len,
	dprpc_value_free_fn_t free_fn, void *free_arg);
int fut_fail_consume(struct dprpc_future *f, int code, uint16_t origin, const char *msg);
/* fut_fail_consume() with the error's retry_after_us. */
int fut_fail_consume_hint(struct dprpc_future *f, int code, uint16_t origin, const char *msg,
	uint32_t retry_after_us);
/* True once @f failed with -ECANCELED (dprpc_future_cancel()): the agent's
 * timer frees the call's slot and tells the server (client.c). */
bool fut_cancelled(const struct dprpc_future *f);
/* @fn(@arg) is called on the cancelling thread each time
 * dprpc_future_cancel() cancels a future of @pool: the agent that owns
 * the pool learns at once, not at its next timer tick.  Set before the
 * pool's futures are shared; @fn must be safe on any thread. */
void fut_pool_set_cancel_hook(struct dprpc_future_pool *pool, void (*fn)(void *arg), void *arg);
/* The outcome dprpc_future_cancel_outcome() returns for @f from now on (an
 * enum dprpc_cancel_outcome; release): set by the agent that made the call,
 * which holds a reference until it has. */
void fut_set_cancel_outcome(struct dprpc_future *f, int outcome);

#endif /* FUT_INTERNAL_H */
