/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Worlds that refuse everyone else (docs/security.md): two agents with the
 * world key joined by a wire the test carries frame by frame (a station
 * that sees everything on the segment), which forges, alters and replays
 * frames.  Each forgery is dropped and counted under its reason, and the
 * world goes on as before: calls succeed, no peer is declared restarted.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rte_ethdev.h>
#include <rte_ring.h>

#include "dp_wire.h"
#include "dpt.h"

static const uint8_t key1[32] = "a key of thirty-two bytes, 1...";
static const uint8_t key2[32] = "a key of thirty-two bytes, 2...";

/* a's port sends on tx[0] and receives on rx[0]; b's on tx[1], rx[1]. */
struct wire {
	struct rte_ring *tx[2], *rx[2];
	int port[2];
	struct rte_mempool *mp;
	struct dprpc_agent *ag[2];
	/* The last CONTROL frame b sent a, and the last join frame, copied
	 * (NULL: none yet). */
	struct rte_mbuf *ctl_ba, *join_ba;
	struct rte_mbuf *data_ba; /* the last other frame b sent a */
	pthread_t stepper;
	atomic_bool stop;
};

static struct wire w;

static void
wire_make(void)
{
	char name[32];

	cr_assert_geq(dpt_eal_init("auth"), 0);
	w.mp = rte_pktmbuf_pool_create(
		"dpt_auth", 4095, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	cr_assert_not_null(w.mp);
	for (int i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "auth_tx%d", i);
		w.tx[i] = rte_ring_create(name, 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "auth_rx%d", i);
		w.rx[i] = rte_ring_create(name, 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
		cr_assert(w.tx[i] != NULL && w.rx[i] != NULL);
		snprintf(name, sizeof(name), "auth_port%d", i);
		w.port[i] = rte_eth_from_rings(name, &w.rx[i], 1, &w.tx[i], 1, SOCKET_ID_ANY);
		cr_assert_geq(w.port[i], 0);
	}
}

static const struct dprpc_handler_def echo_def = {"echo", dpt_echo, NULL, DPRPC_HANDLER_INLINE};

/* The transmit faults of the agents agent() makes (none: all 0), and
 * what their tags cover. */
static struct dprpc_fault_conf faults;
static unsigned int mode = DPRPC_AUTH_HEADER;
static size_t key_len = sizeof(key1); /* of the keys agent() is given */

/* Agent @i (a: 0, b: 1) with @key (NULL: none). */
static struct dprpc_agent *
agent(int i, const uint8_t *key)
{
	struct dprpc_agent_conf c;
	struct dprpc_agent *ag;

	dprpc_agent_conf_init(&c);
	c.faults.tx = faults;
	c.name = i == 0 ? "a" : "b";
	c.world = DPT_WORLD2;
	c.port.id = w.port[i];
	c.port.mbuf_pool = w.mp;
	c.serve.handlers = &echo_def;
	c.serve.nb_handlers = 1;
	c.auth.key = key;
	c.auth.key_len = key != NULL ? key_len : 0;
	c.auth.mode = mode;
	ag = dprpc_agent_create(&c);
	cr_assert_not_null(ag, "%s", rte_strerror(rte_errno));
	w.ag[i] = ag;
	return ag;
}

/* Agent @i destroyed, what its port's rings hold freed. */
static void
agent_gone(int i)
{
	cr_assert_eq(dprpc_agent_destroy(w.ag[i]), 0);
	w.ag[i] = NULL;
	dpt_ring_drain(w.tx[i]);
	dpt_ring_drain(w.rx[i]);
}

static bool
is_control(const struct rte_mbuf *m)
{
	return m->data_len >= DP_HDRS_LEN &&
	       dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *))->type == DP_FRAME_CONTROL;
}

/* Carry what each side sent to the other; keep a copy of b's last CONTROL
 * frame to a. */
