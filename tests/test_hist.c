/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dprpc-perf's log-linear histogram (perf/hist.c): bucket bounds,
 * percentiles, mean and stddev, merge, overflow and the spectrum, on
 * known inputs with exact expected answers (hist.h states the precision
 * they follow from).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../perf/hist.h"

Test(hist, layout)
{
	struct perf_hist h;

	/* 3 digits: 2^11 = 2048 >= 2000 exact values, then 1024 buckets per
	 * power of two; 2^20 - 1 lies in the 9th such range (shift 9). */
	cr_assert_eq(perf_hist_init(&h, (1u << 20) - 1, 3), 0);
	cr_assert_eq(h.sub_count, 2048);
	cr_assert_eq(h.nb_counts, 2048 + 9 * 1024);
	perf_hist_free(&h);
	cr_assert_eq(perf_hist_init(&h, 200, 2), 0);
	cr_assert_eq(h.sub_count, 256);
	cr_assert_eq(h.nb_counts, 201);
	perf_hist_free(&h);
	cr_assert_eq(perf_hist_init(&h, 20, 1), 0);
	cr_assert_eq(h.sub_count, 32);
	perf_hist_free(&h);
	cr_assert_eq(perf_hist_init(&h, 1000000, 5), 0);
	cr_assert_eq(h.sub_count, 262144);
	perf_hist_free(&h);
}

Test(hist, init_rejects)
{
	struct perf_hist h;

	cr_assert_eq(perf_hist_init(&h, 1000000, 0), -EINVAL);
	cr_assert_eq(perf_hist_init(&h, 1000000, 6), -EINVAL);
	cr_assert_eq(perf_hist_init(&h, 1999, 3), -EINVAL);
	cr_assert_eq(perf_hist_init(&h, (uint64_t)1 << 63, 3), -EINVAL);
	cr_assert_eq(perf_hist_init(NULL, 1000000, 3), -EINVAL);
	cr_assert_eq(perf_hist_init(&h, ((uint64_t)1 << 63) - 1, 3), 0);
	cr_assert_eq(perf_hist_highest_equiv(&h, ((uint64_t)1 << 63) - 1), ((uint64_t)1 << 63) - 1);
	perf_hist_free(&h);
}

Test(hist, bucket_bounds)
{
	struct perf_hist h;
	uint64_t x = 88172645463325252ull, v, lo, hi;
	int i;

	cr_assert_eq(perf_hist_init(&h, 3600ull * 1000 * 1000 * 1000, 3), 0);
	/* Loops assert only on a failure: --full-stats records every
	 * assertion made. */
	for (v = 0; v < 2048; v++)
		if (perf_hist_lowest_equiv(&h, v) != v || perf_hist_highest_equiv(&h, v) != v)
			cr_assert_fail("v %lu not exact", v);
	cr_assert_eq(perf_hist_lowest_equiv(&h, 2049), 2048);
	cr_assert_eq(perf_hist_highest_equiv(&h, 2048), 2049);
	cr_assert_eq(perf_hist_lowest_equiv(&h, 4095), 4094);
	cr_assert_eq(perf_hist_highest_equiv(&h, 4096), 4099);
	cr_assert_eq(perf_hist_lowest_equiv(&h, 1000000), 999936);
	cr_assert_eq(perf_hist_highest_equiv(&h, 1000000), 1000447);
	/* lo <= v <= hi and hi - v < v / 10^3, over the whole range. */
	for (i = 0; i < 200000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		v = (x >> (x & 31)) % (h.highest + 1);
		lo = perf_hist_lowest_equiv(&h, v);
		hi = perf_hist_highest_equiv(&h, v);
		if (!(lo <= v && v <= hi) || !((hi - v) * 1000 < v || hi == v))
			cr_assert_fail("v %lu in [%lu, %lu]", v, lo, hi);
	}
	perf_hist_free(&h);
}

