/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The callers' side of a collective: dprpc_all_gather(), dprpc_barrier(),
 * their _id forms and the result they return (dprpc_collective.h).
 *
 * Design
 * ======
 *
 * The by-name forms translate the names to ranks and call the _id forms.
 * A call checks the ranks and makes them a mask, takes the group's next
 * sequence number on this worker (ctx->groups under ctx->lock: a mutex,
 * since only application threads come here; the poller never does, it is
 * refused -EDEADLK first), sends its value to the leader (the member of
 * lowest rank, maybe this worker) with rpc_async and waits for the
 * leader's answer (polling when nobody else does).  The call's own timeout
 * is the caller's plus DPRPC_COLL_GRACE_US: the leader answers a failure
 * at the deadline itself, naming the absent members; only a leader that
 * cannot answer leaves it to the call, which then names the leader.
 *
 * The result is one malloc'd block: a header indexing the members' values
 * and a copy of the leader's answer (the values in it are 8-aligned).  It
 * owes nothing to the agent.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_errno.h>

#include <dprpc/dprpc_rpc.h>

#include "co_internal.h"

struct dprpc_gather {
	uint64_t members, seq;
	uint32_t off[DPRPC_MAX_WORKERS]; /* into data */
	uint32_t len[DPRPC_MAX_WORKERS];
	/* The leader's answer; 8-aligned (the header's size is). */
	uint8_t data[] __rte_aligned(8);
};

void
co_names(const struct dprpc_agent *a, uint64_t mask, char *buf, size_t cap)
{
	size_t used = 0;
	unsigned int r;

	buf[0] = '\0';
	for (r = 0; r < DPRPC_MAX_WORKERS && used < cap; r++) {
		const char *name;
		int k;

		if ((mask & (1ull << r)) == 0)
			continue;
		name = dprpc_worker_name(a, r);
		k = snprintf(buf + used, cap - used, "%s%s", used > 0 ? ", " : "",
			name != NULL ? name : "?");
		if (k < 0)
			break;
		used += (size_t)k;
	}
}

/* Fill @err (if any) and return @code. */
static int co_error(struct dprpc_error *err, int code, uint16_t origin, uint64_t workers,
	const char *fmt, ...) __rte_format_printf(5, 6);

