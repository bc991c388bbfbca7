/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Forks (G2): dprpc_rref_fork() and dprpc_rref_fork_to() write fork data
 * for a handle, holding a reference for the child until the owner
 * confirms it (a pending entry on a user handle, a fork on an owner
 * handle); dprpc_rref_from_fork() turns fork data back into a handle and
 * tells the owner (NOTIFY) or, on the owner, the parent (ACCEPT).  The
 * protocol and the guarantees are in rr_internal.h and docs/rref.md; the
 * handles' invariants at the top of user.c.
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

/* dprpc_rref_fork() and dprpc_rref_fork_to(): @to is the receiver, or
 * RR_NOBODY. */
static int
rr_fork(struct dprpc_rref *r, unsigned int to, void *buf, size_t cap)
{
	struct rr_ctx *ctx;
	struct rr_fork_data d;
	struct rr_pending *p;
	const struct dprpc_error *e;
	uint64_t child;
	uint16_t flags = to != RR_NOBODY ? RR_FD_TO : 0;
	int rc = DPRPC_RREF_FORK_SIZE;

	if (r == NULL || buf == NULL)
		return -EINVAL;
	if (cap < DPRPC_RREF_FORK_SIZE)
		return -ENOSPC;
	ctx = r->ctx;
	e = rr_creation_error(r);
	if (e != NULL)
		return e->code;
	/* A reference of our own for the fork: the application's may be
	 * going (shutdown on another thread), and the new references below
	 * are taken from a count that must not be 0 (table.c). */
	if (!rr_usable(r) || !rr_ref_get_nz(&r->refs))
		return -ESHUTDOWN;
	child = rr_new_id(ctx);
	if (r->is_owner) {
		/* The owner records the child at once.  relaxed: r's
		 * reference keeps r->own's count above 0 (no get unless zero
		 * needed); the fork entry that holds the new one is published
		 * by rr_insert() in rr_fork_add(), and its put is a release. */
		atomic_fetch_add_explicit(&r->own->refs, 1, memory_order_relaxed);
		rc = rr_fork_add(ctx, child, r->own, to, false);
		if (rc != 0) {
			rr_owner_put(r->own);
			goto out;
		}
	} else {
		/* G2: the child keeps this handle's reference until the owner
		 * confirms it (ACCEPT). */
		p = malloc(sizeof(*p));
		if (p == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		p->n.key = child;
		p->parent = r;
		p->to = (uint16_t)to;
		p->deadline_tsc = rr_fork_deadline(ctx);
		/* relaxed: our reference keeps the count above 0; the pending
		 * entry that holds the new one is published by rr_insert()
		 * below, and its put is a release. */
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
	d.to = rte_cpu_to_be_16(to != RR_NOBODY ? (uint16_t)to : 0);
	memcpy(buf, &d, sizeof(d));
	rc = DPRPC_RREF_FORK_SIZE;
out:
	rr_handle_put(r);
	return rc;
}

int
dprpc_rref_fork(struct dprpc_rref *r, void *buf, size_t cap)
{
	return rr_fork(r, RR_NOBODY, buf, cap);
}

int
dprpc_rref_fork_to(struct dprpc_rref *r, unsigned int to, void *buf, size_t cap)
{
	if (r == NULL || to >= dprpc_world_size(r->ctx->a))
		return -EINVAL;
	return rr_fork(r, to, buf, cap);
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
	uint16_t flags, to;

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
	to = rte_be_to_cpu_16(d.to);
	for (i = 0; i < sizeof(d.zero); i++)
		if (d.zero[i] != 0)
			break;
	if (rte_be_to_cpu_32(d.magic) != RR_FORK_MAGIC || i != sizeof(d.zero) ||
		owner >= dprpc_world_size(a) || parent >= dprpc_world_size(a) ||
		rr_creator(id) >= dprpc_world_size(a) || rr_creator(child) != parent ||
		(flags & ~(RR_F_PARENT_UNCF | RR_FD_TO)) != 0 || (!(flags & RR_FD_TO) && to != 0)) {
		rte_errno = EPROTO;
		return NULL;
	}
	if ((flags & RR_FD_TO) && to != ctx->rank) {
		rte_errno = EINVAL; /* made for another worker */
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
	rr_msg_fill(&m, id, child, 0, 0, 0, (uint16_t)parent, flags & RR_F_PARENT_UNCF);
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
