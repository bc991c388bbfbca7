/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CLOCK_MONOTONIC in nanoseconds, for the perf tools' wall-clock
 * measurements (dprpc-perf's driver and stall watch, dprpc-hiccup,
 * dprpc-mac-bench); the calls themselves are timed by the TSC.
 */
#ifndef DPRPC_PERF_CLOCK_H
#define DPRPC_PERF_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t
perf_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* DPRPC_PERF_CLOCK_H */
