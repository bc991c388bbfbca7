/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RRefs across three processes over memif.  The test process is worker a
 * and also the "wire": its agent sits on a net_ring port whose other end,
 * with two memif server ports, is joined by an L2 switch (by destination
 * MAC) that an EAL lcore runs.  Workers b and c are forked processes,
 * memif clients, each with an io lcore and a handler-pool lcore; the test
 * drives them through handlers (adopt fork data, fetch, fork, release,
 * report debug counts).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_launch.h>

#include "dpt.h"

static char sock_path[2][108];
/* Made by the test once its memif server ports are started: a worker
 * connects only then.  A client whose INIT reaches a server port not
 * started yet is turned away by the PMD and never tries again (its link
 * never comes up: "never heard from c", once under ASan in CI). */
static char ready_path[2][116];
static pid_t pids[2] = {-1, -1};
static struct dprpc_agent *a;
static struct dpt_ring_pair pair;
static struct rte_mempool *mp;
static int sw_port[3]; /* switch side of a, b, c */
static atomic_bool stop_bg;

/* --- the worker processes (b and c) ------------------------------------ */

static atomic_bool quit;
static struct dprpc_rref *_Atomic slots[16];
static atomic_uint nb_slots;

static int
h_quit(struct dprpc_request *req, void *arg)
{
	atomic_store(&quit, true);
	return dprpc_reply(req, NULL, 0);
}

static int
h_add(struct dprpc_request *req, void *arg)
{
	size_t vlen, alen;
	const uint64_t *v = dprpc_request_rref_value(req, &vlen);
	const uint64_t *x = dprpc_request_payload(req, &alen);
	uint64_t sum;

	if (v == NULL || vlen != 8 || alen != 8)
		return -EINVAL;
	sum = *v + *x;
	return dprpc_reply(req, &sum, sizeof(sum));
}

/* Byte @i of a large value: position-dependent, so a misplaced frame
 * shows. */
static uint8_t
big_byte(size_t i)
{
	return (uint8_t)(i * 7 + (i >> 11) + 1);
}

/* Replies as many big_byte() bytes as its 8-byte payload says. */
static int
h_big(struct dprpc_request *req, void *arg)
{
	size_t len;
	const uint64_t *n = dprpc_request_payload(req, &len);
	uint8_t *b;
	int rc;

	if (len != sizeof(*n))
		return -EINVAL;
	b = malloc(*n > 0 ? *n : 1);
	if (b == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < *n; i++)
		b[i] = big_byte(i);
	rc = dprpc_reply(req, b, *n);
	free(b);
	return rc;
}

static int
h_adopt(struct dprpc_request *req, void *arg)
{
	size_t len;
	const void *p = dprpc_request_payload(req, &len);
	struct dprpc_rref *r = dprpc_rref_from_fork(dprpc_request_agent(req), p, len);
	uint32_t slot;

	if (r == NULL)
		return -rte_errno;
	slot = atomic_fetch_add(&nb_slots, 1);
	if (slot >= 16) {
		dprpc_rref_release(r);
		return -ENOSPC;
	}
	atomic_store(&slots[slot], r);
	return dprpc_reply(req, &slot, sizeof(slot));
}

static struct dprpc_rref *
slot_of(struct dprpc_request *req)
{
	size_t len;
	const uint32_t *s = dprpc_request_payload(req, &len);

	return len == 4 && *s < 16 ? atomic_load(&slots[*s]) : NULL;
}

static void
fetched(struct dprpc_future *f, void *arg)
{
	struct dprpc_request *req = arg;
	const struct dprpc_error *e = dprpc_future_error(f);
	size_t len;
	const void *v = dprpc_future_value(f, &len);

	if (e != NULL)
		dprpc_reply_error(req, e->code, e->msg);
	else
		dprpc_reply(req, v, len);
	dprpc_future_put(f);
}

/* to_here on a slot, without blocking the poller: reply from the
 * fetch's completion. */
static int
h_fetch(struct dprpc_request *req, void *arg)
{
	struct dprpc_rref *r = slot_of(req);
	struct dprpc_future *f;

	if (r == NULL)
		return -EINVAL;
	f = dprpc_rref_to_here_async(r, DPRPC_TIMEOUT_DEFAULT);
	if (f == NULL)
		return -rte_errno;
	if (dprpc_future_add_callback(f, fetched, req) != 0) {
		dprpc_future_put(f);
		return -ENOBUFS;
	}
	return DPRPC_DEFERRED;
}

