/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stall watch: while a measurement runs, when did this machine run
 * none of a CPU's threads, whatever the threads were doing?
 *
 * One thread per online CPU (0 to sysconf(_SC_NPROCESSORS_ONLN) - 1,
 * whatever the starting thread's affinity), pinned to it, at the lowest
 * real-time priority (SCHED_FIFO 1), sleeps to absolute deadlines
 * --period apart and notes every wake-up later than its deadline by more
 * than a threshold, as a stall trace (stall.h) in nanoseconds from the
 * watch's start.  A real-time thread preempts every ordinary thread of the
 * guest, so the guest's own scheduling (our threads, other processes)
 * does not delay it: what does is the CPU taken from the whole guest (the
 * hypervisor running another guest: steal), an interrupt or a kernel
 * section that does not preempt (without full preemption, any process's
 * system call or page fault).  A call that waits through a stall of every
 * CPU at once waits for the machine, not for any code in the guest's user
 * space: perf lateness subtracts those from each call's lateness after
 * submission.
 *
 * The watch costs each CPU one wake-up per period (a few microseconds).
 * Without the privilege to use SCHED_FIFO (not root, no CAP_SYS_NICE) it
 * still runs, as an ordinary thread, and says so (perf_watch_realtime()):
 * its stalls then include the guest's scheduling too.  So does a thread
 * that could not be pinned (a CPU outside a cgroup's set).
 */
#ifndef DPRPC_PERF_WATCH_H
#define DPRPC_PERF_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "stall.h"

struct perf_watch;

/* Start watching every online CPU: wake-ups every
 * @period_ns (> 0), a stall being a wake-up more than @threshold_ns late.
 * Returns the watch, or NULL with errno (EINVAL, ENOMEM, or what
 * pthread_create() returned). */
struct perf_watch *perf_watch_start(uint64_t period_ns, uint64_t threshold_ns);

/* Nanoseconds since the watch started (CLOCK_MONOTONIC, as its traces). */
uint64_t perf_watch_now(const struct perf_watch *w);

/* Stop the threads and compute the traces.  0, or -ENOMEM (a trace could
 * not grow: its stalls are incomplete). */
int perf_watch_stop(struct perf_watch *w);

/* After perf_watch_stop(): the CPUs watched, CPU @i's trace (i <
 * perf_watch_cpus()), the trace of the instants at which every CPU was
 * stalled at once, and whether every thread ran pinned and SCHED_FIFO. */
unsigned int perf_watch_cpus(const struct perf_watch *w);
const struct perf_stall_trace *perf_watch_trace(const struct perf_watch *w, unsigned int i);
const struct perf_stall_trace *perf_watch_all(const struct perf_watch *w);
bool perf_watch_realtime(const struct perf_watch *w);

/* Stop if running, and free everything.  NULL is ignored. */
void perf_watch_free(struct perf_watch *w);

#endif
