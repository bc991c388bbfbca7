/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The owner's side of RRefs: owner values, the forks (users) the owner
 * knows, and the owner's handlers of the RRef messages (the protocol:
 * rr_internal.h; the tables and their references: table.c).
 *
 * Design
 * ======
 *
 * Threads.  The handlers (rr_h_*) are registered inline: they run on the
 * owner's poller.  The request hooks and the value callbacks run where the
 * reply is made or the value completes (a handler lcore for a user handler
 * redispatched to one).  Owner entries are also made and put by
 * application threads (dprpc_rref_create_local(), remote() to self,
 * release, fork).
 *
 * Invariants.
 *  - o->refs counts the entry's forks (one each, rr_fork.own), its local
 *    owner handles, the placeholder while o->placeholder is true, one per
 *    request working on it (hook_arg[0], hook_arg[1]: released by the
 *    request's release hook) and a handler's transient reference.  The put
 *    that reaches 0 removes the entry (table.c).
 *  - o->placeholder is set only at creation (rr_owner_new()) and goes
 *    true -> false at most once: the exchange that finds it true takes
 *    over the placeholder's reference, and exactly one of the REMOTE
 *    (rr_h_remote()) and the creator's DELETE (rr_h_delete()) can do so.
 *  - o->val is completed once (the future's own CAS picks one completer):
 *    by the creating handler's reply (rr_capture_reply()), its release
 *    unanswered (rr_capture_release()), the creator's DELETE of a
 *    placeholder, or the agent's quiesce (ctx.c).  Everything else that
 *    needs the value registers a callback on it (rr_wait_value()).
 *  - A fork entry holds one reference on its owner entry from
 *    rr_fork_add() until the rr_fork_drop() that removes it (by id:
 *    rr_fork_del(); a dead holder or an expired fork: peers.c).
 *  - ctx->n_unconfirmed counts the fork entries whose confirmed flag is
 *    false; the flag goes false -> true once, by the exchange of
 *    rr_fork_claim() (the holder's NOTIFY) or of rr_fork_drop(), and the
 *    one that sees false counts the fork out.
 *
 * Ordering.  Counts as in table.c (acq_rel puts, acquire get unless zero,
 * relaxed increments by a holder).  The placeholder exchanges are acq_rel.
 * The value is published by its future (a release of the final state,
 * acquire loads by readers, future/future.c).
 *
 * Progress.  Lock-free: no handler waits; a request that needs a value
 * that is not there yet is answered from the value's callback.
 *
 * Reclamation.  As table.c: the last rr_owner_put() removes the entry
 * (rr_remove()) and rr_owner_free_rcu() drops its value after a grace
 * period; rr_fork_drop() removes a fork entry (freed by rr_free_node_rcu())
 * and then puts the owner reference it held.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_errno.h>

#include <urcu/urcu-qsbr.h>
#include <urcu/rculfhash.h>

#include <dprpc/dprpc_rref.h>
#include <dprpc/dprpc_agent.h>
#include <dprpc/dprpc_handler.h>
#include <dprpc/dprpc_stats.h>
#include <dprpc/dprpc_world.h>

#include "dp_ext.h"
#include "dp_rcu.h"
#include "dprpc_atomic.h"
#include "rr_internal.h"

/* --- owner values ------------------------------------------------------- */

void
rr_owner_free_rcu(struct rcu_head *h)
{
	struct rr_owner *o = rr_container_of(h, struct rr_owner, n.rcu);
	struct rr_ctx *ctx = o->ctx;
	size_t len;

	/* The application's look at a value that is going (the agent's
	 * configuration); the value stays the future's until the put. */
	if (ctx->value_free != NULL && dprpc_future_state(o->val) == DPRPC_FUTURE_DONE) {
		const void *v = dprpc_future_value(o->val, &len);

		ctx->value_free(v, len, ctx->value_free_arg);
	}
	dprpc_future_put(o->val);
	free(o);
}

void
rr_owner_put(struct rr_owner *o)
{
	struct rr_ctx *ctx = o->ctx;

	/*
	 * Release/acquire: every holder's accesses happen before the free.
	 * The release half pairs with the acquire half of the decrement that
	 * reaches 0 (and with rr_ref_get_nz()'s acquire), the acquire half
	 * with the release of every earlier put; a count at 0 is never
	 * revived (table.c), so this thread alone removes the entry.
	 */
	if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (rr_remove(ctx, ctx->owners, &o->n, rr_owner_free_rcu))
		rr_dec(&ctx->n_owners);
}

struct rr_owner *
rr_owner_get(struct rr_ctx *ctx, uint64_t id)
{
	struct rr_owner *o = NULL;
	struct rr_node *n;

	dp_rcu_read_lock();
	n = rr_find(ctx->owners, id);
	if (n != NULL) {
		o = rr_container_of(n, struct rr_owner, n);
		if (!rr_ref_get_nz(&o->refs))
			o = NULL;
	}
	dp_rcu_read_unlock();
	return o;
}

/* A new owner entry with @refs references, inserted.  NULL with rte_errno
 * ENOBUFS/ENOMEM, or EEXIST (the id is taken). */
struct rr_owner *
rr_owner_new(struct rr_ctx *ctx, uint64_t id, uint32_t refs, bool placeholder)
{
	struct rr_owner *o = calloc(1, sizeof(*o));

	if (o == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	o->val = dprpc_future_new(ctx->fpool);
	if (o->val == NULL) {
		free(o);
		rte_errno = ENOBUFS;
		return NULL;
	}
	dprpc_future_set_progress(o->val, dp_progress, ctx->a);
	o->n.key = id;
	o->ctx = ctx;
	/* Plain initialisation: o is not shared yet; rr_insert() publishes it
	 * (cds_lfht_add_unique()'s full barrier, table.c). */
	atomic_init(&o->refs, refs);
	atomic_init(&o->placeholder, placeholder);
	if (rr_insert(ctx->owners, &o->n) != 0) {
		dprpc_future_put(o->val);
		free(o);
		rte_errno = EEXIST;
		return NULL;
	}
	rr_inc(&ctx->n_owners);
	return o;
}

/* The owner entry a request from @caller names, or a placeholder for it
 * when its creation may still be on its way (see rr_internal.h).  NULL
 * if it is unknown here and cannot be on its way. */
static struct rr_owner *
rr_owner_get_or_wait(struct rr_ctx *ctx, uint64_t id, bool may_be_coming)
{
	struct rr_owner *o = rr_owner_get(ctx, id);

	if (o != NULL || !may_be_coming || rr_creator(id) == ctx->rank)
		return o;
	o = rr_owner_new(ctx, id, 2, true); /* the creator's fork, and ours */
	if (o == NULL && rte_errno == EEXIST)
		o = rr_owner_get(ctx, id);
	return o;
}

/* --- forks (owner side) ------------------------------------------------- */

/* Record user @fork_id of @o, held by worker @holder (RR_NOBODY: not known
 * yet), taking over one reference the caller holds on @o.  An unconfirmed
 * fork (made by the owner's own fork, not yet rebuilt) expires after the
 * fork timeout (peers.c).  0, -EEXIST (already known: the reference stays
 * the caller's), -ENOMEM. */
int
rr_fork_add(struct rr_ctx *ctx, uint64_t fork_id, struct rr_owner *o, unsigned int holder,
	bool confirmed)
{
	struct rr_fork *f = malloc(sizeof(*f));

	if (f == NULL)
		return -ENOMEM;
	f->n.key = fork_id;
	f->own = o;
	/* Plain initialisation: f is not shared yet; rr_insert() publishes
	 * it (cds_lfht_add_unique()'s full barrier, table.c). */
	atomic_init(&f->holder, (uint16_t)holder);
	atomic_init(&f->confirmed, confirmed);
	f->deadline_tsc = !confirmed ? rr_fork_deadline(ctx) : 0;
	if (!confirmed)
		rr_inc(&ctx->n_unconfirmed); /* before it can be found and dropped */
	if (rr_insert(ctx->forks, &f->n) != 0) {
		if (!confirmed)
			rr_dec(&ctx->n_unconfirmed);
		free(f);
		return -EEXIST;
	}
	rr_inc(&ctx->n_forks);
	return 0;
}

/* Remove fork @f (found inside a read-side section) and drop its owner
 * reference.  False if another thread removed it first. */
bool
rr_fork_drop(struct rr_ctx *ctx, struct rr_fork *f)
{
	if (!rr_remove(ctx, ctx->forks, &f->n, rr_free_node_rcu))
		return false;
	rr_dec(&ctx->n_forks);
	/* acq_rel: pairs with the exchange in rr_fork_claim(); exactly one
	 * of the two sees false and counts the fork out of n_unconfirmed
	 * (only the flag matters). */
	if (!atomic_exchange_explicit(&f->confirmed, true, memory_order_acq_rel))
		rr_dec(&ctx->n_unconfirmed);
	rr_owner_put(f->own);
	return true;
}

/* Forget user @fork_id of RRef @rref_id.  0 or -ENOENT. */
int
rr_fork_del(struct rr_ctx *ctx, uint64_t fork_id, uint64_t rref_id)
{
	struct rr_node *n;
	bool done = false;

	dp_rcu_read_lock();
	n = rr_find(ctx->forks, fork_id);
	if (n != NULL) {
		struct rr_fork *f = rr_container_of(n, struct rr_fork, n);

		done = f->own->n.key == rref_id && rr_fork_drop(ctx, f);
	}
	dp_rcu_read_unlock();
	return done ? 0 : -ENOENT;
}

/* The NOTIFY of a child forked by the owner itself: the fork it recorded
 * then is now held, and confirmed, by @holder.  False if unknown. */
static bool
rr_fork_claim(struct rr_ctx *ctx, uint64_t fork_id, uint64_t rref_id, unsigned int holder)
{
	struct rr_node *n;
	struct rr_fork *f;
	bool known;

	dp_rcu_read_lock();
	n = rr_find(ctx->forks, fork_id);
	f = n != NULL ? rr_container_of(n, struct rr_fork, n) : NULL;
	known = f != NULL && f->own->n.key == rref_id;
	if (known) {
		/* relaxed: read by the poller (peers.c), which runs this too. */
		atomic_store_explicit(&f->holder, (uint16_t)holder, memory_order_relaxed);
		/* acq_rel: pairs with the exchange in rr_fork_drop(); exactly
		 * one of the two counts the fork out of n_unconfirmed. */
		if (!atomic_exchange_explicit(&f->confirmed, true, memory_order_acq_rel))
			rr_dec(&ctx->n_unconfirmed);
	}
	dp_rcu_read_unlock();
	return known;
}

/* --- the owner's handlers ----------------------------------------------- */

static const struct rr_msg *
rr_parse(struct dprpc_request *req, const void **args, uint32_t *alen)
{
	size_t len;
	const uint8_t *p = dprpc_request_payload(req, &len);

	if (len < sizeof(struct rr_msg))
		return NULL;
	*args = p + sizeof(struct rr_msg);
	*alen = (uint32_t)(len - sizeof(struct rr_msg));
	return (const struct rr_msg *)p;
}

static void
rr_reply_error(struct dprpc_request *req, int code, const char *msg)
{
	if (dprpc_reply_error(req, code, msg) == -ENOBUFS)
		dp_request_free(req); /* the caller's call times out */
}

static void
rr_reply(struct dprpc_request *req, const void *data, size_t len)
{
	if (dprpc_reply(req, data, len) == -ENOBUFS)
		rr_reply_error(req, -ENOBUFS, "no mbuf for the RRef reply");
}

static void
rr_reply_with_error_of(struct dprpc_request *req, const struct dprpc_error *e)
{
	rr_reply_error(req, e->code, e->msg);
}

/* Hand the request to the handler the caller named. */
static void
rr_dispatch(struct dprpc_request *req, uint32_t hid, const void *args, uint32_t alen)
{
	const char *name = dprpc_agent_name(dprpc_request_agent(req));
	char msg[DPRPC_ERRMSG_MAX];
	int rc = dp_redispatch(req, hid, args, alen);

	if (rc == 0)
		return;
	if (rc == -ENOENT)
		snprintf(msg, sizeof(msg), "no handler with id 0x%08x on worker %s", hid, name);
	else
		snprintf(msg, sizeof(msg), "handler pool of worker %s is full", name);
	rr_reply_error(req, rc, msg);
}

/* Requests holding owner references: hook_arg[0] (the value read or made)
 * and hook_arg[1] (a proxy REMOTE's source). */
static void
rr_hold_release(struct dprpc_request *req)
{
	if (dp_req_hook_arg(req, 0) != NULL)
		rr_owner_put(dp_req_hook_arg(req, 0));
	if (dp_req_hook_arg(req, 1) != NULL)
		rr_owner_put(dp_req_hook_arg(req, 1));
}

static void
rr_hold_reply(struct dprpc_request *req, uint32_t *status, const void **data, uint32_t *len)
{
	(void)req;
	(void)status;
	(void)data;
	(void)len;
}

static const struct dp_req_hook rr_hold_hook = {
	.reply = rr_hold_reply,
	.release = rr_hold_release,
};

/* A creating handler's reply becomes the value (or the error) of the
 * entry in hook_arg[0], copied once (dprpc_reply() already refused one
 * over max_msg_size).  The caller gets the error, or its confirmation,
 * which carries the value when it fits one frame (the user then reads it
 * without a message) and is empty otherwise (the user fetches it: a large
 * value travels only when to_here() asks for it).  Run again after a
 * failed send: the value stays. */
static void
rr_capture_reply(struct dprpc_request *req, uint32_t *status, const void **data, uint32_t *len)
{
	struct rr_owner *o = dp_req_hook_arg(req, 0);
	char msg[DPRPC_ERRMSG_MAX];
	const struct dprpc_error *e;
	size_t vlen;

	if (*status == 0) {
		if (dprpc_future_complete_copy(o->val, *data, *len) == -ENOMEM)
			(void)dprpc_future_fail(
				o->val, -ENOMEM, o->ctx->rank, "no memory for the value");
		e = dprpc_future_error(o->val);
		if (e == NULL) {
			*data = dprpc_future_value(o->val, &vlen);
			*len = vlen <= DPRPC_MAX_FRAME_PAYLOAD ? (uint32_t)vlen : 0;
		} else {
			*status = (uint32_t)-e->code;
			*data = e->msg;
			*len = (uint32_t)strlen(e->msg);
		}
		return;
	}
	snprintf(msg, sizeof(msg), "%.*s", (int)*len, (const char *)*data);
	(void)dprpc_future_fail(o->val, -(int)*status, o->ctx->rank, msg);
}

static void
rr_capture_release(struct dprpc_request *req)
{
	struct rr_owner *o = dp_req_hook_arg(req, 0);

	(void)dprpc_future_fail(
		o->val, -ECANCELED, o->ctx->rank, "creating request dropped unanswered");
	rr_hold_release(req);
}

static const struct dp_req_hook rr_capture_hook = {
	.reply = rr_capture_reply,
	.release = rr_capture_release,
};

/* The value a proxy (or proxy REMOTE) waits for is there: run the handler
 * on it.  hook_arg[0] or hook_arg[1] holds the source entry. */
static void
rr_proxy_ready(struct dprpc_future *val, void *arg)
{
	struct dprpc_request *req = arg;
	const struct rr_msg *m;
	const void *args;
	uint32_t alen;
	size_t vlen;

	rr_dec(&rr_ctx_of(dprpc_request_agent(req))->requests_waiting);
	if (dprpc_future_state(val) != DPRPC_FUTURE_DONE) {
		rr_reply_with_error_of(req, dprpc_future_error(val));
		return;
	}
	m = rr_parse(req, &args, &alen);
	const void *v = dprpc_future_value(val, &vlen);

	dp_req_set_input(req, v, (uint32_t)vlen);
	rr_dispatch(req, rte_be_to_cpu_32(m->handler_id), args, alen);
}

static void
rr_fetch_ready(struct dprpc_future *val, void *arg)
{
	struct dprpc_request *req = arg;
	const void *v;
	size_t len;

	rr_dec(&rr_ctx_of(dprpc_request_agent(req))->requests_waiting);
	if (dprpc_future_state(val) != DPRPC_FUTURE_DONE) {
		rr_reply_with_error_of(req, dprpc_future_error(val));
		return;
	}
	v = dprpc_future_value(val, &len);
	rr_reply(req, v, len);
}

/* Keep @req until @o's value is there (@cb answers it or passes it on).
 * Counted in requests_waiting until @cb runs (it may run at once). */
static void
rr_wait_value(struct dprpc_request *req, struct rr_owner *o, dprpc_callback_fn_t cb)
{
	rr_inc(&o->ctx->requests_waiting);
	if (dprpc_future_add_callback(o->val, cb, req) != 0) {
		rr_dec(&o->ctx->requests_waiting);
		rr_reply_error(req, -ENOBUFS, "no callback node to wait for the RRef value");
	}
}

static void
rr_not_here(struct dprpc_request *req, uint64_t id)
{
	char msg[DPRPC_ERRMSG_MAX];

	snprintf(msg, sizeof(msg), "RRef %" PRIx64 " is not on worker %s (deleted?)", id,
		dprpc_agent_name(dprpc_request_agent(req)));
	rr_reply_error(req, -ENOENT, msg);
}

/* FETCH, PROXY and a proxy REMOTE's source: the caller's fork may be the creator's (fork == rref
 * id), whose REMOTE may still be on its way. */
static struct rr_owner *
rr_owner_for(struct rr_ctx *ctx, struct dprpc_request *req, uint64_t id, uint64_t fork)
{
	return rr_owner_get_or_wait(
		ctx, id, fork == id && rr_creator(id) == dprpc_request_caller(req));
}

int
rr_h_remote(struct dprpc_request *req, void *arg)
{
	struct rr_ctx *ctx = arg;
	const void *args;
	uint32_t alen;
	const struct rr_msg *m = rr_parse(req, &args, &alen);
	struct rr_owner *o, *src;
	uint64_t id, fork;
	uint16_t flags;
	int rc;

	if (m == NULL)
		return -EPROTO;
	id = rte_be_to_cpu_64(m->rref_id);
	fork = rte_be_to_cpu_64(m->fork_id);
	flags = rte_be_to_cpu_16(m->flags);
	o = rr_owner_get(ctx, id);
	if (flags & RR_F_LOCAL) {
		if (o == NULL) {
			rr_not_here(req, id); /* released before it was made */
			return 0;
		}
	} else if (o != NULL) {
		/*
		 * A placeholder's reference becomes the creator's fork.
		 * acq_rel: pairs with the exchange in rr_h_delete(); the RMW
		 * alone makes exactly one of the two find true and take the
		 * reference, and its release/acquire halves order what the
		 * other did with the entry before what the taker does after
		 * (both run on the poller, where program order gives as much).
		 */
		if (!atomic_exchange_explicit(&o->placeholder, false, memory_order_acq_rel)) {
			rr_owner_put(o);
			rr_reply_error(req, -EEXIST, "RRef created twice");
			return 0;
		}
		rc = rr_fork_add(ctx, fork, o, dprpc_request_caller(req), true);
		if (rc != 0) {
			rr_owner_put(o); /* the placeholder's */
			rr_owner_put(o);
			rr_reply_error(req, rc, "cannot record the creator's fork");
			return 0;
		}
	} else {
		o = rr_owner_new(ctx, id, 2, false); /* the fork, and ours */
		if (o == NULL) {
			rr_reply_error(req, -rte_errno, "cannot make the RRef on its owner");
			return 0;
		}
		rc = rr_fork_add(ctx, fork, o, dprpc_request_caller(req), true);
		if (rc != 0) {
			rr_owner_put(o);
			rr_owner_put(o);
			rr_reply_error(req, rc, "cannot record the creator's fork");
			return 0;
		}
	}
	dp_req_set_hook(req, &rr_capture_hook, o, NULL);
	/* From here the request is passed on (to the user's handler, or to
	 * the value's callback), answered or not yet: deferred. */
	if (!(flags & RR_F_PROXY)) {
		rr_dispatch(req, rte_be_to_cpu_32(m->handler_id), args, alen);
		return DPRPC_DEFERRED;
	}
	src = rr_owner_for(ctx, req, rte_be_to_cpu_64(m->src_id), rte_be_to_cpu_64(m->src_fork));
	if (src == NULL) {
		rr_not_here(req, rte_be_to_cpu_64(m->src_id));
		return 0;
	}
	dp_req_set_hook_arg(req, 1, src);
	rr_wait_value(req, src, rr_proxy_ready);
	return DPRPC_DEFERRED;
}

/* FETCH (rref_id, fork_id) and PROXY (src_id, src_fork): hold the entry
 * and answer once its value is there. */
static int
rr_h_wait(struct dprpc_request *req, struct rr_ctx *ctx, bool proxy)
{
	const void *args;
	uint32_t alen;
	const struct rr_msg *m = rr_parse(req, &args, &alen);
	struct rr_owner *o;
	uint64_t id;

	if (m == NULL)
		return -EPROTO;
	id = rte_be_to_cpu_64(proxy ? m->src_id : m->rref_id);
	o = rr_owner_for(ctx, req, id, rte_be_to_cpu_64(proxy ? m->src_fork : m->fork_id));
	if (o == NULL) {
		rr_not_here(req, id);
		return 0;
	}
	dp_req_set_hook(req, &rr_hold_hook, o, NULL);
	rr_wait_value(req, o, proxy ? rr_proxy_ready : rr_fetch_ready);
	return DPRPC_DEFERRED; /* passed on to the value's callback */
}

int
rr_h_fetch(struct dprpc_request *req, void *arg)
{
	return rr_h_wait(req, arg, false);
}

int
rr_h_proxy(struct dprpc_request *req, void *arg)
{
	return rr_h_wait(req, arg, true);
}

void
rr_send_accept(struct rr_ctx *ctx, unsigned int parent, uint64_t rref_id, uint64_t fork)
{
	struct rr_msg m;

	rr_msg_fill(&m, rref_id, fork, 0, 0, 0, ctx->rank, 0);
	rr_send_bg(ctx, parent, ctx->h_accept, &m);
}

int
rr_h_notify(struct dprpc_request *req, void *arg)
{
	struct rr_ctx *ctx = arg;
	const void *args;
	uint32_t alen;
	const struct rr_msg *m = rr_parse(req, &args, &alen);
	struct rr_owner *o;
	unsigned int parent;
	uint64_t id, fork;
	int rc = 0;

	if (m == NULL)
		return -EPROTO;
	id = rte_be_to_cpu_64(m->rref_id);
	fork = rte_be_to_cpu_64(m->fork_id);
	parent = rte_be_to_cpu_16(m->parent);
	if (parent >= dprpc_world_size(dprpc_request_agent(req)))
		return -EPROTO;
	o = rr_owner_get_or_wait(ctx, id, rte_be_to_cpu_16(m->flags) & RR_F_PARENT_UNCF);
	if (o == NULL) {
		rc = -ENOENT;
	} else if (parent == ctx->rank) {
		/* Forked by the owner, which recorded the fork then. */
		if (!rr_fork_claim(ctx, fork, id, dprpc_request_caller(req)))
			rc = -ENOENT;
		rr_owner_put(o);
	} else {
		rc = rr_fork_add(ctx, fork, o, dprpc_request_caller(req), true);
		if (rc != 0)
			rr_owner_put(o);
	}
	/* The parent's pending reference goes whatever the answer: a child
	 * the owner refused will never hold a reference. */
	if (parent != ctx->rank)
		rr_send_accept(ctx, parent, id, fork);
	if (rc == 0)
		rr_reply(req, NULL, 0);
	else if (rc == -ENOENT)
		rr_not_here(req, id);
	else
		rr_reply_error(req, rc, "fork refused by the owner");
	return 0;
}

/* Remove pending child @p (found inside a read-side section) and drop its
 * parent's reference (G2).  False if another thread removed it first. */
bool
rr_pending_drop(struct rr_ctx *ctx, struct rr_pending *p)
{
	struct dprpc_rref *parent = p->parent;

	if (!rr_remove(ctx, ctx->pending, &p->n, rr_free_node_rcu))
		return false;
	rr_dec(&ctx->n_pending_forks);
	rr_handle_put(parent);
	return true;
}

int
rr_h_accept(struct dprpc_request *req, void *arg)
{
	struct rr_ctx *ctx = arg;
	const void *args;
	uint32_t alen;
	const struct rr_msg *m = rr_parse(req, &args, &alen);
	struct rr_node *n;

	if (m == NULL)
		return -EPROTO;
	dp_rcu_read_lock();
	n = rr_find(ctx->pending, rte_be_to_cpu_64(m->fork_id));
	if (n != NULL)
		(void)rr_pending_drop(ctx, rr_container_of(n, struct rr_pending, n));
	dp_rcu_read_unlock();
	if (n == NULL)
		rr_inc(&ctx->deletes_unknown);
	rr_reply(req, NULL, 0);
	return 0;
}

int
rr_h_delete(struct dprpc_request *req, void *arg)
{
	struct rr_ctx *ctx = arg;
	const void *args;
	uint32_t alen;
	const struct rr_msg *m = rr_parse(req, &args, &alen);
	struct rr_owner *o;
	uint64_t id, fork;

	if (m == NULL)
		return -EPROTO;
	id = rte_be_to_cpu_64(m->rref_id);
	fork = rte_be_to_cpu_64(m->fork_id);
	if (rr_fork_del(ctx, fork, id) != 0) {
		/* The creator gives up an RRef whose REMOTE never came (it
		 * failed there): drop the placeholder.  acq_rel: pairs with the
		 * exchange in rr_h_remote(); exactly one of them takes the
		 * placeholder's reference (see there). */
		o = rr_owner_get(ctx, id);
		if (o != NULL && fork == id && rr_creator(id) == dprpc_request_caller(req) &&
			atomic_exchange_explicit(&o->placeholder, false, memory_order_acq_rel)) {
			(void)dprpc_future_fail(o->val, -ECANCELED, ctx->rank,
				"the RRef's creation never reached its owner");
			rr_owner_put(o);
		} else {
			rr_inc(&ctx->deletes_unknown);
		}
		if (o != NULL)
			rr_owner_put(o);
	}
	rr_reply(req, NULL, 0);
	return 0;
}
