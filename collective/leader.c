/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The leader's side of a collective, and the extension (co_ext.h,
 * dp_ext.h) that gives every agent one.
 *
 * Design
 * ======
 *
 * Entries.  One struct co_entry per (group, sequence number) the leader
 * gathers, in a list, oldest first.  A member's request
 * (CO_HANDLER, inline) finds or makes the entry, marks the member arrived
 * and keeps the request deferred in it; the value stays in the request's
 * payload, valid until the request is answered, so nothing is copied until
 * the answer is built.  The last member's arrival builds the answer (the
 * values in rank order) and replies to every kept request with it; the
 * entry goes.
 *
 * Failure.  The entry's deadline is the earliest among its members' (each
 * request says how long its sender still waits, counted from its arrival
 * here).  The extension's timer (every 100 us on the poller) fails an
 * entry past its deadline with ETIMEDOUT, peer_event one whose absent
 * member is declared down (or restarted) with EHOSTDOWN, and a new entry
 * whose group holds a member declared down then fails at its first
 * arrival, with EHOSTDOWN naming the dead (ctx->down), quiesce (the
 * agent's destroy) every pending one with ESHUTDOWN: each kept request is
 * answered with the status and the absent members.  The entry stays, as a
 * failed one, so that a member arriving later for that sequence number is
 * answered the same failure at once (and its next call meets the others'
 * next one); it goes when every member has been answered, or when room is
 * needed (oldest failed first, CO_MAX_ENTRIES).  A new entry when the table
 * is full of pending ones is answered EBUSY.
 *
 * The live world (CO_REQ_LIVE_MAGIC, its entries apart: e->live).  A
 * member declared down is left out (e->gone: ctx->down when the entry is
 * made, peer_event while it waits) instead of failing it; the entry
 * completes once every member arrived or is left out, its answer naming
 * who took part, and stays as failed (EHOSTDOWN, naming those left out)
 * for a member left out that arrives after all.
 *
 * Threads.  Everything here but quiesce and free runs on the agent's
 * poller (the handler is inline; timer and peer_event are the poller's):
 * the list needs no lock, the poll flag orders one poller's work before
 * the next one's.  Nothing here blocks: replies from the poller go out in
 * the same poll.  quiesce and free run on the destroying thread once the
 * lcores stopped (dp_ext.h).  ctx->held is the one atomic: see
 * co_internal.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>

#include <dprpc/dprpc_rpc.h>
#include <dprpc/dprpc_handler.h>
#include <dprpc/dprpc_stats.h>
#include <dprpc/dprpc_world.h>

#include "co_internal.h"

RTE_LOG_REGISTER(co_logtype, dprpc.collective, INFO);

struct co_entry {
	struct co_entry *prev, *next;
	uint64_t group, seq;
	bool live;				      /* the live world's (CO_REQ_LIVE_MAGIC) */
	uint64_t gone;				      /* live: members left out, declared down */
	uint64_t arrived;			      /* members whose request came */
	uint64_t deadline_tsc;			      /* 0: none */
	int status;				      /* 0 pending; a positive errno: failed */
	uint64_t workers;			      /* failed: the workers concerned */
	struct dprpc_request *req[DPRPC_MAX_WORKERS]; /* kept, pending only */
};

static void
co_unlink(struct co_ctx *ctx, struct co_entry *e)
{
	if (e->prev != NULL)
		e->prev->next = e->next;
	else
		ctx->head = e->next;
	if (e->next != NULL)
		e->next->prev = e->prev;
	else
		ctx->tail = e->prev;
	ctx->nb_entries--;
	free(e);
}

static void
co_held_add(struct co_ctx *ctx, int d)
{
	/* Relaxed: see co_internal.h (ctx->held). */
	atomic_fetch_add_explicit(&ctx->held, (unsigned int)d, memory_order_relaxed);
}

/* Answer @req; if the answer cannot go (no mbuf, too long), answer that
 * error instead, and if even that fails release the request unanswered
 * (its caller's call then times out, naming the leader). */
static void
co_answer(struct co_ctx *ctx, struct dprpc_request *req, const void *p, size_t len)
{
	char msg[DPRPC_ERRMSG_MAX];
	int rc = dprpc_reply(req, p, len);

	if (rc == 0)
		return;
	snprintf(msg, sizeof(msg), "collective leader %s could not answer: %s",
		dprpc_agent_name(ctx->a), strerror(-rc));
	if (dprpc_reply_error(req, rc, msg) != 0) {
		CO_LOG(WARNING, "%s", msg);
		dp_request_free(req);
	}
}

/* Answer @req that its collective failed: @status, @workers. */
static void
co_answer_status(struct co_ctx *ctx, struct dprpc_request *req, const struct co_entry *e)
{
	struct co_resp r = {
		.magic = rte_cpu_to_be_32(CO_RESP_MAGIC),
		.status = rte_cpu_to_be_32((uint32_t)e->status),
		.group = rte_cpu_to_be_64(e->group),
		.seq = rte_cpu_to_be_64(e->seq),
		.workers = rte_cpu_to_be_64(e->workers),
	};

	co_answer(ctx, req, &r, sizeof(r));
}

/* Fail pending entry @e with @status (a positive errno), naming @workers:
 * every kept request is answered so.  It stays as a failed entry unless
 * every member has been answered. */
static void
co_fail(struct co_ctx *ctx, struct co_entry *e, int status, uint64_t workers)
{
	unsigned int r;

	e->status = status;
	e->workers = workers;
	for (r = 0; r < DPRPC_MAX_WORKERS; r++) {
		if (e->req[r] == NULL)
			continue;
		co_answer_status(ctx, e->req[r], e);
		e->req[r] = NULL;
		co_held_add(ctx, -1);
	}
	if (e->arrived == e->group)
		co_unlink(ctx, e);
}

/* Every member came: answer them all with the values, and let go. */
static void
co_complete(struct co_ctx *ctx, struct co_entry *e)
{
	struct co_resp *r;
	size_t total = sizeof(*r), len;
	unsigned int r_, count = 0;
	uint8_t *buf, *p;

	for (r_ = 0; r_ < DPRPC_MAX_WORKERS; r_++)
		if (e->req[r_] != NULL) {
			(void)dprpc_request_payload(e->req[r_], &len);
			total += co_item_size((uint32_t)(len - sizeof(struct co_req)));
			count++;
		}
	buf = malloc(total);
	if (buf == NULL) {
		co_fail(ctx, e, ENOMEM, 0);
		return;
	}
	r = (struct co_resp *)buf;
	*r = (struct co_resp){
		.magic = rte_cpu_to_be_32(CO_RESP_MAGIC),
		.group = rte_cpu_to_be_64(e->group),
		.seq = rte_cpu_to_be_64(e->seq),
		/* The live world's: who took part. */
		.workers = rte_cpu_to_be_64(e->live ? e->arrived : 0),
		.count = rte_cpu_to_be_32(count),
	};
	p = buf + sizeof(*r);
	for (r_ = 0; r_ < DPRPC_MAX_WORKERS; r_++) {
		const uint8_t *v;
		struct co_item it;
		uint32_t vlen;

		if (e->req[r_] == NULL)
			continue;
		v = dprpc_request_payload(e->req[r_], &len);
		vlen = (uint32_t)(len - sizeof(struct co_req));
		it = (struct co_item){.len = rte_cpu_to_be_32(vlen)};
		memcpy(p, &it, sizeof(it));
		memcpy(p + sizeof(it), v + sizeof(struct co_req), vlen);
		memset(p + sizeof(it) + vlen, 0, co_item_size(vlen) - sizeof(it) - vlen);
		p += co_item_size(vlen);
	}
	if (total > dp_agent_max_msg(ctx->a)) {
		/* Too long for this leader to send: every member learns it. */
		free(buf);
		co_fail(ctx, e, EMSGSIZE, 0);
		return;
	}
	for (r_ = 0; r_ < DPRPC_MAX_WORKERS; r_++) {
		if (e->req[r_] == NULL)
			continue;
		co_answer(ctx, e->req[r_], buf, total);
		e->req[r_] = NULL;
		co_held_add(ctx, -1);
	}
	free(buf);
	if (e->arrived == e->group) {
		co_unlink(ctx, e);
		return;
	}
	/* The live world's, some left out: kept as failed for them, should
	 * one arrive after all (the leader took it for down). */
	e->status = EHOSTDOWN;
	e->workers = e->gone;
}

/* A live entry: complete once every member arrived or was left out. */
static void
co_live_check(struct co_ctx *ctx, struct co_entry *e)
{
	if (e->live && e->status == 0 && (e->arrived | e->gone) == e->group)
		co_complete(ctx, e);
}

static struct co_entry *
co_find(struct co_ctx *ctx, uint64_t group, uint64_t seq, bool live)
{
	struct co_entry *e;

	for (e = ctx->head; e != NULL; e = e->next)
		if (e->group == group && e->seq == seq && e->live == live)
			return e;
	return NULL;
}

/* A new entry at the tail, making room by dropping the oldest failed one;
 * NULL when the table is full of pending ones or no memory. */
static struct co_entry *
co_new(struct co_ctx *ctx, uint64_t group, uint64_t seq, bool live)
{
	struct co_entry *e;

	if (ctx->nb_entries >= CO_MAX_ENTRIES) {
		for (e = ctx->head; e != NULL && e->status == 0; e = e->next)
			;
		if (e == NULL)
			return NULL;
		co_unlink(ctx, e);
	}
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return NULL;
	e->group = group;
	e->seq = seq;
	e->live = live;
	e->prev = ctx->tail;
	if (ctx->tail != NULL)
		ctx->tail->next = e;
	else
		ctx->head = e;
	ctx->tail = e;
	ctx->nb_entries++;
	return e;
}

static int
co_refuse(struct dprpc_request *req, const char *why)
{
	char msg[DPRPC_ERRMSG_MAX];

	snprintf(msg, sizeof(msg), "bad collective request from worker %u: %s",
		dprpc_request_caller(req), why);
	return dprpc_reply_error(req, -EPROTO, msg);
}

/* CO_HANDLER: a member's value.  Inline, on the leader's poller. */
static int
co_h_gather(struct dprpc_request *req, void *arg)
{
	struct co_ctx *ctx = arg;
	unsigned int from = dprpc_request_caller(req);
	const struct co_req *q;
	struct co_entry *e;
	uint64_t group, seq, wait_us, bit;
	size_t len;
	bool live;

	q = dprpc_request_payload(req, &len);
	if (len < sizeof(*q) || (rte_be_to_cpu_32(q->magic) != CO_REQ_MAGIC &&
					rte_be_to_cpu_32(q->magic) != CO_REQ_LIVE_MAGIC))
		return co_refuse(req, "not a gather request");
	live = rte_be_to_cpu_32(q->magic) == CO_REQ_LIVE_MAGIC;
	group = rte_be_to_cpu_64(q->group);
	seq = rte_be_to_cpu_64(q->seq);
	wait_us = rte_be_to_cpu_64(q->wait_us);
	if (rte_be_to_cpu_32(q->vlen) != len - sizeof(*q) ||
		len - sizeof(*q) > DPRPC_GATHER_VALUE_MAX)
		return co_refuse(req, "bad length");
	/* The live world's leader is its lowest rank up, as its members
	 * see it: a member of the group, maybe not the lowest. */
	if (group == 0 || (ctx->world_n < 64 && (group >> ctx->world_n) != 0) ||
		(live ? (group & (1ull << ctx->rank)) == 0
		      : (unsigned int)__builtin_ctzll(group) != ctx->rank) ||
		from >= 64 || (group & (1ull << from)) == 0 || seq == 0)
		return co_refuse(req, "bad group");
	bit = 1ull << from;
	e = co_find(ctx, group, seq, live);
	if (e == NULL) {
		e = co_new(ctx, group, seq, live);
		if (e == NULL) {
			struct co_entry busy = {.group = group, .seq = seq, .status = EBUSY};

			co_answer_status(ctx, req, &busy);
			return 0;
		}
		/* A member is dead already: no waiting for it (the live
		 * world's: it is left out). */
		if (live)
			e->gone = group & ctx->down & ~bit;
		else if ((group & ctx->down & ~bit) != 0)
			co_fail(ctx, e, EHOSTDOWN, group & ctx->down & ~bit);
	}
	if ((e->arrived & bit) != 0)
		return co_refuse(req, "member arrived twice");
	e->arrived |= bit;
	if (e->status != 0) {
		/* Failed before this member came: the same answer, now. */
		co_answer_status(ctx, req, e);
		if (e->arrived == e->group)
			co_unlink(ctx, e);
		return 0;
	}
	if (wait_us != 0 && wait_us < UINT64_MAX / 2) {
		uint64_t now = rte_rdtsc();
		uint64_t d = now + (uint64_t)((__uint128_t)wait_us * ctx->tsc_hz / 1000000);

		if (d > now && (e->deadline_tsc == 0 || d < e->deadline_tsc))
			e->deadline_tsc = d;
	}
	e->req[from] = req;
	co_held_add(ctx, 1);
	/* Left out, then arrived after all: in again. */
	e->gone &= ~bit;
	if ((e->arrived | e->gone) == e->group)
		co_complete(ctx, e); /* answers @req too: a reply made before
				      * returning DPRPC_DEFERRED is fine */
	return DPRPC_DEFERRED;
}

/* --- the extension -------------------------------------------------------- */

static int
co_ctx_create(struct dprpc_agent *a, const struct dprpc_agent_conf *c, void **state)
{
	struct co_ctx *ctx = calloc(1, sizeof(*ctx));

	if (ctx == NULL)
		return -ENOMEM;
	*state = ctx;
	ctx->a = a;
	ctx->rank = (uint16_t)dprpc_agent_rank(a);
	ctx->world_n = dprpc_world_size(a);
	ctx->tsc_hz = rte_get_tsc_hz();
	ctx->h_gather = dprpc_handler_id(CO_HANDLER);
	ctx->shutdown_live = c->liveness.shutdown_live;
	/* Plain initialisation: the context is not shared until the agent
	 * is (published with it). */
	atomic_init(&ctx->held, 0);
	pthread_mutex_init(&ctx->lock, NULL);
	return dp_register(a, CO_HANDLER, co_h_gather, ctx, DPRPC_HANDLER_INLINE, true);
}

/* Timer: fail the entries past their deadline. */
static unsigned int
co_ctx_timer(void *state)
{
	struct co_ctx *ctx = state;
	struct co_entry *e, *next;
	unsigned int n = 0;
	uint64_t now;

	if (ctx->head == NULL)
		return 0;
	now = rte_rdtsc();
	for (e = ctx->head; e != NULL; e = next) {
		next = e->next;
		if (e->status == 0 && e->deadline_tsc != 0 && now >= e->deadline_tsc) {
			co_fail(ctx, e, ETIMEDOUT, e->group & ~e->arrived & ~e->gone);
			n++;
		}
	}
	return n;
}

/* A member declared down (or restarted, its sequence numbers lost) fails
 * the pending entries it has not arrived at. */
static void
co_ctx_peer_event(void *state, unsigned int rank, enum dp_peer_event ev)
{
	struct co_ctx *ctx = state;
	struct co_entry *e, *next;
	uint64_t bit;

	if (ev == DP_PEER_EV_JOINED) {
		/* The world grew (or this agent joined it: its rank from now
		 * on).  The poller's, as every read of these. */
		ctx->world_n = dprpc_world_size(ctx->a);
		ctx->rank = (uint16_t)dprpc_agent_rank(ctx->a);
		if (rank < 64)
			ctx->down &= ~(1ull << rank);
		return;
	}
	if (rank >= 64)
		return;
	bit = 1ull << rank;
	/* Down until heard from again (up, or a new incarnation). */
	if (ev == DP_PEER_EV_DOWN)
		ctx->down |= bit;
	else
		ctx->down &= ~bit;
	if (ev == DP_PEER_EV_UP)
		return;
	if (ev == DP_PEER_EV_RESTARTED) {
		uint64_t gen =
			atomic_fetch_add_explicit(&ctx->restart_gen, 1, memory_order_relaxed) + 1;

		atomic_store_explicit(&ctx->restart_at[rank], gen, memory_order_relaxed);
	}
	for (e = ctx->head; e != NULL; e = next) {
		next = e->next;
		if (e->status != 0 || (e->group & bit) == 0 || (e->arrived & bit) != 0)
			continue;
		if (e->live) {
			/* The live world goes on without it. */
			e->gone |= bit;
			co_live_check(ctx, e);
		} else {
			co_fail(ctx, e, EHOSTDOWN, e->group & ~e->arrived);
		}
	}
	if (ev != DP_PEER_EV_RESTARTED)
		return;
	/* Its groups number their collectives from 1 again (gather.c): a
	 * failed entry kept for their late arrivals would answer a new
	 * collective of the same number.  Failed entries hold no request. */
	for (e = ctx->head; e != NULL; e = next) {
		next = e->next;
		if (e->status != 0 && (e->group & bit) != 0)
			co_unlink(ctx, e);
	}
}

static unsigned int
co_ctx_held(void *state)
{
	struct co_ctx *ctx = state;

	/* Relaxed: see co_internal.h (ctx->held). */
	return atomic_load_explicit(&ctx->held, memory_order_relaxed);
}

/* Destroy: every pending collective fails with ESHUTDOWN, naming this
 * leader; the requests kept are answered. */
static void
co_ctx_quiesce(void *state)
{
	struct co_ctx *ctx = state;
	struct co_entry *e, *next;

	for (e = ctx->head; e != NULL; e = next) {
		next = e->next;
		if (e->status == 0)
			co_fail(ctx, e, ESHUTDOWN, 1ull << ctx->rank);
	}
}

static void
co_ctx_closing(void *state)
{
	(void)state; /* collectives send nothing of their own accord */
}

static void
co_ctx_free(void *state)
{
	struct co_ctx *ctx = state;
	struct co_entry *e, *next;

	if (ctx == NULL)
		return;
	/* Pending entries were failed by quiesce (a failed create has none);
	 * the requests of any left are the agent's to release. */
	for (e = ctx->head; e != NULL; e = next) {
		next = e->next;
		free(e);
	}
	free(ctx->groups);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
}

const struct dp_ext_ops co_extension = {
	.name = "collective",
	.init = co_ctx_create,
	.timer = co_ctx_timer,
	.held_requests = co_ctx_held,
	.quiesce = co_ctx_quiesce,
	.closing = co_ctx_closing,
	.free = co_ctx_free,
	.peer_event = co_ctx_peer_event,
};
