/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * world_demo: one worker of the demo world (scripts/dev.sh demo starts
 * four or more of them, one process each, joined by a memif link per pair
 * of workers: "mesh memif:DIR" in the world map, docs/worlds.md).  Public
 * API only, like any application.
 *
 *   world_demo [EAL options] -- --name NAME --world WORLD --join-signal FILE
 *              [--join MEMBER]
 *
 * Ranks give the roles: rank 0 drives (creates the RRef, starts the
 * chain), rank 1 owns the RRef, rank 2 receives its fork, the last rank
 * leaves the world.  The steps, each ended by a barrier of the world so
 * that the printed lines come in step order:
 *   1. rendezvous (dprpc_world_wait());
 *   2. all-to-all: every worker calls every worker, itself included, all
 *      calls in flight at once, every answer checked;
 *   3. all_gather of "name/pid" (dprpc_all_gather());
 *   4. an RRef across three workers: rank 0 creates it on rank 1
 *      (dprpc_remote()), forks it to rank 2, both fetch the value
 *      (to_here) and release it; the owner sees its value freed;
 *   5. a nested chain rank 0 -> 1 -> 2 -> 0: each hop's handler defers its
 *      reply until the next hop answered, and prefixes its name;
 *   6. a worker joins the running world: rank 0 creates FILE, the joiner
 *      (started with --join MEMBER and a map of its own line, rank "-",
 *      and the mesh) waits for it and joins through MEMBER
 *      (dprpc_world_join()); every member's peer_event tells it, its world
 *      grows, and every worker calls every worker of the grown world;
 *   7. the last rank of the start-up map leaves (dprpc_world_leave()) and
 *      exits; the others see it left (DPRPC_PEER_LEFT) and a call to it
 *      fails -ESHUTDOWN;
 *   8. graceful shutdown of those still in the world, the joiner too
 *      (dprpc_shutdown()).
 * Exit status 0 only if every step held; each failure prints a line and
 * exits with its own status.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_errno.h>

#include <dprpc/dprpc.h>
#include <dprpc/dprpc_collective.h>

#define TIMEOUT_US (30ull * 1000 * 1000)
#define CHAIN_MAX  256

static const char *name = "world_demo";
static unsigned int my_rank, nw;
/* The rank of the worker that joined, as this member's peer_event told it
 * (written on the poller, read by the main thread). */
static _Atomic int joined_rank = -1;
static struct dprpc_rref *forked; /* rank 2: the RRef rebuilt from its fork */

#define FAIL(code, ...)                        \
	do {                                   \
		fprintf(stderr, "%s: ", name); \
		fprintf(stderr, __VA_ARGS__);  \
		fprintf(stderr, "\n");         \
		exit(code);                    \
	} while (0)

#define SAY(...)                         \
	do {                             \
		printf("  %-6s ", name); \
		printf(__VA_ARGS__);     \
		printf("\n");            \
		fflush(stdout);          \
	} while (0)

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* "mul": x * 7 + the server's rank; the caller knows what to expect. */
static int
h_mul(struct dprpc_request *req, void *arg)
{
	size_t len;
	const uint64_t *x = dprpc_request_payload(req, &len);
	uint64_t v;

	(void)arg;
	if (len != sizeof(v))
		return dprpc_reply_error(req, -EINVAL, "want 8 bytes");
	v = *x * 7 + my_rank;
	return dprpc_reply(req, &v, sizeof(v));
}

/* "make": the RRef's value, made on its owner. */
static int
h_make(struct dprpc_request *req, void *arg)
{
	char v[64];
	int n = snprintf(v, sizeof(v), "a value made on %s", name);

	(void)arg;
	return dprpc_reply(req, v, (size_t)n + 1);
}

/* "take_rref": the fork data of an RRef; rebuilt here, kept for main(). */
static int
h_take_rref(struct dprpc_request *req, void *arg)
{
	size_t len;
	const void *p = dprpc_request_payload(req, &len);

	(void)arg;
	if (forked != NULL)
		return dprpc_reply_error(req, -EEXIST, "already holding one");
	forked = dprpc_rref_from_fork(dprpc_request_agent(req), p, len);
	if (forked == NULL)
		return dprpc_reply_error(req, -rte_errno, "from_fork failed");
	return dprpc_reply(req, NULL, 0);
}

