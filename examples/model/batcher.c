/* SPDX-License-Identifier: BSD-3-Clause */
/* The dynamic batcher (batcher.h: the policy and the ring's ordering). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "batcher.h"

#define MB_CACHE_LINE 64

/* A counter written by one thread, read by any (relaxed both ways: it
 * orders nothing). */
static void
mb_add(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(
		c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
}

#define MB_INC(c) mb_add(&(c), 1)

struct mb {
	struct mb_conf conf;
	struct mb_item *items; /* queue_max cells */
	/* Consumer's: the oldest waiting item.  Release store after items
	 * are copied out; paired with mb_submit()'s acquire load. */
	alignas(MB_CACHE_LINE) _Atomic uint64_t head;
	_Atomic uint64_t batches, computed, expired, cancelled, max_batch_seen;
	/* Producer's: one past the newest item.  Release store after the
	 * item is written; paired with mb_next()'s acquire load. */
	alignas(MB_CACHE_LINE) _Atomic uint64_t tail;
	_Atomic uint64_t admitted, refused_full, refused_expired, refused_cancelled;
};

struct mb *
mb_create(const struct mb_conf *conf)
{
	struct mb *b;

	if (conf == NULL || conf->max_batch == 0 || conf->queue_max == 0 || conf->now == NULL ||
		conf->skipped == NULL) {
		errno = EINVAL;
		return NULL;
	}
	b = aligned_alloc(
		MB_CACHE_LINE, (sizeof(*b) + MB_CACHE_LINE - 1) / MB_CACHE_LINE * MB_CACHE_LINE);
	if (b == NULL)
		return NULL;
	memset(b, 0, sizeof(*b));
	b->conf = *conf;
	b->items = calloc(conf->queue_max, sizeof(*b->items));
	if (b->items == NULL) {
		free(b);
		errno = ENOMEM;
		return NULL;
	}
	return b;
}

void
mb_free(struct mb *b)
{
	if (b == NULL)
		return;
	free(b->items);
	free(b);
}

static struct mb_item *
cell(struct mb *b, uint64_t i)
{
	return &b->items[i % b->conf.queue_max];
}

int
mb_submit(struct mb *b, void *ctx, uint64_t deadline)
{
	uint64_t t, h, now;
	struct mb_item *it;

	if (b == NULL)
		return -EINVAL;
	now = b->conf.now(b->conf.clock_arg);
	if (now >= deadline) {
		MB_INC(b->refused_expired);
		return -ETIMEDOUT;
	}
	if (b->conf.cancelled != NULL && b->conf.cancelled(b->conf.cancel_arg, ctx)) {
		MB_INC(b->refused_cancelled);
		return -ECANCELED;
	}
	t = atomic_load_explicit(&b->tail, memory_order_relaxed);
	h = atomic_load_explicit(&b->head, memory_order_acquire);
	if (t - h >= b->conf.queue_max) {
		MB_INC(b->refused_full);
		return -EBUSY;
	}
	it = cell(b, t);
	it->ctx = ctx;
	it->arrival = now;
	it->deadline = deadline;
	it->skip = false;
	atomic_store_explicit(&b->tail, t + 1, memory_order_release);
	MB_INC(b->admitted);
	return 0;
}

/* Take the expired and cancelled items out of [head, tail): report them
 * in queue order, then move the others towards tail, keeping their
 * order.  @param first_deadline receives the earliest deadline of the
 * items left (MB_NO_DEADLINE: none).  @return the new head. */
static uint64_t
take_out_skipped(struct mb *b, uint64_t h, uint64_t t, uint64_t now, uint64_t *first_deadline)
{
	uint64_t i, w;
	unsigned int n = 0;

	*first_deadline = MB_NO_DEADLINE;
	for (i = h; i < t; i++) {
		struct mb_item *it = cell(b, i);
		enum mb_skip_reason why;

		if (now >= it->deadline) {
			why = MB_EXPIRED;
		} else if (b->conf.cancelled != NULL &&
			   b->conf.cancelled(b->conf.cancel_arg, it->ctx)) {
			why = MB_CANCELLED;
		} else {
			if (it->deadline < *first_deadline)
				*first_deadline = it->deadline;
			continue;
		}
		it->skip = true;
		n++;
		mb_add(why == MB_EXPIRED ? &b->expired : &b->cancelled, 1);
		b->conf.skipped(b->conf.skipped_arg, it->ctx, why);
	}
	if (n == 0)
		return h;
	for (i = t, w = t; i-- > h;) {
		struct mb_item *it = cell(b, i);

		if (!it->skip)
			*cell(b, --w) = *it;
	}
	return w;
}

int
mb_next(struct mb *b, struct mb_item *batch, uint64_t *wake)
{
	uint64_t h, t, now, n, close_at, first_deadline, i;

	if (b == NULL || batch == NULL || wake == NULL)
		return -EINVAL;
	now = b->conf.now(b->conf.clock_arg);
	h = atomic_load_explicit(&b->head, memory_order_relaxed);
	t = atomic_load_explicit(&b->tail, memory_order_acquire);
	h = take_out_skipped(b, h, t, now, &first_deadline);
	n = t - h;
	*wake = MB_NO_DEADLINE;
	if (n == 0) {
		atomic_store_explicit(&b->head, h, memory_order_release);
		return 0;
	}
	close_at = cell(b, h)->arrival + b->conf.max_delay;
	if (n < b->conf.max_batch && now < close_at) {
		atomic_store_explicit(&b->head, h, memory_order_release);
		/* Or sooner, to answer an item at its deadline rather than
		 * hold it (and its queue cell) until the batch closes. */
		*wake = first_deadline < close_at ? first_deadline : close_at;
		return 0;
	}
	if (n > b->conf.max_batch)
		n = b->conf.max_batch;
	for (i = 0; i < n; i++)
		batch[i] = *cell(b, h + i);
	atomic_store_explicit(&b->head, h + n, memory_order_release);
	*wake = 0;
	MB_INC(b->batches);
	mb_add(&b->computed, n);
	if (n > atomic_load_explicit(&b->max_batch_seen, memory_order_relaxed))
		atomic_store_explicit(&b->max_batch_seen, n, memory_order_relaxed);
	return (int)n;
}

unsigned int
mb_drain(struct mb *b)
{
	uint64_t h, t, i, now;

	if (b == NULL)
		return 0;
	h = atomic_load_explicit(&b->head, memory_order_relaxed);
	t = atomic_load_explicit(&b->tail, memory_order_acquire);
	now = b->conf.now(b->conf.clock_arg);
	for (i = h; i < t; i++) {
		/* Past its deadline already: expired, whether or not the
		 * consumer woke at that deadline (a late wake-up must not
		 * change what the caller is told). */
		if (now >= cell(b, i)->deadline) {
			MB_INC(b->expired);
			b->conf.skipped(b->conf.skipped_arg, cell(b, i)->ctx, MB_EXPIRED);
			continue;
		}
		MB_INC(b->cancelled);
		b->conf.skipped(b->conf.skipped_arg, cell(b, i)->ctx, MB_CANCELLED);
	}
	atomic_store_explicit(&b->head, t, memory_order_release);
	return (unsigned int)(t - h);
}

unsigned int
mb_waiting(const struct mb *b)
{
	uint64_t h, t;

	if (b == NULL)
		return 0;
	/* tail first: head never passes the tail read before it. */
	t = atomic_load_explicit(&b->tail, memory_order_acquire);
	h = atomic_load_explicit(&b->head, memory_order_acquire);
	return t > h ? (unsigned int)(t - h) : 0;
}

void
mb_stats_get(const struct mb *b, struct mb_stats *s)
{
#define MB_RD(f) s->f = atomic_load_explicit(&b->f, memory_order_relaxed)
	MB_RD(admitted);
	MB_RD(refused_full);
	MB_RD(refused_expired);
	MB_RD(refused_cancelled);
	MB_RD(batches);
	MB_RD(computed);
	MB_RD(expired);
	MB_RD(cancelled);
	MB_RD(max_batch_seen);
#undef MB_RD
}