static void
wire_step(void)
{
	struct rte_mbuf *m;

	for (int i = 0; i < 2; i++) {
		if (w.ag[i] != NULL)
			dprpc_poll(w.ag[i], 32);
		while (rte_ring_dequeue(w.tx[i], (void **)&m) == 0) {
			if (i == 1 && is_control(m)) {
				struct rte_mbuf **keep =
					dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *))->dst_worker ==
							rte_cpu_to_be_16(DP_RANK_NONE)
						? &w.join_ba
						: &w.ctl_ba;

				rte_pktmbuf_free(*keep);
				*keep = rte_pktmbuf_copy(m, w.mp, 0, UINT32_MAX);
			} else if (i == 1 && m->data_len >= DP_HDRS_LEN) {
				rte_pktmbuf_free(w.data_ba);
				w.data_ba = rte_pktmbuf_copy(m, w.mp, 0, UINT32_MAX);
			}
			if (rte_ring_enqueue(w.rx[1 - i], m) != 0)
				rte_pktmbuf_free(m);
		}
	}
}

/* A call from a to b, the wire carried until it ends: its status. */
static int
call_ab(void)
{
	struct dprpc_future *f = dprpc_rpc_async(w.ag[0], "b", "echo", "hi", 2, 5000000);
	size_t len = 0;
	int rc;

	cr_assert_not_null(f);
	while (!dprpc_future_is_done(f))
		wire_step();
	rc = dprpc_future_wait(f, 0);
	if (rc != 0) {
		struct dprpc_agent_stats s;

		for (int i = 0; i < 2; i++) {
			dprpc_agent_stats_get(w.ag[i], &s);
			fprintf(stderr, "%d: %s rx %lu tx %lu", i, dprpc_future_error(f)->msg,
				(unsigned long)s.rx_frames, (unsigned long)s.tx_frames);
			for (int d = 0; d < DPRPC_DROP_MAX; d++)
				if (s.drops[d])
					fprintf(stderr, " %s=%lu", dprpc_drop_reason_str(d),
						(unsigned long)s.drops[d]);
			fprintf(stderr, "\n");
		}
	}
	if (rc == 0)
		cr_assert_arr_eq(dprpc_future_value(f, &len), "hi", 2);
	dprpc_future_put(f);
	return rc;
}

/* Put a copy of @m on a's wire, as if b sent it. */
static void
inject_a(const struct rte_mbuf *m)
{
	struct rte_mbuf *c = rte_pktmbuf_copy(m, w.mp, 0, UINT32_MAX);

	cr_assert_not_null(c);
	cr_assert_eq(rte_ring_enqueue(w.rx[0], c), 0);
}

static void
stats_a(struct dprpc_agent_stats *s)
{
	for (int i = 0; i < 20; i++)
		wire_step();
	cr_assert_eq(dprpc_agent_stats_get(w.ag[0], s), 0);
}

static void
wire_down(void)
{
	for (int i = 0; i < 2; i++)
		if (w.ag[i] != NULL)
			cr_assert_eq(dprpc_agent_destroy(w.ag[i]), 0);
	rte_pktmbuf_free(w.ctl_ba);
	rte_pktmbuf_free(w.join_ba);
	rte_pktmbuf_free(w.data_ba);
	for (int i = 0; i < 2; i++) {
		dpt_ring_drain(w.tx[i]);
		dpt_ring_drain(w.rx[i]);
	}
	cr_expect_eq(rte_mempool_in_use_count(w.mp), 0u, "mbufs leaked");
	dpt_eal_cleanup();
}

/* A world of a and b with the key, one call, then both destroyed: a copy
 * of the last CONTROL frame b sent a (the caller's to free). */
static struct rte_mbuf *
ctl_of_a_world_gone(void)
{
	struct rte_mbuf *old;

	wire_make();
	agent(0, key1);
	agent(1, key1);
	cr_assert_eq(call_ab(), 0);
	old = rte_pktmbuf_copy(w.ctl_ba, w.mp, 0, UINT32_MAX);
	cr_assert_not_null(old);
	agent_gone(0);
	agent_gone(1);
	return old;
}

/* With the key on both, calls go as without; each frame carries the
 * world id the key gives and a tag. */
Test(auth, a_world_with_a_key_calls_as_before)
{
	struct dprpc_agent_stats s;

	wire_make();
	agent(0, key1);
	agent(1, key1);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(call_ab(), 0);
	cr_assert_not_null(w.ctl_ba);
	cr_assert_neq(dp_frame_hdr(rte_pktmbuf_mtod(w.ctl_ba, uint8_t *))->world_id, 0u);
	stats_a(&s);
	cr_assert_eq(s.drops[DPRPC_DROP_AUTH_FAILED], 0u);
	cr_assert_eq(s.drops[DPRPC_DROP_OTHER_WORLD], 0u);
	cr_assert_eq(s.calls_ok, 10u);
	wire_down();
}