Test(hist, percentiles_of_1_to_10000)
{
	struct perf_hist h;
	uint64_t v;

	cr_assert_eq(perf_hist_init(&h, 1000000, 3), 0);
	for (v = 1; v <= 10000; v++)
		if (!perf_hist_record(&h, v))
			cr_assert_fail("%lu overflowed", v);
	cr_assert_eq(h.total, 10000);
	cr_assert_eq(perf_hist_percentile(&h, 0), 1);
	/* Rank 5000 lies in [5000, 5003] (width 4 above 4096). */
	cr_assert_eq(perf_hist_percentile(&h, 50), 5003);
	cr_assert_eq(perf_hist_percentile(&h, 90), 9007);
	cr_assert_eq(perf_hist_percentile(&h, 99), 9903);
	cr_assert_eq(perf_hist_percentile(&h, 99.9), 9991);
	cr_assert_eq(perf_hist_percentile(&h, 99.99), 9999);
	/* [10000, 10007] capped at the exact maximum. */
	cr_assert_eq(perf_hist_percentile(&h, 100), 10000);
	cr_assert_eq(perf_hist_percentile(&h, 150), 10000);
	cr_assert_eq(h.min, 1);
	cr_assert_eq(h.max, 10000);
	cr_assert_float_eq(perf_hist_mean(&h), 5000.5, 1e-9);
	cr_assert_float_eq(perf_hist_stddev(&h), sqrt((1e8 - 1) / 12), 1e-6);
	cr_assert_eq(perf_hist_count_le(&h, 5000), 5003);
	cr_assert_eq(perf_hist_count_le(&h, 2047), 2047);
	perf_hist_free(&h);
}

Test(hist, small_exact)
{
	struct perf_hist h;

	cr_assert_eq(perf_hist_init(&h, 1000, 2), 0);
	cr_assert_eq(perf_hist_percentile(&h, 50), 0);
	cr_assert_float_eq(perf_hist_mean(&h), 0.0, 1e-12);
	perf_hist_record(&h, 1);
	perf_hist_record(&h, 2);
	perf_hist_record_n(&h, 3, 1);
	perf_hist_record_n(&h, 4, 1);
	perf_hist_record_n(&h, 900, 0); /* nothing */
	cr_assert_eq(h.total, 4);
	cr_assert_eq(perf_hist_percentile(&h, 50), 2);
	cr_assert_eq(perf_hist_percentile(&h, 62.5), 3); /* rank round(2.5) = 3 */
	cr_assert_eq(perf_hist_percentile(&h, 75), 3);
	cr_assert_eq(perf_hist_percentile(&h, 99), 4);
	cr_assert_float_eq(perf_hist_mean(&h), 2.5, 1e-12);
	cr_assert_float_eq(perf_hist_stddev(&h), sqrt(1.25), 1e-12);
	perf_hist_reset(&h);
	cr_assert_eq(h.total, 0);
	cr_assert_eq(perf_hist_count_le(&h, 1000), 0);
	perf_hist_free(&h);
}

Test(hist, merge)
{
	struct perf_hist a, b, all, other;
	uint64_t v;

	cr_assert_eq(perf_hist_init(&a, 1u << 30, 3), 0);
	cr_assert_eq(perf_hist_init(&b, 1u << 30, 3), 0);
	cr_assert_eq(perf_hist_init(&all, 1u << 30, 3), 0);
	for (v = 1; v < 3000000; v = v * 3 / 2 + 1) {
		perf_hist_record(v & 1 ? &a : &b, v);
		perf_hist_record(&all, v);
	}
	perf_hist_record(&b, 5ull << 30); /* overflow merges too */
	perf_hist_record(&all, 5ull << 30);
	cr_assert_eq(perf_hist_merge(&a, &b), 0);
	cr_assert_eq(a.total, all.total);
	cr_assert_eq(a.overflow, 1);
	cr_assert_eq(a.min, all.min);
	cr_assert_eq(a.max, 5ull << 30);
	cr_assert(a.sum == all.sum && a.sumsq == all.sumsq);
	cr_assert_eq(memcmp(a.counts, all.counts, a.nb_counts * sizeof(*a.counts)), 0);
	cr_assert_eq(perf_hist_percentile(&a, 99), perf_hist_percentile(&all, 99));
	/* A different configuration: refused, nothing added. */
	cr_assert_eq(perf_hist_init(&other, 1u << 30, 2), 0);
	perf_hist_record(&other, 7);
	cr_assert_eq(perf_hist_merge(&a, &other), -EINVAL);
	cr_assert_eq(a.total, all.total);
	perf_hist_free(&other);
	cr_assert_eq(perf_hist_init(&other, 1u << 29, 3), 0);
	cr_assert_eq(perf_hist_merge(&a, &other), -EINVAL);
	perf_hist_free(&other);
	perf_hist_free(&a);
	perf_hist_free(&b);
	perf_hist_free(&all);
}

