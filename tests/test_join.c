/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Joining a running world (docs/worlds.md "Joining", dprpc_world_join()).
 *
 * Three members a, b, c (DPT_WORLD3) and up to two joiners d, e in this
 * process, each on its own port of a software switch (tests/dpt.h, one L2
 * segment as a Linux bridge is), every agent polled by EAL lcore 1.  The
 * joiners' maps have only their own line, with rank "-".
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rte_errno.h>
#include <rte_launch.h>

#include "dpt.h"

#define NB_AGENTS 5
#define TIMEOUT	  (10ull * 1000 * 1000)

static const char *const names[NB_AGENTS] = {"a", "b", "c", "d", "e"};
/* How a joiner names a member: "NAME MAC IPV4 UDP_PORT". */
static const char *const member_of[3] = {"a 02:00:00:00:00:01 10.0.0.1 7001",
	"b 02:00:00:00:00:02 10.0.0.2 7002", "c 02:00:00:00:00:03 10.0.0.3 7003"};

static struct dpt_switch sw;
static struct rte_mempool *mp;
static struct dprpc_agent *_Atomic ag[NB_AGENTS];
static atomic_bool stop_bg;
/* Per agent: handler runs, peer_event calls that told of a joiner (and
 * the last rank told), other peer_event calls. */
static atomic_uint runs[NB_AGENTS], joined_events[NB_AGENTS], other_events[NB_AGENTS];
static atomic_uint joined_rank[NB_AGENTS];

static int
bg_loop(void *unused)
{
	unsigned int idle = 0;

	(void)unused;
	while (!atomic_load(&stop_bg)) {
		unsigned int work = dpt_switch_step(&sw);

		for (int i = 0; i < NB_AGENTS; i++) {
			struct dprpc_agent *x = atomic_load(&ag[i]);
			int n = x != NULL ? dprpc_poll(x, 32) : 0;

			work += n > 0 ? (unsigned int)n : 0;
		}
		if (work > 0)
			idle = 0;
		else if (++idle > 1000)
			usleep(20);
	}
	return 0;
}

static void
on_peer(struct dprpc_agent *x, unsigned int rank, enum dprpc_peer_event ev, void *arg)
{
	unsigned int i = (unsigned int)(uintptr_t)arg;

	if (ev == DPRPC_PEER_EVENT_JOINED) {
		atomic_fetch_add(&joined_events[i], 1);
		atomic_store(&joined_rank[i], rank);
	} else {
		atomic_fetch_add(&other_events[i], 1);
	}
}

/* Agent @i: a member (i < 3) or a joiner; @cap its max_workers (0:
 * default). */
static struct dprpc_agent *
make_agent(unsigned int i, unsigned int cap, const struct dprpc_fault_conf *frx)
{
	char world[128];
	struct dprpc_agent_conf c;
	struct dprpc_agent *x;

	dprpc_agent_conf_init(&c);
	c.name = names[i];
	if (i < 3)
		c.world = DPT_WORLD3;
	else {
		snprintf(world, sizeof(world), "%s - 02:00:00:00:00:0%u 10.0.0.%u 700%u\n",
			names[i], i + 1, i + 1, i + 1);
		c.world = world;
	}
	c.port.id = sw.port[i];
	c.port.mbuf_pool = mp;
	c.rrefs.max = 1024;
	if (cap != 0)
		c.max_workers = cap;
	c.liveness.peer_event = on_peer;
	c.liveness.peer_event_arg = (void *)(uintptr_t)i;
	if (frx != NULL)
		c.faults.rx = *frx;
	x = dprpc_agent_create(&c);
	cr_assert_not_null(x, "agent %s: %s", names[i], rte_strerror(rte_errno));
	cr_assert_eq(
		dprpc_register(x, "echo", dpt_counting_echo, &runs[i], DPRPC_HANDLER_INLINE), 0);
	atomic_store(&ag[i], x);
	return x;
}