/* Any byte of a frame changed (its header, its addresses), or a tag made
 * without the key: dropped as auth_failed, b still up, never restarted. */
Test(auth, a_frame_altered_or_forged_is_dropped_before_it_counts)
{
	struct dprpc_agent_stats s;
	struct rte_mbuf *m;
	struct dp_wire_hdr *h;
	uint8_t *f;

	wire_make();
	agent(0, key1);
	agent(1, key1);
	cr_assert_eq(call_ab(), 0);
	cr_assert_not_null(w.ctl_ba);
	m = rte_pktmbuf_copy(w.ctl_ba, w.mp, 0, UINT32_MAX);
	f = rte_pktmbuf_mtod(m, uint8_t *);
	h = dp_frame_hdr(f);
	/* "A new incarnation of b": the session changed. */
	h->session ^= rte_cpu_to_be_64(1);
	inject_a(m);
	h->session ^= rte_cpu_to_be_64(1);
	/* A LEAVE in place of its operation. */
	h->handler_id = rte_cpu_to_be_32(DP_CTRL_LEAVE);
	inject_a(m);
	h->handler_id = dp_frame_hdr(rte_pktmbuf_mtod(w.ctl_ba, uint8_t *))->handler_id;
	/* The tag itself. */
	h->tag[3] ^= 0x40;
	inject_a(m);
	rte_pktmbuf_free(m);
	stats_a(&s);
	cr_assert_eq(s.drops[DPRPC_DROP_AUTH_FAILED], 3u);
	cr_assert_eq(s.peers_restarted, 0u);
	cr_assert_eq(s.peers_left, 0u);
	cr_assert_eq(dprpc_worker_state(w.ag[0], 1), DPRPC_PEER_UP);
	cr_assert_eq(call_ab(), 0);
	wire_down();
}

/* A CONTROL frame received again (a replay) is dropped as replayed; the
 * original went through. */
Test(auth, control_frames_replayed_are_refused)
{
	struct dprpc_agent_stats s0, s;

	wire_make();
	agent(0, key1);
	agent(1, key1);
	cr_assert_eq(call_ab(), 0);
	cr_assert_not_null(w.ctl_ba);
	stats_a(&s0);
	inject_a(w.ctl_ba);
	inject_a(w.ctl_ba);
	stats_a(&s);
	cr_assert_eq(s.drops[DPRPC_DROP_REPLAYED] - s0.drops[DPRPC_DROP_REPLAYED], 2u);
	cr_assert_eq(s.drops[DPRPC_DROP_AUTH_FAILED], 0u);
	cr_assert_eq(s.peers_restarted, 0u);
	cr_assert_eq(call_ab(), 0);
	wire_down();
}

/* Another world on the same wire: another key gives another world id
 * (other_world); the same id forced, its tags fail (auth_failed); a world
 * without a key is neither. */
Test(auth, another_worlds_frames_are_refused)
{
	struct dprpc_agent_stats s;
	struct dprpc_future *f;

	wire_make();
	agent(0, key1);
	agent(1, key2);
	f = dprpc_rpc_async(w.ag[1], "a", "echo", "x", 1, 0);
	cr_assert_not_null(f);
	for (int i = 0; i < 200; i++)
		wire_step();
	cr_assert_not(dprpc_future_is_done(f));
	stats_a(&s);
	cr_assert_gt(s.drops[DPRPC_DROP_OTHER_WORLD], 0u);
	cr_assert_eq(s.requests_handled, 0u);
	cr_assert_eq(dprpc_worker_state(w.ag[0], 1), DPRPC_PEER_UNKNOWN);
	dprpc_future_cancel(f);
	dprpc_future_put(f);
	wire_down();
}

/* A frame of b's incarnation that is gone, replayed to an a that never
 * heard of b: a takes no incarnation it did not challenge, so b's new one
 * is met as the first, and nobody is taken for restarted. */
