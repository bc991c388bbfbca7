/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The dynamic batcher (batcher.c) on a clock moved by hand: which items
 * each batch holds, when it closes (idle, full, max_delay), what is
 * skipped and why, and what admission refuses; counters exact.  One test
 * runs a real producer and consumer thread and checks that every item is
 * batched exactly once, in order.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "batcher.h"

#define NCTX 64

static uint64_t clk;
static bool cancel_flag[NCTX];
static struct {
	uintptr_t ctx;
	enum mb_skip_reason why;
} skips[NCTX];
static unsigned int nskips;
static struct mb_item batch[NCTX];
static struct mb *b;

static uint64_t
fake_now(void *arg)
{
	return *(uint64_t *)arg;
}

static bool
is_cancelled(void *arg, void *ctx)
{
	return (uintptr_t)ctx < NCTX && cancel_flag[(uintptr_t)ctx];
}

static void
on_skip(void *arg, void *ctx, enum mb_skip_reason why)
{
	cr_assert_lt(nskips, NCTX);
	skips[nskips].ctx = (uintptr_t)ctx;
	skips[nskips].why = why;
	nskips++;
}

static void
make(unsigned int max_batch, unsigned int queue_max, uint64_t max_delay)
{
	struct mb_conf c = {
		.max_batch = max_batch,
		.queue_max = queue_max,
		.max_delay = max_delay,
		.now = fake_now,
		.clock_arg = &clk,
		.cancelled = is_cancelled,
		.skipped = on_skip,
	};

	clk = 1000;
	nskips = 0;
	memset(cancel_flag, 0, sizeof(cancel_flag));
	b = mb_create(&c);
	cr_assert_not_null(b);
}

static void
fini(void)
{
	mb_free(b);
	b = NULL;
}

TestSuite(model_batcher, .fini = fini);

static void
submit(uintptr_t ctx, uint64_t deadline)
{
	cr_assert_eq(mb_submit(b, (void *)ctx, deadline), 0, "ctx %zu", (size_t)ctx);
}

/* mb_next() must close a batch of exactly these ctx values, in order. */
static void
expect_batch(unsigned int n, const uintptr_t *ctx)
{
	uint64_t wake = 1;
	int got = mb_next(b, batch, &wake);

	cr_assert_eq(got, (int)n, "batch of %d, expected %u", got, n);
	cr_assert_eq(wake, 0);
	for (unsigned int i = 0; i < n; i++)
		cr_assert_eq((uintptr_t)batch[i].ctx, ctx[i], "item %u is %zu, expected %zu", i,
			(size_t)(uintptr_t)batch[i].ctx, (size_t)ctx[i]);
}

static void
expect_none(uint64_t wake_expected)
{
	uint64_t wake = 1;

	cr_assert_eq(mb_next(b, batch, &wake), 0);
	cr_assert_eq(wake, wake_expected, "wake %lu, expected %lu", (unsigned long)wake,
		(unsigned long)wake_expected);
}

#define BATCH(...)                                                           \
	expect_batch(sizeof((uintptr_t[]){__VA_ARGS__}) / sizeof(uintptr_t), \
		(const uintptr_t[]){__VA_ARGS__})

/* max_delay 0: whatever waits when the consumer asks is the batch, at
 * once, with no time passing. */
Test(model_batcher, flush_on_idle_without_delay)
{
	make(8, 64, 0);
	expect_none(MB_NO_DEADLINE);
	submit(1, MB_NO_DEADLINE);
	BATCH(1);
	expect_none(MB_NO_DEADLINE);
	submit(2, MB_NO_DEADLINE);
	submit(3, MB_NO_DEADLINE);
	submit(4, MB_NO_DEADLINE);
	BATCH(2, 3, 4);
	expect_none(MB_NO_DEADLINE);
}

/* The backlog comes out in batches of max_batch, the rest after. */
Test(model_batcher, batch_sizes_follow_the_backlog)
{
	struct mb_stats s;

	make(8, 64, 0);
	for (uintptr_t i = 1; i <= 20; i++)
		submit(i, MB_NO_DEADLINE);
	BATCH(1, 2, 3, 4, 5, 6, 7, 8);
	BATCH(9, 10, 11, 12, 13, 14, 15, 16);
	submit(21, MB_NO_DEADLINE);
	BATCH(17, 18, 19, 20, 21);
	expect_none(MB_NO_DEADLINE);
	mb_stats_get(b, &s);
	cr_assert_eq(s.admitted, 21);
	cr_assert_eq(s.batches, 3);
	cr_assert_eq(s.computed, 21);
	cr_assert_eq(s.max_batch_seen, 8);
	cr_assert_eq(s.refused_full + s.refused_expired + s.refused_cancelled, 0);
	cr_assert_eq(s.expired + s.cancelled, 0);
}