Test(hist, overflow)
{
	struct perf_hist h;
	int i;

	cr_assert_eq(perf_hist_init(&h, 1000000, 3), 0);
	for (i = 0; i < 5; i++)
		cr_assert(perf_hist_record(&h, 10));
	cr_assert_not(perf_hist_record(&h, 5000000));
	cr_assert(perf_hist_record(&h, 1000000)); /* highest itself is in */
	cr_assert_eq(h.total, 7);
	cr_assert_eq(h.overflow, 1);
	cr_assert_eq(h.max, 5000000);
	cr_assert_eq(perf_hist_percentile(&h, 50), 10);
	/* Rank round(6.93) = 7: the overflowed value, answered exactly. */
	cr_assert_eq(perf_hist_percentile(&h, 99), 5000000);
	/* Rank 6: highest's bucket [999936, 1000447] capped at nothing (the
	 * maximum is above it). */
	cr_assert_eq(perf_hist_percentile(&h, 80), 1000447);
	cr_assert_eq(perf_hist_count_le(&h, 10), 5);
	cr_assert_eq(perf_hist_count_le(&h, 1000000), 6);
	cr_assert_eq(perf_hist_count_le(&h, 1000001), 7);
	cr_assert_float_eq(perf_hist_mean(&h), (50.0 + 5e6 + 1e6) / 7, 1e-6);
	perf_hist_free(&h);
}

Test(hist, spectrum_csv)
{
	static const char want[] = "value,percentile,total_count,one_over_one_minus_percentile\n"
				   "1.000,0.000000000000,1,1.00\n"
				   "50.000,0.500000000000,50,2.00\n"
				   "75.000,0.750000000000,75,4.00\n"
				   "88.000,0.875000000000,88,8.00\n"
				   "94.000,0.937500000000,94,16.00\n"
				   "97.000,0.968750000000,97,32.00\n"
				   "98.000,0.984375000000,98,64.00\n"
				   "99.000,0.992187500000,99,128.00\n"
				   "100.000,1.000000000000,100,inf\n";
	struct perf_hist h;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	uint64_t v;

	cr_assert_not_null(f);
	cr_assert_eq(perf_hist_init(&h, 100000, 2), 0);
	for (v = 1; v <= 100; v++)
		perf_hist_record(&h, v);
	cr_assert_eq(perf_hist_spectrum(&h, f, 1, 1.0, true), 9);
	fclose(f);
	cr_assert_str_eq(buf, want);
	free(buf);
	/* Two ticks per half: 0, 0.25, 0.5, 0.625, ... */
	f = open_memstream(&buf, &len);
	cr_assert_eq(perf_hist_spectrum(&h, f, 2, 1.0, true), 17);
	fclose(f);
	cr_assert_not_null(strstr(buf, "\n25.000,0.250000000000,25,1.33\n"));
	cr_assert_not_null(strstr(buf, "\n63.000,0.625000000000,63,2.67\n"));
	free(buf);
	perf_hist_free(&h);
}
