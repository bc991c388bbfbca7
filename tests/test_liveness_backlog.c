/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Liveness after a stall of the agent's own poller: three agents a, b, c
 * on one port each of an in-process switch (one segment), all polled by
 * the test thread.  a stops polling (a stall) while c's calls and then
 * b's fill a's queue, c's first; a's silence towards b passes its
 * timeout before a polls again.  The first burst a reads is c's alone:
 * b's frame waits behind it, and b must not be declared down for that.
 */
#include <errno.h>
#include <stdbool.h>

#include <criterion/criterion.h>

#include <rte_errno.h>

#include "dpt.h"

/* a's peer timeout; the stall is longer. */
#define TIMEOUT_US 100000
#define STALL_US   150000
/* c's calls queued ahead of b's frame: more than a burst (32). */
#define AHEAD 40

static struct dpt_switch sw;
static struct rte_mempool *mp;
static struct dprpc_agent *ag[3];

static void
setup(void)
{
	struct dprpc_agent_conf c;
	static const char *names[3] = {"a", "b", "c"};

	cr_assert_geq(dpt_eal_init("liveq"), 0);
	mp = rte_pktmbuf_pool_create(
		"dpt_mp", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	cr_assert_not_null(mp);
	cr_assert_eq(dpt_switch_make(&sw, 3), 0);
	for (int i = 0; i < 3; i++) {
		dprpc_agent_conf_init(&c);
		c.name = names[i];
		c.world = DPT_WORLD3;
		c.port.id = sw.port[i];
		c.port.mbuf_pool = mp;
		c.liveness.keepalive_us = 0;
		c.calls.retransmit_us = 0; /* no loss here: nothing to resend */
		c.liveness.peer_timeout_us = i == 0 ? TIMEOUT_US : 0;
		ag[i] = dprpc_agent_create(&c);
		cr_assert_not_null(ag[i], "%s: %s", names[i], rte_strerror(rte_errno));
		cr_assert_eq(
			dprpc_register(ag[i], "echo", dpt_echo, NULL, DPRPC_HANDLER_INLINE), 0);
	}
}

static void
teardown(void)
{
	for (int i = 0; i < 3; i++)
		cr_assert_eq(dprpc_agent_destroy(ag[i]), 0);
	for (unsigned int i = 0; i < sw.n; i++) {
		dpt_ring_drain(sw.rx[i]);
		dpt_ring_drain(sw.tx[i]);
	}
	cr_expect_eq(rte_mempool_in_use_count(mp), 0u, "mbufs leaked");
	dpt_eal_cleanup();
}

TestSuite(liveness_backlog, .init = setup, .fini = teardown, .timeout = 60);

/* Poll the agents in @mask (bit i: ag[i]) a few times, moving frames. */
static void
pump(unsigned int mask)
{
	for (int k = 0; k < 4; k++) {
		for (int i = 0; i < 3; i++)
			if (mask & (1u << i))
				dprpc_poll(ag[i], 32);
		dpt_switch_step(&sw);
	}
}

/* Pump everyone (bounded, ~10 s) until @n futures of @fs are done. */
static void
pump_until_done(struct dprpc_future **fs, unsigned int n)
{
	for (int t = 0; t < 100000; t++) {
		unsigned int done = 0;

		for (unsigned int i = 0; i < n; i++)
			done += dprpc_future_state(fs[i]) != DPRPC_FUTURE_PENDING;
		if (done == n)
			return;
		pump(7);
		usleep(100);
	}
}

/* a calls b and c once: both are up for a. */
static void
warm_up(void)
{
	struct dprpc_future *f[2];

	f[0] = dprpc_rpc_async(ag[0], "b", "echo", "x", 1, DPRPC_TIMEOUT_NONE);
	f[1] = dprpc_rpc_async(ag[0], "c", "echo", "x", 1, DPRPC_TIMEOUT_NONE);
	cr_assert(f[0] != NULL && f[1] != NULL);
	pump_until_done(f, 2);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(dprpc_future_state(f[i]), DPRPC_FUTURE_DONE);
		dprpc_future_put(f[i]);
	}
	cr_assert_eq(dprpc_worker_state(ag[0], 1), DPRPC_PEER_UP);
	cr_assert_eq(dprpc_worker_state(ag[0], 2), DPRPC_PEER_UP);
}

/* c's AHEAD calls to a, sent and moved into a's queue; a not polled. */
static void
queue_from_c(struct dprpc_future **fs)
{
	for (int i = 0; i < AHEAD; i++) {
		fs[i] = dprpc_rpc_async(ag[2], "a", "echo", "c", 1, DPRPC_TIMEOUT_NONE);
		cr_assert_not_null(fs[i]);
	}
	pump(1u << 2);
}

static uint64_t
peers_down(struct dprpc_agent *x)
{
	struct dprpc_agent_stats s;

	cr_assert_eq(dprpc_agent_stats_get(x, &s), 0);
	return s.peers_down;
}

/* b's call waits behind c's in a's queue through a's stall: read after
 * the first burst, it keeps b up.  Before, a's timer ran after that first
 * burst of c's frames and declared b down (nothing read from it for the
 * stall's 150 ms). */
Test(liveness_backlog, frames_waiting_behind_a_stall_keep_their_sender_up)
{
	struct dprpc_future *fs[AHEAD + 1];

	warm_up();
	queue_from_c(fs);
	fs[AHEAD] = dprpc_rpc_async(ag[1], "a", "echo", "b", 1, DPRPC_TIMEOUT_NONE);
	cr_assert_not_null(fs[AHEAD]);
	pump(1u << 1);
	cr_assert_eq(rte_ring_count(sw.rx[0]), AHEAD + 1u, "a's queue");
	usleep(STALL_US);
	pump_until_done(fs, AHEAD + 1);
	for (int i = 0; i <= AHEAD; i++) {
		cr_assert_eq(dprpc_future_state(fs[i]), DPRPC_FUTURE_DONE, "call %d", i);
		dprpc_future_put(fs[i]);
	}
	cr_assert_eq(peers_down(ag[0]), 0u, "a declared a peer down");
	cr_assert_eq(dprpc_worker_state(ag[0], 1), DPRPC_PEER_UP);
}

/* A peer that is really silent is still declared down once the queue is
 * read: b sends nothing, c's calls wait in a's queue through the stall. */
Test(liveness_backlog, a_silent_peer_is_declared_down_once_the_queue_is_read)
{
	struct dprpc_future *fs[AHEAD];

	warm_up();
	queue_from_c(fs);
	usleep(STALL_US);
	pump_until_done(fs, AHEAD);
	for (int i = 0; i < AHEAD; i++) {
		cr_assert_eq(dprpc_future_state(fs[i]), DPRPC_FUTURE_DONE, "call %d", i);
		dprpc_future_put(fs[i]);
	}
	for (int t = 0; t < 10000 && dprpc_worker_state(ag[0], 1) != DPRPC_PEER_DOWN; t++) {
		pump(1u << 0);
		usleep(1000);
	}
	cr_assert_eq(dprpc_worker_state(ag[0], 1), DPRPC_PEER_DOWN);
	cr_assert_eq(dprpc_worker_state(ag[0], 2), DPRPC_PEER_UP);
	cr_assert_eq(peers_down(ag[0]), 1u);
}
