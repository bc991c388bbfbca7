/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RRef tables (what each holds: rr_internal.h): lookup, insertion,
 * removal, the references' "get unless zero", and ids.
 *
 * Design
 * ======
 *
 * Objects.  Four cds_lfht tables per agent (QSBR flavour, auto resize),
 * keyed by 64-bit ids.  Every entry starts with a struct rr_node (its
 * table link, its key, its rcu_head); rr_owner and dprpc_rref entries
 * carry a reference count, rr_fork and rr_pending entries none (they are
 * references themselves, on an rr_owner and a dprpc_rref).
 *
 * Invariants.
 *  - A key never changes once its entry is inserted, and a table never
 *    holds two entries with the same key: rr_insert() is
 *    cds_lfht_add_unique(), and a second insertion of a key fails with
 *    -EEXIST (a placeholder and a REMOTE race for an owner entry so).
 *  - A reference count that reached 0 never goes up again: every new
 *    reference is taken either from a count the taker already holds a
 *    reference on (a plain increment) or by rr_ref_get_nz(), which refuses
 *    0.  So the put that reaches 0 is the last, and its thread alone
 *    removes the entry (rr_owner_put() in owner.c; for a handle, whose
 *    reference and memory are counted apart, rr_handle_mem_put() in
 *    user.c).
 *  - An entry is removed by exactly one thread: the one whose
 *    cds_lfht_del() succeeds (rr_remove() returns true to it alone; the
 *    teardown, rr_table_clear(), may be that thread).  The free is
 *    queued with call_rcu() once, for that removal (for a user handle
 *    only once the application released it and its creation is answered:
 *    rr_user_finish() in user.c).
 *
 * Get unless zero.  A lookup runs inside dp_rcu_read_lock() and may find
 * an entry on its way out: its count already 0 and its cds_lfht_del() not
 * yet done, or done with the free still waiting for a grace period.  The
 * memory stays valid for the whole read-side section, so reading the count
 * is safe; rr_ref_get_nz() increments it with a CAS only if it is not 0,
 * and a lookup whose get fails treats the entry as absent.  A CAS on a
 * stale value fails and retries with the value it read, so a count cannot
 * go 0 -> 1 between the check and the increment.
 *
 * Ordering.
 *  - Publication: an entry's fields are written before rr_insert();
 *    cds_lfht_add_unique() issues a full barrier before its commit, and
 *    lookups and walks read the links as rcu_dereference(), so a reader
 *    that finds the entry sees its fields.
 *  - Counts: every put is an acq_rel decrement (rr_owner_put(),
 *    rr_handle_put()): its release half orders the holder's accesses before
 *    it, its acquire half lets the thread that reaches 0 see all of them
 *    before it removes and frees.  rr_ref_get_nz() succeeds with acquire,
 *    pairing with the release of earlier puts.
 *  - Ids: a relaxed fetch_add; only uniqueness matters.
 *
 * Progress.  No lock anywhere.  cds_lfht lookups, insertions and removals
 * are lock-free (resizes run on rculfhash's own worker thread); the
 * get-unless-zero CAS fails only because another thread changed the count;
 * puts are single atomic operations.  The only waits are the teardown's
 * (rr_table_clear(), rr_rcu_drain()).
 *
 * Reclamation.  RCU, QSBR flavour: the thread whose cds_lfht_del()
 * succeeds hands the entry to urcu_qsbr_call_rcu() inside a read-side
 * section (dp_rcu_read_lock() puts the thread online, as the QSBR
 * call_rcu() wants); the callback (rr_node_free_rcu(), which calls the
 * entry's rr_owner_free_rcu(), rr_handle_free_rcu() or rr_free_node_rcu())
 * runs on liburcu's call_rcu thread after a grace period, when no
 * read-side section that could have found the entry is still running, and
 * drops the futures it held.  ctx->rcu_pending counts the entries queued
 * and not yet freed.  The teardown removes what is left itself, after one
 * synchronize_rcu() (rr_table_clear()), and waits for the count to reach
 * 0 (rr_rcu_drain()) rather than for liburcu's urcu_qsbr_barrier(), which
 * waits for the call_rcu thread's next look at its queue (every 10 ms)
 * even when nothing of ours is queued (docs/rref.md, "Shutdown").
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <urcu/urcu-qsbr.h>
#include <urcu/rculfhash.h>

#include "dp_rcu.h"
#include "dprpc_atomic.h"
#include "rr_internal.h"

/* --- tables and references ---------------------------------------------- */

static unsigned long
rr_hash(uint64_t k)
{
	/* A 64-bit finaliser (xor-shift-multiply): ids are sequential. */
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return (unsigned long)k;
}

static int
rr_match(struct cds_lfht_node *node, const void *key)
{
	return rr_container_of(node, struct rr_node, node)->key == *(const uint64_t *)key;
}

/* Inside dp_rcu_read_lock(). */
struct rr_node *
rr_find(struct cds_lfht *ht, uint64_t key)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;

	cds_lfht_lookup(ht, rr_hash(key), rr_match, &key, &it);
	node = cds_lfht_iter_get_node(&it);
	return node != NULL ? rr_container_of(node, struct rr_node, node) : NULL;
}

/* Insert unless the key is there.  0 or -EEXIST. */
int
rr_insert(struct cds_lfht *ht, struct rr_node *n)
{
	struct cds_lfht_node *got;

	cds_lfht_node_init(&n->node);
	dp_rcu_read_lock();
	got = cds_lfht_add_unique(ht, rr_hash(n->key), rr_match, &n->key, &n->node);
	dp_rcu_read_unlock();
	return got == &n->node ? 0 : -EEXIST;
}

/* The grace period's callback of every removed entry: its own free, then
 * the count the teardown waits on (rr_rcu_drain()). */
static void
rr_node_free_rcu(struct rcu_head *h)
{
	struct rr_node *n = rr_container_of(h, struct rr_node, rcu);
	struct rr_ctx *ctx = n->ctx;

	n->free_fn(h); /* frees n */
	/* Release: pairs with the acquire load in rr_rcu_drain(); what the
	 * free did (futures put back to ctx->fpool) happens before the
	 * teardown releases that pool. */
	atomic_fetch_sub_explicit(&ctx->rcu_pending, 1, memory_order_release);
}

/* Remove @n and free it after a grace period.  False if another thread
 * removed it first. */
bool
rr_remove(struct rr_ctx *ctx, struct cds_lfht *ht, struct rr_node *n,
	void (*free_fn)(struct rcu_head *))
{
	bool mine;

	dp_rcu_read_lock();
	mine = cds_lfht_del(ht, &n->node) == 0;
	if (mine) {
		n->ctx = ctx;
		n->free_fn = free_fn;
		/* Relaxed: counted before call_rcu() queues the callback that
		 * counts it off (call_rcu()'s enqueue is a full barrier), so
		 * the count never reaches 0 with it queued; a callback that
		 * removes another entry counts it before its own decrement
		 * (program order on the same counter). */
		atomic_fetch_add_explicit(&ctx->rcu_pending, 1, memory_order_relaxed);
		urcu_qsbr_call_rcu(&n->rcu, rr_node_free_rcu);
	}
	dp_rcu_read_unlock();
	return mine;
}

/* The teardown's removal of what is left in @ht: every entry unlinked,
 * one grace period for them all (synchronize_rcu() on this thread), then
 * freed here with @free_fn.  No call_rcu(): the teardown does not wait for
 * liburcu's call_rcu thread, which looks at its queue every 10 ms.  No
 * other thread uses the agent (dp_ext.h), but callbacks queued earlier may
 * still run on the call_rcu thread and remove entries (a handle's last
 * future put): cds_lfht_del() lets exactly one of us have each. */
void
rr_table_clear(struct cds_lfht *ht, void (*free_fn)(struct rcu_head *))
{
	struct rr_node **gone = NULL, **more;
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;
	size_t n = 0, cap = 0, i;

	if (ht == NULL)
		return;
	dp_rcu_read_lock();
	cds_lfht_for_each(ht, &it, node)
	{
		if (n == cap) {
			cap = cap != 0 ? cap * 2 : 64;
			more = realloc(gone, cap * sizeof(*gone));
			if (more == NULL)
				break; /* the rest stays: leaked, never freed twice */
			gone = more;
		}
		if (cds_lfht_del(ht, node) == 0)
			gone[n++] = rr_container_of(node, struct rr_node, node);
	}
	dp_rcu_read_unlock();
	if (n > 0)
		urcu_qsbr_synchronize_rcu();
	for (i = 0; i < n; i++)
		free_fn(&gone[i]->rcu);
	free(gone);
}

/* Wait until every entry rr_remove() queued has been freed by its
 * callback.  Without one queued (an agent that made no RRef, or whose
 * last went a while ago) it returns at once. */
void
rr_rcu_drain(struct rr_ctx *ctx)
{
	/* Acquire: pairs with the release decrement in rr_node_free_rcu(). */
	while (atomic_load_explicit(&ctx->rcu_pending, memory_order_acquire) != 0)
		usleep(100);
}

/* Acquire on success: the entry's fields, written before its insertion
 * (published by cds_lfht's own barriers), are read after. */
bool
rr_ref_get_nz(_Atomic uint32_t *refs)
{
	/* relaxed: only a guess for the CAS, which checks it; nothing is
	 * read from the entry on the strength of this load. */
	uint32_t v = atomic_load_explicit(refs, memory_order_relaxed);

	/*
	 * acquire on success: pairs with the release half of the acq_rel
	 * decrements of earlier holders (rr_owner_put(), rr_handle_put()), so
	 * what they did with the entry happens before what we do; the fields
	 * written before insertion need no more (see the file comment).
	 * relaxed on failure: the CAS retries with the value it read and
	 * nothing else is read.  Never from 0 (the design's get unless zero).
	 */
	do {
		if (v == 0)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(
		refs, &v, v + 1, memory_order_acquire, memory_order_relaxed));
	return true;
}

uint64_t
rr_new_id(struct rr_ctx *ctx)
{
	/* relaxed: only uniqueness matters (each RMW reads a different
	 * value); nothing is published through the counter. */
	uint64_t n = atomic_fetch_add_explicit(&ctx->next_id, 1, memory_order_relaxed);

	return (uint64_t)ctx->rank << 48 | (n & ((1ULL << 48) - 1));
}

void
rr_free_node_rcu(struct rcu_head *h)
{
	free(rr_container_of(h, struct rr_node, rcu));
}
