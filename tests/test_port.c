/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What an agent does to the port it is given (dprpc_conf.h, struct
 * dprpc_agent_conf, "The port"): a port the application configured and
 * started (port_ready) is used on the queues named and is never
 * reconfigured, started or stopped; a port handed over stopped with at most
 * one queue each way is configured by the agent and stopped at destroy; any
 * other port, queue or port id is refused and the port left untouched.
 * net_ring ports: their link is up exactly while they are started.
 */
#include <errno.h>
#include <string.h>

#include <criterion/criterion.h>

#include <rte_errno.h>

#include "dpt.h"

#define NQ 4

static struct rte_mempool *mp;
/* Agents of a test that stops half-way, for teardown (b's io lcore must
 * stop before EAL does). */
static struct dprpc_agent *a, *b;

/* A net_ring port of NQ rx and NQ tx queues: queue i receives from rx[i]
 * and sends to tx[i]. */
struct quad {
	struct rte_ring *rx[NQ], *tx[NQ];
	uint16_t port;
};

static void
quad_make(struct quad *q)
{
	char name[32];
	int port;

	for (unsigned int i = 0; i < NQ; i++) {
		snprintf(name, sizeof(name), "dpt_q_rx%u", i);
		q->rx[i] = rte_ring_create(name, 256, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "dpt_q_tx%u", i);
		q->tx[i] = rte_ring_create(name, 256, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
		cr_assert(q->rx[i] != NULL && q->tx[i] != NULL);
	}
	port = rte_eth_from_rings("dpt_quad", q->rx, NQ, q->tx, NQ, SOCKET_ID_ANY);
	cr_assert_geq(port, 0);
	q->port = (uint16_t)port;
}

/* What the application does with its own port: @nq queues each way. */
static void
app_configure(uint16_t port, uint16_t nq, bool start)
{
	struct rte_eth_conf conf;

	memset(&conf, 0, sizeof(conf));
	cr_assert_eq(rte_eth_dev_configure(port, nq, nq, &conf), 0);
	for (uint16_t i = 0; i < nq; i++) {
		cr_assert_eq(rte_eth_rx_queue_setup(port, i, 256, SOCKET_ID_ANY, NULL, mp), 0);
		cr_assert_eq(rte_eth_tx_queue_setup(port, i, 256, SOCKET_ID_ANY, NULL), 0);
	}
	if (start)
		cr_assert_eq(rte_eth_dev_start(port), 0);
}

/* The port has @nq queues each way and is started or not. */
static void
expect_port(uint16_t port, uint16_t nq, bool started)
{
	struct rte_eth_dev_info info;
	struct rte_eth_link link;

	cr_assert_eq(rte_eth_dev_info_get(port, &info), 0);
	cr_expect_eq(info.nb_rx_queues, nq, "rx queues %u, expected %u", info.nb_rx_queues, nq);
	cr_expect_eq(info.nb_tx_queues, nq, "tx queues %u, expected %u", info.nb_tx_queues, nq);
	cr_assert_eq(rte_eth_link_get_nowait(port, &link), 0);
	cr_expect_eq(link.link_status == RTE_ETH_LINK_UP, started, "port %u %s", port,
		started ? "stopped" : "started");
}

/* The application still sends and receives on its queue 0 of @q. */
static void
expect_app_queue0_works(struct quad *q)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp), *got[4];

	cr_assert_not_null(m);
	cr_assert_not_null(rte_pktmbuf_append(m, 64));
	cr_assert_eq(rte_eth_tx_burst(q->port, 0, &m, 1), 1);
	cr_assert_eq(rte_ring_count(q->tx[0]), 1u);
	cr_assert_eq(rte_ring_dequeue(q->tx[0], (void **)&m), 0);
	cr_assert_eq(rte_ring_enqueue(q->rx[0], m), 0);
	cr_assert_eq(rte_eth_rx_burst(q->port, 0, got, 4), 1);
	cr_assert_eq(got[0], m);
	rte_pktmbuf_free(m);
}

static void
conf_for(struct dprpc_agent_conf *c, const char *name, int port)
{
	dprpc_agent_conf_init(c);
	c->name = name;
	c->world = DPT_WORLD2;
	c->port.id = port;
	c->port.mbuf_pool = mp;
}

/* Create must fail with @err. */
static void
expect_refused(const struct dprpc_agent_conf *c, int err)
{
	struct dprpc_agent *got;

	rte_errno = 0;
	got = dprpc_agent_create(c);
	if (got != NULL)
		(void)dprpc_agent_destroy(got);
	cr_assert_null(got, "create succeeded");
	cr_assert_eq(rte_errno, err, "rte_errno %d (%s), expected %d", rte_errno,
		rte_strerror(rte_errno), err);
}

