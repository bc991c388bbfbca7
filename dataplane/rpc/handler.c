/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Handlers: the handler registry (this file), the request object
 * (request.c) and the reply path (reply.c, from any thread), running a
 * request inline or on a handler lcore (dispatch.c).
 *
 * Registry: an open-addressing table of max_handlers * 2 (power of two)
 * buckets keyed by wire id.  dprpc_register() fills a bucket under
 * reg_lock and publishes it by storing the id last with release;
 * dp_handler_find() probes with acquire loads and takes no lock.  Buckets
 * are never freed or reused, so a reader can never see a torn entry.
 * Readers make progress whatever the writers do; the table lives as long
 * as the agent, so nothing is reclaimed under a reader.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "dp_rpc.h"
#include "dp_eal.h"
#include "dp_handler.h"
#include "dp_msg.h"
#include "dp_poll.h"
#include "dprpc_lcore.h"
#include <dprpc/dprpc_handler.h>

/*
 * The names this process computed handler ids of, so that a caller can name
 * the handler a destination lacks (dp_unknown_handler_msg(); docs/wire.md,
 * "Field values").  Two-way, DP_NAMES_N sets, a name replacing the first
 * of its slots when both are taken.  dprpc_handler_id() pays one relaxed
 * load and compare of a slot's id; names are written and read under the
 * lock, a slot's id cleared while its name changes.
 */
#define DP_NAMES_N 256
static _Atomic uint32_t dp_name_ids[DP_NAMES_N];
static char dp_names[DP_NAMES_N][DPRPC_HANDLER_NAME_MAX];
static pthread_mutex_t dp_names_lock = PTHREAD_MUTEX_INITIALIZER;

static inline unsigned int
dp_name_slot(uint32_t id, unsigned int way)
{
	return (way == 0 ? id : id >> 16) & (DP_NAMES_N - 1);
}

static void __rte_noinline
dp_name_note(uint32_t id, const char *name, size_t len)
{
	unsigned int s0 = dp_name_slot(id, 0), s1 = dp_name_slot(id, 1), s;

	pthread_mutex_lock(&dp_names_lock);
	if (atomic_load_explicit(&dp_name_ids[s0], memory_order_relaxed) != id &&
		atomic_load_explicit(&dp_name_ids[s1], memory_order_relaxed) != id) {
		s = atomic_load_explicit(&dp_name_ids[s0], memory_order_relaxed) != 0 &&
				    atomic_load_explicit(&dp_name_ids[s1], memory_order_relaxed) ==
					    0
			    ? s1
			    : s0;
		atomic_store_explicit(&dp_name_ids[s], 0, memory_order_relaxed);
		memcpy(dp_names[s], name, len);
		dp_names[s][len] = '\0';
		atomic_store_explicit(&dp_name_ids[s], id, memory_order_relaxed);
	}
	pthread_mutex_unlock(&dp_names_lock);
}

bool
dp_handler_name(uint32_t id, char *name, size_t cap)
{
	bool found = false;

	if (id == 0 || cap == 0)
		return false;
	pthread_mutex_lock(&dp_names_lock);
	for (unsigned int way = 0; way < 2 && !found; way++) {
		unsigned int s = dp_name_slot(id, way);

		if (atomic_load_explicit(&dp_name_ids[s], memory_order_relaxed) == id) {
			snprintf(name, cap, "%s", dp_names[s]);
			found = true;
		}
	}
	pthread_mutex_unlock(&dp_names_lock);
	return found;
}

uint32_t
dprpc_handler_id(const char *name)
{
	uint32_t h = 2166136261u; /* FNV-1a, 32 bits */
	const char *p;

	if (name == NULL)
		return 0; /* no handler has id 0 */
	for (p = name; *p != '\0'; p++) {
		h ^= (uint8_t)*p;
		h *= 16777619u;
	}
	h = h != 0 ? h : 1; /* 0 marks a free bucket */
	if (unlikely(atomic_load_explicit(&dp_name_ids[dp_name_slot(h, 0)], memory_order_relaxed) !=
			     h &&
		     atomic_load_explicit(&dp_name_ids[dp_name_slot(h, 1)], memory_order_relaxed) !=
			     h) &&
		(size_t)(p - name) < DPRPC_HANDLER_NAME_MAX && p != name)
		dp_name_note(h, name, (size_t)(p - name));
	return h;
}

bool
dp_handler_internal(const struct dp_rpc *a, uint32_t id)
{
	const struct dp_handler *h = dp_handler_find(a, id);

	return h != NULL && h->internal;
}

/* Handler names the library keeps for itself (the RRef messages). */
#define DP_RESERVED_PREFIX "dprpc."

int
dp_register(struct dprpc_agent *agent, const char *name, dprpc_handler_fn_t fn, void *arg,
	enum dprpc_handler_mode mode, bool internal)
{
	struct dp_rpc *a = dp_rpc_of(agent);
	unsigned int b, i;
	uint32_t id;
	size_t len;
	int rc = 0;

	if (a == NULL || name == NULL || fn == NULL)
		return -EINVAL;
	len = strlen(name);
	if (len == 0 || len >= DPRPC_HANDLER_NAME_MAX)
		return -EINVAL;
	if (!internal && strncmp(name, DP_RESERVED_PREFIX, strlen(DP_RESERVED_PREFIX)) == 0)
		return -EINVAL;
	if (mode != DPRPC_HANDLER_INLINE && mode != DPRPC_HANDLER_POOL)
		return -EINVAL;
	if (mode == DPRPC_HANDLER_POOL && a->nb_hl == 0)
		return -EINVAL;
	id = dprpc_handler_id(name);

	pthread_mutex_lock(&a->reg_lock);
	for (i = 0, b = id & a->handler_mask; i <= a->handler_mask;
		i++, b = (b + 1) & a->handler_mask) {
		struct dp_handler *h = &a->handlers[b];
		/* Relaxed: writers are serialised by reg_lock, whose
		 * acquire orders this read after the last registration. */
		uint32_t cur = atomic_load_explicit(&h->id, memory_order_relaxed);

		if (cur == id) {
			rc = strcmp(h->name, name) == 0 ? -EEXIST : -EADDRINUSE;
			break;
		}
		if (cur != 0)
			continue;
		if (a->nb_handlers == a->max_handlers) {
			rc = -ENOSPC;
			break;
		}
		memcpy(h->name, name, len + 1);
		h->fn = fn;
		h->arg = arg;
		h->mode = mode;
		h->internal = internal;
		/* Release: publishes the fields above to dp_handler_find(). */
		atomic_store_explicit(&h->id, id, memory_order_release);
		a->nb_handlers++;
		break;
	}
	pthread_mutex_unlock(&a->reg_lock);
	return rc;
}

int
dprpc_register(struct dprpc_agent *agent, const char *name, dprpc_handler_fn_t fn, void *arg,
	enum dprpc_handler_mode mode)
{
	return dp_register(agent, name, fn, arg, mode, false);
}
