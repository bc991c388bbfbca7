/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The user's side of RRefs: handles (struct dprpc_rref, owner handles and
 * user handles alike) and the public calls on them; fork and from_fork are
 * in fork.c (the protocol: rr_internal.h; the tables: table.c; the owner's
 * side: owner.c).
 *
 * Design
 * ======
 *
 * Invariants.
 *  - r->refs counts the references to the RRef: the application's (until
 *    dprpc_rref_release() or shutdown) and one per pending child
 *    (rr_pending.parent, dropped when the owner's ACCEPT comes: G2).  The
 *    put that reaches 0 ends the reference (rr_handle_put()): an owner
 *    handle drops its owner reference; a user handle waits for its
 *    creation's answer, then sends DELETE (G1).  It never goes up from 0.
 *  - r->mem counts the holds on the handle's memory: the application's,
 *    dropped by dprpc_rref_release() alone, and the protocol's, dropped
 *    once the reference has ended (its DELETE sent).  The put that reaches
 *    0 (rr_handle_mem_put()) removes the handle from the handles table and
 *    frees it after a grace period.  So shutdown, which ends the
 *    application's reference but not its hold on the memory, never frees
 *    a handle the application still holds: dprpc_rref_release() after it
 *    reads valid memory.
 *  - r->app goes HELD -> SHUTDOWN -> RELEASED or HELD -> RELEASED, never
 *    back.  Whoever moves it from HELD drops the application's reference
 *    (once: release()'s exchange and shutdown's CAS, rr_release_all_handles()
 *    in inspect.c, cannot both see HELD); release() alone moves it to
 *    RELEASED and drops the application's memory hold.
 *  - A handle stays in the handles table until its memory goes; one whose
 *    refs reached 0 is no longer counted (n_users, n_owner_handles) nor
 *    listed.
 *  - A handle's other fields are written before rr_insert() publishes it
 *    and never change, except value_in_created, set by rr_remote() before
 *    it returns the handle and read only through that handle.  r->own is
 *    valid while refs > 0; r->created as long as the memory (an owner
 *    handle holds a reference on its value's future there, so a value
 *    read through the handle stays valid while the handle does).
 *  - A user's r->created is completed once: by the answer to its REMOTE or
 *    NOTIFY (rr_creation_done()), or failed here when that message could
 *    not be sent or waited for.
 *
 * Ordering.  Counts as in table.c: acq_rel puts; the increments made here
 * (fork) are relaxed because the caller holds a reference already (taken
 * with rr_ref_get_nz() when it may be racing with shutdown), and the new
 * holder is published by rr_insert().  r->app: an acq_rel exchange in
 * release() and an acq_rel CAS in shutdown; the acquire loads that check
 * it before a use pair with them, and only say whether the handle may
 * still be used (a use racing with shutdown may see HELD: it then works
 * on memory that stays valid).  Values and confirmations travel in
 * futures (their final state is a release, future/future.c).
 *
 * Progress.  Lock-free; the only waits are the blocking calls of the API
 * (to_here, rpc_sync), through dp_sync_wait().
 *
 * Reclamation.  As table.c: the handle leaves its table at the last put
 * of r->mem and rr_handle_free_rcu() frees it (and drops r->created)
 * after a grace period.  The protocol's hold goes at the end of the
 * reference: at once for an owner handle, in rr_user_finish() for a user
 * once its creation is answered.
 *
 * About 800 lines, of which a quarter is this design and the comments:
 * every public call on a handle reads the handle's state (refs, mem, app,
 * created) under the invariants above, so the calls stay beside them;
 * forks, which add a reference protocol of their own, are in fork.c.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_errno.h>

#include <urcu/urcu-qsbr.h>
#include <urcu/rculfhash.h>

#include <dprpc/dprpc_rref.h>

#include "dp_ext.h"
#include "dp_rcu.h"
#include "dprpc_atomic.h"
#include "rr_internal.h"

/* --- handles ------------------------------------------------------------ */

