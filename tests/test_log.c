/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dprpc's log types, as a DPDK user sees them: one per module under its
 * own name (dprpc.dataplane, dprpc.rref, dprpc.future), INFO by default,
 * reached by EAL's --log-level patterns, and each module's messages logged
 * under its own type.  Messages are captured from EAL's log stream with
 * the type and level rte_log() was called with.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rte_errno.h>
#include <rte_log.h>

#include "dpt.h"
#include "fut_internal.h"

static const char *const types[] = {"dprpc.dataplane", "dprpc.rref", "dprpc.future"};

/* EAL as dpt_eal_init() starts it, with @log_level as one more
 * --log-level option (NULL: none). */
static void
eal_up(const char *log_level)
{
	/* EAL takes char **: writable copies of the fixed arguments. */
	char fixed[][32] = {"dprpc-test", "--no-pci", "--no-huge", "-m", "256",
		"--huge-unlink=never", "--no-shconf", "--no-telemetry", "--lcores=0@0,1@1,2@1,3@0",
		"--log-level=lib.eal:error"};
	char prefix[64], level[64];
	char *argv[16];
	int argc = 0;

	for (unsigned int i = 0; i < RTE_DIM(fixed); i++)
		argv[argc++] = fixed[i];
	snprintf(prefix, sizeof(prefix), "--file-prefix=dpt_log_%d", (int)getpid());
	argv[argc++] = prefix;
	if (log_level != NULL) {
		snprintf(level, sizeof(level), "--log-level=%s", log_level);
		argv[argc++] = level;
	}
	argv[argc] = NULL;
	cr_assert_geq(dprpc_eal_init(argc, argv), 0);
}

/* The id of the log type called @name, which must be registered. */
static int
type_of(const char *name)
{
	char *list = NULL, want[64];
	size_t len = 0;
	FILE *f = open_memstream(&list, &len);
	bool listed;

	cr_assert_not_null(f);
	rte_log_list_types(f, "|");
	fclose(f);
	snprintf(want, sizeof(want), "|%s\n", name);
	listed = strstr(list, want) != NULL;
	free(list);
	cr_assert(listed, "no log type called %s", name);
	/* A registered name gives back its id, nothing changed. */
	return rte_log_register(name);
}

/* EAL's log stream, captured: each message with its type and level. */
struct msg {
	int type, level;
	char text[200];
};
static struct msg msgs[64];
static unsigned int nb_msgs;
static FILE *capture;
/* The agents of a test, and an RRef it holds: teardown's to release if
 * the test stops half-way. */
static struct dprpc_agent *ag[2];
static struct dprpc_rref *held;

/* rte_vlog() writes one message and flushes: one call per message, made
 * inside rte_log(), where its type and level are readable. */
static ssize_t
capture_write(void *cookie, const char *buf, size_t size)
{
	(void)cookie;
	if (nb_msgs < RTE_DIM(msgs)) {
		struct msg *m = &msgs[nb_msgs++];

		m->type = rte_log_cur_msg_logtype();
		m->level = rte_log_cur_msg_loglevel();
		snprintf(m->text, sizeof(m->text), "%.*s", (int)size, buf);
	}
	return (ssize_t)size;
}

static void
capture_start(void)
{
	cookie_io_functions_t io = {.write = capture_write};

	nb_msgs = 0;
	capture = fopencookie(NULL, "w", io);
	cr_assert_not_null(capture);
	cr_assert_eq(rte_openlog_stream(capture), 0);
}

/* The captured messages that contain @needle: how many, the last in *m. */
static unsigned int
captured(const char *needle, const struct msg **m)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < nb_msgs; i++) {
		if (strstr(msgs[i].text, needle) != NULL) {
			*m = &msgs[i];
			n++;
		}
	}
	return n;
}

static void
teardown(void)
{
	if (held != NULL)
		dprpc_rref_release(held);
	for (unsigned int i = 0; i < RTE_DIM(ag); i++)
		if (ag[i] != NULL)
			cr_expect_eq(dprpc_agent_destroy(ag[i]), 0);
	if (capture != NULL) {
		(void)rte_openlog_stream(NULL);
		fclose(capture);
		capture = NULL;
	}
	dpt_eal_cleanup();
}

TestSuite(log, .fini = teardown, .timeout = 60);

/* Each module's type exists under its name, at INFO unless told. */
Test(log, types_are_named_and_info_by_default)
{
	eal_up(NULL);
	for (unsigned int i = 0; i < RTE_DIM(types); i++)
		cr_expect_eq(rte_log_get_level(type_of(types[i])), (int)RTE_LOG_INFO, "%s level %d",
			types[i], rte_log_get_level(type_of(types[i])));
}