Test(auth, an_old_incarnation_replayed_is_not_taken)
{
	struct dprpc_agent_stats s;
	struct rte_mbuf *old;

	/* Both go; a comes back knowing nobody, then b's old frame. */
	old = ctl_of_a_world_gone();
	agent(0, key1);
	inject_a(old);
	rte_pktmbuf_free(old);
	stats_a(&s);
	cr_assert_eq(s.drops[DPRPC_DROP_UNCONFIRMED], 1u);
	cr_assert_eq(dprpc_worker_state(w.ag[0], 1), DPRPC_PEER_UNKNOWN);
	/* b's new incarnation: met, proven, called. */
	agent(1, key1);
	cr_assert_eq(call_ab(), 0);
	stats_a(&s);
	cr_assert_eq(s.peers_restarted, 0u);
	wire_down();
}

/* The key from a file works as the same key given in memory; a short key,
 * both a key and a file, or a file that cannot be read fail the creation
 * with EINVAL, the port untouched. */
Test(auth, keys_from_files_and_bad_keys)
{
	char path[] = "/tmp/dpt_auth_keyXXXXXX";
	struct dprpc_agent_conf c;
	int fd;

	wire_make();
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, key1, sizeof(key1)), (ssize_t)sizeof(key1));
	close(fd);
	dprpc_agent_conf_init(&c);
	c.name = "a";
	c.world = DPT_WORLD2;
	c.port.id = w.port[0];
	c.port.mbuf_pool = w.mp;
	c.auth.key = key1;
	c.auth.key_len = 15;
	cr_assert_null(dprpc_agent_create(&c));
	cr_assert_eq(rte_errno, EINVAL);
	c.auth.key_len = sizeof(key1);
	c.auth.key_file = path;
	cr_assert_null(dprpc_agent_create(&c));
	cr_assert_eq(rte_errno, EINVAL);
	c.auth.key = NULL;
	c.auth.key_len = 0;
	c.auth.key_file = "/nonexistent/dpt_auth_key";
	cr_assert_null(dprpc_agent_create(&c));
	cr_assert_eq(rte_errno, EINVAL);
	c.auth.key_file = path;
	c.serve.handlers = &echo_def;
	c.serve.nb_handlers = 1;
	w.ag[0] = dprpc_agent_create(&c);
	cr_assert_not_null(w.ag[0], "%s", rte_strerror(rte_errno));
	unlink(path);
	agent(1, key1);
	cr_assert_eq(call_ab(), 0);
	wire_down();
}

/* Keys longer than BLAKE2b's 64-byte key, up to a key file's 4096 bytes,
 * are keys like any other: a world of one such key calls; its last byte
 * changed is another world. */
Test(auth, long_keys_make_worlds_too)
{
	static uint8_t long1[4096], long2[4096];
	struct dprpc_agent_stats s;
	struct dprpc_future *f;

	for (size_t i = 0; i < sizeof(long1); i++)
		long1[i] = long2[i] = (uint8_t)(i * 13 + 5);
	long2[sizeof(long2) - 1] ^= 1;
	key_len = sizeof(long1);
	wire_make();
	agent(0, long1);
	agent(1, long1);
	cr_assert_eq(call_ab(), 0);
	agent_gone(1);
	agent(1, long2);
	f = dprpc_rpc_async(w.ag[1], "a", "echo", "x", 1, 0);
	cr_assert_not_null(f);
	for (int i = 0; i < 200; i++)
		wire_step();
	stats_a(&s);
	cr_assert_gt(s.drops[DPRPC_DROP_OTHER_WORLD], 0u);
	cr_assert_eq(s.requests_handled, 0u, "b's call did not run at a");
	dprpc_future_cancel(f);
	dprpc_future_put(f);
	key_len = sizeof(key1);
	wire_down();
}

/* b restarted, in a world with a key: its new incarnation proves itself
 * to a, which takes it for a restart once, and calls go on. */
Test(auth, a_restart_proves_itself_and_is_taken_once)
{
	struct dprpc_agent_stats s;

	wire_make();
	agent(0, key1);
	agent(1, key1);
	cr_assert_eq(call_ab(), 0);
	agent_gone(1);
	agent(1, key1);
	/* Its first calls may find b's old incarnation gone: a call fails at
	 * most once, with -ECONNRESET, then they go to the new one. */
	if (call_ab() != 0)
		cr_assert_eq(call_ab(), 0);
	cr_assert_eq(call_ab(), 0);
	stats_a(&s);
	cr_assert_eq(s.peers_restarted, 1u);
	cr_assert_geq(s.drops[DPRPC_DROP_UNCONFIRMED], 1u, "b's first frames waited for its proof");
	wire_down();
}

