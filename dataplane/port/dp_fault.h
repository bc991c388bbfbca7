/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fault injection on one direction of the port (dprpc_fault_conf).  Poller
 * only.  Frames held back (reordered or delayed) belong to the fault stage
 * until they are released into the normal path, or freed at destroy.
 */
#ifndef DP_FAULT_H
#define DP_FAULT_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include <dprpc/dprpc_agent.h>

#define DP_FAULT_HELD 64

struct dp_fault {
	bool on;
	uint32_t drop, dup, reorder, delay; /* per million */
	uint64_t delay_tsc;
	uint64_t drop_nth[8];	/* 1-based; 0 unused */
	uint64_t rng;		/* xorshift64* state */
	uint64_t index;		/* numbered frames seen in this direction */
	struct rte_mempool *mp; /* for duplicates */
	unsigned int n_held;
	struct {
		struct rte_mbuf *m;
		uint64_t due; /* released by a call with now >= due */
	} held[DP_FAULT_HELD];
	uint64_t dropped, duplicated, reordered, delayed; /* poller-written */
};

void dp_fault_init(struct dp_fault *f, const struct dprpc_fault_conf *c, struct rte_mempool *mp,
	uint64_t tsc_hz);

/* Pass one frame through the faults: dropped (freed), passed on, or held
 * back.  Writes what goes on now (0 to 2 frames: it and a duplicate) to
 * out[] and returns how many.  Only @numbered frames (a call's,
 * dp_frame_of_call()) meet faults and count towards drop_nth. */
unsigned int dp_fault_one(
	struct dp_fault *f, struct rte_mbuf *m, struct rte_mbuf **out, uint64_t now, bool numbered);

/* Move the held frames that are due (held in an earlier call: a reordered
 * frame goes out after at least one later poll's frames) to out[], at most
 * @cap; returns how many. */
unsigned int dp_fault_due(
	struct dp_fault *f, struct rte_mbuf **out, unsigned int cap, uint64_t now);

/* Free the held frames @stale(@arg, frame) says must not go; how many. */
unsigned int dp_fault_purge(
	struct dp_fault *f, bool (*stale)(void *arg, struct rte_mbuf *m), void *arg);

/* Free every held frame. */
void dp_fault_free(struct dp_fault *f);

#endif /* DP_FAULT_H */
