/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A log-linear histogram of unsigned 64-bit values (nanoseconds in
 * dprpc-perf), after HdrHistogram's idea (written here, not copied):
 * values below 2^B are counted exactly; above, every power-of-two range
 * [2^k, 2^(k+1)) is cut into 2^(B-1) buckets of equal width 2^(k-B+1).
 * B is the smallest number of bits with 2^B >= 2 * 10^digits, so a
 * bucket [lo, lo + w) has w <= lo / 10^digits: every value is known to
 * @c digits significant decimal digits, at a cost of
 * 2^B + (log2(highest) - B + 1) * 2^(B-1) counters.
 *
 * Precision, exactly: a value v is counted in the bucket [lo, hi] with
 * lo <= v <= hi and hi - v < v / 10^digits (hi = v below 2^B).  A
 * percentile query answers hi of the bucket holding the value of rank
 * max(1, round(p / 100 * n)) (the n values sorted ascending), capped at
 * the exact maximum; p = 0 answers the exact minimum.  So it is never
 * below the true value of that rank and never more than 10^-digits of it
 * above.
 *
 * Values above @c highest are overflow: counted (in n, the minimum,
 * maximum, mean and stddev, which are exact over every value) but in no
 * bucket; a percentile whose rank falls among them answers the exact
 * maximum.  Not thread-safe: one writer; merge per-thread histograms.
 */
#ifndef DPRPC_PERF_HIST_H
#define DPRPC_PERF_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PERF_HIST_DIGITS_MAX 5

__extension__ typedef unsigned __int128 perf_hist_u128;

struct perf_hist {
	uint64_t highest;	   /* the largest value a bucket counts */
	unsigned int digits;	   /* significant decimal digits, 1..5 */
	unsigned int sub_bits;	   /* B above */
	uint64_t sub_count;	   /* 2^B */
	size_t nb_counts;	   /* buckets */
	uint64_t *counts;	   /* nb_counts of them */
	uint64_t total;		   /* values recorded, overflow included */
	uint64_t overflow;	   /* of which above highest */
	uint64_t min, max;	   /* exact (UINT64_MAX, 0 when empty) */
	perf_hist_u128 sum, sumsq; /* exact, for the mean and stddev */
};

/* @highest >= 2 * 10^digits, digits 1..PERF_HIST_DIGITS_MAX, highest <
 * 2^63.  0, or -EINVAL (out of range), -ENOMEM. */
int perf_hist_init(struct perf_hist *h, uint64_t highest, unsigned int digits);
void perf_hist_free(struct perf_hist *h);
/* Forget every value; the configuration stays. */
void perf_hist_reset(struct perf_hist *h);
/* Count @v @n times.  Returns true if it went into a bucket, false if it
 * overflowed (counted as overflow). */
bool perf_hist_record_n(struct perf_hist *h, uint64_t v, uint64_t n);
static inline bool
perf_hist_record(struct perf_hist *h, uint64_t v)
{
	return perf_hist_record_n(h, v, 1);
}
/* Add @src's values to @dst: 0, or -EINVAL when their highest or digits
 * differ (nothing added). */
int perf_hist_merge(struct perf_hist *dst, const struct perf_hist *src);
/* The bucket of @v (v <= highest): its lowest and highest value. */
uint64_t perf_hist_lowest_equiv(const struct perf_hist *h, uint64_t v);
uint64_t perf_hist_highest_equiv(const struct perf_hist *h, uint64_t v);
/* The value at percentile @p (0..100, clamped) as described above; 0
 * for an empty histogram. */
uint64_t perf_hist_percentile(const struct perf_hist *h, double p);
/* Values recorded at or below @v's bucket (overflow counts above every
 * bucket). */
uint64_t perf_hist_count_le(const struct perf_hist *h, uint64_t v);
/* Exact mean and population standard deviation (0 when empty). */
double perf_hist_mean(const struct perf_hist *h);
double perf_hist_stddev(const struct perf_hist *h);
/*
 * The percentile spectrum, HdrHistogram's "percentile distribution" shape:
 * percentiles 1 - 2^-L + s * 2^-(L+1) / ticks (L = 0, 1, ..., s = 0 ..
 * ticks - 1), i.e. @ticks lines per halving of the distance to 100%, until
 * the rank reaches n, then 100%.  Each line: the value divided by @scale,
 * the percentile as a fraction, the count at or below that value and
 * 1 / (1 - percentile).  @csv: comma-separated with a header line;
 * otherwise aligned columns and a summary footer.  Returns the lines of
 * values written.
 */
unsigned int perf_hist_spectrum(
	const struct perf_hist *h, FILE *f, unsigned int ticks, double scale, bool csv);

#endif /* DPRPC_PERF_HIST_H */