static void *
stepper(void *arg)
{
	(void)arg;
	while (!atomic_load(&w.stop))
		wire_step();
	return NULL;
}

/* b, not in a's map, joins a's world through a (dprpc_world_join()). */
static int
join_b(const uint8_t *key, uint64_t timeout_us)
{
	static const struct dprpc_handler_def defs[] = {
		{"echo", dpt_echo, NULL, DPRPC_HANDLER_INLINE}};
	struct dprpc_agent_conf c;
	int rc;

	dprpc_agent_conf_init(&c);
	c.name = "b";
	c.world = "b - 02:00:00:00:00:02 10.0.0.2 7002";
	c.port.id = w.port[1];
	c.port.mbuf_pool = w.mp;
	c.serve.handlers = defs;
	c.serve.nb_handlers = 1;
	c.auth.key = key;
	c.auth.key_len = key != NULL ? sizeof(key1) : 0;
	w.ag[1] = dprpc_agent_create(&c);
	cr_assert_not_null(w.ag[1], "%s", rte_strerror(rte_errno));
	atomic_store(&w.stop, false);
	cr_assert_eq(pthread_create(&w.stepper, NULL, stepper, NULL), 0);
	rc = dprpc_world_join(w.ag[1], "a 02:00:00:00:00:01 10.0.0.1 7001", timeout_us);
	atomic_store(&w.stop, true);
	pthread_join(w.stepper, NULL);
	return rc;
}

static void
agent_alone(const uint8_t *key)
{
	struct dprpc_agent_conf c;

	dprpc_agent_conf_init(&c);
	c.name = "a";
	c.world = "a 0 02:00:00:00:00:01 10.0.0.1 7001";
	c.port.id = w.port[0];
	c.port.mbuf_pool = w.mp;
	c.serve.handlers = &echo_def;
	c.serve.nb_handlers = 1;
	c.auth.key = key;
	c.auth.key_len = sizeof(key1);
	w.ag[0] = dprpc_agent_create(&c);
	cr_assert_not_null(w.ag[0], "%s", rte_strerror(rte_errno));
}

/* A joiner with the key joins; its JOIN's payload (who joins, where) is
 * tagged even in header mode: one byte of it changed is auth_failed.  A
 * joiner without the key never joins: its frames are another world's. */
Test(auth, joining_needs_the_key_and_a_join_is_tagged_whole)
{
	struct dprpc_agent_stats s;
	struct rte_mbuf *m;

	wire_make();
	agent_alone(key1);
	cr_assert_eq(join_b(key1, 5000000), 0);
	cr_assert_eq(call_ab(), 0);
	cr_assert_not_null(w.join_ba, "b sent a JOIN");
	m = rte_pktmbuf_copy(w.join_ba, w.mp, 0, UINT32_MAX);
	cr_assert_not_null(m);
	cr_assert_gt(m->data_len, DP_HDRS_LEN);
	rte_pktmbuf_mtod(m, uint8_t *)[DP_HDRS_LEN + 1] ^= 1; /* the joiner's name */
	inject_a(m);
	rte_pktmbuf_free(m);
	stats_a(&s);
	cr_assert_eq(s.drops[DPRPC_DROP_AUTH_FAILED], 1u);
	agent_gone(1);
	cr_assert_eq(join_b(NULL, 300000), -ETIMEDOUT);
	stats_a(&s);
	cr_assert_gt(s.drops[DPRPC_DROP_OTHER_WORLD], 0u);
	wire_down();
}

/* b dies; its last response, replayed to a every few ms, keeps it neither
 * up nor, once a declared it down, brings it back: replayed. */
