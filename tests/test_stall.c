/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dprpc-hiccup's stall traces (perf/stall.c): the share of time lost, the
 * residual stall's quantiles, the ideal RPC, intersections and overlaps,
 * on made-up traces whose answers are worked out by hand in each test;
 * and the stall watch of perf lateness (perf/watch.c) on a CPU that a
 * real-time thread of the test takes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setaffinity_np */
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "../perf/stall.h"
#include "../perf/watch.h"

#define MS (1000ull * 1000)

static struct perf_stall_trace
trace(uint64_t span, const struct perf_stall *s, size_t n)
{
	struct perf_stall_trace t = {0};

	for (size_t i = 0; i < n; i++)
		cr_assert_eq(perf_stall_add(&t, s[i].at, s[i].len), 0);
	t.span = span;
	return t;
}

static void
hist_init(struct perf_hist *h)
{
	cr_assert_eq(perf_hist_init(h, 60ull * 1000 * MS, 3), 0);
}

Test(stall, lost_counts_only_stalls_over_the_bound)
{
	const struct perf_stall s[] = {{0, 5000}, {100000, 50000}, {400000, 500000}};
	struct perf_stall_trace t = trace(MS, s, 3);

	cr_assert_float_eq(perf_stall_lost(&t, 10000), 0.55, 1e-12);
	cr_assert_float_eq(perf_stall_lost(&t, 1000), 0.555, 1e-12);
	cr_assert_float_eq(perf_stall_lost(&t, 500000), 0.0, 1e-12);
	perf_stall_free(&t);
}

Test(stall, residual_quantile_of_one_stall)
{
	/* One stall of 100 us in 1 ms: P(residual > x) = (100000 - x) / 1e6. */
	const struct perf_stall s[] = {{300000, 100000}};
	struct perf_stall_trace t = trace(MS, s, 1);

	cr_assert_eq(perf_stall_residual_quantile(&t, 0.01), 90000);
	cr_assert_eq(perf_stall_residual_quantile(&t, 0.05), 50000);
	cr_assert_eq(perf_stall_residual_quantile(&t, 0.1), 0); /* stalled 10% of the time */
	cr_assert_eq(perf_stall_residual_quantile(&t, 0.5), 0);
	perf_stall_free(&t);
}

Test(stall, residual_quantile_of_two_stalls)
{
	/* 40 us and 10 us in 1 ms: P(R > x) = (40000 - x + max(10000 - x, 0)) / 1e6.
	 * q = 0.02: 50000 - 2x <= 20000 is x >= 15000, past 10000: then
	 * 40000 - x <= 20000, x = 20000. */
	const struct perf_stall s[] = {{1000, 40000}, {500000, 10000}};
	struct perf_stall_trace t = trace(MS, s, 2);

	cr_assert_eq(perf_stall_residual_quantile(&t, 0.02), 20000);
	/* q = 0.04: 50000 - 2x <= 40000 at x = 5000. */
	cr_assert_eq(perf_stall_residual_quantile(&t, 0.04), 5000);
	perf_stall_free(&t);
}

Test(stall, ideal_rpc_without_stalls_is_service_and_wire)
{
	struct perf_stall_trace c = trace(100 * MS, NULL, 0), s = trace(100 * MS, NULL, 0);
	struct perf_hist h;

	hist_init(&h);
	/* Every 1 us until 90 ms (the span less 10 ms). */
	cr_assert_eq(perf_stall_ideal_rpc(&c, &s, 1000, 500, 1000, &h), 90000);
	cr_assert_eq(h.total, 90000);
	cr_assert_eq(h.min, 1500);
	cr_assert_eq(h.max, 1500);
	perf_hist_free(&h);
}

Test(stall, server_stall_suspends_the_call_in_service_and_queues_the_rest)
{
	/* The server stops for 1 ms 200 ns into the service of the call of
	 * 10 ms, which ends 300 ns after the stall: 1,000,500 ns late.  The
	 * call j after it ends 500 j later and was meant 1000 j later, so
	 * calls 0..1999 wait (latency 1,000,500 - 500 j > 500) and call 2000
	 * finds the server idle again. */
	const struct perf_stall st[] = {{10 * MS + 200, MS}};
	struct perf_stall_trace c = trace(100 * MS, NULL, 0), s = trace(100 * MS, st, 1);
	struct perf_hist h;

	hist_init(&h);
	cr_assert_eq(perf_stall_ideal_rpc(&c, &s, 1000, 500, 0, &h), 90000);
	cr_assert_eq(h.max, 1000500);
	cr_assert_eq(h.min, 500);
	cr_assert_eq(perf_hist_count_le(&h, 500), 90000 - 2000);
	perf_hist_free(&h);
	perf_stall_free(&s);
}

