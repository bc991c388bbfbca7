/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two processes over a memif pair: the test forks a server worker (its own
 * EAL, memif server role, io lcore), then calls it as the client.  The
 * server stops when told to ("quit") or after a bounded time.
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

#include "dpt.h"

static char sock_path[108];
static pid_t server_pid = -1;
static struct dprpc_agent *cli;
static atomic_bool quit;

static int
h_quit(struct dprpc_request *req, void *arg)
{
	atomic_store(&quit, true);
	return dprpc_reply(req, "bye", 3);
}

static int
h_fail(struct dprpc_request *req, void *arg)
{
	return dprpc_reply_error(req, -ENOTSUP, "server says no");
}

/* 64-bit FNV-1a of @len bytes. */
static uint64_t
fnv64(const uint8_t *p, size_t len)
{
	uint64_t h = 14695981039346656037ull;

	while (len-- > 0) {
		h ^= *p++;
		h *= 1099511628211ull;
	}
	return h;
}

/* Answers the checksum of its request. */
static int
h_sum(struct dprpc_request *req, void *arg)
{
	size_t len;
	const uint8_t *p = dprpc_request_payload(req, &len);
	uint64_t h = fnv64(p, len);

	(void)arg;
	return dprpc_reply(req, &h, sizeof(h));
}

/* The server process: runs until "quit" or 60 s; exit status 0 when it
 * shut down cleanly with nothing leaked. */
