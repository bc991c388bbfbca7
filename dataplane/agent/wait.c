/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The blocking calls of the API, the agent's: each waits for a lower
 * layer's state, checked by that layer's non-blocking step, polling the
 * agent meanwhile unless another thread does (dp_wait_step(),
 * dp_poll_until_done(), dp_progress(), dprpc_poll(): the poll loop is the
 * agent's, so the layers below it never wait by polling).
 *   rpc_sync          dp_poll_until_done(), then dp_sync_finish() (call.c)
 *   a stream's chunk  dp_stream_look(), dp_stream_park() (stream_rx.c)
 *   a stream's window dp_stream_send() (stream_tx.c)
 *   the world         dp_world_formed(), dp_leave_told() (rendezvous.c),
 *                     dp_join_status() (join.c)
 *   the link          dp_ports_link_up() (port_timer.c)
 * Any thread but the agent's poller (-EDEADLK where it would wait for
 * itself).
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_pause.h>

#include "dp_agent.h"
#include "dp_client.h"
#include "dp_eal.h"
#include "dp_join.h"
#include "dp_poll.h"
#include "dp_port.h"
#include "dp_rendezvous.h"
#include "dp_stream.h"
#include "dprpc_atomic.h"

int
dp_wait_step(struct dprpc_agent *a, uint64_t deadline)
{
	if (rte_rdtsc() >= deadline)
		return -ETIMEDOUT;
	if (a->m.r.b.io_launched || dprpc_poll(a, DP_RX_BURST) <= 0)
		usleep(100);
	return 0;
}

int
dp_sync_wait(struct dprpc_agent *a, struct dprpc_future *fut, uint64_t timeout_us, void *out,
	size_t *out_len, struct dprpc_error *err)
{
	(void)dp_poll_until_done(a, fut);
	return dp_sync_finish(&a->m.r, fut, timeout_us, out, out_len, err, false);
}

int
dprpc_rpc_sync_id(struct dprpc_agent *a, unsigned int to, uint32_t handler_id, const void *data,
	size_t len, uint64_t timeout_us, void *out, size_t *out_len, struct dprpc_error *err)
{
	struct dprpc_future *fut;

	if (out == NULL && out_len != NULL && *out_len > 0)
		return -EINVAL; /* a capacity without a buffer: nothing sent */
	/* The poller cannot wait for its own agent: nobody would poll. */
	if (a != NULL && dp_tls_poller == &a->m.r.b)
		return -EDEADLK;
	fut = dprpc_rpc_async_id(a, to, handler_id, data, len, timeout_us);
	if (fut == NULL)
		return -rte_errno;
	/* A call's own timeout fails its future: then wait without a limit. */
	(void)dp_poll_until_done(a, fut);
	return dp_sync_finish(&a->m.r, fut, 0, out, out_len, err, true);
}

int
dprpc_rpc_sync(struct dprpc_agent *a, const char *to, const char *handler, const void *data,
	size_t len, uint64_t timeout_us, void *out, size_t *out_len, struct dprpc_error *err)
{
	int rank = dp_resolve(a, to, handler);

	if (rank < 0)
		return -rte_errno;
	return dprpc_rpc_sync_id(a, (unsigned int)rank, dprpc_handler_id(handler), data, len,
		timeout_us, out, out_len, err);
}

/* A waiting reader's spins before it yields or parks: dprpc_future_wait()'s
 * (FUT_SPIN_ITERS, future.c); its longest park is in stream_rx.c. */
#define DP_STREAM_SPINS 1024u

