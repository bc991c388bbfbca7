/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The log-linear histogram of hist.h: the bucket index of a value, its
 * bounds, recording, merging, percentile queries and the spectrum.  The
 * layout: indices 0 .. 2^B - 1 are the values themselves; after them,
 * for shift = 1, 2, ..., 2^(B-1) buckets of width 2^shift covering
 * [2^(B-1+shift), 2^(B+shift)).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"

static size_t
hist_index(const struct perf_hist *h, uint64_t v)
{
	unsigned int msb, shift;
	uint64_t half = h->sub_count / 2;

	if (v < h->sub_count)
		return (size_t)v;
	msb = 63u - (unsigned int)__builtin_clzll(v);
	shift = msb - (h->sub_bits - 1);
	return (size_t)(h->sub_count + (uint64_t)(shift - 1) * half + ((v >> shift) - half));
}

/* Bucket @i's lowest value and width. */
static void
hist_bounds(const struct perf_hist *h, size_t i, uint64_t *lo, uint64_t *w)
{
	uint64_t half = h->sub_count / 2, j, shift;

	if (i < h->sub_count) {
		*lo = i;
		*w = 1;
		return;
	}
	j = i - h->sub_count;
	shift = j / half + 1;
	*lo = (half + j % half) << shift;
	*w = (uint64_t)1 << shift;
}

int
perf_hist_init(struct perf_hist *h, uint64_t highest, unsigned int digits)
{
	uint64_t need = 2;
	unsigned int i, bits = 0;

	if (h == NULL || digits < 1 || digits > PERF_HIST_DIGITS_MAX)
		return -EINVAL;
	for (i = 0; i < digits; i++)
		need *= 10;
	while (((uint64_t)1 << bits) < need)
		bits++;
	if (highest < need || highest >= ((uint64_t)1 << 63))
		return -EINVAL;
	memset(h, 0, sizeof(*h));
	h->highest = highest;
	h->digits = digits;
	h->sub_bits = bits;
	h->sub_count = (uint64_t)1 << bits;
	h->nb_counts = hist_index(h, highest) + 1;
	h->counts = calloc(h->nb_counts, sizeof(*h->counts));
	if (h->counts == NULL)
		return -ENOMEM;
	h->min = UINT64_MAX;
	return 0;
}

void
perf_hist_free(struct perf_hist *h)
{
	free(h->counts);
	h->counts = NULL;
}

void
perf_hist_reset(struct perf_hist *h)
{
	memset(h->counts, 0, h->nb_counts * sizeof(*h->counts));
	h->total = h->overflow = h->max = 0;
	h->min = UINT64_MAX;
	h->sum = h->sumsq = 0;
}

bool
perf_hist_record_n(struct perf_hist *h, uint64_t v, uint64_t n)
{
	bool in = v <= h->highest;

	if (n == 0)
		return in;
	if (in)
		h->counts[hist_index(h, v)] += n;
	else
		h->overflow += n;
	h->total += n;
	h->min = v < h->min ? v : h->min;
	h->max = v > h->max ? v : h->max;
	h->sum += (perf_hist_u128)v * n;
	h->sumsq += (perf_hist_u128)v * v * n;
	return in;
}

int
perf_hist_merge(struct perf_hist *dst, const struct perf_hist *src)
{
	size_t i;

	if (dst->highest != src->highest || dst->digits != src->digits)
		return -EINVAL;
	for (i = 0; i < dst->nb_counts; i++)
		dst->counts[i] += src->counts[i];
	dst->total += src->total;
	dst->overflow += src->overflow;
	dst->min = src->min < dst->min ? src->min : dst->min;
	dst->max = src->max > dst->max ? src->max : dst->max;
	dst->sum += src->sum;
	dst->sumsq += src->sumsq;
	return 0;
}

uint64_t
perf_hist_lowest_equiv(const struct perf_hist *h, uint64_t v)
{
	uint64_t lo, w;

	hist_bounds(h, hist_index(h, v), &lo, &w);
	return lo;
}

uint64_t
perf_hist_highest_equiv(const struct perf_hist *h, uint64_t v)
{
	uint64_t lo, w;

	hist_bounds(h, hist_index(h, v), &lo, &w);
	return lo + w - 1;
}

