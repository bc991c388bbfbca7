/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hello_rpc: two dprpc workers calling each other over DPDK.
 *
 *   hello_rpc [EAL options] -- --name NAME --world WORLD [--peer NAME]
 *
 * The EAL options give the port (e.g. --vdev net_memif0,role=server,...);
 * the application owns EAL, dprpc uses the first ethdev port.  A worker
 * without --peer serves until a peer calls its "stop" handler; a worker
 * with --peer calls the peer, prints what it gets, and stops it.
 *
 * The handlers show the three kinds a dprpc user writes: an inline handler
 * (greet), a handler that fails with a message (divide by zero), and one
 * that defers its reply to another thread (slow_square, PyTorch's
 * @async_execution).  Then RRefs: values made by remote() on the peer,
 * fetched with to_here(), used through a proxy call (scale), and released.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include <dprpc/dprpc.h>

#define TIMEOUT_US (2 * 1000 * 1000)

static atomic_bool stop_requested;

static int
greet(struct dprpc_request *req, void *arg)
{
	struct dprpc_agent *a = arg;
	const char *who = dprpc_worker_name(a, dprpc_request_caller(req));
	size_t len;
	const char *msg = dprpc_request_payload(req, &len);
	char out[256];
	int n;

	n = snprintf(out, sizeof(out), "hello %s, %s here; you said '%.*s'", who,
		dprpc_agent_name(a), (int)len, msg != NULL ? msg : "");
	return dprpc_reply(req, out, (size_t)n < sizeof(out) ? (size_t)n : sizeof(out) - 1);
}

static int
divide(struct dprpc_request *req, void *arg)
{
	int64_t v[2], q;
	size_t len;
	const void *p = dprpc_request_payload(req, &len);

	if (len != sizeof(v))
		return dprpc_reply_error(req, -EINVAL, "divide wants two int64");
	memcpy(v, p, sizeof(v));
	if (v[1] == 0)
		return dprpc_reply_error(req, -EDOM, "division by zero");
	q = v[0] / v[1];
	return dprpc_reply(req, &q, sizeof(q));
}

/* An RRef proxy: the RRef's value (an int64 on this worker) times the
 * argument. */
static int
scale(struct dprpc_request *req, void *arg)
{
	int64_t v, k, r;
	size_t vlen, klen;
	const void *pv = dprpc_request_rref_value(req, &vlen);
	const void *pk = dprpc_request_payload(req, &klen);

	if (pv == NULL || vlen != sizeof(v) || klen != sizeof(k))
		return dprpc_reply_error(req, -EINVAL, "scale wants an int64 RRef and an int64");
	memcpy(&v, pv, sizeof(v));
	memcpy(&k, pk, sizeof(k));
	r = v * k;
	return dprpc_reply(req, &r, sizeof(r));
}

/* How many RRef values this worker owns. */
static int
owned(struct dprpc_request *req, void *arg)
{
	struct dprpc_rref_debug d;

	dprpc_rref_debug_get(dprpc_request_agent(req), &d);
	return dprpc_reply(req, &d.num_owner_rrefs, sizeof(d.num_owner_rrefs));
}

/* Deferred: a thread computes and replies later; the poll loop goes on. */
static void *
square_later(void *arg)
{
	struct dprpc_request *req = arg;
	int64_t v, r;

	memcpy(&v, dprpc_request_payload(req, NULL), sizeof(v));
	usleep(1000);
	r = v * v;
	dprpc_reply(req, &r, sizeof(r));
	return NULL;
}

static int
slow_square(struct dprpc_request *req, void *arg)
{
	pthread_t t;
	size_t len;

	dprpc_request_payload(req, &len);
	if (len != sizeof(int64_t))
		return -EINVAL;
	if (pthread_create(&t, NULL, square_later, req) != 0)
		return -EAGAIN;
	pthread_detach(t);
	return DPRPC_DEFERRED;
}

static int
stop_handler(struct dprpc_request *req, void *arg)
{
	atomic_store(&stop_requested, true);
	return dprpc_reply(req, NULL, 0);
}

