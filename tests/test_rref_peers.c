/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RRefs and dead peers (docs/rref.md, "When a user dies" and "When the
 * owner dies"): an owner drops the references of a user declared down or
 * restarted, a user whose owner died releases everything, and fork data
 * never rebuilt does not pin its RRef for ever.
 *
 * Two suites.  rref_peers: three agents a, b, c in this process on a
 * software switch (tests/dpt.h), polled by EAL lcore 1; a test makes an
 * agent "die" by no longer polling it, and restarts one by destroying and
 * re-creating it on the same port.  rref_peers_memif: the owner a here,
 * the user b a forked process over memif, killed with SIGKILL.  Both use
 * short liveness timers (keep-alive 50 ms, down after 1 s).
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include <criterion/criterion.h>

#include <rte_errno.h>
#include <rte_launch.h>

#include "dpt.h"

/* Short enough for quick tests, long enough that a loaded machine (two
 * cores shared with builds, ASan) does not make a live peer look dead:
 * the tests wait up to 10 s for a death. */
#define KEEPALIVE_US	 50000
#define PEER_TIMEOUT_US	 1000000
#define DEFAULT_TIMEOUT	 (60ull * 1000 * 1000)
#define SHORT_TIMEOUT_US (2000ull * 1000) /* fork data expires after it */

static struct dprpc_rref_debug
dbg(struct dprpc_agent *x)
{
	struct dprpc_rref_debug d;

	cr_assert_eq(dprpc_rref_debug_get(x, &d), 0);
	return d;
}

/* ===================== rref_peers: three agents here ===================== */

static struct dpt_switch sw;
static struct rte_mempool *mp;
static struct dprpc_agent *_Atomic ag[3];
#define A (atomic_load(&ag[0]))
#define B (atomic_load(&ag[1]))
#define C (atomic_load(&ag[2]))
static atomic_bool stop_bg, silent[3], polling[3];

/* Poll every agent not silenced; move frames.  A silenced agent is dead
 * to the others: nothing it receives is answered. */
static int
bg_loop(void *unused)
{
	unsigned int idle = 0;

	(void)unused;
	while (!atomic_load(&stop_bg)) {
		unsigned int work = dpt_switch_step(&sw);

		for (int i = 0; i < 3; i++) {
			int n = 0;

			/* seq_cst pair with silence(): either it sees polling
			 * set, or we see silent set. */
			atomic_store(&polling[i], true);
			if (!atomic_load(&silent[i]) && atomic_load(&ag[i]) != NULL)
				n = dprpc_poll(atomic_load(&ag[i]), 32);
			atomic_store(&polling[i], false);
			work += n > 0 ? (unsigned int)n : 0;
		}
		if (work > 0)
			idle = 0;
		else if (++idle > 1000)
			usleep(20);
	}
	return 0;
}

/* Stop polling agent @i and wait until it is not being polled. */
static void
silence(int i)
{
	atomic_store(&silent[i], true);
	while (atomic_load(&polling[i]))
		usleep(10);
}

/* Agent @i; @peer_timeout_us 0: it declares no peer down. */
static struct dprpc_agent *
make_agent(int i, uint64_t default_timeout_us, uint32_t peer_timeout_us)
{
	static const char *const names[] = {"a", "b", "c"};
	struct dprpc_agent_conf c;
	struct dprpc_agent *x;

	dprpc_agent_conf_init(&c);
	c.name = names[i];
	c.world = DPT_WORLD3;
	c.port.id = sw.port[i];
	c.port.mbuf_pool = mp;
	c.rrefs.max = 1024;
	c.liveness.keepalive_us = KEEPALIVE_US;
	c.liveness.peer_timeout_us = peer_timeout_us;
	c.calls.timeout_us = default_timeout_us;
	x = dprpc_agent_create(&c);
	cr_assert_not_null(x, "agent %s: %s", names[i], rte_strerror(rte_errno));
	cr_assert_eq(dprpc_register(x, "make", dpt_echo, NULL, DPRPC_HANDLER_INLINE), 0);
	return x;
}

static void
start_agents(uint64_t default_timeout_us, uint32_t peer_timeout_us)
{
	for (int i = 0; i < 3; i++)
		atomic_store(&ag[i], make_agent(i, default_timeout_us, peer_timeout_us));
	atomic_store(&stop_bg, false);
	cr_assert_eq(rte_eal_remote_launch(bg_loop, NULL, 1), 0);
}

static void
setup(void)
{
	cr_assert_geq(dpt_eal_init("rrpeer"), 0);
	mp = rte_pktmbuf_pool_create(
		"dpt_mp", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	cr_assert_not_null(mp);
	cr_assert_eq(dpt_switch_make(&sw, 3), 0);
}

static void
teardown(void)
{
	atomic_store(&stop_bg, true);
	rte_eal_wait_lcore(1);
	for (int i = 0; i < 3; i++) {
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

TestSuite(rref_peers, .init = setup, .fini = teardown, .timeout = 120);

/* Wait (bounded, ~10 s) until @x sees worker @rank down. */
static void
wait_down(struct dprpc_agent *x, unsigned int rank)
{
	for (int i = 0; i < 10000 && dprpc_worker_state(x, rank) != DPRPC_PEER_DOWN; i++)
		usleep(1000);
	cr_assert_eq(dprpc_worker_state(x, rank), DPRPC_PEER_DOWN, "%s never saw %u down",
		dprpc_agent_name(x), rank);
}

/* Wait (bounded, ~10 s) until @x owns @owners values with @forks forks. */
static void
wait_owner(struct dprpc_agent *x, uint64_t owners, uint64_t forks)
{
	struct dprpc_rref_debug d;

	for (int i = 0; i < 10000; i++) {
		d = dbg(x);
		if (d.num_owner_rrefs == owners && d.num_forks == forks)
			return;
		usleep(1000);
	}
	cr_assert_fail("%s owns %lu values with %lu forks, expected %lu and %lu",
		dprpc_agent_name(x), (unsigned long)d.num_owner_rrefs, (unsigned long)d.num_forks,
		(unsigned long)owners, (unsigned long)forks);
}

/* Wait (bounded, ~10 s) until @x has @n pending forks. */
static void
wait_pending_forks(struct dprpc_agent *x, uint64_t n)
{
	for (int i = 0; i < 10000 && dbg(x).num_pending_forks != n; i++)
		usleep(1000);
	cr_assert_eq(dbg(x).num_pending_forks, n, "%s: %lu pending forks, expected %lu",
		dprpc_agent_name(x), (unsigned long)dbg(x).num_pending_forks, (unsigned long)n);
}

static struct dprpc_rref *
confirmed_remote(struct dprpc_agent *x, const char *to, uint64_t v)
{
	struct dprpc_rref *r = dprpc_remote(x, to, "make", &v, sizeof(v), DPRPC_TIMEOUT_DEFAULT);
	struct dprpc_future *f;

	cr_assert_not_null(r, "%s", rte_strerror(rte_errno));
	f = dprpc_rref_creation_future(r);
	cr_assert_eq(dprpc_future_wait(f, 10 * 1000 * 1000), 0);
	dprpc_future_put(f);
	return r;
}

/* A user restarts (a new incarnation of b, without any DELETE of the old
 * one's references): the owner drops every fork the old b held, and the
 * values only it held are freed. */
Test(rref_peers, owner_drops_the_references_of_a_restarted_user)
{
	struct dprpc_agent *old;
	struct dprpc_rref *mine;

	start_agents(DEFAULT_TIMEOUT, PEER_TIMEOUT_US);
	for (uint64_t v = 0; v < 3; v++)
		(void)confirmed_remote(B, "a", v); /* held until b goes */
	mine = confirmed_remote(A, "a", 9);	   /* a's own: an owner handle */
	wait_owner(A, 4, 3);
	/* b dies and comes back: its handles go with the old agent. */
	silence(1);
	old = atomic_exchange(&ag[1], NULL);
	cr_assert_eq(dprpc_agent_destroy(old), 0);
	usleep(5000); /* a later incarnation (sessions count milliseconds) */
	atomic_store(&ag[1], make_agent(1, DEFAULT_TIMEOUT, PEER_TIMEOUT_US));
	atomic_store(&silent[1], false);
	/* The new b's first frame tells a of the restart. */
	cr_assert_eq(
		dprpc_rpc_sync(B, "a", "make", "x", 1, DPRPC_TIMEOUT_DEFAULT, NULL, NULL, NULL), 0);
	wait_owner(A, 1, 0);
	cr_assert_eq(dbg(A).forks_dropped_peer_down, 3u);
	cr_assert_eq(dbg(A).num_owner_handles, 1u);
	cr_assert_eq(dprpc_rref_release(mine), 0);
	wait_owner(A, 0, 0);
}

/* The owner b dies: a releases its handles, one of them forked (the fork
 * data never used, so its child waits for an ACCEPT b will never send).
 * Nothing is left on a: the pending child is dropped when b is declared
 * down, and the DELETEs that cannot reach b are counted and dropped. */
Test(rref_peers, user_whose_owner_died_releases_everything)
{
	uint8_t d[DPRPC_RREF_FORK_SIZE];
	struct dprpc_rref *r1, *r2;
	struct dprpc_rref_debug da;
	int n = -1;

	start_agents(DEFAULT_TIMEOUT, PEER_TIMEOUT_US);
	r1 = confirmed_remote(A, "b", 1);
	r2 = confirmed_remote(A, "b", 2);
	cr_assert_eq(dprpc_rref_fork(r1, d, sizeof(d)), DPRPC_RREF_FORK_SIZE);
	cr_assert_eq(dbg(A).num_pending_forks, 1u);
	silence(1);
	wait_down(A, 1);
	cr_assert_eq(dprpc_rref_release(r1), 0);
	cr_assert_eq(dprpc_rref_release(r2), 0);
	for (int i = 0; i < 10000 && n != 0; i++) {
		n = dprpc_rref_list(A, NULL, 0);
		usleep(1000);
	}
	cr_assert_eq(n, 0, "RRef contexts left on a: %d", n);
	da = dbg(A);
	cr_assert_eq(da.num_users, 0u);
	cr_assert_eq(da.num_pending_users, 0u);
	cr_assert_eq(da.num_pending_forks, 0u);
	cr_assert_eq(da.pending_forks_dropped, 1u);
	cr_assert_eq(da.messages_failed, 2u, "the two DELETEs to the dead owner");
	cr_assert_eq(dprpc_rref_shutdown(A, 20 * 1000 * 1000, DPRPC_RREF_REPORT_LEAKS), 0);
}

/* Fork data made for c (dprpc_rref_fork_to()) that c never rebuilds:
 * once c is declared down, a's pending child and, on the owner b, the
 * fork b made for c are dropped, so nothing pins the values. */
Test(rref_peers, fork_data_for_a_dead_worker_is_dropped)
{
	uint8_t d[DPRPC_RREF_FORK_SIZE], e[DPRPC_RREF_FORK_SIZE];
	struct dprpc_rref *r, *l;

	start_agents(DEFAULT_TIMEOUT, PEER_TIMEOUT_US);
	r = confirmed_remote(A, "b", 5);
	l = dprpc_rref_create_local(B, "own", 3);
	cr_assert_not_null(l);
	/* a and b know c: they heard from it. */
	cr_assert_eq(
		dprpc_rpc_sync(A, "c", "make", "x", 1, DPRPC_TIMEOUT_DEFAULT, NULL, NULL, NULL), 0);
	cr_assert_eq(
		dprpc_rpc_sync(B, "c", "make", "x", 1, DPRPC_TIMEOUT_DEFAULT, NULL, NULL, NULL), 0);
	cr_assert_eq(dprpc_rref_fork_to(r, 2, d, sizeof(d)), DPRPC_RREF_FORK_SIZE);
	cr_assert_eq(dprpc_rref_fork_to(l, 2, e, sizeof(e)), DPRPC_RREF_FORK_SIZE);
	cr_assert_eq(dprpc_rref_fork_to(r, 7, d, sizeof(d)), -EINVAL);
	/* The data is c's alone. */
	cr_assert_null(dprpc_rref_from_fork(A, e, sizeof(e)));
	cr_assert_eq(rte_errno, EINVAL);
	cr_assert_eq(dbg(A).num_pending_forks, 1u);
	wait_owner(B, 2, 2); /* a's user fork, and the one b made for c */
	silence(2);
	wait_down(A, 2);
	wait_down(B, 2);
	wait_pending_forks(A, 0);
	cr_assert_eq(dbg(A).pending_forks_dropped, 1u);
	cr_assert_eq(dbg(A).num_users, 1u, "the application's handle is still held");
	wait_owner(B, 2, 1);
	cr_assert_eq(dbg(B).forks_dropped_peer_down, 1u);
	cr_assert_eq(dprpc_rref_release(l), 0);
	wait_owner(B, 1, 1);
	cr_assert_eq(dprpc_rref_release(r), 0);
	wait_owner(B, 0, 0);
	cr_assert_eq(dbg(A).num_users, 0u);
}

/* Fork data handed to nobody: an unconfirmed child lives the default
 * timeout (2 s here), on the parent (a pending child) and on an owner
 * that forked its own handle; rebuilt later, it finds the RRef gone. */
/* Fork data never rebuilt expires after the default timeout: the
 * configuration's or, with @set_at_run_time, one dprpc_rpc_timeout_set()
 * gave agents made with none (whose fork data would otherwise never
 * expire). */
static void
fork_data_expires(bool set_at_run_time)
{
	uint8_t d[DPRPC_RREF_FORK_SIZE], e[DPRPC_RREF_FORK_SIZE];
	struct dprpc_rref *r, *l, *late;
	struct dprpc_future *f;

	/* Nobody dies here: no peer is ever declared down, so what goes is
	 * what expired. */
	start_agents(set_at_run_time ? DPRPC_TIMEOUT_NONE : SHORT_TIMEOUT_US, 0);
	for (int i = 0; i < 3 && set_at_run_time; i++) {
		cr_assert_eq(dprpc_rpc_timeout(atomic_load(&ag[i])), 0u);
		cr_assert_eq(dprpc_rpc_timeout_set(atomic_load(&ag[i]), SHORT_TIMEOUT_US), 0);
	}
	r = confirmed_remote(A, "b", 6);
	l = dprpc_rref_create_local(B, "own", 3);
	cr_assert_not_null(l);
	cr_assert_eq(dprpc_rref_fork(r, d, sizeof(d)), DPRPC_RREF_FORK_SIZE);
	cr_assert_eq(dprpc_rref_fork(l, e, sizeof(e)), DPRPC_RREF_FORK_SIZE);
	cr_assert_eq(dprpc_rref_release(r), 0); /* G2: the child keeps it */
	cr_assert_eq(dprpc_rref_release(l), 0); /* the fork keeps the value */
	cr_assert_eq(dbg(A).num_users, 1u);
	wait_owner(B, 2, 2);
	/* Past the timeout (and the sweep that follows) both are gone. */
	wait_pending_forks(A, 0);
	cr_assert_eq(dbg(A).pending_forks_dropped, 1u);
	cr_assert_eq(dbg(A).num_users, 0u);
	wait_owner(B, 0, 0);
	cr_assert_eq(dbg(B).forks_expired, 1u);
	cr_assert_eq(dbg(B).forks_dropped_peer_down, 0u);
	/* Rebuilt too late: a clean -ENOENT, nothing else. */
	late = dprpc_rref_from_fork(C, d, sizeof(d));
	cr_assert_not_null(late);
	f = dprpc_rref_creation_future(late);
	cr_assert_eq(dprpc_future_wait(f, 10 * 1000 * 1000), -ENOENT);
	dprpc_future_put(f);
	cr_assert_eq(dprpc_rref_release(late), 0);
	cr_assert_null(dprpc_rref_from_fork(B, e, sizeof(e)));
	cr_assert_eq(rte_errno, ENOENT);
	wait_owner(B, 0, 0);
}

Test(rref_peers, fork_data_never_rebuilt_expires, .timeout = 60)
{
	fork_data_expires(false);
}

Test(rref_peers, fork_data_expires_after_a_timeout_set_at_run_time, .timeout = 60)
{
	fork_data_expires(true);
}

/* ============ rref_peers_memif: the user is a killed process ============= */

static char sock_path[108];
static pid_t user_pid = -1;
static struct dprpc_agent *own;
static struct dprpc_rref *_Atomic held[16];
static atomic_uint nb_held;

/* b: make N RRefs on a (N in the payload) and hold them. */
static int
h_hold(struct dprpc_request *req, void *arg)
{
	size_t len;
	const uint32_t *n = dprpc_request_payload(req, &len);

	if (len != sizeof(*n) || *n > 8)
		return -EINVAL;
	for (uint64_t v = 0; v < *n; v++) {
		struct dprpc_rref *r =
			dprpc_remote(dprpc_request_agent(req), "a", "make", &v, 8, 0);

		if (r == NULL)
			return -rte_errno;
		atomic_store(&held[atomic_fetch_add(&nb_held, 1)], r);
	}
	return dprpc_reply(req, NULL, 0);
}

/* b: rebuild the fork data in the payload and hold it. */
static int
h_adopt(struct dprpc_request *req, void *arg)
{
	size_t len;
	const void *p = dprpc_request_payload(req, &len);
	struct dprpc_rref *r = dprpc_rref_from_fork(dprpc_request_agent(req), p, len);

	if (r == NULL)
		return -rte_errno;
	atomic_store(&held[atomic_fetch_add(&nb_held, 1)], r);
	return dprpc_reply(req, NULL, 0);
}

/* The user process: runs until it is killed (or 60 s). */
static void
user_main(void)
{
	struct dprpc_agent_conf c;
	struct dprpc_agent *b;
	char vdev[200];
	time_t end = time(NULL) + 60;

	if (dpt_eal_init("rrpu") < 0)
		_exit(10);
	snprintf(vdev, sizeof(vdev), "net_memif0,role=server,socket-abstract=no,socket=%s",
		sock_path);
	dprpc_agent_conf_init(&c);
	c.name = "b";
	c.world = DPT_WORLD2;
	c.port.vdev = vdev;
	c.lcores.io = 1;
	c.liveness.keepalive_us = KEEPALIVE_US;
	c.liveness.peer_timeout_us = PEER_TIMEOUT_US;
	b = dprpc_agent_create(&c);
	if (b == NULL)
		_exit(11);
	if (dprpc_register(b, "hold", h_hold, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(b, "adopt", h_adopt, NULL, DPRPC_HANDLER_INLINE) != 0)
		_exit(12);
	while (time(NULL) < end)
		usleep(1000);
	_exit(13); /* never killed: the test failed */
}

static void
memif_setup(void)
{
	struct dprpc_agent_conf c;
	char vdev[200];

	snprintf(sock_path, sizeof(sock_path), "/tmp/dprpc-rrpeer-%d.sock", (int)getpid());
	unlink(sock_path);
	/* Fork before EAL: EAL state does not survive fork. */
	user_pid = fork();
	if (user_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		user_main(); /* no cr_ call in the child */
	}
	cr_assert_geq(user_pid, 0);
	cr_assert_geq(dpt_eal_init("rrpo"), 0);
	snprintf(vdev, sizeof(vdev), "net_memif0,role=client,socket-abstract=no,socket=%s",
		sock_path);
	for (int i = 0; i < 20000 && access(sock_path, F_OK) != 0; i++)
		usleep(1000);
	dprpc_agent_conf_init(&c);
	c.name = "a";
	c.world = DPT_WORLD2;
	c.port.vdev = vdev;
	c.liveness.keepalive_us = KEEPALIVE_US;
	c.liveness.peer_timeout_us = PEER_TIMEOUT_US;
	own = dprpc_agent_create(&c);
	cr_assert_not_null(own, "%s", rte_strerror(rte_errno));
	cr_assert_eq(dprpc_register(own, "make", dpt_echo, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_agent_wait_link(own, 20 * 1000 * 1000), 0, "memif link never came up");
}

static void
memif_teardown(void)
{
	if (user_pid > 0) {
		kill(user_pid, SIGKILL);
		waitpid(user_pid, NULL, 0);
		dpt_remove_runtime_dir("rrpu", user_pid);
		user_pid = -1;
	}
	if (own != NULL) {
		cr_assert_eq(dprpc_agent_destroy(own), 0);
		own = NULL;
	}
	dpt_eal_cleanup();
	unlink(sock_path);
}

TestSuite(rref_peers_memif, .init = memif_setup, .fini = memif_teardown, .timeout = 120);

/* Poll the owner (nobody else does) until it owns @owners values with
 * @forks forks, bounded (~10 s). */
static void
poll_until_owner(uint64_t owners, uint64_t forks)
{
	struct dprpc_rref_debug d;

	for (int i = 0; i < 10000; i++) {
		dprpc_poll(own, 32);
		d = dbg(own);
		if (d.num_owner_rrefs == owners && d.num_forks == forks)
			return;
		usleep(1000);
	}
	cr_assert_fail("a owns %lu values with %lu forks, expected %lu and %lu",
		(unsigned long)d.num_owner_rrefs, (unsigned long)d.num_forks, (unsigned long)owners,
		(unsigned long)forks);
}

/* The user process makes RRefs on a and adopts one a forked for it, holds
 * them all, and is killed: once a declares it down, a has dropped its six
 * references and freed the six values. */
Test(rref_peers_memif, owner_frees_the_values_of_a_killed_user)
{
	uint8_t d[DPRPC_RREF_FORK_SIZE];
	uint32_t n = 5;
	struct dprpc_rref *l = dprpc_rref_create_local(own, "lent", 4);
	int status;

	cr_assert_not_null(l);
	cr_assert_eq(
		dprpc_rpc_sync(own, "b", "hold", &n, sizeof(n), 10 * 1000 * 1000, NULL, NULL, NULL),
		0);
	cr_assert_eq(dprpc_rref_fork_to(l, 1, d, sizeof(d)), DPRPC_RREF_FORK_SIZE);
	cr_assert_eq(
		dprpc_rpc_sync(own, "b", "adopt", d, sizeof(d), 10 * 1000 * 1000, NULL, NULL, NULL),
		0);
	cr_assert_eq(dprpc_rref_release(l), 0); /* b's reference keeps the value */
	poll_until_owner(6, 6);
	cr_assert_eq(kill(user_pid, SIGKILL), 0);
	cr_assert_eq(waitpid(user_pid, &status, 0), user_pid);
	dpt_remove_runtime_dir("rrpu", user_pid);
	user_pid = -1;
	poll_until_owner(0, 0);
	cr_assert_eq(dprpc_worker_state(own, 1), DPRPC_PEER_DOWN);
	cr_assert_eq(dbg(own).forks_dropped_peer_down, 6u);
	cr_assert_eq(dbg(own).deletes_unknown, 0u);
	cr_assert_eq(dprpc_rref_list(own, NULL, 0), 0);
}
