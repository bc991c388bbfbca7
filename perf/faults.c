/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dprpc-faults: what a caller sees of a server under faults, in counts
 * and latencies.
 *
 *   dprpc-faults flood  [--calls N] [--runs R] [--service-us US] [--queue Q]
 *                      [--declared-us US]
 *   dprpc-faults cancel [--calls N] [--runs R] [--service-us US] [--loss-ppm P]
 *
 * flood: N calls (default 2000) at once to a pool handler that sleeps
 * --service-us (default 1000) with a queue of Q (default 16): most are
 * answered -EBUSY.  Per run (default 11, the first on a cold pool): the
 * -EBUSY answers' latency from submission (p50, p99, max), the first
 * refusal's retry-after hint beside the work then queued, the caller's
 * resends and the server's HELD answers, and the longest gap of the
 * caller's polling loop (a CPU stall shows there).  No loss: every resend
 * is one too many.  --declared-us: the server's conf.serve.service_time_us
 * (default 0: none declared), what a cold pool hints before it has
 * measured a request.
 *
 * cancel: N calls (default 1000) to a pool handler that spins
 * --service-us (default 20), each cancelled after 0 to 3 of the caller's
 * polls, with --loss-ppm (default 50000) of the caller's frames lost each
 * way.  Per run (default 10): how many cancels the server confirmed
 * (DPRPC_CANCEL_STOPPED) and how many of those ran (must be 0), how many
 * it found started and how many of those ran after the cancel was made.
 *
 * One process: the caller's agent is polled by this thread (lcore 0, CPU
 * 0), the server's runs on io lcore 1 with its handler lcore 2, both on
 * CPU 1, over a net_ring pair.  DPDK without hugepages or PCI.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_ring.h>

#include <dprpc/dprpc.h>

#define FAULTS_MAX_CALLS 16384
#define FAULTS_WORLD                            \
	"a 0 02:00:00:00:00:01 10.0.0.1 7001\n" \
	"b 1 02:00:00:00:00:02 10.0.0.2 7002\n"

struct faults_opts {
	bool cancel;
	unsigned int calls, runs, queue, service_us, loss_ppm, declared_us;
};

static struct rte_mempool *mp;
static int port_a, port_b;
static uint64_t tsc_hz;

/* Per call: when it was submitted and when it ended (its callback). */
static uint64_t sub_tsc[FAULTS_MAX_CALLS], cancel_tsc[FAULTS_MAX_CALLS];
static _Atomic uint64_t done_tsc[FAULTS_MAX_CALLS], ran_tsc[FAULTS_MAX_CALLS];
static atomic_uint ran[FAULTS_MAX_CALLS];
static struct dprpc_future *fs[FAULTS_MAX_CALLS];

/* The 1-minute load average (-1 if unknown). */
static double
load1(void)
{
	double l[1];

	return getloadavg(l, 1) == 1 ? l[0] : -1.0;
}

static double
us_of(uint64_t tsc)
{
	return (double)tsc * 1e6 / (double)tsc_hz;
}

static int
cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* Pool: --service-us asleep (flood). */
static int
h_sleep(struct dprpc_request *req, void *arg)
{
	usleep((useconds_t)(uintptr_t)arg);
	return dprpc_reply(req, "s", 1);
}

/* Pool: marks its call's id (4 bytes) as run, then spins --service-us
 * (cancel). */
static int
h_tally(struct dprpc_request *req, void *arg)
{
	uint64_t now = rte_rdtsc(), until = now + (uintptr_t)arg * tsc_hz / 1000000;
	uint32_t id = 0;
	size_t len;
	const void *p = dprpc_request_payload(req, &len);

	if (len == sizeof(id))
		memcpy(&id, p, sizeof(id));
	if (id < FAULTS_MAX_CALLS) {
		atomic_store(&ran_tsc[id], now);
		atomic_fetch_add(&ran[id], 1);
	}
	while (rte_rdtsc() < until)
		rte_pause();
	return dprpc_reply(req, "t", 1);
}

static void
on_done(struct dprpc_future *f, void *arg)
{
	(void)f;
	atomic_store(&done_tsc[(uintptr_t)arg], rte_rdtsc());
}