/* A hop of the chain answered: prefix our name and answer ours. */
static void
chain_done(struct dprpc_future *f, void *arg)
{
	struct dprpc_request *req = arg;
	const struct dprpc_error *e = dprpc_future_error(f);
	char out[CHAIN_MAX];
	const char *v;
	size_t len;

	if (e != NULL) {
		(void)dprpc_reply_error(req, e->code, e->msg);
		return;
	}
	v = dprpc_future_value(f, &len);
	snprintf(out, sizeof(out), "%s>%.*s", name, (int)len, v);
	(void)dprpc_reply(req, out, strlen(out) + 1);
}

/* "chain": payload = hops left.  0: answer our name; else call the next
 * rank (mod 3) with one hop less and answer once it did (deferred: an
 * inline handler must not wait). */
static int
h_chain(struct dprpc_request *req, void *arg)
{
	size_t len;
	const uint32_t *hops = dprpc_request_payload(req, &len);
	struct dprpc_future *f;
	uint32_t next;
	int rc;

	(void)arg;
	if (len != sizeof(*hops))
		return dprpc_reply_error(req, -EINVAL, "want 4 bytes");
	if (*hops == 0)
		return dprpc_reply(req, name, strlen(name));
	next = *hops - 1;
	f = dprpc_rpc_async_id(dprpc_request_agent(req), (my_rank + 1) % 3,
		dprpc_handler_id("chain"), &next, sizeof(next), TIMEOUT_US);
	if (f == NULL)
		return -rte_errno;
	rc = dprpc_future_add_callback(f, chain_done, req);
	dprpc_future_put(f);
	return rc == 0 ? DPRPC_DEFERRED : rc;
}

static void
barrier(struct dprpc_agent *a, const char *step)
{
	struct dprpc_error e;
	int rc = dprpc_barrier(a, NULL, 0, TIMEOUT_US, &e);

	if (rc != 0)
		FAIL(30, "barrier after %s: %d (%s)", step, rc, e.msg);
}

/* Rank 0 names the step; the barrier keeps the others' lines after it. */
static void
step(struct dprpc_agent *a, const char *what)
{
	if (my_rank == 0) {
		printf("== %s\n", what);
		fflush(stdout);
	}
	barrier(a, what);
}

static void
all_to_all(struct dprpc_agent *a)
{
	struct dprpc_future *f[DPRPC_MAX_WORKERS];
	uint64_t x[DPRPC_MAX_WORKERS];
	unsigned int i;

	for (i = 0; i < nw; i++) {
		x[i] = (uint64_t)my_rank << 32 | i;
		f[i] = dprpc_rpc_async_id(
			a, i, dprpc_handler_id("mul"), &x[i], sizeof(x[i]), TIMEOUT_US);
		if (f[i] == NULL)
			FAIL(10, "call to rank %u: %s", i, rte_strerror(rte_errno));
	}
	for (i = 0; i < nw; i++) {
		const uint64_t *v;
		size_t len;
		int rc = dprpc_future_wait(f[i], 0);

		if (rc != 0)
			FAIL(11, "call to rank %u: %d (%s)", i, rc, dprpc_future_error(f[i])->msg);
		v = dprpc_future_value(f[i], &len);
		if (len != sizeof(*v) || *v != x[i] * 7 + i)
			FAIL(12, "rank %u answered a wrong value", i);
		dprpc_future_put(f[i]);
	}
	SAY("called all %u workers at once (itself included): %u answers checked", nw, nw);
}