Test(stall, client_stall_delays_sends_and_the_answers_it_was_waiting_for)
{
	/* The client stops for 100 us at 20 ms.  The call of 19.999 ms is
	 * answered at 20.0005 ms, read at 20.1 ms: 101,000.  The 100 calls
	 * due in the stall leave at its end together and queue at the
	 * server: call i of 20 ms + i us is read at 20.1015 ms + 500 i,
	 * latency 101,500 - 500 i, above the unqueued 1500 for i < 200:
	 * 201 calls late in all. */
	const struct perf_stall st[] = {{20 * MS, 100000}};
	struct perf_stall_trace c = trace(100 * MS, st, 1), s = trace(100 * MS, NULL, 0);
	struct perf_hist h;

	hist_init(&h);
	cr_assert_eq(perf_stall_ideal_rpc(&c, &s, 1000, 500, 1000, &h), 90000);
	cr_assert_eq(h.max, 101500);
	cr_assert_eq(h.min, 1500);
	cr_assert_eq(perf_hist_count_le(&h, 1500), 90000 - 201);
	cr_assert_eq(perf_hist_count_le(&h, 101000) - perf_hist_count_le(&h, 100900), 2,
		"101,000 (its bucket: 64 ns wide): the call read late, and i = 1");
	perf_hist_free(&h);
	perf_stall_free(&c);
}

Test(stall, too_short_a_trace_simulates_nothing)
{
	struct perf_stall_trace c = trace(10 * MS, NULL, 0), s = trace(10 * MS, NULL, 0);
	struct perf_hist h;

	hist_init(&h);
	cr_assert_eq(perf_stall_ideal_rpc(&c, &s, 1000, 500, 1000, &h), 0);
	cr_assert_eq(h.total, 0);
	perf_hist_free(&h);
}

Test(stall, intersection_keeps_the_instants_of_both)
{
	const struct perf_stall sa[] = {{0, 10}, {20, 10}, {50, 30}};
	const struct perf_stall sb[] = {{5, 20}, {60, 5}, {70, 40}};
	const struct perf_stall want[] = {{5, 5}, {20, 5}, {60, 5}, {70, 10}};
	struct perf_stall_trace a = trace(1000, sa, 3), b = trace(900, sb, 3), out = {0};

	cr_assert_eq(perf_stall_intersect(&a, &b, &out), 0);
	cr_assert_eq(out.span, 900);
	cr_assert_eq(out.n, 4);
	for (size_t i = 0; i < 4; i++) {
		cr_assert_eq(out.s[i].at, want[i].at, "stall %zu", i);
		cr_assert_eq(out.s[i].len, want[i].len, "stall %zu", i);
	}
	perf_stall_free(&out);
	/* Stalls of both that end at the same instant. */
	{
		const struct perf_stall ea[] = {{0, 10}, {20, 10}}, eb[] = {{5, 5}, {25, 5}};
		struct perf_stall_trace x = trace(100, ea, 2), y = trace(100, eb, 2), o = {0};

		cr_assert_eq(perf_stall_intersect(&x, &y, &o), 0);
		cr_assert_eq(o.n, 2);
		cr_assert(o.s[0].at == 5 && o.s[0].len == 5 && o.s[1].at == 25 && o.s[1].len == 5);
		perf_stall_free(&x), perf_stall_free(&y), perf_stall_free(&o);
	}
	/* With an empty trace: nothing. */
	perf_stall_free(&b);
	cr_assert_eq(perf_stall_intersect(&a, &b, &out), 0);
	cr_assert_eq(out.n, 0);
	perf_stall_free(&a);
}

Test(stall, overlap_counts_the_window_s_part_of_each_stall)
{
	const struct perf_stall s[] = {{10, 10}, {30, 10}, {50, 10}};
	struct perf_stall_trace t = trace(100, s, 3);

	cr_assert_eq(perf_stall_overlap(&t, 15, 55), 5 + 10 + 5);
	cr_assert_eq(perf_stall_overlap(&t, 0, 100), 30);
	cr_assert_eq(perf_stall_overlap(&t, 0, 10), 0); /* [0, 10) ends where one starts */
	cr_assert_eq(perf_stall_overlap(&t, 20, 30), 0);
	cr_assert_eq(perf_stall_overlap(&t, 35, 36), 1);
	cr_assert_eq(perf_stall_overlap(&t, 60, 60), 0);
	cr_assert_eq(perf_stall_overlap(&t, 55, 15), 0); /* an empty window */
	cr_assert_eq(perf_stall_longest(&t, 0, UINT64_MAX), 10);
	cr_assert_eq(perf_stall_longest(&t, 35, 55), 5); /* cut at the edges */
	cr_assert_eq(perf_stall_longest(&t, 20, 30), 0);
	perf_stall_free(&t);
	t = trace(100, NULL, 0);
	cr_assert_eq(perf_stall_overlap(&t, 0, 100), 0);
	cr_assert_eq(perf_stall_longest(&t, 0, UINT64_MAX), 0);
}