/* With a max_delay, a batch short of full waits until its oldest item has
 * waited max_delay, and mb_next() says when that is. */
Test(model_batcher, max_delay_flush)
{
	make(8, 64, 100);
	submit(1, MB_NO_DEADLINE); /* t = 1000 */
	expect_none(1100);
	clk = 1050;
	submit(2, MB_NO_DEADLINE);
	expect_none(1100);
	clk = 1099;
	expect_none(1100);
	clk = 1100;
	BATCH(1, 2);
	expect_none(MB_NO_DEADLINE);
	clk = 1150;
	submit(3, MB_NO_DEADLINE);
	clk = 1160;
	expect_none(1250);
	clk = 5000; /* a late consumer closes at once */
	BATCH(3);
}

/* A full batch closes at once whatever max_delay says; the remainder
 * waits for its own max_delay. */
Test(model_batcher, full_batch_closes_before_max_delay)
{
	make(4, 64, 1000000);
	for (uintptr_t i = 1; i <= 10; i++)
		submit(i, MB_NO_DEADLINE);
	BATCH(1, 2, 3, 4);
	BATCH(5, 6, 7, 8);
	expect_none(1000 + 1000000);
	submit(11, MB_NO_DEADLINE);
	submit(12, MB_NO_DEADLINE);
	BATCH(9, 10, 11, 12);
	expect_none(MB_NO_DEADLINE);
}

/* Items whose deadline passed while they waited are skipped, reported in
 * queue order as expired, never batched; the others keep their order, and
 * an expired oldest item does not hold the max_delay of the next. */
Test(model_batcher, expired_items_are_skipped)
{
	struct mb_stats s;

	make(8, 64, 100);
	submit(1, 1010);
	submit(2, MB_NO_DEADLINE);
	submit(3, 1005);
	submit(4, 2000);
	clk = 1005;
	/* 3 expires now (now >= deadline), 1 not yet: ask again at 1's */
	expect_none(1010);
	cr_assert_eq(nskips, 1);
	cr_assert_eq(skips[0].ctx, 3);
	cr_assert_eq(skips[0].why, MB_EXPIRED);
	clk = 1010;
	expect_none(1100);
	cr_assert_eq(nskips, 2);
	cr_assert_eq(skips[1].ctx, 1);
	clk = 1100;
	BATCH(2, 4);
	/* the oldest expires: the next batch's delay counts from 6 */
	submit(5, 1150); /* t = 1100 */
	clk = 1120;
	submit(6, MB_NO_DEADLINE);
	clk = 1150;
	expect_none(1220);
	cr_assert_eq(nskips, 3);
	cr_assert_eq(skips[2].ctx, 5);
	clk = 1220;
	BATCH(6);
	mb_stats_get(b, &s);
	cr_assert_eq(s.admitted, 6);
	cr_assert_eq(s.expired, 3);
	cr_assert_eq(s.computed, 3);
	cr_assert_eq(s.batches, 2);
}

/* With a max_delay, mb_next() asks to be called again at the earliest
 * deadline of a waiting item when that comes before the batch closes, so
 * that the item is answered at its deadline, not held until the close; a
 * later deadline, or one of an item taken out, does not move the wake. */
Test(model_batcher, wake_at_the_earliest_deadline)
{
	make(8, 64, 1000);
	submit(1, MB_NO_DEADLINE); /* t = 1000: closes at 2000 */
	expect_none(2000);
	clk = 1010;
	submit(2, 1500);
	expect_none(1500);
	submit(3, 1200);
	expect_none(1200);
	clk = 1200;
	expect_none(1500);
	cr_assert_eq(nskips, 1);
	cr_assert_eq(skips[0].ctx, 3);
	cr_assert_eq(skips[0].why, MB_EXPIRED);
	clk = 1500;
	expect_none(2000);
	cr_assert_eq(nskips, 2);
	cr_assert_eq(skips[1].ctx, 2);
	clk = 2000;
	BATCH(1);
	submit(4, 5000); /* t = 2000: closes at 3000, before its deadline */
	expect_none(3000);
	submit(5, 2500);
	cancel_flag[5] = true;
	expect_none(3000);
	cr_assert_eq(nskips, 3);
	cr_assert_eq(skips[2].ctx, 5);
	cr_assert_eq(skips[2].why, MB_CANCELLED);
	clk = 3000;
	BATCH(4);
}