static int
serve(struct dprpc_agent *a)
{
	unsigned int idle = 0;

	printf("%s: serving (rank %u of %u)\n", dprpc_agent_name(a), dprpc_agent_rank(a),
		dprpc_world_size(a));
	fflush(stdout);
	/* Way 1: this thread is the poll loop.  Sleep a little when idle so
	 * the demo is gentle on a small machine. */
	while (!atomic_load(&stop_requested)) {
		if (dprpc_poll(a, 32) > 0)
			idle = 0;
		else if (++idle > 1000)
			usleep(50);
	}
	/* Give the reply to "stop" a few polls to leave. */
	for (int i = 0; i < 1000; i++)
		dprpc_poll(a, 32);
	printf("%s: RRef contexts left at shutdown: %d\n", dprpc_agent_name(a),
		dprpc_rref_shutdown(a, 100 * 1000, DPRPC_RREF_REPORT_LEAKS));
	return 0;
}

/* remote(), to_here(), a proxy call, a failed creation, release. */
static int
rrefs_with_peer(struct dprpc_agent *a, const char *peer)
{
	int64_t args[2] = {84, 2}, v, ten = 10;
	uint64_t n = 1;
	size_t len = sizeof(v);
	struct dprpc_error err;
	struct dprpc_rref *r, *bad;
	int rc;

	r = dprpc_remote(a, peer, "divide", args, sizeof(args), TIMEOUT_US);
	args[1] = 0;
	bad = dprpc_remote(a, peer, "divide", args, sizeof(args), TIMEOUT_US);
	if (r == NULL || bad == NULL)
		return -rte_errno;
	rc = dprpc_rref_to_here(r, TIMEOUT_US, &v, &len, &err);
	if (rc != 0)
		return rc;
	printf("%s: remote divide(84, 2) on %s, to_here -> %" PRId64 "\n", dprpc_agent_name(a),
		dprpc_rref_owner_name(r), v);
	len = sizeof(v);
	rc = dprpc_rref_rpc_sync(r, "scale", &ten, sizeof(ten), TIMEOUT_US, &v, &len, &err);
	if (rc != 0)
		return rc;
	printf("%s: proxy rref.rpc_sync().scale(10) -> %" PRId64 "\n", dprpc_agent_name(a), v);
	rc = dprpc_rref_to_here(bad, TIMEOUT_US, &v, &len, &err);
	printf("%s: remote divide(84, 0), to_here -> error %d (%s): \"%s\"\n", dprpc_agent_name(a),
		rc, strerror(-rc), err.msg);
	if (rc != -EDOM)
		return -EPROTO;
	dprpc_rref_release(r);
	dprpc_rref_release(bad);
	/* The owner frees both values once it has heard of the releases. */
	for (int i = 0; i < 1000 && n != 0; i++) {
		len = sizeof(n);
		rc = dprpc_rpc_sync(a, peer, "owned", NULL, 0, TIMEOUT_US, &n, &len, NULL);
		if (rc != 0)
			return rc;
		if (n != 0)
			usleep(1000);
	}
	printf("%s: released both; %s now owns %" PRIu64 " RRefs\n", dprpc_agent_name(a), peer, n);
	return n == 0 ? 0 : -EBUSY;
}