/* The rank of percentile @p among @n values, 1..n. */
static uint64_t
hist_rank(double p, uint64_t n)
{
	double r;

	p = p < 0 ? 0 : p > 100 ? 100 : p;
	r = floor(p / 100.0 * (double)n + 0.5);
	if (r < 1)
		return 1;
	return r > (double)n ? n : (uint64_t)r;
}

/* The answer for rank @rank: hi of its bucket, capped at the maximum. */
static uint64_t
hist_value_at_rank(const struct perf_hist *h, uint64_t rank)
{
	uint64_t seen = 0, lo, w;
	size_t i;

	for (i = 0; i < h->nb_counts; i++) {
		seen += h->counts[i];
		if (seen >= rank) {
			hist_bounds(h, i, &lo, &w);
			return lo + w - 1 < h->max ? lo + w - 1 : h->max;
		}
	}
	return h->max; /* among the overflow */
}

uint64_t
perf_hist_percentile(const struct perf_hist *h, double p)
{
	if (h->total == 0)
		return 0;
	if (p <= 0)
		return h->min;
	return hist_value_at_rank(h, hist_rank(p, h->total));
}

uint64_t
perf_hist_count_le(const struct perf_hist *h, uint64_t v)
{
	uint64_t seen = 0;
	size_t i, last;

	if (v > h->highest)
		return h->total;
	last = hist_index(h, v);
	for (i = 0; i <= last; i++)
		seen += h->counts[i];
	return seen;
}

double
perf_hist_mean(const struct perf_hist *h)
{
	return h->total == 0 ? 0.0 : (double)((long double)h->sum / (long double)h->total);
}

double
perf_hist_stddev(const struct perf_hist *h)
{
	long double n = (long double)h->total, m, var;

	if (h->total == 0)
		return 0.0;
	m = (long double)h->sum / n;
	var = (long double)h->sumsq / n - m * m;
	return var <= 0 ? 0.0 : (double)sqrtl(var);
}

unsigned int
perf_hist_spectrum(const struct perf_hist *h, FILE *f, unsigned int ticks, double scale, bool csv)
{
	unsigned int lines = 0, level, s;
	uint64_t rank, v;
	double q, inv;

	if (ticks == 0)
		ticks = 1;
	if (csv)
		fprintf(f, "value,percentile,total_count,one_over_one_minus_percentile\n");
	else
		fprintf(f, "%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount",
			"1/(1-Percentile)");
	for (level = 0; h->total > 0 && level < 64; level++) {
		for (s = 0; s < ticks; s++) {
			q = 1.0 - ldexp(1.0, -(int)level) +
			    (double)s * ldexp(1.0, -(int)level - 1) / ticks;
			rank = hist_rank(q * 100.0, h->total);
			if (rank >= h->total)
				goto last;
			v = q <= 0 ? h->min : hist_value_at_rank(h, rank);
			inv = 1.0 / (1.0 - q);
			if (csv)
				fprintf(f, "%.3f,%.12f,%" PRIu64 ",%.2f\n", (double)v / scale, q,
					perf_hist_count_le(h, v), inv);
			else
				fprintf(f, "%12.3f %14.12f %10" PRIu64 " %14.2f\n",
					(double)v / scale, q, perf_hist_count_le(h, v), inv);
			lines++;
		}
	}
last:
	if (h->total > 0) {
		if (csv)
			fprintf(f, "%.3f,%.12f,%" PRIu64 ",inf\n", (double)h->max / scale, 1.0,
				h->total);
		else
			fprintf(f, "%12.3f %14.12f %10" PRIu64 " %14s\n", (double)h->max / scale,
				1.0, h->total, "inf");
		lines++;
	}
	if (!csv)
		fprintf(f,
			"#[Mean    = %12.3f, StdDeviation   = %12.3f]\n"
			"#[Max     = %12.3f, Total count    = %12" PRIu64 "]\n"
			"#[Buckets = %12zu, SubBuckets     = %12" PRIu64 "]\n"
			"#[Overflow= %12" PRIu64 ", Digits         = %12u]\n",
			perf_hist_mean(h) / scale, perf_hist_stddev(h) / scale,
			(double)h->max / scale, h->total, h->nb_counts, h->sub_count, h->overflow,
			h->digits);
	return lines;
}
