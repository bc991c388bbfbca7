/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every exported function called with bad arguments: NULL pointers, ranks,
 * queues, modes and sizes out of range.  Each must return its documented
 * error (-EINVAL, or NULL / a sentinel with rte_errno set), never crash.
 *
 * One test per exported symbol, named after it; tests/misuse_coverage.sh
 * checks that every dprpc_* symbol the shared library exports has one, so
 * a new public function without a misuse test fails the suite.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include <rte_errno.h>

#include <dprpc/dprpc.h>

#include "dpt.h"

static struct dprpc_agent *agent;
static struct rte_mempool *mp;
static struct dprpc_future_pool *fpool;

static void
setup(void)
{
	struct dpt_ring_pair pair;
	struct dprpc_agent_conf c;

	cr_assert_geq(dpt_eal_init("misuse"), 0);
	mp = dpt_pool_and_pair("dpt_misuse", 2047, &pair);
	cr_assert_not_null(mp);
	dprpc_agent_conf_init(&c);
	c.name = "a";
	c.world = DPT_WORLD2;
	c.port.id = (uint16_t)pair.port_a;
	c.port.mbuf_pool = mp;
	agent = dprpc_agent_create(&c);
	cr_assert_not_null(agent, "%s", rte_strerror(rte_errno));
	fpool = dprpc_future_pool_create(8, 8);
	cr_assert_not_null(fpool);
}

static void
teardown(void)
{
	dprpc_future_pool_release(fpool);
	cr_assert_eq(dprpc_agent_destroy(agent), 0);
	dpt_eal_cleanup();
}

TestSuite(misuse, .init = setup, .fini = teardown, .timeout = 60);

