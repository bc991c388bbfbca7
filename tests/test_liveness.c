/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Peer liveness over a net_ring pair: keep-alives keep a quiet peer up; a
 * silent peer is declared down within peer_timeout_us, its pending calls
 * fail with -EHOSTDOWN (not a timeout), new calls fail at once, the
 * application is told, and a peer heard from again is up again.
 *
 * The server b is polled by a thread of the test, which stops polling to
 * play a dead peer: nothing it receives is answered, pings included.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <criterion/criterion.h>

#include <rte_errno.h>

#include "dpt.h"

/* A peer is declared down after TIMEOUT_US of silence: long enough that
 * a thread of this test descheduled while other suites or two CPU hogs run
 * (CI's two cores) does not pass for a dead peer (20 ms once did, and
 * 100 ms was too short beside a build: keepalives_keep_a_quiet_peer_up
 * saw its peer declared down), short enough to wait for a few times. */
#define KEEPALIVE_US 10000
#define TIMEOUT_US   500000

static struct dpt_ring_pair pair;
static struct rte_mempool *mp;
static struct dprpc_agent *a, *b;
static pthread_t poller;
static atomic_bool b_polls, b_stop, b_idle;
static atomic_uint ups, downs, lefts, others;
static atomic_int last_rank = -1;

static void
on_peer(struct dprpc_agent *agent, unsigned int rank, enum dprpc_peer_event ev, void *arg)
{
	atomic_store(&last_rank, (int)rank);
	atomic_fetch_add(ev == DPRPC_PEER_EVENT_UP     ? &ups
			 : ev == DPRPC_PEER_EVENT_DOWN ? &downs
			 : ev == DPRPC_PEER_EVENT_LEFT ? &lefts
						       : &others,
		1);
}

static void *
poll_b(void *arg)
{
	while (!atomic_load(&b_stop)) {
		if (atomic_load(&b_polls)) {
			atomic_store(&b_idle, false);
			dprpc_poll(b, 32);
		} else {
			atomic_store(&b_idle, true);
			usleep(100);
		}
	}
	return NULL;
}

static void
setup(void)
{
	struct dprpc_agent_conf c;

	cr_assert_geq(dpt_eal_init("live"), 0);
	mp = dpt_pool_and_pair("dpt_live", 8191, &pair);
	cr_assert_not_null(mp);
	dprpc_agent_conf_init(&c);
	c.world = DPT_WORLD2;
	c.port.mbuf_pool = mp;
	c.liveness.keepalive_us = KEEPALIVE_US;
	c.liveness.peer_timeout_us = TIMEOUT_US;
	c.name = "a";
	c.port.id = pair.port_a;
	c.liveness.peer_event = on_peer;
	a = dprpc_agent_create(&c);
	cr_assert_not_null(a, "%s", rte_strerror(rte_errno));
	c.name = "b";
	c.port.id = pair.port_b;
	c.liveness.peer_event = NULL;
	b = dprpc_agent_create(&c);
	cr_assert_not_null(b, "%s", rte_strerror(rte_errno));
	cr_assert_eq(dprpc_register(b, "echo", dpt_echo, NULL, DPRPC_HANDLER_INLINE), 0);
	atomic_store(&b_polls, true);
	cr_assert_eq(pthread_create(&poller, NULL, poll_b, NULL), 0);
}

static void
teardown(void)
{
	atomic_store(&b_stop, true);
	pthread_join(poller, NULL);
	cr_assert_eq(dprpc_agent_destroy(a), 0);
	cr_assert_eq(dprpc_agent_destroy(b), 0);
	/* b's ring may still hold frames a sent while b was silent. */
	while (rte_ring_count(pair.ab) + rte_ring_count(pair.ba) > 0) {
		struct rte_mbuf *m;

		if (rte_ring_dequeue(pair.ab, (void **)&m) == 0 ||
			rte_ring_dequeue(pair.ba, (void **)&m) == 0)
			rte_pktmbuf_free(m);
	}
	cr_expect_eq(rte_mempool_in_use_count(mp), 0u, "mbufs leaked");
	dpt_eal_cleanup();
}

