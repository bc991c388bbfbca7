/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stall traces: when a CPU did not run a thread that wanted it, and what
 * that costs an RPC whatever its implementation (dprpc-hiccup, hiccup.c).
 *
 * A trace is the list of a pinned spinning thread's stalls on one CPU:
 * every gap between two consecutive clock reads longer than a threshold,
 * as (start, length) in nanoseconds from the trace's start, in time
 * order and never overlapping.  A thread that polls (a dprpc poller) is
 * off its CPU exactly then, whoever took the CPU (the hypervisor, an
 * interrupt, another thread).
 *
 * Two figures are read from traces:
 *  - the residual stall: at an instant chosen uniformly over the trace,
 *    how long until the CPU runs the thread again (0 outside stalls).
 *    P(residual > x) = sum over stalls of max(len - x, 0) / span.  A call
 *    whose send falls due at a random instant waits that long before its
 *    sender runs, so the residual's quantile q is a floor under the
 *    (1 - q) latency quantile of any open-loop client on that CPU;
 *  - the ideal RPC (perf_stall_ideal_rpc()): the open-loop latency of
 *    calls sent at fixed gaps by a client on one CPU to a server on
 *    another that needs service_ns of CPU per call, first come first
 *    served, the network wire_ns for both ways, and nothing else: no
 *    instruction of RPC software is counted.  Each CPU runs its side
 *    only outside its stalls (a stalled server's call is suspended and
 *    resumed).  What it reports is the best latency distribution any
 *    RPC library can have on these CPUs at that load.
 */
#ifndef DPRPC_PERF_STALL_H
#define DPRPC_PERF_STALL_H

#include <stddef.h>
#include <stdint.h>

#include "hist.h"

struct perf_stall {
	uint64_t at;  /* ns from the trace's start */
	uint64_t len; /* ns */
};

struct perf_stall_trace {
	struct perf_stall *s; /* n of them, in time order, disjoint */
	size_t n, cap;
	uint64_t span; /* ns the trace covers, from 0 */
};

/* Append a stall (at after the previous one's end): 0, or -ENOMEM. */
int perf_stall_add(struct perf_stall_trace *t, uint64_t at, uint64_t len);
void perf_stall_free(struct perf_stall_trace *t);

/* @out (empty, its own) := the instants inside both @a's and @b's stalls,
 * over the shorter span.  0, or -ENOMEM. */
int perf_stall_intersect(const struct perf_stall_trace *a, const struct perf_stall_trace *b,
	struct perf_stall_trace *out);

/* Nanoseconds of [@from, @to) inside @t's stalls (0 if @to <= @from). */
uint64_t perf_stall_overlap(const struct perf_stall_trace *t, uint64_t from, uint64_t to);

/* The longest stall's length (ns) inside [@from, @to), a stall cut at the
 * window's edges; 0 for none.  [0, UINT64_MAX): the whole trace. */
uint64_t perf_stall_longest(const struct perf_stall_trace *t, uint64_t from, uint64_t to);

/* The share of the span (0..1) spent in stalls longer than @min_ns. */
double perf_stall_lost(const struct perf_stall_trace *t, uint64_t min_ns);

/* The smallest x (ns) with P(residual > x) <= @q (0 < q < 1): see the
 * top.  0 when the stalls take no more than q of the span. */
uint64_t perf_stall_residual_quantile(const struct perf_stall_trace *t, double q);

/* The ideal RPC of the top over @client's and @server's traces (the same
 * clock and span): a call intended every @gap_ns from 0 until the
 * shorter span less 10 ms (so that every call completes within the
 * traces), each latency (completion at the client less the intended
 * time, ns) recorded in @lat.  Returns the calls simulated. */
uint64_t perf_stall_ideal_rpc(const struct perf_stall_trace *client,
	const struct perf_stall_trace *server, double gap_ns, uint64_t service_ns, uint64_t wire_ns,
	struct perf_hist *lat);

#endif