void
rr_handle_free_rcu(struct rcu_head *h)
{
	struct dprpc_rref *r = rr_container_of(h, struct dprpc_rref, n.rcu);

	if (r->created != NULL)
		dprpc_future_put(r->created);
	free(r);
}

static struct dprpc_rref *
rr_handle_alloc(struct rr_ctx *ctx, uint64_t key, uint64_t rref_id, unsigned int owner)
{
	struct dprpc_rref *r = calloc(1, sizeof(*r));

	if (r == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	r->n.key = key;
	r->ctx = ctx;
	r->rref_id = rref_id;
	r->owner = (uint16_t)owner;
	/* Plain initialisation: r is not shared yet; rr_insert() publishes
	 * it (cds_lfht_add_unique()'s full barrier, table.c). */
	atomic_init(&r->refs, 1);
	atomic_init(&r->mem, 2); /* the application's and the protocol's */
	atomic_init(&r->app, RR_APP_HELD);
	return r;
}

/* An owner handle on @o, taking over a reference the caller holds. */
struct dprpc_rref *
rr_handle_owner(struct rr_ctx *ctx, struct rr_owner *o)
{
	struct dprpc_rref *r = rr_handle_alloc(ctx, rr_new_id(ctx), o->n.key, ctx->rank);

	if (r == NULL)
		return NULL;
	r->is_owner = true;
	r->own = o;
	/* The value's future outlives the owner entry while the handle's
	 * memory lives (the handle holds it; rr_handle_free_rcu() puts it). */
	r->created = o->val;
	dprpc_future_get(r->created);
	(void)rr_insert(ctx->handles, &r->n); /* fresh key */
	rr_inc(&ctx->n_owner_handles);
	return r;
}

/* A user handle, unconfirmed.  Until rr_user_confirm_by() it is only the
 * caller's. */
struct dprpc_rref *
rr_handle_user(struct rr_ctx *ctx, uint64_t fork_id, uint64_t rref_id, unsigned int owner)
{
	struct dprpc_rref *r = rr_handle_alloc(ctx, fork_id, rref_id, owner);

	if (r == NULL)
		return NULL;
	r->created = dprpc_future_new(ctx->fpool);
	if (r->created == NULL) {
		free(r);
		rte_errno = ENOBUFS;
		return NULL;
	}
	dprpc_future_set_progress(r->created, dp_progress, ctx->a);
	if (rr_insert(ctx->handles, &r->n) != 0) {
		dprpc_future_put(r->created);
		free(r);
		rte_errno = EEXIST;
		return NULL;
	}
	rr_inc(&ctx->n_users);
	return r;
}

/* Undo rr_handle_user() when its first message could not be sent. */
void
rr_handle_user_discard(struct dprpc_rref *r)
{
	struct rr_ctx *ctx = r->ctx;

	rr_dec(&ctx->n_users);
	(void)dprpc_future_fail(r->created, -ECANCELED, ctx->rank, "not sent");
	(void)rr_remove(ctx, ctx->handles, &r->n, rr_handle_free_rcu);
}

static void
rr_creation_done(struct dprpc_future *f, void *arg)
{
	struct dprpc_future *created = arg;
	const struct dprpc_error *e = dprpc_future_error(f);
	const void *v;
	size_t len;

	if (e == NULL) {
		/* A copy, not the frame: a user may live long, an mbuf
		 * should not. */
		v = dprpc_future_value(f, &len);
		if (dprpc_future_complete_copy(created, v, len) == -ENOMEM)
			(void)dprpc_future_fail(
				created, -ENOMEM, DPRPC_ORIGIN_LOCAL, "no memory for the value");
	} else
		(void)dprpc_future_fail(created, e->code, e->origin, e->msg);
	dprpc_future_put(created);
	dprpc_future_put(f);
}

/* The user's confirmation follows the answer to @f (REMOTE or NOTIFY). */
void
rr_user_confirm_by(struct dprpc_rref *r, struct dprpc_future *f)
{
	dprpc_future_get(r->created);
	if (dprpc_future_add_callback(f, rr_creation_done, r->created) != 0) {
		(void)dprpc_future_fail(
			r->created, -ENOBUFS, r->ctx->rank, "no callback node for the creation");
		dprpc_future_put(r->created);
		dprpc_future_put(f);
	}
}

/* The last reference of a user handle is gone and its creation answered:
 * tell the owner (G1), free it. */
static void
rr_user_finish(struct dprpc_future *created, void *arg)
{
	struct dprpc_rref *r = arg;
	struct rr_ctx *ctx = r->ctx;
	struct rr_msg m;

	(void)created;
	rr_msg_fill(&m, r->rref_id, r->n.key, 0, 0, 0, ctx->rank, 0);
	rr_send_bg(ctx, r->owner, ctx->h_delete, &m);
	rr_handle_mem_put(r);
}

/* Drop a hold on the handle's memory; the last one frees it. */
void
rr_handle_mem_put(struct dprpc_rref *r)
{
	/*
	 * acq_rel, as rr_handle_put(): every holder's accesses happen before
	 * the free; the count never goes up, so the thread that reaches 0 is
	 * alone.  rr_remove() fails only if the agent's teardown took the
	 * handle (and frees it) first.
	 */
	if (atomic_fetch_sub_explicit(&r->mem, 1, memory_order_acq_rel) != 1)
		return;
	(void)rr_remove(r->ctx, r->ctx->handles, &r->n, rr_handle_free_rcu);
}

void
rr_handle_put(struct dprpc_rref *r)
{
	struct rr_ctx *ctx = r->ctx;

	/*
	 * acq_rel, as rr_owner_put(): the release half orders this holder's
	 * accesses before the decrement, the acquire half lets the thread
	 * that reaches 0 see every holder's before it ends the reference;
	 * the count never goes up from 0 (table.c), so that thread is alone.
	 * The handle's memory stays (the protocol's hold) until the end is
	 * done.
	 */
	if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) != 1)
		return;
	/* One read-side section for the whole release (nested ones inside
	 * cost nothing). */
	dp_rcu_read_lock();
	if (r->is_owner) {
		rr_dec(&ctx->n_owner_handles);
		rr_owner_put(r->own);
		rr_handle_mem_put(r);
	} else {
		rr_dec(&ctx->n_users);
		/* A user whose creation is unanswered waits for the answer, so
		 * the DELETE cannot overtake the REMOTE or NOTIFY it undoes. */
		if (dprpc_future_add_callback(r->created, rr_user_finish, r) != 0)
			rr_user_finish(r->created, r);
	}
	dp_rcu_read_unlock();
}