static void
setup(void)
{
	cr_assert_geq(dpt_eal_init("port"), 0);
	mp = rte_pktmbuf_pool_create(
		"dpt_port", 2047, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	cr_assert_not_null(mp);
}

static void
teardown(void)
{
	if (a != NULL)
		cr_expect_eq(dprpc_agent_destroy(a), 0);
	if (b != NULL)
		cr_expect_eq(dprpc_agent_destroy(b), 0);
	cr_expect_eq(rte_mempool_in_use_count(mp), 0u, "mbufs leaked");
	dpt_eal_cleanup();
}

TestSuite(port, .init = setup, .fini = teardown, .timeout = 60);

/* The application's port, 4 queues each way, started; the agent on queue 2
 * talks to b (on the other end of queue 2's rings) and leaves the rest. */
Test(port, ready_port_keeps_its_queues_and_stays_started)
{
	struct dprpc_agent_conf c;
	struct quad q;
	char out[8];
	size_t out_len = sizeof(out);
	int port_b;

	quad_make(&q);
	app_configure(q.port, NQ, true);
	port_b = rte_eth_from_rings("dpt_q_b", &q.tx[2], 1, &q.rx[2], 1, SOCKET_ID_ANY);
	cr_assert_geq(port_b, 0);
	conf_for(&c, "b", port_b);
	c.lcores.io = 1;
	b = dprpc_agent_create(&c);
	cr_assert_not_null(b, "%s", rte_strerror(rte_errno));
	cr_assert_eq(dprpc_register(b, "echo", dpt_echo, NULL, DPRPC_HANDLER_INLINE), 0);

	conf_for(&c, "a", q.port);
	c.port.ready = true;
	c.port.rx_queue = 2;
	c.port.tx_queue = 2;
	a = dprpc_agent_create(&c);
	cr_assert_not_null(a, "%s", rte_strerror(rte_errno));
	expect_port(q.port, NQ, true);
	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "q2", 2, 0, out, &out_len, NULL), 0);
	cr_assert_eq(out_len, 2u);
	cr_assert_arr_eq(out, "q2", 2);
	/* Nothing on the application's other queues. */
	for (unsigned int i = 0; i < NQ; i++)
		if (i != 2)
			cr_assert_eq(rte_ring_count(q.tx[i]), 0u, "agent sent on queue %u", i);
	cr_assert_eq(dprpc_agent_destroy(a), 0);
	a = NULL;
	cr_assert_eq(dprpc_agent_destroy(b), 0);
	b = NULL;

	/* The application's port as it was: started, 4 queues, working. */
	expect_port(q.port, NQ, true);
	expect_app_queue0_works(&q);
	for (unsigned int i = 0; i < NQ; i++) {
		dpt_ring_drain(q.rx[i]);
		dpt_ring_drain(q.tx[i]);
	}
}

/* A queue the port does not have: refused, the port untouched. */
Test(port, ready_port_bad_queue_is_refused_untouched)
{
	struct dprpc_agent_conf c;
	struct quad q;

	quad_make(&q);
	app_configure(q.port, NQ, true);
	conf_for(&c, "a", q.port);
	c.port.ready = true;
	c.port.rx_queue = NQ;
	c.port.tx_queue = 0;
	expect_refused(&c, EINVAL);
	expect_port(q.port, NQ, true);
	c.port.rx_queue = 0;
	c.port.tx_queue = NQ;
	expect_refused(&c, EINVAL);
	expect_port(q.port, NQ, true);
	c.port.rx_queue = UINT16_MAX;
	c.port.tx_queue = UINT16_MAX;
	expect_refused(&c, EINVAL);
	expect_port(q.port, NQ, true);
	expect_app_queue0_works(&q);
}

/* port_ready says started: a port that is not is refused, and the agent
 * neither starts nor configures it. */
