/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * digits_server: the digits MLP served over dprpc with dynamic batching.
 *
 *   digits_server [EAL options] -- --name NAME --world WORLD --model FILE
 *       [--mode batched|inline] [--max-batch N] [--queue-max N]
 *       [--max-delay-us N] [--max-seconds N] [--worker-cpu N]
 *       [--compute thread|poller]
 *
 * Threads.  The main thread is the agent's poll loop (dprpc_poll()); the
 * "digits.classify" handler runs inline there.  In batched mode (the
 * default) it only admits: it parses the request, takes an item, and
 * hands it to the batcher (batcher.h) without blocking; a refusal is
 * answered at once with its error (-EBUSY when the queue is full), else
 * it returns DPRPC_DEFERRED.  A worker thread takes batches
 * (mb_next()), classifies each batch with one pair of sgemm calls
 * (mlp.h), and replies to every request of the batch itself; items the
 * batcher skips are answered -ETIME or -ECANCELED from there too.
 * The worker spins, then yields, then sleeps on a futex when there is
 * nothing to do; the handler wakes it (a futex wake, which never blocks)
 * only when it sleeps.  In inline mode the handler classifies its one
 * image on the poller and replies: the unbatched server to compare with.
 *
 * Items.  Each admitted request takes a struct item from a pool that only
 * the poller touches (alloc, free); the worker gives items back through an
 * SP/SC rte_ring that the poll loop empties.  The worker reads an item's
 * request and payload, written by the poller before mb_submit() publishes
 * the item (batcher.h: its release store of tail).
 *
 * Deadlines and cancellation come from dprpc (docs/serving.md); the
 * batcher's clock is the TSC (rte_rdtsc()), the library's clock:
 *  - an item's deadline is its request's, dprpc_request_deadline_tsc():
 *    the caller's timeout travelled with the call, less its round trip.
 *    The batcher wakes the worker at the earliest one, so an item whose
 *    deadline passes while it waits is answered -ETIME then (as the
 *    library answers a request late in its own queues), never computed;
 *  - an item is cancelled once dprpc_request_cancelled() says so: the
 *    caller's dprpc_future_cancel() sent a CANCEL frame, or the caller was
 *    declared down or restarted.  The flag is set on the poller and read
 *    by the worker (relaxed: seen soon, not at once; a batch already
 *    formed is computed and answered, the answer dropped as stale).  A
 *    cancel rings no doorbell: the item is taken out, answered -ECANCELED,
 *    when the worker next looks (its batch closing, a new item, a
 *    deadline).
 * Overload: admission refuses beyond --queue-max with -EBUSY at once
 * (dprpc_reply_busy(), message "digits: overloaded (queue full)"), with a
 * retry-after hint the caller reads in dprpc_error.retry_after_us: the
 * batches the items in flight make, times the mean time the computing
 * thread took per batch (batch_tsc); before the first batch, the agent's
 * own estimate.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_pause.h>
#include <rte_ring.h>

#include <dprpc/dprpc.h>

#include "batcher.h"
#include "mlp.h"
#include "proto.h"

/* How long the graceful shutdown after digits.stop waits for the client. */
#define SHUTDOWN_TIMEOUT_US (10 * 1000 * 1000)

struct item {
	struct dprpc_request *req;
	const struct digits_req *in; /* the request's payload, valid until answered */
	uint64_t id;
	bool in_use; /* poller only */
};

