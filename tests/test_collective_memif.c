/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Collectives between two processes over a memif pair: the test forks a
 * worker (its own EAL, the memif server, an io lcore) and is the other
 * (the memif client, polling while it waits).  all_gather, barrier,
 * graceful shutdown and a new world after it; a worker killed while the
 * other is in its shutdown barrier, the leader or the other member; a
 * worker that stopped its port not waited for by the other's leave; a
 * client made before its server listens; clients that destroy their agent
 * while the server polls.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include <criterion/criterion.h>

#include <rte_errno.h>

#include "dpt.h"

enum child_mode {
	CHILD_TWO_WORLDS = 0, /* gather, barrier, shutdown; again in a new world */
	CHILD_STAY = 1,	      /* one barrier, then nothing until killed */
	CHILD_DESTROY = 2,    /* one barrier, its agent destroyed, then as STAY */
	CHILD_LATE = 3,	      /* its server made once told (done_pipe); one world */
	CHILD_SERVE = 4,      /* serves clients that destroy their agent, until told */
};

/* Clients, one after the other, that CHILD_SERVE serves. */
#define SERVE_CYCLES 10

static char sock_path[2][108];
static pid_t child_pid = -1;
/* The child writes a byte when CHILD_DESTROY destroyed; CHILD_LATE reads
 * one before it makes its agent, CHILD_SERVE once the clients are done. */
static int done_pipe[2] = {-1, -1};

static struct dprpc_agent *
make_agent(const char *name, const char *sock, bool server, struct rte_mempool *mp,
	uint32_t peer_timeout_us)
{
	struct dprpc_agent_conf c;
	char vdev[320];

	snprintf(vdev, sizeof(vdev), "net_memif0,role=%s,socket-abstract=no,socket=%s",
		server ? "server" : "client", sock);
	dprpc_agent_conf_init(&c);
	c.name = name;
	c.world = DPT_WORLD2;
	c.port.vdev = vdev;
	c.port.mbuf_pool = mp;
	c.lcores.io = server ? 1 : DPRPC_LCORE_NONE;
	c.liveness.keepalive_us = 50 * 1000;
	c.liveness.peer_timeout_us = peer_timeout_us;
	return dprpc_agent_create(&c);
}

/* The value each worker gives. */
static const char *
value_of(const char *name)
{
	return name[0] == 'a' ? "from a, rank 0" : "b";
}

/* Gather over the world and check both values; 0 or a line number. */
static int
gather_check(struct dprpc_agent *x)
{
	struct dprpc_gather *g = NULL;
	const char *mine = value_of(dprpc_agent_name(x));
	int rc = dprpc_all_gather(x, NULL, 0, mine, strlen(mine), 20 * 1000 * 1000, &g, NULL);

	if (rc != 0)
		return __LINE__;
	for (unsigned int r = 0; r < 2; r++) {
		size_t len;
		const void *v = dprpc_gather_value(g, r, &len);
		const char *want = value_of(r == 0 ? "a" : "b");

		if (len != strlen(want) || memcmp(v, want, len) != 0) {
			dprpc_gather_free(g);
			return __LINE__;
		}
	}
	rc = dprpc_gather_seq(g) == 1 && dprpc_gather_members(g) == 3 ? 0 : __LINE__;
	dprpc_gather_free(g);
	return rc;
}

/* CHILD_SERVE: the memif server, its io lcore polling throughout, while
 * SERVE_CYCLES clients (rank 0) come one after the other, each destroying
 * its agent without leaving, until the test says they are done (a byte on
 * done_pipe).  Each said it closes the link before it did (links_closed:
 * at least one, since a server descheduled past a client's 50 ms wait
 * reads its CLOSE too late on a loaded machine), and none was taken for
 * gone (still UP at each: a destroy is no leave).  Then its own leave
 * returns at once: the last client's link counts as gone, as a link that
 * went down does (it waited for the peer timeout, 5 s, before).  The exit
 * status: 0, or what went wrong. */