/* Admission refuses an item already past its deadline. */
Test(model_batcher, admission_refuses_expired)
{
	struct mb_stats s;

	make(8, 64, 0);
	cr_assert_eq(mb_submit(b, (void *)1, 1000), -ETIMEDOUT);
	cr_assert_eq(mb_submit(b, (void *)2, 999), -ETIMEDOUT);
	cr_assert_eq(mb_submit(b, (void *)3, 1001), 0);
	BATCH(3);
	mb_stats_get(b, &s);
	cr_assert_eq(s.refused_expired, 2);
	cr_assert_eq(s.admitted, 1);
}

/* An item cancelled while it waits is skipped as cancelled; one cancelled
 * before admission is refused. */
Test(model_batcher, cancelled_items_are_skipped)
{
	struct mb_stats s;

	make(8, 64, 0);
	submit(1, MB_NO_DEADLINE);
	submit(2, MB_NO_DEADLINE);
	submit(3, MB_NO_DEADLINE);
	cancel_flag[2] = true;
	BATCH(1, 3);
	cr_assert_eq(nskips, 1);
	cr_assert_eq(skips[0].ctx, 2);
	cr_assert_eq(skips[0].why, MB_CANCELLED);
	cr_assert_eq(mb_submit(b, (void *)2, MB_NO_DEADLINE), -ECANCELED);
	/* everything waiting cancelled: no batch at all */
	submit(4, MB_NO_DEADLINE);
	submit(5, MB_NO_DEADLINE);
	cancel_flag[4] = cancel_flag[5] = true;
	expect_none(MB_NO_DEADLINE);
	cr_assert_eq(nskips, 3);
	cr_assert_eq(skips[1].ctx, 4);
	cr_assert_eq(skips[2].ctx, 5);
	mb_stats_get(b, &s);
	cr_assert_eq(s.admitted, 5);
	cr_assert_eq(s.cancelled, 3);
	cr_assert_eq(s.refused_cancelled, 1);
	cr_assert_eq(s.computed, 2);
	cr_assert_eq(s.batches, 1);
}

/* A full queue refuses at admission (-EBUSY) and admits again once the
 * consumer took a batch; the ring wraps many times without losing or
 * reordering an item. */
Test(model_batcher, admission_overload_refused)
{
	struct mb_stats s;

	make(2, 3, 0);
	submit(1, MB_NO_DEADLINE);
	submit(2, MB_NO_DEADLINE);
	submit(3, MB_NO_DEADLINE);
	cr_assert_eq(mb_submit(b, (void *)4, MB_NO_DEADLINE), -EBUSY);
	cr_assert_eq(mb_waiting(b), 3);
	BATCH(1, 2);
	submit(4, MB_NO_DEADLINE);
	submit(5, MB_NO_DEADLINE);
	cr_assert_eq(mb_submit(b, (void *)6, MB_NO_DEADLINE), -EBUSY);
	BATCH(3, 4);
	BATCH(5);
	for (uintptr_t r = 0; r < 100; r++) {
		submit(10 + r, MB_NO_DEADLINE);
		submit(20 + r, MB_NO_DEADLINE);
		submit(30 + r, MB_NO_DEADLINE);
		cr_assert_eq(mb_submit(b, (void *)1, MB_NO_DEADLINE), -EBUSY);
		BATCH(10 + r, 20 + r);
		BATCH(30 + r);
	}
	mb_stats_get(b, &s);
	cr_assert_eq(s.refused_full, 102);
	cr_assert_eq(s.admitted, 305);
	cr_assert_eq(s.computed, 305);
	cr_assert_eq(mb_waiting(b), 0);
}

/* Skipping compacts the ring in place: skipped items in the middle of a
 * wrapped queue leave the others in order. */
Test(model_batcher, skips_across_the_wrap)
{
	make(8, 5, 0);
	for (uintptr_t i = 1; i <= 3; i++)
		submit(i, MB_NO_DEADLINE);
	BATCH(1, 2, 3);
	for (uintptr_t i = 4; i <= 8; i++) /* cells 3, 4, 0, 1, 2 */
		submit(i, MB_NO_DEADLINE);
	cancel_flag[5] = cancel_flag[7] = true;
	BATCH(4, 6, 8);
	cr_assert_eq(nskips, 2);
	cr_assert_eq(skips[0].ctx, 5);
	cr_assert_eq(skips[1].ctx, 7);
	for (uintptr_t i = 9; i <= 13; i++)
		submit(i, MB_NO_DEADLINE);
	cr_assert_eq(mb_submit(b, (void *)14, MB_NO_DEADLINE), -EBUSY);
	BATCH(9, 10, 11, 12, 13);
}

