/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Graceful shutdown (dprpc_shutdown(), PyTorch's shutdown(graceful)): a
 * barrier of the world (or of the live world, conf.liveness.shutdown_live), then
 * the application's calls refused, what is in flight drained, RRefs
 * released, the world left (dprpc_world_leave(): the others forget this
 * worker, none declares it down) and the agent destroyed (docs/collective.md,
 * "Graceful shutdown").
 *
 * Design
 * ======
 *
 * One deadline for the whole: every phase waits for what is left of it.
 * A barrier that fails (a worker never came, or died) is remembered and
 * returned, and the phases after it still run, each given at least one
 * poll, so that this worker always stops.  The drains read the agent's
 * public usage counts (dprpc_agent_usage_get()) and poll the agent themselves
 * when no io lcore does (dprpc_poll() returns -EBUSY while another thread
 * polls: then they only wait).  Refusing calls is the agent's
 * (dp_refuse_calls()); the collectives' and RRefs' own messages still go,
 * so the RRef phase can tell the owners.  Application threads only: the
 * poller is refused -EDEADLK before anything is done.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>

#include <dprpc/dprpc_rpc.h>
#include <dprpc/dprpc_rref.h>
#include <dprpc/dprpc_agent.h>
#include <dprpc/dprpc_stats.h>

#include "co_internal.h"

/* Microseconds left until @deadline (UINT64_MAX: none): 0 once past. */
static uint64_t
co_left_us(uint64_t deadline)
{
	uint64_t now = rte_rdtsc();

	if (deadline == UINT64_MAX)
		return UINT64_MAX;
	if (now >= deadline)
		return 0;
	return (uint64_t)((__uint128_t)(deadline - now) * 1000000 / rte_get_tsc_hz());
}

/* Poll (or wait) until @a has no call in flight and, with @requests, no
 * request being handled; at least one poll, then until @deadline. */
static void
co_drain(struct dprpc_agent *a, bool requests, uint64_t deadline)
{
	struct dprpc_agent_usage u;

	do {
		if (dprpc_agent_usage_get(a, &u) == 0 && u.calls == 0 &&
			(!requests || u.requests == 0))
			return;
		if (dp_agent_has_io_lcore(a) || dprpc_poll(a, 32) <= 0)
			usleep(100);
	} while (rte_rdtsc() < deadline);
}

/* Destroy @a: @rc, or -EBUSY (in @err) if the application still holds a
 * deferred request, the agent left as it is. */
static int
co_destroy(struct dprpc_agent *a, int rc, struct dprpc_error *err)
{
	int drc = dprpc_agent_destroy(a);

	if (drc == 0)
		return rc;
	if (err != NULL) {
		*err = (struct dprpc_error){.code = drc, .origin = DPRPC_ORIGIN_LOCAL};
		snprintf(err->msg, sizeof(err->msg),
			"worker %s holds deferred requests unanswered: not destroyed",
			dprpc_agent_name(a));
	}
	return drc;
}

int
dprpc_shutdown(struct dprpc_agent *a, bool graceful, uint64_t timeout_us, struct dprpc_error *err)
{
	struct dprpc_error berr;
	const struct co_ctx *ctx;
	uint64_t deadline, left;
	__uint128_t until;
	unsigned int world;
	int rc, lrc;

	if (a == NULL)
		return -EINVAL;
	if (dp_on_poller(a))
		return -EDEADLK;
	if (!graceful) {
		dp_refuse_calls(a);
		return co_destroy(a, 0, err);
	}
	if (timeout_us == DPRPC_TIMEOUT_DEFAULT)
		timeout_us = dp_agent_default_timeout_us(a);
	until = (__uint128_t)timeout_us * rte_get_tsc_hz() / 1000000 + rte_rdtsc();
	deadline = timeout_us == 0 || until >= UINT64_MAX ? UINT64_MAX : (uint64_t)until;

	/* 1. Everyone is done with its own work: the whole world, or the
	 * live world (conf.liveness.shutdown_live: those declared down left out). */
	ctx = dp_ext_state(a, &co_extension);
	world = ctx != NULL && ctx->shutdown_live ? DPRPC_WORLD_LIVE : 0;
	left = co_left_us(deadline);
	rc = dprpc_barrier(a, NULL, world, left == UINT64_MAX ? 0 : RTE_MAX(left, 1u), &berr);
	if (rc != 0) {
		CO_LOG(WARNING, "shutdown of %s: %s", dprpc_agent_name(a), berr.msg);
		if (err != NULL)
			*err = berr;
	}
	/* 2. No new work. */
	dp_refuse_calls(a);
	/* 3. What is in flight. */
	co_drain(a, true, deadline);
	/* 4. RRefs: every handle's reference dropped, owners told; the
	 * others' references on values owned here released. */
	left = co_left_us(deadline);
	(void)dprpc_rref_shutdown(
		a, left == UINT64_MAX ? 0 : RTE_MAX(left, 1u), DPRPC_RREF_REPORT_LEAKS);
	/* 5. The RRef deletions this sent. */
	co_drain(a, false, deadline);
	/* 6. Leave the world: a worker that acknowledged our LEAVE has read
	 * every answer sent before it (the barrier's above all), so our links
	 * can go (docs/worlds.md, "Leaving").  Its failure does not stop the
	 * shutdown. */
	left = co_left_us(deadline);
	lrc = dprpc_world_leave(a, left == UINT64_MAX ? 0 : RTE_MAX(left, 1u));
	if (lrc != 0)
		CO_LOG(WARNING, "shutdown of %s: leaving the world: %d", dprpc_agent_name(a), lrc);
	/* 7. Stop. */
	return co_destroy(a, rc, err);
}
