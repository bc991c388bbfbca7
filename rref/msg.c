/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RRef messages: building the header, sending a message with arguments,
 * and the bookkeeping messages (DELETE, ACCEPT) that must go even when no
 * call slot is free now: those wait in the retry ring for the extension's
 * timer (rr_ctx_timer(), on the poller).  The messages themselves:
 * rr_internal.h.
 *
 * Design
 * ======
 *
 * Invariants.
 *  - ctx->msgs_waiting counts the bookkeeping messages sent or queued and
 *    not yet answered: rr_send_bg() adds 1 before its first try, and
 *    exactly one decrement follows, when the message is answered
 *    (rr_msg_done()), fails for good, or is dropped.  Shutdown waits for
 *    it to come back to 0 (rr_settled() in inspect.c).
 *  - An rr_retry is owned by one thread at a time: its sender until the
 *    enqueue, then the poller, which frees it once sent, or enqueues it
 *    again (only the poller dequeues, so there is room for it).
 *  - Once ctx->closing is set (ctx.c) no bookkeeping message starts.
 *
 * Ordering.
 *  - msgs_waiting: the increment is relaxed, the decrements are releases
 *    paired with the acquire load in rr_settled() (inspect.c): once
 *    shutdown sees the count at 0, what each message did before it was
 *    counted out (a failure counted) happened before.  The increment needs
 *    no order: it happens before the send, the send before the matching
 *    decrement (through the agent's rings and the answer's future), so
 *    coherence puts it first in the counter's modification order.
 *  - The retry ring (MP enqueue, SC dequeue) hands an rr_retry over: the
 *    ring's tail update is a release and the dequeue reads it with
 *    acquire, so the poller sees what the sender wrote.
 *  - ctx->closing: an acquire load paired with the release stores of the
 *    teardown (rr_ctx_closing(), rr_ctx_free()).
 *
 * Progress.  Nothing here waits: a send that finds no slot is queued, a
 * full ring drops the message (counted in messages_failed).  The ring is a
 * DPDK MP/SC ring: free of locks, not strictly lock-free (a producer
 * preempted between its head and tail updates delays the others').
 */
#include <errno.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_byteorder.h>
#include <rte_errno.h>
#include <rte_ring.h>

#include <dprpc/dprpc_rref.h>

#include "dp_ext.h"
#include "dprpc_atomic.h"
#include "rr_internal.h"

/* --- RRef messages ------------------------------------------------------ */

void
rr_msg_fill(struct rr_msg *m, uint64_t rref_id, uint64_t fork_id, uint64_t src_id,
	uint64_t src_fork, uint32_t handler_id, uint16_t parent, uint16_t flags)
{
	m->rref_id = rte_cpu_to_be_64(rref_id);
	m->fork_id = rte_cpu_to_be_64(fork_id);
	m->src_id = rte_cpu_to_be_64(src_id);
	m->src_fork = rte_cpu_to_be_64(src_fork);
	m->handler_id = rte_cpu_to_be_32(handler_id);
	m->parent = rte_cpu_to_be_16(parent);
	m->flags = rte_cpu_to_be_16(flags);
}

/* Send a message with arguments: the header and @len bytes of @args, up
 * to the agent's max_msg_size.  NULL with rte_errno as rpc_async
 * (EMSGSIZE beyond that size, ENOBUFS without memory for a long one). */
struct dprpc_future *
rr_call(struct rr_ctx *ctx, unsigned int to, uint32_t hid, const struct rr_msg *m, const void *args,
	size_t len, uint64_t timeout_us)
{
	struct iovec v = {.iov_base = (void *)(uintptr_t)args, .iov_len = len};

	return rr_call_iov(ctx, to, hid, m, &v, len > 0 ? 1 : 0, len, timeout_us);
}

/* The header and the arguments go as they lie: the call copies them
 * straight into its frames. */
struct dprpc_future *
rr_call_iov(struct rr_ctx *ctx, unsigned int to, uint32_t hid, const struct rr_msg *m,
	const struct iovec *iov, unsigned int cnt, size_t len, uint64_t timeout_us)
{
	struct iovec v[DPRPC_IOV_MAX];

	if (len > ctx->max_msg - sizeof(*m)) {
		rte_errno = EMSGSIZE;
		return NULL;
	}
	v[0] = (struct iovec){.iov_base = (void *)(uintptr_t)m, .iov_len = sizeof(*m)};
	if (cnt > 0)
		memcpy(&v[1], iov, cnt * sizeof(*iov));
	return dprpc_rpc_async_iov(ctx->a, to, hid, v, cnt + 1, timeout_us);
}

static void
rr_msg_done(struct dprpc_future *f, void *arg)
{
	struct rr_ctx *ctx = arg;

	if (dprpc_future_state(f) != DPRPC_FUTURE_DONE)
		rr_inc(&ctx->messages_failed);
	/* release: pairs with the acquire load in rr_settled(); the message
	 * is counted out after what it did (see the file comment). */
	atomic_fetch_sub_explicit(&ctx->msgs_waiting, 1, memory_order_release);
	dprpc_future_put(f);
}

/* Try once to send a bookkeeping message (DELETE, ACCEPT).  True if it is
 * on its way or failed for good; false if it should be retried (no call
 * slot or buffer now). */
static bool
rr_try_send(struct rr_ctx *ctx, unsigned int to, uint32_t hid, const struct rr_msg *m)
{
	struct dprpc_future *f = rr_call(ctx, to, hid, m, NULL, 0, DPRPC_TIMEOUT_DEFAULT);

	if (f == NULL) {
		if (rte_errno == EAGAIN || rte_errno == ENOBUFS)
			return false;
		rr_inc(&ctx->messages_failed);
		/* release: as in rr_msg_done(), paired with rr_settled(). */
		atomic_fetch_sub_explicit(&ctx->msgs_waiting, 1, memory_order_release);
		return true;
	}
	if (dprpc_future_add_callback(f, rr_msg_done, ctx) != 0) {
		/* release: as in rr_msg_done(), paired with rr_settled(). */
		atomic_fetch_sub_explicit(&ctx->msgs_waiting, 1, memory_order_release);
		dprpc_future_put(f); /* the agent keeps its own reference */
	}
	return true;
}

/* Send a bookkeeping message now or, if no call slot is free, from the
 * poller's timer (rr_ctx_timer).  Any thread. */
void
rr_send_bg(struct rr_ctx *ctx, unsigned int to, uint32_t hid, const struct rr_msg *m)
{
	struct rr_retry *r;

	/*
	 * acquire: pairs with the release stores in rr_ctx_closing() and
	 * rr_ctx_free() (ctx.c).  Only the flag matters, nothing else is
	 * published through it: the teardown sets it on its own thread before
	 * it fails the call slots, so the callbacks it runs then
	 * (rr_user_finish(), ...) see it in program order.
	 */
	if (atomic_load_explicit(&ctx->closing, memory_order_acquire))
		return;
	/* relaxed: coherence orders it before the matching decrement (see
	 * the file comment); nothing is published through it. */
	atomic_fetch_add_explicit(&ctx->msgs_waiting, 1, memory_order_relaxed);
	if (rr_try_send(ctx, to, hid, m))
		return;
	r = malloc(sizeof(*r));
	if (r != NULL) {
		r->to = (uint16_t)to;
		r->handler_id = hid;
		r->msg = *m;
		/* The enqueue's tail update is a release, paired with the
		 * poller's dequeue: it sees *r as written here. */
		if (rte_ring_mp_enqueue(ctx->retry, r) == 0)
			return;
		free(r);
	}
	rr_inc(&ctx->messages_failed);
	/* release: as in rr_msg_done(), paired with rr_settled(). */
	atomic_fetch_sub_explicit(&ctx->msgs_waiting, 1, memory_order_release);
}

/* The extension's timer: on the poller, every timer period.  Resends
 * the bookkeeping messages that found no slot, and drops the children
 * unconfirmed for too long (rr_sweep(), peers.c). */
unsigned int
rr_ctx_timer(void *state)
{
	struct rr_ctx *ctx = state;
	struct rr_retry *r;
	unsigned int swept = rr_sweep(ctx), n = 0;

	while (n < 64 && rte_ring_sc_dequeue(ctx->retry, (void **)&r) == 0) {
		if (!rr_try_send(ctx, r->to, r->handler_id, &r->msg)) {
			/* Still no slot: back to the ring, try next tick.  Only
			 * the poller dequeues, so the ring has room for it. */
			(void)rte_ring_mp_enqueue(ctx->retry, r);
			break;
		}
		free(r);
		n++;
	}
	return n + swept;
}
