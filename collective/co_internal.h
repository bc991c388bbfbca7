/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared by collective/'s files (never installed, not exported): the
 * per-agent context, the wire format of the gather messages, and what
 * crosses files.
 *
 * Collectives (dprpc_collective.h, docs/collective.md): all_gather and
 * barrier over a group of workers, the group's member of lowest rank
 * leading, and graceful shutdown on top of a barrier of the world.
 *
 * A group is a mask of ranks (DPRPC_MAX_WORKERS is 64).  Each worker keeps
 * the next sequence number of every group it took part in (gather.c, the
 * callers' side, under ctx->lock: application threads only, never the
 * poller).  The leader keeps one entry per (group, sequence number) being
 * gathered, in a list its poller alone touches (leader.c): the handler
 * (inline), the extension's timer and peer_event run on the poller;
 * quiesce and free on the destroying thread once the agent's lcores
 * stopped (dp_ext.h), when nobody polls.
 *
 * The files:
 *   gather.c    dprpc_all_gather(), dprpc_barrier(), the result
 *   leader.c    the leader's table, its handler, the extension's ops
 *   shutdown.c  dprpc_shutdown()
 */
#ifndef CO_INTERNAL_H
#define CO_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_byteorder.h>
#include <rte_log.h>

#include <dprpc/dprpc_collective.h>

#include "co_ext.h"
#include "dp_ext.h"

/* collective/'s log type, "dprpc.collective" (registered in leader.c). */
extern int co_logtype;
#define CO_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, co_logtype, "dprpc: " fmt "\n", ##__VA_ARGS__)

#define CO_HANDLER "dprpc.coll.gather"

/* A member's request to the leader; its value follows. */
struct co_req {
	rte_be32_t magic;
	rte_be32_t vlen;    /* the value's length */
	rte_be64_t group;   /* the members, one bit per rank */
	rte_be64_t seq;	    /* the group's sequence number on the sender */
	rte_be64_t wait_us; /* how long the sender still waits; 0: no limit */
} __rte_packed;
_Static_assert(sizeof(struct co_req) == 32, "gather request header is 32 bytes");

/* The leader's answer.  With status 0 one co_item per member follows,
 * in rank order, each followed by its value padded to 8 bytes. */
struct co_resp {
	rte_be32_t magic;
	rte_be32_t status; /* 0, or a positive errno: the collective failed */
	rte_be64_t group;
	rte_be64_t seq;
	rte_be64_t workers; /* with a status: the workers concerned */
	rte_be32_t count;   /* members (with status 0) */
	rte_be32_t zero;
} __rte_packed;
_Static_assert(sizeof(struct co_resp) == 40, "gather response header is 40 bytes");

struct co_item {
	rte_be32_t len;
	rte_be32_t zero;
} __rte_packed;

#define CO_REQ_MAGIC 0x434f6731u /* "COg1" */
/* A request of the live world's collective (DPRPC_WORLD_LIVE): the group
 * is the world less those that left; the leader leaves out the members it
 * has declared down, and its answer's workers are those that took part. */
#define CO_REQ_LIVE_MAGIC 0x434f6c31u /* "COl1" */
#define CO_RESP_MAGIC	  0x434f7231u /* "COr1" */

/* Entries the leader keeps at most (pending ones and failed ones waiting
 * for their late members). */
#define CO_MAX_ENTRIES 256

/* One value's room in the answer. */
static inline uint32_t
co_item_size(uint32_t len)
{
	return (uint32_t)sizeof(struct co_item) + ((len + 7u) & ~7u);
}

/* The callers' side: the next sequence number of a group on this worker,
 * and whether a collective over it runs now. */
struct co_group {
	uint64_t group;
	bool live; /* the live world's numbers: apart from the group's own */
	uint64_t next_seq;
	uint64_t gen; /* ctx->restart_gen when next_seq was last taken */
	bool busy;
};

struct co_entry;

struct co_ctx {
	struct dprpc_agent *a;
	uint16_t rank;
	unsigned int world_n;
	uint32_t h_gather; /* dprpc_handler_id(CO_HANDLER) */
	uint64_t tsc_hz;
	bool shutdown_live; /* conf.liveness.shutdown_live: the shutdown's barrier */

	/* Restarts of other workers (peer_event, the poller): restart_gen
	 * counts them, restart_at[r] is its value at rank r's last.  A group
	 * with a member that restarted since its last collective numbers
	 * them from 1 again, as the restarted worker does.  Relaxed: a late
	 * read costs one collective that times out. */
	_Atomic uint64_t restart_gen;
	_Atomic uint64_t restart_at[64];

	/* Callers' side (gather.c), application threads, under lock. */
	pthread_mutex_t lock;
	struct co_group *groups;
	unsigned int nb_groups, cap_groups;

	/* Leader's side (leader.c), the poller only (see the file comment). */
	struct co_entry *head, *tail; /* oldest first */
	unsigned int nb_entries;
	/* Members declared down and not heard from since (bit per rank): a
	 * new entry over one of them fails at once. */
	uint64_t down;
	/* Requests held deferred in the entries.  Written by the poller,
	 * read by the destroying thread once the lcores stopped (relaxed:
	 * their stop orders the poller's writes before). */
	atomic_uint held;
};

/* gather.c: format the names of the workers in @mask into @buf. */
void co_names(const struct dprpc_agent *a, uint64_t mask, char *buf, size_t cap);

#endif /* CO_INTERNAL_H */
