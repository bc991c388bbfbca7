/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dprpc-perf world: N worker processes (--workers, default 4) on this
 * machine, a memif link per pair ("mesh memif:DIR" in the world map),
 * each worker pinned to one CPU, round robin over the CPUs the process may
 * use: the whole process (both its lcores, and EAL's control threads, the
 * interrupt thread that closes its memif ports among them).  Each worker:
 * start-up rendezvous (dprpc_world_wait()), a barrier, then for --warmup
 * + --duration seconds keeps --window calls in flight to every other
 * worker (an echo of --payload bytes; each completion callback, on the
 * agent's poller, records the round trip and sends the next call), then
 * stops sending, waits for its calls to end, and shuts down gracefully
 * (dprpc_shutdown()).
 *
 * Reported: the aggregate rate (every worker's OK calls completed in its
 * measured window, per second, summed), per worker its rate and p50/p99;
 * the world's start-up and shutdown; and the accounting: calls sent = OK +
 * failed on every worker (a call the agent refused to start is counted
 * apart, never sent).
 *
 * The world's times are PyTorch's init_rpc() and shutdown() measured as a
 * world: from the moment the last worker makes its call to the moment the
 * last worker is done.
 *  - rendezvous_ms: from the last worker's dprpc_agent_create() (its
 *    init_rpc) to the last worker's dprpc_world_wait() return;
 *  - shutdown_ms: from the last worker's dprpc_shutdown() call to the last
 *    worker's return (a worker that calls earlier waits in the barrier
 *    for the others: its own call's length, per worker, counts that wait,
 *    and so does the CPU time its process spent meanwhile, all threads);
 *  - startup_ms and eal_init_ms: from the last worker's process start
 *    (before its rte_eal_init()) to the last rendezvous, and the longest
 *    rte_eal_init().  DPDK 22.11's rte_eal_init() takes 100 ms or more on
 *    a machine whose TSC frequency neither CPUID leaf 0x15 nor the MSR
 *    device gives (a virtual machine): it measures the TSC over a 100 ms
 *    sleep (perf/RESULTS.md).
 * --compare-workers M runs a world of M first, same options, and reports
 * it beside (e.g. 2 workers beside 4 on a 2-CPU machine).
 *
 * Design: the driver forks the workers (no exec); each writes its result
 * into a shared anonymous mapping made before the fork, one slot per
 * worker, and the driver reads them once every worker exited.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>

#include <dprpc/dprpc.h>
#include <dprpc/dprpc_collective.h>

#include "perf.h"

#define WORLD_MAX_SAMPLES (1u << 22)

/* One worker's result, in the shared mapping. */
struct world_res {
	int done; /* 1: the worker wrote this and exited its run */
	int rc;	  /* 0, or the step that failed (negative errno) */
	unsigned int cpu;
	/* CLOCK_MONOTONIC: process start, EAL ready, agent_create() called,
	 * rendezvous, dprpc_shutdown() called and returned */
	uint64_t start_ns, eal_ns, init_ns, rdv_ns, shut0_ns, shut1_ns;
	double shutdown_ms;
	double shutdown_cpu_ms; /* the process's CPU time (all threads) in it */
	uint64_t sent, ok, failed, refused, measured;
	uint64_t handled; /* echo requests this worker answered */
	double rate, p50_us, p99_us;
};

/* One call slot: the peer it targets. */
struct world_slot {
	unsigned int peer;
	uint64_t t0;
};

static struct {
	struct dprpc_agent *a;
	uint32_t hid;
	uint8_t payload[DPRPC_MAX_FRAME_PAYLOAD];
	unsigned int len;
	uint64_t timeout_us;
	uint64_t measure_from, end; /* TSC */
	/* Written by the poller's callbacks only; read by the main thread
	 * once active is 0 (acquire, below). */
	uint64_t sent, ok, failed, refused, measured;
	uint64_t handled; /* by h_echo, inline on the poller */
	uint32_t *samples;
	uint64_t nb_samples;
	/* Release by the poller when a slot ends, acquire by the main
	 * thread: it then sees the counters above. */
	atomic_uint active;
	atomic_bool stop; /* relaxed: a flag, pairs with nothing */
} W;