/* a, b, c, polled, their world formed; @b_rx: b's rx faults, or NULL. */
static void
start_members_faulty(unsigned int cap, const struct dprpc_fault_conf *b_rx)
{
	char missing[64];

	for (unsigned int i = 0; i < 3; i++)
		make_agent(i, cap, i == 1 ? b_rx : NULL);
	atomic_store(&stop_bg, false);
	cr_assert_eq(rte_eal_remote_launch(bg_loop, NULL, 1), 0);
	for (unsigned int i = 0; i < 3; i++)
		cr_assert_eq(
			dprpc_world_wait(atomic_load(&ag[i]), TIMEOUT, missing, sizeof(missing)), 0,
			"%s: missing %s", names[i], missing);
}

static void
start_members(unsigned int cap)
{
	start_members_faulty(cap, NULL);
}

static void
setup(void)
{
	cr_assert_geq(dpt_eal_init("join"), 0);
	mp = rte_pktmbuf_pool_create(
		"dpt_mp", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	cr_assert_not_null(mp);
	cr_assert_eq(dpt_switch_make(&sw, NB_AGENTS), 0);
}

static void
teardown(void)
{
	atomic_store(&stop_bg, true);
	rte_eal_wait_lcore(1);
	for (int i = 0; i < NB_AGENTS; i++) {
		struct dprpc_agent *x = atomic_exchange(&ag[i], NULL);

		if (x != NULL)
			cr_assert_eq(dprpc_agent_destroy(x), 0);
	}
	for (unsigned int i = 0; i < sw.n; i++) {
		dpt_ring_drain(sw.rx[i]);
		dpt_ring_drain(sw.tx[i]);
	}
	cr_expect_eq(rte_mempool_in_use_count(mp), 0u, "mbufs leaked");
	dpt_eal_cleanup();
}

TestSuite(join, .init = setup, .fini = teardown, .timeout = 120);

/* @from calls "echo" on @to by name and by rank; the answers checked. */
static void
call_both_ways(unsigned int from, unsigned int to, unsigned int to_rank)
{
	struct dprpc_agent *x = atomic_load(&ag[from]);
	char in[32], out[32];
	size_t len = sizeof(out);
	struct dprpc_future *f;
	const void *v;
	size_t vlen;

	snprintf(in, sizeof(in), "%s->%s", names[from], names[to]);
	cr_assert_eq(
		dprpc_rpc_sync(x, names[to], "echo", in, strlen(in) + 1, TIMEOUT, out, &len, NULL),
		0, "%s calls %s by name", names[from], names[to]);
	cr_assert_str_eq(out, in);
	f = dprpc_rpc_async_id(
		x, to_rank, dprpc_handler_id("echo"), in, (uint32_t)strlen(in) + 1, TIMEOUT);
	cr_assert_not_null(
		f, "%s calls rank %u: %s", names[from], to_rank, rte_strerror(rte_errno));
	cr_assert_eq(dprpc_future_wait(f, TIMEOUT), 0);
	v = dprpc_future_value(f, &vlen);
	cr_assert_eq(vlen, strlen(in) + 1);
	cr_assert_str_eq((const char *)v, in);
	dprpc_future_put(f);
}

static void world_barrier(unsigned int n);

/* No call, future, request, message or mbuf of the agent's in use. */
static void
assert_quiet(unsigned int i)
{
	struct dprpc_agent_usage u;

	cr_assert_eq(dprpc_agent_usage_get(atomic_load(&ag[i]), &u), 0);
	cr_assert_eq(u.calls, 0u, "%s: calls in use", names[i]);
	cr_assert_eq(u.futures, 0u, "%s: futures in use", names[i]);
	cr_assert_eq(u.requests, 0u, "%s: requests in use", names[i]);
	cr_assert_eq(u.messages, 0u, "%s: messages in use", names[i]);
}

Test(join, joiner_calls_everyone_and_everyone_calls_it)
{
	struct dprpc_worker_info infos[8];
	struct dprpc_agent *d;
	int before;

	start_members(0);
	d = make_agent(3, 0, NULL);
	cr_assert_eq(dprpc_world_size(d), 0u);
	cr_assert_eq(dprpc_worker_rank(d, "a"), -ENOENT);
	cr_assert_eq(dprpc_worker_info_get(d, NULL, &infos[0]), -ENOENT);
	/* By rank, nobody either: not its own rank (none yet), nor a member's. */
	cr_assert_eq(dprpc_worker_info_get_id(d, dprpc_agent_rank(d), &infos[0]), -ENOENT);
	cr_assert_eq(dprpc_worker_info_get_id(d, 0, &infos[0]), -ENOENT);
	cr_assert_eq(dprpc_world_join(d, member_of[1], TIMEOUT), 0);
	cr_assert_eq(dprpc_world_join(d, member_of[1], TIMEOUT), -EALREADY);
	cr_assert_eq(dprpc_agent_rank(d), 3u);
	/* Every member knows it by the time it is answered. */
	for (unsigned int i = 0; i < 4; i++) {
		struct dprpc_agent *x = atomic_load(&ag[i]);

		cr_assert_eq(dprpc_world_size(x), 4u, "%s", names[i]);
		cr_assert_eq(dprpc_worker_rank(x, "d"), 3, "%s", names[i]);
		cr_assert_eq(dprpc_worker_info_list(x, infos, 8), 4);
		for (unsigned int r = 0; r < 4; r++) {
			cr_assert_str_eq(infos[r].name, names[r]);
			cr_assert_eq(infos[r].rank, r);
			cr_assert_eq(infos[r].udp_port, 7001 + r);
			cr_assert_eq(infos[r].mac[5], r + 1);
		}
		/* The joiner by rank, as by name (d itself included). */
		cr_assert_eq(dprpc_worker_info_get_id(x, 3, &infos[4]), 0, "%s", names[i]);
		cr_assert_eq(dprpc_worker_info_get(x, "d", &infos[5]), 0);
		cr_assert_str_eq(infos[4].name, "d");
		cr_assert_eq(infos[4].rank, 3u);
		cr_assert_eq(infos[4].udp_port, infos[5].udp_port);
		cr_assert_eq(infos[4].udp_port, 7004);
		cr_assert_eq(infos[4].ipv4, infos[5].ipv4);
		cr_assert_eq(dprpc_worker_info_get_id(x, 4, &infos[4]), -ENOENT);
	}
	for (unsigned int i = 0; i < 3; i++) {
		cr_assert_eq(atomic_load(&joined_events[i]), 1u, "%s told once", names[i]);
		cr_assert_eq(atomic_load(&joined_rank[i]), 3u);
		cr_assert_eq(atomic_load(&other_events[i]), 0u);
	}
	/* Calls both ways, by name and by rank. */
	for (unsigned int i = 0; i < 3; i++) {
		call_both_ways(3, i, i);
		call_both_ways(i, 3, 3);
	}
	call_both_ways(3, 3, 3); /* and itself */
	cr_assert_eq(atomic_load(&runs[3]), 8u, "d ran each member's two calls, and its own");
	for (unsigned int i = 0; i < 3; i++)
		cr_assert_eq(atomic_load(&runs[i]), 2u, "%s ran d's two calls", names[i]);
	/* A collective of the whole world counts it in, on every side. */
	world_barrier(4);
	/* It leaves as any worker does. */
	cr_assert_eq(dprpc_world_leave(d, TIMEOUT), 0);
	for (unsigned int i = 0; i < 3; i++) {
		before = dprpc_worker_state(atomic_load(&ag[i]), 3);
		cr_assert_eq(before, DPRPC_PEER_LEFT, "%s sees d left", names[i]);
		assert_quiet(i);
	}
	assert_quiet(3);
	cr_assert_eq(dprpc_agent_destroy(atomic_exchange(&ag[3], NULL)), 0);
	/* The members go on among themselves. */
	call_both_ways(0, 2, 2);
}

/* A barrier of the whole world (workers NULL) on agent @arg. */
static void *
barrier_thread(void *arg)
{
	uintptr_t i = (uintptr_t)arg;

	return (void *)(intptr_t)dprpc_barrier(atomic_load(&ag[i]), NULL, 0, TIMEOUT, NULL);
}

/* Agents 0..@n-1 in a barrier of the whole world: each returns 0 (the
 * joiner is in every member's world, and the members in its). */
static void
world_barrier(unsigned int n)
{
	pthread_t t[NB_AGENTS];
	void *rc;

	for (uintptr_t i = 0; i < n; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, barrier_thread, (void *)i), 0);
	for (unsigned int i = 0; i < n; i++) {
		pthread_join(t[i], &rc);
		cr_assert_eq((intptr_t)rc, 0, "%s: barrier %d", names[i], (int)(intptr_t)rc);
	}
}