static struct dprpc_agent *
make_agent(const struct faults_opts *o, bool server)
{
	struct dprpc_agent_conf c;
	struct dprpc_agent *ag;

	dprpc_agent_conf_init(&c);
	c.name = server ? "b" : "a";
	c.world = FAULTS_WORLD;
	c.port.id = server ? port_b : port_a;
	c.port.mbuf_pool = mp;
	c.liveness.keepalive_us = 0;
	c.liveness.peer_timeout_us = 0;
	c.calls.max_outstanding = o->calls;
	if (server) {
		c.lcores.io = 1;
		c.lcores.nb_pool = 1;
		c.lcores.pool[0] = 2;
		c.serve.max_requests = 2 * o->calls;
		c.serve.peer_requests_max = 2 * o->calls;
		c.serve.handler_queue_max = o->cancel ? o->calls : o->queue;
		c.serve.service_time_us = o->declared_us;
	} else if (o->loss_ppm != 0) {
		c.faults.tx.drop_ppm = o->loss_ppm;
		c.faults.tx.seed = 16;
		c.faults.rx.drop_ppm = o->loss_ppm;
		c.faults.rx.seed = 61;
	}
	ag = dprpc_agent_create(&c);
	if (ag == NULL)
		fprintf(stderr, "dprpc-faults: agent %s: %s\n", c.name, rte_strerror(rte_errno));
	return ag;
}

/* Submit call @i (its id as payload), retrying while every slot is taken. */
static int
submit(struct dprpc_agent *a, const char *h, unsigned int i)
{
	uint32_t id = i;
	unsigned int k;

	atomic_store(&done_tsc[i], 0);
	sub_tsc[i] = rte_rdtsc();
	fs[i] = dprpc_rpc_async(a, "b", h, &id, sizeof(id), 10 * 1000 * 1000);
	for (k = 0; fs[i] == NULL && rte_errno == EAGAIN && k < 1000000; k++) {
		dprpc_poll(a, 32);
		fs[i] = dprpc_rpc_async(a, "b", h, &id, sizeof(id), 10 * 1000 * 1000);
	}
	if (fs[i] == NULL) {
		fprintf(stderr, "dprpc-faults: call %u: %s\n", i, rte_strerror(rte_errno));
		return -1;
	}
	return dprpc_future_add_callback(fs[i], on_done, (void *)(uintptr_t)i) == 0 ? 0 : -1;
}

static struct dprpc_agent_stats
stats_of(const struct dprpc_agent *ag)
{
	struct dprpc_agent_stats s;

	memset(&s, 0, sizeof(s));
	(void)dprpc_agent_stats_get(ag, &s);
	return s;
}

/* Until the server holds no request (its handler lcore idle). */
static void
drain(struct dprpc_agent *a, struct dprpc_agent *b)
{
	struct dprpc_agent_usage u;

	do {
		dprpc_poll(a, 32);
		usleep(100);
		(void)dprpc_agent_usage_get(b, &u);
	} while (u.requests != 0);
}

static int
run_flood(const struct faults_opts *o, struct dprpc_agent *a, struct dprpc_agent *b)
{
	static uint64_t lat[FAULTS_MAX_CALLS];
	struct dprpc_agent_stats sa, sb, ea, eb;
	unsigned int r, i, busy, ok, left;
	uint64_t gap, last, now, first_hint;
	const struct dprpc_error *e;

	printf("flood: %u calls at once, handler %u us (declared %u), queue %u, no loss; load "
	       "%.2f\n",
		o->calls, o->service_us, o->declared_us, o->queue, load1());
	for (r = 0; r < o->runs; r++) {
		sa = stats_of(a);
		sb = stats_of(b);
		for (i = 0; i < o->calls; i++)
			if (submit(a, "sleep", i) != 0)
				return -1;
		gap = 0;
		last = rte_rdtsc();
		do {
			dprpc_poll(a, 32);
			now = rte_rdtsc();
			gap = RTE_MAX(gap, now - last);
			last = now;
			for (left = 0, i = 0; i < o->calls; i++)
				left += atomic_load(&done_tsc[i]) == 0;
		} while (left != 0);
		ea = stats_of(a);
		eb = stats_of(b);
		busy = ok = 0;
		first_hint = UINT64_MAX;
		for (i = 0; i < o->calls; i++) {
			e = dprpc_future_error(fs[i]);
			if (e == NULL) {
				ok++;
			} else if (e->code == -EBUSY) {
				lat[busy++] = atomic_load(&done_tsc[i]) - sub_tsc[i];
				if (first_hint == UINT64_MAX)
					first_hint = e->retry_after_us;
			}
			dprpc_future_put(fs[i]);
		}
		qsort(lat, busy, sizeof(lat[0]), cmp_u64);
		printf("run %2u%s: ok %u busy %u p50 %.0f p99 %.0f max %.0f us; first hint %" PRIu64
		       " us (queued %.0f us); resends %" PRIu64 " HELD %" PRIu64
		       " (received %" PRIu64 "); longest poll gap %.0f us\n",
			r, r == 0 ? " (cold)" : "", ok, busy, busy ? us_of(lat[busy / 2]) : 0.0,
			busy ? us_of(lat[busy * 99 / 100]) : 0.0, busy ? us_of(lat[busy - 1]) : 0.0,
			first_hint == UINT64_MAX ? 0 : first_hint,
			(double)(o->queue + 1) * o->service_us, ea.retransmits - sa.retransmits,
			eb.holds_sent - sb.holds_sent, ea.holds_received - sa.holds_received,
			us_of(gap));
		drain(a, b);
	}
	return 0;
}

