/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RRef modes.  rref times remote() + to_here() + release round trips,
 * then proxy rpc_sync calls on one long-lived RRef; rref-churn creates and
 * releases --rrefs RRefs, --batch alive at a time, and asks the owner after
 * each batch, through the "rrefstat" handler here, how many it still holds
 * and how much memory it has resident.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
	dprpc_rref_debug_info(dprpc_request_agent(req), &d);
	st.owners = d.num_owner_rrefs;
	st.rss_kb = rss_kb();
	return dprpc_reply(req, &st, sizeof(st));
}

/* remote() + to_here() + release, round after round; then proxy rpc_sync
 * calls on one long-lived RRef, for as long again. */
int
perf_rref_client(uint16_t port, const struct perf_opts *o, struct perf_result *r)
{
	static uint8_t payload[DPRPC_MAX_FRAME_PAYLOAD], out[DPRPC_MAX_FRAME_PAYLOAD];
	struct dprpc_agent *a = perf_rpc_agent("client", port);
	uint32_t hid = dprpc_handler_id("echo");
	struct perf_clock k, kp;
	struct perf_result rp;
	struct dprpc_rref *base, *x;
	uint64_t t0, t1;
	size_t out_len;
	int rc;

	if (a == NULL || dprpc_agent_wait_link(a, 20 * 1000 * 1000) != 0 ||
		perf_clock_init(&k, o) != 0 || perf_clock_init(&kp, o) != 0)
		return -EIO;
	memset(payload, 0x5a, sizeof(payload));
	base = dprpc_remote_id(a, 0, hid, payload, o->payload, DPRPC_TIMEOUT_DEFAULT);
	out_len = sizeof(out);
	if (base == NULL ||
		dprpc_rref_to_here(base, DPRPC_TIMEOUT_DEFAULT, out, &out_len, NULL) != 0)
		return -EIO;
	while ((t0 = rte_rdtsc()) < k.end) {
		x = dprpc_remote_id(a, 0, hid, payload, o->payload, DPRPC_TIMEOUT_DEFAULT);
		if (x == NULL)
			continue;
		out_len = sizeof(out);
		rc = dprpc_rref_to_here(x, DPRPC_TIMEOUT_DEFAULT, out, &out_len, NULL);
		t1 = rte_rdtsc();
		if (rc == 0)
			perf_clock_record(&k, t0, t1);
		dprpc_rref_release(x);
	}
	/* Then proxies, for a second window of the same length. */
	free(kp.samples);
	if (perf_clock_init(&kp, o) != 0)
		return -EIO;
	while ((t0 = rte_rdtsc()) < kp.end) {
		out_len = sizeof(out);
		rc = dprpc_rref_rpc_sync(
			base, "value", NULL, 0, DPRPC_TIMEOUT_DEFAULT, out, &out_len, NULL);
		t1 = rte_rdtsc();
		if (rc == 0)
			perf_clock_record(&kp, t0, t1);
	}
	dprpc_rref_release(base);
	perf_clock_finish(&k, o, r);
	perf_clock_finish(&kp, o, &rp);
	r->proxy_p50_us = rp.p50_us;
	r->proxy_p99_us = rp.p99_us;
	/* Every user reference deleted on the owner before the agent goes. */
	(void)dprpc_rref_shutdown(a, 2 * 1000 * 1000, 0);
	return perf_client_finish(a, r);
}

static int
churn_stat(struct dprpc_agent *a, struct perf_rrefstat *st)
{
	size_t len = sizeof(*st);
	int rc;

	/* The DELETEs of a batch may hold every call slot for a while. */
	while ((rc = dprpc_rpc_sync(a, "server", "rrefstat", NULL, 0, DPRPC_TIMEOUT_DEFAULT, st,
			&len, NULL)) == -EAGAIN ||
		rc == -ENOBUFS)
		dprpc_poll(a, 32);
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