struct join_arg {
	unsigned int joiner, via;
	int rc;
};

static void *
join_thread(void *p)
{
	struct join_arg *j = p;

	j->rc = dprpc_world_join(atomic_load(&ag[j->joiner]), member_of[j->via], TIMEOUT);
	return NULL;
}

Test(join, two_joiners_through_two_members_get_two_ranks)
{
	struct join_arg j[2] = {{3, 1, -1}, {4, 2, -1}};
	pthread_t t[2];
	unsigned int rd, re;

	start_members(0);
	make_agent(3, 0, NULL);
	make_agent(4, 0, NULL);
	for (int k = 0; k < 2; k++)
		cr_assert_eq(pthread_create(&t[k], NULL, join_thread, &j[k]), 0);
	for (int k = 0; k < 2; k++) {
		pthread_join(t[k], NULL);
		cr_assert_eq(j[k].rc, 0, "%s joins: %d", names[j[k].joiner], j[k].rc);
	}
	rd = dprpc_agent_rank(atomic_load(&ag[3]));
	re = dprpc_agent_rank(atomic_load(&ag[4]));
	cr_assert(rd != re && rd >= 3 && rd <= 4 && re >= 3 && re <= 4, "ranks %u %u", rd, re);
	for (unsigned int i = 0; i < NB_AGENTS; i++) {
		struct dprpc_agent *x = atomic_load(&ag[i]);

		cr_assert_eq(dprpc_world_size(x), 5u, "%s", names[i]);
		cr_assert_eq(dprpc_worker_rank(x, "d"), (int)rd, "%s", names[i]);
		cr_assert_eq(dprpc_worker_rank(x, "e"), (int)re, "%s", names[i]);
	}
	for (unsigned int i = 0; i < 3; i++)
		cr_assert_eq(atomic_load(&joined_events[i]), 2u, "%s told of both", names[i]);
	/* The joiners know each other: one learned the other from its
	 * member's answer, the other from the assigner's announcement. */
	call_both_ways(3, 4, re);
	call_both_ways(4, 3, rd);
	call_both_ways(0, 4, re);
	call_both_ways(4, 0, 0);
	world_barrier(5);
}

