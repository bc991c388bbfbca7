/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dprpc-hiccup: how often this machine takes its CPUs away from a thread
 * that never yields them, and what that alone costs an RPC's tail.
 *
 *   dprpc-hiccup [--duration S] [--cpus 0,1] [--threshold-ns N]
 *                [--client-cpu C] [--server-cpu C]
 *                [--ideal RATE,SERVICE_NS,WIRE_NS]... [--json]
 *
 * One thread per CPU of --cpus (default: every CPU the process may use),
 * pinned, at the highest priority the process has, reads the clock in a
 * loop for --duration seconds (default 10) and notes every gap between two
 * reads longer than --threshold-ns (default 1000): a stall, the CPU busy
 * with something else (the hypervisor, an interrupt, another thread).  A
 * dprpc poller pinned to that CPU is off it exactly as long.  jHiccup
 * measures a JVM's pauses the same way; this one needs no JVM and runs
 * the CPUs dprpc-perf pins its sides to.
 *
 * Reported per CPU: the share of time lost in stalls longer than 10 us,
 * 100 us and 1 ms, their rate, the longest, the residual stall's p90, p99
 * and p99.9 (stall.h: the wait of a call falling due at a random instant),
 * how many times the kernel switched the thread out for another one
 * (involuntary context switches: a stall without one is the hypervisor's
 * or an interrupt's), and what /proc/stat counted meanwhile (steal: the
 * hypervisor ran another guest, in clock ticks; irq and softirq).  Then,
 * for each --ideal, the latency of an ideal RPC over the traces of
 * --client-cpu (default the first of --cpus) and --server-cpu (default
 * the second): calls at RATE per second, SERVICE_NS of server CPU each,
 * WIRE_NS of network for both ways, no software cost at all (stall.h).
 * That is the floor under any RPC library's open-loop percentiles on
 * these CPUs at that load.
 *
 * Nothing here uses DPDK or dprpc: the figures are the machine's.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "stall.h"

#define HICCUP_MAX_CPUS	 64
#define HICCUP_MAX_IDEAL 8

struct hiccup_ideal {
	double rate;
	uint64_t service_ns, wire_ns;
};

struct hiccup_opts {
	double duration;
	uint64_t threshold_ns;
	unsigned int cpus[HICCUP_MAX_CPUS], nb_cpus;
	int client_cpu, server_cpu; /* indexes into cpus[] */
	struct hiccup_ideal ideal[HICCUP_MAX_IDEAL];
	unsigned int nb_ideal;
	bool json;
};

/* What /proc/stat says of one CPU, in clock ticks. */
struct hiccup_ticks {
	uint64_t total, steal, irq;
};

struct hiccup_cpu {
	unsigned int cpu;
	pthread_t th;
	struct perf_stall_trace t;
	struct hiccup_ticks t0, t1;
	long preempted; /* involuntary context switches of the thread */
	int err;
};

/* Set by main() before it starts the threads (pthread_create() orders
 * those writes before their reads), read only after. */
static struct {
	uint64_t start, end; /* CLOCK_MONOTONIC ns */
	uint64_t threshold;  /* ns */
} H;

static void
read_ticks(unsigned int cpu, struct hiccup_ticks *t)
{
	unsigned long long v[10] = {0};
	char line[512], name[16];
	FILE *f = fopen("/proc/stat", "r");

	*t = (struct hiccup_ticks){0};
	if (f == NULL)
		return;
	snprintf(name, sizeof(name), "cpu%u ", cpu);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, name, strlen(name)) != 0)
			continue;
		if (sscanf(line + strlen(name), "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
			    &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
			for (int i = 0; i < 8; i++)
				t->total += v[i];
			t->steal = v[7];
			t->irq = v[5] + v[6];
		}
		break;
	}
	fclose(f);
}

static void *
hiccup_spin(void *arg)
{
	struct hiccup_cpu *c = arg;
	uint64_t now, prev;
	struct rusage ru;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(c->cpu, &set);
	c->err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (c->err != 0)
		return NULL;
	do
		prev = perf_mono_ns();
	while (prev < H.start);
	read_ticks(c->cpu, &c->t0);
	getrusage(RUSAGE_THREAD, &ru);
	c->preempted = -ru.ru_nivcsw;
	prev = perf_mono_ns();
	while (prev < H.end) {
		now = perf_mono_ns();
		if (now - prev > H.threshold && c->err == 0 &&
			perf_stall_add(&c->t, prev - H.start, now - prev) != 0)
			c->err = ENOMEM;
		prev = now;
	}
	read_ticks(c->cpu, &c->t1);
	getrusage(RUSAGE_THREAD, &ru);
	c->preempted += ru.ru_nivcsw;
	c->t.span = H.end - H.start;
	return NULL;
}