int
dprpc_stream_next(struct dprpc_stream *s, const void **data, size_t *len, uint64_t timeout_us)
{
	uint64_t deadline = 0;
	bool polling = true; /* dp_progress()'s last answer was >= 0 */
	unsigned int spins = 0;
	int rc;

	if (s == NULL || data == NULL || len == NULL)
		return -EINVAL;
	dp_chunk_free(s->cur);
	s->cur = NULL;
	rc = dp_stream_look(s, data, len);
	if (rc != -EAGAIN)
		return rc;
	if (timeout_us == DPRPC_STREAM_POLL) {
		(void)dp_progress(dp_agent_of(s->a)); /* polls unless another thread does */
		return dp_stream_look(s, data, len);
	}
	if (timeout_us != DPRPC_TIMEOUT_NONE)
		deadline = dp_deadline_tsc(&s->a->b, rte_rdtsc(), timeout_us);
	/* As fut_wait_until() with dp_progress() as its hook: poll while it
	 * polls (>= 0), else spin, then park until a chunk, the end or a
	 * slice, asking the hook again; -EDEADLK: this thread is the poller. */
	for (;;) {
		if (polling) {
			rc = dp_progress(dp_agent_of(s->a));
			if (rc == -EDEADLK)
				return -EDEADLK;
			polling = rc >= 0;
			if (rc == 0 && spins >= DP_STREAM_SPINS)
				sched_yield();
		} else if (spins < DP_STREAM_SPINS) {
			rte_pause();
		} else {
			dp_stream_park(s, deadline);
			polling = dp_progress(dp_agent_of(s->a)) >= 0;
		}
		if (spins < DP_STREAM_SPINS)
			spins++;
		rc = dp_stream_look(s, data, len);
		if (rc != -EAGAIN)
			return rc;
		if (deadline != 0 && rte_rdtsc() >= deadline)
			return -EAGAIN;
	}
}

/* A waiting sender's pause while the window is full: it polls if nobody
 * else does (the caller's credits come in frames), else it lets the CPU
 * go, for longer as the wait lasts. */
#define DP_SEND_WAIT_SPINS 64

int
dprpc_stream_send_wait(struct dprpc_request *req, const void *data, size_t len, uint64_t timeout_us)
{
	struct dprpc_agent *a;
	uint64_t deadline;
	int rc;

	if (req == NULL)
		return -EINVAL;
	a = dp_agent_of(req->rpc);
	rc = dp_stream_send(req, data, len, true);
	if (rc != -EAGAIN)
		return rc;
	if (dp_tls_poller == &a->m.r.b)
		return -EDEADLK; /* the window opens only by this thread's polls */
	if (timeout_us == DPRPC_TIMEOUT_DEFAULT)
		/* Relaxed: the value alone (dp_rpc.h). */
		timeout_us = dp_load_relaxed(&a->m.r.default_timeout_us);
	deadline = dp_deadline_tsc(&a->m.r.b, rte_rdtsc(), timeout_us);
	for (unsigned int n = 0;; n++) {
		if (deadline != 0 && rte_rdtsc() >= deadline)
			return -ETIMEDOUT;
		if (!a->m.r.b.io_launched && dprpc_poll(a, 32) > 0)
			n = 0;
		else if (n < DP_SEND_WAIT_SPINS)
			rte_pause();
		else
			usleep(n < 4 * DP_SEND_WAIT_SPINS ? 10 : 100);
		rc = dp_stream_send(req, data, len, false);
		if (rc != -EAGAIN)
			return rc;
	}
}

int
dprpc_world_wait(struct dprpc_agent *a, uint64_t timeout_us, char *missing, size_t len)
{
	uint64_t deadline;
	int rc;

	if (a == NULL || (missing == NULL && len != 0))
		return -EINVAL;
	if (dp_on_poller(a))
		return -EDEADLK;
	dp_thread_lcore();
	deadline = dp_deadline_tsc(&a->m.r.b, rte_rdtsc(), timeout_us);
	if (deadline == 0)
		deadline = UINT64_MAX; /* none */
	dp_rdv_extend(&a->m, deadline);
	/* Relaxed: a hint for the poller's timer (struct dp_base). */
	atomic_fetch_add_explicit(&a->m.r.b.startup_waiters, 1, memory_order_relaxed);
	for (;;) {
		if (dp_world_formed(&a->m, missing, len)) {
			rc = 0;
			break;
		}
		/* Caller-driven: poll, the pings and PONGs go out from here. */
		rc = dp_wait_step(a, deadline);
		if (rc != 0)
			break;
	}
	atomic_fetch_sub_explicit(&a->m.r.b.startup_waiters, 1, memory_order_relaxed);
	if (rc != 0)
		DP_LOG(ERR, "agent %s: the world did not form in time: never heard from %s",
			a->m.r.b.name, len > 0 ? missing : "(names not asked for)");
	return rc;
}