static void
gather(struct dprpc_agent *a)
{
	struct dprpc_gather *g = NULL;
	struct dprpc_error e;
	char v[64], line[512];
	int n = snprintf(v, sizeof(v), "%s/pid %d", name, (int)getpid()), rc, off = 0;

	rc = dprpc_all_gather(a, NULL, 0, v, (size_t)n + 1, TIMEOUT_US, &g, &e);
	if (rc != 0)
		FAIL(13, "all_gather: %d (%s)", rc, e.msg);
	for (unsigned int i = 0; i < nw; i++) {
		size_t len;
		const char *s = dprpc_gather_value(g, i, &len);

		if (s == NULL || len == 0)
			FAIL(14, "all_gather: no value of rank %u", i);
		off += snprintf(line + off, sizeof(line) - (size_t)off, "%s%s", i ? ", " : "", s);
	}
	SAY("all_gather #%" PRIu64 ": %s", dprpc_gather_seq(g), line);
	dprpc_gather_free(g);
}

static void
rref_fetch(struct dprpc_rref *r, const char *who)
{
	char v[64];
	size_t len = sizeof(v);
	struct dprpc_error e;
	int rc = dprpc_rref_to_here(r, TIMEOUT_US, v, &len, &e);

	if (rc != 0)
		FAIL(15, "to_here: %d (%s)", rc, e.msg);
	SAY("%s: to_here of the RRef owned by %s: \"%s\"", who, dprpc_rref_owner_name(r), v);
}

static void
rref_step(struct dprpc_agent *a)
{
	struct dprpc_rref_debug d;
	uint8_t fork[DPRPC_RREF_FORK_SIZE];
	struct dprpc_future *cf;
	struct dprpc_rref *r;
	int rc;

	if (my_rank == 0) {
		r = dprpc_remote_id(a, 1, dprpc_handler_id("make"), NULL, 0, TIMEOUT_US);
		if (r == NULL)
			FAIL(16, "remote: %s", rte_strerror(rte_errno));
		cf = dprpc_rref_creation_future(r);
		rc = dprpc_future_wait(cf, 0);
		dprpc_future_put(cf);
		if (rc != 0)
			FAIL(16, "creation: %d", rc);
		SAY("created an RRef on %s (remote), confirmed by its owner",
			dprpc_rref_owner_name(r));
		rc = dprpc_rref_fork_to(r, 2, fork, sizeof(fork));
		if (rc < 0)
			FAIL(17, "fork: %d", rc);
		rc = dprpc_rpc_sync_id(a, 2, dprpc_handler_id("take_rref"), fork, (size_t)rc,
			TIMEOUT_US, NULL, NULL, NULL);
		if (rc != 0)
			FAIL(17, "take_rref: %d", rc);
		SAY("forked it to rank 2 inside a call");
		rref_fetch(r, "creator");
		if (dprpc_rref_release(r) != 0)
			FAIL(18, "release");
	}
	barrier(a, "rref fork");
	if (my_rank == 2) {
		if (forked == NULL)
			FAIL(19, "no forked RRef came");
		rref_fetch(forked, "child");
		if (dprpc_rref_release(forked) != 0)
			FAIL(18, "release");
		forked = NULL;
	}
	barrier(a, "rref fetch");
	if (my_rank == 1) {
		/* Both users released: their deletions reach the owner, which
		 * frees the value. */
		for (int i = 0; i < 5000; i++) {
			if (dprpc_rref_debug_get(a, &d) != 0)
				FAIL(20, "rref debug");
			if (d.num_owner_rrefs == 0 && d.num_forks == 0)
				break;
			usleep(1000);
		}
		if (d.num_owner_rrefs != 0 || d.num_forks != 0)
			FAIL(20, "owner still holds %" PRIu64 " values, %" PRIu64 " users",
				d.num_owner_rrefs, d.num_forks);
		SAY("owner: both users released, value freed (0 RRefs, 0 users)");
	}
	if (dprpc_rref_debug_get(a, &d) != 0 || d.num_users != 0 || d.num_pending_forks != 0)
		FAIL(20, "RRef users left");
}