Test(join, lost_and_duplicated_join_frames_give_one_rank)
{
	/* Half the frames d receives are lost (its members' answers), and
	 * b receives every frame twice (each JOIN is relayed twice). */
	struct dprpc_fault_conf lossy = {.seed = 7, .drop_ppm = 500000};
	struct dprpc_fault_conf dups = {.seed = 9, .dup_ppm = 1000000};

	start_members_faulty(0, &dups);
	make_agent(3, 0, &lossy);
	cr_assert_eq(dprpc_world_join(atomic_load(&ag[3]), member_of[1], TIMEOUT), 0);
	cr_assert_eq(dprpc_agent_rank(atomic_load(&ag[3])), 3u);
	for (unsigned int i = 0; i < 4; i++)
		cr_assert_eq(
			dprpc_world_size(atomic_load(&ag[i])), 4u, "%s: one rank given", names[i]);
	for (unsigned int i = 0; i < 3; i++)
		cr_assert_eq(atomic_load(&joined_events[i]), 1u, "%s told once", names[i]);
}

Test(join, joining_a_full_world_fails_enospc)
{
	struct dprpc_agent *d;

	start_members(3);
	d = make_agent(3, 0, NULL);
	cr_assert_eq(dprpc_world_join(d, member_of[2], TIMEOUT), -ENOSPC);
	cr_assert_eq(dprpc_world_size(d), 0u);
	for (unsigned int i = 0; i < 3; i++) {
		cr_assert_eq(dprpc_world_size(atomic_load(&ag[i])), 3u);
		cr_assert_eq(atomic_load(&joined_events[i]), 0u);
	}
}