/* --log-level='dprpc.*:debug' (a pattern) reaches every module's type. */
Test(log, pattern_sets_every_module_to_debug)
{
	eal_up("dprpc.*:debug");
	for (unsigned int i = 0; i < RTE_DIM(types); i++)
		cr_expect_eq(rte_log_get_level(type_of(types[i])), (int)RTE_LOG_DEBUG,
			"%s level %d", types[i], rte_log_get_level(type_of(types[i])));
	cr_expect_eq(rte_log_get_level(RTE_LOGTYPE_EAL), (int)RTE_LOG_ERR);
}

/* One module by its name; the others keep their level. */
Test(log, one_module_by_name)
{
	eal_up("dprpc.rref:debug");
	cr_expect_eq(rte_log_get_level(type_of("dprpc.rref")), (int)RTE_LOG_DEBUG);
	cr_expect_eq(rte_log_get_level(type_of("dprpc.dataplane")), (int)RTE_LOG_INFO);
	cr_expect_eq(rte_log_get_level(type_of("dprpc.future")), (int)RTE_LOG_INFO);
}

/* The dataplane's error, under dprpc.dataplane: silenced with that type
 * alone. */
Test(log, dataplane_messages_are_dprpc_dataplane)
{
	struct dprpc_agent_conf c;
	struct dpt_ring_pair pair;
	const struct msg *m = NULL;
	int dp;

	eal_up("dprpc.*:debug");
	cr_assert_eq(dpt_ring_pair(&pair), 0);
	dp = type_of("dprpc.dataplane");
	capture_start();
	dprpc_agent_conf_init(&c);
	c.name = "zz";
	c.world = DPT_WORLD2;
	c.port.id = pair.port_a;
	cr_assert_null(dprpc_agent_create(&c));
	cr_assert_eq(rte_errno, ENOENT);
	cr_assert_eq(captured("agent zz: not in the world map", &m), 1u);
	cr_expect_eq(m->type, dp, "logged under type %d, not dprpc.dataplane (%d)", m->type, dp);
	cr_expect_eq(m->level, (int)RTE_LOG_ERR);
	/* dprpc.dataplane below ERR: the same error is not logged again. */
	cr_assert_eq(rte_log_set_level((uint32_t)dp, RTE_LOG_CRIT), 0);
	cr_assert_null(dprpc_agent_create(&c));
	cr_assert_eq(captured("agent zz: not in the world map", &m), 1u);
}

/* A value out of range fails the creation with EINVAL, the message naming
 * the field and its range; a conf nobody filled says so. */
Test(log, a_range_error_names_the_field_and_its_range)
{
	struct dprpc_agent_conf c;
	struct dpt_ring_pair pair;
	const struct msg *m = NULL;

	eal_up(NULL);
	cr_assert_eq(dpt_ring_pair(&pair), 0);
	capture_start();
	dprpc_agent_conf_init(&c);
	c.name = "a";
	c.world = DPT_WORLD2;
	c.port.id = pair.port_a;
	c.calls.credits = 0;
	cr_assert_null(dprpc_agent_create(&c));
	cr_assert_eq(rte_errno, EINVAL);
	cr_assert_eq(captured("agent a: conf.calls.credits = 0 is out of range [1, 1024]", &m), 1u);
	c.calls.credits = 64;
	c.serve.handler_queue_max = 4096;
	cr_assert_null(dprpc_agent_create(&c));
	cr_assert_eq(
		captured("agent a: conf.serve.handler_queue_max = 4096 is out of range [1, 4095]",
			&m),
		1u);
	c.serve.handler_queue_max = 16;
	c.serve.peer_requests_max = c.serve.max_requests + 1;
	cr_assert_null(dprpc_agent_create(&c));
	cr_assert_eq(
		captured("agent a: conf.serve.peer_requests_max = 1025 is out of range [0, 1024]",
			&m),
		1u);
	c.serve.peer_requests_max = DPRPC_CONF_AUTO;
	c.calls.timeout_us = DPRPC_TIMEOUT_DEFAULT; /* a call's, not the agent's */
	cr_assert_null(dprpc_agent_create(&c));
	cr_assert_eq(
		captured("agent a: conf.calls.timeout_us = 18446744073709551615 is out of range "
			 "[0, 18446744073709551614]",
			&m),
		1u);
	c.calls.timeout_us = 0;
	c.max_workers = 1; /* the map has two */
	cr_assert_null(dprpc_agent_create(&c));
	cr_assert_eq(captured("agent a: conf.max_workers = 1 is out of range [2, 64]", &m), 1u);
	memset(&c, 0, sizeof(c));
	c.name = "a";
	c.world = DPT_WORLD2;
	cr_assert_null(dprpc_agent_create(&c));
	cr_assert_eq(rte_errno, EINVAL);
	cr_assert_eq(captured("agent a: conf not filled by dprpc_agent_conf_init()", &m), 1u);
}