TestSuite(liveness, .init = setup, .fini = teardown, .timeout = 60);

/* Make b silent: stop its poller and wait until it has stopped. */
static void
silence_b(void)
{
	atomic_store(&b_polls, false);
	while (!atomic_load(&b_idle))
		usleep(100);
}

/* Poll a for about @us, sleeping between polls. */
static void
poll_a_for(unsigned int us)
{
	for (unsigned int t = 0; t < us; t += 200) {
		dprpc_poll(a, 32);
		usleep(200);
	}
}

Test(liveness, unknown_until_heard_then_up)
{
	cr_assert_eq(dprpc_worker_state(a, 1), DPRPC_PEER_UNKNOWN);
	cr_assert_eq(dprpc_worker_state(a, 0), DPRPC_PEER_UP); /* itself */
	cr_assert_eq(dprpc_worker_state(a, 9), -ENOENT);
	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "x", 1, 0, NULL, NULL, NULL), 0);
	cr_assert_eq(dprpc_worker_state(a, 1), DPRPC_PEER_UP);
}

/* A quiet but alive peer: keep-alives every KEEPALIVE_US keep it up
 * through ten times the down timeout of silence between calls. */
Test(liveness, keepalives_keep_a_quiet_peer_up)
{
	struct dprpc_agent_stats sa, sb;

	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "x", 1, 0, NULL, NULL, NULL), 0);
	poll_a_for(4 * TIMEOUT_US);
	cr_assert_eq(dprpc_worker_state(a, 1), DPRPC_PEER_UP);
	cr_assert_eq(dprpc_worker_state(b, 0), DPRPC_PEER_UP);
	/* Whichever side pings first keeps the other's silence short: count
	 * the pair.  Four timeouts of quiet need at least a few. */
	cr_assert_eq(dprpc_agent_stats_get(a, &sa), 0);
	cr_assert_eq(dprpc_agent_stats_get(b, &sb), 0);
	cr_assert_geq(sa.keepalives + sb.keepalives, 5u, "pings %lu + %lu",
		(unsigned long)sa.keepalives, (unsigned long)sb.keepalives);
	cr_assert_eq(sa.peers_down + sb.peers_down, 0u);
	cr_assert_eq(atomic_load(&downs), 0u);
	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "y", 1, 0, NULL, NULL, NULL), 0);
}

/* The peer stops answering with calls pending that have no timeout of
 * their own: they fail with -EHOSTDOWN, not hang; the application is told
 * once; new calls fail at once. */
Test(liveness, silent_peer_is_declared_down_and_its_calls_fail)
{
	struct dprpc_future *fs[4];
	const struct dprpc_error *err;
	struct dprpc_agent_stats s;
	unsigned int i;

	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "x", 1, 0, NULL, NULL, NULL), 0);
	silence_b();
	for (i = 0; i < 4; i++) {
		fs[i] = dprpc_rpc_async(a, "b", "echo", "z", 1, DPRPC_TIMEOUT_NONE);
		cr_assert_not_null(fs[i]);
	}
	for (i = 0; i < 4; i++) {
		int rc = dprpc_future_wait(fs[i], 0);
		cr_assert_eq(
			rc, -EHOSTDOWN, "call %u: %d state %d", i, rc, dprpc_worker_state(a, 1));
		err = dprpc_future_error(fs[i]);
		cr_assert_not_null(strstr(err->msg, "is down"), "%s", err->msg);
		dprpc_future_put(fs[i]);
	}
	cr_assert_eq(dprpc_worker_state(a, 1), DPRPC_PEER_DOWN);
	cr_assert_eq(atomic_load(&downs), 1u);
	cr_assert_eq(atomic_load(&last_rank), 1);
	cr_assert_null(dprpc_rpc_async(a, "b", "echo", "z", 1, 0));
	cr_assert_eq(rte_errno, EHOSTDOWN);
	cr_assert_eq(dprpc_agent_stats_get(a, &s), 0);
	cr_assert_eq(s.peers_down, 1u);
	cr_assert_eq(s.calls_failed, 4u);
}

