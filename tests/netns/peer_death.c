/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * peer_death: a server killed with calls in flight, for netns_afpacket.sh.
 *
 *   peer_death [EAL options] -- --role server --world WORLD [--barrier]
 *   peer_death [EAL options] -- --role client --world WORLD [--peer-timeout-ms MS]
 *                                 [--barrier [--restart]]
 *
 * The server ("alice") parks every "hold" request unanswered and prints
 * "alice: serving pid PID" once its port is up; the script kills it with
 * SIGKILL.  The client ("bob") makes sure alice answers, puts a window of
 * 8 "hold" calls in flight (four without a timeout, four with a 60 s one),
 * prints "bob: 8 calls pending" and waits for them.  It exits 0 only if
 * every call failed with -EHOSTDOWN within peer_timeout + 1 s of that
 * line, the peer_event callback reported alice down once, alice's state
 * reads DOWN and a new call to her fails at once with EHOSTDOWN.
 *
 * With --barrier both do the world's rendezvous and pass a world barrier
 * first (alice before she serves, bob before his calls).  With --restart bob then waits for alice
 * to be started again by the same command (her echo answers: her new
 * incarnation), and both pass a world barrier again (his second, her
 * first), which bob must see succeed.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>

#include <dprpc/dprpc.h>
#include <dprpc/dprpc_collective.h>

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
on_peer(struct dprpc_agent *a, unsigned int rank, enum dprpc_peer_event ev, void *arg)
{
	(void)a;
	(void)arg;
	if (ev == DPRPC_PEER_EVENT_UP) {
		atomic_fetch_add(&ups, 1);
		return;
	}
	if (ev != DPRPC_PEER_EVENT_DOWN)
		return;
	atomic_store(&down_rank, (int)rank);
	atomic_fetch_add(&downs, 1);
}

/* A world barrier (the caller polls while it waits); 0 or 1, said.  At
 * start, the world's rendezvous first: a restarted worker is heard from
 * through it (the others have it down and send it nothing). */
static int
barrier(struct dprpc_agent *a, const char *who, const char *when)
{
	struct dprpc_error ce;
	char missing[64];
	int rc;

	if (strcmp(when, "at start") == 0 &&
		dprpc_world_wait(a, 30 * 1000 * 1000, missing, sizeof(missing)) != 0) {
		fprintf(stderr, "%s: rendezvous: %s missing\n", who, missing);
		return 1;
	}
	rc = dprpc_barrier(a, NULL, 0, 30 * 1000 * 1000, &ce);
	if (rc != 0) {
		fprintf(stderr, "%s: barrier %s: %d (%s)\n", who, when, rc, ce.msg);
		return 1;
	}
	printf("%s: barrier %s passed\n", who, when);
	fflush(stdout);
	return 0;
}

static int
serve(struct dprpc_agent *a, bool with_barrier)
{
	if (dprpc_register(a, "hold", hold, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(a, "echo", echo, NULL, DPRPC_HANDLER_INLINE) != 0)
		return 1;
	if (with_barrier && barrier(a, "alice", "at start") != 0)
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
	fflush(stdout); /* the restart waits for it */
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

/* Alice started again: her echo answers (bounded, 30 s), then a barrier.
 * A call to her fails at once while she is down: between tries this
 * polls, which lets her rendezvous be answered and her heard from. */
static int
after_restart(struct dprpc_agent *a)
{
	uint64_t hz = rte_get_tsc_hz(), t0;
	char out[8];
	size_t len;
	int rc = -1;

	for (int i = 0; i < 300 && rc != 0; i++) {
		len = sizeof(out);
		rc = dprpc_rpc_sync(a, "alice", "echo", "hi", 2, 100 * 1000, out, &len, NULL);
		for (t0 = rte_rdtsc(); rc != 0 && rte_rdtsc() - t0 < hz / 10;)
			dprpc_poll(a, 32);
	}
	if (rc != 0) {
		fprintf(stderr, "bob: the restarted alice never answered: %d\n", rc);
		return 1;
	}
	printf("bob: the restarted alice answers\n");
	fflush(stdout);
	return barrier(a, "bob", "after alice's restart");
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"role", required_argument, NULL, 'r'},
		{"world", required_argument, NULL, 'w'},
		{"peer-timeout-ms", required_argument, NULL, 't'},
		{"barrier", no_argument, NULL, 'b'},
		{"restart", no_argument, NULL, 'R'},
		{NULL, 0, NULL, 0},
	};
	bool with_barrier = false, restart = false;
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
		else if (opt == 'b')
			with_barrier = true;
		else if (opt == 'R')
			restart = true;
		else
			return 2;
	}
	if (role == NULL || world == NULL || timeout_ms < 100 || (restart && !with_barrier) ||
		(strcmp(role, "server") != 0 && strcmp(role, "client") != 0)) {
		fprintf(stderr, "usage: peer_death [EAL] -- --role server|client --world W "
				"[--peer-timeout-ms MS] [--barrier [--restart]]\n");
		return 2;
	}
	dprpc_agent_conf_init(&c);
	c.name = strcmp(role, "server") == 0 ? "alice" : "bob";
	c.world = world;
	c.port.id = 0;
	c.liveness.keepalive_us = timeout_ms * 1000 / 10;
	c.liveness.peer_timeout_us = timeout_ms * 1000;
	c.liveness.peer_event = on_peer;
	a = dprpc_agent_create(&c);
	if (a == NULL) {
		fprintf(stderr, "peer_death: agent: %s\n", rte_strerror(rte_errno));
		return 2;
	}
	if (dprpc_agent_wait_link(a, 20 * 1000 * 1000) != 0) {
		fprintf(stderr, "peer_death: no link\n");
		return 2;
	}
	if (strcmp(role, "server") == 0) {
		rc = serve(a, with_barrier);
	} else {
		rc = with_barrier ? barrier(a, "bob", "at start") : 0;
		if (rc == 0)
			rc = call(a, timeout_ms);
		if (rc == 0 && restart)
			rc = after_restart(a);
	}
	if (dprpc_agent_destroy(a) != 0)
		rc = 1;
	dprpc_eal_cleanup();
	return rc;
}