static int
serve_clients(const char *name)
{
	struct pollfd done = {.fd = done_pipe[0], .events = POLLIN};
	struct dprpc_agent_stats st;
	struct dprpc_agent *x = make_agent(name, sock_path[0], true, NULL, 5 * 1000 * 1000);
	uint64_t seen = 0;

	if (x == NULL)
		return 11;
	for (int i = 0; i < 600000 && poll(&done, 1, 0) == 0; i++) {
		if (dprpc_agent_stats_get(x, &st) != 0)
			return 18;
		if (st.links_closed != seen) {
			seen = st.links_closed;
			if (dprpc_worker_state(x, 0) != DPRPC_PEER_UP)
				return 19;
		}
		usleep(100);
	}
	if (dprpc_agent_stats_get(x, &st) != 0 || st.links_closed < 1 ||
		st.links_closed > SERVE_CYCLES || st.peers_left != 0)
		return 20;
	if (dprpc_world_leave(x, 2 * 1000 * 1000) != 0)
		return 22;
	if (dprpc_agent_destroy(x) != 0)
		return 21;
	dpt_eal_cleanup();
	return 0;
}

/* The forked worker; exits 0 when all went as it should. */
static void
child_main(const char *name, enum child_mode mode)
{
	struct dprpc_agent *x;
	time_t end = time(NULL) + 60;

	if (dpt_eal_init("collc") < 0)
		_exit(10);
	if (mode == CHILD_LATE) {
		char byte;

		if (read(done_pipe[0], &byte, 1) != 1)
			_exit(17);
	}
	if (mode == CHILD_SERVE)
		_exit(serve_clients(name));
	for (int w = 0; w < (mode == CHILD_TWO_WORLDS ? 2 : 1); w++) {
		x = make_agent(name, sock_path[w], true, NULL, 1000 * 1000);
		if (x == NULL)
			_exit(11);
		if (gather_check(x) != 0)
			_exit(12);
		if (dprpc_barrier(x, NULL, 0, 20 * 1000 * 1000, NULL) != 0)
			_exit(13);
		if (mode == CHILD_DESTROY) {
			if (dprpc_agent_destroy(x) != 0 || write(done_pipe[1], "d", 1) != 1)
				_exit(16);
			mode = CHILD_STAY;
		}
		if (mode == CHILD_STAY) {
			while (time(NULL) < end)
				usleep(1000);
			_exit(14); /* should have been killed */
		}
		if (dprpc_shutdown(x, true, 20 * 1000 * 1000, NULL) != 0)
			_exit(15);
	}
	dpt_eal_cleanup();
	_exit(0);
}