/* A peer declared down that answers again is up again, and calls work. */
Test(liveness, peer_back_is_up_again)
{
	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "x", 1, 0, NULL, NULL, NULL), 0);
	silence_b();
	/* Bounded (10 s at least, 20 timeouts) each. */
	for (int i = 0; i < 10000 && dprpc_worker_state(a, 1) != DPRPC_PEER_DOWN; i++)
		poll_a_for(1000);
	cr_assert_eq(dprpc_worker_state(a, 1), DPRPC_PEER_DOWN);
	atomic_store(&b_polls, true);
	/* a keeps pinging a down peer: its pong brings it back. */
	for (int i = 0; i < 10000 && dprpc_worker_state(a, 1) != DPRPC_PEER_UP; i++)
		poll_a_for(1000);
	cr_assert_eq(dprpc_worker_state(a, 1), DPRPC_PEER_UP);
	cr_assert_eq(atomic_load(&ups), 1u);
	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "y", 1, 0, NULL, NULL, NULL), 0);
}

/* A peer never heard from, with a call waiting on it: down after the
 * timeout rather than after the call's own 60 s default. */
Test(liveness, never_heard_peer_with_a_call_goes_down)
{
	struct dprpc_future *f;

	silence_b();
	f = dprpc_rpc_async(a, "b", "echo", "x", 1, DPRPC_TIMEOUT_DEFAULT);
	cr_assert_not_null(f);
	cr_assert_eq(dprpc_future_wait(f, 0), -EHOSTDOWN);
	dprpc_future_put(f);
	cr_assert_eq(dprpc_worker_state(a, 1), DPRPC_PEER_DOWN);
}

/* RRef operations towards an owner that falls silent fail with
 * -EHOSTDOWN too, not a timeout, never a hang: a remote() whose creation
 * is pending, a proxy call, and to_here() on the unconfirmed RRef.  A
 * value already confirmed stays readable (it never changes), and
 * releasing both handles leaves no RRef context behind. */
Test(liveness, rref_operations_towards_a_silent_owner_fail)
{
	struct dprpc_rref *r1, *r2;
	struct dprpc_future *c1, *c2, *proxy;
	struct dprpc_rref_debug d;
	char out[8];
	size_t out_len = sizeof(out);
	int n = -1;

	r1 = dprpc_remote(a, "b", "echo", "v", 1, DPRPC_TIMEOUT_NONE);
	cr_assert_not_null(r1, "%s", rte_strerror(rte_errno));
	c1 = dprpc_rref_creation_future(r1);
	cr_assert_eq(dprpc_future_wait(c1, 0), 0);
	dprpc_future_put(c1);
	silence_b();
	r2 = dprpc_remote(a, "b", "echo", "w", 1, DPRPC_TIMEOUT_NONE);
	cr_assert_not_null(r2, "%s", rte_strerror(rte_errno));
	proxy = dprpc_rref_rpc_async(r1, "echo", "p", 1, DPRPC_TIMEOUT_NONE);
	cr_assert_not_null(proxy, "%s", rte_strerror(rte_errno));
	c2 = dprpc_rref_creation_future(r2);
	cr_assert_eq(dprpc_future_wait(c2, 0), -EHOSTDOWN);
	dprpc_future_put(c2);
	cr_assert_eq(dprpc_future_wait(proxy, 0), -EHOSTDOWN);
	dprpc_future_put(proxy);
	cr_assert_not(dprpc_rref_confirmed_by_owner(r2));
	cr_assert_eq(dprpc_rref_to_here(r2, 0, out, &out_len, NULL), -EHOSTDOWN);
	out_len = sizeof(out);
	cr_assert_eq(dprpc_rref_to_here(r1, 0, out, &out_len, NULL), 0);
	cr_assert_eq(out_len, 1u);
	cr_assert_eq(out[0], 'v');
	cr_assert_eq(dprpc_worker_state(a, 1), DPRPC_PEER_DOWN);
	cr_assert_eq(dprpc_rref_release(r1), 0);
	cr_assert_eq(dprpc_rref_release(r2), 0);
	for (int i = 0; i < 100000 && n != 0; i++) { /* bounded: 10 s */
		dprpc_poll(a, 32);
		n = dprpc_rref_list(a, NULL, 0);
		usleep(100);
	}
	cr_assert_eq(n, 0, "RRef contexts left on a: %d", n);
	cr_assert_eq(dprpc_rref_debug_get(a, &d), 0);
	cr_assert_eq(d.num_users + d.num_pending_users + d.num_pending_forks, 0u);
}