static uint64_t
clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t
mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static int
h_echo(struct dprpc_request *req, void *arg)
{
	size_t len;
	const void *p = dprpc_request_payload(req, &len);

	(void)arg;
	W.handled++;
	return dprpc_reply(req, p, len);
}

static const struct dprpc_handler_def echo_def = {"echo", h_echo, NULL, DPRPC_HANDLER_INLINE};

static void world_done(struct dprpc_future *f, void *arg);

/* Send slot @s's next call; false (slot ended) if the agent refused. */
static bool
world_send(struct world_slot *s)
{
	struct dprpc_future *f;

	s->t0 = rte_rdtsc();
	f = dprpc_rpc_async_id(W.a, s->peer, W.hid, W.payload, W.len, W.timeout_us);
	if (f == NULL) {
		W.refused++;
		return false;
	}
	W.sent++;
	if (dprpc_future_add_callback(f, world_done, s) != 0) {
		/* Cannot happen on a valid future; count it as failed. */
		W.failed++;
		dprpc_future_put(f);
		return false;
	}
	dprpc_future_put(f);
	return true;
}

/* A call ended (on the poller): count it, and send the next one. */
static void
world_done(struct dprpc_future *f, void *arg)
{
	struct world_slot *s = arg;
	uint64_t t1 = rte_rdtsc();

	if (dprpc_future_error(f) != NULL) {
		W.failed++;
	} else {
		W.ok++;
		if (s->t0 >= W.measure_from && t1 <= W.end) {
			W.measured++;
			if (W.nb_samples < WORLD_MAX_SAMPLES)
				W.samples[W.nb_samples++] =
					(uint32_t)RTE_MIN(t1 - s->t0, UINT32_MAX);
		}
	}
	/* Relaxed: see W.stop. */
	if (atomic_load_explicit(&W.stop, memory_order_relaxed) || !world_send(s))
		atomic_fetch_sub_explicit(&W.active, 1, memory_order_release);
}

static int
cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}