static int
call_peer(struct dprpc_agent *a, const char *peer)
{
	char out[256];
	size_t out_len = sizeof(out) - 1;
	struct dprpc_error err;
	struct dprpc_future *fs[8];
	int64_t args[2] = {84, 2}, q, sq;
	unsigned int i;
	int rc;

	rc = dprpc_rpc_sync(a, peer, "greet", "how are you?", 12, TIMEOUT_US, out, &out_len, &err);
	if (rc != 0) {
		fprintf(stderr, "greet failed: %s (%s)\n", strerror(-rc), err.msg);
		return rc;
	}
	out[out_len] = '\0';
	printf("%s: rpc_sync greet -> \"%s\"\n", dprpc_agent_name(a), out);

	out_len = sizeof(q);
	rc = dprpc_rpc_sync(a, peer, "divide", args, sizeof(args), TIMEOUT_US, &q, &out_len, &err);
	if (rc != 0)
		return rc;
	printf("%s: rpc_sync divide(84, 2) -> %" PRId64 "\n", dprpc_agent_name(a), q);

	args[1] = 0;
	rc = dprpc_rpc_sync(a, peer, "divide", args, sizeof(args), TIMEOUT_US, NULL, NULL, &err);
	printf("%s: rpc_sync divide(84, 0) -> error %d (%s) from worker %s: \"%s\"\n",
		dprpc_agent_name(a), rc, strerror(-rc), dprpc_worker_name(a, err.origin), err.msg);
	if (rc != -EDOM)
		return -EPROTO;

	rc = dprpc_rpc_sync(a, peer, "no_such_handler", NULL, 0, TIMEOUT_US, NULL, NULL, &err);
	printf("%s: rpc_sync no_such_handler -> error %d (%s): \"%s\"\n", dprpc_agent_name(a), rc,
		strerror(-rc), err.msg);
	if (rc != -ENOENT)
		return -EPROTO;

	/* rpc_async: eight deferred calls in flight at once. */
	for (i = 0; i < 8; i++) {
		int64_t v = i + 1;

		fs[i] = dprpc_rpc_async(a, peer, "slow_square", &v, sizeof(v), TIMEOUT_US);
		if (fs[i] == NULL)
			return -rte_errno;
	}
	rc = dprpc_future_wait_all(fs, 8, 0);
	printf("%s: rpc_async slow_square(1..8) ->", dprpc_agent_name(a));
	for (i = 0; i < 8; i++) {
		const int64_t *v = dprpc_future_value(fs[i], NULL);

		memcpy(&sq, v, sizeof(sq));
		printf(" %" PRId64, sq);
		dprpc_future_put(fs[i]);
	}
	printf("\n");
	if (rc != 0)
		return rc;

	rc = rrefs_with_peer(a, peer);
	if (rc != 0) {
		fprintf(stderr, "RRefs failed: %s\n", strerror(-rc));
		return rc;
	}

	rc = dprpc_rpc_sync(a, peer, "stop", NULL, 0, TIMEOUT_US, NULL, NULL, NULL);
	printf("%s: asked %s to stop: %s\n", dprpc_agent_name(a), peer, rc ? strerror(-rc) : "ok");
	return rc;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"name", required_argument, NULL, 'n'},
		{"world", required_argument, NULL, 'w'},
		{"peer", required_argument, NULL, 'p'},
		{NULL, 0, NULL, 0},
	};
	const char *name = NULL, *world = NULL, *peer = NULL;
	struct dprpc_agent_conf conf;
	struct dprpc_agent *a;
	int n, c, rc;

	n = dprpc_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "EAL init failed: %s\n", strerror(-n));
		return 1;
	}
	argc -= n;
	argv += n;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'n')
			name = optarg;
		else if (c == 'w')
			world = optarg;
		else if (c == 'p')
			peer = optarg;
		else
			return 2;
	}
	if (name == NULL || world == NULL || rte_eth_dev_count_avail() == 0) {
		fprintf(stderr, "usage: hello_rpc [EAL options with a port] -- --name NAME "
				"--world WORLD [--peer NAME]\n");
		return 2;
	}

	dprpc_agent_conf_init(&conf);
	conf.name = name;
	conf.world = world;
	conf.port.id = 0;
	a = dprpc_agent_create(&conf);
	if (a == NULL) {
		fprintf(stderr, "agent: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	if (dprpc_register(a, "greet", greet, a, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(a, "divide", divide, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(a, "slow_square", slow_square, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(a, "scale", scale, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(a, "owned", owned, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(a, "stop", stop_handler, NULL, DPRPC_HANDLER_INLINE) != 0)
		return 1;
	if (dprpc_agent_wait_link(a, 20 * 1000 * 1000) != 0) {
		fprintf(stderr, "%s: link did not come up\n", name);
		return 1;
	}
	rc = peer != NULL ? call_peer(a, peer) : serve(a);
	if (peer != NULL)
		dprpc_agent_dump(a, stdout);
	if (dprpc_agent_destroy(a) != 0)
		rc = rc ? rc : -EBUSY;
	dprpc_eal_cleanup();
	return rc == 0 ? 0 : 1;
}
