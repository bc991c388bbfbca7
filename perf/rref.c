/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RRef modes.  rref times remote() + to_here() + release round trips
 * (with --value-size, also to_here() of one long-lived RRef and rpc_sync()
 * answering as many bytes), then proxy rpc_sync calls on one long-lived
 * RRef; rref-churn creates and releases --rrefs RRefs, --batch alive at a
 * time, and asks the owner after each batch, through the "rrefstat"
 * handler here, how many it still holds and how much memory it has
 * resident.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_errno.h>

#include <dprpc/dprpc.h>

#include "perf.h"

/* rref-churn: the server's RRef count and resident memory. */
struct perf_rrefstat {
	uint64_t owners, rss_kb;
};

static uint64_t
rss_kb(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f != NULL) {
		if (fscanf(f, "%lu %lu", &size, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE) / 1024;
}

int
perf_h_rrefstat(struct dprpc_request *req, void *arg)
{
	struct dprpc_rref_debug d;
	struct perf_rrefstat st;

	(void)arg;
	dprpc_rref_debug_get(dprpc_request_agent(req), &d);
	st.owners = d.num_owner_rrefs;
	st.rss_kb = rss_kb();
	return dprpc_reply(req, &st, sizeof(st));
}

/* A call of a window: 0 when it succeeded. */
typedef int (*rref_call_fn)(void *arg);

/* Time one call of @fn into @k, adding the time of a measured one to
 * *@busy; a failure is reported (the first few). */
static void
rref_time(struct perf_clock *k, uint64_t *busy, rref_call_fn fn, void *arg, const char *what)
{
	static unsigned int failures;
	uint64_t t0 = rte_rdtsc(), t1;
	int rc = fn(arg);

	t1 = rte_rdtsc();
	if (rc == 0) {
		perf_clock_record(k, t0, t1);
		if (t0 >= k->measure_from && t1 <= k->end)
			*busy += t1 - t0;
	} else if (failures++ < 5) {
		fprintf(stderr, "dprpc-perf: rref: %s failed: %s\n", what, strerror(-rc));
	}
}

/* One measuring window (o->warmup_s, then o->duration_s) of @fn calls,
 * one at a time, and, with @fn2, of @fn2 calls alternating with them (the
 * two measured under the same machine noise; the rate of each is then its
 * calls over the time they took, not over the window). */
static int
rref_window(const struct perf_opts *o, const char *what, struct perf_result *res, rref_call_fn fn,
	struct perf_result *res2, rref_call_fn fn2, void *arg)
{
	struct perf_clock k, k2;
	uint64_t busy = 0, busy2 = 0;

	if (perf_clock_init(&k, o) != 0)
		return -ENOMEM;
	if (fn2 != NULL && perf_clock_init(&k2, o) != 0) {
		free(k.samples);
		return -ENOMEM;
	}
	if (fn2 != NULL) {
		k2.measure_from = k.measure_from;
		k2.end = k.end;
	}
	for (unsigned int i = 0; rte_rdtsc() < k.end && !perf_stop; i++) {
		/* ABBA: neither pays for coming first (measured: whichever
		 * does looks slower by up to a quarter here). */
		if (fn2 != NULL && (i & 1))
			rref_time(&k2, &busy2, fn2, arg, "rpc_sync");
		rref_time(&k, &busy, fn, arg, what);
		if (fn2 != NULL && !(i & 1))
			rref_time(&k2, &busy2, fn2, arg, "rpc_sync");
	}
	perf_clock_finish(&k, o, res);
	if (fn2 == NULL)
		return 0;
	perf_clock_finish(&k2, o, res2);
	res->rate = busy > 0 ? (double)res->calls * (double)rte_get_tsc_hz() / (double)busy : 0;
	res2->rate = busy2 > 0 ? (double)res2->calls * (double)rte_get_tsc_hz() / (double)busy2 : 0;
	return 0;
}

struct rref_ctx {
	struct dprpc_agent *a;
	struct dprpc_rref *base;
	uint32_t hid;
	const void *args;
	size_t alen;
	uint8_t *out;
	size_t out_cap;
};

/* remote() + to_here() + release. */
static int
rref_round_trip(void *arg)
{
	struct rref_ctx *c = arg;
	struct dprpc_rref *x =
		dprpc_remote_id(c->a, 0, c->hid, c->args, c->alen, DPRPC_TIMEOUT_DEFAULT);
	size_t out_len = c->out_cap;
	int rc;

	if (x == NULL)
		return -rte_errno;
	rc = dprpc_rref_to_here(x, DPRPC_TIMEOUT_DEFAULT, c->out, &out_len, NULL);
	dprpc_rref_release(x);
	return rc;
}

/* to_here() of the long-lived RRef (with --value-size, a fetch). */
static int
rref_here(void *arg)
{
	struct rref_ctx *c = arg;
	size_t out_len = c->out_cap;

	return dprpc_rref_to_here(c->base, DPRPC_TIMEOUT_DEFAULT, c->out, &out_len, NULL);
}

/* rpc_sync() answered by the same handler, as many bytes. */
static int
rref_rpc_same(void *arg)
{
	struct rref_ctx *c = arg;
	size_t out_len = c->out_cap;

	return dprpc_rpc_sync_id(
		c->a, 0, c->hid, NULL, 0, DPRPC_TIMEOUT_DEFAULT, c->out, &out_len, NULL);
}

/* A proxy rpc_sync on the long-lived RRef (its handler answers the value). */
static int
rref_proxy(void *arg)
{
	struct rref_ctx *c = arg;
	size_t out_len = c->out_cap;

	return dprpc_rref_rpc_sync(
		c->base, "value", NULL, 0, DPRPC_TIMEOUT_DEFAULT, c->out, &out_len, NULL);
}

/*
 * remote() + to_here() + release, round after round; with --value-size
 * (the value made by the server's "blob" handler instead of the echoed
 * payload), then to_here() of one long-lived RRef (a fetch of the value)
 * alternating with rpc_sync() answering as many bytes, in one window;
 * then proxy rpc_sync calls on the long-lived RRef.
 */
int
perf_rref_client(uint16_t port, const struct perf_opts *o, struct perf_result *r)
{
	static uint8_t payload[DPRPC_MAX_FRAME_PAYLOAD];
	struct dprpc_agent *a = perf_rpc_agent("client", port);
	struct rref_ctx c = {
		.a = a,
		.hid = dprpc_handler_id(o->value_size > 0 ? "blob" : "echo"),
		.args = o->value_size > 0 ? NULL : payload,
		.alen = o->value_size > 0 ? 0 : o->payload,
		.out_cap = RTE_MAX((size_t)o->value_size, sizeof(payload)),
	};
	struct perf_result rp, rh, rv;
	size_t out_len;
	int rc = 0;

	c.out = malloc(c.out_cap);
	if (a == NULL || c.out == NULL || dprpc_agent_wait_link(a, 20 * 1000 * 1000) != 0) {
		free(c.out);
		return -EIO;
	}
	memset(payload, 0x5a, sizeof(payload));
	c.base = dprpc_remote_id(a, 0, c.hid, c.args, c.alen, DPRPC_TIMEOUT_DEFAULT);
	out_len = c.out_cap;
	if (c.base == NULL ||
		dprpc_rref_to_here(c.base, DPRPC_TIMEOUT_DEFAULT, c.out, &out_len, NULL) != 0 ||
		out_len != (o->value_size > 0 ? o->value_size : o->payload)) {
		free(c.out);
		return -EIO;
	}
	if (o->value_size > 0) {
		/* The value as the server made it, checked once. */
		for (size_t i = 0; i < out_len; i++)
			if (c.out[i] != (uint8_t)(i * 7 + (i >> 11)))
				r->corrupt++;
	}
	rc |= rref_window(o, "remote+to_here", r, rref_round_trip, NULL, NULL, &c);
	if (o->value_size > 0) {
		/* to_here and rpc_sync of the same size, call for call. */
		rc |= rref_window(o, "to_here", &rh, rref_here, &rv, rref_rpc_same, &c);
		r->here_p50_us = rh.p50_us;
		r->here_rate = rh.rate;
		r->rpcv_p50_us = rv.p50_us;
		r->rpcv_rate = rv.rate;
		r->ok = r->ok && rh.ok && rv.ok;
	}
	rc |= rref_window(o, "proxy", &rp, rref_proxy, NULL, NULL, &c);
	r->proxy_p50_us = rp.p50_us;
	r->proxy_p99_us = rp.p99_us;
	dprpc_rref_release(c.base);
	free(c.out);
	if (rc != 0)
		return -ENOMEM;
	/* Every user reference deleted on the owner before the agent goes. */
	(void)dprpc_rref_shutdown(a, 2 * 1000 * 1000, 0);
	return perf_client_finish(a, r);
}

static int
churn_stat(struct dprpc_agent *a, struct perf_rrefstat *st)
{
	struct dprpc_error err = {0};
	size_t len = sizeof(*st);
	int rc;

	/* The DELETEs of a batch may hold every call slot for a while. */
	while ((rc = dprpc_rpc_sync(a, "server", "rrefstat", NULL, 0, DPRPC_TIMEOUT_DEFAULT, st,
			&len, &err)) == -EAGAIN ||
		rc == -ENOBUFS)
		dprpc_poll(a, 32);
	if (rc != 0)
		fprintf(stderr, "dprpc-perf: rrefstat: %s (origin %u) %s\n", strerror(-rc),
			err.origin, err.msg);
	return rc;
}

/* Create and release o->rrefs RRefs on the server, o->batch alive at a
 * time; the server's resident memory after the first and last batch. */
int
perf_churn_client(uint16_t port, const struct perf_opts *o, struct perf_result *r)
{
	static struct dprpc_rref *rs[8192];
	struct dprpc_agent *a = perf_rpc_agent("client", port);
	uint32_t hid = dprpc_handler_id("echo");
	struct perf_rrefstat st;
	uint64_t done = 0, failed = 0, v, t0, hz = rte_get_tsc_hz();
	unsigned int i, n;

	if (a == NULL || dprpc_agent_wait_link(a, 20 * 1000 * 1000) != 0)
		return -EIO;
	t0 = rte_rdtsc();
	while (done < o->rrefs && !perf_stop) {
		n = (unsigned int)RTE_MIN((uint64_t)o->batch, o->rrefs - done);
		for (i = 0; i < n; i++) {
			v = done + i;
			while ((rs[i] = dprpc_remote_id(
					a, 0, hid, &v, sizeof(v), DPRPC_TIMEOUT_DEFAULT)) == NULL) {
				if (rte_errno != EAGAIN && rte_errno != ENOBUFS) {
					fprintf(stderr, "dprpc-perf: remote: %s\n",
						rte_strerror(rte_errno));
					dprpc_agent_dump(a, stderr);
					return -EIO;
				}
				dprpc_poll(a, 32);
			}
		}
		for (i = 0; i < n; i++) {
			struct dprpc_future *f = dprpc_rref_creation_future(rs[i]);
			int rc = dprpc_future_wait(f, 0);

			dprpc_future_put(f);
			if (rc != 0)
				failed++;
			dprpc_rref_release(rs[i]);
		}
		/* The owner has freed them all before the next batch. */
		do {
			dprpc_poll(a, 32);
			if (churn_stat(a, &st) != 0) {
				fprintf(stderr, "dprpc-perf: rrefstat failed\n");
				dprpc_agent_dump(a, stderr);
				return -EIO;
			}
		} while (st.owners != 0 && !perf_stop);
		if (done == 0)
			r->rss_first_kb = st.rss_kb;
		if (r->rss_warm_kb == 0 && done + n >= o->rrefs / 10)
			r->rss_warm_kb = st.rss_kb; /* after a tenth of the run */
		r->rss_last_kb = st.rss_kb;
		done += n;
	}
	r->owners_left = st.owners;
	r->calls = done;
	r->seconds = (double)(rte_rdtsc() - t0) / (double)hz;
	r->rate = (double)done / r->seconds;
	r->ok = done == o->rrefs && failed == 0;
	return perf_client_finish(a, r);
}