static void
usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [--duration S] [--cpus 0,1] [--threshold-ns N] [--client-cpu C]\n"
		"       [--server-cpu C] [--ideal RATE,SERVICE_NS,WIRE_NS]... [--json]\n",
		argv0);
}

/* The index of CPU @cpu in o->cpus, or -1. */
static int
cpu_index(const struct hiccup_opts *o, unsigned long cpu)
{
	for (unsigned int i = 0; i < o->nb_cpus; i++)
		if (o->cpus[i] == cpu)
			return (int)i;
	return -1;
}

static int
parse_cpus(struct hiccup_opts *o, const char *s)
{
	char *end;

	o->nb_cpus = 0;
	for (;;) {
		unsigned long v = strtoul(s, &end, 10);

		if (end == s || v >= CPU_SETSIZE || o->nb_cpus == HICCUP_MAX_CPUS ||
			cpu_index(o, v) >= 0)
			return -EINVAL;
		o->cpus[o->nb_cpus++] = (unsigned int)v;
		if (*end == '\0')
			return 0;
		if (*end != ',')
			return -EINVAL;
		s = end + 1;
	}
}

static int
parse_ideal(struct hiccup_opts *o, const char *s)
{
	struct hiccup_ideal *id = &o->ideal[o->nb_ideal];
	unsigned long long svc, wire;
	double rate;
	int n = 0;

	if (o->nb_ideal == HICCUP_MAX_IDEAL ||
		sscanf(s, "%lf,%llu,%llu%n", &rate, &svc, &wire, &n) != 3 || s[n] != '\0' ||
		!(rate > 0 && rate <= 1e9) || svc > 1000000000ull || wire > 1000000000ull)
		return -EINVAL;
	*id = (struct hiccup_ideal){rate, svc, wire};
	o->nb_ideal++;
	return 0;
}

static int
parse_opts(int argc, char **argv, struct hiccup_opts *o)
{
	long client = -1, server = -1;
	cpu_set_t set;
	char *end;
	int i;

	*o = (struct hiccup_opts){.duration = 10, .threshold_ns = 1000};
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--json") == 0) {
			o->json = true;
			continue;
		}
		if (v == NULL)
			return -EINVAL;
		i++;
		if (strcmp(a, "--duration") == 0) {
			o->duration = strtod(v, &end);
			if (*end != '\0' || !(o->duration >= 0.05 && o->duration <= 3600))
				return -EINVAL;
		} else if (strcmp(a, "--threshold-ns") == 0) {
			o->threshold_ns = strtoull(v, &end, 10);
			if (*end != '\0' || o->threshold_ns < 100 || o->threshold_ns > 1000000000)
				return -EINVAL;
		} else if (strcmp(a, "--cpus") == 0) {
			if (parse_cpus(o, v) != 0)
				return -EINVAL;
		} else if (strcmp(a, "--client-cpu") == 0 || strcmp(a, "--server-cpu") == 0) {
			long c = strtol(v, &end, 10);

			if (*end != '\0' || c < 0)
				return -EINVAL;
			*(a[2] == 'c' ? &client : &server) = c;
		} else if (strcmp(a, "--ideal") == 0) {
			if (parse_ideal(o, v) != 0)
				return -EINVAL;
		} else {
			return -EINVAL;
		}
	}
	if (o->nb_cpus == 0) {
		if (sched_getaffinity(0, sizeof(set), &set) != 0)
			return -errno;
		for (i = 0; i < CPU_SETSIZE && o->nb_cpus < HICCUP_MAX_CPUS; i++)
			if (CPU_ISSET(i, &set))
				o->cpus[o->nb_cpus++] = (unsigned int)i;
	}
	o->client_cpu = client < 0 ? 0 : cpu_index(o, (unsigned long)client);
	o->server_cpu = server < 0 ? (o->nb_cpus > 1 ? 1 : 0) : cpu_index(o, (unsigned long)server);
	if (o->client_cpu < 0 || o->server_cpu < 0) {
		fprintf(stderr,
			"dprpc-hiccup: --client-cpu and --server-cpu must be among --cpus\n");
		return -EINVAL;
	}
	return 0;
}