/* rref/'s leak report, under dprpc.rref: a holds a user of b's RRef when
 * b shuts its RRefs down. */
Test(log, rref_messages_are_dprpc_rref)
{
	struct dprpc_agent_conf c;
	struct dpt_ring_pair pair;
	struct rte_mempool *mp;
	const struct msg *m = NULL;
	char out[8];
	size_t out_len = sizeof(out);
	int rr;

	eal_up(NULL);
	rr = type_of("dprpc.rref");
	mp = dpt_pool_and_pair("dpt_log", 4095, &pair);
	cr_assert_not_null(mp);
	dprpc_agent_conf_init(&c);
	c.world = DPT_WORLD2;
	c.port.mbuf_pool = mp;
	c.name = "a";
	c.port.id = pair.port_a;
	c.lcores.io = 1;
	ag[0] = dprpc_agent_create(&c);
	cr_assert_not_null(ag[0], "%s", rte_strerror(rte_errno));
	c.name = "b";
	c.port.id = pair.port_b;
	c.lcores.io = 2;
	ag[1] = dprpc_agent_create(&c);
	cr_assert_not_null(ag[1], "%s", rte_strerror(rte_errno));
	cr_assert_eq(dprpc_register(ag[1], "make", dpt_echo, NULL, DPRPC_HANDLER_INLINE), 0);
	held = dprpc_remote(ag[0], "b", "make", "v", 1, DPRPC_TIMEOUT_DEFAULT);
	cr_assert_not_null(held, "%s", rte_strerror(rte_errno));
	cr_assert_eq(dprpc_rref_to_here(held, DPRPC_TIMEOUT_DEFAULT, out, &out_len, NULL), 0);

	capture_start();
	cr_assert_eq(dprpc_rref_shutdown(ag[1], 20000, DPRPC_RREF_REPORT_LEAKS), 1);
	cr_assert_eq(captured("agent b: 1 RRef contexts left at shutdown", &m), 1u);
	cr_expect_eq(m->type, rr, "logged under type %d, not dprpc.rref (%d)", m->type, rr);
	cr_expect_eq(m->level, (int)RTE_LOG_WARNING);

	dprpc_rref_release(held);
	held = NULL;
	cr_assert_eq(dprpc_rref_shutdown(ag[0], 2000000, DPRPC_RREF_REPORT_LEAKS), 0);
	cr_assert_eq(dprpc_rref_shutdown(ag[1], 2000000, DPRPC_RREF_REPORT_LEAKS), 0);
	for (unsigned int i = 0; i < RTE_DIM(ag); i++) {
		cr_assert_eq(dprpc_agent_destroy(ag[i]), 0);
		ag[i] = NULL;
	}
	dpt_ring_drain(pair.ab);
	dpt_ring_drain(pair.ba);
	cr_expect_eq(rte_mempool_in_use_count(mp), 0u, "mbufs leaked");
}

/* future/'s leak warning, under dprpc.future. */
Test(log, future_messages_are_dprpc_future)
{
	struct dprpc_future_pool *pool;
	struct dprpc_future *f;
	const struct msg *m = NULL;

	eal_up(NULL);
	pool = fut_pool_create_mempool("dpt_log_fut", 8, 8, SOCKET_ID_ANY);
	cr_assert_not_null(pool, "%s", rte_strerror(rte_errno));
	f = dprpc_future_new(pool);
	cr_assert_not_null(f);
	capture_start();
	/* A future still held: the pool is leaked, and that is logged. */
	dprpc_future_pool_release(pool);
	cr_assert_eq(captured("1 futures still held, future pool leaked", &m), 1u);
	cr_expect_eq(m->type, type_of("dprpc.future"),
		"logged under type %d, not dprpc.future (%d)", m->type, type_of("dprpc.future"));
	cr_expect_eq(m->level, (int)RTE_LOG_WARNING);
	dprpc_future_put(f);
}