Test(join, address_taken_fails_eexist)
{
	struct dprpc_agent_conf c;
	struct dprpc_agent *x;

	start_members(0);
	/* A worker at a's IPv4 address and UDP port (its own MAC, for the
	 * switch to reach it). */
	dprpc_agent_conf_init(&c);
	c.name = "x";
	c.world = "x - 02:00:00:00:00:04 10.0.0.1 7001";
	c.port.id = sw.port[3];
	c.port.mbuf_pool = mp;
	x = dprpc_agent_create(&c);
	cr_assert_not_null(x);
	atomic_store(&ag[3], x);
	cr_assert_eq(dprpc_world_join(x, member_of[2], TIMEOUT), -EEXIST);
	cr_assert_eq(dprpc_world_size(x), 0u);
	for (unsigned int i = 0; i < 3; i++)
		cr_assert_eq(dprpc_world_size(atomic_load(&ag[i])), 3u);
}

/* d joins, a's call to it is left pending (d no longer polled), and d's
 * agent is destroyed without leaving (a crash, as the members see it) and
 * made again with the same name and address: a new incarnation, which
 * joins again through another member while the members still take the old
 * one for up.  It gets rank 3 back (no rank 4, no second JOINED event),
 * a's pending call fails -ECONNRESET (the members saw d restart), calls go
 * both ways and a barrier of the whole world passes with it.  A worker
 * under d's name at another address is refused -EEXIST.  Before,
 * the new d was refused -EEXIST. */
Test(join, a_restarted_joiner_takes_its_rank_back)
{
	struct dprpc_agent_stats st;
	struct dprpc_agent_conf c;
	struct dprpc_future *f;
	struct dprpc_agent *d, *x;

	start_members(0);
	d = make_agent(3, 0, NULL);
	cr_assert_eq(dprpc_world_join(d, member_of[1], TIMEOUT), 0);
	cr_assert_eq(dprpc_agent_rank(d), 3u);
	world_barrier(4);
	/* No longer polled: a's call waits for an answer that never comes. */
	atomic_store(&ag[3], NULL);
	f = dprpc_rpc_async_id(atomic_load(&ag[0]), 3, dprpc_handler_id("echo"), "x", 2, TIMEOUT);
	cr_assert_not_null(f);
	usleep(20 * 1000);
	cr_assert_eq(dprpc_agent_destroy(d), 0);
	d = make_agent(3, 0, NULL);
	cr_assert_eq(dprpc_world_join(d, member_of[2], TIMEOUT), 0);
	cr_assert_eq(dprpc_agent_rank(d), 3u, "d got its rank back");
	cr_assert_eq(dprpc_world_size(d), 4u);
	for (unsigned int i = 0; i < 3; i++) {
		x = atomic_load(&ag[i]);
		cr_assert_eq(dprpc_world_size(x), 4u, "%s: no new rank", names[i]);
		cr_assert_eq(dprpc_worker_rank(x, "d"), 3, "%s", names[i]);
		cr_assert_eq(atomic_load(&joined_events[i]), 1u, "%s: d joined once", names[i]);
	}
	cr_assert_eq(dprpc_future_wait(f, TIMEOUT), -ECONNRESET, "a's call to the old d");
	dprpc_future_put(f);
	cr_assert_eq(dprpc_agent_stats_get(atomic_load(&ag[0]), &st), 0);
	cr_assert_eq(st.peers_restarted, 1u, "a saw d restart once");
	for (unsigned int i = 0; i < 3; i++) {
		call_both_ways(3, i, i);
		call_both_ways(i, 3, 3);
	}
	world_barrier(4);
	/* Its name at another address: another worker, refused (d's agent
	 * gone first: one agent of a name per process). */
	cr_assert_eq(dprpc_agent_destroy(atomic_exchange(&ag[3], NULL)), 0);
	dprpc_agent_conf_init(&c);
	c.name = "d";
	c.world = "d - 02:00:00:00:00:05 10.0.0.5 7005";
	c.port.id = sw.port[4];
	c.port.mbuf_pool = mp;
	x = dprpc_agent_create(&c);
	cr_assert_not_null(x, "%s", rte_strerror(rte_errno));
	atomic_store(&ag[4], x);
	cr_assert_eq(dprpc_world_join(x, member_of[0], TIMEOUT), -EEXIST);
	cr_assert_eq(dprpc_world_size(x), 0u);
	for (unsigned int i = 0; i < 3; i++)
		cr_assert_eq(dprpc_world_size(atomic_load(&ag[i])), 4u);
}