static int
h_fork(struct dprpc_request *req, void *arg)
{
	struct dprpc_rref *r = slot_of(req);
	uint8_t d[DPRPC_RREF_FORK_SIZE];
	int rc;

	if (r == NULL)
		return -EINVAL;
	rc = dprpc_rref_fork(r, d, sizeof(d));
	return rc < 0 ? rc : dprpc_reply(req, d, sizeof(d));
}

static int
h_drop(struct dprpc_request *req, void *arg)
{
	size_t len;
	const uint32_t *s = dprpc_request_payload(req, &len);
	struct dprpc_rref *r;

	if (len != 4 || *s >= 16)
		return -EINVAL;
	r = atomic_exchange(&slots[*s], NULL);
	if (r == NULL)
		return -ENOENT;
	dprpc_rref_release(r);
	return dprpc_reply(req, NULL, 0);
}

static int
h_debug(struct dprpc_request *req, void *arg)
{
	struct dprpc_rref_debug d;

	dprpc_rref_debug_get(dprpc_request_agent(req), &d);
	return dprpc_reply(req, &d, sizeof(d));
}

/* Exit 0 after "quit" with nothing left: no RRef context, no request. */
static void
worker_main(unsigned int w)
{
	static const char *const names[] = {"b", "c"};
	struct dprpc_agent_conf c;
	struct dprpc_agent_usage u;
	struct dprpc_agent *ag;
	char vdev[200], tag[16];
	time_t end = time(NULL) + 120;
	int left;

	snprintf(tag, sizeof(tag), "rrw%u", w);
	if (dpt_eal_init(tag) < 0)
		_exit(10);
	snprintf(vdev, sizeof(vdev), "net_memif0,role=client,socket-abstract=no,socket=%s",
		sock_path[w]);
	for (int i = 0; i < 20000 && access(ready_path[w], F_OK) != 0; i++)
		usleep(1000);
	dprpc_agent_conf_init(&c);
	c.name = names[w];
	c.world = DPT_WORLD3;
	c.port.vdev = vdev;
	c.lcores.io = 1;
	c.lcores.nb_pool = 1;
	c.lcores.pool[0] = 2;
	ag = dprpc_agent_create(&c);
	if (ag == NULL)
		_exit(11);
	if (dprpc_register(ag, "make", dpt_echo, NULL, DPRPC_HANDLER_POOL) != 0 ||
		dprpc_register(ag, "big", h_big, NULL, DPRPC_HANDLER_POOL) != 0 ||
		dprpc_register(ag, "add", h_add, NULL, DPRPC_HANDLER_POOL) != 0 ||
		dprpc_register(ag, "adopt", h_adopt, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(ag, "fetch", h_fetch, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(ag, "fork", h_fork, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(ag, "drop", h_drop, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(ag, "debug", h_debug, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(ag, "quit", h_quit, NULL, DPRPC_HANDLER_INLINE) != 0)
		_exit(12);
	while (!atomic_load(&quit) && time(NULL) < end)
		usleep(1000);
	/* The last reply leaves (bounded, ~10 s: its io lcore may wait for a
	 * CPU), and the request with it. */
	for (int i = 0; i < 10000 && dprpc_agent_usage_get(ag, &u) == 0 && u.requests != 0; i++)
		usleep(1000);
	left = dprpc_rref_shutdown(ag, 10 * 1000 * 1000, DPRPC_RREF_REPORT_LEAKS);
	if (dprpc_agent_usage_get(ag, &u) != 0 || u.requests != 0)
		_exit(13);
	if (dprpc_agent_destroy(ag) != 0)
		_exit(14);
	dpt_eal_cleanup();
	_exit(!atomic_load(&quit) ? 15 : left != 0 ? 16 : 0);
}

/* --- the test process: worker a and the switch ------------------------- */

static int
port_start(int port)
{
	struct rte_eth_conf conf;

	memset(&conf, 0, sizeof(conf));
	if (rte_eth_dev_configure((uint16_t)port, 1, 1, &conf) != 0 ||
		rte_eth_rx_queue_setup((uint16_t)port, 0, 1024, SOCKET_ID_ANY, NULL, mp) != 0 ||
		rte_eth_tx_queue_setup((uint16_t)port, 0, 1024, SOCKET_ID_ANY, NULL) != 0)
		return -1;
	return rte_eth_dev_start((uint16_t)port);
}

/* Switch by destination MAC 02:00:00:00:00:0N -> port N-1; poll a. */
static int
bg_loop(void *unused)
{
	struct rte_mbuf *m[32];
	unsigned int idle = 0;

	(void)unused;
	while (!atomic_load(&stop_bg)) {
		unsigned int work = 0;

		for (int i = 0; i < 3; i++) {
			uint16_t n = rte_eth_rx_burst((uint16_t)sw_port[i], 0, m, 32);

			for (uint16_t k = 0; k < n; k++) {
				unsigned int to = rte_pktmbuf_mtod(m[k], uint8_t *)[5] - 1u;

				if (to >= 3 ||
					rte_eth_tx_burst((uint16_t)sw_port[to], 0, &m[k], 1) != 1)
					rte_pktmbuf_free(m[k]);
			}
			work += n;
		}
		if (dprpc_poll(a, 32) > 0)
			work++;
		if (work > 0)
			idle = 0;
		else if (++idle > 1000)
			usleep(20);
	}
	return 0;
}

static void
setup(void)
{
	struct dprpc_agent_conf c;
	char vdev[300];

	for (int w = 0; w < 2; w++) {
		snprintf(sock_path[w], sizeof(sock_path[w]), "/tmp/dprpc-rref-%d-%d.sock",
			(int)getpid(), w);
		snprintf(ready_path[w], sizeof(ready_path[w]), "/tmp/dprpc-rref-%d-%d.ready",
			(int)getpid(), w);
		unlink(sock_path[w]);
		unlink(ready_path[w]);
	}
	/* Fork before EAL: EAL state does not survive fork. */
	for (unsigned int w = 0; w < 2; w++) {
		pids[w] = fork();
		if (pids[w] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			worker_main(w); /* no cr_ call in a child */
		}
		cr_assert_geq(pids[w], 0);
	}
	cr_assert_geq(dpt_eal_init("rrm"), 0);
	mp = dpt_pool_and_pair("dpt_mp", 8191, &pair);
	cr_assert_not_null(mp);
	sw_port[0] = pair.port_b;
	for (int w = 0; w < 2; w++) {
		uint16_t port;
		char name[32];

		snprintf(name, sizeof(name), "net_memif%d", w);
		snprintf(vdev, sizeof(vdev), "%s,role=server,socket-abstract=no,socket=%s", name,
			sock_path[w]);
		cr_assert_eq(rte_dev_probe(vdev), 0);
		cr_assert_eq(rte_eth_dev_get_port_by_name(name, &port), 0);
		sw_port[w + 1] = port;
		cr_assert_eq(port_start(port), 0);
	}
	cr_assert_eq(port_start(pair.port_b), 0);
	for (int w = 0; w < 2; w++) {
		int fd = open(ready_path[w], O_CREAT | O_WRONLY, 0600);

		cr_assert_geq(fd, 0, "%s: %s", ready_path[w], strerror(errno));
		close(fd);
	}
	dprpc_agent_conf_init(&c);
	c.name = "a";
	c.world = DPT_WORLD3;
	c.port.id = pair.port_a;
	c.port.mbuf_pool = mp;
	a = dprpc_agent_create(&c);
	cr_assert_not_null(a, "%s", rte_strerror(rte_errno));
	atomic_store(&stop_bg, false);
	cr_assert_eq(rte_eal_remote_launch(bg_loop, NULL, 1), 0);
	/* The world forms (a worker process slower to start than a's
	 * peer_timeout_us is waited for, not declared down), then both
	 * workers answer before the test starts. */
	{
		char missing[64];

		cr_assert_eq(dprpc_world_wait(a, 60 * 1000 * 1000, missing, sizeof(missing)), 0,
			"never heard from %s", missing);
	}
	for (int w = 0; w < 2; w++) {
		int rc = -1;

		for (int i = 0; i < 200 && rc != 0; i++)
			rc = dprpc_rpc_sync(a, w == 0 ? "b" : "c", "debug", NULL, 0, 100 * 1000,
				NULL, NULL, NULL);
		cr_assert_eq(rc, 0, "worker %d never answered", w);
	}
}

static void
teardown(void)
{
	int status;

	if (a != NULL) {
		/* The workers' leak check needs a's users gone first. */
		cr_expect_eq(dprpc_rref_shutdown(a, 20 * 1000 * 1000, DPRPC_RREF_REPORT_LEAKS), 0);
		(void)dprpc_rpc_sync(a, "b", "quit", NULL, 0, 1000 * 1000, NULL, NULL, NULL);
		(void)dprpc_rpc_sync(a, "c", "quit", NULL, 0, 1000 * 1000, NULL, NULL, NULL);
	}
	for (int w = 0; w < 2; w++) {
		if (pids[w] <= 0)
			continue;
		status = 0;
		for (int i = 0; i < 5000; i++) {
			if (waitpid(pids[w], &status, WNOHANG) == pids[w])
				break;
			if (i == 4999) {
				kill(pids[w], SIGKILL);
				waitpid(pids[w], &status, 0);
			}
			usleep(1000);
		}
		cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			"worker %d exit status 0x%x", w, status);
		pids[w] = -1;
	}
	atomic_store(&stop_bg, true);
	rte_eal_wait_lcore(1);
	if (a != NULL) {
		cr_assert_eq(dprpc_agent_destroy(a), 0);
		a = NULL;
	}
	for (int i = 0; i < 3; i++) {
		(void)rte_eth_dev_stop((uint16_t)sw_port[i]);
		(void)rte_eth_dev_close((uint16_t)sw_port[i]);
	}
	dpt_eal_cleanup();
	for (int w = 0; w < 2; w++) {
		unlink(sock_path[w]);
		unlink(ready_path[w]);
	}
}

TestSuite(rref_memif, .init = setup, .fini = teardown, .timeout = 120);

static struct dprpc_rref_debug
remote_dbg(const char *w)
{
	struct dprpc_rref_debug d;
	size_t len = sizeof(d);

	cr_assert_eq(
		dprpc_rpc_sync(a, w, "debug", NULL, 0, DPRPC_TIMEOUT_DEFAULT, &d, &len, NULL), 0);
	return d;
}

static void
wait_remote_owner(const char *w, uint64_t owners, uint64_t forks)
{
	struct dprpc_rref_debug d;

	for (int i = 0; i < 2000; i++) {
		d = remote_dbg(w);
		if (d.num_owner_rrefs == owners && d.num_forks == forks)
			return;
		usleep(1000);
	}
	cr_assert_fail("%s owns %lu with %lu forks, expected %lu and %lu", w,
		(unsigned long)d.num_owner_rrefs, (unsigned long)d.num_forks, (unsigned long)owners,
		(unsigned long)forks);
}

static uint32_t
adopt(const char *w, const void *fork_data)
{
	uint32_t slot;
	size_t len = sizeof(slot);

	cr_assert_eq(dprpc_rpc_sync(a, w, "adopt", fork_data, DPRPC_RREF_FORK_SIZE,
			     DPRPC_TIMEOUT_DEFAULT, &slot, &len, NULL),
		0);
	return slot;
}

static uint64_t
fetch(const char *w, uint32_t slot)
{
	uint64_t v = 0;
	size_t len = sizeof(v);

	cr_assert_eq(
		dprpc_rpc_sync(a, w, "fetch", &slot, 4, DPRPC_TIMEOUT_DEFAULT, &v, &len, NULL), 0);
	return v;
}

static void
drop(const char *w, uint32_t slot)
{
	cr_assert_eq(
		dprpc_rpc_sync(a, w, "drop", &slot, 4, DPRPC_TIMEOUT_DEFAULT, NULL, NULL, NULL), 0);
}

Test(rref_memif, two_workers_create_fetch_proxy_release)
{
	uint64_t v = 7, two = 2, out;
	size_t len = sizeof(out);
	struct dprpc_rref *r = dprpc_remote(a, "b", "make", &v, 8, DPRPC_TIMEOUT_DEFAULT);

	cr_assert_not_null(r);
	len = sizeof(out);
	cr_assert_eq(dprpc_rref_to_here(r, DPRPC_TIMEOUT_DEFAULT, &out, &len, NULL), 0);
	cr_assert_eq(out, 7u);
	len = sizeof(out);
	cr_assert_eq(
		dprpc_rref_rpc_sync(r, "add", &two, 8, DPRPC_TIMEOUT_DEFAULT, &out, &len, NULL), 0);
	cr_assert_eq(out, 9u);
	wait_remote_owner("b", 1, 1);
	cr_assert_eq(dprpc_rref_release(r), 0);
	wait_remote_owner("b", 0, 0);
}

/* a creates on b, forks to c; c fetches and forks back to a; the three
 * references go in turn and b frees the value after the last. */
Test(rref_memif, three_workers_fork_chain)
{
	uint8_t d[DPRPC_RREF_FORK_SIZE];
	uint64_t v = 0xfeed;
	size_t len;
	uint32_t cs;
	struct dprpc_rref *ra = dprpc_remote(a, "b", "make", &v, 8, DPRPC_TIMEOUT_DEFAULT), *ra2;

	cr_assert_not_null(ra);
	cr_assert_eq(dprpc_rref_fork(ra, d, sizeof(d)), DPRPC_RREF_FORK_SIZE);
	cs = adopt("c", d);
	cr_assert_eq(fetch("c", cs), 0xfeedu);
	len = sizeof(d);
	cr_assert_eq(
		dprpc_rpc_sync(a, "c", "fork", &cs, 4, DPRPC_TIMEOUT_DEFAULT, d, &len, NULL), 0);
	ra2 = dprpc_rref_from_fork(a, d, len);
	cr_assert_not_null(ra2);
	len = sizeof(v);
	cr_assert_eq(dprpc_rref_to_here(ra2, DPRPC_TIMEOUT_DEFAULT, &v, &len, NULL), 0);
	cr_assert_eq(v, 0xfeedu);
	wait_remote_owner("b", 1, 3);
	dprpc_rref_release(ra);
	wait_remote_owner("b", 1, 2);
	drop("c", cs);
	wait_remote_owner("b", 1, 1);
	dprpc_rref_release(ra2);
	wait_remote_owner("b", 0, 0);
}

/* The owner in one child, a user in the other. */
Test(rref_memif, owner_and_user_in_the_two_children)
{
	uint8_t d[DPRPC_RREF_FORK_SIZE];
	uint64_t v = 99;
	uint32_t bs;
	struct dprpc_rref *r = dprpc_remote(a, "c", "make", &v, 8, DPRPC_TIMEOUT_DEFAULT);

	cr_assert_not_null(r);
	cr_assert_eq(dprpc_rref_fork(r, d, sizeof(d)), DPRPC_RREF_FORK_SIZE);
	cr_assert_eq(dprpc_rref_release(r), 0); /* G2 keeps a's reference */
	bs = adopt("b", d);
	cr_assert_eq(fetch("b", bs), 99u);
	wait_remote_owner("c", 1, 1);
	drop("b", bs);
	wait_remote_owner("c", 0, 0);
}

/* An 8 MiB value (max_msg_size) made on b by a's remote(), fetched
 * byte-exact by a and by c, a user forked to it, across processes. */
Test(rref_memif, value_of_max_msg_size_across_processes)
{
	static uint8_t out[DPRPC_MAX_MSG_DEFAULT];
	const uint64_t n = DPRPC_MAX_MSG_DEFAULT;
	uint8_t d[DPRPC_RREF_FORK_SIZE];
	size_t len = sizeof(out), i;
	uint32_t cs;
	struct dprpc_rref *r = dprpc_remote(a, "b", "big", &n, 8, DPRPC_TIMEOUT_DEFAULT);

	cr_assert_not_null(r);
	cr_assert_eq(dprpc_rref_to_here(r, 30 * 1000 * 1000, out, &len, NULL), 0);
	cr_assert_eq(len, n);
	for (i = 0; i < n && out[i] == big_byte(i); i++)
		;
	cr_assert_eq(i, n, "byte %zu differs", i);
	cr_assert_eq(dprpc_rref_fork(r, d, sizeof(d)), DPRPC_RREF_FORK_SIZE);
	cs = adopt("c", d);
	memset(out, 0, sizeof(out));
	len = sizeof(out);
	cr_assert_eq(dprpc_rpc_sync(a, "c", "fetch", &cs, 4, 30 * 1000 * 1000, out, &len, NULL), 0);
	cr_assert_eq(len, n);
	for (i = 0; i < n && out[i] == big_byte(i); i++)
		;
	cr_assert_eq(i, n, "byte %zu differs", i);
	wait_remote_owner("b", 1, 2);
	drop("c", cs);
	cr_assert_eq(dprpc_rref_release(r), 0);
	wait_remote_owner("b", 0, 0);
}