/* The test's real-time thread: spins @spin_ns on its CPU, above the
 * watch's priority, and notes when (the watch's clock). */
struct hog {
	struct perf_watch *w;
	unsigned int cpu;
	uint64_t spin_ns, from, to;
	int err;
};

static void *
hog_main(void *arg)
{
	struct hog *h = arg;
	struct sched_param sp = {.sched_priority = 2};
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(h->cpu, &set);
	h->err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (h->err == 0)
		h->err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	if (h->err != 0)
		return NULL;
	h->from = perf_watch_now(h->w);
	while (perf_watch_now(h->w) - h->from < h->spin_ns)
		;
	h->to = perf_watch_now(h->w);
	return NULL;
}

static void
sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

Test(watch, a_cpu_taken_from_its_watch_is_a_stall)
{
	struct perf_watch *w = NULL;
	struct hog h = {0};
	unsigned int attempt;
	pthread_t t;

	/* Up to 3 attempts: the host may take CPU 1 too for the whole 8 ms
	 * (it took a CPU for up to 36.7 ms here, perf/RESULTS.md); then the
	 * every-CPU check below cannot tell, and the hog runs again. */
	for (attempt = 0; attempt < 3; attempt++) {
		perf_watch_free(w);
		/* Wake-ups every 200 us, a stall past 100 us late. */
		w = perf_watch_start(200 * 1000, 100 * 1000);
		cr_assert_not_null(w);
		h = (struct hog){.w = w, .cpu = 0, .spin_ns = 8 * MS};
		sleep_ms(20);
		cr_assert_eq(pthread_create(&t, NULL, hog_main, &h), 0);
		pthread_join(t, NULL);
		sleep_ms(20);
		cr_assert_eq(perf_watch_stop(w), 0);
		if (h.err != 0 || !perf_watch_realtime(w)) {
			perf_watch_free(w);
			cr_skip_test(
				"SCHED_FIFO refused (error %d): needs root or CAP_SYS_NICE", h.err);
		}
		if (perf_watch_cpus(w) == 1 ||
			perf_stall_overlap(perf_watch_all(w), h.from, h.to) <
				perf_stall_overlap(perf_watch_trace(w, 0), h.from, h.to))
			break;
	}
	cr_assert_eq(perf_watch_cpus(w), (unsigned int)sysconf(_SC_NPROCESSORS_ONLN));
	/* CPU 0 is the hog's: its watch could not wake from the first
	 * wake-up due after the hog started (within 200 us) until the hog
	 * stopped.  The trace spans the run. */
	const struct perf_stall_trace *c0 = perf_watch_trace(w, 0);

	cr_assert_geq(perf_stall_overlap(c0, h.from, h.to), h.to - h.from - 300 * 1000,
		"%lu ns of the hog's %lu noted",
		(unsigned long)perf_stall_overlap(c0, h.from, h.to),
		(unsigned long)(h.to - h.from));
	cr_assert_geq(perf_stall_longest(c0, 0, UINT64_MAX), 7 * MS);
	cr_assert_geq(c0->span, h.to + 19 * MS);
	/* Every CPU's instants are within each CPU's; with another CPU, its
	 * watch ran while the hog spun (in one attempt of three at least). */
	cr_assert_leq(perf_stall_overlap(perf_watch_all(w), 0, c0->span),
		perf_stall_overlap(c0, 0, c0->span));
	if (perf_watch_cpus(w) > 1)
		cr_assert_lt(perf_stall_overlap(perf_watch_all(w), h.from, h.to),
			perf_stall_overlap(c0, h.from, h.to));
	perf_watch_free(w);
}

Test(watch, bad_period_is_refused)
{
	errno = 0;
	cr_assert_null(perf_watch_start(0, 1000));
	cr_assert_eq(errno, EINVAL);
	perf_watch_free(NULL);
}
