/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * world_worker: one worker of an N-worker world, for the world tests
 * (tests/test_world_memif.c over memif, tests/netns_bridge.sh over
 * af_packet on a bridge, tests/netns_routed.sh over af_packet across a
 * router, tests/netns_spoof.sh under a spoofing station).  Public API
 * only, like any application.
 *
 *   world_worker [EAL options] -- --name NAME --world WORLD [--port-id N]
 *       [--rendezvous-ms MS] [--expect-missing NAMES] [--call-early]
 *       [--shutdown] [--shutdown-without NAME --mark-dir DIR] [--be-killed]
 *       [--join MEMBER] [--expect-joiners K] [--rrefs] [--gather]
 *       [--calls-for SECONDS [--hold-rref BYTES]] [--linger-ms MS]
 *       [--key-file PATH] [--counters]
 *
 * It creates its agent (the default port is --port-id, e.g. an EAL --vdev;
 * without it the world map's memif links are its only ports; --key-file:
 * the world key, conf.auth.key_file, docs/security.md), registers "mul",
 * "fill" and "done", and waits for the world (dprpc_world_wait(), default
 * 30 s).  With --expect-missing it expects the wait to time out naming
 * exactly NAMES (", " between them) and stops there.  Otherwise it calls
 * every worker, itself included, by name, by rank and through its worker
 * info, checks every value, then tells every other worker it is done and
 * serves until all of them told it the same.  Then it leaves the world
 * (dprpc_world_leave()): no worker may have declared another down.  With
 * --shutdown it ends with a graceful dprpc_shutdown() instead, which must
 * return 0 (its barrier answered on every worker).  With --call-early the calls
 * by rank are made before the rendezvous (to workers maybe not started
 * yet: they wait for them, parked, within the rendezvous window).
 * --shutdown-without NAME: NAME is killed while this worker is in its
 * shutdown's barrier (the test does it once every such worker has created
 * DIR/its name, just before calling dprpc_shutdown()): the shutdown must
 * return -EHOSTDOWN naming exactly NAME (error mask and message) within
 * its timeout, and this worker must still stop clean (no mbuf of its pool
 * in use after it, EAL's runtime directory gone).  --be-killed: after the
 * "done" exchange, wait to be killed (exit 1 after 60 s).
 * --restart-of NAME --mark-dir DIR: after the "done" exchange, a world
 * barrier, a mark DIR/NAME; then (unless --be-killed, for NAME itself)
 * wait for the mark DIR/restarted (the test's, once it started NAME
 * again), call NAME until its new incarnation answers, check that it kept
 * its rank (the world's size unchanged), a world barrier again, and a
 * graceful shutdown.  --restarted: NAME started again by the same command
 * (with --join: joining again, its rank given back): no "done" exchange
 * (the others had theirs), a world barrier (the others' second), a
 * graceful shutdown.
 * With --join its map has only its own line (rank "-") and it joins the
 * running world through MEMBER ("NAME MAC IPV4 UDP_PORT",
 * dprpc_world_join()) instead of waiting for it; with --expect-joiners a
 * member waits, after its rendezvous, until K workers have joined and it
 * has heard from them.  Either way the calls then go to every worker of
 * the grown world.
 * After its calls (and before the "done" exchange): --rrefs: its RRef
 * counts read (dprpc_rref_debug_get(): num_owner_rrefs, num_forks,
 * num_users), a world barrier, an RRef on every other worker
 * (dprpc_remote() of "mul"), each value fetched (to_here) and checked; a
 * world barrier, then each worker must own exactly one RRef more per other
 * worker than before, each with one user, and hold as many; a world
 * barrier, all released, and its counts must come back to what they were
 * within 5 s (the others' deletions travel).  --gather: a world barrier,
 * then dprpc_all_gather() of the whole world, each worker giving its rank:
 * every rank's value checked.  --calls-for SECONDS: "mul" calls to the
 * other workers in turn, one at a time, for SECONDS, values checked; their
 * count, failures, the longest call and the requests resent printed; any
 * failure exits non-zero.  --hold-rref BYTES (with --calls-for): first an
 * RRef on the next worker by rank of "fill" (BYTES bytes, more than a
 * frame holds: every to_here() FETCHes it from its owner), held through
 * the calls, fetched and checked every 100 ms and once after them, then
 * released; a failed fetch counts as a failed call.  --counters: its
 * counters printed once its calls by name and rank are done ("before")
 * and, after any --calls-for, a world barrier (no worker has left yet)
 * and again ("after"); or at exit ("at exit") if it fails before: the
 * drops auth_failed, other_world, replayed and unconfirmed, the peers
 * restarted, declared down and left, the calls failed, the requests
 * answered again; how many "mul" requests it ran per caller rank and how
 * many of its own "mul" calls each rank answered, "fill" requests run;
 * and every drop reason counted.  After the "done" exchange, --linger-ms MS:
 * serve MS ms more (the test pings it meanwhile).  Before it leaves or
 * shuts down it prints its ARP and ICMP echo counters and its frames
 * dropped as for another MAC.
 *
 * Exit status 0 only if everything held and nothing leaked: no future,
 * request, call, message or mbuf of its pool still in use before destroy,
 * destroy succeeded, and EAL's runtime directory is gone after cleanup.
 * Each failure prints a line and exits with its own status.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_mbuf.h>

#include <dprpc/dprpc.h>
#include <dprpc/dprpc_collective.h>

#define CALL_TIMEOUT_US (30ull * 1000 * 1000)

static unsigned int my_rank;
static atomic_uint dones;
/* --counters: "mul" requests run here per caller rank, "fill" requests
 * run here, and this worker's "mul" calls answered per rank. */
static atomic_uint mul_from[DPRPC_MAX_WORKERS];
static atomic_uint fill_runs;
static unsigned int mul_ok[DPRPC_MAX_WORKERS];

/* Answers (x * 7 + its own rank): the caller knows what to expect. */
static int
h_mul(struct dprpc_request *req, void *arg)
{
	size_t len;
	const uint64_t *x = dprpc_request_payload(req, &len);
	unsigned int from = dprpc_request_caller(req);
	uint64_t v;

	(void)arg;
	if (from < DPRPC_MAX_WORKERS)
		atomic_fetch_add(&mul_from[from], 1);
	if (len != sizeof(v))
		return dprpc_reply_error(req, -EINVAL, "want 8 bytes");
	/* The agent's rank, not my_rank: a joiner is called as soon as it
	 * has its rank, before dprpc_world_join() returned to set my_rank. */
	v = *x * 7 + dprpc_agent_rank(dprpc_request_agent(req));
	return dprpc_reply(req, &v, sizeof(v));
}

/* Byte @i of the value "fill" makes from @seed. */
static uint8_t
fill_byte(uint64_t seed, size_t i)
{
	return (uint8_t)(seed >> (8 * (i % 8))) ^ (uint8_t)(i * 131);
}

/* Answers payload (seed, len) with len bytes of fill_byte(seed, i). */
static int
h_fill(struct dprpc_request *req, void *arg)
{
	size_t len, i;
	const uint64_t *in = dprpc_request_payload(req, &len);
	uint8_t *v;
	int rc;

	(void)arg;
	if (len != 2 * sizeof(uint64_t) || in[1] > (UINT64_C(1) << 20))
		return dprpc_reply_error(req, -EINVAL, "want (seed, len up to 1 MiB)");
	atomic_fetch_add(&fill_runs, 1);
	v = malloc(in[1] != 0 ? in[1] : 1);
	if (v == NULL)
		return dprpc_reply_error(req, -ENOMEM, "no memory");
	for (i = 0; i < in[1]; i++)
		v[i] = fill_byte(in[0], i);
	rc = dprpc_reply(req, v, in[1]);
	free(v);
	return rc;
}

static int
h_done(struct dprpc_request *req, void *arg)
{
	(void)arg;
	atomic_fetch_add(&dones, 1);
	return dprpc_reply(req, NULL, 0);
}

static const struct dprpc_handler_def handlers[] = {
	{"mul", h_mul, NULL, DPRPC_HANDLER_INLINE},
	{"fill", h_fill, NULL, DPRPC_HANDLER_INLINE},
	{"done", h_done, NULL, DPRPC_HANDLER_INLINE},
};

#define FAIL(code, ...)                        \
	do {                                   \
		fprintf(stderr, "%s: ", name); \
		fprintf(stderr, __VA_ARGS__);  \
		fprintf(stderr, "\n");         \
		exit(code);                    \
	} while (0)

static const char *name = "world_worker";

static uint64_t
arg_of(unsigned int from, unsigned int to, unsigned int how)
{
	return (uint64_t)from << 32 | (uint64_t)to << 8 | how;
}

/* One value checked: @got from worker @to for arg_of(me, to, how). */
static void
check(uint64_t got, unsigned int to, unsigned int how)
{
	uint64_t want = arg_of(my_rank, to, how) * 7 + to;

	if (got != want)
		FAIL(20, "call %u to rank %u answered 0x%" PRIx64 ", not 0x%" PRIx64, how, to, got,
			want);
	mul_ok[to]++;
}

/* Leave the mark DIR/NAME (the test waits for it); exit @code if not. */
static void
put_mark(const char *mark_dir, int code)
{
	char mark[256];
	FILE *f;

	snprintf(mark, sizeof(mark), "%s/%s", mark_dir, name);
	f = fopen(mark, "w");
	if (f == NULL || fclose(f) != 0)
		FAIL(code, "%s: %s", mark, strerror(errno));
}

/* A world barrier that must pass; exit @code, saying @when, if not. */
static void
world_barrier(struct dprpc_agent *a, int code, const char *when)
{
	struct dprpc_error ce;
	int rc = dprpc_barrier(a, NULL, 0, CALL_TIMEOUT_US, &ce);

	if (rc != 0)
		FAIL(code, "barrier %s: %d (%s)", when, rc, ce.msg);
}

static void
call_sync(struct dprpc_agent *a, const char *to, unsigned int rank, unsigned int how)
{
	uint64_t x = arg_of(my_rank, rank, how), v = 0;
	size_t len = sizeof(v);
	struct dprpc_error err;
	int rc = dprpc_rpc_sync(a, to, "mul", &x, sizeof(x), CALL_TIMEOUT_US, &v, &len, &err);

	if (rc != 0 || len != sizeof(v))
		FAIL(21, "rpc_sync to %s: %d (%s)", to, rc, rc != 0 ? err.msg : "short");
	check(v, rank, how);
}

static double
ms_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}

/* This worker's RRef counts as an owner, and as a user. */
static void
rref_counts(struct dprpc_agent *a, uint64_t *owned, uint64_t *forks, uint64_t *users)
{
	struct dprpc_rref_debug d;

	if (dprpc_rref_debug_get(a, &d) != 0)
		FAIL(30, "rref_debug_get");
	*owned = d.num_owner_rrefs;
	*forks = d.num_forks;
	*users = d.num_users;
}

/* --rrefs: an RRef on every other worker, fetched, checked, released;
 * the counts of the RRefs this worker owns up by one per other worker
 * while they are held, and back afterwards. */
static void
rrefs_round(struct dprpc_agent *a, const struct dprpc_worker_info *infos, unsigned int nw)
{
	struct dprpc_rref *r[DPRPC_MAX_WORKERS] = {NULL};
	uint64_t owned0, forks0, users0, owned, forks, users;
	struct timespec t0, t1;
	struct dprpc_error err;
	unsigned int i, k;

	/* Counted before any worker creates one here: before the barrier
	 * (its answers reach the workers at different times). */
	rref_counts(a, &owned0, &forks0, &users0);
	world_barrier(a, 30, "before the RRefs");
	for (i = 0; i < nw; i++) {
		uint64_t x = arg_of(my_rank, i, 3);

		if (i == my_rank)
			continue;
		r[i] = dprpc_remote(a, infos[i].name, "mul", &x, sizeof(x), CALL_TIMEOUT_US);
		if (r[i] == NULL)
			FAIL(30, "remote on %s: %s", infos[i].name, rte_strerror(rte_errno));
	}
	for (i = 0; i < nw; i++) {
		uint64_t v = 0;
		size_t len = sizeof(v);
		int rc;

		if (r[i] == NULL)
			continue;
		rc = dprpc_rref_to_here(r[i], CALL_TIMEOUT_US, &v, &len, &err);
		if (rc != 0 || len != sizeof(v))
			FAIL(31, "to_here of the RRef on %s: %d (%s)", infos[i].name, rc,
				rc != 0 ? err.msg : "short");
		if (dprpc_rref_owner(r[i]) != i || dprpc_rref_is_owner(r[i]))
			FAIL(31, "the RRef on %s is owned by rank %u", infos[i].name,
				dprpc_rref_owner(r[i]));
		check(v, i, 3);
	}
	/* Every creation confirmed, here and (the barrier) everywhere;
	 * counted before the next barrier, after which they are released. */
	world_barrier(a, 32, "with the RRefs created");
	rref_counts(a, &owned, &forks, &users);
	if (owned != owned0 + nw - 1 || forks != forks0 + nw - 1 || users != users0 + nw - 1)
		FAIL(32,
			"RRefs held: owns %" PRIu64 " with %" PRIu64 " users, holds %" PRIu64
			"; want %" PRIu64 ", %" PRIu64 ", %" PRIu64,
			owned, forks, users, owned0 + nw - 1, forks0 + nw - 1, users0 + nw - 1);
	world_barrier(a, 33, "with the RRefs counted");
	for (i = 0; i < nw; i++)
		if (r[i] != NULL && dprpc_rref_release(r[i]) != 0)
			FAIL(33, "release of the RRef on %s", infos[i].name);
	/* The others' deletions are on their way (or here). */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (k = 0; k < 500; k++) {
		rref_counts(a, &owned, &forks, &users);
		if (owned == owned0 && forks == forks0 && users == users0)
			break;
		usleep(10 * 1000);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (k == 500)
		FAIL(33,
			"RRefs released: owns %" PRIu64 " with %" PRIu64 " users, holds %" PRIu64
			" after 5 s; want %" PRIu64 ", %" PRIu64 ", %" PRIu64,
			owned, forks, users, owned0, forks0, users0);
	printf("%s: %u RRefs on the others, values checked; owned %" PRIu64
	       " more while held, back to %" PRIu64 " %.0f ms after their release\n",
		name, nw - 1, (uint64_t)nw - 1, owned0, ms_between(&t0, &t1));
	fflush(stdout);
}

/* --gather: a world barrier, then every rank gathered and checked. */
static void
gather_round(struct dprpc_agent *a, unsigned int nw)
{
	uint64_t mine = my_rank, all = nw == 64 ? UINT64_MAX : (UINT64_C(1) << nw) - 1;
	struct dprpc_gather *g = NULL;
	struct dprpc_error err;
	unsigned int i;
	int rc;

	world_barrier(a, 34, "before the gather");
	rc = dprpc_all_gather(a, NULL, 0, &mine, sizeof(mine), CALL_TIMEOUT_US, &g, &err);
	if (rc != 0)
		FAIL(34, "all_gather: %d (%s)", rc, err.msg);
	if (dprpc_gather_members(g) != all)
		FAIL(34, "all_gather: members 0x%" PRIx64 ", not 0x%" PRIx64,
			dprpc_gather_members(g), all);
	for (i = 0; i < nw; i++) {
		size_t len = 0;
		const uint64_t *v = dprpc_gather_value(g, i, &len);

		if (v == NULL || len != sizeof(*v) || *v != i)
			FAIL(34, "all_gather: rank %u gave %zu bytes, 0x%" PRIx64, i, len,
				v != NULL && len == sizeof(*v) ? *v : UINT64_MAX);
	}
	printf("%s: all_gather of %u ranks checked (sequence %" PRIu64 ")\n", name, nw,
		dprpc_gather_seq(g));
	fflush(stdout);
	dprpc_gather_free(g);
}

/* --hold-rref: the RRef's value fetched from its owner and checked:
 * 0, or non-zero with a line on stderr saying @when (the first 5). */
static int
fetch_check(struct dprpc_rref *r, uint64_t seed, uint8_t *buf, size_t bytes, const char *when)
{
	static unsigned int said;
	size_t len = bytes, i;
	struct dprpc_error err;
	const char *why;
	int rc;

	memset(&err, 0, sizeof(err));
	rc = dprpc_rref_to_here(r, CALL_TIMEOUT_US, buf, &len, &err);
	if (rc == 0 && len != bytes)
		rc = -EMSGSIZE;
	for (i = 0; rc == 0 && i < bytes; i++)
		if (buf[i] != fill_byte(seed, i))
			rc = -EBADMSG;
	if (rc != 0 && said++ < 5) {
		why = rc == -EMSGSIZE ? "short" : rc == -EBADMSG ? "bad value" : err.msg;
		fprintf(stderr, "%s: to_here of the held RRef %s: %d (%s)\n", name, when, rc,
			why[0] != '\0' ? why : strerror(-rc));
	}
	return rc;
}

/* --calls-for: "mul" to the others in turn, one at a time, for @secs;
 * with @hold bytes, an RRef of "fill" on the next worker held meanwhile. */
static void
calls_for(struct dprpc_agent *a, const struct dprpc_worker_info *infos, unsigned int nw,
	double secs, size_t hold)
{
	uint64_t calls = 0, failed = 0, fetches = 0, fetch_failed = 0;
	double longest = 0, longest_at = 0, ms;
	struct dprpc_agent_stats st0, st1;
	struct timespec t0, t1, t2, tf;
	unsigned int to = my_rank, owner = (my_rank + 1) % nw;
	uint64_t fill[2] = {arg_of(my_rank, owner, 7), hold};
	struct dprpc_rref *held = NULL;
	uint8_t *buf = NULL;

	if (nw < 2)
		FAIL(29, "--calls-for: nobody to call");
	if (hold > 0) {
		buf = malloc(hold);
		held = dprpc_remote(
			a, infos[owner].name, "fill", fill, sizeof(fill), CALL_TIMEOUT_US);
		if (buf == NULL || held == NULL)
			FAIL(36, "remote of fill on %s: %s", infos[owner].name,
				rte_strerror(rte_errno));
		if (fetch_check(held, fill[0], buf, hold, "after its creation") != 0)
			FAIL(36, "the RRef on %s is not usable", infos[owner].name);
		printf("%s: holding an RRef of %zu bytes on %s\n", name, hold, infos[owner].name);
	}
	if (dprpc_agent_stats_get(a, &st0) != 0)
		FAIL(29, "stats");
	printf("%s: calling the others for %.1f s\n", name, secs);
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	tf = t0;
	do {
		uint64_t x, v = 0;
		size_t len = sizeof(v);
		struct dprpc_error err;
		int rc;

		to = (to + 1) % nw;
		if (to == my_rank)
			to = (to + 1) % nw;
		x = arg_of(my_rank, to, 6);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		rc = dprpc_rpc_sync(
			a, infos[to].name, "mul", &x, sizeof(x), CALL_TIMEOUT_US, &v, &len, &err);
		clock_gettime(CLOCK_MONOTONIC, &t2);
		calls++;
		ms = ms_between(&t1, &t2);
		if (ms > longest) {
			longest = ms;
			longest_at = ms_between(&t0, &t1) / 1e3;
		}
		if (rc != 0 || len != sizeof(v) || v != x * 7 + to) {
			if (failed++ < 5)
				fprintf(stderr, "%s: call %" PRIu64 " to %s: %d (%s)\n", name,
					calls, infos[to].name, rc, rc != 0 ? err.msg : "bad value");
		} else {
			mul_ok[to]++;
		}
		if (held != NULL && ms_between(&tf, &t2) >= 100) {
			fetches++;
			if (fetch_check(held, fill[0], buf, hold, "during the calls") != 0)
				fetch_failed++;
			clock_gettime(CLOCK_MONOTONIC, &tf);
		}
	} while (ms_between(&t0, &t2) < secs * 1e3);
	if (dprpc_agent_stats_get(a, &st1) != 0)
		FAIL(29, "stats");
	printf("%s: %" PRIu64 " calls in %.1f s, %" PRIu64 " failed, the longest %.1f ms"
	       " (at %.2f s), %" PRIu64 " requests resent\n",
		name, calls, ms_between(&t0, &t2) / 1e3, failed, longest, longest_at,
		st1.retransmits - st0.retransmits);
	if (held != NULL) {
		fetches++;
		if (fetch_check(held, fill[0], buf, hold, "after the calls") != 0)
			fetch_failed++;
		if (dprpc_rref_release(held) != 0)
			FAIL(36, "release of the RRef on %s", infos[owner].name);
		printf("%s: the RRef on %s held through the calls: %" PRIu64 " fetches, %" PRIu64
		       " failed\n",
			name, infos[owner].name, fetches, fetch_failed);
		free(buf);
	}
	fflush(stdout);
	if (failed != 0 || fetch_failed != 0)
		FAIL(29,
			"%" PRIu64 " of %" PRIu64 " calls failed, %" PRIu64 " of %" PRIu64
			" fetches",
			failed, calls, fetch_failed, fetches);
}

/* One comma-separated count per rank, into @buf. */
static const char *
per_rank(char *buf, size_t cap, unsigned int nw, bool ran)
{
	size_t n = 0;
	unsigned int i;

	buf[0] = '\0';
	for (i = 0; i < nw && n < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%u", i != 0 ? "," : "",
			ran ? atomic_load(&mul_from[i]) : mul_ok[i]);
	return buf;
}

/* --counters: what a spoofing station could have changed, and every drop
 * reason counted (tests/netns_spoof.sh reads these lines). */
static void
print_counters(struct dprpc_agent *a, const char *when)
{
	char ran[DPRPC_MAX_WORKERS * 11], ok[DPRPC_MAX_WORKERS * 11];
	unsigned int nw = dprpc_world_size(a), i;
	struct dprpc_agent_stats st;

	if (dprpc_agent_stats_get(a, &st) != 0) {
		fprintf(stderr, "%s: stats\n", name);
		return;
	}
	printf("%s: counters %s: auth_failed=%" PRIu64 " other_world=%" PRIu64 " replayed=%" PRIu64
	       " unconfirmed=%" PRIu64 " peers_restarted=%" PRIu64 " peers_down=%" PRIu64
	       " peers_left=%" PRIu64 " calls_failed=%" PRIu64 " requests_resent=%" PRIu64 "\n",
		name, when, st.drops[DPRPC_DROP_AUTH_FAILED], st.drops[DPRPC_DROP_OTHER_WORLD],
		st.drops[DPRPC_DROP_REPLAYED], st.drops[DPRPC_DROP_UNCONFIRMED], st.peers_restarted,
		st.peers_down, st.peers_left, st.calls_failed, st.requests_resent);
	printf("%s: mul %s: ran_from=%s answered_by=%s fill_ran=%u\n", name, when,
		per_rank(ran, sizeof(ran), nw, true), per_rank(ok, sizeof(ok), nw, false),
		atomic_load(&fill_runs));
	printf("%s: drops %s:", name, when);
	for (i = 0; i < DPRPC_DROP_MAX; i++)
		if (st.drops[i] != 0)
			printf(" %s=%" PRIu64, dprpc_drop_reason_str(i), st.drops[i]);
	printf("\n");
	fflush(stdout);
}

/* --counters: the agent whose counters are printed at exit (NULL once it
 * is shut down or destroyed). */
static struct dprpc_agent *counted;

static void
counters_at_exit(void)
{
	if (counted != NULL)
		print_counters(counted, "at exit");
}

/* Its ARP and ICMP echo counters, for the record. */
static void
print_arp(struct dprpc_agent *a)
{
	struct dprpc_agent_stats st;

	if (dprpc_agent_stats_get(a, &st) != 0)
		FAIL(16, "stats");
	printf("%s: ARP %" PRIu64 " sent, %" PRIu64 " resolved, %" PRIu64 " unresolved, %" PRIu64
	       " answered; %" PRIu64 " echoes answered; %" PRIu64 " frames to another MAC\n",
		name, st.arp_sent, st.arp_resolved, st.arp_unresolved, st.arp_answered,
		st.echo_answered, st.drops[DPRPC_DROP_OTHER_MAC]);
	fflush(stdout);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"name", required_argument, NULL, 'n'},
		{"world", required_argument, NULL, 'w'},
		{"port-id", required_argument, NULL, 'p'},
		{"rendezvous-ms", required_argument, NULL, 'r'},
		{"expect-missing", required_argument, NULL, 'm'},
		{"call-early", no_argument, NULL, 'e'},
		{"shutdown", no_argument, NULL, 's'},
		{"shutdown-without", required_argument, NULL, 'k'},
		{"mark-dir", required_argument, NULL, 'd'},
		{"be-killed", no_argument, NULL, 'b'},
		{"join", required_argument, NULL, 'j'},
		{"expect-joiners", required_argument, NULL, 'x'},
		{"restart-of", required_argument, NULL, 'R'},
		{"restarted", no_argument, NULL, 'S'},
		{"rrefs", no_argument, NULL, 'F'},
		{"gather", no_argument, NULL, 'G'},
		{"calls-for", required_argument, NULL, 'C'},
		{"linger-ms", required_argument, NULL, 'L'},
		{"hold-rref", required_argument, NULL, 'H'},
		{"key-file", required_argument, NULL, 'K'},
		{"counters", no_argument, NULL, 'c'},
		{NULL, 0, NULL, 0},
	};
	const char *world = NULL, *expect_missing = NULL, *killed = NULL, *mark_dir = NULL;
	const char *join = NULL, *restart_of = NULL, *key_file = NULL;
	unsigned int joiners = 0, linger_ms = 0;
	bool restarted = false, rrefs = false, gather = false, counters = false;
	size_t hold = 0;
	double call_secs = 0;
	struct timespec t0, t1;
	struct dprpc_future *early[DPRPC_MAX_WORKERS] = {NULL};
	struct dprpc_worker_info infos[DPRPC_MAX_WORKERS], self;
	uint64_t rdv_ms = 30000;
	struct dprpc_agent_conf c;
	struct dprpc_agent_usage u;
	struct dprpc_agent_stats st;
	char missing[256], rundir[128];
	struct dprpc_agent *a;
	struct rte_mempool *mp;
	int n, opt, port_id = -1, rc;
	unsigned int i, nw;
	bool call_early = false, shutdown = false, be_killed = false;
	struct stat sb;

	n = dprpc_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "world_worker: EAL: %s\n", rte_strerror(-n));
		return 2;
	}
	argc -= n;
	argv += n;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt == 'n')
			name = optarg;
		else if (opt == 'w')
			world = optarg;
		else if (opt == 'p')
			port_id = atoi(optarg);
		else if (opt == 'r')
			rdv_ms = strtoull(optarg, NULL, 0);
		else if (opt == 'm')
			expect_missing = optarg;
		else if (opt == 'e')
			call_early = true;
		else if (opt == 's')
			shutdown = true;
		else if (opt == 'k')
			killed = optarg;
		else if (opt == 'd')
			mark_dir = optarg;
		else if (opt == 'b')
			be_killed = true;
		else if (opt == 'j')
			join = optarg;
		else if (opt == 'x')
			joiners = (unsigned int)strtoul(optarg, NULL, 0);
		else if (opt == 'R')
			restart_of = optarg;
		else if (opt == 'S')
			restarted = true;
		else if (opt == 'F')
			rrefs = true;
		else if (opt == 'G')
			gather = true;
		else if (opt == 'C')
			call_secs = strtod(optarg, NULL);
		else if (opt == 'L')
			linger_ms = (unsigned int)strtoul(optarg, NULL, 0);
		else if (opt == 'H')
			hold = (size_t)strtoul(optarg, NULL, 0);
		else if (opt == 'K')
			key_file = optarg;
		else if (opt == 'c')
			counters = true;
		else
			return 2;
	}
	if (world == NULL || strcmp(name, "world_worker") == 0 ||
		(killed != NULL || restart_of != NULL) != (mark_dir != NULL) ||
		(hold > 0 && call_secs <= 0)) {
		fprintf(stderr, "usage: world_worker [EAL] -- --name NAME --world WORLD [--port-id "
				"N] [--rendezvous-ms MS] [--expect-missing NAMES] [--call-early] "
				"[--shutdown] [--join MEMBER] [--expect-joiners K] [--rrefs] "
				"[--gather] [--calls-for SECONDS [--hold-rref BYTES]] "
				"[--linger-ms MS] [--key-file PATH] [--counters]\n");
		return 2;
	}
	dprpc_agent_conf_init(&c);
	c.name = name;
	c.world = world;
	c.port.id = port_id;
	c.auth.key_file = key_file;
	c.lcores.io = 1;
	/* Registered at creation: the others call as soon as they hear from
	 * this worker, which its io lcore lets them do before create returns. */
	c.serve.handlers = handlers;
	c.serve.nb_handlers = sizeof(handlers) / sizeof(handlers[0]);
	/* Its own pool: what the agent leaves in use is counted after
	 * destroy, when no frame can still be on its way out. */
	mp = rte_pktmbuf_pool_create(
		"ww_mp", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	if (mp == NULL)
		FAIL(3, "mbuf pool: %s", rte_strerror(rte_errno));
	c.port.mbuf_pool = mp;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	a = dprpc_agent_create(&c);
	if (a == NULL)
		FAIL(3, "agent: %s", rte_strerror(rte_errno));
	my_rank = dprpc_agent_rank(a);
	nw = dprpc_world_size(a);
	if (counters) {
		counted = a;
		atexit(counters_at_exit);
	}
	if (call_early) {
		/* Before the rendezvous: the workers not started yet are
		 * waited for (parked calls), not declared down. */
		for (i = 0; i < nw; i++) {
			uint64_t x = arg_of(my_rank, i, 0);

			early[i] = dprpc_rpc_async_id(
				a, i, dprpc_handler_id("mul"), &x, sizeof(x), CALL_TIMEOUT_US);
			if (early[i] == NULL)
				FAIL(5, "early call to rank %u: %s", i, rte_strerror(rte_errno));
		}
	}
	missing[0] = '\0';
	if (join != NULL) {
		/* Joining: its rank and the world come with the answer. */
		rc = dprpc_world_join(a, join, rdv_ms * 1000);
		my_rank = dprpc_agent_rank(a);
		nw = dprpc_world_size(a);
		if (rc != 0)
			FAIL(20, "world_join through %s: %d", join, rc);
		printf("%s: joined as rank %u\n", name, my_rank);
	} else {
		rc = dprpc_world_wait(a, rdv_ms * 1000, missing, sizeof(missing));
	}
	if (rc == 0 && joiners > 0) {
		/* The joiners: counted in (every member is told before a
		 * joiner is answered), then heard from. */
		for (i = 0; i < 1200 && dprpc_world_size(a) < nw + joiners; i++)
			usleep(50 * 1000);
		if (dprpc_world_size(a) != nw + joiners)
			FAIL(21, "world of %u, not %u: the joiners did not come",
				dprpc_world_size(a), nw + joiners);
		nw += joiners;
		rc = dprpc_world_wait(a, rdv_ms * 1000, missing, sizeof(missing));
		printf("%s: %u joined\n", name, joiners);
	}
	if (expect_missing != NULL) {
		if (rc != -ETIMEDOUT)
			FAIL(6, "world_wait returned %d, not -ETIMEDOUT", rc);
		if (strcmp(missing, expect_missing) != 0)
			FAIL(7, "world_wait names '%s' missing, not '%s'", missing, expect_missing);
		printf("%s: rendezvous timed out, missing: %s\n", name, missing);
	} else {
		if (rc != 0)
			FAIL(8, "world_wait: %d, missing: %s", rc, missing);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		printf("%s: world of %u formed, %.0f ms after its agent's create began\n", name, nw,
			(double)(t1.tv_sec - t0.tv_sec) * 1e3 +
				(double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
		fflush(stdout);
		/* Who is who: every worker, by rank. */
		if (dprpc_worker_info_list(a, infos, DPRPC_MAX_WORKERS) != (int)nw ||
			dprpc_worker_info_get(a, NULL, &self) != 0 || self.rank != my_rank ||
			strcmp(self.name, name) != 0)
			FAIL(9, "worker infos");
		for (i = 0; i < nw; i++) {
			if (infos[i].rank != i || infos[i].state != DPRPC_PEER_UP)
				FAIL(10, "worker info of rank %u: rank %u state %d", i,
					infos[i].rank, infos[i].state);
		}
		for (i = 0; i < nw; i++) {
			if (early[i] != NULL) {
				size_t len;
				const uint64_t *v;

				rc = dprpc_future_wait(early[i], 0);
				if (rc != 0)
					FAIL(11, "early call to rank %u: %d (%s)", i, rc,
						dprpc_future_error(early[i])->msg);
				v = dprpc_future_value(early[i], &len);
				if (len != sizeof(*v))
					FAIL(11, "early call to rank %u: %zu bytes", i, len);
				check(*v, i, 0);
				dprpc_future_put(early[i]);
			}
			/* By name, and through the worker info's name and
			 * rank (PyTorch's rpc_sync(to=WorkerInfo)). */
			call_sync(a, infos[i].name, i, 1);
			{
				uint64_t x = arg_of(my_rank, i, 2), v = 0;
				size_t len = sizeof(v);
				struct dprpc_future *f = dprpc_rpc_async_id(a, infos[i].rank,
					dprpc_handler_id("mul"), &x, sizeof(x), CALL_TIMEOUT_US);

				if (f == NULL || dprpc_future_wait(f, 0) != 0)
					FAIL(12, "call by rank to %u failed", i);
				memcpy(&v, dprpc_future_value(f, &len), sizeof(v));
				dprpc_future_put(f);
				check(v, i, 2);
			}
		}
		printf("%s: %u workers called 3 ways, values checked\n", name, nw);
		fflush(stdout);
		if (counters)
			print_counters(a, "before");
		if (rrefs)
			rrefs_round(a, infos, nw);
		if (gather)
			gather_round(a, nw);
		if (call_secs > 0)
			calls_for(a, infos, nw, call_secs, hold);
		if (counters) {
			/* Past it, every worker is done with its calls and none
			 * has left yet (a leave follows the "done" exchange). */
			world_barrier(a, 35, "before the counters");
			print_counters(a, "after");
		}
		/* Done: tell the others, then serve until they all said so
		 * (a restarted worker's others had theirs). */
		for (i = 0; i < nw && !restarted; i++) {
			if (i == my_rank)
				continue;
			rc = dprpc_rpc_sync(a, infos[i].name, "done", NULL, 0, CALL_TIMEOUT_US,
				NULL, NULL, NULL);
			if (rc != 0)
				FAIL(13, "done to %s: %d", infos[i].name, rc);
		}
		for (i = 0; i < 600 && !restarted && atomic_load(&dones) < nw - 1; i++)
			usleep(50 * 1000);
		if (!restarted && atomic_load(&dones) != nw - 1)
			FAIL(14, "%u of %u workers said done", atomic_load(&dones), nw - 1);
		if (linger_ms > 0) {
			printf("%s: serving %u ms more\n", name, linger_ms);
			fflush(stdout);
			for (i = 0; i < linger_ms / 10; i++)
				usleep(10 * 1000);
		}
	}
	if (restart_of != NULL) {
		char mark[256];
		int k = dprpc_worker_rank(a, restart_of);

		if (k < 0)
			FAIL(26, "no worker %s", restart_of);
		world_barrier(a, 26, "before the restart");
		put_mark(mark_dir, 26);
		if (!be_killed) {
			uint64_t x = arg_of(my_rank, (unsigned int)k, 5), v = 0;
			size_t len = sizeof(v);
			struct stat ms;

			snprintf(mark, sizeof(mark), "%s/restarted", mark_dir);
			for (i = 0; i < 1200 && stat(mark, &ms) != 0; i++)
				usleep(50 * 1000);
			if (i == 1200)
				FAIL(27, "%s was not started again", restart_of);
			/* Its old incarnation's calls fail until the new one
			 * answers (down, then restarted). */
			for (i = 0; i < 600; i++) {
				len = sizeof(v);
				rc = dprpc_rpc_sync(a, restart_of, "mul", &x, sizeof(x),
					1000 * 1000, &v, &len, NULL);
				if (rc == 0)
					break;
				usleep(50 * 1000);
			}
			if (rc != 0)
				FAIL(27, "the restarted %s never answered: %d", restart_of, rc);
			check(v, (unsigned int)k, 5);
			/* Its old rank, and no new one given (a rejoin). */
			if (dprpc_worker_rank(a, restart_of) != k || dprpc_world_size(a) != nw)
				FAIL(27, "the restarted %s is rank %d of %u, not %d of %u",
					restart_of, dprpc_worker_rank(a, restart_of),
					dprpc_world_size(a), k, nw);
			world_barrier(a, 28, "after the restart");
			printf("%s: %s restarted, answered, and passed a barrier\n", name,
				restart_of);
			shutdown = true;
		}
	}
	if (restarted) {
		world_barrier(a, 28, "after the restart");
		shutdown = true;
	}
	if (be_killed) {
		for (i = 0; i < 600; i++)
			usleep(100 * 1000);
		FAIL(23, "not killed");
	}
	if (killed != NULL) {
		struct dprpc_error ce;
		int k = dprpc_worker_rank(a, killed);

		if (k < 0)
			FAIL(24, "no worker %s", killed);
		put_mark(mark_dir, 24);
		/* Killed while this waits in the barrier: the leader
		 * declares it down and fails the barrier for everyone,
		 * naming it; the shutdown goes on and stops this worker. */
		memset(&ce, 0, sizeof(ce));
		counted = NULL;
		rc = dprpc_shutdown(a, true, CALL_TIMEOUT_US, &ce);
		if (rc != -EHOSTDOWN || ce.code != -EHOSTDOWN || ce.workers != UINT64_C(1) << k ||
			strstr(ce.msg, killed) == NULL)
			FAIL(25,
				"shutdown: %d, error %d, workers 0x%" PRIx64
				" (%s): not -EHOSTDOWN "
				"naming %s alone",
				rc, ce.code, ce.workers, ce.msg, killed);
		if (rte_mempool_in_use_count(mp) != 0)
			FAIL(15, "%u mbufs still in use after shutdown",
				rte_mempool_in_use_count(mp));
		rte_mempool_free(mp);
		snprintf(rundir, sizeof(rundir), "/var/run/dpdk/%s", getenv("WORLD_PREFIX") ?: "");
		dprpc_eal_cleanup();
		if (getenv("WORLD_PREFIX") != NULL && stat(rundir, &sb) == 0)
			FAIL(18, "%s still there", rundir);
		printf("%s: shut down without %s: %s\n", name, killed, ce.msg);
		return 0;
	}
	if (shutdown) {
		struct dprpc_error ce;

		print_arp(a);

		/* Every worker's barrier must be answered: a leader that
		 * destroys its agent at once must not lose an answer. */
		counted = NULL;
		rc = dprpc_shutdown(a, true, CALL_TIMEOUT_US, &ce);
		if (rc != 0)
			FAIL(22, "shutdown: %d (%s)", rc, ce.msg);
		snprintf(rundir, sizeof(rundir), "/var/run/dpdk/%s", getenv("WORLD_PREFIX") ?: "");
		dprpc_eal_cleanup();
		if (getenv("WORLD_PREFIX") != NULL && stat(rundir, &sb) == 0)
			FAIL(18, "%s still there", rundir);
		printf("%s: shut down gracefully\n", name);
		return 0;
	}
	/* Leave gracefully: those still here forget this worker, none
	 * declares it down (checked by each on its own peers_down). */
	rc = dprpc_world_leave(a, CALL_TIMEOUT_US);
	if (rc != 0)
		FAIL(19, "world_leave: %d", rc);
	usleep(100 * 1000); /* the last replies leave */
	/* Mbufs are counted after destroy: a frame staged for a worker
	 * that has just left may still be waiting in a tx buffer here. */
	if (dprpc_agent_usage_get(a, &u) != 0 || u.futures != 0 || u.requests != 0 ||
		u.calls != 0 || u.messages != 0)
		FAIL(15, "in use before destroy: futures %u requests %u calls %u messages %u",
			u.futures, u.requests, u.calls, u.messages);
	print_arp(a);
	if (dprpc_agent_stats_get(a, &st) != 0 || st.calls_failed != 0 || st.peers_down != 0)
		FAIL(16, "%" PRIu64 " calls failed, %" PRIu64 " workers declared down",
			st.calls_failed, st.peers_down);
	printf("%s: %" PRIu64 " calls ok, %" PRIu64 " requests handled, %" PRIu64 " pings, %" PRIu64
	       " frames dropped on links not up, %" PRIu64
	       " workers left before it, none declared down\n",
		name, st.calls_ok, st.requests_handled, st.keepalives, st.tx_dropped,
		st.peers_left);
	counted = NULL;
	if (dprpc_agent_destroy(a) != 0)
		FAIL(17, "destroy");
	if (rte_mempool_in_use_count(mp) != 0)
		FAIL(15, "%u mbufs still in use after destroy", rte_mempool_in_use_count(mp));
	rte_mempool_free(mp);
	/* EAL's runtime directory goes with dprpc_eal_cleanup(). */
	snprintf(rundir, sizeof(rundir), "/var/run/dpdk/%s", getenv("WORLD_PREFIX") ?: "");
	dprpc_eal_cleanup();
	if (getenv("WORLD_PREFIX") != NULL && stat(rundir, &sb) == 0)
		FAIL(18, "%s still there", rundir);
	printf("%s: clean exit\n", name);
	return 0;
}
