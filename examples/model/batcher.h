/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The dynamic batcher: a bounded queue between one producer (the thread
 * that admits requests: the dprpc poller running the handler) and one
 * consumer (the thread that computes batches), and the policy that says
 * when a batch closes.
 *
 * Design.  The producer calls mb_submit(): admission.  It never blocks
 * and never waits: a full queue (queue_max items waiting) is refused at
 * once with -EBUSY, an item whose deadline has passed with -ETIMEDOUT, a
 * cancelled one with -ECANCELED; the caller answers those with an error
 * there and then.  The consumer calls mb_next() whenever it is free.  A
 * batch closes
 *  - when max_batch valid items wait (full), or
 *  - when the consumer is free and max_delay is 0 (the default): whatever
 *    waits goes now, since the consumer would otherwise idle; no timer
 *    adds delay, and batches grow only while the consumer is busy; or
 *  - with max_delay > 0, when the oldest waiting item has waited
 *    max_delay (mb_next() says when that is, or when the first waiting
 *    item's deadline passes if that is sooner, so the consumer can sleep
 *    until then or until a new item comes).
 * Before a batch is formed every waiting item is checked: one whose
 * deadline has passed (now >= deadline) or that is cancelled (the
 * cancelled() hook) is taken out and handed to the skipped() hook with
 * the reason, in queue order, and is never part of a batch.
 *
 * Deadlines and cancellation are abstract here: a deadline is a clock
 * value given at admission, cancellation a hook asked about each waiting
 * item.  The server (server.c) says where they come from.
 *
 * The clock is injected (mb_conf.now): any monotonic unit (the server
 * uses nanoseconds), so that tests drive it by hand.
 *
 * Memory ordering: a single-producer single-consumer ring.  The producer
 * writes an item, then publishes it with a release store of tail, paired
 * with the consumer's acquire load of tail; the consumer, once it has
 * copied items out, frees their cells with a release store of head,
 * paired with the producer's acquire load of head before it reuses a
 * cell.  Items in [head, tail) belong to the consumer, which compacts
 * them in place when it takes skipped ones out.  The counters are each
 * written by one side (relaxed) and read by anyone (relaxed).
 */
#ifndef MODEL_BATCHER_H
#define MODEL_BATCHER_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* No deadline. */
#define MB_NO_DEADLINE UINT64_MAX

struct mb_item {
	void *ctx;	   /* the producer's (the server: its request) */
	uint64_t arrival;  /* clock at admission */
	uint64_t deadline; /* not computed once now >= deadline */
	bool skip;	   /* consumer's scratch */
};

enum mb_skip_reason {
	MB_EXPIRED,
	MB_CANCELLED,
};

struct mb_conf {
	unsigned int max_batch; /* >= 1: a batch closes with this many */
	unsigned int queue_max; /* >= 1: admission refuses beyond */
	uint64_t max_delay;	/* clock units; 0: close as soon as the consumer is free */
	uint64_t (*now)(void *arg);
	void *clock_arg;
	/* Asked (on the consumer, and on the producer at admission) whether
	 * an item is cancelled; NULL: nothing is ever cancelled. */
	bool (*cancelled)(void *arg, void *ctx);
	void *cancel_arg;
	/* Told of each item taken out unbatched (consumer thread). */
	void (*skipped)(void *arg, void *ctx, enum mb_skip_reason why);
	void *skipped_arg;
};

struct mb_stats {
	uint64_t admitted, refused_full, refused_expired, refused_cancelled; /* producer */
	uint64_t batches, computed, expired, cancelled;			     /* consumer */
	uint64_t max_batch_seen;
};

struct mb;

/* @return a batcher, or NULL with errno EINVAL (max_batch or queue_max 0,
 * no clock, no skipped hook) or ENOMEM. */
struct mb *mb_create(const struct mb_conf *conf);

/* Free @b; its waiting items (if any) are forgotten: the caller drains
 * first (mb_drain()). */
void mb_free(struct mb *b);

/*
 * Admit an item (producer thread only).
 * @return 0: queued; -EBUSY: queue_max items wait (not queued);
 * -ETIMEDOUT: now >= deadline; -ECANCELED: cancelled() says so;
 * -EINVAL: NULL @b.
 */
int mb_submit(struct mb *b, void *ctx, uint64_t deadline);

/*
 * The next batch, if one closes now (consumer thread only): takes skipped
 * items out (skipped() hook), then copies up to max_batch items, oldest
 * first, into @batch (room for max_batch).
 * @param wake receives, when no batch closes now, the clock value at which
 *        the consumer should ask again: the sooner of when the waiting
 *        items' batch closes by max_delay and the earliest deadline of a
 *        waiting item (so that it is answered then, not when the batch
 *        closes); MB_NO_DEADLINE when nothing waits.  The consumer may
 *        sleep until then unless a new item comes.  Set to 0 when a batch
 *        was returned.
 * @return the batch's size (0: none closes now); -EINVAL for NULL args.
 */
int mb_next(struct mb *b, struct mb_item *batch, uint64_t *wake);

/* Take every waiting item out (consumer thread, or any thread once the
 * producer has stopped): for shutdown.  Those past their deadline are
 * reported expired, the others cancelled.  @return how many. */
unsigned int mb_drain(struct mb *b);

/* Items waiting (either thread; a snapshot). */
unsigned int mb_waiting(const struct mb *b);

void mb_stats_get(const struct mb *b, struct mb_stats *s);

#endif /* MODEL_BATCHER_H */