static int
co_error(struct dprpc_error *err, int code, uint16_t origin, uint64_t workers, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return code;
	err->code = code;
	err->origin = origin;
	err->retry_after_us = 0;
	err->workers = workers;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

/* A member of @g restarted since @g's last collective: number them from 1
 * again, as the restarted worker does (its numbers are gone with it). */
static void
co_seq_restart(struct co_ctx *ctx, struct co_group *g)
{
	uint64_t gen = atomic_load_explicit(&ctx->restart_gen, memory_order_relaxed);

	if (gen == g->gen)
		return;
	for (uint64_t m = g->group; m != 0; m &= m - 1) {
		unsigned int r = (unsigned int)__builtin_ctzll(m);

		if (atomic_load_explicit(&ctx->restart_at[r], memory_order_relaxed) > g->gen) {
			g->next_seq = 1;
			break;
		}
	}
	g->gen = gen;
}

/* The group's next sequence number (the live world's, @live), marking it
 * busy; 0 with *rc set (-EBUSY, -ENOMEM). */
static uint64_t
co_seq_take(struct co_ctx *ctx, uint64_t group, bool live, int *rc)
{
	struct co_group *g = NULL;
	uint64_t seq = 0;
	unsigned int i;

	pthread_mutex_lock(&ctx->lock);
	for (i = 0; i < ctx->nb_groups; i++)
		if (ctx->groups[i].group == group && ctx->groups[i].live == live) {
			g = &ctx->groups[i];
			break;
		}
	if (g == NULL) {
		if (ctx->nb_groups == ctx->cap_groups) {
			unsigned int cap = ctx->cap_groups == 0 ? 8 : ctx->cap_groups * 2;
			struct co_group *ng = realloc(ctx->groups, cap * sizeof(*ng));

			if (ng == NULL) {
				*rc = -ENOMEM;
				goto out;
			}
			ctx->groups = ng;
			ctx->cap_groups = cap;
		}
		g = &ctx->groups[ctx->nb_groups++];
		*g = (struct co_group){.group = group, .live = live, .next_seq = 1};
	}
	if (g->busy) {
		*rc = -EBUSY;
		goto out;
	}
	co_seq_restart(ctx, g);
	g->busy = true;
	seq = g->next_seq++;
out:
	pthread_mutex_unlock(&ctx->lock);
	return seq;
}

static void
co_seq_done(struct co_ctx *ctx, uint64_t group, bool live)
{
	unsigned int i;

	pthread_mutex_lock(&ctx->lock);
	for (i = 0; i < ctx->nb_groups; i++)
		if (ctx->groups[i].group == group && ctx->groups[i].live == live)
			ctx->groups[i].busy = false;
	pthread_mutex_unlock(&ctx->lock);
}

/* What a name not in the world becomes: a rank beyond any world. */
#define CO_RANK_NONE UINT_MAX

/* @workers (@n names) as ranks in @ranks (DPRPC_MAX_WORKERS of them), a
 * name not in the world as CO_RANK_NONE, which co_group_mask() refuses
 * -ENOENT at the name's place in the list.  With @n 0 or over the world
 * the names are not read, nor are the ranks by co_group_mask() (unless a
 * join made the world larger meanwhile: hence CO_RANK_NONE there too).
 * 0, or -EINVAL for a NULL name. */
static int
co_ranks_of(const struct dprpc_agent *a, const char *const *workers, unsigned int n,
	unsigned int *ranks)
{
	unsigned int world = dprpc_world_size(a), i;

	for (i = 0; workers != NULL && i < n && i < DPRPC_MAX_WORKERS; i++) {
		int r = n <= world ? dprpc_worker_rank(a, workers[i]) : -ENOENT;

		if (r == -EINVAL)
			return r;
		ranks[i] = r < 0 ? CO_RANK_NONE : (unsigned int)r;
	}
	return 0;
}

/* The group's mask from @ranks (NULL, 0: the world, less the workers
 * known to have left it: dprpc_world_leave(), DPRPC_PEER_LEFT; NULL,
 * DPRPC_WORLD_LIVE: the same mask, *live set). */
static int
co_group_mask(const struct dprpc_agent *a, const unsigned int *ranks, unsigned int n,
	uint64_t *mask, bool *live)
{
	struct dprpc_worker_info infos[DPRPC_MAX_WORKERS];
	unsigned int world = dprpc_world_size(a), i;
	int nb;

	*mask = 0;
	*live = false;
	if (ranks == NULL) {
		if (n != 0 && n != DPRPC_WORLD_LIVE)
			return -EINVAL;
		*live = n == DPRPC_WORLD_LIVE;
		*mask = world >= 64 ? UINT64_MAX : (1ull << world) - 1;
		nb = dprpc_worker_info_list(a, infos, DPRPC_MAX_WORKERS);
		for (i = 0; nb > 0 && i < (unsigned int)nb && i < 64; i++)
			if (infos[i].state == DPRPC_PEER_LEFT)
				*mask &= ~(1ull << infos[i].rank);
		return 0;
	}
	if (n == 0 || n > world)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (ranks[i] >= world)
			return -ENOENT;
		if ((*mask & (1ull << ranks[i])) != 0)
			return -EINVAL;
		*mask |= 1ull << ranks[i];
	}
	return 0;
}

/* Check the leader's answer @p (@len bytes) and turn it into a result or
 * an error. */