/* The worker @i of @n, in the forked child; its result into @res. */
static int
world_worker(const struct perf_opts *o, unsigned int i, unsigned int n, const char *world,
	unsigned int cpu, struct world_res *res)
{
	char fixed[][40] = {"dprpc-perf", "--no-pci", "--no-huge", "-m256", "--no-shconf",
		"--no-telemetry", "--huge-unlink=never", "--log-level=lib.eal:error",
		"--log-level=pmd.net.memif:2"};
	char lcores[48], prefix[80], name[16], missing[256];
	cpu_set_t one;
	struct world_slot *slots;
	struct dprpc_agent_conf c;
	struct dprpc_error ce;
	char *argv[16];
	unsigned int k, p, nb = 0;
	uint64_t hz, t, cpu_ns;
	int argc = 0, rc;

	snprintf(lcores, sizeof(lcores), "--lcores=0@%u,1@%u", cpu, cpu);
	snprintf(prefix, sizeof(prefix), "--file-prefix=dprpc-perf-%d-world%u-%u", (int)getppid(),
		n, i);
	for (k = 0; k < RTE_DIM(fixed); k++)
		argv[argc++] = fixed[k];
	argv[argc++] = lcores;
	argv[argc++] = prefix;
	argv[argc] = NULL;
	/* EAL puts its control threads on the CPUs of the process's affinity
	 * that no lcore uses, or, with none left, on all of it: here, the
	 * worker's own CPU.  Otherwise each worker's interrupt thread ran on
	 * the CPU of the other workers, and a shutdown, whose memif ports close
	 * there, waited for it: 4 workers' shutdown 0.77 and 0.87 of that per
	 * pair of runs (perf/RESULTS.md). */
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one) != 0) {
		rc = -errno;
		fprintf(stderr, "dprpc-perf world: CPU %u: %s\n", cpu, strerror(-rc));
		return rc;
	}
	if (rte_eal_init(argc, argv) < 0) {
		fprintf(stderr, "dprpc-perf world: EAL: %s\n", rte_strerror(rte_errno));
		return -rte_errno;
	}
	res->eal_ns = mono_ns();
	snprintf(name, sizeof(name), "w%u", i);
	dprpc_agent_conf_init(&c);
	c.name = name;
	c.world = world;
	c.lcores.io = 1;
	c.serve.handlers = &echo_def;
	c.serve.nb_handlers = 1;
	if (o->retransmit_us >= 0)
		c.calls.retransmit_us = (uint64_t)o->retransmit_us;
	res->init_ns = mono_ns();
	W.a = dprpc_agent_create(&c);
	if (W.a == NULL) {
		fprintf(stderr, "dprpc-perf world %s: agent: %s\n", name, rte_strerror(rte_errno));
		return -rte_errno;
	}
	rc = dprpc_world_wait(W.a, 60ull * 1000 * 1000, missing, sizeof(missing));
	res->rdv_ns = mono_ns();
	if (rc != 0) {
		fprintf(stderr, "dprpc-perf world %s: rendezvous: %d, missing %s\n", name, rc,
			missing);
		return rc;
	}
	rc = dprpc_barrier(W.a, NULL, 0, 60ull * 1000 * 1000, &ce);
	if (rc != 0) {
		fprintf(stderr, "dprpc-perf world %s: barrier: %s\n", name, ce.msg);
		return rc;
	}
	W.hid = dprpc_handler_id("echo");
	W.len = o->payload;
	memset(W.payload, 0xa5, sizeof(W.payload));
	W.timeout_us = o->timeout_us;
	W.samples = malloc(WORLD_MAX_SAMPLES * sizeof(*W.samples));
	slots = calloc((size_t)n * o->window, sizeof(*slots));
	if (W.samples == NULL || slots == NULL)
		return -ENOMEM;
	hz = rte_get_tsc_hz();
	t = rte_rdtsc();
	W.measure_from = t + (uint64_t)(o->warmup_s * hz);
	W.end = W.measure_from + (uint64_t)(o->duration_s * hz);
	atomic_store(&W.active, (n - 1) * o->window);
	for (p = 0; p < n; p++) {
		if (p == i)
			continue;
		for (k = 0; k < o->window; k++) {
			slots[nb].peer = p;
			if (!world_send(&slots[nb]))
				atomic_fetch_sub_explicit(&W.active, 1, memory_order_release);
			nb++;
		}
	}
	while (rte_rdtsc() < W.end && !perf_stop)
		usleep(10000);
	atomic_store_explicit(&W.stop, true, memory_order_relaxed);
	/* Every call ends: answered, or failed at its timeout. */
	for (k = 0; k < 1000u * 60 && atomic_load_explicit(&W.active, memory_order_acquire) > 0;
		k++)
		usleep(1000);
	if (atomic_load_explicit(&W.active, memory_order_acquire) > 0) {
		fprintf(stderr, "dprpc-perf world %s: %u calls never ended\n", name,
			atomic_load(&W.active));
		return -ETIMEDOUT;
	}
	res->sent = W.sent;
	res->ok = W.ok;
	res->failed = W.failed;
	res->refused = W.refused;
	res->measured = W.measured;
	res->rate = (double)W.measured / o->duration_s;
	qsort(W.samples, W.nb_samples, sizeof(*W.samples), cmp_u32);
	if (W.nb_samples > 0) {
		res->p50_us = W.samples[W.nb_samples / 2] * 1e6 / hz;
		res->p99_us = W.samples[W.nb_samples * 99 / 100] * 1e6 / hz;
	}
	free(W.samples);
	free(slots);
	cpu_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	res->shut0_ns = mono_ns();
	rc = dprpc_shutdown(W.a, true, 30ull * 1000 * 1000, &ce);
	res->shut1_ns = mono_ns();
	res->shutdown_cpu_ms = (double)(clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu_ns) / 1e6;
	res->shutdown_ms = (double)(res->shut1_ns - res->shut0_ns) / 1e6;
	/* The poller is gone: every request it handled is counted. */
	res->handled = W.handled;
	if (rc != 0) {
		fprintf(stderr, "dprpc-perf world %s: shutdown: %d (%s)\n", name, rc, ce.msg);
		return rc;
	}
	dprpc_eal_cleanup();
	return 0;
}