/* Calls between a, b and c run exactly once each while d joins and
 * leaves. */
struct caller_arg {
	unsigned int from, to, n;
	unsigned int ok;
};

static void *
caller(void *p)
{
	struct caller_arg *c = p;
	struct dprpc_agent *x = atomic_load(&ag[c->from]);

	for (unsigned int k = 0; k < c->n; k++) {
		char in[16], out[16];
		size_t len = sizeof(out);

		snprintf(in, sizeof(in), "%u", k);
		if (dprpc_rpc_sync(x, names[c->to], "echo", in, strlen(in) + 1, TIMEOUT, out, &len,
			    NULL) == 0 &&
			strcmp(in, out) == 0)
			c->ok++;
	}
	return NULL;
}

Test(join, join_and_leave_while_members_call_each_other)
{
	struct caller_arg c[3] = {{0, 1, 300, 0}, {1, 2, 300, 0}, {2, 0, 300, 0}};
	pthread_t t[3];
	struct dprpc_agent *d;

	start_members(0);
	d = make_agent(3, 0, NULL);
	for (int k = 0; k < 3; k++)
		cr_assert_eq(pthread_create(&t[k], NULL, caller, &c[k]), 0);
	cr_assert_eq(dprpc_world_join(d, member_of[0], TIMEOUT), 0);
	call_both_ways(3, 1, 1);
	cr_assert_eq(dprpc_world_leave(d, TIMEOUT), 0);
	for (int k = 0; k < 3; k++) {
		pthread_join(t[k], NULL);
		cr_assert_eq(c[k].ok, 300u, "%s -> %s", names[c[k].from], names[c[k].to]);
	}
	/* Each member ran its caller's 300 exactly, and b d's two more. */
	cr_assert_eq(atomic_load(&runs[0]), 300u);
	cr_assert_eq(atomic_load(&runs[1]), 302u);
	cr_assert_eq(atomic_load(&runs[2]), 300u);
	for (unsigned int i = 0; i < 4; i++)
		assert_quiet(i);
}

/* ===================== join_memif: a meshed world ===================== */

/*
 * The same three members, joined by a memif mesh (no default port), each
 * polled by its io lcore (1..3); joiners d and e, whose maps are their own
 * line and the mesh, polled by a thread each.  A joiner reaches the member
 * it names through that member's join socket (DIR/NAME.join); every member
 * hot-plugs a memif link to it as it learns it joined, and it one to each
 * member once it has joined.
 */
static char sock_dir[64];
static atomic_bool stop_poll[NB_AGENTS];
static pthread_t poller_thr[NB_AGENTS];
static bool poller_on[NB_AGENTS];

static void *
poller(void *arg)
{
	uintptr_t i = (uintptr_t)arg;
	struct dprpc_agent *x = atomic_load(&ag[i]);

	while (!atomic_load(&stop_poll[i]))
		if (dprpc_poll(x, 32) <= 0)
			usleep(50);
	return NULL;
}

static struct dprpc_agent *
make_memif_agent(unsigned int i)
{
	char world[512];
	struct dprpc_agent_conf c;
	struct dprpc_agent *x;

	if (i < 3)
		snprintf(world, sizeof(world), DPT_WORLD3 "mesh memif:%s\n", sock_dir);
	else
		snprintf(world, sizeof(world),
			"%s - 02:00:00:00:00:0%u 10.0.0.%u 700%u\nmesh memif:%s\n", names[i], i + 1,
			i + 1, i + 1, sock_dir);
	dprpc_agent_conf_init(&c);
	c.name = names[i];
	c.world = world;
	c.port.nb_mbufs = 4095;
	c.liveness.peer_event = on_peer;
	c.liveness.peer_event_arg = (void *)(uintptr_t)i;
	if (i < 3)
		c.lcores.io = i + 1;
	x = dprpc_agent_create(&c);
	cr_assert_not_null(x, "agent %s: %s", names[i], rte_strerror(rte_errno));
	cr_assert_eq(
		dprpc_register(x, "echo", dpt_counting_echo, &runs[i], DPRPC_HANDLER_INLINE), 0);
	atomic_store(&ag[i], x);
	if (i >= 3) {
		cr_assert_eq(pthread_create(&poller_thr[i], NULL, poller, (void *)(uintptr_t)i), 0);
		poller_on[i] = true;
	}
	return x;
}