static int
co_take_answer(struct dprpc_agent *a, const uint8_t *p, size_t len, uint64_t group, bool live,
	uint64_t seq, unsigned int leader, struct dprpc_gather **result, struct dprpc_error *err)
{
	const struct co_resp *r = (const struct co_resp *)p;
	struct dprpc_gather *g;
	char names[DPRPC_ERRMSG_MAX];
	uint64_t workers;
	size_t off;
	unsigned int rank, count;
	int status;

	if (len < sizeof(*r) || rte_be_to_cpu_32(r->magic) != CO_RESP_MAGIC ||
		rte_be_to_cpu_64(r->group) != group || rte_be_to_cpu_64(r->seq) != seq)
		return co_error(err, -EPROTO, (uint16_t)leader, 1ull << leader,
			"all_gather #%" PRIu64 ": bad answer from leader %s", seq,
			dprpc_worker_name(a, leader));
	status = (int)rte_be_to_cpu_32(r->status);
	workers = rte_be_to_cpu_64(r->workers);
	if (status != 0) {
		co_names(a, workers, names, sizeof(names));
		return co_error(err, -status, (uint16_t)leader, workers,
			"all_gather #%" PRIu64 " over %u workers: %s%s", seq,
			(unsigned int)__builtin_popcountll(group), names,
			status == ETIMEDOUT   ? " did not arrive in time"
			: status == EHOSTDOWN ? " did not arrive (down)"
			: status == ESHUTDOWN ? " (leader) shut down"
			: status == EMSGSIZE  ? "values too long for a message"
			: status == EBUSY     ? "leader's table full"
					      : " failed");
	}
	count = rte_be_to_cpu_32(r->count);
	/* The live world's answer says who took part: this worker among
	 * them, none outside the group. */
	if (live) {
		group = workers;
		if ((group & ~rte_be_to_cpu_64(r->group)) != 0 ||
			(group & (1ull << dprpc_agent_rank(a))) == 0)
			goto bad;
	}
	if (count != (unsigned int)__builtin_popcountll(group))
		goto bad;
	g = malloc(sizeof(*g) + len);
	if (g == NULL)
		return co_error(err, -ENOMEM, DPRPC_ORIGIN_LOCAL, 0, "no memory for the result");
	memset(g, 0, sizeof(*g));
	g->members = group;
	g->seq = seq;
	memcpy(g->data, p, len);
	off = sizeof(*r);
	for (rank = 0; rank < DPRPC_MAX_WORKERS; rank++) {
		struct co_item it;
		uint32_t vlen;

		if ((group & (1ull << rank)) == 0)
			continue;
		if (len - off < sizeof(it)) {
			free(g);
			goto bad;
		}
		memcpy(&it, p + off, sizeof(it));
		vlen = rte_be_to_cpu_32(it.len);
		if (vlen > DPRPC_GATHER_VALUE_MAX || len - off < co_item_size(vlen)) {
			free(g);
			goto bad;
		}
		g->off[rank] = (uint32_t)(off + sizeof(it));
		g->len[rank] = vlen;
		off += co_item_size(vlen);
	}
	*result = g;
	return 0;
bad:
	return co_error(err, -EPROTO, (uint16_t)leader, 1ull << leader,
		"all_gather #%" PRIu64 ": malformed answer from leader %s", seq,
		dprpc_worker_name(a, leader));
}

/* The leader of @group: its lowest rank; the live world's, its lowest rank
 * from @from on that this worker has not declared down (itself at worst). */
static unsigned int
co_leader(const struct dprpc_agent *a, uint64_t group, bool live, unsigned int from)
{
	unsigned int me = dprpc_agent_rank(a), r;

	if (!live)
		return (unsigned int)__builtin_ctzll(group);
	for (r = from; r < DPRPC_MAX_WORKERS; r++)
		if ((group & (1ull << r)) != 0 &&
			(r == me || dprpc_worker_state(a, r) != DPRPC_PEER_DOWN))
			return r;
	return me;
}

/* The live world's call to *@leader failed with @rc: whether to send to
 * the next leader (*@leader set), the one it went to being declared down
 * (-EHOSTDOWN: down when the call started or while it waited). */
static bool
co_next_leader(const struct dprpc_agent *a, uint64_t group, bool live, int rc, unsigned int *leader)
{
	unsigned int next;

	if (!live || rc != -EHOSTDOWN || *leader == dprpc_agent_rank(a) ||
		dprpc_worker_state(a, *leader) != DPRPC_PEER_DOWN)
		return false;
	next = co_leader(a, group, live, *leader + 1);
	if (next <= *leader)
		return false;
	*leader = next;
	return true;
}

/* What is left of @timeout_us since @start (TSC), at least 1; 0 (no
 * limit) stays 0. */