/* One world of @n workers; the results in @res[0..n-1]. */
static int
world_run(const struct perf_opts *o, unsigned int n, struct world_res *res)
{
	char dir[64], world[4096], cmd[160];
	pid_t pids[PERF_WORLD_MAX];
	cpu_set_t set;
	unsigned int cpus[CPU_SETSIZE], ncpu = 0, i, left;
	int off = 0, rc = 0, status;
	uint64_t end;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return -errno;
	for (i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set))
			cpus[ncpu++] = i;
	snprintf(dir, sizeof(dir), "/tmp/dprpc-perf-world-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -errno;
	for (i = 0; i < n; i++)
		off += snprintf(world + off, sizeof(world) - (size_t)off,
			"w%u %u 02:00:00:00:0b:%02x 10.0.11.%u 7000\n", i, i, i + 1, i + 1);
	snprintf(world + off, sizeof(world) - (size_t)off, "mesh memif:%s\n", dir);
	memset(res, 0, n * sizeof(*res));
	for (i = 0; i < n; i++) {
		res[i].cpu = cpus[i % ncpu];
		res[i].start_ns = mono_ns();
		pids[i] = fork();
		if (pids[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			res[i].rc = world_worker(o, i, n, world, res[i].cpu, &res[i]);
			res[i].done = 1;
			_exit(res[i].rc == 0 ? 0 : 1);
		}
		if (pids[i] < 0)
			return -errno;
	}
	end = mono_ns() + (uint64_t)((o->warmup_s + o->duration_s + 120) * 1e9);
	do {
		left = 0;
		for (i = 0; i < n; i++) {
			if (pids[i] <= 0)
				continue;
			if (waitpid(pids[i], &status, WNOHANG) == pids[i]) {
				if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
					rc = -EIO;
				pids[i] = -1;
			} else {
				left++;
			}
		}
		if (left > 0)
			usleep(10000);
	} while (left > 0 && mono_ns() < end);
	for (i = 0; i < n; i++) {
		if (pids[i] > 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], &status, 0);
			rc = -ETIMEDOUT;
		}
		/* A worker that failed half-way leaves its runtime dir. */
		snprintf(cmd, sizeof(cmd), "rm -rf /var/run/dpdk/dprpc-perf-%d-world%u-%u",
			(int)getpid(), n, i);
		if (system(cmd) != 0)
			rc = rc ? rc : -EIO;
		if (!res[i].done || res[i].rc != 0) {
			fprintf(stderr, "dprpc-perf world: w%u failed (%d)\n", i, res[i].rc);
			rc = rc ? rc : -EIO;
		}
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		rc = rc ? rc : -EIO;
	return rc;
}

/* The world's times (see the file comment), in ms. */
struct world_times {
	double rendezvous, startup, eal_init, shutdown;
};

static struct world_times
world_times(unsigned int n, const struct world_res *res)
{
	uint64_t last_start = 0, last_init = 0, last_rdv = 0, last_shut0 = 0, last_shut1 = 0,
		 eal = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		last_start = RTE_MAX(last_start, res[i].start_ns);
		last_init = RTE_MAX(last_init, res[i].init_ns);
		last_rdv = RTE_MAX(last_rdv, res[i].rdv_ns);
		last_shut0 = RTE_MAX(last_shut0, res[i].shut0_ns);
		last_shut1 = RTE_MAX(last_shut1, res[i].shut1_ns);
		eal = RTE_MAX(eal, res[i].eal_ns - res[i].start_ns);
	}
	return (struct world_times){.rendezvous = (double)(last_rdv - last_init) / 1e6,
		.startup = (double)(last_rdv - last_start) / 1e6,
		.eal_init = (double)eal / 1e6,
		.shutdown = (double)(last_shut1 - last_shut0) / 1e6};
}