/* A call that must fail with NULL and rte_errno @e. */
#define assert_null_errno(call, e)                                               \
	do {                                                                     \
		rte_errno = 0;                                                   \
		cr_assert_null((call), #call);                                   \
		cr_assert_eq(rte_errno, (e), #call ": rte_errno %d", rte_errno); \
	} while (0)

static int
h_nop(struct dprpc_request *req, void *arg)
{
	(void)arg;
	return dprpc_reply(req, NULL, 0);
}

static void
cb_nop(struct dprpc_future *f, void *arg)
{
	(void)f;
	(void)arg;
}

static int
then_nop(struct dprpc_future *src, struct dprpc_future *dst, void *arg)
{
	(void)src;
	(void)dst;
	(void)arg;
	return 0;
}

/* --- EAL and agents ---------------------------------------------------- */

Test(misuse, dprpc_eal_init)
{
	char *argv[] = {NULL};

	cr_assert_eq(dprpc_eal_init(1, NULL), -EINVAL);
	cr_assert_eq(dprpc_eal_init(-1, argv), -EINVAL);
	cr_assert_eq(dprpc_eal_init(0, argv), -EINVAL);
}

Test(misuse, dprpc_eal_local_conf_init)
{
	struct dprpc_eal_local_conf c;

	dprpc_eal_local_conf_init(NULL); /* must not crash */
	memset(&c, 0xff, sizeof(c));
	dprpc_eal_local_conf_init(&c);
	cr_assert(c.tag == NULL && c.mem_mb == DPRPC_EAL_LOCAL_MEM_DEFAULT_MB && c.lcores == 2 &&
		  c.args == NULL);
}

Test(misuse, dprpc_eal_init_local)
{
	struct dprpc_eal_local_conf c;
	char longer[1100];

	dprpc_eal_local_conf_init(&c);
	c.tag = "a/b"; /* not a file name's */
	cr_assert_eq(dprpc_eal_init_local(&c), -EINVAL);
	c.tag = "";
	cr_assert_eq(dprpc_eal_init_local(&c), -EINVAL);
	c.tag = "0123456789012345678901234567890123"; /* above 32 */
	cr_assert_eq(dprpc_eal_init_local(&c), -EINVAL);
	c.tag = NULL;
	c.lcores = 3;
	cr_assert_eq(dprpc_eal_init_local(&c), -EINVAL);
	c.lcores = 0;
	cr_assert_eq(dprpc_eal_init_local(&c), -EINVAL);
	c.lcores = 2;
	c.mem_mb = 0;
	cr_assert_eq(dprpc_eal_init_local(&c), -EINVAL);
	c.mem_mb = DPRPC_EAL_LOCAL_MEM_DEFAULT_MB;
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	c.args = longer;
	cr_assert_eq(dprpc_eal_init_local(&c), -EINVAL);
	/* 49 arguments. */
	for (unsigned int i = 0; i < 49; i++)
		memcpy(longer + 2 * i, "x ", 2);
	longer[98] = '\0';
	cr_assert_eq(dprpc_eal_init_local(&c), -EINVAL);
	/* EAL is up (the fixture's): nothing is done. */
	cr_assert_eq(dprpc_eal_init_local(NULL), 0);
}

/* Without the fixture: EAL was never initialised in this process. */
Test(misuse_no_eal, dprpc_eal_cleanup, .timeout = 30)
{
	cr_assert_eq(dprpc_eal_cleanup(), -EALREADY);
}

Test(misuse, dprpc_agent_conf_init)
{
	dprpc_agent_conf_init(NULL); /* must not crash */
}

Test(misuse, dprpc_agent_create)
{
	struct dprpc_agent_conf c;

	assert_null_errno(dprpc_agent_create(NULL), EINVAL);
	dprpc_agent_conf_init(&c);
	assert_null_errno(dprpc_agent_create(&c), EINVAL); /* no name, no world */
	c.name = "b";					   /* "a" is the fixture's */
	c.world = DPT_WORLD2;
	c.port.id = 0;
	c.calls.max_outstanding = 0;
	assert_null_errno(dprpc_agent_create(&c), EINVAL);
	dprpc_agent_conf_init(&c);
	c.name = "b";
	c.world = NULL;
	c.port.id = 0;
	assert_null_errno(dprpc_agent_create(&c), EINVAL);
	dprpc_agent_conf_init(&c);
	c.name = "b";
	c.world = DPT_WORLD2;
	c.port.id = RTE_MAX_ETHPORTS; /* no such port */
	assert_null_errno(dprpc_agent_create(&c), EINVAL);
}

Test(misuse, dprpc_agent_destroy)
{
	cr_assert_eq(dprpc_agent_destroy(NULL), -EINVAL);
}

Test(misuse, dprpc_agent_wait_link)
{
	cr_assert_eq(dprpc_agent_wait_link(NULL, 0), -EINVAL);
}

Test(misuse, dprpc_agent_rank)
{
	rte_errno = 0;
	cr_assert_eq(dprpc_agent_rank(NULL), UINT_MAX);
	cr_assert_eq(rte_errno, EINVAL);
}

Test(misuse, dprpc_agent_name)
{
	assert_null_errno(dprpc_agent_name(NULL), EINVAL);
}

Test(misuse, dprpc_agent_port)
{
	rte_errno = 0;
	cr_assert_eq(dprpc_agent_port(NULL), UINT16_MAX);
	cr_assert_eq(rte_errno, EINVAL);
}

Test(misuse, dprpc_rpc_timeout)
{
	rte_errno = 0;
	cr_assert_eq(dprpc_rpc_timeout(NULL), 0u);
	cr_assert_eq(rte_errno, EINVAL);
	/* The configuration's default, 60 s. */
	cr_assert_eq(dprpc_rpc_timeout(agent), 60ull * 1000 * 1000);
}

Test(misuse, dprpc_rpc_timeout_set)
{
	cr_assert_eq(dprpc_rpc_timeout_set(NULL, 1000), -EINVAL);
	cr_assert_eq(dprpc_rpc_timeout_set(agent, DPRPC_TIMEOUT_DEFAULT), -EINVAL);
	cr_assert_eq(dprpc_rpc_timeout(agent), 60ull * 1000 * 1000, "changed by a refusal");
	cr_assert_eq(dprpc_rpc_timeout_set(agent, DPRPC_TIMEOUT_NONE), 0);
	cr_assert_eq(dprpc_rpc_timeout(agent), 0u);
	/* The longest, beyond the TSC's range: kept as given (no deadline). */
	cr_assert_eq(dprpc_rpc_timeout_set(agent, UINT64_MAX - 1), 0);
	cr_assert_eq(dprpc_rpc_timeout(agent), UINT64_MAX - 1);
}

Test(misuse, dprpc_world_size)
{
	rte_errno = 0;
	cr_assert_eq(dprpc_world_size(NULL), 0);
	cr_assert_eq(rte_errno, EINVAL);
}

Test(misuse, dprpc_worker_rank)
{
	cr_assert_eq(dprpc_worker_rank(NULL, "a"), -EINVAL);
	cr_assert_eq(dprpc_worker_rank(agent, NULL), -EINVAL);
	cr_assert_eq(dprpc_worker_rank(agent, "nobody"), -ENOENT);
}

Test(misuse, dprpc_worker_name)
{
	assert_null_errno(dprpc_worker_name(NULL, 0), EINVAL);
	/* A rank beyond the world is "no such worker", as a name would be. */
	assert_null_errno(dprpc_worker_name(agent, 2), ENOENT);
	assert_null_errno(dprpc_worker_name(agent, UINT_MAX), ENOENT);
}

Test(misuse, dprpc_worker_state)
{
	cr_assert_eq(dprpc_worker_state(NULL, 0), -EINVAL);
	cr_assert_eq(dprpc_worker_state(agent, 2), -ENOENT);
}

/* b never comes (nothing runs behind the ring port's other end): the
 * rendezvous times out naming it. */
Test(misuse, dprpc_world_wait)
{
	char missing[16];

	cr_assert_eq(dprpc_world_wait(NULL, 1000, missing, sizeof(missing)), -EINVAL);
	cr_assert_eq(dprpc_world_wait(agent, 1000, NULL, 4), -EINVAL);
	cr_assert_eq(dprpc_world_wait(agent, 1000, missing, sizeof(missing)), -ETIMEDOUT);
	cr_assert_str_eq(missing, "b");
	cr_assert_eq(dprpc_world_wait(agent, 1000, NULL, 0), -ETIMEDOUT);
}

/* Nobody is up for the agent: nothing to tell, done at once. */
Test(misuse, dprpc_world_leave)
{
	cr_assert_eq(dprpc_world_leave(NULL, 1000), -EINVAL);
	cr_assert_eq(dprpc_world_leave(agent, 1000), 0);
}

/* NULL arguments, a member not "NAME MAC IPV4 UDP_PORT", an agent whose map
 * gave it a rank (already in the world), a world capacity out of range. */
Test(misuse, dprpc_world_join)
{
	struct dprpc_agent_conf c;

	cr_assert_eq(dprpc_world_join(NULL, "b 02:00:00:00:00:02 10.0.0.2 7002", 1000), -EINVAL);
	cr_assert_eq(dprpc_world_join(agent, NULL, 1000), -EINVAL);
	cr_assert_eq(dprpc_world_join(agent, "b 1 02:00:00:00:00:02 10.0.0.2 7002", 1000), -EINVAL);
	cr_assert_eq(dprpc_world_join(agent, "b 02:00:00:00:00:02 10.0.0.2", 1000), -EINVAL);
	cr_assert_eq(dprpc_world_join(agent, "b 02:00:00:00:00:02 10.0.0.2 7002", 1000), -EALREADY);
	dprpc_agent_conf_init(&c);
	c.name = "z";
	c.world = DPT_WORLD2 "z 2 02:00:00:00:00:03 10.0.0.3 7003\n";
	c.port.vdev = "net_null_jz";
	c.max_workers = 2; /* below the map's 3 */
	cr_assert_null(dprpc_agent_create(&c));
	cr_assert_eq(rte_errno, EINVAL);
	c.max_workers = DPRPC_MAX_WORKERS + 1;
	cr_assert_null(dprpc_agent_create(&c));
	cr_assert_eq(rte_errno, EINVAL);
	c.max_workers = 0; /* a value, not "the default" */
	cr_assert_null(dprpc_agent_create(&c));
	cr_assert_eq(rte_errno, EINVAL);
	/* A joiner's map is its own line alone. */
	c.max_workers = DPRPC_MAX_WORKERS;
	c.world = "z - 02:00:00:00:00:03 10.0.0.3 7003; z - 02:00:00:00:00:04 10.0.0.4 7004";
	cr_assert_null(dprpc_agent_create(&c));
	cr_assert_eq(rte_errno, EINVAL);
	c.world = "z - 02:00:00:00:00:03 10.0.0.3 7003; a 0 02:00:00:00:00:01 10.0.0.1 7001";
	cr_assert_null(dprpc_agent_create(&c));
	cr_assert_eq(rte_errno, EINVAL);
}

Test(misuse, dprpc_worker_info_get)
{
	struct dprpc_worker_info info;

	cr_assert_eq(dprpc_worker_info_get(NULL, "a", &info), -EINVAL);
	cr_assert_eq(dprpc_worker_info_get(agent, "a", NULL), -EINVAL);
	cr_assert_eq(dprpc_worker_info_get(agent, "nobody", &info), -ENOENT);
	cr_assert_eq(dprpc_worker_info_get(agent, NULL, &info), 0);
	cr_assert_str_eq(info.name, "a");
	cr_assert_eq(info.rank, 0u);
	cr_assert_eq(info.state, DPRPC_PEER_UP);
	cr_assert_eq(dprpc_worker_info_get(agent, "b", &info), 0);
	cr_assert_eq(info.rank, 1u);
	cr_assert_eq(info.udp_port, 7002);
	cr_assert_eq(info.ipv4, htonl(0x0a000002));
	cr_assert_eq(info.mac[5], 2);
	cr_assert_eq(info.state, DPRPC_PEER_UNKNOWN);
}

Test(misuse, dprpc_worker_info_get_id)
{
	struct dprpc_worker_info info;

	cr_assert_eq(dprpc_worker_info_get_id(NULL, 0, &info), -EINVAL);
	cr_assert_eq(dprpc_worker_info_get_id(agent, 0, NULL), -EINVAL);
	/* A rank beyond the world is "no such worker", as a name would be. */
	cr_assert_eq(dprpc_worker_info_get_id(agent, 2, &info), -ENOENT);
	cr_assert_eq(dprpc_worker_info_get_id(agent, UINT_MAX, &info), -ENOENT);
	cr_assert_eq(dprpc_worker_info_get_id(agent, 0, &info), 0);
	cr_assert_str_eq(info.name, "a");
	cr_assert_eq(info.rank, 0u);
	cr_assert_eq(info.state, DPRPC_PEER_UP);
	cr_assert_eq(dprpc_worker_info_get_id(agent, 1, &info), 0);
	cr_assert_str_eq(info.name, "b");
	cr_assert_eq(info.rank, 1u);
	cr_assert_eq(info.udp_port, 7002);
	cr_assert_eq(info.ipv4, htonl(0x0a000002));
}

Test(misuse, dprpc_worker_info_list)
{
	struct dprpc_worker_info infos[2];

	memset(infos, 0xee, sizeof(infos));
	cr_assert_eq(dprpc_worker_info_list(NULL, infos, 2), -EINVAL);
	cr_assert_eq(dprpc_worker_info_list(agent, NULL, 1), -EINVAL);
	cr_assert_eq(dprpc_worker_info_list(agent, NULL, 0), 2);
	/* Only cap entries are filled; the world size is returned. */
	cr_assert_eq(dprpc_worker_info_list(agent, infos, 1), 2);
	cr_assert_str_eq(infos[0].name, "a");
	cr_assert_eq(infos[1].rank, 0xeeeeeeeeu);
	cr_assert_eq(dprpc_worker_info_list(agent, infos, 2), 2);
	cr_assert_str_eq(infos[1].name, "b");
}

Test(misuse, dprpc_worker_rtt_get)
{
	struct dprpc_worker_rtt rtt;

	cr_assert_eq(dprpc_worker_rtt_get(NULL, 1, &rtt), -EINVAL);
	cr_assert_eq(dprpc_worker_rtt_get(agent, 2, &rtt), -ENOENT);
	cr_assert_eq(dprpc_worker_rtt_get(agent, 1, NULL), -EINVAL);
}

Test(misuse, dprpc_agent_stats_get)
{
	struct dprpc_agent_stats s;

	cr_assert_eq(dprpc_agent_stats_get(NULL, &s), -EINVAL);
	cr_assert_eq(dprpc_agent_stats_get(agent, NULL), -EINVAL);
}

Test(misuse, dprpc_agent_usage_get)
{
	struct dprpc_agent_usage u;

	cr_assert_eq(dprpc_agent_usage_get(NULL, &u), -EINVAL);
	cr_assert_eq(dprpc_agent_usage_get(agent, NULL), -EINVAL);
}

Test(misuse, dprpc_agent_dump)
{
	dprpc_agent_dump(NULL, stderr);
	dprpc_agent_dump(agent, NULL);
}

Test(misuse, dprpc_drop_reason_str)
{
	const char *s = dprpc_drop_reason_str(DPRPC_DROP_MAX);

	cr_assert_not_null(s);
	cr_assert_str_eq(s, "unknown");
	cr_assert_str_eq(dprpc_drop_reason_str((enum dprpc_drop_reason) - 1), "unknown");
}

Test(misuse, dprpc_poll)
{
	cr_assert_eq(dprpc_poll(NULL, 32), -EINVAL);
}

/* --- handlers and calls -------------------------------------------------- */

Test(misuse, dprpc_handler_id)
{
	cr_assert_eq(dprpc_handler_id(NULL), 0);
}

Test(misuse, dprpc_register)
{
	cr_assert_eq(dprpc_register(NULL, "x", h_nop, NULL, DPRPC_HANDLER_INLINE), -EINVAL);
	cr_assert_eq(dprpc_register(agent, NULL, h_nop, NULL, DPRPC_HANDLER_INLINE), -EINVAL);
	cr_assert_eq(dprpc_register(agent, "x", NULL, NULL, DPRPC_HANDLER_INLINE), -EINVAL);
	cr_assert_eq(dprpc_register(agent, "", h_nop, NULL, DPRPC_HANDLER_INLINE), -EINVAL);
	cr_assert_eq(dprpc_register(agent, "x", h_nop, NULL, (enum dprpc_handler_mode)7), -EINVAL);
	/* No handler lcores: POOL is out of range for this agent. */
	cr_assert_eq(dprpc_register(agent, "x", h_nop, NULL, DPRPC_HANDLER_POOL), -EINVAL);
	cr_assert_eq(dprpc_register(agent, "dprpc.reserved", h_nop, NULL, DPRPC_HANDLER_INLINE),
		-EINVAL);
}

Test(misuse, dprpc_request_payload)
{
	size_t len = 99;

	cr_assert_null(dprpc_request_payload(NULL, &len));
	cr_assert_eq(len, 0);
	cr_assert_null(dprpc_request_payload(NULL, NULL));
}

Test(misuse, dprpc_request_caller)
{
	rte_errno = 0;
	cr_assert_eq(dprpc_request_caller(NULL), UINT_MAX);
	cr_assert_eq(rte_errno, EINVAL);
}

Test(misuse, dprpc_request_remaining_us)
{
	rte_errno = 0;
	cr_assert_eq(dprpc_request_remaining_us(NULL), 0u);
	cr_assert_eq(rte_errno, EINVAL);
}

Test(misuse, dprpc_request_deadline_tsc)
{
	rte_errno = 0;
	cr_assert_eq(dprpc_request_deadline_tsc(NULL), 0u);
	cr_assert_eq(rte_errno, EINVAL);
}

Test(misuse, dprpc_request_timeout)
{
	rte_errno = 0;
	cr_assert_eq(dprpc_request_timeout(NULL, DPRPC_TIMEOUT_DEFAULT), 0u);
	cr_assert_eq(rte_errno, EINVAL);
}

Test(misuse, dprpc_request_cancelled)
{
	rte_errno = 0;
	cr_assert_eq(dprpc_request_cancelled(NULL), false);
	cr_assert_eq(rte_errno, EINVAL);
}

Test(misuse, dprpc_request_agent)
{
	assert_null_errno(dprpc_request_agent(NULL), EINVAL);
}

Test(misuse, dprpc_request_rref_value)
{
	size_t len = 99;

	cr_assert_null(dprpc_request_rref_value(NULL, &len));
	cr_assert_eq(len, 0);
}

Test(misuse, dprpc_reply)
{
	cr_assert_eq(dprpc_reply(NULL, "x", 1), -EINVAL);
}

Test(misuse, dprpc_reply_iov)
{
	char x = 'x';
	struct iovec v = {.iov_base = &x, .iov_len = 1};

	cr_assert_eq(dprpc_reply_iov(NULL, &v, 1), -EINVAL);
	cr_assert_eq(dprpc_reply_iov(NULL, NULL, 0), -EINVAL);
}

Test(misuse, dprpc_request_payload_hold)
{
	assert_null_errno(dprpc_request_payload_hold(NULL), EINVAL);
}

Test(misuse, dprpc_payload_data)
{
	size_t len = 99;

	assert_null_errno(dprpc_payload_data(NULL, &len), EINVAL);
	cr_assert_eq(len, 0);
	assert_null_errno(dprpc_payload_data(NULL, NULL), EINVAL);
}

Test(misuse, dprpc_payload_release)
{
	dprpc_payload_release(NULL); /* nothing to give back */
	cr_assert_eq(dprpc_payload_data(NULL, NULL), NULL);
}

Test(misuse, dprpc_stream_send_wait)
{
	cr_assert_eq(dprpc_stream_send_wait(NULL, "x", 1, 0), -EINVAL);
	cr_assert_eq(dprpc_stream_send_wait(NULL, NULL, 0, DPRPC_TIMEOUT_NONE), -EINVAL);
}

Test(misuse, dprpc_request_enter)
{
	uint64_t prev = dprpc_request_enter(NULL);

	cr_assert_eq(prev, 0u); /* unchanged: none */
	cr_assert_eq(rte_errno, EINVAL);
}

Test(misuse, dprpc_request_leave)
{
	dprpc_request_leave(0); /* no bound: nothing to check but that it returns */
	cr_assert_eq(dprpc_request_enter(NULL), 0u);
}

Test(misuse, dprpc_reply_error)
{
	cr_assert_eq(dprpc_reply_error(NULL, -EIO, "x"), -EINVAL);
}

Test(misuse, dprpc_reply_busy)
{
	cr_assert_eq(dprpc_reply_busy(NULL, 100, "x"), -EINVAL);
	cr_assert_eq(dprpc_reply_busy(NULL, 0, NULL), -EINVAL);
}

Test(misuse, dprpc_reply_expired)
{
	cr_assert_eq(dprpc_reply_expired(NULL, "x"), -EINVAL);
	cr_assert_eq(dprpc_reply_expired(NULL, NULL), -EINVAL);
}

static int
chunk_nop(const void *data, size_t len, void *arg)
{
	(void)data;
	(void)len;
	(void)arg;
	return 0;
}

Test(misuse, dprpc_rpc_stream)
{
	assert_null_errno(dprpc_rpc_stream(NULL, "b", "h", NULL, 0, 0, chunk_nop, NULL), EINVAL);
	assert_null_errno(dprpc_rpc_stream(agent, NULL, "h", NULL, 0, 0, chunk_nop, NULL), EINVAL);
	assert_null_errno(dprpc_rpc_stream(agent, "b", NULL, NULL, 0, 0, chunk_nop, NULL), EINVAL);
	assert_null_errno(dprpc_rpc_stream(agent, "b", "h", NULL, 0, 0, NULL, NULL), EINVAL);
	assert_null_errno(dprpc_rpc_stream(agent, "b", "h", NULL, 1, 0, chunk_nop, NULL), EINVAL);
	assert_null_errno(dprpc_rpc_stream(agent, "zz", "h", NULL, 0, 0, chunk_nop, NULL), ENOENT);
	assert_null_errno(dprpc_rpc_stream(agent, "a", "h", NULL, 0, 0, chunk_nop, NULL), ENOTSUP);
	assert_null_errno(dprpc_rpc_stream(agent, "b", "h", "x", DPRPC_MAX_FRAME_PAYLOAD + 1, 0,
				  chunk_nop, NULL),
		EMSGSIZE);
}

Test(misuse, dprpc_stream_open)
{
	assert_null_errno(dprpc_stream_open(NULL, "b", "h", NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_stream_open(agent, "b", NULL, NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_stream_open(agent, "b", "h", NULL, 1, 0), EINVAL);
	assert_null_errno(dprpc_stream_open(agent, "zz", "h", NULL, 0, 0), ENOENT);
	assert_null_errno(dprpc_stream_open(agent, "a", "h", NULL, 0, 0), ENOTSUP);
}

Test(misuse, dprpc_rpc_stream_id)
{
	uint32_t h = dprpc_handler_id("h");

	assert_null_errno(dprpc_rpc_stream_id(NULL, 1, h, NULL, 0, 0, chunk_nop, NULL), EINVAL);
	assert_null_errno(dprpc_rpc_stream_id(agent, 2, h, NULL, 0, 0, chunk_nop, NULL), EINVAL);
	assert_null_errno(
		dprpc_rpc_stream_id(agent, UINT_MAX, h, NULL, 0, 0, chunk_nop, NULL), EINVAL);
	assert_null_errno(dprpc_rpc_stream_id(agent, 1, 0, NULL, 0, 0, chunk_nop, NULL), EINVAL);
	assert_null_errno(dprpc_rpc_stream_id(agent, 1, h, NULL, 0, 0, NULL, NULL), EINVAL);
	assert_null_errno(dprpc_rpc_stream_id(agent, 1, h, NULL, 1, 0, chunk_nop, NULL), EINVAL);
	assert_null_errno(dprpc_rpc_stream_id(agent, 0, h, NULL, 0, 0, chunk_nop, NULL), ENOTSUP);
	assert_null_errno(dprpc_rpc_stream_id(agent, 1, h, "x", DPRPC_MAX_FRAME_PAYLOAD + 1, 0,
				  chunk_nop, NULL),
		EMSGSIZE);
}

Test(misuse, dprpc_stream_open_id)
{
	uint32_t h = dprpc_handler_id("h");

	assert_null_errno(dprpc_stream_open_id(NULL, 1, h, NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_stream_open_id(agent, 2, h, NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_stream_open_id(agent, 1, 0, NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_stream_open_id(agent, 1, h, NULL, 1, 0), EINVAL);
	assert_null_errno(dprpc_stream_open_id(agent, 0, h, NULL, 0, 0), ENOTSUP);
	assert_null_errno(
		dprpc_stream_open_id(agent, 1, h, "x", DPRPC_MAX_FRAME_PAYLOAD + 1, 0), EMSGSIZE);
}

Test(misuse, dprpc_stream_next)
{
	const void *d;
	size_t len;

	cr_assert_eq(dprpc_stream_next(NULL, &d, &len, 0), -EINVAL);
}

Test(misuse, dprpc_stream_future)
{
	assert_null_errno(dprpc_stream_future(NULL), EINVAL);
}

Test(misuse, dprpc_stream_close)
{
	cr_assert_eq(dprpc_stream_close(NULL), -EINVAL);
}

Test(misuse, dprpc_stream_send)
{
	cr_assert_eq(dprpc_stream_send(NULL, "x", 1), -EINVAL);
}

Test(misuse, dprpc_stream_end)
{
	cr_assert_eq(dprpc_stream_end(NULL, 0), -EINVAL);
}

Test(misuse, dprpc_rpc_async)
{
	assert_null_errno(dprpc_rpc_async(NULL, "b", "h", NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_rpc_async(agent, NULL, "h", NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_rpc_async(agent, "b", NULL, NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_rpc_async(agent, "nobody", "h", NULL, 0, 0), ENOENT);
	assert_null_errno(dprpc_rpc_async(agent, "b", "h", NULL, 4, 0), EINVAL);
}

Test(misuse, dprpc_rpc_async_id)
{
	uint32_t h = dprpc_handler_id("h");

	assert_null_errno(dprpc_rpc_async_id(NULL, 1, h, NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_rpc_async_id(agent, 2, h, NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_rpc_async_id(agent, UINT_MAX, h, NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_rpc_async_id(agent, 1, 0, NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_rpc_async_id(agent, 1, h, NULL, 4, 0), EINVAL);
	assert_null_errno(dprpc_rpc_async_id(agent, 1, h, "x", SIZE_MAX, 0), EMSGSIZE);
}

Test(misuse, dprpc_rpc_async_iov)
{
	uint32_t h = dprpc_handler_id("h");
	char x[2] = "x";
	struct iovec v[2] = {{.iov_base = x, .iov_len = 1}, {.iov_base = NULL, .iov_len = 4}};
	struct iovec big[2] = {{.iov_base = x, .iov_len = SIZE_MAX}, {.iov_base = x, .iov_len = 2}};

	assert_null_errno(dprpc_rpc_async_iov(NULL, 1, h, v, 1, 0), EINVAL);
	assert_null_errno(dprpc_rpc_async_iov(agent, 2, h, v, 1, 0), EINVAL);
	assert_null_errno(dprpc_rpc_async_iov(agent, 1, 0, v, 1, 0), EINVAL);
	assert_null_errno(dprpc_rpc_async_iov(agent, 1, h, NULL, 1, 0), EINVAL);
	assert_null_errno(dprpc_rpc_async_iov(agent, 1, h, v, 2, 0), EINVAL);
	assert_null_errno(dprpc_rpc_async_iov(agent, 1, h, v, DPRPC_IOV_MAX + 1, 0), EINVAL);
	assert_null_errno(dprpc_rpc_async_iov(agent, 1, h, big, 1, 0), EMSGSIZE);
	assert_null_errno(dprpc_rpc_async_iov(agent, 1, h, big, 2, 0), EMSGSIZE);
}

Test(misuse, dprpc_rpc_sync)
{
	char out[8];
	size_t out_len = sizeof(out);

	cr_assert_eq(dprpc_rpc_sync(NULL, "b", "h", NULL, 0, 0, out, &out_len, NULL), -EINVAL);
	cr_assert_eq(dprpc_rpc_sync(agent, NULL, "h", NULL, 0, 0, out, &out_len, NULL), -EINVAL);
	cr_assert_eq(dprpc_rpc_sync(agent, "b", NULL, NULL, 0, 0, out, &out_len, NULL), -EINVAL);
	cr_assert_eq(
		dprpc_rpc_sync(agent, "nobody", "h", NULL, 0, 0, out, &out_len, NULL), -ENOENT);
	/* A buffer length without a buffer. */
	cr_assert_eq(dprpc_rpc_sync(agent, "b", "h", NULL, 0, 0, NULL, &out_len, NULL), -EINVAL);
}

Test(misuse, dprpc_rpc_sync_id)
{
	char out[8];
	size_t out_len = sizeof(out);
	uint32_t h = dprpc_handler_id("h");

	cr_assert_eq(dprpc_rpc_sync_id(NULL, 1, h, NULL, 0, 0, out, &out_len, NULL), -EINVAL);
	cr_assert_eq(dprpc_rpc_sync_id(agent, 2, h, NULL, 0, 0, out, &out_len, NULL), -EINVAL);
	cr_assert_eq(dprpc_rpc_sync_id(agent, 1, 0, NULL, 0, 0, out, &out_len, NULL), -EINVAL);
	cr_assert_eq(dprpc_rpc_sync_id(agent, 1, h, NULL, 4, 0, out, &out_len, NULL), -EINVAL);
}

Test(misuse, dprpc_rpc_sync_take)
{
	char out[8];
	size_t out_len = sizeof(out);

	cr_assert_eq(dprpc_rpc_sync_take(NULL, out, &out_len), -EINVAL);
	cr_assert_eq(dprpc_rpc_sync_take(agent, out, NULL), -EINVAL);
	cr_assert_eq(dprpc_rpc_sync_take(agent, NULL, &out_len), -EINVAL);
	cr_assert_eq(dprpc_rpc_sync_take(agent, out, &out_len), -ENOENT); /* none kept */
}

Test(misuse, dprpc_rpc_sync_take_future)
{
	assert_null_errno(dprpc_rpc_sync_take_future(NULL), EINVAL);
	assert_null_errno(dprpc_rpc_sync_take_future(agent), ENOENT);
}

/* --- futures --------------------------------------------------------------- */

Test(misuse, dprpc_future_pool_create)
{
	assert_null_errno(dprpc_future_pool_create(0, 8), EINVAL);
	assert_null_errno(dprpc_future_pool_create(UINT_MAX, 8), EINVAL);
}

Test(misuse, dprpc_future_pool_release)
{
	dprpc_future_pool_release(NULL);
}

Test(misuse, dprpc_future_pool_in_use)
{
	rte_errno = 0;
	cr_assert_eq(dprpc_future_pool_in_use(NULL), 0);
	cr_assert_eq(rte_errno, EINVAL);
}

Test(misuse, dprpc_future_pool_cb_in_use)
{
	rte_errno = 0;
	cr_assert_eq(dprpc_future_pool_cb_in_use(NULL), 0);
	cr_assert_eq(rte_errno, EINVAL);
}

Test(misuse, dprpc_future_new)
{
	assert_null_errno(dprpc_future_new(NULL), EINVAL);
}

Test(misuse, dprpc_future_get)
{
	dprpc_future_get(NULL);
}

Test(misuse, dprpc_future_put)
{
	dprpc_future_put(NULL);
}

Test(misuse, dprpc_future_complete)
{
	struct dprpc_future *f = dprpc_future_new(fpool);

	cr_assert_eq(dprpc_future_complete(NULL, "x", 1, NULL, NULL), -EINVAL);
	cr_assert_eq(dprpc_future_complete(f, NULL, 1, NULL, NULL), -EINVAL);
	cr_assert_eq(dprpc_future_state(f), DPRPC_FUTURE_PENDING);
	dprpc_future_put(f);
	cr_assert_eq(dprpc_future_pool_in_use(fpool), 0);
}

Test(misuse, dprpc_future_complete_copy)
{
	struct dprpc_future *f = dprpc_future_new(fpool);

	cr_assert_eq(dprpc_future_complete_copy(NULL, "x", 1), -EINVAL);
	cr_assert_eq(dprpc_future_complete_copy(f, NULL, 1), -EINVAL);
	cr_assert_eq(dprpc_future_state(f), DPRPC_FUTURE_PENDING);
	dprpc_future_put(f);
}

Test(misuse, dprpc_future_fail)
{
	cr_assert_eq(dprpc_future_fail(NULL, -EIO, 0, "x"), -EINVAL);
}

Test(misuse, dprpc_future_cancel)
{
	cr_assert_eq(dprpc_future_cancel(NULL), -EINVAL);
}

Test(misuse, dprpc_future_cancel_outcome)
{
	cr_assert_eq(dprpc_future_cancel_outcome(NULL), -EINVAL);
}

Test(misuse, dprpc_future_state)
{
	rte_errno = 0;
	cr_assert_eq(dprpc_future_state(NULL), DPRPC_FUTURE_FAILED);
	cr_assert_eq(rte_errno, EINVAL);
}

Test(misuse, dprpc_future_is_done)
{
	rte_errno = 0;
	cr_assert_eq(dprpc_future_is_done(NULL), false);
	cr_assert_eq(rte_errno, EINVAL);
}

Test(misuse, dprpc_future_value)
{
	size_t len = 99;

	cr_assert_null(dprpc_future_value(NULL, &len));
	cr_assert_eq(len, 0);
}

Test(misuse, dprpc_future_error)
{
	assert_null_errno(dprpc_future_error(NULL), EINVAL);
}

Test(misuse, dprpc_future_wait)
{
	cr_assert_eq(dprpc_future_wait(NULL, 0), -EINVAL);
}

Test(misuse, dprpc_future_wait_all)
{
	struct dprpc_future *fs[2] = {NULL, NULL};

	cr_assert_eq(dprpc_future_wait_all(NULL, 2, 0), -EINVAL);
	cr_assert_eq(dprpc_future_wait_all(fs, 2, 0), -EINVAL);
}

Test(misuse, dprpc_future_set_progress)
{
	dprpc_future_set_progress(NULL, NULL, NULL);
}

Test(misuse, dprpc_future_add_callback)
{
	struct dprpc_future *f = dprpc_future_new(fpool);

	cr_assert_eq(dprpc_future_add_callback(NULL, cb_nop, NULL), -EINVAL);
	cr_assert_eq(dprpc_future_add_callback(f, NULL, NULL), -EINVAL);
	dprpc_future_put(f);
}

Test(misuse, dprpc_future_then)
{
	struct dprpc_future *f = dprpc_future_new(fpool);

	assert_null_errno(dprpc_future_then(NULL, then_nop, NULL), EINVAL);
	assert_null_errno(dprpc_future_then(f, NULL, NULL), EINVAL);
	dprpc_future_put(f);
	cr_assert_eq(dprpc_future_pool_in_use(fpool), 0);
}

Test(misuse, dprpc_future_collect_all)
{
	struct dprpc_future *fs[2] = {NULL, NULL};

	assert_null_errno(dprpc_future_collect_all(NULL, fs, 0), EINVAL);
	assert_null_errno(dprpc_future_collect_all(fpool, NULL, 2), EINVAL);
	assert_null_errno(dprpc_future_collect_all(fpool, fs, 2), EINVAL);
	cr_assert_eq(dprpc_future_pool_in_use(fpool), 0);
}

/* --- RRefs ----------------------------------------------------------------- */

Test(misuse, dprpc_remote)
{
	assert_null_errno(dprpc_remote(NULL, "b", "h", NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_remote(agent, NULL, "h", NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_remote(agent, "b", NULL, NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_remote(agent, "b", "h", NULL, 4, 0), EINVAL);
}

Test(misuse, dprpc_remote_id)
{
	uint32_t h = dprpc_handler_id("h");

	assert_null_errno(dprpc_remote_id(NULL, 1, h, NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_remote_id(agent, 2, h, NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_remote_id(agent, 1, 0, NULL, 0, 0), EINVAL);
}

Test(misuse, dprpc_remote_iov)
{
	uint32_t h = dprpc_handler_id("h");
	char x[2] = "x";
	struct iovec v[2] = {{.iov_base = x, .iov_len = 1}, {.iov_base = NULL, .iov_len = 4}};
	struct iovec big[2] = {{.iov_base = x, .iov_len = SIZE_MAX}, {.iov_base = x, .iov_len = 2}};

	assert_null_errno(dprpc_remote_iov(NULL, 1, h, v, 1, 0), EINVAL);
	assert_null_errno(dprpc_remote_iov(agent, 2, h, v, 1, 0), EINVAL);
	assert_null_errno(dprpc_remote_iov(agent, 1, 0, v, 1, 0), EINVAL);
	assert_null_errno(dprpc_remote_iov(agent, 1, h, NULL, 1, 0), EINVAL);
	assert_null_errno(dprpc_remote_iov(agent, 1, h, v, 2, 0), EINVAL);
	assert_null_errno(dprpc_remote_iov(agent, 1, h, v, DPRPC_IOV_MAX, 0), EINVAL);
	assert_null_errno(dprpc_remote_iov(agent, 1, h, big, 2, 0), EMSGSIZE);
	assert_null_errno(dprpc_remote_iov(agent, 1, h, big, 1, 0), EMSGSIZE);
}

Test(misuse, dprpc_rref_create_local)
{
	assert_null_errno(dprpc_rref_create_local(NULL, "x", 1), EINVAL);
	assert_null_errno(dprpc_rref_create_local(agent, NULL, 1), EINVAL);
}

Test(misuse, dprpc_rref_release)
{
	cr_assert_eq(dprpc_rref_release(NULL), -EINVAL);
}

Test(misuse, dprpc_rref_is_owner)
{
	rte_errno = 0;
	cr_assert_eq(dprpc_rref_is_owner(NULL), false);
	cr_assert_eq(rte_errno, EINVAL);
}

Test(misuse, dprpc_rref_owner)
{
	rte_errno = 0;
	cr_assert_eq(dprpc_rref_owner(NULL), UINT_MAX);
	cr_assert_eq(rte_errno, EINVAL);
}

Test(misuse, dprpc_rref_owner_name)
{
	assert_null_errno(dprpc_rref_owner_name(NULL), EINVAL);
}

Test(misuse, dprpc_rref_id)
{
	rte_errno = 0;
	cr_assert_eq(dprpc_rref_id(NULL), 0);
	cr_assert_eq(rte_errno, EINVAL);
}

Test(misuse, dprpc_rref_agent)
{
	assert_null_errno(dprpc_rref_agent(NULL), EINVAL);
}

Test(misuse, dprpc_rref_confirmed_by_owner)
{
	rte_errno = 0;
	cr_assert_eq(dprpc_rref_confirmed_by_owner(NULL), false);
	cr_assert_eq(rte_errno, EINVAL);
}

Test(misuse, dprpc_rref_creation_future)
{
	assert_null_errno(dprpc_rref_creation_future(NULL), EINVAL);
}

Test(misuse, dprpc_rref_local_value)
{
	const void *v;
	size_t len;
	struct dprpc_rref *r = dprpc_rref_create_local(agent, "v", 1);

	cr_assert_not_null(r);
	cr_assert_eq(dprpc_rref_local_value(NULL, &v, &len), -EINVAL);
	cr_assert_eq(dprpc_rref_local_value(r, NULL, &len), -EINVAL);
	cr_assert_eq(dprpc_rref_release(r), 0);
}

Test(misuse, dprpc_rref_to_here_async)
{
	assert_null_errno(dprpc_rref_to_here_async(NULL, 0), EINVAL);
}

Test(misuse, dprpc_rref_to_here)
{
	char out[8];
	size_t out_len = sizeof(out);

	cr_assert_eq(dprpc_rref_to_here(NULL, 0, out, &out_len, NULL), -EINVAL);
}

Test(misuse, dprpc_rref_rpc_async_id)
{
	assert_null_errno(dprpc_rref_rpc_async_id(NULL, 1, NULL, 0, 0), EINVAL);
}

Test(misuse, dprpc_rref_rpc_async_iov)
{
	struct dprpc_rref *r = dprpc_rref_create_local(agent, "v", 1);
	uint32_t h = dprpc_handler_id("h");
	char x[2] = "x";
	struct iovec v[2] = {{.iov_base = x, .iov_len = 1}, {.iov_base = NULL, .iov_len = 4}};

	assert_null_errno(dprpc_rref_rpc_async_iov(NULL, h, v, 1, 0), EINVAL);
	assert_null_errno(dprpc_rref_rpc_async_iov(r, 0, v, 1, 0), EINVAL);
	assert_null_errno(dprpc_rref_rpc_async_iov(r, h, NULL, 1, 0), EINVAL);
	assert_null_errno(dprpc_rref_rpc_async_iov(r, h, v, 2, 0), EINVAL);
	assert_null_errno(dprpc_rref_rpc_async_iov(r, h, v, DPRPC_IOV_MAX, 0), EINVAL);
	cr_assert_eq(dprpc_rref_release(r), 0);
}

Test(misuse, dprpc_rref_rpc_async)
{
	struct dprpc_rref *r = dprpc_rref_create_local(agent, "v", 1);

	assert_null_errno(dprpc_rref_rpc_async(NULL, "h", NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_rref_rpc_async(r, NULL, NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_rref_rpc_async(r, "h", NULL, 4, 0), EINVAL);
	cr_assert_eq(dprpc_rref_release(r), 0);
}

Test(misuse, dprpc_rref_rpc_sync)
{
	char out[8];
	size_t out_len = sizeof(out);
	struct dprpc_rref *r = dprpc_rref_create_local(agent, "v", 1);

	cr_assert_eq(dprpc_rref_rpc_sync(NULL, "h", NULL, 0, 0, out, &out_len, NULL), -EINVAL);
	cr_assert_eq(dprpc_rref_rpc_sync(r, NULL, NULL, 0, 0, out, &out_len, NULL), -EINVAL);
	cr_assert_eq(dprpc_rref_release(r), 0);
}

Test(misuse, dprpc_rref_rpc_sync_id)
{
	char out[8];
	size_t out_len = sizeof(out);
	uint32_t h = dprpc_handler_id("h");
	struct dprpc_rref *r = dprpc_rref_create_local(agent, "v", 1);

	cr_assert_eq(dprpc_rref_rpc_sync_id(NULL, h, NULL, 0, 0, out, &out_len, NULL), -EINVAL);
	cr_assert_eq(dprpc_rref_rpc_sync_id(r, 0, NULL, 0, 0, out, &out_len, NULL), -EINVAL);
	cr_assert_eq(dprpc_rref_rpc_sync_id(r, h, NULL, 4, 0, out, &out_len, NULL), -EINVAL);
	cr_assert_eq(dprpc_rref_release(r), 0);
}

Test(misuse, dprpc_rref_remote)
{
	struct dprpc_rref *r = dprpc_rref_create_local(agent, "v", 1);

	assert_null_errno(dprpc_rref_remote(NULL, "h", NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_rref_remote(r, NULL, NULL, 0, 0), EINVAL);
	cr_assert_eq(dprpc_rref_release(r), 0);
}

Test(misuse, dprpc_rref_remote_id)
{
	uint32_t h = dprpc_handler_id("h");
	struct dprpc_rref *r = dprpc_rref_create_local(agent, "v", 1);

	assert_null_errno(dprpc_rref_remote_id(NULL, h, NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_rref_remote_id(r, 0, NULL, 0, 0), EINVAL);
	assert_null_errno(dprpc_rref_remote_id(r, h, NULL, 4, 0), EINVAL);
	cr_assert_eq(dprpc_rref_release(r), 0);
}

Test(misuse, dprpc_rref_remote_iov)
{
	struct dprpc_rref *r = dprpc_rref_create_local(agent, "v", 1);
	uint32_t h = dprpc_handler_id("h");
	char x[2] = "x";
	struct iovec v[2] = {{.iov_base = x, .iov_len = 1}, {.iov_base = NULL, .iov_len = 4}};

	assert_null_errno(dprpc_rref_remote_iov(NULL, h, v, 1, 0), EINVAL);
	assert_null_errno(dprpc_rref_remote_iov(r, 0, v, 1, 0), EINVAL);
	assert_null_errno(dprpc_rref_remote_iov(r, h, NULL, 1, 0), EINVAL);
	assert_null_errno(dprpc_rref_remote_iov(r, h, v, 2, 0), EINVAL);
	assert_null_errno(dprpc_rref_remote_iov(r, h, v, DPRPC_IOV_MAX, 0), EINVAL);
	cr_assert_eq(dprpc_rref_release(r), 0);
}

Test(misuse, dprpc_rref_fork)
{
	uint8_t buf[DPRPC_RREF_FORK_SIZE];
	struct dprpc_rref *r = dprpc_rref_create_local(agent, "v", 1);

	cr_assert_eq(dprpc_rref_fork(NULL, buf, sizeof(buf)), -EINVAL);
	cr_assert_eq(dprpc_rref_fork(r, NULL, sizeof(buf)), -EINVAL);
	cr_assert_lt(dprpc_rref_fork(r, buf, sizeof(buf) - 1), 0);
	cr_assert_eq(dprpc_rref_release(r), 0);
}

Test(misuse, dprpc_rref_fork_to)
{
	uint8_t buf[DPRPC_RREF_FORK_SIZE];
	struct dprpc_rref *r = dprpc_rref_create_local(agent, "v", 1);

	cr_assert_not_null(r);
	cr_assert_eq(dprpc_rref_fork_to(NULL, 1, buf, sizeof(buf)), -EINVAL);
	cr_assert_eq(dprpc_rref_fork_to(r, 2, buf, sizeof(buf)), -EINVAL);
	cr_assert_eq(dprpc_rref_fork_to(r, 1, NULL, sizeof(buf)), -EINVAL);
	cr_assert_lt(dprpc_rref_fork_to(r, 1, buf, sizeof(buf) - 1), 0);
	cr_assert_eq(dprpc_rref_release(r), 0);
}

Test(misuse, dprpc_rref_from_fork)
{
	uint8_t junk[DPRPC_RREF_FORK_SIZE];

	memset(junk, 0xa5, sizeof(junk));
	assert_null_errno(dprpc_rref_from_fork(NULL, junk, sizeof(junk)), EINVAL);
	assert_null_errno(dprpc_rref_from_fork(agent, NULL, sizeof(junk)), EINVAL);
	assert_null_errno(dprpc_rref_from_fork(agent, junk, sizeof(junk) - 1), EINVAL);
	assert_null_errno(dprpc_rref_from_fork(agent, junk, sizeof(junk)), EPROTO);
}

Test(misuse, dprpc_rref_debug_get)
{
	struct dprpc_rref_debug d;

	cr_assert_eq(dprpc_rref_debug_get(NULL, &d), -EINVAL);
	cr_assert_eq(dprpc_rref_debug_get(agent, NULL), -EINVAL);
}

Test(misuse, dprpc_rref_list)
{
	cr_assert_eq(dprpc_rref_list(NULL, NULL, 0), -EINVAL);
	cr_assert_eq(dprpc_rref_list(agent, NULL, 4), -EINVAL);
}

Test(misuse, dprpc_rref_dump)
{
	dprpc_rref_dump(NULL, stderr);
	dprpc_rref_dump(agent, NULL);
}

Test(misuse, dprpc_rref_shutdown)
{
	cr_assert_eq(dprpc_rref_shutdown(NULL, 0, 0), -EINVAL);
	cr_assert_eq(dprpc_rref_shutdown(agent, 0, 0x80000000u), -EINVAL);
}

/* --- collectives (dprpc_collective.h) --- */

Test(misuse, dprpc_all_gather)
{
	const char *const nobody[] = {"zz"};
	const char *const twice[] = {"a", "a"};
	const char *const other[] = {"b"};
	const char *const unnamed[] = {"a", NULL};
	struct dprpc_gather *g = NULL;
	struct dprpc_error e;
	static char big[DPRPC_GATHER_VALUE_MAX + 1];

	cr_assert_eq(dprpc_all_gather(NULL, NULL, 0, NULL, 0, 1000, &g, &e), -EINVAL);
	cr_assert_eq(e.workers, 0);
	cr_assert_eq(dprpc_all_gather(agent, NULL, 0, NULL, 0, 1000, NULL, &e), -EINVAL);
	cr_assert_eq(dprpc_all_gather(agent, NULL, 0, NULL, 4, 1000, &g, &e), -EINVAL);
	cr_assert_eq(dprpc_all_gather(agent, NULL, 2, "x", 1, 1000, &g, &e), -EINVAL);
	cr_assert_eq(dprpc_all_gather(agent, twice, 0, "x", 1, 1000, &g, &e), -EINVAL);
	cr_assert_eq(dprpc_all_gather(agent, twice, 3, "x", 1, 1000, &g, &e), -EINVAL);
	cr_assert_eq(dprpc_all_gather(agent, twice, 2, "x", 1, 1000, &g, &e), -EINVAL);
	cr_assert_eq(dprpc_all_gather(agent, nobody, 1, "x", 1, 1000, &g, &e), -ENOENT);
	cr_assert_eq(dprpc_all_gather(agent, unnamed, 2, "x", 1, 1000, &g, &e), -EINVAL);
	cr_assert_eq(dprpc_all_gather(agent, other, 1, "x", 1, 1000, &g, &e), -EINVAL);
	cr_assert_eq(dprpc_all_gather(agent, NULL, 0, big, sizeof(big), 1000, &g, &e), -EMSGSIZE);
	cr_assert_eq(dprpc_all_gather(agent, NULL, 0, big, sizeof(big), 1000, &g, NULL), -EMSGSIZE,
		"a NULL err is allowed");
	cr_assert_null(g);
}

Test(misuse, dprpc_barrier)
{
	const char *const other[] = {"b"};

	cr_assert_eq(dprpc_barrier(NULL, NULL, 0, 1000, NULL), -EINVAL);
	cr_assert_eq(dprpc_barrier(agent, NULL, 1, 1000, NULL), -EINVAL);
	cr_assert_eq(dprpc_barrier(agent, other, 1, 1000, NULL), -EINVAL);
	cr_assert_eq(dprpc_barrier(agent, other, DPRPC_MAX_WORKERS + 1, 1000, NULL), -EINVAL);
	/* DPRPC_WORLD_LIVE is a count only with NULL workers. */
	cr_assert_eq(dprpc_barrier(agent, other, DPRPC_WORLD_LIVE, 1000, NULL), -EINVAL);
	cr_assert_eq(dprpc_barrier(agent, NULL, DPRPC_WORLD_LIVE - 1, 1000, NULL), -EINVAL);
}

Test(misuse, dprpc_all_gather_id)
{
	const unsigned int beyond[] = {0, 2}, far[] = {UINT_MAX};
	const unsigned int twice[] = {0, 0};
	const unsigned int other[] = {1};
	struct dprpc_gather *g = NULL;
	struct dprpc_error e;
	static char big[DPRPC_GATHER_VALUE_MAX + 1];

	cr_assert_eq(dprpc_all_gather_id(NULL, NULL, 0, NULL, 0, 1000, &g, &e), -EINVAL);
	cr_assert_eq(e.workers, 0);
	cr_assert_eq(dprpc_all_gather_id(agent, NULL, 0, NULL, 0, 1000, NULL, &e), -EINVAL);
	cr_assert_eq(dprpc_all_gather_id(agent, NULL, 0, NULL, 4, 1000, &g, &e), -EINVAL);
	cr_assert_eq(dprpc_all_gather_id(agent, NULL, 2, "x", 1, 1000, &g, &e), -EINVAL);
	cr_assert_eq(dprpc_all_gather_id(agent, twice, 0, "x", 1, 1000, &g, &e), -EINVAL);
	cr_assert_eq(dprpc_all_gather_id(agent, twice, 3, "x", 1, 1000, &g, &e), -EINVAL);
	cr_assert_eq(dprpc_all_gather_id(agent, twice, 2, "x", 1, 1000, &g, &e), -EINVAL);
	cr_assert_eq(dprpc_all_gather_id(agent, beyond, 2, "x", 1, 1000, &g, &e), -ENOENT);
	cr_assert_eq(dprpc_all_gather_id(agent, far, 1, "x", 1, 1000, &g, &e), -ENOENT);
	cr_assert_eq(dprpc_all_gather_id(agent, other, 1, "x", 1, 1000, &g, &e), -EINVAL);
	cr_assert_eq(
		dprpc_all_gather_id(agent, other, DPRPC_WORLD_LIVE, "x", 1, 1000, &g, &e), -EINVAL);
	cr_assert_eq(
		dprpc_all_gather_id(agent, NULL, 0, big, sizeof(big), 1000, &g, &e), -EMSGSIZE);
	cr_assert_eq(dprpc_all_gather_id(agent, NULL, 0, big, sizeof(big), 1000, &g, NULL),
		-EMSGSIZE, "a NULL err is allowed");
	cr_assert_null(g);
}

Test(misuse, dprpc_barrier_id)
{
	const unsigned int beyond[] = {0, 2};
	const unsigned int twice[] = {0, 0};
	const unsigned int other[] = {1};

	cr_assert_eq(dprpc_barrier_id(NULL, NULL, 0, 1000, NULL), -EINVAL);
	cr_assert_eq(dprpc_barrier_id(agent, NULL, 1, 1000, NULL), -EINVAL);
	cr_assert_eq(dprpc_barrier_id(agent, beyond, 2, 1000, NULL), -ENOENT);
	cr_assert_eq(dprpc_barrier_id(agent, twice, 2, 1000, NULL), -EINVAL);
	cr_assert_eq(dprpc_barrier_id(agent, other, 1, 1000, NULL), -EINVAL);
	cr_assert_eq(dprpc_barrier_id(agent, other, DPRPC_MAX_WORKERS + 1, 1000, NULL), -EINVAL);
	/* DPRPC_WORLD_LIVE is a count only with NULL ranks. */
	cr_assert_eq(dprpc_barrier_id(agent, other, DPRPC_WORLD_LIVE, 1000, NULL), -EINVAL);
	cr_assert_eq(dprpc_barrier_id(agent, NULL, DPRPC_WORLD_LIVE - 1, 1000, NULL), -EINVAL);
}

Test(misuse, dprpc_gather_value)
{
	size_t len = 7;

	rte_errno = 0;
	cr_assert_null(dprpc_gather_value(NULL, 0, &len));
	cr_assert_eq(rte_errno, EINVAL);
	cr_assert_eq(len, 0);
	cr_assert_null(dprpc_gather_value(NULL, UINT_MAX, NULL));
}

Test(misuse, dprpc_gather_members)
{
	rte_errno = 0;
	cr_assert_eq(dprpc_gather_members(NULL), 0);
	cr_assert_eq(rte_errno, EINVAL);
}

Test(misuse, dprpc_gather_seq)
{
	rte_errno = 0;
	cr_assert_eq(dprpc_gather_seq(NULL), 0);
	cr_assert_eq(rte_errno, EINVAL);
}

Test(misuse, dprpc_gather_free)
{
	dprpc_gather_free(NULL);
}

Test(misuse, dprpc_shutdown)
{
	struct dprpc_error e = {.workers = 5};

	cr_assert_eq(dprpc_shutdown(NULL, true, 1000, &e), -EINVAL);
	cr_assert_eq(dprpc_shutdown(NULL, false, 0, NULL), -EINVAL);
	cr_assert_eq(e.workers, 5, "nothing done, err untouched");
}

/* --- the short path (dprpc_launch.h) ------------------------------------ */

Test(misuse, dprpc_launch_conf_init)
{
	struct dprpc_launch_conf c;

	dprpc_launch_conf_init(NULL);
	dprpc_launch_conf_init(&c);
	cr_assert_eq(c.rank, -1);
	cr_assert_eq(c.world_size, -1);
	cr_assert_null(c.name);
	cr_assert_eq(c.agent.lcores.io, DPRPC_LCORE_NONE);
}

Test(misuse, dprpc_store_rendezvous)
{
	char w[64], err[128];

	cr_assert_eq(dprpc_store_rendezvous(NULL, 1, "a", 0, 1, NULL, 1000, w, sizeof(w), NULL, 0),
		-EINVAL);
	cr_assert_eq(dprpc_store_rendezvous(
			     "127.0.0.1", 0, "a", 0, 1, NULL, 1000, w, sizeof(w), err, sizeof(err)),
		-EINVAL);
	cr_assert_eq(dprpc_store_rendezvous(
			     "127.0.0.1", 1, "a b", 0, 1, NULL, 1000, w, sizeof(w), NULL, 0),
		-EINVAL);
	cr_assert_eq(dprpc_store_rendezvous(
			     "127.0.0.1", 1, "mesh", 0, 1, NULL, 1000, w, sizeof(w), NULL, 0),
		-EINVAL);
	cr_assert_eq(dprpc_store_rendezvous(
			     "127.0.0.1", 1, "a", 2, 2, NULL, 1000, w, sizeof(w), NULL, 0),
		-EINVAL);
	cr_assert_eq(dprpc_store_rendezvous("127.0.0.1", 1, "a", 0, DPRPC_MAX_WORKERS + 1, NULL,
			     1000, w, sizeof(w), NULL, 0),
		-EINVAL);
	cr_assert_eq(
		dprpc_store_rendezvous("127.0.0.1", 1, "a", 0, 1, NULL, 1000, NULL, 8, NULL, 0),
		-EINVAL);
	cr_assert_eq(dprpc_store_rendezvous("no such host.invalid", 1, "a", 0, 1, NULL, 1000, w,
			     sizeof(w), err, sizeof(err)),
		-EINVAL);
	cr_assert(strstr(err, "resolve") != NULL, "%s", err);
}

Test(misuse, dprpc_launch)
{
	struct dprpc_launch_conf c;
	char err[256];

	assert_null_errno(dprpc_launch(NULL, err, sizeof(err)), EINVAL);
	dprpc_launch_conf_init(&c);
	assert_null_errno(dprpc_launch(&c, err, sizeof(err)), EINVAL); /* no name */
	c.name = "w0";
	c.rank = 3;
	c.world_size = 2;
	assert_null_errno(dprpc_launch(&c, err, sizeof(err)), EINVAL);
	cr_assert(strstr(err, "rank 3") != NULL, "%s", err);
	c.rank = 0;
	c.init_method = "udp://x:1";
	assert_null_errno(dprpc_launch(&c, err, sizeof(err)), EINVAL);
	c.init_method = "tcp://127.0.0.1:99999";
	assert_null_errno(dprpc_launch(&c, err, sizeof(err)), EINVAL);
	cr_assert(strstr(err, "99999") != NULL, "%s", err);
}

Test(misuse, dprpc_launch_shutdown)
{
	struct dprpc_error e = {.workers = 5};

	cr_assert_eq(dprpc_launch_shutdown(NULL, true, 1000, &e), -EINVAL);
	/* An agent that dprpc_launch() did not make: untouched. */
	cr_assert_eq(dprpc_launch_shutdown(agent, true, 1000, &e), -EINVAL);
	cr_assert_eq(e.workers, 5);
	cr_assert_eq(dprpc_agent_rank(agent), 0u, "still alive");
}
