/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dprpc-hiccup's stall traces (perf/stall.c): the share of time lost, the
 * residual stall's quantiles and the ideal RPC, on made-up traces whose
 * answers are worked out by hand in each test.
 */
#include <stdint.h>

#include <criterion/criterion.h>

#include "../perf/stall.h"

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