/* A world's report: JSON members (no braces) or text lines. */
static void
world_print(const struct perf_opts *o, unsigned int n, const struct world_res *res)
{
	uint64_t sent = 0, ok = 0, failed = 0, refused = 0, handled = 0;
	struct world_times t = world_times(n, res);
	double rate = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		sent += res[i].sent;
		ok += res[i].ok;
		failed += res[i].failed;
		refused += res[i].refused;
		handled += res[i].handled;
		rate += res[i].rate;
	}
	if (!o->json) {
		printf("world of %u workers, window %u per peer, %.1f s: %.0f calls/s in all, "
		       "rendezvous %.1f ms, shutdown %.1f ms\n",
			n, o->window, o->duration_s, rate, t.rendezvous, t.shutdown);
		printf("  from the last process start: %.1f ms to the rendezvous "
		       "(rte_eal_init() %.1f ms at most)\n",
			t.startup, t.eal_init);
		printf("  calls sent %" PRIu64 " = ok %" PRIu64 " + failed %" PRIu64
		       "; refused unsent %" PRIu64 "; requests handled %" PRIu64 "\n",
			sent, ok, failed, refused, handled);
		for (i = 0; i < n; i++)
			printf("  w%u (CPU %u): %.0f calls/s, p50 %.1f us, p99 %.1f us, "
			       "in dprpc_shutdown() %.1f ms (%.1f ms of CPU)\n",
				i, res[i].cpu, res[i].rate, res[i].p50_us, res[i].p99_us,
				res[i].shutdown_ms, res[i].shutdown_cpu_ms);
		return;
	}
	printf("\"workers\": %u, \"window\": %u, \"duration_s\": %.3f, \"rate_rps\": %.1f, "
	       "\"rendezvous_ms\": %.3f, \"shutdown_ms\": %.3f, \"startup_ms\": %.3f, "
	       "\"eal_init_ms\": %.3f, \"calls_sent\": %" PRIu64 ", \"calls_ok\": %" PRIu64
	       ", \"calls_failed\": %" PRIu64 ", \"calls_refused\": %" PRIu64
	       ", \"requests_handled\": %" PRIu64 ", \"per_worker\": [",
		n, o->window, o->duration_s, rate, t.rendezvous, t.shutdown, t.startup, t.eal_init,
		sent, ok, failed, refused, handled);
	for (i = 0; i < n; i++)
		printf("%s{\"name\": \"w%u\", \"cpu\": %u, \"rate_rps\": %.1f, \"p50_us\": %.2f, "
		       "\"p99_us\": %.2f, \"calls_sent\": %" PRIu64 ", \"calls_ok\": %" PRIu64
		       ", \"calls_failed\": %" PRIu64 ", \"requests_handled\": %" PRIu64
		       ", \"shutdown_ms\": %.3f, \"shutdown_cpu_ms\": %.3f}",
			i ? ", " : "", i, res[i].cpu, res[i].rate, res[i].p50_us, res[i].p99_us,
			res[i].sent, res[i].ok, res[i].failed, res[i].handled, res[i].shutdown_ms,
			res[i].shutdown_cpu_ms);
	printf("]");
}

int
perf_world(const struct perf_opts *o)
{
	size_t sz = PERF_WORLD_MAX * sizeof(struct world_res);
	struct world_res *res =
		mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct world_res *cmp = NULL;
	int rc;

	if (res == MAP_FAILED)
		return -errno;
	if (o->compare_workers > 0) {
		cmp = malloc(sz);
		if (cmp == NULL)
			return -ENOMEM;
		rc = world_run(o, o->compare_workers, res);
		if (rc != 0)
			return rc;
		memcpy(cmp, res, sz);
	}
	rc = world_run(o, o->workers, res);
	if (rc != 0)
		return rc;
	if (o->json) {
		printf("{\"mode\": \"world\", \"loadavg\": %.2f, ", perf_loadavg());
		world_print(o, o->workers, res);
		if (cmp != NULL) {
			printf(", \"compare\": {");
			world_print(o, o->compare_workers, cmp);
			printf("}");
		}
		printf("}\n");
	} else {
		if (cmp != NULL)
			world_print(o, o->compare_workers, cmp);
		world_print(o, o->workers, res);
		printf("load average %.2f\n", perf_loadavg());
	}
	free(cmp);
	munmap(res, sz);
	return 0;
}