static struct dprpc_request *held_req;

/* Keeps its request unanswered, for the test to answer. */
static int
h_hold(struct dprpc_request *req, void *arg)
{
	held_req = req;
	return DPRPC_DEFERRED;
}

static void *
leave_b(void *arg)
{
	*(int *)arg = dprpc_world_leave(b, 5 * 1000 * 1000);
	return NULL;
}

/* b leaves the world gracefully with a call of a's pending on it: a
 * forgets b without declaring it down (state LEFT, peers_left 1,
 * peers_down 0, peer_event LEFT), the pending call fails -ESHUTDOWN and a new
 * one at once; a silent b is then neither pinged nor declared down. */
Test(liveness, graceful_leave_is_forgotten_not_declared_down)
{
	struct dprpc_agent_stats s0, s;
	struct dprpc_future *f;
	pthread_t t;
	int rc = 1;

	cr_assert_eq(dprpc_register(b, "hold", h_hold, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "x", 1, 5000 * 1000, NULL, NULL, NULL), 0);
	f = dprpc_rpc_async(a, "b", "hold", "y", 1, DPRPC_TIMEOUT_NONE);
	cr_assert_not_null(f);
	for (int i = 0; i < 20000 && held_req == NULL; i++)
		poll_a_for(200);
	cr_assert_not_null(held_req, "b never got the call");
	cr_assert_eq(pthread_create(&t, NULL, leave_b, &rc), 0);
	cr_assert_eq(dprpc_future_wait(f, 5000 * 1000), -ESHUTDOWN);
	cr_assert_str_eq(dprpc_future_error(f)->msg, "worker b left the world");
	dprpc_future_put(f);
	/* a answers b's LEAVE (more than once if need be) while b waits. */
	for (int i = 0; i < 25000 && dprpc_worker_state(a, 1) != DPRPC_PEER_LEFT; i++)
		poll_a_for(200);
	while (pthread_tryjoin_np(t, NULL) != 0)
		poll_a_for(200);
	cr_assert_eq(rc, 0, "dprpc_world_leave: %d", rc);
	cr_assert_eq(dprpc_reply(held_req, NULL, 0), 0); /* lets b be destroyed */
	cr_assert_eq(dprpc_worker_state(a, 1), DPRPC_PEER_LEFT);
	cr_assert_null(dprpc_rpc_async(a, "b", "echo", "z", 1, 0));
	cr_assert_eq(rte_errno, ESHUTDOWN);
	cr_assert_eq(dprpc_agent_stats_get(a, &s0), 0);
	cr_assert_eq(s0.peers_left, 1u);
	cr_assert_eq(s0.peers_down, 0u);
	cr_assert_eq(atomic_load(&downs), 0u);
	cr_assert_eq(atomic_load(&lefts), 1u);
	cr_assert_eq(atomic_load(&last_rank), 1);
	/* b silent for three peer timeouts: still LEFT, never pinged. */
	poll_a_for(1000); /* b's answer to the held request lands */
	silence_b();
	cr_assert_eq(dprpc_agent_stats_get(a, &s0), 0);
	poll_a_for(3 * TIMEOUT_US);
	cr_assert_eq(dprpc_agent_stats_get(a, &s), 0);
	cr_assert_eq(dprpc_worker_state(a, 1), DPRPC_PEER_LEFT);
	cr_assert_eq(s.peers_down, 0u);
	cr_assert_eq(s.keepalives, s0.keepalives);
	cr_assert_eq(atomic_load(&downs), 0u);
	cr_assert_eq(atomic_load(&lefts), 1u);
	cr_assert_eq(atomic_load(&others), 0u);
}
