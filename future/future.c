/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Lock-free futures (API in dprpc_future.h; docs/futures.md).
 *
 * Design
 * ======
 *
 * Objects.  A pool is one block (huge pages from FUT_HUGEMAP_MIN on, else
 * posix_memalign()): the pool header, two rte_rings initialised in place
 * (MPMC in HTS mode, RING_F_EXACT_SZ), the futures and the extra callback
 * nodes.  The rings hold the free futures and nodes, which are carved from
 * the block in order the first time one is needed (fut_carve()), so a pool
 * costs page faults and ring slots only as far as it is used
 * (docs/futures.md, "Objects").  Nothing is allocated after creation but
 * by dprpc_future_complete_copy() for values over the inline buffer.
 *
 * Invariants.
 *  - state goes PENDING -> COMPLETING -> DONE | FAILED, once per lifetime.
 *    Exactly one thread wins the PENDING -> COMPLETING CAS (fut_claim); only
 *    the winner writes the value or the error, and only before the store of
 *    the final state.  COMPLETING is internal and reported as PENDING.
 *  - cb_head is NULL, or a LIFO (Treiber) list of nodes, or FUT_CB_CLOSED.
 *    It becomes CLOSED exactly once, by the completer's exchange, always
 *    after the final state was stored; nothing is pushed after that, and
 *    nothing is pushed once the pusher sees the final state (so a callback
 *    added by a thread that observed completion always runs at once).
 *    Nodes are only ever pushed one at a time and removed all at once by
 *    the exchange, so the push CAS has no ABA problem.
 *  - The first callback of a lifetime uses the node embedded in the future
 *    (claimed by inline_claimed); others take a node from the pool ring.
 *  - refs counts the holders of a future: users, the completer while it
 *    runs callbacks, a then() step (on its destination), a collect_all()
 *    (on its inputs and its result).  A future carved (below fresh_futs) is
 *    in its pool's ring iff refs is 0; one not carved yet is zeroed memory
 *    nobody has a pointer to.  Likewise a pool node carved (below
 *    fresh_nodes) is in the node ring, or held by one callback list.
 *  - pool->refs = 1 (the owner, until dprpc_future_pool_release) + the
 *    number of futures out of the ring.  Whoever brings it to 0 frees the
 *    block.
 *  - A pool made by fut_pool_create_mempool() (the agents', with EAL up)
 *    keeps its free futures in an rte_mempool instead (driver
 *    "ring_mt_hts"): per-lcore caches, no locked instruction on a cache
 *    hit, and no pool->refs traffic; its in-use count is the mempool's.
 *    Releasing it while futures are out leaks it (logged) so that those
 *    futures stay valid.
 *
 * Ordering.
 *  - Value/error: written by the winner, published by the seq_cst (hence
 *    release) store of the final state; every reader (state, value, error,
 *    wait) loads the state with acquire first.
 *  - Callbacks: a push is an acq_rel CAS, so the completer's acq_rel
 *    exchange sees the node contents.  The exchange comes after the state
 *    store in the completer's program order, so an adder that finds CLOSED
 *    (or the final state) with an acquire load runs its callback at once,
 *    seeing the final state and value.  A push that slips in between the
 *    state store and the exchange is grabbed by the exchange: its adder had
 *    not observed the completion, so running it on the completer is right.
 *  - Parking (Dekker): the waiter does waiters++ (seq_cst) then loads state
 *    (seq_cst); the completer stores state (seq_cst) then loads waiters
 *    (seq_cst).  In the single total order of seq_cst operations one of the
 *    two loads comes last, so either the waiter sees the final state and
 *    does not park, or the completer sees waiters != 0 and issues
 *    FUTEX_WAKE.  The kernel re-checks the word under its bucket lock, so a
 *    waiter that passed its check before the store cannot miss the wake.
 *  - Expiry: fut_expire() may find a future through a stale pointer.  Its
 *    reference is a CAS from a nonzero count (acquire), paired with the
 *    release store of refs in fut_take() (fut_new_refs(), fut_new_call()):
 *    it sees the reset of the lifetime it got, whose expiry (relaxed
 *    atomic) it then checks; a lifetime cannot end while it holds the
 *    reference.  A waiter checks
 *    the expiry of the future it holds (fut_expire_held()).
 *  - Free: release decrements, acquire fence by the thread that reaches 0,
 *    so every access by any holder happens before the reset.  A recycled
 *    future is handed over through the ring, whose tail update is a release
 *    and whose head read is an acquire.
 *
 * Progress.  Completion and add_callback are lock-free (apart from the
 * user callbacks they run): a CAS fails only because another thread's CAS
 * succeeded.  Completion makes one syscall (FUTEX_WAKE) only when a waiter
 * parked.  The pool rings are HTS: no locks or system calls, but a thread
 * preempted mid-operation holds the others (why not the classic or RTS
 * mode: docs/futures.md, "Progress").  Every ring operation is
 * rte_ring_enqueue() / rte_ring_dequeue(), which follow the ring's mode
 * (the _mp_ / _mc_ variants would not).  wait() blocks by design; it
 * never blocks a completer.
 *
 * Reclamation.  Reference counting, no deferred reclamation needed: no
 * thread touches a future without holding a reference, but for
 * fut_expire()'s first look at the expiry (an atomic, in memory that stays
 * the pool's) before it takes one.  The last put runs
 * the value's free_fn, frees a malloc'd copy, resets the future, enqueues
 * it on its pool's ring and drops the pool reference.  A future whose last reference
 * goes while it is PENDING with callbacks registered is first failed with
 * -ECANCELED (origin DPRPC_ORIGIN_LOCAL) so every accepted callback runs
 * exactly once (then() steps see a failed source); with no callback it is
 * simply recycled.  Callback nodes go back to the ring just before their
 * callback runs (cb and arg are copied out first), so a callback may reuse
 * its own node; collect_all() keeps its nodes until its last input
 * completes (node->keep) and returns them itself.
 *
 * Why one file: the invariants above span every operation on struct
 * dprpc_future's private fields; split, those fields and helpers would sit
 * in a header every part reaches, and the argument could no longer be
 * checked in one place.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* syscall(), sched_yield() with -std=c11 */
#endif

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <linux/futex.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_log.h>
#include <rte_mempool.h>
#include <rte_pause.h>
#include <rte_ring.h>

#include <dprpc/dprpc_future.h>

#include "fut_internal.h"

#include "dprpc_atomic.h"
#include "dprpc_hugemap.h"
#include "dprpc_lcore.h"
#include "dprpc_mempool_free.h"

RTE_LOG_REGISTER(fut_logtype, dprpc.future, INFO);

/* Internal state, between PENDING and DONE/FAILED; reported as PENDING. */
#define FUT_COMPLETING 3u

/* Waiting: spin iterations before parking, clock reads while spinning. */
#define FUT_SPIN_ITERS	1024u
#define FUT_CLOCK_EVERY 64u
/* Park slice when the progress hook reports progress is made elsewhere. */
#define FUT_SLICE_NS 150000u
#define FUT_NS_PER_S 1000000000u

/* The plain pools' rings: HTS, see Progress in the design. */
#define FUT_RING_FLAGS (RING_F_EXACT_SZ | RING_F_MP_HTS_ENQ | RING_F_MC_HTS_DEQ)
/* The mempool driver of an agent's pool: its ring in HTS mode (ditto). */
#define FUT_MEMPOOL_OPS "ring_mt_hts"

/* Largest pool: rte_align32pow2(n + 1) must not exceed RTE_RING_SZ_MASK. */
#define FUT_POOL_MAX (RTE_RING_SZ_MASK >> 1)

/*
 * ThreadSanitizer does not model atomic_thread_fence().  Under it the
 * release decrement + acquire fence of the reference counts is spelled as
 * one acq_rel decrement: the same ordering, expressed on the RMW.
 */
#if defined(__SANITIZE_THREAD__)
#define FUT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FUT_TSAN 1
#endif
#endif

#ifdef FUT_TSAN
#define FUT_UNREF_ORDER	  memory_order_acq_rel
#define fut_unref_fence() ((void)0)
#else
#define FUT_UNREF_ORDER	  memory_order_release
#define fut_unref_fence() atomic_thread_fence(memory_order_acquire)
#endif

/* A registered callback. */
struct fut_cb_node {
	struct fut_cb_node *next;   /**< callback list link, newest first */
	dprpc_callback_fn_t cb;	    /**< the callback */
	void *arg;		    /**< its argument */
	struct fut_cb_node *link;   /**< collect_all: next record of the result */
	struct dprpc_future *owner; /**< collect_all: input the node is added to */
	bool from_pool;		    /**< constant: a pool node (else inline) */
	bool keep;		    /**< the callback disposes of the node */
};

/* Head value of a closed list: the future completed, callbacks ran. */
static struct fut_cb_node fut_cb_closed;
#define FUT_CB_CLOSED (&fut_cb_closed)

_Static_assert(sizeof(_Atomic uint32_t) == sizeof(uint32_t), "futex word must be 32-bit");

struct dprpc_future {
	/* Futex word: PENDING, FUT_COMPLETING, DONE or FAILED. */
	_Atomic uint32_t state;
	/* Threads parked or about to park on state (Dekker with completion). */
	_Atomic uint32_t waiters;
	/* Holders; 0 iff the future is in its pool's ring. */
	_Atomic uint32_t refs;
	/* TSC at which it fails with -ETIMEDOUT, 0: never.  Set by the
	 * creator (fut_set_expiry()), cleared by the reset; relaxed, read by
	 * threads that may find it recycled (fut_expire()). */
	_Atomic uint64_t expiry;
	/* Nonzero once inline_cb is taken for this lifetime. */
	_Atomic uint32_t inline_claimed;
	/* A cancelled call's enum dprpc_cancel_outcome (the agent's). */
	_Atomic uint32_t cancel_outcome;
	/* NULL, a LIFO list of nodes, or FUT_CB_CLOSED. */
	_Atomic(struct fut_cb_node *) cb_head;
	struct dprpc_future_pool *pool; /* constant */

	/* Set by the creator before the future is shared; then() and
	 * collect_all() set them from their inputs'. */
	dprpc_progress_fn_t progress_fn;
	void *progress_arg;
	/* A collect_all() result over inputs with different hooks: the set
	 * progress_arg points to (malloc'd, freed by the reset), or NULL. */
	struct fut_progress_set *progress_set;
	/* The expiry's failure, for a waiter that fails it (set with it;
	 * read only by holders of a reference). */
	const char *expiry_msg;
	uint16_t expiry_origin;

	/* Written by the winner of fut_claim() before the final state. */
	const void *data;
	size_t len;
	dprpc_value_free_fn_t free_fn;
	void *free_arg;
	void *copy; /* malloc'd by complete_copy, or NULL */

	/* then(): the step, stored on the destination future. */
	dprpc_then_fn_t then_fn;
	void *then_arg;
	/* collect_all(): stored on the result future. */
	_Atomic uint32_t collect_remaining;
	struct fut_cb_node *collect_records;

	struct fut_cb_node inline_cb;
	union {
		alignas(max_align_t) unsigned char buf[DPRPC_FUTURE_INLINE_MAX];
		struct dprpc_error err;
	} u;
} __rte_cache_aligned;

/* Six lines of 64 bytes; u, the error, ends in the sixth (at byte 368 of
 * 384 with the error's workers): a larger error would take a seventh. */
_Static_assert(sizeof(struct dprpc_future) <= 384, "a future outgrew its six cache lines");

struct dprpc_future_pool {
	/* 1 (owner) + futures in use; the block is freed when it reaches 0. */
	_Atomic uint32_t refs;
	unsigned int nb_futures;
	unsigned int nb_nodes;
	struct rte_ring *fut_ring;  /* free futures, or NULL with mp */
	struct rte_mempool *mp;	    /* free futures (fut_pool_create_mempool) */
	struct rte_ring *node_ring; /* free extra callback nodes */
	struct dprpc_future *futures;
	struct fut_cb_node *nodes;
	/* How many futures and nodes were carved (fut_carve()): those past
	 * them are untouched, zeroed memory. */
	_Atomic uint32_t fresh_futs;
	_Atomic uint32_t fresh_nodes;
	size_t map_len; /* the block's mapped length; 0: from malloc() */
	/* Called by dprpc_future_cancel() once it cancelled one of the
	 * pool's futures (fut_pool_set_cancel_hook()); NULL: none. */
	void (*cancel_hook)(void *arg);
	void *cancel_arg;
} __rte_cache_aligned;

/* Blocks from this size on are mapped on huge pages (dprpc_hugemap.h):
 * an agent's RRef pool is made and freed with every agent, and in 4 KiB
 * pages that cost milliseconds (docs/futures.md, "Objects"). */
#define FUT_HUGEMAP_MIN DPRPC_HUGEMAP_ALIGN

/* A pool's block of @total bytes, zeroed, cache-line aligned. */
static void *
fut_block_alloc(size_t total, size_t *map_len)
{
	void *mem;

	*map_len = 0;
	if (total >= FUT_HUGEMAP_MIN) {
		mem = dprpc_hugemap_alloc(total, map_len);
		if (mem != NULL)
			return mem; /* zeroed by the kernel */
	}
	if (posix_memalign(&mem, RTE_CACHE_LINE_SIZE, total) != 0)
		return NULL;
	memset(mem, 0, total);
	return mem;
}

static void
fut_block_free(struct dprpc_future_pool *pool)
{
	if (pool->map_len != 0)
		dprpc_hugemap_free(pool, pool->map_len);
	else
		free(pool);
}

/*
 * The index of an object never handed out, of the @n of the block, taken
 * from @next; UINT32_MAX once all were.  Relaxed: the CAS only hands the
 * index out, once; the object is the caller's alone, zeroed since the pool
 * was made (published with the pool), and the caller publishes what it
 * writes there as it would an object from the ring (a future by the
 * release store of its refs, a node by the push CAS).
 */
static uint32_t
fut_carve(_Atomic uint32_t *next, uint32_t n)
{
	uint32_t i = atomic_load_explicit(next, memory_order_relaxed);

	do {
		if (i >= n)
			return UINT32_MAX;
	} while (!atomic_compare_exchange_weak_explicit(
		next, &i, i + 1, memory_order_relaxed, memory_order_relaxed));
	return i;
}

static inline bool
fut_is_final(uint32_t s)
{
	return s == DPRPC_FUTURE_DONE || s == DPRPC_FUTURE_FAILED;
}

/* Result of a wait on a future observed (acquire) in final state s. */
static inline int
fut_result(const struct dprpc_future *f, uint32_t s)
{
	return s == DPRPC_FUTURE_DONE ? 0 : f->u.err.code;
}

static inline uint64_t
fut_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * FUT_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* Absolute CLOCK_MONOTONIC deadline in ns; 0 means no limit. */
static uint64_t
fut_deadline(uint64_t timeout_us)
{
	uint64_t now;

	if (timeout_us == 0)
		return 0;
	now = fut_now_ns();
	if (timeout_us > (UINT64_MAX - now) / 1000)
		return 0; /* beyond the clock's range: no limit */
	return now + timeout_us * 1000;
}

/* Park on word while it holds val, for at most rel_ns (0: no limit). */
static void
fut_futex_wait(_Atomic uint32_t *word, uint32_t val, uint64_t rel_ns)
{
	struct timespec ts;
	struct timespec *tsp = NULL;

	if (rel_ns != 0) {
		ts.tv_sec = (time_t)(rel_ns / FUT_NS_PER_S);
		ts.tv_nsec = (long)(rel_ns % FUT_NS_PER_S);
		tsp = &ts;
	}
	/*
	 * EAGAIN (word changed), EINTR and ETIMEDOUT are all fine: the caller
	 * re-reads the state and the clock.  FUTEX_WAIT's timeout is relative
	 * and measured on CLOCK_MONOTONIC.
	 */
	(void)syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, tsp, NULL, 0);
}