static void
start_child(const char *name, enum child_mode mode)
{
	for (int w = 0; w < 2; w++) {
		snprintf(sock_path[w], sizeof(sock_path[w]), "/tmp/dprpc-coll-%d-%d.sock",
			(int)getpid(), w);
		unlink(sock_path[w]);
	}
	cr_assert_eq(pipe(done_pipe), 0);
	/* Fork before EAL: EAL state does not survive fork. */
	child_pid = fork();
	if (child_pid == 0) {
		/* Never outlive the test process; no cr_ call in the child. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		child_main(name, mode);
	}
	cr_assert_geq(child_pid, 0);
}

/* This process's EAL, once the child is forked, and its mbuf pool. */
static struct rte_mempool *
parent_eal(void)
{
	struct rte_mempool *mp;

	cr_assert_geq(dpt_eal_init("colla"), 0);
	mp = rte_pktmbuf_pool_create(
		"dpt_mp", 4095, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	cr_assert_not_null(mp);
	return mp;
}

/* The client's agent on world @w, once the child's server listens. */
static struct dprpc_agent *
connect_world(const char *name, int w, struct rte_mempool *mp, uint32_t peer_timeout_us)
{
	struct dprpc_agent *x;

	for (int i = 0; i < 20000 && access(sock_path[w], F_OK) != 0; i++)
		usleep(1000);
	x = make_agent(name, sock_path[w], false, mp, peer_timeout_us);
	cr_assert_not_null(x, "%s", rte_strerror(rte_errno));
	cr_assert_eq(dprpc_agent_wait_link(x, 20 * 1000 * 1000), 0, "memif link never came up");
	return x;
}

static int
wait_child(void)
{
	int st = 0;

	cr_assert_eq(waitpid(child_pid, &st, 0), child_pid);
	child_pid = -1;
	return st;
}

static void
teardown(void)
{
	if (child_pid > 0) {
		kill(child_pid, SIGKILL);
		waitpid(child_pid, NULL, 0);
	}
	for (int w = 0; w < 2; w++)
		unlink(sock_path[w]);
	for (int i = 0; i < 2; i++)
		if (done_pipe[i] >= 0) {
			close(done_pipe[i]);
			done_pipe[i] = -1;
		}
	dpt_eal_cleanup();
}

TestSuite(collective_memif, .fini = teardown, .timeout = 120);

Test(collective_memif, gather_barrier_shutdown_then_new_world)
{
	struct rte_mempool *mp;
	int st;

	start_child("b", CHILD_TWO_WORLDS);
	mp = parent_eal();
	for (int w = 0; w < 2; w++) {
		struct dprpc_error e;
		struct dprpc_agent *x = connect_world("a", w, mp, 1000 * 1000);

		cr_assert_eq(gather_check(x), 0, "world %d: gather", w);
		cr_assert_eq(dprpc_barrier(x, NULL, 0, 20 * 1000 * 1000, &e), 0, "%s", e.msg);
		cr_assert_eq(dprpc_shutdown(x, true, 20 * 1000 * 1000, &e), 0, "%s", e.msg);
		cr_assert_eq(rte_mempool_in_use_count(mp), 0u, "world %d: mbufs leaked", w);
	}
	st = wait_child();
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
	rte_mempool_free(mp);
}

static void *
kill_later(void *arg)
{
	(void)arg;
	usleep(100 * 1000);
	kill(child_pid, SIGKILL);
	return NULL;
}

/* The child (@child_name) is killed while this worker (@me) is in its
 * shutdown barrier: the shutdown ends long before its timeout, names the
 * child, and stops this worker cleanly. */
static void
killed_in_barrier(const char *me, const char *child_name, unsigned int child_rank)
{
	struct dprpc_error e;
	struct rte_mempool *mp;
	struct dprpc_agent *x;
	pthread_t th;
	pid_t pid;
	int rc, st;

	start_child(child_name, CHILD_STAY);
	pid = child_pid;
	mp = parent_eal();
	x = connect_world(me, 0, mp, 1000 * 1000);
	cr_assert_eq(gather_check(x), 0);
	cr_assert_eq(dprpc_barrier(x, NULL, 0, 20 * 1000 * 1000, &e), 0, "%s", e.msg);
	cr_assert_eq(pthread_create(&th, NULL, kill_later, NULL), 0);
	rc = dprpc_shutdown(x, true, 60 * 1000 * 1000, &e);
	pthread_join(th, NULL);
	/* Declared down after peer_timeout_us (1 s), not the 60 s. */
	cr_assert_eq(rc, -EHOSTDOWN, "%d %s", rc, e.msg);
	cr_assert_eq(e.workers, 1ull << child_rank, "workers %lx", (unsigned long)e.workers);
	cr_assert_not_null(strstr(e.msg, child_name), "%s", e.msg);
	cr_assert_eq(rte_mempool_in_use_count(mp), 0u, "mbufs leaked");
	st = wait_child();
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child status 0x%x", st);
	dpt_remove_runtime_dir("collc", pid);
	rte_mempool_free(mp);
}

Test(collective_memif, member_killed_in_shutdown_barrier)
{
	killed_in_barrier("a", "b", 1);
}

Test(collective_memif, leader_killed_in_shutdown_barrier)
{
	killed_in_barrier("b", "a", 0);
}

/*
 * The worker at the other end of the memif port (the child, b) destroyed
 * its agent without leaving: the port reaches it alone, so its link going
 * down says it stopped its port, and this worker's leave does not wait for
 * an answer that cannot come.  With a peer timeout of 60 s the leave
 * would otherwise wait until its own timeout (10 s) and fail -ETIMEDOUT;
 * b is not declared down either.
 */
Test(collective_memif, leave_does_not_wait_for_a_worker_that_stopped_its_port)
{
	struct dprpc_agent_stats st;
	struct rte_mempool *mp;
	struct dprpc_agent *x;
	pid_t pid;
	char byte;
	int rc;

	start_child("b", CHILD_DESTROY);
	pid = child_pid;
	mp = parent_eal();
	x = connect_world("a", 0, mp, 60 * 1000 * 1000);
	cr_assert_eq(gather_check(x), 0);
	cr_assert_eq(dprpc_barrier(x, NULL, 0, 20 * 1000 * 1000, NULL), 0);
	cr_assert_eq(read(done_pipe[0], &byte, 1), 1, "the child did not destroy its agent");
	rc = dprpc_world_leave(x, 10 * 1000 * 1000);
	cr_assert_eq(rc, 0, "leave: %d", rc);
	cr_assert_eq(dprpc_worker_state(x, 1), DPRPC_PEER_UP);
	cr_assert_eq(dprpc_agent_stats_get(x, &st), 0);
	cr_assert_eq(st.peers_down, 0);
	cr_assert_eq(st.peers_left, 0);
	cr_assert_eq(dprpc_agent_destroy(x), 0);
	cr_assert_eq(rte_mempool_in_use_count(mp), 0u, "mbufs leaked");
	kill(child_pid, SIGKILL);
	rc = wait_child();
	cr_assert(WIFSIGNALED(rc) && WTERMSIG(rc) == SIGKILL, "child status 0x%x", rc);
	dpt_remove_runtime_dir("collc", pid);
	rte_mempool_free(mp);
}

/*
 * This worker's agent, the memif client, is made before the child's server
 * exists (the PMD's connect() fails, and so does the port's start): it is
 * made all the same, its link down, and connects once the server listens;
 * then the world as usual.  Before, dprpc_agent_create() failed "cannot set
 * port 0 up" (CI saw it when the client connected between the server
 * socket's bind() and listen()).
 */
Test(collective_memif, client_made_before_its_server_listens)
{
	struct dprpc_error e;
	struct rte_mempool *mp;
	struct dprpc_agent *x;
	int st;

	start_child("b", CHILD_LATE);
	mp = parent_eal();
	x = make_agent("a", sock_path[0], false, mp, 1000 * 1000);
	cr_assert_not_null(x, "%s", rte_strerror(rte_errno));
	cr_assert_eq(dprpc_agent_wait_link(x, 100 * 1000), -ETIMEDOUT);
	cr_assert_eq(write(done_pipe[1], "g", 1), 1);
	cr_assert_eq(dprpc_agent_wait_link(x, 20 * 1000 * 1000), 0, "the client never connected");
	cr_assert_eq(gather_check(x), 0);
	cr_assert_eq(dprpc_barrier(x, NULL, 0, 20 * 1000 * 1000, &e), 0, "%s", e.msg);
	cr_assert_eq(dprpc_shutdown(x, true, 20 * 1000 * 1000, &e), 0, "%s", e.msg);
	cr_assert_eq(rte_mempool_in_use_count(mp), 0u, "mbufs leaked");
	st = wait_child();
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
	rte_mempool_free(mp);
}

/*
 * Ten clients one after the other, each making its agent, waiting for the
 * world and destroying its agent without leaving, while the server's io
 * lcore polls the link throughout (CHILD_SERVE).  Each destroy tells the
 * server it closes the link and waits for its answer, so the server no
 * longer polls the link when it goes down: the server counts such closes
 * (one at least), takes none of them for a leave, lives, and leaves the
 * world at once.  Before, nothing was said (0 counted); and DPDK 22.11's
 * memif PMD, unmapping the rings under
 * the server's rx_burst, killed a dprpc-perf server with SIGSEGV in 9
 * such destroys of 140.
 */
Test(collective_memif, clients_destroying_their_agent_tell_the_server_first)
{
	struct rte_mempool *mp;
	int st;

	start_child("b", CHILD_SERVE);
	mp = parent_eal();
	for (int i = 0; i < SERVE_CYCLES; i++) {
		struct dprpc_agent *x = connect_world("a", 0, mp, 5 * 1000 * 1000);
		char missing[64] = "";

		cr_assert_eq(dprpc_world_wait(x, 20 * 1000 * 1000, missing, sizeof(missing)), 0,
			"cycle %d: missing %s", i, missing);
		cr_assert_eq(dprpc_agent_destroy(x), 0, "cycle %d", i);
		cr_assert_eq(rte_mempool_in_use_count(mp), 0u, "cycle %d: mbufs leaked", i);
	}
	cr_assert_eq(write(done_pipe[1], "d", 1), 1);
	st = wait_child();
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
	rte_mempool_free(mp);
}