static uint64_t
co_left_us(uint64_t timeout_us, uint64_t start)
{
	uint64_t spent =
		(uint64_t)((__uint128_t)(rte_rdtsc() - start) * 1000000 / rte_get_tsc_hz());

	if (timeout_us == 0)
		return 0;
	return timeout_us > spent ? timeout_us - spent : 1;
}

/* dprpc_all_gather_id() with @result NULL allowed (barrier: the answer is
 * checked, not kept). */
static int
co_gather(struct dprpc_agent *a, const unsigned int *ranks, unsigned int n, const void *value,
	size_t len, uint64_t timeout_us, struct dprpc_gather **result, struct dprpc_error *err)
{
	struct dprpc_gather *tmp = NULL;
	struct dprpc_future *f;
	struct co_ctx *ctx;
	struct co_req *q;
	uint64_t group, seq, call_us, wait_us, start;
	unsigned int leader, me;
	size_t rlen;
	bool live;
	int rc;

	if (a == NULL || (value == NULL && len > 0))
		return co_error(err, -EINVAL, DPRPC_ORIGIN_LOCAL, 0, "bad argument");
	if (len > DPRPC_GATHER_VALUE_MAX)
		return co_error(err, -EMSGSIZE, DPRPC_ORIGIN_LOCAL, 0,
			"value of %zu bytes over DPRPC_GATHER_VALUE_MAX", len);
	ctx = dp_ext_state(a, &co_extension);
	if (ctx == NULL)
		return co_error(err, -EINVAL, DPRPC_ORIGIN_LOCAL, 0, "agent without collectives");
	rc = co_group_mask(a, ranks, n, &group, &live);
	if (rc != 0)
		return co_error(err, rc, DPRPC_ORIGIN_LOCAL, 0,
			rc == -ENOENT ? "bad group: a member not in the world" : "bad group");
	me = dprpc_agent_rank(a);
	if ((group & (1ull << me)) == 0)
		return co_error(err, -EINVAL, DPRPC_ORIGIN_LOCAL, 0,
			"worker %s is not a member of the group", dprpc_agent_name(a));
	if (dp_on_poller(a))
		return co_error(err, -EDEADLK, DPRPC_ORIGIN_LOCAL, 0,
			"collective called on the agent's polling thread");
	if (timeout_us == DPRPC_TIMEOUT_DEFAULT)
		timeout_us = dp_agent_default_timeout_us(a);
	leader = co_leader(a, group, live, 0);
	seq = co_seq_take(ctx, group, live, &rc);
	if (seq == 0)
		return co_error(err, rc, DPRPC_ORIGIN_LOCAL, 0,
			rc == -EBUSY ? "a collective over this group runs on this worker"
				     : "no memory");
	rlen = sizeof(*q) + len;
	q = malloc(rlen);
	if (q == NULL) {
		rc = co_error(err, -ENOMEM, DPRPC_ORIGIN_LOCAL, 0, "no memory");
		goto out;
	}
	*q = (struct co_req){
		.magic = rte_cpu_to_be_32(live ? CO_REQ_LIVE_MAGIC : CO_REQ_MAGIC),
		.vlen = rte_cpu_to_be_32((uint32_t)len),
		.group = rte_cpu_to_be_64(group),
		.seq = rte_cpu_to_be_64(seq),
		.wait_us = rte_cpu_to_be_64(timeout_us),
	};
	if (len > 0)
		memcpy(q + 1, value, len);
	start = rte_rdtsc();
	for (;;) {
		/* What is left of the caller's time (a second leader's too). */
		wait_us = co_left_us(timeout_us, start);
		q->wait_us = rte_cpu_to_be_64(wait_us);
		/* 0 (no limit) stays 0; a sum past the clock's range is no
		 * limit either (dprpc_rpc_async_id() takes any value). */
		call_us = wait_us == 0 ? 0
			  : wait_us > UINT64_MAX - 1 - DPRPC_COLL_GRACE_US
				  ? UINT64_MAX - 1
				  : wait_us + DPRPC_COLL_GRACE_US;
		f = dprpc_rpc_async_id(a, leader, ctx->h_gather, q, rlen, call_us);
		if (f == NULL) {
			rc = -rte_errno;
			if (co_next_leader(a, group, live, rc, &leader))
				continue;
			rc = co_error(err, rc, DPRPC_ORIGIN_LOCAL, 1ull << leader,
				"all_gather #%" PRIu64 ": call to leader %s failed: %s", seq,
				dprpc_worker_name(a, leader), strerror(-rc));
			break;
		}
		rc = dprpc_future_wait(f, 0);
		if (rc == 0) {
			size_t vlen;
			const uint8_t *v = dprpc_future_value(f, &vlen);

			rc = co_take_answer(a, v, vlen, group, live, seq, leader, &tmp, err);
		} else if (co_next_leader(a, group, live, rc, &leader)) {
			dprpc_future_put(f);
			continue;
		} else {
			const struct dprpc_error *e = dprpc_future_error(f);

			rc = co_error(err, rc, e != NULL ? e->origin : DPRPC_ORIGIN_LOCAL,
				1ull << leader, "all_gather #%" PRIu64 ": leader %s: %s", seq,
				dprpc_worker_name(a, leader), e != NULL ? e->msg : strerror(-rc));
		}
		dprpc_future_put(f);
		break;
	}
	free(q);
	if (rc == 0) {
		if (result != NULL)
			*result = tmp;
		else
			free(tmp);
	}
out:
	co_seq_done(ctx, group, live);
	return rc;
}