static void
chain_step(struct dprpc_agent *a)
{
	uint32_t hops = 2;
	char out[CHAIN_MAX];
	size_t len = sizeof(out) - 1;
	struct dprpc_error e;
	int rc;

	if (my_rank != 0)
		return;
	rc = dprpc_rpc_sync_id(
		a, 1, dprpc_handler_id("chain"), &hops, sizeof(hops), TIMEOUT_US, out, &len, &e);
	if (rc != 0)
		FAIL(21, "chain: %d (%s)", rc, e.msg);
	out[len] = '\0';
	SAY("chain rank 0 -> 1 -> 2 -> 0, each hop deferred its reply: \"%s\"", out);
}

/* peer_event: a worker joined, or one went down, came back, restarted or
 * left. */
static void
peer_event(struct dprpc_agent *a, unsigned int rank, enum dprpc_peer_event ev, void *arg)
{
	(void)a;
	(void)arg;
	if (ev == DPRPC_PEER_EVENT_JOINED)
		joined_rank = (int)rank;
}

/* A member's side of the join: rank 0 lets the joiner go (@signal), then
 * every member waits until its world has grown. */
static void
join_step(struct dprpc_agent *a, const char *signal)
{
	FILE *f;
	int i;

	if (my_rank == 0) {
		f = fopen(signal, "w");
		if (f == NULL || fclose(f) != 0)
			FAIL(40, "cannot create %s", signal);
	}
	for (i = 0; i < 30000 && (dprpc_world_size(a) == nw || joined_rank < 0); i++)
		usleep(1000);
	if (dprpc_world_size(a) != nw + 1 || joined_rank != (int)nw)
		FAIL(41, "no worker joined (world of %u, peer_event rank %d)", dprpc_world_size(a),
			joined_rank);
	SAY("peer_event: %s joined as rank %d; the world has %u workers",
		dprpc_worker_name(a, (unsigned int)joined_rank), joined_rank, nw + 1);
	nw++;
}

/* The joiner: waits for @signal, then joins through @member. */
static void
join_world(struct dprpc_agent *a, const char *member, const char *signal)
{
	uint64_t t0;
	int i, rc;

	for (i = 0; i < 60000 && access(signal, F_OK) != 0; i++)
		usleep(1000);
	t0 = now_us();
	rc = dprpc_world_join(a, member, TIMEOUT_US);
	if (rc != 0)
		FAIL(42, "join through %s: %d", member, rc);
	my_rank = dprpc_agent_rank(a);
	nw = dprpc_world_size(a);
	SAY("joined the running world through %.*s as rank %u of %u (%" PRIu64 " ms)",
		(int)strcspn(member, " "), member, my_rank, nw, (now_us() - t0) / 1000);
}

