/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fault injection (docs/reliability.md): seeded drop, duplication,
 * reordering and delay, and deterministic loss of chosen frames, applied on
 * transmit (as frames are staged) and on receive (as they come out of
 * rx_burst), so it works on every PMD.  Calls to self never touch the port
 * and see no faults.
 */
#include <string.h>

#include "dp_fault.h"

void
dp_fault_init(struct dp_fault *f, const struct dprpc_fault_conf *c, struct rte_mempool *mp,
	uint64_t tsc_hz)
{
	unsigned int i;

	memset(f, 0, sizeof(*f));
	f->drop = c->drop_ppm;
	f->dup = c->dup_ppm;
	f->reorder = c->reorder_ppm;
	f->delay = c->delay_ppm;
	f->delay_tsc = (uint64_t)c->delay_us * tsc_hz / 1000000;
	f->rng = c->seed != 0 ? c->seed : 0x9e3779b97f4a7c15ull;
	f->mp = mp;
	f->on = f->drop || f->dup || f->reorder || f->delay;
	for (i = 0; i < RTE_DIM(f->drop_nth); i++) {
		f->drop_nth[i] = c->drop_nth[i];
		f->on |= c->drop_nth[i] != 0;
	}
}

/* A draw in [0, 1000000): xorshift64*, plenty for test decisions. */
static inline uint32_t
dp_fault_ppm(struct dp_fault *f)
{
	f->rng ^= f->rng >> 12;
	f->rng ^= f->rng << 25;
	f->rng ^= f->rng >> 27;
	return (uint32_t)(((f->rng * 0x2545f4914f6cdd1dull) >> 32) % 1000000);
}

static bool
dp_fault_hold(struct dp_fault *f, struct rte_mbuf *m, uint64_t due)
{
	if (f->n_held == DP_FAULT_HELD)
		return false;
	f->held[f->n_held].m = m;
	f->held[f->n_held].due = due;
	f->n_held++;
	return true;
}

unsigned int
dp_fault_one(
	struct dp_fault *f, struct rte_mbuf *m, struct rte_mbuf **out, uint64_t now, bool numbered)
{
	unsigned int i, n = 0;
	struct rte_mbuf *copy;
	uint64_t nth;

	/* A liveness CONTROL frame passes untouched and takes no draw: their
	 * number depends on timing, and a seed must give the calls' frames
	 * (dp_frame_of_call()) the same decisions whatever the timing. */
	if (!numbered) {
		out[0] = m;
		return 1;
	}
	nth = ++f->index;
	for (i = 0; i < RTE_DIM(f->drop_nth); i++) {
		if (f->drop_nth[i] == nth) {
			f->dropped++;
			rte_pktmbuf_free(m);
			return 0;
		}
	}
	/* One draw per fault kind, always, so a seed gives the same decisions
	 * whatever the settings of the other kinds. */
	if (dp_fault_ppm(f) < f->drop) {
		f->dropped++;
		rte_pktmbuf_free(m);
		return 0;
	}
	if (dp_fault_ppm(f) < f->dup) {
		copy = rte_pktmbuf_copy(m, f->mp, 0, UINT32_MAX);
		if (copy != NULL) {
			out[n++] = copy;
			f->duplicated++;
		}
	}
	/* Reordered: out after the frames of at least one later call. */
	if (dp_fault_ppm(f) < f->reorder && dp_fault_hold(f, m, now + 1)) {
		f->reordered++;
		return n;
	}
	if (dp_fault_ppm(f) < f->delay && dp_fault_hold(f, m, now + f->delay_tsc + 1)) {
		f->delayed++;
		return n;
	}
	out[n++] = m;
	return n;
}

unsigned int
dp_fault_due(struct dp_fault *f, struct rte_mbuf **out, unsigned int cap, uint64_t now)
{
	unsigned int i = 0, n = 0;

	while (i < f->n_held && n < cap) {
		if (f->held[i].due <= now) {
			out[n++] = f->held[i].m;
			f->held[i] = f->held[--f->n_held];
		} else {
			i++;
		}
	}
	return n;
}

unsigned int
dp_fault_purge(struct dp_fault *f, bool (*stale)(void *arg, struct rte_mbuf *m), void *arg)
{
	unsigned int i = 0, n = 0;

	while (i < f->n_held) {
		if (stale(arg, f->held[i].m)) {
			rte_pktmbuf_free(f->held[i].m);
			f->held[i] = f->held[--f->n_held];
			n++;
		} else {
			i++;
		}
	}
	return n;
}

void
dp_fault_free(struct dp_fault *f)
{
	while (f->n_held > 0)
		rte_pktmbuf_free(f->held[--f->n_held].m);
}