static void
server_main(void)
{
	struct dprpc_agent_conf c;
	struct dprpc_agent_usage u;
	struct dprpc_agent *srv;
	char vdev[200];
	time_t end = time(NULL) + 60;

	if (dpt_eal_init("msrv") < 0)
		_exit(10);
	snprintf(vdev, sizeof(vdev), "net_memif0,role=server,socket-abstract=no,socket=%s",
		sock_path);
	dprpc_agent_conf_init(&c);
	c.name = "b";
	c.world = DPT_WORLD2;
	c.port.vdev = vdev;
	c.lcores.io = 1;
	srv = dprpc_agent_create(&c);
	if (srv == NULL)
		_exit(11);
	if (dprpc_register(srv, "echo", dpt_echo, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(srv, "quit", h_quit, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(srv, "fail", h_fail, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(srv, "sum", h_sum, NULL, DPRPC_HANDLER_INLINE) != 0)
		_exit(12);
	while (!atomic_load(&quit) && time(NULL) < end)
		usleep(1000);
	/* The last reply leaves (bounded, ~10 s: its io lcore may wait for a
	 * CPU), and the request with it. */
	for (int i = 0; i < 10000 && dprpc_agent_usage_get(srv, &u) == 0 && u.requests != 0; i++)
		usleep(1000);
	if (dprpc_agent_usage_get(srv, &u) != 0 || u.requests != 0)
		_exit(13);
	if (dprpc_agent_destroy(srv) != 0)
		_exit(14);
	dpt_eal_cleanup();
	_exit(atomic_load(&quit) ? 0 : 15);
}

static void
setup(void)
{
	struct dprpc_agent_conf c;
	char vdev[200];

	snprintf(sock_path, sizeof(sock_path), "/tmp/dprpc-test-%d.sock", (int)getpid());
	unlink(sock_path);
	/* Fork before EAL: EAL state does not survive fork. */
	server_pid = fork();
	if (server_pid == 0) {
		/* Never outlive the test process.  No cr_ call in the child:
		 * it would report to the runner as a process it does not know. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		server_main();
	}
	cr_assert_geq(server_pid, 0);
	cr_assert_geq(dpt_eal_init("mcli"), 0);
	snprintf(vdev, sizeof(vdev), "net_memif0,role=client,socket-abstract=no,socket=%s",
		sock_path);
	dprpc_agent_conf_init(&c);
	c.name = "a";
	c.world = DPT_WORLD2;
	c.port.vdev = vdev;
	/* The memif client's probe fails until the server listens. */
	for (int i = 0; i < 20000 && access(sock_path, F_OK) != 0; i++)
		usleep(1000);
	cli = dprpc_agent_create(&c);
	if (cli == NULL) {
		kill(server_pid, SIGKILL);
		waitpid(server_pid, NULL, 0);
		server_pid = -1;
		unlink(sock_path);
	}
	cr_assert_not_null(cli, "%s", rte_strerror(rte_errno));
	cr_assert_eq(dprpc_agent_wait_link(cli, 20 * 1000 * 1000), 0, "memif link never came up");
}

static void
teardown(void)
{
	struct dprpc_agent_usage u;
	int status = 0;

	if (cli != NULL) {
		/* Stop the server whatever happened in the test. */
		(void)dprpc_rpc_sync(cli, "b", "quit", NULL, 0, 2000 * 1000, NULL, NULL, NULL);
		cr_assert_eq(dprpc_agent_usage_get(cli, &u), 0);
		cr_expect_eq(u.futures, 0u);
		cr_expect_eq(u.calls, 0u);
		cr_assert_eq(dprpc_agent_destroy(cli), 0);
		cli = NULL;
		dpt_eal_cleanup();
	}
	if (server_pid > 0) {
		for (int i = 0; i < 5000; i++) {
			if (waitpid(server_pid, &status, WNOHANG) == server_pid)
				break;
			if (i == 4999) {
				kill(server_pid, SIGKILL);
				waitpid(server_pid, &status, 0);
			}
			usleep(1000);
		}
		cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "server exit status 0x%x",
			status);
		server_pid = -1;
	}
	unlink(sock_path);
}

TestSuite(rpc_memif, .init = setup, .fini = teardown, .timeout = 90);

Test(rpc_memif, sync_calls_of_every_size_round_trip)
{
	static uint8_t buf[DPRPC_MAX_FRAME_PAYLOAD], out[DPRPC_MAX_FRAME_PAYLOAD];
	size_t len, out_len;
	unsigned int i;

	for (len = 0; len <= DPRPC_MAX_FRAME_PAYLOAD; len += 37) {
		for (i = 0; i < len; i++)
			buf[i] = (uint8_t)(len + i);
		out_len = sizeof(out);
		cr_assert_eq(dprpc_rpc_sync(
				     cli, "b", "echo", buf, len, 5000 * 1000, out, &out_len, NULL),
			0, "size %zu", len);
		cr_assert_eq(out_len, len);
		cr_assert_arr_eq(out, buf, len);
	}
}

/* 1 KiB, 64 KiB, 1 MiB and 8 MiB across processes: the server checksums
 * what it received, and the echo comes back byte-exact. */
Test(rpc_memif, large_messages_checksummed)
{
	static const size_t sizes[] = {1024, 64 * 1024, 1024 * 1024, 8 * 1024 * 1024};
	uint8_t *buf = malloc(sizes[3]), *out = malloc(sizes[3]);
	struct dprpc_agent_stats st;
	struct dprpc_agent_usage u;
	size_t i, j, out_len;
	uint64_t sum;

	cr_assert(buf != NULL && out != NULL);
	for (i = 0; i < RTE_DIM(sizes); i++) {
		for (j = 0; j < sizes[i]; j++)
			buf[j] = (uint8_t)(j * 31 + i + (j >> 11));
		out_len = sizeof(sum);
		cr_assert_eq(dprpc_rpc_sync(cli, "b", "sum", buf, sizes[i], 20 * 1000 * 1000, &sum,
				     &out_len, NULL),
			0, "sum of %zu bytes", sizes[i]);
		cr_assert_eq(sum, fnv64(buf, sizes[i]), "checksum of %zu bytes", sizes[i]);
		out_len = sizes[3];
		cr_assert_eq(dprpc_rpc_sync(cli, "b", "echo", buf, sizes[i], 20 * 1000 * 1000, out,
				     &out_len, NULL),
			0, "echo of %zu bytes", sizes[i]);
		cr_assert_eq(out_len, sizes[i]);
		cr_assert_eq(
			fnv64(out, out_len), fnv64(buf, sizes[i]), "echo of %zu bytes", sizes[i]);
	}
	cr_assert_eq(dprpc_agent_stats_get(cli, &st), 0);
	cr_assert_eq(st.msgs_sent, 2 * (RTE_DIM(sizes) - 1)); /* 1 KiB fits a frame */
	cr_assert_eq(st.msgs_received, RTE_DIM(sizes) - 1);
	cr_assert_eq(dprpc_agent_usage_get(cli, &u), 0);
	cr_assert_eq(u.messages, 0u);
	free(buf);
	free(out);
}

Test(rpc_memif, async_window_of_32)
{
	struct dprpc_future *fs[32];
	unsigned int r, i;

	for (r = 0; r < 100; r++) {
		for (i = 0; i < 32; i++) {
			uint64_t v = (uint64_t)r << 32 | i;

			fs[i] = dprpc_rpc_async(cli, "b", "echo", &v, sizeof(v), 5000 * 1000);
			cr_assert_not_null(fs[i], "%s", rte_strerror(rte_errno));
		}
		cr_assert_eq(dprpc_future_wait_all(fs, 32, 0), 0);
		for (i = 0; i < 32; i++) {
			size_t len;
			const uint64_t *v = dprpc_future_value(fs[i], &len);

			cr_assert_eq(len, sizeof(*v));
			cr_assert_eq((uintptr_t)v % DPRPC_PAYLOAD_ALIGN, 0u, "value at %p",
				(const void *)v);
			cr_assert_eq(*v, (uint64_t)r << 32 | i);
			dprpc_future_put(fs[i]);
		}
	}
}

Test(rpc_memif, errors_cross_processes)
{
	struct dprpc_error err;

	cr_assert_eq(dprpc_rpc_sync(cli, "b", "missing", NULL, 0, 5000 * 1000, NULL, NULL, &err),
		-ENOENT);
	cr_assert_eq(err.origin, 1);
	cr_assert_eq(
		dprpc_rpc_sync(cli, "b", "fail", NULL, 0, 5000 * 1000, NULL, NULL, &err), -ENOTSUP);
	cr_assert_str_eq(err.msg, "server says no");
	cr_assert_eq(err.origin, 1);
}

/* The server process dies with calls in flight that have no timeout of
 * their own: they fail with -EHOSTDOWN within the liveness bound (1 s by
 * default), never hang. */
Test(rpc_memif, killed_server_fails_pending_calls_with_hostdown)
{
	struct dprpc_future *fs[8];
	unsigned int i;
	int status;

	cr_assert_eq(dprpc_rpc_sync(cli, "b", "echo", "x", 1, 5000 * 1000, NULL, NULL, NULL), 0);
	cr_assert_eq(kill(server_pid, SIGKILL), 0);
	cr_assert_eq(waitpid(server_pid, &status, 0), server_pid);
	dpt_remove_runtime_dir("msrv", server_pid);
	server_pid = -1;
	for (i = 0; i < 8; i++) {
		fs[i] = dprpc_rpc_async(cli, "b", "echo", "y", 1, DPRPC_TIMEOUT_NONE);
		cr_assert_not_null(fs[i], "%s", rte_strerror(rte_errno));
	}
	for (i = 0; i < 8; i++) {
		cr_assert_eq(dprpc_future_wait(fs[i], 0), -EHOSTDOWN);
		dprpc_future_put(fs[i]);
	}
	cr_assert_eq(dprpc_worker_state(cli, 1), DPRPC_PEER_DOWN);
	cr_assert_null(dprpc_rpc_async(cli, "b", "echo", "z", 1, 0));
	cr_assert_eq(rte_errno, EHOSTDOWN);
}