Test(model_batcher, drain_reports_every_waiting_item)
{
	make(8, 16, 100);
	submit(1, MB_NO_DEADLINE);
	submit(2, MB_NO_DEADLINE);
	cr_assert_eq(mb_drain(b), 2);
	cr_assert_eq(nskips, 2);
	cr_assert_eq(skips[0].ctx, 1);
	cr_assert_eq(skips[1].ctx, 2);
	cr_assert_eq(skips[1].why, MB_CANCELLED);
	expect_none(MB_NO_DEADLINE);
	cr_assert_eq(mb_drain(b), 0);
}

/* At shutdown, an item whose deadline passed while nobody looked is
 * reported expired, not cancelled (the server's counts must not depend on
 * when the consumer last woke). */
Test(model_batcher, drain_reports_expired_items_as_expired)
{
	make(8, 16, 100);
	submit(1, 1050);
	submit(2, MB_NO_DEADLINE);
	clk = 1060;
	cr_assert_eq(mb_drain(b), 2);
	cr_assert_eq(nskips, 2);
	cr_assert_eq(skips[0].ctx, 1);
	cr_assert_eq(skips[0].why, MB_EXPIRED);
	cr_assert_eq(skips[1].ctx, 2);
	cr_assert_eq(skips[1].why, MB_CANCELLED);
}

Test(model_batcher, bad_arguments)
{
	struct mb_conf c = {.max_batch = 1, .queue_max = 1, .now = fake_now, .skipped = on_skip};
	uint64_t w;

	c.max_batch = 0;
	cr_assert_null(mb_create(&c));
	cr_assert_eq(errno, EINVAL);
	c.max_batch = 1;
	c.queue_max = 0;
	cr_assert_null(mb_create(&c));
	c.queue_max = 1;
	c.now = NULL;
	cr_assert_null(mb_create(&c));
	c.now = fake_now;
	c.skipped = NULL;
	cr_assert_null(mb_create(&c));
	cr_assert_null(mb_create(NULL));
	cr_assert_eq(mb_submit(NULL, NULL, 0), -EINVAL);
	cr_assert_eq(mb_next(NULL, batch, &w), -EINVAL);
	make(1, 1, 0);
	cr_assert_eq(mb_next(b, NULL, &w), -EINVAL);
	cr_assert_eq(mb_next(b, batch, NULL), -EINVAL);
}

/* A real producer and consumer: 50000 items through a queue of 16, the
 * producer retrying when refused; each item batched exactly once, in
 * order, no batch over max_batch. */
#define NREAL 50000
static uint64_t real_clock;

static uint64_t
counting_now(void *arg)
{
	return __atomic_add_fetch(&real_clock, 1, __ATOMIC_RELAXED);
}

static void *
producer(void *arg)
{
	for (uintptr_t i = 1; i <= NREAL;) {
		if (mb_submit(b, (void *)i, MB_NO_DEADLINE) == 0)
			i++;
		else
			sched_yield();
	}
	return NULL;
}

Test(model_batcher, threads_each_item_once_in_order, .timeout = 120)
{
	struct mb_conf c = {
		.max_batch = 8, .queue_max = 16, .now = counting_now, .skipped = on_skip};
	uintptr_t next = 1;
	pthread_t p;
	uint64_t wake;
	struct mb_stats s;

	b = mb_create(&c);
	cr_assert_not_null(b);
	nskips = 0;
	cr_assert_eq(pthread_create(&p, NULL, producer, NULL), 0);
	while (next <= NREAL) {
		int n = mb_next(b, batch, &wake);

		cr_assert_geq(n, 0);
		cr_assert_leq(n, 8);
		for (int i = 0; i < n; i++)
			cr_assert_eq((uintptr_t)batch[i].ctx, next++);
		if (n == 0)
			sched_yield();
	}
	pthread_join(p, NULL);
	mb_stats_get(b, &s);
	cr_assert_eq(s.admitted, NREAL);
	cr_assert_eq(s.computed, NREAL);
	cr_assert_eq(nskips, 0);
	cr_assert_eq(mb_waiting(b), 0);
}