static int
run_cancel(const struct faults_opts *o, struct dprpc_agent *a, struct dprpc_agent *b)
{
	unsigned int r, i, k, n, stopped, stopped_ran, started, started_after, unknown, late;
	unsigned int t_cancels = 0, t_stopped_ran = 0, t_after = 0, t_stopped = 0;
	struct dprpc_agent_stats sa;
	int out;

	printf("cancel: %u calls, handler %u us, loss %u ppm each way; load %.2f\n", o->calls,
		o->service_us, o->loss_ppm, load1());
	for (r = 0; r < o->runs; r++) {
		sa = stats_of(a);
		memset(ran, 0, sizeof(ran));
		memset(ran_tsc, 0, sizeof(ran_tsc));
		late = 0;
		for (i = 0; i < o->calls; i++) {
			if (submit(a, "tally", i) != 0)
				return -1;
			for (k = 0; k < i % 4; k++)
				dprpc_poll(a, 32);
			cancel_tsc[i] = rte_rdtsc();
			late += dprpc_future_cancel(fs[i]) == DPRPC_CANCEL_TOO_LATE;
		}
		/* Every cancelled call's outcome known (bounded: 10 s each). */
		for (i = 0; i < o->calls; i++)
			for (k = 0; k < 100000 &&
				    dprpc_future_cancel_outcome(fs[i]) == DPRPC_CANCEL_UNCONFIRMED;
				k++) {
				const struct dprpc_error *e = dprpc_future_error(fs[i]);

				if (e == NULL || e->code != -ECANCELED)
					break;
				dprpc_poll(a, 32);
				usleep(k > 100 ? 100 : 0);
			}
		drain(a, b);
		stopped = stopped_ran = started = started_after = unknown = n = 0;
		for (i = 0; i < o->calls; i++) {
			const struct dprpc_error *e = dprpc_future_error(fs[i]);

			if (e != NULL && e->code == -ECANCELED) {
				n++;
				out = dprpc_future_cancel_outcome(fs[i]);
				if (out == DPRPC_CANCEL_STOPPED) {
					stopped++;
					stopped_ran += atomic_load(&ran[i]) != 0;
				} else if (out == DPRPC_CANCEL_STARTED) {
					started++;
					started_after += atomic_load(&ran[i]) != 0 &&
							 atomic_load(&ran_tsc[i]) > cancel_tsc[i];
				} else {
					unknown++;
				}
			}
			dprpc_future_put(fs[i]);
		}
		printf("run %2u: %u cancels: confirmed stopped %u (ran %u); started %u (ran after "
		       "the cancel %u); unknown or unconfirmed %u; too late %u; CANCELs resent "
		       "%" PRIu64 "\n",
			r, n, stopped, stopped_ran, started, started_after, unknown, late,
			stats_of(a).cancels_resent - sa.cancels_resent);
		t_cancels += n;
		t_stopped += stopped;
		t_stopped_ran += stopped_ran;
		t_after += started_after;
	}
	printf("total: %u cancels, %u confirmed stopped of which %u ran; %u ran after a cancel "
	       "not confirmed (%.1f per 10,000 cancels)\n",
		t_cancels, t_stopped, t_stopped_ran, t_after,
		t_cancels ? 10000.0 * t_after / t_cancels : 0.0);
	return t_stopped_ran == 0 ? 0 : -1;
}

