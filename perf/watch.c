/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stall watch (watch.h).  Each thread writes its own trace and
 * nothing else; perf_watch_stop() reads the traces after joining the
 * threads (the join orders the writes before the reads).  The stop flag
 * is the only shared word.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setaffinity_np */
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "watch.h"

struct watch_cpu {
	struct perf_watch *w;
	unsigned int cpu;
	pthread_t th;
	struct perf_stall_trace t;
	int err;       /* ENOMEM: the trace could not grow */
	bool pinned;   /* on its CPU */
	bool realtime; /* pinned, and SCHED_FIFO taken */
	bool started;  /* th is a thread to join */
};

struct perf_watch {
	uint64_t start; /* CLOCK_MONOTONIC ns */
	uint64_t period, threshold;
	/* Set by perf_watch_stop(), polled by the threads once a period.
	 * Relaxed both ways: it publishes nothing (the join does). */
	atomic_bool stop;
	bool stopped;
	unsigned int n;
	struct watch_cpu *c;
	struct perf_stall_trace all;
};

uint64_t
perf_watch_now(const struct perf_watch *w)
{
	return perf_mono_ns() - w->start;
}

static void *
watch_main(void *arg)
{
	struct watch_cpu *c = arg;
	struct perf_watch *w = c->w;
	struct sched_param sp = {.sched_priority = 1};
	uint64_t due = perf_watch_now(w), now;
	struct timespec ts;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(c->cpu, &set);
	c->pinned = pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
	c->realtime = c->pinned && pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
	while (!atomic_load_explicit(&w->stop, memory_order_relaxed)) {
		due += w->period;
		ts.tv_sec = (time_t)((w->start + due) / 1000000000u);
		ts.tv_nsec = (long)((w->start + due) % 1000000000u);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		now = perf_watch_now(w);
		if (now > due + w->threshold) {
			if (c->err == 0 && perf_stall_add(&c->t, due, now - due) != 0)
				c->err = ENOMEM;
			due = now; /* no burst of wake-ups to catch up */
		}
	}
	c->t.span = perf_watch_now(w);
	return NULL;
}

struct perf_watch *
perf_watch_start(uint64_t period_ns, uint64_t threshold_ns)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	struct perf_watch *w;
	unsigned int i;
	int rc;

	if (period_ns == 0 || online < 1) {
		errno = EINVAL;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return NULL;
	w->period = period_ns;
	w->threshold = threshold_ns;
	w->n = (unsigned int)(online < CPU_SETSIZE ? online : CPU_SETSIZE);
	w->c = calloc(w->n, sizeof(*w->c));
	if (w->c == NULL) {
		free(w);
		errno = ENOMEM;
		return NULL;
	}
	w->start = perf_mono_ns();
	for (i = 0; i < w->n; i++) {
		w->c[i] = (struct watch_cpu){.w = w, .cpu = i};
		rc = pthread_create(&w->c[i].th, NULL, watch_main, &w->c[i]);
		if (rc != 0) {
			perf_watch_free(w);
			errno = rc;
			return NULL;
		}
		w->c[i].started = true;
	}
	return w;
}

static void
watch_join(struct perf_watch *w)
{
	unsigned int i;

	atomic_store_explicit(&w->stop, true, memory_order_relaxed);
	for (i = 0; i < w->n; i++)
		if (w->c[i].started) {
			pthread_join(w->c[i].th, NULL);
			w->c[i].started = false;
		}
	w->stopped = true;
}

int
perf_watch_stop(struct perf_watch *w)
{
	struct perf_stall_trace acc;
	unsigned int i;
	int rc = 0;

	watch_join(w);
	for (i = 0; i < w->n; i++)
		if (w->c[i].err != 0)
			rc = -ENOMEM;
	/* The instants of every CPU's stalls: intersect one trace after the
	 * other. */
	perf_stall_free(&w->all);
	if (w->n == 0)
		return rc;
	for (i = 0; i < w->c[0].t.n && rc == 0; i++)
		if (perf_stall_add(&w->all, w->c[0].t.s[i].at, w->c[0].t.s[i].len) != 0)
			rc = -ENOMEM;
	w->all.span = w->c[0].t.span;
	for (i = 1; i < w->n && rc == 0; i++) {
		acc = (struct perf_stall_trace){0};
		if (perf_stall_intersect(&w->all, &w->c[i].t, &acc) != 0)
			rc = -ENOMEM;
		perf_stall_free(&w->all);
		w->all = acc;
	}
	return rc;
}

unsigned int
perf_watch_cpus(const struct perf_watch *w)
{
	return w->n;
}

const struct perf_stall_trace *
perf_watch_trace(const struct perf_watch *w, unsigned int i)
{
	return &w->c[i].t;
}

const struct perf_stall_trace *
perf_watch_all(const struct perf_watch *w)
{
	return &w->all;
}

bool
perf_watch_realtime(const struct perf_watch *w)
{
	unsigned int i;

	for (i = 0; i < w->n; i++)
		if (!w->c[i].realtime)
			return false;
	return w->n > 0;
}

void
perf_watch_free(struct perf_watch *w)
{
	unsigned int i;

	if (w == NULL)
		return;
	if (!w->stopped)
		watch_join(w);
	for (i = 0; i < w->n; i++)
		perf_stall_free(&w->c[i].t);
	perf_stall_free(&w->all);
	free(w->c);
	free(w);
}