/* --- the public calls --------------------------------------------------- */

/* A future from the RRef pool, failed with @e (what a use of an RRef whose
 * creation failed returns).  NULL with rte_errno ENOBUFS. */
static struct dprpc_future *
rr_failed_future(struct rr_ctx *ctx, const struct dprpc_error *e)
{
	struct dprpc_future *f = dprpc_future_new(ctx->fpool);

	if (f == NULL) {
		rte_errno = ENOBUFS;
		return NULL;
	}
	(void)dprpc_future_fail(f, e->code, e->origin, e->msg);
	return f;
}

/* A remote() (of @src's value, if not NULL) with arguments gathered from
 * @cnt buffers, @len bytes in all (checked). */
static struct dprpc_rref *
rr_remote(struct rr_ctx *ctx, unsigned int to, uint32_t hid, const struct dprpc_rref *src,
	const struct iovec *iov, unsigned int cnt, size_t len, uint64_t timeout_us)
{
	struct dprpc_agent *a = ctx->a;
	uint64_t id = rr_new_id(ctx);
	uint16_t flags = src != NULL ? RR_F_PROXY : 0;
	struct dprpc_future *f;
	struct dprpc_rref *r;
	struct rr_owner *o;
	struct rr_msg m;

	if (to >= dprpc_world_size(a)) {
		rte_errno = EINVAL;
		return NULL;
	}
	if (len > ctx->max_msg - sizeof(struct rr_msg)) {
		rte_errno = EMSGSIZE;
		return NULL;
	}
	if (to == ctx->rank) {
		/* Owned here: the entry exists before the handle returns. */
		o = rr_owner_new(ctx, id, 1, false);
		if (o == NULL)
			return NULL;
		r = rr_handle_owner(ctx, o);
		if (r == NULL) {
			rr_owner_put(o);
			return NULL;
		}
		rr_msg_fill(&m, id, 0, src != NULL ? src->rref_id : 0, src != NULL ? src->n.key : 0,
			hid, ctx->rank, flags | RR_F_LOCAL);
		f = rr_call_iov(ctx, to, ctx->h_remote, &m, iov, cnt, len, timeout_us);
		if (f == NULL) {
			int e = rte_errno;

			(void)dprpc_rref_release(r); /* never the application's */
			rte_errno = e;
			return NULL;
		}
		/* The ack matters not: the value's future tells all. */
		dprpc_future_put(f);
		return r;
	}
	r = rr_handle_user(ctx, id, id, to);
	if (r == NULL)
		return NULL;
	r->value_in_created = true;
	rr_msg_fill(&m, id, id, src != NULL ? src->rref_id : 0, src != NULL ? src->n.key : 0, hid,
		ctx->rank, flags);
	f = rr_call_iov(ctx, to, ctx->h_remote, &m, iov, cnt, len, timeout_us);
	if (f == NULL) {
		int e = rte_errno;

		rr_handle_user_discard(r);
		rte_errno = e;
		return NULL;
	}
	rr_user_confirm_by(r, f);
	return r;
}