static void
memif_setup(void)
{
	snprintf(sock_dir, sizeof(sock_dir), "/tmp/dprpc-join-%d", (int)getpid());
	cr_assert_eq(mkdir(sock_dir, 0700), 0, "mkdir %s: %s", sock_dir, strerror(errno));
	cr_assert_geq(dpt_eal_init("joinm"), 0);
	for (unsigned int i = 0; i < 3; i++)
		make_memif_agent(i);
	for (unsigned int i = 0; i < 3; i++) {
		char missing[64];

		cr_assert_eq(
			dprpc_agent_wait_link(atomic_load(&ag[i]), TIMEOUT), 0, "%s", names[i]);
		cr_assert_eq(
			dprpc_world_wait(atomic_load(&ag[i]), TIMEOUT, missing, sizeof(missing)), 0,
			"%s misses %s", names[i], missing);
	}
}

/* Nothing of the agent's in use: its mbufs too (its own pool). */
static void
assert_memif_quiet(unsigned int i)
{
	struct dprpc_agent_usage u;

	/* Exact once quiescent: an io lcore may still end a handler run. */
	for (int k = 0; k < 2000; k++) {
		cr_assert_eq(dprpc_agent_usage_get(atomic_load(&ag[i]), &u), 0);
		if (u.futures == 0 && u.calls == 0 && u.requests == 0 && u.messages == 0)
			break;
		usleep(1000);
	}
	cr_assert_eq(u.calls, 0u, "%s: calls in use", names[i]);
	cr_assert_eq(u.futures, 0u, "%s: futures in use", names[i]);
	cr_assert_eq(u.requests, 0u, "%s: requests in use", names[i]);
	cr_assert_eq(u.messages, 0u, "%s: messages in use", names[i]);
}

static void
destroy_memif_agent(unsigned int i)
{
	struct dprpc_agent *x;

	if (poller_on[i]) {
		atomic_store(&stop_poll[i], true);
		pthread_join(poller_thr[i], NULL);
		poller_on[i] = false;
	}
	x = atomic_exchange(&ag[i], NULL);
	if (x != NULL)
		cr_assert_eq(dprpc_agent_destroy(x), 0, "%s", names[i]);
}

static void
memif_teardown(void)
{
	DIR *d;
	struct dirent *e;
	unsigned int left = 0;

	/* Each agent leaves the world before it goes, the others still
	 * polled: their links to it go quiet, so none polls a link that the
	 * agent's destroy tears down (DPDK 22.11's memif PMD crashed c's io
	 * lcore in rx_burst on its link to b, destroyed without leaving:
	 * 1 run in 30, and once in CI). */
	for (unsigned int i = 0; i < NB_AGENTS; i++) {
		struct dprpc_agent *x = atomic_load(&ag[i]);

		if (x != NULL)
			(void)dprpc_world_leave(x, 5 * 1000 * 1000);
		if (i >= 3 && poller_on[i]) {
			atomic_store(&stop_poll[i], true);
			pthread_join(poller_thr[i], NULL);
			poller_on[i] = false;
		}
		x = atomic_exchange(&ag[i], NULL);
		if (x != NULL)
			cr_expect_eq(dprpc_agent_destroy(x), 0, "%s", names[i]);
	}
	dpt_eal_cleanup();
	/* Every memif socket gone with its agent: the pairs' and the join
	 * sockets, those hot-plugged too. */
	d = opendir(sock_dir);
	cr_assert_not_null(d);
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.') {
			cr_expect_fail("socket %s/%s left behind", sock_dir, e->d_name);
			left++;
		}
	closedir(d);
	cr_expect_eq(left, 0u);
	(void)rmdir(sock_dir);
}