static double
pct_of(uint64_t part, uint64_t total)
{
	return total == 0 ? 0 : 100.0 * (double)part / (double)total;
}

static void
report_cpu(const struct hiccup_opts *o, const struct hiccup_cpu *c, bool first)
{
	static const uint64_t over[] = {10000, 100000, 1000000};
	uint64_t n[3] = {0}, max = 0, ticks = c->t1.total - c->t0.total;
	double secs = (double)c->t.span / 1e9;
	size_t i;

	for (i = 0; i < c->t.n; i++) {
		for (int k = 0; k < 3; k++)
			n[k] += c->t.s[i].len > over[k];
		if (c->t.s[i].len > max)
			max = c->t.s[i].len;
	}
	if (o->json) {
		printf("%s{\"cpu\": %u, \"stalls\": %zu, \"lost_over_10us\": %.5f, "
		       "\"lost_over_100us\": %.5f, \"lost_over_1ms\": %.5f, "
		       "\"stalls_over_10us_per_s\": %.1f, \"stalls_over_1ms_per_s\": %.2f, "
		       "\"max_us\": %.1f, \"residual_p90_us\": %.3f, \"residual_p99_us\": %.3f, "
		       "\"residual_p999_us\": %.3f, \"preempted\": %ld, \"steal\": %.5f, "
		       "\"irq\": %.5f}",
			first ? "" : ", ", c->cpu, c->t.n, perf_stall_lost(&c->t, over[0]),
			perf_stall_lost(&c->t, over[1]), perf_stall_lost(&c->t, over[2]),
			(double)n[0] / secs, (double)n[2] / secs, (double)max / 1e3,
			(double)perf_stall_residual_quantile(&c->t, 0.1) / 1e3,
			(double)perf_stall_residual_quantile(&c->t, 0.01) / 1e3,
			(double)perf_stall_residual_quantile(&c->t, 0.001) / 1e3, c->preempted,
			pct_of(c->t1.steal - c->t0.steal, ticks) / 100,
			pct_of(c->t1.irq - c->t0.irq, ticks) / 100);
		return;
	}
	printf("cpu %u: time lost in stalls > 10 us %.2f%% (%.0f/s), > 100 us %.2f%%, > 1 ms "
	       "%.2f%% (%.1f/s); longest %.1f us\n",
		c->cpu, 100 * perf_stall_lost(&c->t, over[0]), (double)n[0] / secs,
		100 * perf_stall_lost(&c->t, over[1]), 100 * perf_stall_lost(&c->t, over[2]),
		(double)n[2] / secs, (double)max / 1e3);
	printf("       residual stall at a random instant: p90 %.2f us, p99 %.2f us, p99.9 %.2f "
	       "us; switched out for another thread %ld times; /proc/stat: steal %.2f%%, "
	       "irq+softirq %.2f%%\n",
		(double)perf_stall_residual_quantile(&c->t, 0.1) / 1e3,
		(double)perf_stall_residual_quantile(&c->t, 0.01) / 1e3,
		(double)perf_stall_residual_quantile(&c->t, 0.001) / 1e3, c->preempted,
		pct_of(c->t1.steal - c->t0.steal, ticks), pct_of(c->t1.irq - c->t0.irq, ticks));
}