struct dprpc_rref *
dprpc_remote_id(struct dprpc_agent *a, unsigned int to, uint32_t handler_id, const void *args,
	size_t len, uint64_t timeout_us)
{
	struct rr_ctx *ctx;

	struct iovec v = {.iov_base = (void *)(uintptr_t)args, .iov_len = len};

	if (a == NULL || handler_id == 0 || (ctx = rr_ctx_of(a)) == NULL ||
		(args == NULL && len > 0)) {
		rte_errno = EINVAL;
		return NULL;
	}
	return rr_remote(ctx, to, handler_id, NULL, &v, 1, len, timeout_us);
}

struct dprpc_rref *
dprpc_remote_iov(struct dprpc_agent *a, unsigned int to, uint32_t handler_id,
	const struct iovec *iov, unsigned int iovcnt, uint64_t timeout_us)
{
	struct rr_ctx *ctx;
	size_t len;
	int rc;

	if (a == NULL || handler_id == 0 || (ctx = rr_ctx_of(a)) == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	rc = dp_iov_len(iov, iovcnt, RR_IOV_MAX, &len);
	if (rc != 0) {
		rte_errno = -rc;
		return NULL;
	}
	return rr_remote(ctx, to, handler_id, NULL, iov, iovcnt, len, timeout_us);
}

struct dprpc_rref *
dprpc_remote(struct dprpc_agent *a, const char *to, const char *handler, const void *args,
	size_t len, uint64_t timeout_us)
{
	int rank = dp_resolve(a, to, handler);

	return rank < 0 ? NULL
			: dprpc_remote_id(a, (unsigned int)rank, dprpc_handler_id(handler), args,
				  len, timeout_us);
}

struct dprpc_rref *
dprpc_rref_create_local(struct dprpc_agent *a, const void *value, size_t len)
{
	struct rr_owner *o;
	struct dprpc_rref *r;
	struct rr_ctx *ctx;

	if (a == NULL || (ctx = rr_ctx_of(a)) == NULL || (value == NULL && len > 0)) {
		rte_errno = EINVAL;
		return NULL;
	}
	if (len > ctx->max_msg) {
		rte_errno = EMSGSIZE;
		return NULL;
	}
	o = rr_owner_new(ctx, rr_new_id(ctx), 1, false);
	if (o == NULL)
		return NULL;
	if (dprpc_future_complete_copy(o->val, value, len) != 0) {
		rr_owner_put(o);
		rte_errno = ENOMEM;
		return NULL;
	}
	r = rr_handle_owner(ctx, o);
	if (r == NULL)
		rr_owner_put(o);
	return r;
}

int
dprpc_rref_release(struct dprpc_rref *r)
{
	uint8_t was;

	if (r == NULL)
		return -EINVAL;
	/*
	 * acq_rel: pairs with the CAS in rr_release_all_handles() (inspect.c)
	 * and with a second release's exchange: the RMW lets exactly one of
	 * them move the state from HELD (and drop the application's
	 * reference) and one release move it to RELEASED (and drop the
	 * memory hold); the puts order the rest.
	 */
	was = atomic_exchange_explicit(&r->app, RR_APP_RELEASED, memory_order_acq_rel);
	if (was == RR_APP_RELEASED)
		return -EINVAL;
	if (was == RR_APP_HELD)
		rr_handle_put(r);
	rr_handle_mem_put(r); /* last: r may be gone after it */
	return 0;
}

/* False once the application's reference is gone (released by the
 * application or by shutdown): its uses fail with ESHUTDOWN. */
bool
rr_usable(const struct dprpc_rref *r)
{
	/* acquire: pairs with the exchange in dprpc_rref_release() and the
	 * CAS in rr_release_all_handles(); only the state itself is read
	 * (see the file comment: a racing use works on valid memory). */
	return atomic_load_explicit(&r->app, memory_order_acquire) == RR_APP_HELD;
}

bool
dprpc_rref_is_owner(const struct dprpc_rref *r)
{
	if (r == NULL) {
		rte_errno = EINVAL;
		return false;
	}
	return r->is_owner;
}

unsigned int
dprpc_rref_owner(const struct dprpc_rref *r)
{
	if (r == NULL) {
		rte_errno = EINVAL;
		return UINT_MAX;
	}
	return r->owner;
}

const char *
dprpc_rref_owner_name(const struct dprpc_rref *r)
{
	if (r == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	return dprpc_worker_name(r->ctx->a, r->owner);
}

uint64_t
dprpc_rref_id(const struct dprpc_rref *r)
{
	if (r == NULL) {
		rte_errno = EINVAL;
		return 0; /* ids are never 0 (rr_new_id()) */
	}
	return r->rref_id;
}

struct dprpc_agent *
dprpc_rref_agent(const struct dprpc_rref *r)
{
	if (r == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	return r->ctx->a;
}

bool
dprpc_rref_confirmed_by_owner(const struct dprpc_rref *r)
{
	if (r == NULL) {
		rte_errno = EINVAL;
		return false;
	}
	return r->is_owner || dprpc_future_state(r->created) == DPRPC_FUTURE_DONE;
}

struct dprpc_future *
dprpc_rref_creation_future(struct dprpc_rref *r)
{
	if (r == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	dprpc_future_get(r->created);
	return r->created;
}

int
dprpc_rref_local_value(const struct dprpc_rref *r, const void **value, size_t *len)
{
	const struct dprpc_error *e;

	if (r == NULL || value == NULL || len == NULL)
		return -EINVAL;
	if (!r->is_owner)
		return -EPERM;
	if (!rr_usable(r))
		return -ESHUTDOWN;
	switch (dprpc_future_state(r->created)) {
	case DPRPC_FUTURE_DONE:
		*value = dprpc_future_value(r->created, len);
		return 0;
	case DPRPC_FUTURE_FAILED:
		e = dprpc_future_error(r->created);
		return e->code;
	default:
		return -EAGAIN;
	}
}

/* A use of a user RRef whose creation failed: that error. */
const struct dprpc_error *
rr_creation_error(const struct dprpc_rref *r)
{
	return r->is_owner ? NULL : dprpc_future_error(r->created);
}

/* A FETCH of the value from the owner.  NULL with rte_errno as rr_call(). */
static struct dprpc_future *
rr_fetch(struct dprpc_rref *r, uint64_t timeout_us)
{
	struct rr_msg m;

	rr_msg_fill(&m, r->rref_id, r->n.key, 0, 0, 0, r->ctx->rank, 0);
	return rr_call(r->ctx, r->owner, r->ctx->h_fetch, &m, NULL, 0, timeout_us);
}

/* A user made by remote() whose creation is confirmed without the value:
 * the value is larger than a frame (or empty), and stays on the owner
 * until fetched.  Acquire (the future's state): the value's length is
 * read after. */
static bool
rr_value_at_owner(const struct dprpc_rref *r)
{
	size_t len = 0;

	if (dprpc_future_state(r->created) != DPRPC_FUTURE_DONE)
		return false;
	(void)dprpc_future_value(r->created, &len);
	return len == 0;
}

static void
rr_future_put_cb(void *f)
{
	dprpc_future_put(f);
}

/* A FETCH that follows a confirmation without the value completes the
 * to_here future @arg with the fetched value, without a copy (the value
 * keeps the fetch's future). */
static void
rr_here_fetched(struct dprpc_future *f, void *arg)
{
	struct dprpc_future *dst = arg;
	const struct dprpc_error *e = dprpc_future_error(f);
	const void *v;
	size_t len;

	if (e != NULL) {
		(void)dprpc_future_fail(dst, e->code, e->origin, e->msg);
		dprpc_future_put(f);
	} else {
		v = dprpc_future_value(f, &len);
		if (dprpc_future_complete(dst, v, len, rr_future_put_cb, f) != 0)
			dprpc_future_put(f);
	}
	dprpc_future_put(dst);
}

/* The then() step of to_here on a user made by remote() whose creation
 * was pending: the confirmation's value, or a FETCH when it carries none.
 * @arg is the handle, alive here: this step was registered on its
 * creation future before anything that could free it (rr_user_finish(),
 * a later callback). */
static int
rr_here_step(struct dprpc_future *created, struct dprpc_future *dst, void *arg)
{
	struct dprpc_rref *r = arg;
	const struct dprpc_error *e = dprpc_future_error(created);
	struct dprpc_future *f;
	const void *v;
	size_t len;

	if (e != NULL) {
		(void)dprpc_future_fail(dst, e->code, e->origin, e->msg);
		return 0;
	}
	v = dprpc_future_value(created, &len);
	if (len > 0) {
		dprpc_future_get(created); /* the value stays the confirmation's */
		if (dprpc_future_complete(dst, v, len, rr_future_put_cb, created) != 0)
			dprpc_future_put(created);
		return 0;
	}
	f = rr_fetch(r, DPRPC_TIMEOUT_DEFAULT);
	if (f == NULL) {
		(void)dprpc_future_fail(dst, -rte_errno, r->ctx->rank, "cannot fetch the value");
		return 0;
	}
	dprpc_future_get(dst);
	if (dprpc_future_add_callback(f, rr_here_fetched, dst) != 0) {
		(void)dprpc_future_fail(dst, -ENOBUFS, r->ctx->rank, "no callback node");
		dprpc_future_put(dst);
		dprpc_future_put(f);
		return 0;
	}
	return DPRPC_THEN_DEFERRED; /* rr_here_fetched() completes dst */
}

struct dprpc_future *
dprpc_rref_to_here_async(struct dprpc_rref *r, uint64_t timeout_us)
{
	const struct dprpc_error *e;
	struct dprpc_future *f;

	if (r == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	if (!rr_usable(r)) {
		rte_errno = ESHUTDOWN;
		return NULL;
	}
	if (r->is_owner) {
		dprpc_future_get(r->created);
		return r->created;
	}
	if (r->value_in_created) {
		if (!dprpc_future_is_done(r->created)) {
			/* The confirmation will bring the value, or say it
			 * stays on the owner. */
			f = dprpc_future_then(r->created, rr_here_step, r);
			if (f == NULL)
				rte_errno = ENOBUFS;
			return f;
		}
		if (rr_value_at_owner(r))
			return rr_fetch(r, timeout_us);
		/* The confirmation brought the value (or the creation's
		 * error). */
		dprpc_future_get(r->created);
		return r->created;
	}
	e = rr_creation_error(r);
	if (e != NULL)
		return rr_failed_future(r->ctx, e);
	return rr_fetch(r, timeout_us);
}

/* What to_here() would read without sending anything is complete: the
 * owner's value, the value a confirmation brought, or a creation's error. */
static bool
rr_value_here(const struct dprpc_rref *r)
{
	if (r->is_owner)
		return dprpc_future_is_done(r->own->val);
	if (r->value_in_created)
		return dprpc_future_is_done(r->created);
	return dprpc_future_state(r->created) == DPRPC_FUTURE_FAILED;
}

int
dprpc_rref_to_here(struct dprpc_rref *r, uint64_t timeout_us, void *out, size_t *out_len,
	struct dprpc_error *err)
{
	size_t cap = out_len != NULL ? *out_len : 0;
	struct dprpc_future *f;
	uint64_t t0, spent;
	int rc;

	if (r == NULL)
		return -EINVAL;
	/* The agent's poller cannot wait for it (nobody would poll): only a
	 * value already here is returned. */
	if (dp_on_poller(r->ctx->a) && !rr_value_here(r))
		return -EDEADLK;
	/* A fetch has the call's timeout; the owner's value and a creation
	 * future have none of their own (or the creation's), so the wait is
	 * bounded. */
	if (timeout_us == DPRPC_TIMEOUT_DEFAULT)
		timeout_us = dp_agent_default_timeout_us(r->ctx->a);
	if (r->is_owner || !r->value_in_created || !rr_usable(r) ||
		dprpc_future_is_done(r->created)) {
		f = dprpc_rref_to_here_async(r, timeout_us);
		if (f == NULL)
			return -rte_errno;
		return dp_sync_wait(r->ctx->a, f, timeout_us, out, out_len, err);
	}
	/* A user made by remote(), creation pending: wait for the
	 * confirmation itself (no other future), then fetch if it came
	 * without the value. */
	t0 = rte_rdtsc();
	dprpc_future_get(r->created);
	rc = dp_sync_wait(r->ctx->a, r->created, timeout_us, out, out_len, err);
	if (rc != 0 || !rr_value_at_owner(r))
		return rc;
	if (timeout_us != DPRPC_TIMEOUT_NONE) {
		spent = (rte_rdtsc() - t0) * 1000000 / rte_get_tsc_hz();
		if (spent >= timeout_us)
			return -ETIMEDOUT;
		timeout_us -= spent;
	}
	f = rr_fetch(r, timeout_us);
	if (f == NULL)
		return -rte_errno;
	if (out_len != NULL)
		*out_len = cap;
	return dp_sync_wait(r->ctx->a, f, timeout_us, out, out_len, err);
}

struct dprpc_future *
dprpc_rref_rpc_async_id(struct dprpc_rref *r, uint32_t handler_id, const void *args, size_t len,
	uint64_t timeout_us)
{
	struct iovec v = {.iov_base = (void *)(uintptr_t)args, .iov_len = len};

	if (args == NULL && len > 0) {
		rte_errno = EINVAL;
		return NULL;
	}
	return dprpc_rref_rpc_async_iov(r, handler_id, &v, 1, timeout_us);
}

struct dprpc_future *
dprpc_rref_rpc_async_iov(struct dprpc_rref *r, uint32_t handler_id, const struct iovec *iov,
	unsigned int iovcnt, uint64_t timeout_us)
{
	const struct dprpc_error *e;
	struct rr_msg m;
	size_t len;
	int rc;

	if (r == NULL || handler_id == 0) {
		rte_errno = EINVAL;
		return NULL;
	}
	rc = dp_iov_len(iov, iovcnt, RR_IOV_MAX, &len);
	if (rc != 0) {
		rte_errno = -rc;
		return NULL;
	}
	if (!rr_usable(r)) {
		rte_errno = ESHUTDOWN;
		return NULL;
	}
	e = rr_creation_error(r);
	if (e != NULL)
		return rr_failed_future(r->ctx, e);
	rr_msg_fill(&m, 0, 0, r->rref_id, r->is_owner ? 0 : r->n.key, handler_id, r->ctx->rank, 0);
	return rr_call_iov(r->ctx, r->owner, r->ctx->h_proxy, &m, iov, iovcnt, len, timeout_us);
}

struct dprpc_future *
dprpc_rref_rpc_async(struct dprpc_rref *r, const char *handler, const void *args, size_t len,
	uint64_t timeout_us)
{
	if (handler == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	return dprpc_rref_rpc_async_id(r, dprpc_handler_id(handler), args, len, timeout_us);
}

int
dprpc_rref_rpc_sync_id(struct dprpc_rref *r, uint32_t handler_id, const void *args, size_t len,
	uint64_t timeout_us, void *out, size_t *out_len, struct dprpc_error *err)
{
	struct dprpc_future *f;

	/* As dprpc_rpc_sync(): before anything is sent. */
	if (r != NULL && dp_on_poller(r->ctx->a))
		return -EDEADLK;
	f = dprpc_rref_rpc_async_id(r, handler_id, args, len, timeout_us);
	if (f == NULL)
		return -rte_errno;
	return dp_sync_wait(r->ctx->a, f, 0, out, out_len, err);
}

int
dprpc_rref_rpc_sync(struct dprpc_rref *r, const char *handler, const void *args, size_t len,
	uint64_t timeout_us, void *out, size_t *out_len, struct dprpc_error *err)
{
	/* A NULL name hashes to 0, which the _id form refuses. */
	return dprpc_rref_rpc_sync_id(
		r, dprpc_handler_id(handler), args, len, timeout_us, out, out_len, err);
}

struct dprpc_rref *
dprpc_rref_remote_id(struct dprpc_rref *r, uint32_t handler_id, const void *args, size_t len,
	uint64_t timeout_us)
{
	struct iovec v = {.iov_base = (void *)(uintptr_t)args, .iov_len = len};

	if (args == NULL && len > 0) {
		rte_errno = EINVAL;
		return NULL;
	}
	return dprpc_rref_remote_iov(r, handler_id, &v, 1, timeout_us);
}

struct dprpc_rref *
dprpc_rref_remote(struct dprpc_rref *r, const char *handler, const void *args, size_t len,
	uint64_t timeout_us)
{
	/* A NULL name hashes to 0, which the _id form refuses. */
	return dprpc_rref_remote_id(r, dprpc_handler_id(handler), args, len, timeout_us);
}

struct dprpc_rref *
dprpc_rref_remote_iov(struct dprpc_rref *r, uint32_t handler_id, const struct iovec *iov,
	unsigned int iovcnt, uint64_t timeout_us)
{
	const struct dprpc_error *e;
	size_t len;
	int rc;

	if (r == NULL || handler_id == 0) {
		rte_errno = EINVAL;
		return NULL;
	}
	rc = dp_iov_len(iov, iovcnt, RR_IOV_MAX, &len);
	if (rc != 0) {
		rte_errno = -rc;
		return NULL;
	}
	if (!rr_usable(r)) {
		rte_errno = ESHUTDOWN;
		return NULL;
	}
	e = rr_creation_error(r);
	if (e != NULL) {
		rte_errno = -e->code;
		return NULL;
	}
	return rr_remote(r->ctx, r->owner, handler_id, r, iov, iovcnt, len, timeout_us);
}

const void *
dprpc_request_rref_value(const struct dprpc_request *req, size_t *len)
{
	uint32_t n;
	const void *v;

	if (req == NULL) {
		if (len != NULL)
			*len = 0;
		rte_errno = EINVAL;
		return NULL;
	}
	v = dp_req_input(req, &n);
	if (len != NULL)
		*len = n;
	return v;
}
