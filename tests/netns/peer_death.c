/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * peer_death: a server killed with calls in flight, for netns_afpacket.sh.
 *
 *   peer_death [EAL options] -- --role server --world WORLD
 *   peer_death [EAL options] -- --role client --world WORLD [--peer-timeout-ms MS]
 *
 * The server ("alice") parks every "hold" request unanswered and prints
 * "alice: serving pid PID" once its port is up; the script kills it with
 * SIGKILL.  The client ("bob") makes sure alice answers, puts a window of
 * 8 "hold" calls in flight (four without a timeout, four with a 60 s one),
 * prints "bob: 8 calls pending" and waits for them.  It exits 0 only if
 * every call failed with -EHOSTDOWN within peer_timeout + 1 s of that
 * line, the peer_event callback reported alice down once, alice's state
 * reads DOWN and a new call to her fails at once with EHOSTDOWN.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>

#include <dprpc/dprpc.h>

#define NB_CALLS 8

static struct dprpc_request *held[1024];
static unsigned int nb_held;

/* Parks the request: answered by nobody (the process is killed). */
static int
hold(struct dprpc_request *req, void *arg)
{
	(void)arg;
	if (nb_held == sizeof(held) / sizeof(held[0]))
		return -ENOSPC;
	held[nb_held++] = req;
	return DPRPC_DEFERRED;
}

static int
echo(struct dprpc_request *req, void *arg)
{
	size_t len;
	const void *p = dprpc_request_payload(req, &len);

	(void)arg;
	return dprpc_reply(req, p, len);
}

static atomic_uint downs, ups;
static atomic_int down_rank = -1;

static void
on_peer(struct dprpc_agent *a, unsigned int rank, bool up, void *arg)
{
	(void)a;
	(void)arg;
	if (up) {
		atomic_fetch_add(&ups, 1);
		return;
	}
	atomic_store(&down_rank, (int)rank);
	atomic_fetch_add(&downs, 1);
}

static int
serve(struct dprpc_agent *a)
{
	if (dprpc_register(a, "hold", hold, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(a, "echo", echo, NULL, DPRPC_HANDLER_INLINE) != 0)
		return 1;
	printf("alice: serving pid %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		dprpc_poll(a, 32);
}

static int
call(struct dprpc_agent *a, uint32_t timeout_ms)
{
	struct dprpc_future *fs[NB_CALLS];
	struct dprpc_error err;
	uint64_t t0, ms, bound_ms = timeout_ms + 1000, hz = rte_get_tsc_hz();
	unsigned int i, bad = 0;
	int rc, alice = dprpc_worker_rank(a, "alice");
	char out[8];
	size_t len = sizeof(out);

	rc = dprpc_rpc_sync(a, "alice", "echo", "hi", 2, 5 * 1000 * 1000, out, &len, &err);
	if (rc != 0) {
		fprintf(stderr, "bob: alice does not answer: %d %s\n", rc, err.msg);
		return 1;
	}
	for (i = 0; i < NB_CALLS; i++) {
		fs[i] = dprpc_rpc_async(a, "alice", "hold", &i, sizeof(i),
			i % 2 ? 60 * 1000 * 1000 : DPRPC_TIMEOUT_NONE);
		if (fs[i] == NULL) {
			fprintf(stderr, "bob: call %u: %s\n", i, rte_strerror(rte_errno));
			return 1;
		}
	}
	/* Let them reach alice (she is heard from meanwhile: keep-alives). */
	t0 = rte_rdtsc();
	while (rte_rdtsc() - t0 < hz / 5)
		dprpc_poll(a, 32);
	printf("bob: %u calls pending\n", NB_CALLS);
	fflush(stdout);
	t0 = rte_rdtsc();
	for (i = 0; i < NB_CALLS; i++) {
		rc = dprpc_future_wait(fs[i], bound_ms * 1000);
		if (rc != -EHOSTDOWN) {
			const struct dprpc_error *e = dprpc_future_error(fs[i]);

			fprintf(stderr, "bob: call %u ended with %d (%s), not -EHOSTDOWN\n", i, rc,
				e != NULL ? e->msg : "");
			bad++;
		}
		dprpc_future_put(fs[i]);
	}
	ms = (rte_rdtsc() - t0) * 1000 / hz;
	printf("bob: %u of %u calls failed with -EHOSTDOWN %" PRIu64
	       " ms after they were pending (peer_timeout %u ms); peer_event: %u down (rank %d), "
	       "%u up\n",
		NB_CALLS - bad, NB_CALLS, ms, timeout_ms, atomic_load(&downs),
		atomic_load(&down_rank), atomic_load(&ups));
	if (ms > bound_ms) {
		fprintf(stderr, "bob: over the bound of %" PRIu64 " ms\n", bound_ms);
		bad++;
	}
	if (atomic_load(&downs) != 1 || atomic_load(&down_rank) != alice) {
		fprintf(stderr, "bob: peer_event did not report alice down once\n");
		bad++;
	}
	if (dprpc_worker_state(a, (unsigned int)alice) != DPRPC_PEER_DOWN) {
		fprintf(stderr, "bob: alice's state is not DOWN\n");
		bad++;
	}
	if (dprpc_rpc_async(a, "alice", "echo", "x", 1, 0) != NULL || rte_errno != EHOSTDOWN) {
		fprintf(stderr, "bob: a new call to alice did not fail with EHOSTDOWN\n");
		bad++;
	}
	return bad == 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"role", required_argument, NULL, 'r'},
		{"world", required_argument, NULL, 'w'},
		{"peer-timeout-ms", required_argument, NULL, 't'},
		{NULL, 0, NULL, 0},
	};
	const char *role = NULL, *world = NULL;
	uint32_t timeout_ms = 500;
	struct dprpc_agent_conf c;
	struct dprpc_agent *a;
	int n, opt, rc;

	n = dprpc_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "peer_death: EAL: %s\n", rte_strerror(-n));
		return 2;
	}
	argc -= n;
	argv += n;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt == 'r')
			role = optarg;
		else if (opt == 'w')
			world = optarg;
		else if (opt == 't')
			timeout_ms = (uint32_t)strtoul(optarg, NULL, 0);
		else
			return 2;
	}
	if (role == NULL || world == NULL || timeout_ms < 100 ||
		(strcmp(role, "server") != 0 && strcmp(role, "client") != 0)) {
		fprintf(stderr, "usage: peer_death [EAL] -- --role server|client --world W "
				"[--peer-timeout-ms MS]\n");
		return 2;
	}
	dprpc_agent_conf_init(&c);
	c.name = strcmp(role, "server") == 0 ? "alice" : "bob";
	c.world = world;
	c.port_id = 0;
	c.keepalive_us = timeout_ms * 1000 / 10;
	c.peer_timeout_us = timeout_ms * 1000;
	c.peer_event = on_peer;
	a = dprpc_agent_create(&c);
	if (a == NULL) {
		fprintf(stderr, "peer_death: agent: %s\n", rte_strerror(rte_errno));
		return 2;
	}
	if (dprpc_agent_wait_link(a, 20 * 1000 * 1000) != 0) {
		fprintf(stderr, "peer_death: no link\n");
		return 2;
	}
	rc = strcmp(role, "server") == 0 ? serve(a) : call(a, timeout_ms);
	if (dprpc_agent_destroy(a) != 0)
		rc = 1;
	dprpc_eal_cleanup();
	return rc;
}