Test(auth, a_dead_peers_frames_replayed_keep_it_neither_up_nor_back)
{
	struct dprpc_agent_stats s;
	uint64_t end;

	wire_make();
	agent(0, key1);
	agent(1, key1);
	cr_assert_eq(call_ab(), 0);
	cr_assert_not_null(w.data_ba, "b answered");
	cr_assert_eq(dp_frame_hdr(rte_pktmbuf_mtod(w.data_ba, uint8_t *))->type, DP_FRAME_RESPONSE);
	agent_gone(1);
	/* Declared down within its peer timeout (1 s) despite the replays:
	 * bounded by 20 s of polls, not timed. */
	end = rte_get_tsc_cycles() + 20 * rte_get_tsc_hz();
	while (dprpc_worker_state(w.ag[0], 1) != DPRPC_PEER_DOWN && rte_get_tsc_cycles() < end) {
		inject_a(w.data_ba);
		for (int i = 0; i < 10; i++)
			wire_step();
		usleep(2000);
	}
	cr_assert_eq(dprpc_worker_state(w.ag[0], 1), DPRPC_PEER_DOWN);
	inject_a(w.data_ba);
	stats_a(&s);
	cr_assert_eq(dprpc_worker_state(w.ag[0], 1), DPRPC_PEER_DOWN, "not back up");
	cr_assert_eq(s.peers_down, 1u);
	cr_assert_gt(s.drops[DPRPC_DROP_REPLAYED], 10u);
	wire_down();
}

/* Loss, duplicates, reordering and delays on both sides' frames, in a
 * world with a key: every call succeeds, nothing is taken for a replay. */
Test(auth, calls_through_faults_in_a_world_with_a_key)
{
	struct dprpc_agent_stats s;

	faults = (struct dprpc_fault_conf){.seed = 7,
		.drop_ppm = 50000,
		.dup_ppm = 50000,
		.reorder_ppm = 50000,
		.delay_ppm = 50000,
		.delay_us = 2000};
	wire_make();
	agent(0, key1);
	agent(1, key1);
	for (int i = 0; i < 300; i++)
		cr_assert_eq(call_ab(), 0, "call %d", i);
	stats_a(&s);
	cr_assert_eq(s.calls_ok, 300u);
	cr_assert_eq(s.drops[DPRPC_DROP_AUTH_FAILED], 0u);
	/* A duplicate is staged, so stamped, twice: it is a resend to the
	 * window, not a replay; reordering and delays stay within it. */
	cr_assert_eq(s.drops[DPRPC_DROP_REPLAYED], 0u);
	cr_assert_gt(s.drops[DPRPC_DROP_DUPLICATE] + s.drops[DPRPC_DROP_STALE], 0u,
		"the faults made duplicates");
	cr_assert_eq(s.peers_restarted, 0u);
	cr_assert_eq(s.peers_down, 0u);
	wire_down();
}

/* As above, the old frame replayed before every step of the wire while b's
 * new incarnation meets a: challenges answered by whichever incarnation
 * is alive, so the flood does not keep the new one out. */
Test(auth, a_flood_of_an_old_incarnation_does_not_keep_the_new_one_out)
{
	struct dprpc_agent_stats s;
	struct dprpc_future *f;
	struct rte_mbuf *old;
	int rc;

	old = ctl_of_a_world_gone();
	agent(0, key1);
	agent(1, key1);
	f = dprpc_rpc_async(w.ag[0], "b", "echo", "hi", 2, 5000000);
	cr_assert_not_null(f);
	while (!dprpc_future_is_done(f)) {
		inject_a(old);
		wire_step();
	}
	rc = dprpc_future_wait(f, 0);
	cr_assert_eq(rc, 0, "%s", rc != 0 ? dprpc_future_error(f)->msg : "");
	dprpc_future_put(f);
	rte_pktmbuf_free(old);
	stats_a(&s);
	cr_assert_gt(s.drops[DPRPC_DROP_UNCONFIRMED], 0u, "the flood");
	cr_assert_eq(s.peers_restarted, 0u);
	wire_down();
}

/* b joins, then dies and joins again as new incarnations, more than a
 * keeps retired sessions of; its first JOIN, replayed to a once the
 * challenge it echoes is out of date, is refused as unconfirmed, each
 * time: a relays none, so no assigner takes that incarnation back. */