static void
fut_futex_wake(_Atomic uint32_t *word)
{
	(void)syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Park until the state leaves PENDING/COMPLETING, a wake, or rel_ns. */
static void
fut_park(struct dprpc_future *f, uint64_t rel_ns)
{
	uint32_t s;

	/*
	 * seq_cst: Dekker pair with fut_publish(), which stores the state
	 * (seq_cst) and then loads waiters (seq_cst).  Incrementing before the
	 * load below means: either we see the final state and do not park, or
	 * the completer sees waiters != 0 and wakes us.
	 */
	atomic_fetch_add_explicit(&f->waiters, 1, memory_order_seq_cst);
	/* seq_cst: second half of our side of the Dekker pair (see above). */
	s = atomic_load_explicit(&f->state, memory_order_seq_cst);
	if (!fut_is_final(s))
		fut_futex_wait(&f->state, s, rel_ns);
	/*
	 * relaxed: the completer only uses waiters to decide whether to issue
	 * FUTEX_WAKE; seeing a stale nonzero costs one spurious syscall.
	 */
	atomic_fetch_sub_explicit(&f->waiters, 1, memory_order_relaxed);
}

/* The wait ends (@rc: -ETIMEDOUT, the deadline passed; -EDEADLK, the hook
 * says nobody can make progress): the result if completed meanwhile. */
static int
fut_wait_end(const struct dprpc_future *f, int rc)
{
	/* acquire: pairs with the seq_cst store of the final state. */
	uint32_t s = dp_load_acquire(&f->state);

	return fut_is_final(s) ? fut_result(f, s) : rc;
}

/* A waiter's check of its own future: fail it once past its expiry.  The
 * caller holds a reference, so the expiry is this lifetime's. */
static inline void
fut_expire_held(struct dprpc_future *f)
{
	/* relaxed: see fut_set_expiry(). */
	uint64_t exp = dp_load_relaxed(&f->expiry);

	if (unlikely(exp != 0) && rte_rdtsc() >= exp)
		(void)dprpc_future_fail(f, -ETIMEDOUT, f->expiry_origin, f->expiry_msg);
}

/*
 * Wait until the future completes or the deadline (0: none) passes.
 *
 * No hook: spin FUT_SPIN_ITERS iterations, then park until the deadline.
 * With a hook: while it returns >= 0 this thread is the poller and must
 * keep calling it (parking would leave nobody to make progress); after the
 * spin phase it yields the CPU after each idle (0) call.  Once it returns
 * < 0 (progress is made elsewhere) the thread parks in slices of
 * FUT_SLICE_NS and calls the hook again after each slice, in case the
 * other poller stopped.  -EDEADLK from the hook (this thread is the one
 * that must make progress and cannot) ends the wait at once.
 */
static int
fut_wait_until(struct dprpc_future *f, uint64_t deadline)
{
	dprpc_progress_fn_t hook = f->progress_fn;
	void *hook_arg = f->progress_arg;
	bool polling = hook != NULL; /* the hook's last answer was >= 0 */
	unsigned int spins = 0;
	uint64_t now;
	uint64_t rel;
	uint32_t s;
	int r;

	for (;;) {
		/* acquire: pairs with the seq_cst store of the final state. */
		s = dp_load_acquire(&f->state);
		if (fut_is_final(s))
			return fut_result(f, s);

		if (spins < FUT_SPIN_ITERS) {
			if (polling) {
				r = hook(hook_arg);
				if (r == -EDEADLK)
					return fut_wait_end(f, r);
				polling = r >= 0;
			} else {
				rte_pause();
			}
			if (spins % FUT_CLOCK_EVERY == 0) {
				fut_expire_held(f);
				if (deadline != 0 && fut_now_ns() >= deadline)
					return fut_wait_end(f, -ETIMEDOUT);
			}
			spins++;
			continue;
		}
		fut_expire_held(f);

		rel = 0;
		if (deadline != 0) {
			now = fut_now_ns();
			if (now >= deadline)
				return fut_wait_end(f, -ETIMEDOUT);
			rel = deadline - now;
		}
		if (hook == NULL) {
			/* An expiry is checked between slices.  Relaxed: we
			 * hold a reference, the expiry is this lifetime's. */
			if (dp_load_relaxed(&f->expiry) != 0 && (rel == 0 || rel > FUT_SLICE_NS))
				rel = FUT_SLICE_NS;
			fut_park(f, rel);
		} else if (polling) {
			r = hook(hook_arg);
			if (r == -EDEADLK)
				return fut_wait_end(f, r);
			if (r < 0)
				polling = false;
			else if (r == 0)
				sched_yield();
		} else {
			if (rel == 0 || rel > FUT_SLICE_NS)
				rel = FUT_SLICE_NS;
			fut_park(f, rel);
			r = hook(hook_arg);
			if (r == -EDEADLK)
				return fut_wait_end(f, r);
			polling = r >= 0;
		}
	}
}

/* Drop a pool reference; the last one frees the pool's memory. */
static void
fut_pool_unref(struct dprpc_future_pool *pool)
{
	/*
	 * release (acq_rel under TSan): orders this thread's ring operations
	 * and accesses to the pool before the decrement; pairs with the
	 * acquire fence of the thread that reaches 0.
	 */
	if (atomic_fetch_sub_explicit(&pool->refs, 1, FUT_UNREF_ORDER) != 1)
		return;
	/* acquire: pairs with the release decrements of the other holders. */
	fut_unref_fence();
	fut_block_free(pool);
}

/* Return a callback node after use.  An inline node stays claimed. */
static void __rte_hot
fut_node_put(struct dprpc_future_pool *pool, struct fut_cb_node *n)
{
	if (!n->from_pool)
		return;
	/*
	 * Cannot fail: the ring holds every node.  The ring's tail update is a
	 * release, paired with the acquire in a later dequeue, so our last
	 * reads of the node happen before its next user's writes.
	 */
	(void)rte_ring_enqueue(pool->node_ring, n);
}

/* Take a callback node for a callback on f: inline first, then the pool. */
static struct fut_cb_node *__rte_hot
fut_node_get(struct dprpc_future *f)
{
	struct dprpc_future_pool *pool = f->pool;
	struct fut_cb_node *n;
	uint32_t i;
	void *obj;

	/*
	 * acquire: pairs with the release store in fut_node_unclaim(), so the
	 * writes of a collect_all() that claimed and gave the node back happen
	 * before ours.
	 */
	if (atomic_exchange_explicit(&f->inline_claimed, 1, memory_order_acquire) == 0) {
		n = &f->inline_cb;
	} else if (rte_ring_dequeue(pool->node_ring, &obj) == 0) {
		n = obj;
	} else {
		i = fut_carve(&pool->fresh_nodes, pool->nb_nodes);
		if (i == UINT32_MAX)
			return NULL;
		n = &pool->nodes[i];
		n->from_pool = true;
	}
	n->next = NULL;
	n->link = NULL;
	n->owner = NULL;
	n->keep = false;
	return n;
}

/* Give back a node that was never pushed (collect_all rollback). */
static void
fut_node_unclaim(struct dprpc_future *f, struct fut_cb_node *n)
{
	if (n->from_pool) {
		fut_node_put(f->pool, n);
		return;
	}
	/* release: pairs with the acquire exchange in fut_node_get(). */
	atomic_store_explicit(&f->inline_claimed, 0, memory_order_release);
}

/*
 * True once f is visibly complete to this thread.  acquire: pairs with the
 * seq_cst store of the final state, so a callback run at once sees it.
 */
static inline bool __rte_hot
fut_completed(const struct dprpc_future *f)
{
	return fut_is_final(dp_load_acquire(&f->state));
}

/*
 * Push a node on f's callback list.  Returns false if f is complete: the
 * caller then runs the callback itself, at once.
 *
 * The state is checked first, not only the list: between the store of the
 * final state and the exchange that closes the list, a push would still
 * succeed and the callback would run later on the completer, although the
 * adder (or a thread it synchronised with) may already have observed the
 * completion.  Checking the state makes "added after completion runs at
 * once" hold for every adder that observed the completion.
 */
static bool __rte_hot
fut_cb_push(struct dprpc_future *f, struct fut_cb_node *n)
{
	struct fut_cb_node *head;

	if (fut_completed(f))
		return false;
	/*
	 * acquire: pairs with the acq_rel exchange in fut_publish(); if we see
	 * CLOSED the caller runs the callback and must see the final state.
	 */
	head = dp_load_acquire(&f->cb_head);
	do {
		if (head == FUT_CB_CLOSED)
			return false;
		n->next = head;
		/*
		 * Success: acq_rel, its release half publishes n's fields to the
		 * completer's acq_rel exchange.  Failure: acquire, same pairing
		 * as the load above.
		 */
	} while (!atomic_compare_exchange_weak_explicit(
		&f->cb_head, &head, n, memory_order_acq_rel, memory_order_acquire));
	return true;
}

/* Run a grabbed list (newest first) in registration order. */
static void __rte_hot
fut_run_callbacks(struct dprpc_future *f, struct fut_cb_node *list)
{
	struct fut_cb_node *prev = NULL;
	struct fut_cb_node *next;
	struct fut_cb_node *n;
	dprpc_callback_fn_t cb;
	void *arg;

	while (list != NULL) {
		next = list->next;
		list->next = prev;
		prev = list;
		list = next;
	}
	for (n = prev; n != NULL; n = next) {
		/* Copy out first: the node may be reused once returned or run. */
		next = n->next;
		cb = n->cb;
		arg = n->arg;
		if (!n->keep)
			fut_node_put(f->pool, n);
		cb(f, arg);
	}
}

/*
 * Elect the completer.  On success the caller owns the value/error fields
 * and must call fut_publish().  With @guard the completer takes its own
 * reference so a callback that puts the last user reference cannot free f
 * under it; without (the fut_*_consume() variants) the caller's own
 * reference plays that part and fut_publish() drops it.
 */
static bool __rte_hot
fut_claim(struct dprpc_future *f, bool guard)
{
	uint32_t expected = DPRPC_FUTURE_PENDING;

	/*
	 * relaxed: the CAS only elects one winner.  The winner's writes of
	 * the value are published by the seq_cst store in fut_publish(); the
	 * losers read nothing.
	 */
	if (!atomic_compare_exchange_strong_explicit(&f->state, &expected, FUT_COMPLETING,
		    memory_order_relaxed, memory_order_relaxed))
		return false;
	/* relaxed: the caller already holds a reference (API contract). */
	if (guard)
		atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
	return true;
}

/* Store the final state, run the callbacks, wake the parked waiters. */
static void __rte_hot
fut_publish(struct dprpc_future *f, uint32_t final)
{
	struct fut_cb_node *list;

	/*
	 * seq_cst: release for the value/error written by the winner (pairs
	 * with the acquire loads of state in readers and waiters), and the
	 * first half of the Dekker pair with fut_park(): store state, then
	 * load waiters below.
	 */
	atomic_store_explicit(&f->state, final, memory_order_seq_cst);
	/*
	 * acq_rel: acquire pairs with the push CAS (node fields visible);
	 * release pairs with the acquire loads of cb_head in fut_cb_push():
	 * an adder that sees CLOSED sees the state above.
	 */
	list = atomic_exchange_explicit(&f->cb_head, FUT_CB_CLOSED, memory_order_acq_rel);
	fut_run_callbacks(f, list);
	/* seq_cst: second half of the Dekker pair with fut_park(). */
	if (atomic_load_explicit(&f->waiters, memory_order_seq_cst) != 0)
		fut_futex_wake(&f->state);
	dprpc_future_put(f); /* fut_claim()'s guard, or the consumed reference */
}

static void __rte_hot
fut_reset(struct dprpc_future *f)
{
	/*
	 * relaxed: we are the only holder (refs is 0); the stores are
	 * published to the next owner by the ring enqueue (release) and
	 * dequeue (acquire).
	 */
	dp_store_relaxed(&f->state, DPRPC_FUTURE_PENDING);
	dp_store_relaxed(&f->inline_claimed, 0);
	dp_store_relaxed(&f->cancel_outcome, DPRPC_CANCEL_UNCONFIRMED);
	dp_store_relaxed(&f->cb_head, NULL);
	dp_store_relaxed(&f->collect_remaining, 0);
	dp_store_relaxed(&f->expiry, 0);
	f->expiry_msg = NULL;
	f->progress_fn = NULL;
	f->progress_arg = NULL;
	/* Tested first: a call into libc per future for a NULL, the common
	 * case. */
	if (unlikely(f->progress_set != NULL)) {
		free(f->progress_set);
		f->progress_set = NULL;
	}
	f->data = NULL;
	f->len = 0;
	f->free_fn = NULL;
	f->free_arg = NULL;
	f->copy = NULL;
	f->then_fn = NULL;
	f->then_arg = NULL;
	f->collect_records = NULL;
	/* u.err is left as it is: read only in state FAILED, and every
	 * failure writes all of it first (fut_fail()).  Resetting it touched
	 * one more cache line per future. */
}

/* Last reference gone (acquire done by the caller). */
static void __rte_hot
fut_free(struct dprpc_future *f)
{
	struct dprpc_future_pool *pool = f->pool;

	/* relaxed: no other holder exists, the caller's fence ordered us. */
	if (dp_load_relaxed(&f->state) == DPRPC_FUTURE_PENDING &&
		dp_load_relaxed(&f->cb_head) != NULL) {
		/*
		 * Abandoned with callbacks registered: fail it so each runs
		 * exactly once, then drop the resurrected reference.  relaxed
		 * store: nobody else can see f.
		 */
		dp_store_relaxed(&f->refs, 1);
		(void)dprpc_future_fail(
			f, -ECANCELED, DPRPC_ORIGIN_LOCAL, "future released while pending");
		dprpc_future_put(f);
		return;
	}
	if (f->free_fn != NULL)
		f->free_fn(f->free_arg);
	if (unlikely(f->copy != NULL))
		free(f->copy); /* tested first, as in fut_reset() */
	fut_reset(f);
	if (pool->mp != NULL) {
		/* The mempool's ring or per-lcore cache hands f over (the
		 * ring's release/acquire; a cache stays on this lcore). */
		dprpc_mp_put(pool->mp, f);
		return;
	}
	/* Cannot fail: the ring holds every future.  Release: see fut_reset. */
	(void)rte_ring_enqueue(pool->fut_ring, f);
	fut_pool_unref(pool);
}

/* Constant and initial fields of a future in its pool (not shared yet). */
static void
fut_init_one(struct dprpc_future *f, struct dprpc_future_pool *pool)
{
	atomic_init(&f->state, DPRPC_FUTURE_PENDING);
	atomic_init(&f->waiters, 0);
	atomic_init(&f->refs, 0);
	atomic_init(&f->inline_claimed, 0);
	atomic_init(&f->cancel_outcome, DPRPC_CANCEL_UNCONFIRMED);
	atomic_init(&f->cb_head, NULL);
	atomic_init(&f->collect_remaining, 0);
	atomic_init(&f->expiry, 0);
	f->pool = pool;
	f->inline_cb.from_pool = false;
}

/*
 * One block: the pool header, the callback-node ring and its nodes, and,
 * unless @nb_block_futures is 0 (futures kept in a mempool instead), the
 * future ring and its futures.  Plain initialisation: the pool is not
 * shared yet; the caller publishes it to other threads by its own means.
 */
static struct dprpc_future_pool *
fut_pool_alloc(unsigned int nb_futures, unsigned int nb_block_futures, unsigned int nb_cb_nodes)
{
	struct dprpc_future_pool *pool;
	ssize_t fring_sz = 0, nring_sz;
	size_t off_fring, off_nring, off_futs, off_nodes, total, map_len;
	void *mem;

	if (nb_futures == 0 || nb_futures > FUT_POOL_MAX || nb_cb_nodes > FUT_POOL_MAX) {
		rte_errno = EINVAL;
		return NULL;
	}
	if (nb_block_futures > 0)
		fring_sz = rte_ring_get_memsize(rte_align32pow2(nb_block_futures + 1));
	nring_sz = rte_ring_get_memsize(rte_align32pow2(nb_cb_nodes + 1));
	if (fring_sz < 0 || nring_sz < 0) {
		rte_errno = EINVAL;
		return NULL;
	}
	off_fring = RTE_ALIGN_CEIL(sizeof(*pool), RTE_CACHE_LINE_SIZE);
	off_nring = off_fring + RTE_ALIGN_CEIL((size_t)fring_sz, RTE_CACHE_LINE_SIZE);
	off_futs = off_nring + RTE_ALIGN_CEIL((size_t)nring_sz, RTE_CACHE_LINE_SIZE);
	off_nodes = off_futs + (size_t)nb_block_futures * sizeof(struct dprpc_future);
	total = off_nodes + (size_t)nb_cb_nodes * sizeof(struct fut_cb_node);
	mem = fut_block_alloc(total, &map_len);
	if (mem == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}

	pool = mem;
	pool->map_len = map_len;
	pool->nb_futures = nb_futures;
	pool->nb_nodes = nb_cb_nodes;
	pool->node_ring = RTE_PTR_ADD(mem, off_nring);
	pool->nodes = RTE_PTR_ADD(mem, off_nodes);
	/* The rings start empty: futures and nodes are carved on first use
	 * (fut_carve()). */
	if (rte_ring_init(pool->node_ring, "dprpc_fut_cb", nb_cb_nodes, FUT_RING_FLAGS) != 0)
		goto einval;
	atomic_init(&pool->fresh_nodes, 0);
	atomic_init(&pool->fresh_futs, 0);
	if (nb_block_futures > 0) {
		pool->fut_ring = RTE_PTR_ADD(mem, off_fring);
		pool->futures = RTE_PTR_ADD(mem, off_futs);
		if (rte_ring_init(pool->fut_ring, "dprpc_fut", nb_block_futures, FUT_RING_FLAGS) !=
			0)
			goto einval;
	}
	atomic_init(&pool->refs, 1);
	return pool;
einval:
	fut_block_free(pool);
	rte_errno = EINVAL;
	return NULL;
}

struct dprpc_future_pool *
dprpc_future_pool_create(unsigned int nb_futures, unsigned int nb_cb_nodes)
{
	return fut_pool_alloc(nb_futures, nb_futures, nb_cb_nodes);
}

void
dprpc_future_pool_release(struct dprpc_future_pool *pool)
{
	unsigned int in_use;

	if (pool == NULL)
		return;
	if (pool->mp == NULL) {
		fut_pool_unref(pool);
		return;
	}
	in_use = rte_mempool_in_use_count(pool->mp);
	if (in_use != 0) {
		/* Futures still held stay valid: leak rather than free. */
		FUT_LOG(WARNING, "%u futures still held, future pool leaked", in_use);
		return;
	}
	dprpc_mempool_free_idle(pool->mp);
	fut_block_free(pool);
}

/* rte_mempool object constructor: fut_init_one() for a mempool's future. */
static void
fut_mempool_obj_init(struct rte_mempool *mp, void *opaque, void *obj, unsigned int idx)
{
	RTE_SET_USED(mp);
	RTE_SET_USED(idx);
	memset(obj, 0, sizeof(struct dprpc_future));
	fut_init_one(obj, opaque);
}

struct dprpc_future_pool *
fut_pool_create_mempool(
	const char *name, unsigned int nb_futures, unsigned int nb_cb_nodes, int socket_id)
{
	struct dprpc_future_pool *pool = fut_pool_alloc(nb_futures, 0, nb_cb_nodes);
	unsigned int cache = RTE_MIN((unsigned int)RTE_MEMPOOL_CACHE_MAX_SIZE, nb_futures / 8);
	int rc;

	if (pool == NULL)
		return NULL;
	pool->mp = rte_mempool_create_empty(
		name, nb_futures, sizeof(struct dprpc_future), cache, 0, socket_id, 0);
	if (pool->mp == NULL) {
		fut_block_free(pool);
		return NULL; /* rte_errno set */
	}
	rc = rte_mempool_set_ops_byname(pool->mp, FUT_MEMPOOL_OPS, NULL);
	if (rc == 0) {
		rc = rte_mempool_populate_default(pool->mp);
		rc = rc < 0 ? rc : 0;
	}
	if (rc != 0) {
		rte_mempool_free(pool->mp);
		fut_block_free(pool);
		rte_errno = -rc;
		return NULL;
	}
	(void)rte_mempool_obj_iter(pool->mp, fut_mempool_obj_init, pool);
	return pool;
}

unsigned int
dprpc_future_pool_in_use(const struct dprpc_future_pool *pool)
{
	if (pool == NULL) {
		rte_errno = EINVAL;
		return 0;
	}
	if (pool->mp != NULL)
		return rte_mempool_in_use_count(pool->mp);
	/* relaxed: a statistic, exact when quiescent. */
	return dp_load_relaxed(&pool->refs) - 1;
}

unsigned int
dprpc_future_pool_cb_in_use(const struct dprpc_future_pool *pool)
{
	if (pool == NULL) {
		rte_errno = EINVAL;
		return 0;
	}
	/* Relaxed: a statistic, exact when quiescent. */
	return dp_load_relaxed(&pool->fresh_nodes) - rte_ring_count(pool->node_ring);
}

/* fut_new_refs(), inlined into it and into fut_new_call(). */
static __rte_always_inline struct dprpc_future *
fut_take(struct dprpc_future_pool *pool, uint32_t refs)
{
	struct dprpc_future *f;
	void *obj;

	if (pool == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	if (pool->mp != NULL) {
		if (dprpc_mp_get(pool->mp, &obj) != 0) {
			rte_errno = ENOBUFS;
			return NULL;
		}
		f = obj;
		/* f is not shared yet; the caller publishes it.  Release:
		 * pairs with the acquire CAS in fut_expire(), which may find f
		 * by a stale pointer: it sees the reset of this lifetime. */
		atomic_store_explicit(&f->refs, refs, memory_order_release);
		return f;
	}
	/* The dequeue is an acquire, paired with the enqueue in fut_free(). */
	if (rte_ring_dequeue(pool->fut_ring, &obj) != 0) {
		uint32_t i = fut_carve(&pool->fresh_futs, pool->nb_futures);

		if (i == UINT32_MAX) {
			rte_errno = ENOBUFS;
			return NULL;
		}
		obj = &pool->futures[i];
		fut_init_one(obj, pool);
	}
	/*
	 * relaxed: the owner's reference keeps the pool alive here (no new()
	 * after pool_release, API contract); fut_pool_unref() orders the end.
	 */
	atomic_fetch_add_explicit(&pool->refs, 1, memory_order_relaxed);
	f = obj;
	/* Release: as above, for fut_expire(). */
	atomic_store_explicit(&f->refs, refs, memory_order_release);
	return f;
}

struct dprpc_future *__rte_hot
fut_new_refs(struct dprpc_future_pool *pool, uint32_t refs)
{
	return fut_take(pool, refs);
}

struct dprpc_future *__rte_hot
fut_new_call(struct dprpc_future_pool *pool, dprpc_progress_fn_t fn, void *arg, uint64_t expiry,
	uint16_t origin, const char *msg)
{
	struct dprpc_future *f = fut_take(pool, 2);

	if (f == NULL)
		return NULL;
	/* Plain stores: f is not shared yet (as dprpc_future_set_progress(),
	 * without its NULL check). */
	f->progress_fn = fn;
	f->progress_arg = arg;
	if (expiry != 0)
		fut_set_expiry(f, expiry, origin, msg);
	return f;
}

void __rte_hot
fut_set_expiry(struct dprpc_future *f, uint64_t tsc, uint16_t origin, const char *msg)
{
	f->expiry_origin = origin;
	f->expiry_msg = msg;
	/* relaxed: published with the future by the creator's own means;
	 * fut_expire() may also read the value of the next lifetime, or 0,
	 * both of which it handles. */
	dp_store_relaxed(&f->expiry, tsc);
}

bool
fut_expire(struct dprpc_future *f, uint64_t now, uint16_t origin, const char *msg)
{
	uint64_t exp = dp_load_relaxed(&f->expiry);
	uint32_t r;
	bool failed;

	/* A first look without a reference: f's memory outlives its pool's
	 * users, and a stale answer is checked again below. */
	if (exp == 0 || exp > now)
		return false;
	/*
	 * Take a reference unless f is free (refs 0: in its pool, or on its
	 * way there).  Acquire: pairs with the release store of refs in
	 * fut_new_refs(), so the reset of f's current lifetime (expiry 0,
	 * state PENDING) is visible and the checks below are about that
	 * lifetime, whichever it is.
	 */
	r = dp_load_relaxed(&f->refs);
	do {
		if (r == 0)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(
		&f->refs, &r, r + 1, memory_order_acquire, memory_order_relaxed));
	/* relaxed: see fut_set_expiry(); held, f cannot be recycled now. */
	exp = dp_load_relaxed(&f->expiry);
	failed = exp != 0 && exp <= now && dprpc_future_fail(f, -ETIMEDOUT, origin, msg) == 0;
	dprpc_future_put(f);
	return failed;
}

struct dprpc_future *
dprpc_future_new(struct dprpc_future_pool *pool)
{
	return fut_new_refs(pool, 1);
}

void
dprpc_future_get(struct dprpc_future *f)
{
	if (f == NULL)
		return;
	/* relaxed: the caller's reference keeps f alive (API contract). */
	atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
}

void __rte_hot
dprpc_future_put(struct dprpc_future *f)
{
	if (f == NULL)
		return;
	/*
	 * release (acq_rel under TSan): every access of ours to f happens
	 * before the decrement; pairs with the acquire fence below, executed
	 * by whichever holder reaches 0.
	 */
	if (atomic_fetch_sub_explicit(&f->refs, 1, FUT_UNREF_ORDER) != 1)
		return;
	/* acquire: pairs with the release decrements of all other holders. */
	fut_unref_fence();
	fut_free(f);
}

static int
fut_complete(struct dprpc_future *f, const void *data, size_t len, dprpc_value_free_fn_t free_fn,
	void *free_arg, bool consume)
{
	if (!fut_claim(f, !consume)) {
		if (consume)
			dprpc_future_put(f);
		return -EALREADY;
	}
	f->data = data;
	f->len = len;
	f->free_fn = free_fn;
	f->free_arg = free_arg;
	fut_publish(f, DPRPC_FUTURE_DONE);
	return 0;
}

int
dprpc_future_complete(struct dprpc_future *f, const void *data, size_t len,
	dprpc_value_free_fn_t free_fn, void *free_arg)
{
	if (f == NULL || (data == NULL && len > 0))
		return -EINVAL;
	return fut_complete(f, data, len, free_fn, free_arg, false);
}

int __rte_hot
fut_complete_consume(struct dprpc_future *f, const void *data, size_t len,
	dprpc_value_free_fn_t free_fn, void *free_arg)
{
	return fut_complete(f, data, len, free_fn, free_arg, true);
}

int
dprpc_future_complete_copy(struct dprpc_future *f, const void *data, size_t len)
{
	void *copy = NULL;

	if (f == NULL || (data == NULL && len > 0))
		return -EINVAL;
	if (len > DPRPC_FUTURE_INLINE_MAX) {
		/*
		 * Not the fast path: malloc before the claim, so -ENOMEM leaves
		 * the future pending.  relaxed pre-check: only avoids a useless
		 * malloc, fut_claim() decides.
		 */
		if (dp_load_relaxed(&f->state) != DPRPC_FUTURE_PENDING)
			return -EALREADY;
		copy = malloc(len);
		if (copy == NULL)
			return -ENOMEM;
		memcpy(copy, data, len);
	}
	if (!fut_claim(f, true)) {
		free(copy);
		return -EALREADY;
	}
	if (copy != NULL) {
		f->copy = copy;
		f->data = copy;
	} else if (len > 0) {
		memcpy(f->u.buf, data, len);
		f->data = f->u.buf;
	}
	f->len = len;
	fut_publish(f, DPRPC_FUTURE_DONE);
	return 0;
}

static int
fut_fail(struct dprpc_future *f, int code, uint16_t origin, const char *msg, bool consume,
	uint32_t retry_after_us)
{
	size_t n = 0;

	if (code > 0)
		code = -code;
	else if (code == 0)
		code = -EINVAL;
	if (!fut_claim(f, !consume)) {
		if (consume)
			dprpc_future_put(f);
		return -EALREADY;
	}
	f->u.err.code = code;
	f->u.err.origin = origin;
	f->u.err.retry_after_us = retry_after_us;
	f->u.err.workers = 0;
	if (msg != NULL) {
		n = strnlen(msg, DPRPC_ERRMSG_MAX - 1);
		memcpy(f->u.err.msg, msg, n);
	}
	f->u.err.msg[n] = '\0';
	fut_publish(f, DPRPC_FUTURE_FAILED);
	return 0;
}

int
dprpc_future_fail(struct dprpc_future *f, int code, uint16_t origin, const char *msg)
{
	if (f == NULL)
		return -EINVAL;
	return fut_fail(f, code, origin, msg, false, 0);
}

int
fut_fail_consume(struct dprpc_future *f, int code, uint16_t origin, const char *msg)
{
	return fut_fail(f, code, origin, msg, true, 0);
}

int
fut_fail_consume_hint(
	struct dprpc_future *f, int code, uint16_t origin, const char *msg, uint32_t retry_after_us)
{
	return fut_fail(f, code, origin, msg, true, retry_after_us);
}

bool __rte_hot
fut_cancelled(const struct dprpc_future *f)
{
	/* acquire: pairs with the seq_cst store of the final state, so the
	 * error code read after it is the winner's. */
	return dp_load_acquire(&f->state) == DPRPC_FUTURE_FAILED && f->u.err.code == -ECANCELED;
}

void
fut_pool_set_cancel_hook(struct dprpc_future_pool *pool, void (*fn)(void *arg), void *arg)
{
	pool->cancel_hook = fn;
	pool->cancel_arg = arg;
}

void
fut_set_cancel_outcome(struct dprpc_future *f, int outcome)
{
	/* release: pairs with the acquire in dprpc_future_cancel_outcome(). */
	dp_store_release(&f->cancel_outcome, (uint32_t)outcome);
}

int
dprpc_future_cancel_outcome(const struct dprpc_future *f)
{
	if (f == NULL)
		return -EINVAL;
	/* acquire: pairs with the release in fut_set_cancel_outcome(). */
	return (int)dp_load_acquire(&f->cancel_outcome);
}

int
dprpc_future_cancel(struct dprpc_future *f)
{
	uint32_t s;

	if (f == NULL)
		return -EINVAL;
	if (fut_fail(f, -ECANCELED, DPRPC_ORIGIN_LOCAL, "cancelled", false, 0) == 0) {
		if (f->pool->cancel_hook != NULL)
			f->pool->cancel_hook(f->pool->cancel_arg);
		return DPRPC_CANCEL_DONE;
	}
	/* Another completion won: wait for its final state (a completer
	 * stores it before running any callback, so this is short). */
	/* acquire: pairs with the seq_cst store in fut_publish(). */
	while (!fut_is_final(s = dp_load_acquire(&f->state)))
		rte_pause();
	return s == DPRPC_FUTURE_FAILED && f->u.err.code == -ECANCELED ? DPRPC_CANCEL_ALREADY
								       : DPRPC_CANCEL_TOO_LATE;
}

enum dprpc_future_state __rte_hot
dprpc_future_state(const struct dprpc_future *f)
{
	uint32_t s;

	if (unlikely(f == NULL)) {
		rte_errno = EINVAL;
		return DPRPC_FUTURE_FAILED;
	}
	/* acquire: pairs with the seq_cst store of the final state. */
	s = dp_load_acquire(&f->state);
	return fut_is_final(s) ? (enum dprpc_future_state)s : DPRPC_FUTURE_PENDING;
}

bool
dprpc_future_is_done(const struct dprpc_future *f)
{
	if (f == NULL) {
		rte_errno = EINVAL;
		return false;
	}
	return dprpc_future_state(f) != DPRPC_FUTURE_PENDING;
}

const void *__rte_hot
dprpc_future_value(const struct dprpc_future *f, size_t *len)
{
	if (f == NULL || dprpc_future_state(f) != DPRPC_FUTURE_DONE) {
		if (len != NULL)
			*len = 0;
		return NULL;
	}
	if (len != NULL)
		*len = f->len;
	return f->data;
}

const struct dprpc_error *
dprpc_future_error(const struct dprpc_future *f)
{
	if (f == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	return dprpc_future_state(f) == DPRPC_FUTURE_FAILED ? &f->u.err : NULL;
}

int
dprpc_future_wait(struct dprpc_future *f, uint64_t timeout_us)
{
	if (f == NULL)
		return -EINVAL;
	return fut_wait_until(f, fut_deadline(timeout_us));
}

void __rte_hot
dprpc_future_set_progress(struct dprpc_future *f, dprpc_progress_fn_t fn, void *arg)
{
	if (f == NULL)
		return;
	/* Plain stores: set before f is shared (API contract). */
	f->progress_fn = fn;
	f->progress_arg = arg;
}

int __rte_hot
dprpc_future_add_callback(struct dprpc_future *f, dprpc_callback_fn_t cb, void *arg)
{
	struct fut_cb_node *n;

	if (f == NULL || cb == NULL)
		return -EINVAL;
	/* Complete: no node needed (see fut_cb_push). */
	if (fut_completed(f))
		goto run_now;
	n = fut_node_get(f);
	if (n == NULL) {
		/* Out of nodes, but if it completed meanwhile none is needed. */
		if (fut_completed(f))
			goto run_now;
		return -ENOBUFS;
	}
	n->cb = cb;
	n->arg = arg;
	if (fut_cb_push(f, n))
		return 0;
	fut_node_put(f->pool, n); /* completed meanwhile */
run_now:
	cb(f, arg);
	return 0;
}

/* Complete @dst, which a then() step left pending, from what the step
 * returned (@rc, not DPRPC_THEN_DEFERRED: dprpc_then_fn_t).  A dst
 * completed meanwhile by another thread stays as it is (-EALREADY). */
static void
fut_then_settle(struct dprpc_future *dst, int rc)
{
	char msg[DPRPC_ERRMSG_MAX];

	if (rc == 0) {
		(void)dprpc_future_complete(dst, NULL, 0, NULL, NULL);
	} else if (rc < 0) {
		(void)dprpc_future_fail(dst, rc, DPRPC_ORIGIN_LOCAL, "then() step failed");
	} else {
		snprintf(msg, sizeof(msg),
			"then() step returned %d: not 0, DPRPC_THEN_DEFERRED or an errno", rc);
		(void)dprpc_future_fail(dst, -EPROTO, DPRPC_ORIGIN_LOCAL, msg);
	}
}

/* then(): runs on src's completion; arg is dst, with a reference for us. */
static void
fut_then_cb(struct dprpc_future *src, void *arg)
{
	struct dprpc_future *dst = arg;
	int rc = dst->then_fn(src, dst, dst->then_arg);

	if (rc != DPRPC_THEN_DEFERRED && !dprpc_future_is_done(dst))
		fut_then_settle(dst, rc);
	dprpc_future_put(dst);
}

struct dprpc_future *
dprpc_future_then(struct dprpc_future *f, dprpc_then_fn_t fn, void *arg)
{
	struct dprpc_future *dst;

	if (f == NULL || fn == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	dst = dprpc_future_new(f->pool);
	if (dst == NULL)
		return NULL; /* rte_errno = ENOBUFS */
	/* Plain stores: published to the callback by the push (release),
	 * and to dst's waiters by the return (dst is not shared yet).  dst is
	 * completed by f's completion, so whatever makes progress on f makes
	 * it on dst: a waiter on dst calls f's hook. */
	dst->then_fn = fn;
	dst->then_arg = arg;
	dst->progress_fn = f->progress_fn;
	dst->progress_arg = f->progress_arg;
	/* The step's reference, dropped by fut_then_cb() after fn returns. */
	dprpc_future_get(dst);
	if (dprpc_future_add_callback(f, fut_then_cb, dst) != 0) {
		/* Pending with no callback: both puts just recycle dst. */
		dprpc_future_put(dst);
		dprpc_future_put(dst);
		rte_errno = ENOBUFS;
		return NULL;
	}
	return dst;
}

int
dprpc_future_wait_all(struct dprpc_future *const *fs, unsigned int n, uint64_t timeout_us)
{
	uint64_t deadline;
	unsigned int i;
	int rc;

	if (fs == NULL && n > 0)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (fs[i] == NULL)
			return -EINVAL;
	deadline = fut_deadline(timeout_us);
	for (i = 0; i < n; i++) {
		/* A FAILED future may carry -ETIMEDOUT or -EDEADLK itself:
		 * check the state. */
		rc = fut_wait_until(fs[i], deadline);
		if ((rc == -ETIMEDOUT || rc == -EDEADLK) && !dprpc_future_is_done(fs[i]))
			return rc;
	}
	for (i = 0; i < n; i++)
		if (dprpc_future_state(fs[i]) == DPRPC_FUTURE_FAILED)
			return fs[i]->u.err.code;
	return 0;
}

/*
 * The progress hooks of a collect_all() over inputs that different hooks
 * drive (calls to several agents, each polled by its waiters).
 */
struct fut_progress_set {
	unsigned int n;
	struct {
		dprpc_progress_fn_t fn;
		void *arg;
	} h[];
};

/* Call every hook: > 0 if any made progress, 0 if one polled and found
 * nothing, < 0 if all say progress is made elsewhere; -EDEADLK as soon as
 * one says this thread would have to make progress and cannot (an input
 * of that hook may be pending: the result cannot be relied on to come). */
static int
fut_progress_all(void *arg)
{
	const struct fut_progress_set *set = arg;
	int r, work = -1;
	unsigned int i;

	for (i = 0; i < set->n; i++) {
		r = set->h[i].fn(set->h[i].arg);
		if (r == -EDEADLK)
			return r;
		if (r > 0)
			work = (work > 0 ? work : 0) + r;
		else if (r == 0 && work < 0)
			work = 0;
	}
	return work;
}

/* Give @res (not shared yet) a hook that makes progress on all of @fs: the
 * one they share, or a set of their distinct hooks.  -ENOMEM when the set
 * cannot be allocated. */
static int
fut_progress_inherit(struct dprpc_future *res, struct dprpc_future *const *fs, unsigned int n)
{
	struct fut_progress_set *set;
	unsigned int i, j, k = 0;

	for (i = 0; i < n; i++) {
		if (fs[i]->progress_fn == NULL)
			continue;
		if (res->progress_fn == NULL) {
			res->progress_fn = fs[i]->progress_fn;
			res->progress_arg = fs[i]->progress_arg;
		} else if (fs[i]->progress_fn != res->progress_fn ||
			   fs[i]->progress_arg != res->progress_arg) {
			break;
		}
	}
	if (i == n)
		return 0; /* none, or one shared by all */
	set = malloc(sizeof(*set) + n * sizeof(set->h[0]));
	if (set == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (fs[i]->progress_fn == NULL)
			continue;
		for (j = 0; j < k; j++)
			if (set->h[j].fn == fs[i]->progress_fn &&
				set->h[j].arg == fs[i]->progress_arg)
				break;
		if (j == k) {
			set->h[k].fn = fs[i]->progress_fn;
			set->h[k].arg = fs[i]->progress_arg;
			k++;
		}
	}
	set->n = k;
	res->progress_set = set;
	res->progress_fn = fut_progress_all;
	res->progress_arg = set;
	return 0;
}

/*
 * collect_all(): runs once per input.  arg is the result, on which
 * collect_all holds a reference (its completer's).  The records (nodes
 * with keep set) chained from the result hold one input reference each;
 * the last callback drops them, returns the nodes, completes the result.
 */
static void
fut_collect_cb(struct dprpc_future *in, void *arg)
{
	struct dprpc_future *res = arg;
	struct dprpc_future *owner;
	struct fut_cb_node *next;
	struct fut_cb_node *n;

	RTE_SET_USED(in);
	/*
	 * acq_rel: the release half orders this input's completion (this
	 * thread ran it or acquired it) before the decrement; the acquire half
	 * of the last decrement sees every input complete (all decrements form
	 * a release sequence), and the result's seq_cst state store below
	 * passes that on to the result's observers.
	 */
	if (atomic_fetch_sub_explicit(&res->collect_remaining, 1, memory_order_acq_rel) != 1)
		return;
	for (n = res->collect_records; n != NULL; n = next) {
		/* Read before the put: n may be the owner's inline node. */
		next = n->link;
		owner = n->owner;
		fut_node_put(owner->pool, n);
		dprpc_future_put(owner);
	}
	(void)dprpc_future_complete(res, NULL, 0, NULL, NULL);
	dprpc_future_put(res);
}

struct dprpc_future *
dprpc_future_collect_all(
	struct dprpc_future_pool *pool, struct dprpc_future *const *fs, unsigned int n)
{
	struct dprpc_future *res;
	struct dprpc_future *in;
	struct fut_cb_node *records = NULL;
	struct fut_cb_node *next;
	struct fut_cb_node *node;
	unsigned int i;

	if (pool == NULL || (fs == NULL && n > 0)) {
		rte_errno = EINVAL;
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if (fs[i] == NULL) {
			rte_errno = EINVAL;
			return NULL;
		}
	}
	res = dprpc_future_new(pool);
	if (res == NULL)
		return NULL; /* rte_errno = ENOBUFS */
	if (fut_progress_inherit(res, fs, n) != 0) {
		dprpc_future_put(res);
		rte_errno = ENOMEM;
		return NULL;
	}
	if (n == 0) {
		(void)dprpc_future_complete(res, NULL, 0, NULL, NULL);
		return res;
	}

	/*
	 * Take every node first, nothing published yet, so a failure undoes
	 * cleanly.  No malloc: each input's node (inline or from its pool) is
	 * both the callback registration and the record of the reference.
	 */
	for (i = 0; i < n; i++) {
		node = fut_node_get(fs[i]);
		if (node == NULL) {
			for (; records != NULL; records = next) {
				next = records->link;
				fut_node_unclaim(records->owner, records);
			}
			dprpc_future_put(res);
			rte_errno = ENOBUFS;
			return NULL;
		}
		node->cb = fut_collect_cb;
		node->arg = res;
		node->owner = fs[i];
		node->keep = true;
		node->link = records;
		records = node;
	}
	res->collect_records = records;
	/* relaxed: published to the callbacks by the pushes (release). */
	dp_store_relaxed(&res->collect_remaining, n);
	/* The completer's reference on res, dropped by the last callback. */
	dprpc_future_get(res);

	for (node = records; node != NULL; node = next) {
		/*
		 * Read before the push: once the last node is pushed, its
		 * callback may run, free the records and complete res.
		 */
		next = node->link;
		in = node->owner;
		dprpc_future_get(in); /* dropped by the last callback */
		if (!fut_cb_push(in, node))
			fut_collect_cb(in, res); /* already complete: count it now */
	}
	return res;
}