struct server {
	struct dprpc_agent *agent;
	struct mlp model_poller; /* inline mode: the poller's scratch */
	struct mlp model_worker; /* batched mode: the worker's */
	struct mb *mb;
	unsigned int max_batch;
	struct item *items;
	unsigned int nb_items;
	unsigned int free_hint;
	struct rte_ring *done; /* items the worker is done with -> poller */
	pthread_t worker;
	bool batched;
	/* The worker's doorbell: the handler adds one after each admission
	 * and wakes the worker if it said it sleeps.  seq_cst on both sides
	 * (the Dekker pattern: the handler's seq increment before its load
	 * of sleeping, the worker's store of sleeping before the kernel
	 * compares seq), so no wake is lost. */
	atomic_uint seq;
	atomic_bool sleeping;
	atomic_bool stop_worker; /* main -> worker (seq_cst, then a doorbell) */
	atomic_bool stop;	 /* "digits.stop" -> main loop */
	uint64_t inline_computed;
	unsigned int in_flight; /* items in use (poller only) */
	bool compute_on_poller; /* --compute poller: no worker thread */
	/* The computing thread's: a batch, its pixels, its classes. */
	struct mb_item *batch;
	const uint8_t **px;
	uint8_t *cls;
	int worker_cpu; /* -1: any CPU */
	/* Mean time to classify and answer one batch, TSC cycles, an EWMA
	 * (1/8): written by the computing thread, read by the poller for
	 * the retry-after hint (relaxed: an estimate). */
	_Atomic uint64_t batch_tsc;
};

