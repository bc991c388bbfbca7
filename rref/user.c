/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The user's side of RRefs: handles (struct dprpc_rref, owner handles and
 * user handles alike) and the public calls on them, fork/from_fork
 * included (the protocol: rr_internal.h; the tables: table.c; the owner's
 * side: owner.c).
 *
 * Design
 * ======
 *
 * Invariants.
 *  - r->refs counts the application's reference (until
 *    dprpc_rref_release() or shutdown) and one per pending child
 *    (rr_pending.parent, dropped when the owner's ACCEPT comes: G2).  The
 *    put that reaches 0 removes the handle from the handles table; an
 *    owner handle then drops its owner reference and is freed after a
 *    grace period; a user handle waits for its creation's answer, then
 *    sends DELETE (G1) and is freed after a grace period.
 *  - r->released goes false -> true once; the exchange that sets it drops
 *    the application's reference, so release() and shutdown
 *    (rr_release_all_handles() in inspect.c) drop it once between them.
 *  - A handle's other fields are written before rr_insert() publishes it
 *    and never change, except value_in_created, set by rr_remote() before
 *    it returns the handle and read only through that handle.
 *  - A user's r->created is completed once: by the answer to its REMOTE or
 *    NOTIFY (rr_creation_done()), or failed here when that message could
 *    not be sent or waited for.
 *
 * Ordering.  Counts as in table.c: acq_rel puts; the increments made here
 * (fork) are relaxed because the caller holds a reference already, and
 * the new holder is published by rr_insert().  The released flag is an
 * acq_rel exchange.  Values and confirmations travel in futures (their
 * final state is a release, future/future.c).
 *
 * Progress.  Lock-free; the only waits are the blocking calls of the API
 * (to_here, rpc_sync), through dp_sync_wait().
 *
 * Reclamation.  As table.c: the handle leaves its table at the last put
 * and rr_handle_free_rcu() frees it (and drops r->created) after a grace
 * period, queued at once for an owner handle, by rr_user_finish() for a
 * user once its creation is answered.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>
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
	struct dprpc_rref *r = caa_container_of(h, struct dprpc_rref, n.rcu);

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
	return r;
}

/* An owner handle on @o, taking over a reference the caller holds. */
static struct dprpc_rref *
rr_handle_owner(struct rr_ctx *ctx, struct rr_owner *o)
{
	struct dprpc_rref *r = rr_handle_alloc(ctx, rr_new_id(ctx), o->n.key, ctx->rank);

	if (r == NULL)
		return NULL;
	r->is_owner = true;
	r->own = o;
	(void)rr_insert(ctx->handles, &r->n); /* fresh key */
	rr_inc(&ctx->n_owner_handles);
	return r;
}

/* A user handle, unconfirmed.  Until rr_user_confirm_by() it is only the
 * caller's. */
static struct dprpc_rref *
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
static void
rr_handle_user_discard(struct dprpc_rref *r)
{
	struct rr_ctx *ctx = r->ctx;

	rr_dec(&ctx->n_users);
	(void)dprpc_future_fail(r->created, -ECANCELED, ctx->rank, "not sent");
	(void)rr_remove(ctx->handles, &r->n, rr_handle_free_rcu);
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
static void
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
	dp_rcu_read_lock();
	urcu_qsbr_call_rcu(&r->n.rcu, rr_handle_free_rcu);
	dp_rcu_read_unlock();
}