static const struct dprpc_handler_def handlers[] = {
	{"mul", h_mul, NULL, DPRPC_HANDLER_INLINE},
	{"make", h_make, NULL, DPRPC_HANDLER_INLINE},
	{"take_rref", h_take_rref, NULL, DPRPC_HANDLER_INLINE},
	{"chain", h_chain, NULL, DPRPC_HANDLER_INLINE},
};

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"name", required_argument, NULL, 'n'},
		{"world", required_argument, NULL, 'w'},
		{"join", required_argument, NULL, 'j'},
		{"join-signal", required_argument, NULL, 's'},
		{NULL, 0, NULL, 0},
	};
	const char *world = NULL, *join = NULL, *signal = NULL;
	struct dprpc_worker_info wi;
	struct dprpc_agent_conf c;
	struct dprpc_error ce;
	struct dprpc_agent *a;
	char missing[256];
	uint64_t t0;
	int n, opt, rc;
	unsigned int last;

	n = dprpc_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "world_demo: EAL: %s\n", rte_strerror(-n));
		return 2;
	}
	argc -= n;
	argv += n;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt == 'n')
			name = optarg;
		else if (opt == 'w')
			world = optarg;
		else if (opt == 'j')
			join = optarg;
		else if (opt == 's')
			signal = optarg;
		else
			return 2;
	}
	if (world == NULL || signal == NULL || strcmp(name, "world_demo") == 0) {
		fprintf(stderr, "usage: world_demo [EAL] -- --name NAME --world WORLD "
				"--join-signal FILE [--join MEMBER]\n");
		return 2;
	}
	dprpc_agent_conf_init(&c);
	c.name = name;
	c.world = world;
	c.lcores.io = 1;
	c.liveness.peer_event = peer_event;
	/* Registered by create, before its io lcore lets the others hear
	 * from this worker (and call it). */
	c.serve.handlers = handlers;
	c.serve.nb_handlers = sizeof(handlers) / sizeof(handlers[0]);
	a = dprpc_agent_create(&c);
	if (a == NULL)
		FAIL(3, "agent: %s", rte_strerror(rte_errno));
	if (join != NULL) {
		/* Not in the start-up map: it comes in at step 6. */
		join_world(a, join, signal);
		last = my_rank - 1; /* the start-up map's last rank leaves */
		barrier(a, "join");
		goto grown;
	}
	my_rank = dprpc_agent_rank(a);
	nw = dprpc_world_size(a);
	if (nw < 4)
		FAIL(3, "the demo wants at least 4 workers, the world has %u", nw);
	last = nw - 1;

	t0 = now_us();
	rc = dprpc_world_wait(a, TIMEOUT_US, missing, sizeof(missing));
	if (rc != 0)
		FAIL(5, "rendezvous: %d, missing: %s", rc, missing);
	SAY("rank %u: all %u workers came (%" PRIu64 " ms waiting)", my_rank, nw,
		(now_us() - t0) / 1000);
	barrier(a, "rendezvous");

	step(a, "all-to-all calls");
	all_to_all(a);
	barrier(a, "all-to-all");

	step(a, "all_gather");
	gather(a);
	barrier(a, "all_gather");

	step(a, "an RRef across three workers (created by rank 0, owned by rank 1, forked to rank "
		"2)");
	rref_step(a);
	barrier(a, "rref");

	step(a, "a nested chain with deferred replies");
	chain_step(a);
	barrier(a, "chain");

	step(a, "a worker joins the running world");
	join_step(a, signal);
	barrier(a, "join");
grown:
	step(a, "every worker calls every worker of the grown world");
	all_to_all(a);
	barrier(a, "all-to-all after the join");

	step(a, "a worker leaves");
	if (my_rank == last) {
		rc = dprpc_world_leave(a, TIMEOUT_US);
		if (rc != 0)
			FAIL(22, "world_leave: %d", rc);
		SAY("left the world (every other worker acknowledged)");
		if (dprpc_agent_destroy(a) != 0)
			FAIL(23, "destroy");
		dprpc_eal_cleanup();
		return 0;
	}
	/* Its LEAVE reached us (it waits for our acknowledgement). */
	for (int i = 0; i < 30000; i++) {
		struct dprpc_worker_info all[DPRPC_MAX_WORKERS];

		if (dprpc_worker_info_list(a, all, DPRPC_MAX_WORKERS) != (int)nw)
			FAIL(24, "worker infos");
		wi = all[last];
		if (wi.state == DPRPC_PEER_LEFT)
			break;
		usleep(1000);
	}
	if (wi.state != DPRPC_PEER_LEFT)
		FAIL(25, "%s did not leave (state %d)", wi.name, wi.state);
	if (my_rank == 0) {
		uint64_t x = 1;

		rc = dprpc_rpc_sync_id(a, last, dprpc_handler_id("mul"), &x, sizeof(x), TIMEOUT_US,
			NULL, NULL, NULL);
		if (rc != -ESHUTDOWN)
			FAIL(26, "a call to %s, gone: %d, not -ESHUTDOWN", wi.name, rc);
		SAY("%s left (not declared down); a call to it fails -ESHUTDOWN", wi.name);
	}

	step(a, "graceful shutdown of the workers still in the world");
	t0 = now_us();
	rc = dprpc_shutdown(a, true, TIMEOUT_US, &ce);
	if (rc != 0)
		FAIL(27, "shutdown: %d (%s)", rc, ce.msg);
	SAY("shut down gracefully in %" PRIu64 " ms (barrier of %u, calls drained, agent "
	    "destroyed)",
		(now_us() - t0) / 1000, nw - 1);
	dprpc_eal_cleanup();
	return 0;
}