int
dprpc_world_leave(struct dprpc_agent *a, uint64_t timeout_us)
{
	uint64_t deadline;
	int rc;

	if (a == NULL)
		return -EINVAL;
	if (dp_on_poller(a))
		return -EDEADLK;
	dp_thread_lcore();
	deadline = dp_deadline_tsc(&a->m.r.b, rte_rdtsc(), timeout_us);
	if (deadline == 0)
		deadline = UINT64_MAX; /* none */
	dp_leave_begin(&a->m);
	for (;;) {
		if (dp_leave_told(&a->m)) {
			rc = 0;
			break;
		}
		rc = dp_wait_step(a, deadline);
		if (rc != 0)
			break;
	}
	dp_leave_end(&a->m);
	return rc;
}

int
dprpc_world_join(struct dprpc_agent *a, const char *member, uint64_t timeout_us)
{
	struct dp_world_entry m;
	uint64_t deadline;
	char err[160];
	int rc;

	if (a == NULL || member == NULL)
		return -EINVAL;
	if (dp_world_parse_member(member, &m, err, sizeof(err)) != 0) {
		DP_LOG(ERR, "agent %s: %s", a->m.r.b.name, err);
		return -EINVAL;
	}
	if (!a->m.r.b.world.joiner || dp_world_n(&a->m.r.b) != 0)
		return -EALREADY;
	if (dp_on_poller(a))
		return -EDEADLK;
	rc = dp_join_begin(&a->m, &m);
	if (rc != 0)
		return rc;
	deadline = dp_deadline_tsc(&a->m.r.b, rte_rdtsc(), timeout_us);
	if (deadline == 0)
		deadline = UINT64_MAX; /* none */
	for (;;) {
		rc = dp_join_status(&a->m);
		if (rc != 0)
			break;
		rc = dp_wait_step(a, deadline);
		if (rc != 0)
			break;
	}
	dp_join_stop(&a->m);
	/* Joined: hear from every member (the rendezvous), so that each has
	 * heard from us too: the member we named then frees its join port
	 * for the next joiner, and the memif links just plugged are up. */
	if (rc == 1) {
		uint64_t now = rte_rdtsc(), left = 0;

		if (deadline != UINT64_MAX)
			left = now < deadline ? RTE_MAX(dp_tsc_to_us(&a->m.r.b, deadline - now), 1u)
					      : 1;
		rc = dprpc_world_wait(a, left, NULL, 0);
		if (rc == 0)
			rc = 1;
	}
	dp_join_release(&a->m);
	if (rc < 0 && rc != -ETIMEDOUT)
		DP_LOG(ERR, "agent %s: joining through %s refused: %s", a->m.r.b.name, m.name,
			strerror(-rc));
	return rc == 1 ? 0 : rc;
}

int
dprpc_agent_wait_link(struct dprpc_agent *a, uint64_t timeout_us)
{
	uint64_t deadline;

	if (a == NULL)
		return -EINVAL;
	deadline = dp_deadline_tsc(&a->m.r.b, rte_rdtsc(), timeout_us);
	if (deadline == 0)
		deadline = UINT64_MAX; /* none */
	for (;;) {
		if (dp_ports_link_up(&a->m.r.b.port))
			return 0;
		if (rte_rdtsc() >= deadline)
			return -ETIMEDOUT;
		if (!a->m.r.b.io_launched)
			(void)dprpc_poll(a, DP_RX_BURST);
		usleep(1000);
	}
}