static int
parse(int argc, char **argv, struct faults_opts *o)
{
	int i;

	if (argc < 2 || (strcmp(argv[1], "flood") != 0 && strcmp(argv[1], "cancel") != 0))
		return -1;
	o->cancel = strcmp(argv[1], "cancel") == 0;
	o->calls = o->cancel ? 1000 : 2000;
	o->runs = o->cancel ? 10 : 11;
	o->queue = 16;
	o->service_us = o->cancel ? 20 : 1000;
	o->loss_ppm = o->cancel ? 50000 : 0;
	o->declared_us = 0;
	for (i = 2; i + 1 < argc; i += 2) {
		unsigned long v = strtoul(argv[i + 1], NULL, 10);

		if (strcmp(argv[i], "--calls") == 0 && v >= 1 && v <= FAULTS_MAX_CALLS)
			o->calls = (unsigned int)v;
		else if (strcmp(argv[i], "--runs") == 0 && v >= 1)
			o->runs = (unsigned int)v;
		else if (strcmp(argv[i], "--queue") == 0 && v >= 1)
			o->queue = (unsigned int)v;
		else if (strcmp(argv[i], "--service-us") == 0 && v <= 1000000)
			o->service_us = (unsigned int)v;
		else if (strcmp(argv[i], "--loss-ppm") == 0 && v <= 1000000)
			o->loss_ppm = (unsigned int)v;
		else if (strcmp(argv[i], "--declared-us") == 0 && !o->cancel && v <= 1000000)
			o->declared_us = (unsigned int)v;
		else
			return -1;
	}
	return i == argc ? 0 : -1;
}

int
main(int argc, char **argv)
{
	char prefix[64], *eal[12];
	struct rte_ring *ab, *ba;
	struct dprpc_agent *a = NULL, *b = NULL;
	struct faults_opts o;
	int n = 0, rc = 1;

	if (parse(argc, argv, &o) != 0) {
		fprintf(stderr,
			"usage: %s flood|cancel [--calls N] [--runs R] [--service-us US] "
			"[--queue Q] [--loss-ppm P] [--declared-us US]\n",
			argv[0]);
		return 2;
	}
	snprintf(prefix, sizeof(prefix), "--file-prefix=dprpc_faults_%d", (int)getpid());
	static char fixed[][32] = {"--no-pci", "--no-huge", "-m", "512", "--huge-unlink=never",
		"--no-shconf", "--no-telemetry", "--lcores=0@0,1@1,2@1",
		"--log-level=lib.eal:error"};

	eal[n++] = argv[0];
	for (unsigned int i = 0; i < RTE_DIM(fixed); i++)
		eal[n++] = fixed[i];
	eal[n++] = prefix;
	eal[n] = NULL;
	if (rte_eal_init(n, eal) < 0) {
		fprintf(stderr, "dprpc-faults: EAL: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	tsc_hz = rte_get_tsc_hz();
	mp = rte_pktmbuf_pool_create(
		"faults_mp", 32767, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	ab = rte_ring_create("faults_ab", 4096, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	ba = rte_ring_create("faults_ba", 4096, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (mp == NULL || ab == NULL || ba == NULL)
		goto out;
	port_a = rte_eth_from_rings("faults_a", &ba, 1, &ab, 1, SOCKET_ID_ANY);
	port_b = rte_eth_from_rings("faults_b", &ab, 1, &ba, 1, SOCKET_ID_ANY);
	if (port_a < 0 || port_b < 0)
		goto out;
	a = make_agent(&o, false);
	b = make_agent(&o, true);
	if (a == NULL || b == NULL ||
		dprpc_register(b, "sleep", h_sleep, (void *)(uintptr_t)o.service_us,
			DPRPC_HANDLER_POOL) != 0 ||
		dprpc_register(b, "tally", h_tally, (void *)(uintptr_t)o.service_us,
			DPRPC_HANDLER_POOL) != 0 ||
		dprpc_world_wait(a, 10 * 1000 * 1000, NULL, 0) != 0)
		goto out;
	rc = (o.cancel ? run_cancel(&o, a, b) : run_flood(&o, a, b)) == 0 ? 0 : 1;
out:
	if (rc != 0)
		fprintf(stderr, "dprpc-faults: failed\n");
	if (a != NULL)
		(void)dprpc_agent_destroy(a);
	if (b != NULL)
		(void)dprpc_agent_destroy(b);
	(void)dprpc_eal_cleanup(); /* and EAL's runtime directory */
	return rc;
}