int
dprpc_all_gather_id(struct dprpc_agent *a, const unsigned int *ranks, unsigned int n,
	const void *value, size_t len, uint64_t timeout_us, struct dprpc_gather **result,
	struct dprpc_error *err)
{
	if (result == NULL)
		return co_error(err, -EINVAL, DPRPC_ORIGIN_LOCAL, 0, "NULL result");
	return co_gather(a, ranks, n, value, len, timeout_us, result, err);
}

int
dprpc_all_gather(struct dprpc_agent *a, const char *const *workers, unsigned int n,
	const void *value, size_t len, uint64_t timeout_us, struct dprpc_gather **result,
	struct dprpc_error *err)
{
	unsigned int ranks[DPRPC_MAX_WORKERS];
	int rc = co_ranks_of(a, workers, n, ranks);

	if (rc != 0)
		return co_error(err, rc, DPRPC_ORIGIN_LOCAL, 0, "bad group: a NULL name");
	return dprpc_all_gather_id(
		a, workers != NULL ? ranks : NULL, n, value, len, timeout_us, result, err);
}

int
dprpc_barrier_id(struct dprpc_agent *a, const unsigned int *ranks, unsigned int n,
	uint64_t timeout_us, struct dprpc_error *err)
{
	return co_gather(a, ranks, n, NULL, 0, timeout_us, NULL, err);
}

int
dprpc_barrier(struct dprpc_agent *a, const char *const *workers, unsigned int n,
	uint64_t timeout_us, struct dprpc_error *err)
{
	unsigned int ranks[DPRPC_MAX_WORKERS];
	int rc = co_ranks_of(a, workers, n, ranks);

	if (rc != 0)
		return co_error(err, rc, DPRPC_ORIGIN_LOCAL, 0, "bad group: a NULL name");
	return dprpc_barrier_id(a, workers != NULL ? ranks : NULL, n, timeout_us, err);
}

const void *
dprpc_gather_value(const struct dprpc_gather *g, unsigned int rank, size_t *len)
{
	if (len != NULL)
		*len = 0;
	if (g == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	if (rank >= DPRPC_MAX_WORKERS || (g->members & (1ull << rank)) == 0) {
		rte_errno = ENOENT;
		return NULL;
	}
	if (len != NULL)
		*len = g->len[rank];
	return g->len[rank] == 0 ? NULL : g->data + g->off[rank];
}

uint64_t
dprpc_gather_members(const struct dprpc_gather *g)
{
	if (g == NULL) {
		rte_errno = EINVAL;
		return 0;
	}
	return g->members;
}

uint64_t
dprpc_gather_seq(const struct dprpc_gather *g)
{
	if (g == NULL) {
		rte_errno = EINVAL;
		return 0;
	}
	return g->seq;
}

void
dprpc_gather_free(struct dprpc_gather *g)
{
	free(g);
}