void
rr_handle_put(struct dprpc_rref *r)
{
	struct rr_ctx *ctx = r->ctx;

	/*
	 * acq_rel, as rr_owner_put(): the release half orders this holder's
	 * accesses before the decrement, the acquire half lets the thread
	 * that reaches 0 see every holder's before it removes the handle;
	 * the count never goes up from 0 (table.c), so that thread is alone.
	 */
	if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) != 1)
		return;
	/* One read-side section for the whole release (nested ones inside
	 * cost nothing). */
	dp_rcu_read_lock();
	if (cds_lfht_del(ctx->handles, &r->n.node) != 0) {
		dp_rcu_read_unlock();
		return; /* the agent's teardown took it */
	}
	if (r->is_owner) {
		rr_dec(&ctx->n_owner_handles);
		rr_owner_put(r->own);
		urcu_qsbr_call_rcu(&r->n.rcu, rr_handle_free_rcu);
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

static struct dprpc_rref *
rr_remote(struct rr_ctx *ctx, unsigned int to, uint32_t hid, const struct dprpc_rref *src,
	const void *args, size_t len, uint64_t timeout_us)
{
	struct dprpc_agent *a = ctx->a;
	uint64_t id = rr_new_id(ctx);
	uint16_t flags = src != NULL ? RR_F_PROXY : 0;
	struct dprpc_future *f;
	struct dprpc_rref *r;
	struct rr_owner *o;
	struct rr_msg m;

	if (to >= dprpc_world_size(a) || (args == NULL && len > 0)) {
		rte_errno = EINVAL;
		return NULL;
	}
	if (len > DPRPC_RREF_ARGS_MAX) {
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
		f = rr_call(ctx, to, ctx->h_remote, &m, args, len, timeout_us);
		if (f == NULL) {
			int e = rte_errno;

			rr_handle_put(r);
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
	f = rr_call(ctx, to, ctx->h_remote, &m, args, len, timeout_us);
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

	if (a == NULL || (ctx = rr_ctx_of(a)) == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	return rr_remote(ctx, to, handler_id, NULL, args, len, timeout_us);
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
	if (len > DPRPC_RREF_VALUE_MAX) {
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
	if (r == NULL)
		return -EINVAL;
	/* Acq_rel: one of release() and shutdown drops the reference.  Pairs
	 * with the exchange in rr_release_all_handles() (inspect.c): the RMW
	 * lets exactly one of them see false; the put orders the rest. */
	if (atomic_exchange_explicit(&r->released, true, memory_order_acq_rel))
		return -EINVAL;
	rr_handle_put(r);
	return 0;
}

bool
dprpc_rref_is_owner(const struct dprpc_rref *r)
{
	return r->is_owner;
}

unsigned int
dprpc_rref_owner(const struct dprpc_rref *r)
{
	return r->owner;
}

const char *
dprpc_rref_owner_name(const struct dprpc_rref *r)
{
	return dprpc_worker_name(r->ctx->a, r->owner);
}

uint64_t
dprpc_rref_id(const struct dprpc_rref *r)
{
	return r->rref_id;
}

struct dprpc_agent *
dprpc_rref_agent(const struct dprpc_rref *r)
{
	return r->ctx->a;
}

bool
dprpc_rref_confirmed_by_owner(const struct dprpc_rref *r)
{
	return r->is_owner || dprpc_future_state(r->created) == DPRPC_FUTURE_DONE;
}

struct dprpc_future *
dprpc_rref_creation_future(struct dprpc_rref *r)
{
	struct dprpc_future *f = r->is_owner ? r->own->val : r->created;

	dprpc_future_get(f);
	return f;
}

int
dprpc_rref_local_value(const struct dprpc_rref *r, const void **value, size_t *len)
{
	const struct dprpc_error *e;

	if (r == NULL || value == NULL || len == NULL)
		return -EINVAL;
	if (!r->is_owner)
		return -EPERM;
	switch (dprpc_future_state(r->own->val)) {
	case DPRPC_FUTURE_DONE:
		*value = dprpc_future_value(r->own->val, len);
		return 0;
	case DPRPC_FUTURE_FAILED:
		e = dprpc_future_error(r->own->val);
		return e->code;
	default:
		return -EAGAIN;
	}
}

/* A use of a user RRef whose creation failed: that error. */
static const struct dprpc_error *
rr_creation_error(const struct dprpc_rref *r)
{
	return r->is_owner ? NULL : dprpc_future_error(r->created);
}

struct dprpc_future *
dprpc_rref_to_here_async(struct dprpc_rref *r, uint64_t timeout_us)
{
	const struct dprpc_error *e;
	struct rr_msg m;

	if (r == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	if (r->is_owner) {
		dprpc_future_get(r->own->val);
		return r->own->val;
	}
	if (r->value_in_created) {
		/* The confirmation brings the value (or the creation's error). */
		dprpc_future_get(r->created);
		return r->created;
	}
	e = rr_creation_error(r);
	if (e != NULL)
		return rr_failed_future(r->ctx, e);
	rr_msg_fill(&m, r->rref_id, r->n.key, 0, 0, 0, r->ctx->rank, 0);
	return rr_call(r->ctx, r->owner, r->ctx->h_fetch, &m, NULL, 0, timeout_us);
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
	struct dprpc_future *f;

	/* The agent's poller cannot wait for it (nobody would poll): only a
	 * value already here is returned. */
	if (r != NULL && dp_on_poller(r->ctx->a) && !rr_value_here(r))
		return -EDEADLK;
	f = dprpc_rref_to_here_async(r, timeout_us);
	if (f == NULL)
		return -rte_errno;
	/* A fetch has the call's timeout; the owner's value and a creation
	 * future have none of their own (or the creation's), so the wait is
	 * bounded. */
	if (timeout_us == DPRPC_TIMEOUT_DEFAULT)
		timeout_us = dp_agent_default_timeout_us(r->ctx->a);
	return dp_sync_wait(r->ctx->a, f, timeout_us, out, out_len, err);
}

struct dprpc_future *
dprpc_rref_rpc_async_id(struct dprpc_rref *r, uint32_t handler_id, const void *args, size_t len,
	uint64_t timeout_us)
{
	const struct dprpc_error *e;
	struct rr_msg m;

	if (r == NULL || (args == NULL && len > 0)) {
		rte_errno = EINVAL;
		return NULL;
	}
	e = rr_creation_error(r);
	if (e != NULL)
		return rr_failed_future(r->ctx, e);
	rr_msg_fill(&m, 0, 0, r->rref_id, r->is_owner ? 0 : r->n.key, handler_id, r->ctx->rank, 0);
	return rr_call(r->ctx, r->owner, r->ctx->h_proxy, &m, args, len, timeout_us);
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
dprpc_rref_rpc_sync(struct dprpc_rref *r, const char *handler, const void *args, size_t len,
	uint64_t timeout_us, void *out, size_t *out_len, struct dprpc_error *err)
{
	struct dprpc_future *f;

	/* As dprpc_rpc_sync(): before anything is sent. */
	if (r != NULL && dp_on_poller(r->ctx->a))
		return -EDEADLK;
	f = dprpc_rref_rpc_async(r, handler, args, len, timeout_us);
	if (f == NULL)
		return -rte_errno;
	return dp_sync_wait(r->ctx->a, f, 0, out, out_len, err);
}

struct dprpc_rref *
dprpc_rref_remote(struct dprpc_rref *r, const char *handler, const void *args, size_t len,
	uint64_t timeout_us)
{
	const struct dprpc_error *e;

	if (r == NULL || handler == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	e = rr_creation_error(r);
	if (e != NULL) {
		rte_errno = -e->code;
		return NULL;
	}
	return rr_remote(r->ctx, r->owner, dprpc_handler_id(handler), r, args, len, timeout_us);
}

const void *
dprpc_request_rref_value(const struct dprpc_request *req, size_t *len)
{
	uint32_t n;
	const void *v = dp_req_input(req, &n);

	if (len != NULL)
		*len = n;
	return v;
}

int
dprpc_rref_fork(struct dprpc_rref *r, void *buf, size_t cap)
{
	struct rr_ctx *ctx;
	struct rr_fork_data d;
	struct rr_pending *p;
	const struct dprpc_error *e;
	uint64_t child;
	uint16_t flags = 0;
	int rc;

	if (r == NULL || buf == NULL)
		return -EINVAL;
	if (cap < DPRPC_RREF_FORK_SIZE)
		return -ENOSPC;
	ctx = r->ctx;
	e = rr_creation_error(r);
	if (e != NULL)
		return e->code;
	child = rr_new_id(ctx);
	if (r->is_owner) {
		/* The owner records the child at once.  relaxed: r's own
		 * reference keeps the count above 0 (no get unless zero
		 * needed); the fork entry that holds the new one is published
		 * by rr_insert() in rr_fork_add(), and its put is a release. */
		atomic_fetch_add_explicit(&r->own->refs, 1, memory_order_relaxed);
		rc = rr_fork_add(ctx, child, r->own);
		if (rc != 0) {
			rr_owner_put(r->own);
			return rc;
		}
	} else {
		/* G2: the child keeps this handle's reference until the owner
		 * confirms it (ACCEPT). */
		p = malloc(sizeof(*p));
		if (p == NULL)
			return -ENOMEM;
		p->n.key = child;
		p->parent = r;
		/* relaxed: the caller's reference keeps the count above 0;
		 * the pending entry that holds the new one is published by
		 * rr_insert() below, and its put is a release. */
		atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
		(void)rr_insert(ctx->pending, &p->n); /* fresh key */
		rr_inc(&ctx->n_pending_forks);
		if (!dprpc_rref_confirmed_by_owner(r))
			flags |= RR_F_PARENT_UNCF;
	}
	memset(&d, 0, sizeof(d));
	d.magic = rte_cpu_to_be_32(RR_FORK_MAGIC);
	d.owner = rte_cpu_to_be_16(r->owner);
	d.parent = rte_cpu_to_be_16(ctx->rank);
	d.rref_id = rte_cpu_to_be_64(r->rref_id);
	d.fork_id = rte_cpu_to_be_64(child);
	d.flags = rte_cpu_to_be_16(flags);
	memcpy(buf, &d, sizeof(d));
	return DPRPC_RREF_FORK_SIZE;
}

struct dprpc_rref *
dprpc_rref_from_fork(struct dprpc_agent *a, const void *buf, size_t len)
{
	struct rr_fork_data d;
	unsigned int owner, parent, i;
	uint64_t id, child;
	struct rr_owner *o;
	struct dprpc_future *f;
	struct dprpc_rref *r;
	struct rr_ctx *ctx;
	struct rr_msg m;
	uint16_t flags;

	if (a == NULL || (ctx = rr_ctx_of(a)) == NULL || buf == NULL ||
		len != DPRPC_RREF_FORK_SIZE) {
		rte_errno = EINVAL;
		return NULL;
	}
	memcpy(&d, buf, sizeof(d));
	owner = rte_be_to_cpu_16(d.owner);
	parent = rte_be_to_cpu_16(d.parent);
	id = rte_be_to_cpu_64(d.rref_id);
	child = rte_be_to_cpu_64(d.fork_id);
	flags = rte_be_to_cpu_16(d.flags);
	for (i = 0; i < sizeof(d.zero); i++)
		if (d.zero[i] != 0)
			break;
	if (rte_be_to_cpu_32(d.magic) != RR_FORK_MAGIC || i != sizeof(d.zero) ||
		owner >= dprpc_world_size(a) || parent >= dprpc_world_size(a) ||
		rr_creator(id) >= dprpc_world_size(a) || rr_creator(child) != parent ||
		(flags & ~RR_F_PARENT_UNCF) != 0) {
		rte_errno = EPROTO;
		return NULL;
	}
	if (owner == ctx->rank) {
		o = rr_owner_get(ctx, id);
		if (o == NULL) {
			rte_errno = ENOENT;
			return NULL;
		}
		r = rr_handle_owner(ctx, o);
		if (r == NULL) {
			rr_owner_put(o);
			return NULL;
		}
		if (parent == ctx->rank)
			(void)rr_fork_del(ctx, child, id); /* the fork is now a local handle */
		else
			rr_send_accept(ctx, parent, id, child);
		return r;
	}
	r = rr_handle_user(ctx, child, id, owner);
	if (r == NULL)
		return NULL;
	rr_msg_fill(&m, id, child, 0, 0, 0, (uint16_t)parent, flags);
	f = rr_call(ctx, owner, ctx->h_notify, &m, NULL, 0, DPRPC_TIMEOUT_DEFAULT);
	if (f == NULL) {
		int e = rte_errno;

		rr_handle_user_discard(r);
		rte_errno = e;
		return NULL;
	}
	rr_user_confirm_by(r, f);
	return r;
}