static uint64_t
now_ns(void *arg)
{
	struct timespec ts;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The batcher's clock: the TSC, which the library's deadlines use. */
static uint64_t
now_tsc(void *arg)
{
	(void)arg;
	return rte_rdtsc();
}

static uint64_t
us_to_tsc(uint64_t us)
{
	return us * (rte_get_tsc_hz() / 1000000u);
}

static void
doorbell(struct server *s)
{
	atomic_fetch_add(&s->seq, 1);
	if (atomic_load(&s->sleeping))
		syscall(SYS_futex, &s->seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* ---- items: the poller's pool ---- */

static struct item *
item_alloc(struct server *s)
{
	for (unsigned int k = 0; k < s->nb_items; k++) {
		unsigned int i = (s->free_hint + k) % s->nb_items;

		if (!s->items[i].in_use) {
			s->free_hint = i + 1;
			s->items[i].in_use = true;
			s->in_flight++;
			return &s->items[i];
		}
	}
	return NULL;
}

/* Poller: take back what the worker is done with. */
static void
items_reclaim(struct server *s)
{
	void *p[64];
	unsigned int n;

	while ((n = rte_ring_sc_dequeue_burst(s->done, p, 64, NULL)) > 0)
		for (unsigned int i = 0; i < n; i++) {
			((struct item *)p[i])->in_use = false;
			s->in_flight--;
		}
}

/* Worker: this item is answered; the poller may reuse it. */
static void
item_done(struct server *s, struct item *it)
{
	/* Never full: it holds nb_items. */
	while (rte_ring_sp_enqueue(s->done, it) != 0)
		rte_pause();
}

/* The batcher's cancellation hook (worker, and poller at admission): the
 * caller cancelled the call (dprpc_future_cancel()) or went away. */
static bool
item_cancelled(void *arg, void *ctx)
{
	const struct item *it = ctx;

	(void)arg;
	return dprpc_request_cancelled(it->req);
}

/* The batcher's skip hook (worker): answered, never computed. */
static void
item_skipped(void *arg, void *ctx, enum mb_skip_reason why)
{
	struct server *s = arg;
	struct item *it = ctx;

	/* -ETIME, as the library answers a request whose deadline passed in
	 * its queues; the caller's own timer, a little later, says
	 * -ETIMEDOUT.  A cancelled item's answer is dropped by the caller
	 * (stale); the request must be answered all the same. */
	if (why == MB_EXPIRED) {
		/* The batcher's clock is the library's: answered and counted
		 * in the agent's requests_expired. */
		if (dprpc_reply_expired(it->req, "digits: deadline passed while queued") != 1)
			dprpc_reply_error(it->req, -ETIME, "digits: deadline passed while queued");
	} else
		dprpc_reply_error(it->req, -ECANCELED, "digits: cancelled while queued");
	item_done(s, it);
}

/* ---- handlers (poller) ---- */

static int
parse(struct dprpc_request *req, const struct digits_req **in)
{
	size_t len;
	const struct digits_req *r = dprpc_request_payload(req, &len);

	if (r == NULL || len != sizeof(*r))
		return -EINVAL;
	for (unsigned int i = 0; i < DIGITS_PIXELS; i++)
		if (r->pixels[i] > 16)
			return -EINVAL;
	*in = r;
	return 0;
}

/* The request's absolute deadline (TSC), MB_NO_DEADLINE for none: the
 * caller's timeout, carried by the call. */
static uint64_t
request_deadline(const struct dprpc_request *req)
{
	uint64_t d = dprpc_request_deadline_tsc(req);

	return d == 0 ? MB_NO_DEADLINE : d;
}

/* The retry-after hint of a refusal (poller): the batches the items in
 * flight make, times the mean batch time; 0 (the agent's estimate)
 * before the first batch. */
static uint32_t
retry_hint_us(const struct server *s)
{
	uint64_t per = atomic_load_explicit(&s->batch_tsc, memory_order_relaxed);
	uint64_t us = (s->in_flight / s->max_batch + 1) * per / (rte_get_tsc_hz() / 1000000u);

	return us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

static int
h_classify_batched(struct dprpc_request *req, void *arg)
{
	struct server *s = arg;
	const struct digits_req *in;
	struct item *it;
	int rc;

	rc = parse(req, &in);
	if (rc != 0)
		return dprpc_reply_error(req, rc, "digits: want a struct digits_req");
	items_reclaim(s);
	it = item_alloc(s);
	if (it == NULL)
		return dprpc_reply_error(req, -EBUSY, "digits: overloaded (no item)");
	it->req = req;
	it->in = in;
	it->id = in->id;
	rc = mb_submit(s->mb, it, request_deadline(req));
	if (rc != 0) {
		it->in_use = false;
		s->in_flight--;
		if (rc == -ETIMEDOUT)
			return dprpc_reply_error(req, -ETIME, "digits: deadline passed");
		if (rc == -EBUSY)
			return dprpc_reply_busy(
				req, retry_hint_us(s), "digits: overloaded (queue full)");
		return dprpc_reply_error(req, rc, "digits: cancelled");
	}
	doorbell(s);
	return DPRPC_DEFERRED;
}

static int
h_classify_inline(struct dprpc_request *req, void *arg)
{
	struct server *s = arg;
	const struct digits_req *in;
	struct digits_resp out;
	const uint8_t *px;
	uint8_t cls;
	int rc;

	rc = parse(req, &in);
	if (rc != 0)
		return dprpc_reply_error(req, rc, "digits: want a struct digits_req");
	px = in->pixels;
	mlp_classify(&s->model_poller, &px, 1, &cls);
	s->inline_computed++;
	out.id = in->id;
	out.cls = cls;
	out.batch = 1;
	return dprpc_reply(req, &out, sizeof(out));
}

static void
stats_fill(struct server *s, struct digits_stats *d)
{
	struct dprpc_agent_stats as;
	struct mb_stats m;

	memset(d, 0, sizeof(*d));
	if (s->mb != NULL) {
		mb_stats_get(s->mb, &m);
		d->admitted = m.admitted;
		d->refused_full = m.refused_full;
		d->refused_expired = m.refused_expired;
		d->refused_cancelled = m.refused_cancelled;
		d->batches = m.batches;
		d->computed = m.computed;
		d->expired = m.expired;
		d->cancelled = m.cancelled;
		d->max_batch_seen = m.max_batch_seen;
	} else {
		d->admitted = d->computed = d->batches = s->inline_computed;
		d->max_batch_seen = s->inline_computed > 0;
	}
	if (s->agent != NULL && dprpc_agent_stats_get(s->agent, &as) == 0)
		d->cancels_received = as.cancels_received;
}

static int
h_stats(struct dprpc_request *req, void *arg)
{
	struct digits_stats d;

	stats_fill(arg, &d);
	return dprpc_reply(req, &d, sizeof(d));
}

static int
h_stop(struct dprpc_request *req, void *arg)
{
	struct server *s = arg;

	atomic_store(&s->stop, true);
	return dprpc_reply(req, NULL, 0);
}

/* ---- computing batches ---- */

/* Classify one batch and answer each of its requests (the thread that
 * computes: the worker, or the poller with --compute poller). */
static void
run_batch(struct server *s, struct mb_item *batch, unsigned int n)
{
	uint64_t t0 = rte_rdtsc(), avg;

	for (unsigned int i = 0; i < n; i++)
		s->px[i] = ((struct item *)batch[i].ctx)->in->pixels;
	mlp_classify(&s->model_worker, s->px, n, s->cls);
	for (unsigned int i = 0; i < n; i++) {
		struct item *it = batch[i].ctx;
		struct digits_resp out = {.id = it->id, .cls = s->cls[i], .batch = n};

		dprpc_reply(it->req, &out, sizeof(out));
		item_done(s, it);
	}
	/* Relaxed: an estimate, read by the poller (struct server). */
	avg = atomic_load_explicit(&s->batch_tsc, memory_order_relaxed);
	atomic_store_explicit(&s->batch_tsc,
		avg == 0 ? rte_rdtsc() - t0 : avg - avg / 8 + (rte_rdtsc() - t0) / 8,
		memory_order_relaxed);
}

static void *
worker_main(void *arg)
{
	struct server *s = arg;
	struct mb_item *batch = s->batch;
	uint64_t wake, idle_since = 0;
	for (;;) {
		unsigned int seq = atomic_load(&s->seq);
		int n = mb_next(s->mb, batch, &wake);

		if (n > 0) {
			run_batch(s, batch, (unsigned int)n);
			idle_since = 0;
			continue;
		}
		if (atomic_load(&s->stop_worker))
			break;
		/* Nothing closes now: spin ~20 us, yield to 2 ms, then sleep
		 * until the doorbell, the batch's max_delay or the first
		 * waiting deadline (wake, TSC). */
		uint64_t t = now_tsc(NULL);

		if (idle_since == 0)
			idle_since = t;
		if (wake != MB_NO_DEADLINE && wake <= t)
			continue;
		if (t - idle_since < us_to_tsc(20)) {
			rte_pause();
		} else if (t - idle_since < us_to_tsc(2000)) {
			sched_yield();
		} else {
			struct timespec ts, *tsp = NULL;

			if (wake != MB_NO_DEADLINE) {
				/* Rounded up: woken early, it would spin. */
				uint64_t d = wake - t, hz = rte_get_tsc_hz();
				uint64_t ns = d / hz * 1000000000u +
					      ((d % hz) * 1000000000u + hz - 1) / hz;

				ts.tv_sec = (time_t)(ns / 1000000000u);
				ts.tv_nsec = (long)(ns % 1000000000u);
				tsp = &ts;
			}
			atomic_store(&s->sleeping, true);
			syscall(SYS_futex, &s->seq, FUTEX_WAIT_PRIVATE, seq, tsp, NULL, 0);
			atomic_store(&s->sleeping, false);
			idle_since = 0;
		}
	}
	/* Stopping: what still waits is answered -ECANCELED. */
	mb_drain(s->mb);
	return NULL;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"name", required_argument, NULL, 'n'},
		{"world", required_argument, NULL, 'w'},
		{"model", required_argument, NULL, 'm'},
		{"mode", required_argument, NULL, 'M'},
		{"max-batch", required_argument, NULL, 'b'},
		{"queue-max", required_argument, NULL, 'q'},
		{"max-delay-us", required_argument, NULL, 'd'},
		{"max-seconds", required_argument, NULL, 't'},
		{"worker-cpu", required_argument, NULL, 'c'},
		{"compute", required_argument, NULL, 'C'},
		{NULL, 0, NULL, 0},
	};
	static struct server srv;
	struct server *s = &srv;
	const char *name = NULL, *world = NULL, *model = NULL;
	unsigned int queue_max = 256, max_seconds = 600, idle = 0;
	uint64_t max_delay_us = 0, end;
	struct dprpc_agent_conf conf;
	struct digits_stats st;
	struct dprpc_error cerr = {0};
	int n, c, src, rc = 0;

	n = dprpc_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "EAL init failed: %s\n", strerror(-n));
		return 1;
	}
	argc -= n;
	argv += n;
	s->batched = true;
	s->max_batch = 32;
	s->worker_cpu = -1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			name = optarg;
			break;
		case 'w':
			world = optarg;
			break;
		case 'm':
			model = optarg;
			break;
		case 'M':
			if (strcmp(optarg, "batched") != 0 && strcmp(optarg, "inline") != 0)
				return 2;
			s->batched = strcmp(optarg, "batched") == 0;
			break;
		case 'b':
			s->max_batch = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'q':
			queue_max = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'd':
			max_delay_us = strtoull(optarg, NULL, 0);
			break;
		case 't':
			max_seconds = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'c':
			s->worker_cpu = (int)strtol(optarg, NULL, 0);
			break;
		case 'C':
			if (strcmp(optarg, "thread") != 0 && strcmp(optarg, "poller") != 0)
				return 2;
			s->compute_on_poller = strcmp(optarg, "poller") == 0;
			break;
		default:
			return 2;
		}
	}
	if (name == NULL || world == NULL || model == NULL || s->max_batch == 0 || queue_max == 0 ||
		rte_eth_dev_count_avail() == 0) {
		fprintf(stderr,
			"usage: digits_server [EAL options with a port] -- --name NAME "
			"--world WORLD --model FILE [--mode batched|inline] [--max-batch N] "
			"[--queue-max N] [--max-delay-us N] [--max-seconds N] [--worker-cpu N] "
			"[--compute thread|poller]\n");
		return 2;
	}
	rc = mlp_load(s->batched ? &s->model_worker : &s->model_poller, model, s->max_batch);
	if (rc != 0) {
		fprintf(stderr, "%s: %s\n", model, strerror(-rc));
		return 1;
	}
	if (s->batched) {
		struct mb_conf mc = {
			.max_batch = s->max_batch,
			.queue_max = queue_max,
			.max_delay = us_to_tsc(max_delay_us),
			.now = now_tsc,
			.cancelled = item_cancelled,
			.skipped = item_skipped,
			.skipped_arg = s,
		};

		/* Queued plus one batch being computed. */
		s->nb_items = queue_max + s->max_batch;
		s->items = calloc(s->nb_items, sizeof(*s->items));
		s->mb = mb_create(&mc);
		s->batch = calloc(s->max_batch, sizeof(*s->batch));
		s->px = calloc(s->max_batch, sizeof(*s->px));
		s->cls = calloc(s->max_batch, 1);
		s->done = rte_ring_create("digits_done", rte_align32pow2(s->nb_items + 1),
			SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (s->items == NULL || s->mb == NULL || s->done == NULL || s->batch == NULL ||
			s->px == NULL || s->cls == NULL) {
			fprintf(stderr, "out of memory\n");
			return 1;
		}
	}

	dprpc_agent_conf_init(&conf);
	conf.name = name;
	conf.world = world;
	conf.port.id = 0;
	/* Every queued request is a request object held (deferred). */
	if (conf.serve.max_requests < s->nb_items + 64)
		conf.serve.max_requests = s->nb_items + 64;
	s->agent = dprpc_agent_create(&conf);
	if (s->agent == NULL) {
		fprintf(stderr, "agent: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	if (dprpc_register(s->agent, "digits.classify",
		    s->batched ? h_classify_batched : h_classify_inline, s,
		    DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(s->agent, "digits.stats", h_stats, s, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(s->agent, "digits.stop", h_stop, s, DPRPC_HANDLER_INLINE) != 0)
		return 1;
	if (s->batched && !s->compute_on_poller) {
		/* EAL pinned this thread to its lcore's CPU; the worker gets
		 * --worker-cpu, or any CPU, not the poller's by inheritance. */
		cpu_set_t cpus;
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		CPU_ZERO(&cpus);
		for (long i = 0; i < ncpu && i < CPU_SETSIZE; i++)
			if (s->worker_cpu < 0 || i == s->worker_cpu)
				CPU_SET((int)i, &cpus);
		if (pthread_create(&s->worker, NULL, worker_main, s) != 0)
			return 1;
		if (pthread_setaffinity_np(s->worker, sizeof(cpus), &cpus) != 0)
			fprintf(stderr, "%s: worker affinity not set\n", name);
	}
	if (dprpc_agent_wait_link(s->agent, 20 * 1000 * 1000) != 0) {
		fprintf(stderr, "%s: link did not come up\n", name);
		rc = 1;
		atomic_store(&s->stop, true);
	}
	if (s->batched)
		printf("%s: serving digits, batched (max batch %u, queue %u, max delay %" PRIu64
		       " us, computed on %s)\n",
			name, s->max_batch, queue_max, max_delay_us,
			s->compute_on_poller ? "the poller" : "a worker thread");
	else
		printf("%s: serving digits, inline (unbatched)\n", name);
	fflush(stdout);

	/* The poll loop.  Idle back-off as hello_rpc's, but never asleep
	 * while the worker has requests: their replies wait in the agent's
	 * tx ring for this thread to send them.  Then it only yields (the
	 * worker may share its CPU). */
	end = now_ns(NULL) + (uint64_t)max_seconds * 1000000000u;
	while (!atomic_load(&s->stop) && now_ns(NULL) < end) {
		if (dprpc_poll(s->agent, 32) > 0) {
			idle = 0;
			continue;
		}
		if (s->batched && s->compute_on_poller) {
			uint64_t wake;
			int nb = mb_next(s->mb, s->batch, &wake);

			if (nb > 0) {
				run_batch(s, s->batch, (unsigned int)nb);
				idle = 0;
				continue;
			}
		}
		if (s->batched)
			items_reclaim(s);
		if (s->in_flight > 0) {
			idle = 0;
			sched_yield();
		} else if (++idle > 1000) {
			usleep(50);
		}
	}
	if (!atomic_load(&s->stop)) {
		fprintf(stderr, "%s: not stopped after %u s\n", name, max_seconds);
		rc = 1;
	}
	if (s->batched && !s->compute_on_poller) {
		atomic_store(&s->stop_worker, true);
		doorbell(s);
		pthread_join(s->worker, NULL);
	} else if (s->batched) {
		mb_drain(s->mb);
	}
	stats_fill(s, &st);
	printf("%s: admitted %" PRIu64 ", computed %" PRIu64 " in %" PRIu64
	       " batches (largest %" PRIu64 "), refused: %" PRIu64 " full, %" PRIu64
	       " expired, %" PRIu64 " cancelled; skipped in queue: %" PRIu64 " expired, %" PRIu64
	       " cancelled; cancels received %" PRIu64 "\n",
		name, st.admitted, st.computed, st.batches, st.max_batch_seen, st.refused_full,
		st.refused_expired, st.refused_cancelled, st.expired, st.cancelled,
		st.cancels_received);
	/* Stopped by the client: both end with a graceful shutdown, which
	 * waits until the client has read every answer, digits.stop's
	 * included, before the port closes (a lost answer is resent).
	 * Otherwise the client is not waited for. */
	src = dprpc_shutdown(s->agent, atomic_load(&s->stop), SHUTDOWN_TIMEOUT_US, &cerr);
	if (src != 0) {
		fprintf(stderr, "%s: shutdown: %s %s\n", name, strerror(-src), cerr.msg);
		rc = 1;
	}
	mb_free(s->mb);
	rte_ring_free(s->done);
	free(s->items);
	free(s->batch);
	free(s->px);
	free(s->cls);
	mlp_free(&s->model_worker);
	mlp_free(&s->model_poller);
	dprpc_eal_cleanup();
	return rc;
}
