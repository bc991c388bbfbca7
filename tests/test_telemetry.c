/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The telemetry commands, asked over EAL's real telemetry socket, as
 * dpdk-telemetry.py would.
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rte_eal.h>
#include <rte_errno.h>

#include "dpt.h"

static struct dprpc_agent *agent;
static struct rte_mempool *mp;
static int sock = -1;

static void
setup(void)
{
	struct dpt_ring_pair pair;
	struct dprpc_agent_conf c;
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	/* EAL takes char **: writable copies of the fixed arguments. */
	char a0[] = "dprpc-test", a1[] = "--no-pci", a2[] = "--no-huge", a3[] = "-m", a4[] = "128",
	     a5[] = "--no-shconf", a7[] = "-l", a8[] = "0", a9[] = "--log-level=lib.eal:error";
	char prefix[64], buf[4096];
	char *argv[] = {a0, a1, a2, a3, a4, a5, prefix, a7, a8, a9, NULL};

	snprintf(prefix, sizeof(prefix), "--file-prefix=dpt_tel_%d", (int)getpid());
	cr_assert_geq(dprpc_eal_init(10, argv), 0);
	mp = dpt_pool_and_pair("dpt_tel", 2047, &pair);
	cr_assert_not_null(mp);
	dprpc_agent_conf_init(&c);
	c.name = "a";
	c.world = DPT_WORLD2;
	c.port.id = pair.port_a;
	c.port.mbuf_pool = mp;
	agent = dprpc_agent_create(&c);
	cr_assert_not_null(agent, "%s", rte_strerror(rte_errno));
	cr_assert_eq(dprpc_register(agent, "echo", dpt_echo, NULL, DPRPC_HANDLER_INLINE), 0);

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/dpdk_telemetry.v2",
		rte_eal_get_runtime_dir());
	sock = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	cr_assert_geq(sock, 0);
	cr_assert_eq(
		connect(sock, (struct sockaddr *)&sun, sizeof(sun)), 0, "connect %s", sun.sun_path);
	/* The server greets with its version and limits first. */
	cr_assert_gt(read(sock, buf, sizeof(buf)), 0);
}

static void
teardown(void)
{
	if (sock >= 0)
		close(sock);
	cr_assert_eq(dprpc_agent_destroy(agent), 0);
	dpt_eal_cleanup();
}

static void
ask(const char *cmd, char *out, size_t size)
{
	ssize_t n;

	cr_assert_eq(write(sock, cmd, strlen(cmd)), (ssize_t)strlen(cmd));
	n = read(sock, out, size - 1);
	cr_assert_gt(n, 0);
	out[n] = '\0';
}

TestSuite(telemetry, .init = setup, .fini = teardown, .timeout = 30);

Test(telemetry, lists_agents_and_reports_counters)
{
	char out[4096];

	for (int i = 0; i < 3; i++)
		cr_assert_eq(dprpc_rpc_sync(agent, "a", "echo", "x", 1, 0, NULL, NULL, NULL), 0);
	cr_assert_eq(dprpc_rpc_sync(agent, "a", "nope", NULL, 0, 0, NULL, NULL, NULL), -ENOENT);
	ask("/dprpc/agents", out, sizeof(out));
	cr_assert_str_eq(out, "{\"/dprpc/agents\":[\"a\"]}");
	ask("/dprpc/stats,a", out, sizeof(out));
	cr_assert_not_null(strstr(out, "\"calls_ok\":3,"), "%s", out);
	cr_assert_not_null(strstr(out, "\"calls_failed\":1,"), "%s", out);
	cr_assert_not_null(strstr(out, "\"requests_unknown\":1,"), "%s", out);
	cr_assert_not_null(strstr(out, "\"drop_truncated\":0"), "%s", out);
	/* What the agent holds for its callers, and its refusals. */
	cr_assert_not_null(strstr(out, "\"keeps_refused\":0,"), "%s", out);
	cr_assert_not_null(strstr(out, "\"kept_mbufs\":0,"), "%s", out);
	cr_assert_not_null(strstr(out, "\"msg_bytes\":0,"), "%s", out);
	cr_assert_not_null(strstr(out, "\"drop_over_budget\":0"), "%s", out);
	/* Unknown agent or no name: an error answer (null), not a crash. */
	ask("/dprpc/stats,zz", out, sizeof(out));
	cr_assert_str_eq(out, "{\"/dprpc/stats\":null}");
	ask("/dprpc/stats", out, sizeof(out));
	cr_assert_str_eq(out, "{\"/dprpc/stats\":null}");
}
