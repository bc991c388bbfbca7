/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stall traces and what they cost (stall.h).  Queries of one trace at
 * times that never decrease walk it once, through a cursor.
 */
#include <errno.h>
#include <stdlib.h>

#include "stall.h"

int
perf_stall_add(struct perf_stall_trace *t, uint64_t at, uint64_t len)
{
	if (t->n == t->cap) {
		size_t cap = t->cap == 0 ? 4096 : t->cap * 2;
		struct perf_stall *s = realloc(t->s, cap * sizeof(*s));

		if (s == NULL)
			return -ENOMEM;
		t->s = s;
		t->cap = cap;
	}
	t->s[t->n++] = (struct perf_stall){at, len};
	return 0;
}

void
perf_stall_free(struct perf_stall_trace *t)
{
	free(t->s);
	*t = (struct perf_stall_trace){0};
}

static uint64_t
stall_end(const struct perf_stall *s)
{
	return s->at + s->len;
}

int
perf_stall_intersect(const struct perf_stall_trace *a, const struct perf_stall_trace *b,
	struct perf_stall_trace *out)
{
	size_t i = 0, j = 0;

	out->span = a->span < b->span ? a->span : b->span;
	/* Both in time order and disjoint: a merge.  The one of the two
	 * current stalls that ends first can meet nothing later. */
	while (i < a->n && j < b->n) {
		uint64_t from = a->s[i].at > b->s[j].at ? a->s[i].at : b->s[j].at;
		uint64_t ea = stall_end(&a->s[i]), eb = stall_end(&b->s[j]);
		uint64_t to = ea < eb ? ea : eb;

		if (from < to && perf_stall_add(out, from, to - from) != 0)
			return -ENOMEM;
		if (ea < eb)
			i++;
		else
			j++;
	}
	return 0;
}

uint64_t
perf_stall_overlap(const struct perf_stall_trace *t, uint64_t from, uint64_t to)
{
	size_t lo = 0, hi = t->n, mid;
	uint64_t sum = 0;

	if (to <= from)
		return 0;
	/* The first stall that ends after @from. */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (stall_end(&t->s[mid]) <= from)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < t->n && t->s[lo].at < to; lo++) {
		uint64_t a = t->s[lo].at > from ? t->s[lo].at : from;
		uint64_t e = stall_end(&t->s[lo]) < to ? stall_end(&t->s[lo]) : to;

		sum += e - a;
	}
	return sum;
}

uint64_t
perf_stall_longest(const struct perf_stall_trace *t, uint64_t from, uint64_t to)
{
	uint64_t max = 0, a, e;
	size_t i;

	for (i = 0; i < t->n; i++) {
		a = t->s[i].at > from ? t->s[i].at : from;
		e = stall_end(&t->s[i]) < to ? stall_end(&t->s[i]) : to;
		if (e > a && e - a > max)
			max = e - a;
	}
	return max;
}

double
perf_stall_lost(const struct perf_stall_trace *t, uint64_t min_ns)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->s[i].len > min_ns)
			sum += t->s[i].len;
	return t->span == 0 ? 0 : (double)sum / (double)t->span;
}

/* P(residual > x) times the span. */
static uint64_t
stall_excess(const struct perf_stall_trace *t, uint64_t x)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->s[i].len > x)
			sum += t->s[i].len - x;
	return sum;
}

uint64_t
perf_stall_residual_quantile(const struct perf_stall_trace *t, double q)
{
	uint64_t lo = 0, hi = perf_stall_longest(t, 0, UINT64_MAX), mid;
	double bound = q * (double)t->span;

	/* The excess falls as x grows, and is 0 at the longest stall. */
	if ((double)stall_excess(t, 0) <= bound)
		return 0;
	while (hi - lo > 1) { /* excess(lo) > bound >= excess(hi) */
		mid = lo + (hi - lo) / 2;
		if ((double)stall_excess(t, mid) <= bound)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

/* A walk along a trace at times that never decrease. */
struct stall_cursor {
	const struct perf_stall_trace *t;
	size_t i; /* the first stall that does not end before the last query */
};

/* The first instant at or after @at at which the CPU runs the thread. */
static uint64_t
stall_run_at(struct stall_cursor *c, uint64_t at)
{
	const struct perf_stall_trace *t = c->t;

	while (c->i < t->n && t->s[c->i].at + t->s[c->i].len <= at)
		c->i++;
	if (c->i < t->n && t->s[c->i].at <= at)
		return t->s[c->i].at + t->s[c->i].len;
	return at;
}

/* When @work ns of CPU started at @at are done, stalls suspending it. */
static uint64_t
stall_work_done(struct stall_cursor *c, uint64_t at, uint64_t work)
{
	const struct perf_stall_trace *t = c->t;
	uint64_t now = stall_run_at(c, at);

	while (c->i < t->n && t->s[c->i].at + t->s[c->i].len <= now)
		c->i++;
	/* c->i is now the first stall starting at or after now (or none). */
	while (c->i < t->n && t->s[c->i].at < now + work) {
		work -= t->s[c->i].at - now;
		now = t->s[c->i].at + t->s[c->i].len;
		c->i++;
	}
	return now + work;
}

/* The ideal RPC's calls end this long before the traces do. */
#define STALL_TAIL_NS (10ull * 1000 * 1000)

static uint64_t
stall_max(uint64_t x, uint64_t y)
{
	return x > y ? x : y;
}

uint64_t
perf_stall_ideal_rpc(const struct perf_stall_trace *client, const struct perf_stall_trace *server,
	double gap_ns, uint64_t service_ns, uint64_t wire_ns, struct perf_hist *lat)
{
	struct stall_cursor send = {client, 0}, recv = {client, 0}, srv = {server, 0};
	uint64_t span = client->span < server->span ? client->span : server->span;
	uint64_t k, intended, sent = 0, free_at = 0, done = 0, end;

	if (span <= STALL_TAIL_NS || gap_ns <= 0)
		return 0;
	end = span - STALL_TAIL_NS;
	for (k = 0;; k++) {
		intended = (uint64_t)((double)k * gap_ns);
		if (intended >= end)
			break;
		/* The client sends in order, when it runs. */
		sent = stall_run_at(&send, stall_max(intended, sent));
		/* The server takes calls in order, when it is free. */
		free_at = stall_work_done(&srv, stall_max(sent + wire_ns / 2, free_at), service_ns);
		/* The client reads answers in order, when it runs. */
		done = stall_run_at(&recv, stall_max(free_at + (wire_ns - wire_ns / 2), done));
		perf_hist_record(lat, done - intended);
	}
	return k;
}