static int
report_ideal(const struct hiccup_opts *o, const struct hiccup_cpu *cpus,
	const struct hiccup_ideal *id, bool first)
{
	const struct hiccup_cpu *cl = &cpus[o->client_cpu], *sv = &cpus[o->server_cpu];
	struct perf_hist h;
	uint64_t n, p50, p99;

	if (perf_hist_init(&h, 60ull * 1000 * 1000 * 1000, 3) != 0)
		return -ENOMEM;
	n = perf_stall_ideal_rpc(&cl->t, &sv->t, 1e9 / id->rate, id->service_ns, id->wire_ns, &h);
	p50 = perf_hist_percentile(&h, 50);
	p99 = perf_hist_percentile(&h, 99);
	if (o->json) {
		printf("%s{\"client_cpu\": %u, \"server_cpu\": %u, \"rate\": %.0f, \"service_ns\": "
		       "%" PRIu64 ", \"wire_ns\": %" PRIu64 ", \"load\": %.3f, \"calls\": %" PRIu64
		       ", \"p50_us\": %.3f, \"p90_us\": %.3f, \"p99_us\": %.3f, \"p999_us\": %.3f, "
		       "\"max_us\": %.3f, \"p99_over_p50\": %.2f}",
			first ? "" : ", ", cl->cpu, sv->cpu, id->rate, id->service_ns, id->wire_ns,
			id->rate * (double)id->service_ns / 1e9, n, (double)p50 / 1e3,
			(double)perf_hist_percentile(&h, 90) / 1e3, (double)p99 / 1e3,
			(double)perf_hist_percentile(&h, 99.9) / 1e3, (double)h.max / 1e3,
			p50 == 0 ? 0 : (double)p99 / (double)p50);
	} else {
		printf("ideal RPC, client cpu %u, server cpu %u: %.0f calls/s, service %" PRIu64
		       " ns (load %.2f), wire %" PRIu64 " ns: %" PRIu64 " calls, p50 %.2f us, p90 "
		       "%.2f us, p99 %.2f us, p99.9 %.2f us, max %.1f us: p99/p50 %.1f\n",
			cl->cpu, sv->cpu, id->rate, id->service_ns,
			id->rate * (double)id->service_ns / 1e9, id->wire_ns, n, (double)p50 / 1e3,
			(double)perf_hist_percentile(&h, 90) / 1e3, (double)p99 / 1e3,
			(double)perf_hist_percentile(&h, 99.9) / 1e3, (double)h.max / 1e3,
			p50 == 0 ? 0 : (double)p99 / (double)p50);
	}
	perf_hist_free(&h);
	return 0;
}

int
main(int argc, char **argv)
{
	static struct hiccup_cpu cpus[HICCUP_MAX_CPUS];
	struct hiccup_opts o;
	double load[1] = {0};
	unsigned int i;
	int rc = 0;

	if (parse_opts(argc, argv, &o) != 0) {
		usage(argv[0]);
		return 2;
	}
	(void)setpriority(PRIO_PROCESS, 0, -20); /* best effort: root only */
	H.threshold = o.threshold_ns;
	H.start = perf_mono_ns() + 50 * 1000 * 1000; /* every thread spinning by then */
	H.end = H.start + (uint64_t)(o.duration * 1e9);
	for (i = 0; i < o.nb_cpus; i++) {
		cpus[i].cpu = o.cpus[i];
		if (pthread_create(&cpus[i].th, NULL, hiccup_spin, &cpus[i]) != 0) {
			fprintf(stderr, "dprpc-hiccup: cannot start a thread\n");
			return 1;
		}
	}
	for (i = 0; i < o.nb_cpus; i++)
		pthread_join(cpus[i].th, NULL);
	for (i = 0; i < o.nb_cpus; i++)
		if (cpus[i].err != 0) {
			fprintf(stderr, "dprpc-hiccup: cpu %u: %s\n", cpus[i].cpu,
				strerror(cpus[i].err));
			rc = 1;
		}
	(void)getloadavg(load, 1);
	if (rc == 0) {
		if (o.json)
			printf("{\"duration_s\": %.3f, \"threshold_ns\": %" PRIu64
			       ", \"load_average\": %.2f, \"cpus\": [",
				o.duration, o.threshold_ns, load[0]);
		else
			printf("dprpc-hiccup: %.1f s, stalls over %" PRIu64
			       " ns; load average %.2f\n",
				o.duration, o.threshold_ns, load[0]);
		for (i = 0; i < o.nb_cpus; i++)
			report_cpu(&o, &cpus[i], i == 0);
		if (o.json)
			printf("], \"ideal\": [");
		for (i = 0; i < o.nb_ideal && rc == 0; i++)
			rc = report_ideal(&o, cpus, &o.ideal[i], i == 0) == 0 ? 0 : 1;
		if (o.json)
			printf("]}\n");
	}
	for (i = 0; i < o.nb_cpus; i++)
		perf_stall_free(&cpus[i].t);
	return rc;
}