Test(port, ready_port_not_started_is_refused)
{
	struct dprpc_agent_conf c;
	struct quad q;

	quad_make(&q);
	conf_for(&c, "a", q.port);
	c.port.ready = true;
	c.port.rx_queue = 1;
	c.port.tx_queue = 1;
	/* Never configured (net_ring reports its rings as queues). */
	expect_refused(&c, EINVAL);
	expect_port(q.port, NQ, false);
	/* Configured, not started. */
	app_configure(q.port, NQ, false);
	expect_refused(&c, EINVAL);
	expect_port(q.port, NQ, false);
	/* Started: accepted. */
	cr_assert_eq(rte_eth_dev_start(q.port), 0);
	a = dprpc_agent_create(&c);
	cr_assert_not_null(a, "%s", rte_strerror(rte_errno));
	cr_assert_eq(dprpc_agent_destroy(a), 0);
	a = NULL;
	expect_port(q.port, NQ, true);
}

/* A port handed over unconfigured: the agent configures one queue each
 * way and starts it; destroy stops it and leaves it configured, so a new
 * agent (a restart) takes it again. */
Test(port, handed_over_port_is_configured_then_stopped)
{
	struct dpt_ring_pair pair;
	struct dprpc_agent_conf c;

	cr_assert_eq(dpt_ring_pair(&pair), 0);
	/* net_ring reports its rings as queues before it is configured. */
	expect_port((uint16_t)pair.port_a, 1, false);
	conf_for(&c, "a", pair.port_a);
	for (int round = 0; round < 2; round++) {
		a = dprpc_agent_create(&c);
		cr_assert_not_null(a, "round %d: %s", round, rte_strerror(rte_errno));
		expect_port((uint16_t)pair.port_a, 1, true);
		cr_assert_eq(dprpc_agent_destroy(a), 0);
		a = NULL;
		expect_port((uint16_t)pair.port_a, 1, false);
	}
}

/* A port with several queues, stopped or started, is not the agent's to
 * configure: refused, untouched. */
Test(port, configured_port_is_not_reconfigured)
{
	struct dprpc_agent_conf c;
	struct quad q;

	quad_make(&q);
	conf_for(&c, "a", q.port);
	/* As net_ring makes it: it reports 4 queues each way. */
	expect_refused(&c, EBUSY);
	expect_port(q.port, NQ, false);
	/* Configured by the application. */
	app_configure(q.port, NQ, false);
	expect_refused(&c, EBUSY);
	expect_port(q.port, NQ, false);
	cr_assert_eq(rte_eth_dev_start(q.port), 0);
	expect_refused(&c, EBUSY);
	expect_port(q.port, NQ, true);
	expect_app_queue0_works(&q);
}

/* One queue each way, but started by the application: refused too. */
Test(port, started_port_is_not_taken_over)
{
	struct dpt_ring_pair pair;
	struct dprpc_agent_conf c;

	cr_assert_eq(dpt_ring_pair(&pair), 0);
	app_configure((uint16_t)pair.port_a, 1, true);
	conf_for(&c, "a", pair.port_a);
	expect_refused(&c, EBUSY);
	expect_port((uint16_t)pair.port_a, 1, true);
}

/* Port ids that name no port, with or without port_ready. */
Test(port, invalid_port_id_is_refused)
{
	struct dpt_ring_pair pair;
	struct dprpc_agent_conf c;

	cr_assert_eq(dpt_ring_pair(&pair), 0);
	for (int ready = 0; ready < 2; ready++) {
		conf_for(&c, "a", RTE_MAX_ETHPORTS - 1);
		c.port.ready = ready;
		expect_refused(&c, EINVAL);
		conf_for(&c, "a", RTE_MAX_ETHPORTS);
		c.port.ready = ready;
		expect_refused(&c, EINVAL);
		/* Not a uint16_t: not an alias of port_a. */
		conf_for(&c, "a", 0x10000 + pair.port_a);
		c.port.ready = ready;
		expect_refused(&c, EINVAL);
	}
	expect_port((uint16_t)pair.port_a, 1, false);
}

/* Queues only mean something with port_ready, and port_ready only with a
 * port of the application's (a vdev is the agent's). */
Test(port, queues_and_port_ready_need_the_applications_port)
{
	struct dpt_ring_pair pair;
	struct dprpc_agent_conf c;

	cr_assert_eq(dpt_ring_pair(&pair), 0);
	conf_for(&c, "a", pair.port_a);
	c.port.rx_queue = 1;
	expect_refused(&c, EINVAL);
	c.port.rx_queue = 0;
	c.port.tx_queue = 1;
	expect_refused(&c, EINVAL);
	expect_port((uint16_t)pair.port_a, 1, false);
	conf_for(&c, "a", -1);
	c.port.vdev = "net_ring_dpt_never";
	c.port.ready = true;
	expect_refused(&c, EINVAL);
	cr_assert_eq(rte_eth_dev_count_avail(), 2u, "a vdev was created");
}