Test(auth, a_join_replayed_from_a_gone_incarnation_is_not_taken)
{
	struct dprpc_agent_stats s0, s1;
	struct rte_mbuf *old;
	uint64_t hz, epoch;

	wire_make();
	hz = rte_get_tsc_hz();
	agent_alone(key1);
	cr_assert_eq(join_b(key1, 5000000), 0);
	stats_a(&s0);
	cr_assert_geq(s0.drops[DPRPC_DROP_UNCONFIRMED], 1u, "b's first JOIN was challenged");
	cr_assert_not_null(w.join_ba, "b sent a JOIN");
	old = rte_pktmbuf_copy(w.join_ba, w.mp, 0, UINT32_MAX);
	cr_assert_not_null(old);
	epoch = rte_get_tsc_cycles() / hz;
	for (int i = 0; i < 5; i++) {
		agent_gone(1);
		cr_assert_eq(join_b(key1, 5000000), 0, "incarnation %d", i + 2);
	}
	cr_assert_eq(call_ab(), 0);
	/* Its echo answers a challenge of a second at least two seconds
	 * ago. */
	while (rte_get_tsc_cycles() / hz < epoch + 2) {
		wire_step();
		usleep(1000);
	}
	stats_a(&s0);
	for (int i = 0; i < 10; i++) {
		inject_a(old);
		wire_step();
	}
	stats_a(&s1);
	cr_assert_eq(s1.drops[DPRPC_DROP_UNCONFIRMED] - s0.drops[DPRPC_DROP_UNCONFIRMED], 10u);
	cr_assert_eq(s1.drops[DPRPC_DROP_OLD_SESSION], s0.drops[DPRPC_DROP_OLD_SESSION]);
	cr_assert_eq(s1.peers_restarted, s0.peers_restarted);
	cr_assert_eq(dprpc_worker_state(w.ag[0], 1), DPRPC_PEER_UP);
	cr_assert_eq(call_ab(), 0);
	rte_pktmbuf_free(old);
	wire_down();
}

/* Calls in a world of tags of @m, one of 5,000 bytes (four frames each
 * way), then b's last response with one payload byte changed put on a's
 * wire: a's auth_failed count after it. */
static uint64_t
a_changed_payload(unsigned int m)
{
	static uint8_t big[5000];
	struct dprpc_agent_stats s;
	struct dprpc_future *f;
	struct rte_mbuf *c;
	size_t len = 0;

	mode = m;
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7);
	wire_make();
	agent(0, key1);
	agent(1, key1);
	f = dprpc_rpc_async(w.ag[0], "b", "echo", big, sizeof(big), 5000000);
	cr_assert_not_null(f);
	while (!dprpc_future_is_done(f))
		wire_step();
	cr_assert_eq(dprpc_future_wait(f, 0), 0);
	cr_assert_arr_eq(dprpc_future_value(f, &len), big, sizeof(big));
	cr_assert_eq(len, sizeof(big));
	dprpc_future_put(f);
	cr_assert_eq(call_ab(), 0);
	cr_assert_not_null(w.data_ba, "b answered");
	cr_assert_eq(dp_frame_hdr(rte_pktmbuf_mtod(w.data_ba, uint8_t *))->type, DP_FRAME_RESPONSE);
	cr_assert_gt(w.data_ba->data_len, DP_HDRS_LEN);
	c = rte_pktmbuf_copy(w.data_ba, w.mp, 0, UINT32_MAX);
	cr_assert_not_null(c);
	rte_pktmbuf_mtod(c, uint8_t *)[DP_HDRS_LEN] ^= 1;
	inject_a(c);
	rte_pktmbuf_free(c);
	stats_a(&s);
	cr_assert_eq(call_ab(), 0);
	cr_assert_eq(s.peers_restarted, 0u);
	wire_down();
	mode = DPRPC_AUTH_HEADER;
	return s.drops[DPRPC_DROP_AUTH_FAILED];
}

/* With DPRPC_AUTH_PAYLOAD a changed payload fails its tag. */
Test(auth, payload_tags_refuse_a_changed_payload)
{
	cr_assert_eq(a_changed_payload(DPRPC_AUTH_PAYLOAD), 1u);
}

/* With header tags only, the same change passes the tag (the frame is
 * then b's response again, dropped as a duplicate): what payload tags
 * add. */
Test(auth, header_tags_leave_a_payload_unchecked)
{
	cr_assert_eq(a_changed_payload(DPRPC_AUTH_HEADER), 0u);
}