TestSuite(join_memif, .init = memif_setup, .fini = memif_teardown, .timeout = 180);

Test(join_memif, joiner_calls_everyone_and_everyone_calls_it)
{
	struct dprpc_worker_info infos[8];
	struct dprpc_agent *d = make_memif_agent(3);

	cr_assert_eq(dprpc_world_join(d, member_of[1], TIMEOUT), 0);
	cr_assert_eq(dprpc_agent_rank(d), 3u);
	for (unsigned int i = 0; i < 4; i++) {
		struct dprpc_agent *x = atomic_load(&ag[i]);

		cr_assert_eq(dprpc_world_size(x), 4u, "%s", names[i]);
		cr_assert_eq(dprpc_worker_info_list(x, infos, 8), 4);
		for (unsigned int r = 0; r < 4; r++) {
			cr_assert_str_eq(infos[r].name, names[r]);
			cr_assert_eq(infos[r].udp_port, 7001 + r);
		}
		/* Each peer through a memif link of its own. */
		for (unsigned int r = 0; r < 4; r++)
			for (unsigned int q = r + 1; q < 4; q++)
				if (r != i && q != i)
					cr_assert_neq(infos[r].port_id, infos[q].port_id,
						"%s reaches %s and %s through one port", names[i],
						names[r], names[q]);
	}
	for (unsigned int i = 0; i < 3; i++) {
		cr_assert_eq(atomic_load(&joined_events[i]), 1u, "%s told once", names[i]);
		cr_assert_eq(atomic_load(&joined_rank[i]), 3u);
	}
	for (unsigned int i = 0; i < 3; i++) {
		call_both_ways(3, i, i);
		call_both_ways(i, 3, 3);
	}
	call_both_ways(3, 3, 3); /* and itself */
	cr_assert_eq(atomic_load(&runs[3]), 8u);
	for (unsigned int i = 0; i < 3; i++)
		cr_assert_eq(atomic_load(&runs[i]), 2u, "%s", names[i]);
	cr_assert_eq(dprpc_world_leave(d, TIMEOUT), 0);
	for (unsigned int i = 0; i < 3; i++)
		cr_assert_eq(dprpc_worker_state(atomic_load(&ag[i]), 3), DPRPC_PEER_LEFT);
	for (unsigned int i = 0; i < 4; i++)
		assert_memif_quiet(i);
	destroy_memif_agent(3);
	/* The members go on among themselves. */
	call_both_ways(0, 2, 2);
	call_both_ways(2, 1, 1);
}

Test(join_memif, two_joiners_through_two_members_get_two_ranks)
{
	struct join_arg j[2] = {{3, 1, -1}, {4, 2, -1}};
	pthread_t t[2];
	unsigned int rd, re;

	make_memif_agent(3);
	make_memif_agent(4);
	for (int k = 0; k < 2; k++)
		cr_assert_eq(pthread_create(&t[k], NULL, join_thread, &j[k]), 0);
	for (int k = 0; k < 2; k++) {
		pthread_join(t[k], NULL);
		cr_assert_eq(j[k].rc, 0, "%s joins: %d", names[j[k].joiner], j[k].rc);
	}
	rd = dprpc_agent_rank(atomic_load(&ag[3]));
	re = dprpc_agent_rank(atomic_load(&ag[4]));
	cr_assert(rd != re && rd >= 3 && rd <= 4 && re >= 3 && re <= 4, "ranks %u %u", rd, re);
	for (unsigned int i = 0; i < NB_AGENTS; i++)
		cr_assert_eq(dprpc_world_size(atomic_load(&ag[i])), 5u, "%s", names[i]);
	call_both_ways(3, 4, re);
	call_both_ways(4, 3, rd);
	for (unsigned int i = 0; i < 3; i++) {
		call_both_ways(i, 3, rd);
		call_both_ways(4, i, i);
	}
	for (unsigned int i = 3; i < NB_AGENTS; i++)
		cr_assert_eq(dprpc_world_leave(atomic_load(&ag[i]), TIMEOUT), 0, "%s", names[i]);
	for (unsigned int i = 0; i < NB_AGENTS; i++)
		assert_memif_quiet(i);
}
