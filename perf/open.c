/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dprpc-perf's open mode: the open-loop engine (openloop.c) sending
 * --payload zero bytes to --handler of dprpc-perf's own server (echo;
 * spin and sleep take --service-us; any name a --role server registers),
 * answers not checked; then the report (per second and the whole window:
 * text, JSON or CSV, report.c) and the result handed to the driver.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <dprpc/dprpc.h>

#include "perf.h"

struct open_payload {
	const uint8_t *bytes;
	size_t len;
};

/* Every call the same payload. */
static const void *
open_fixed_request(void *ctx, uint64_t k, size_t *len)
{
	const struct open_payload *p = ctx;

	(void)k;
	*len = p->len;
	return p->bytes;
}

int
perf_open_client(uint16_t port, const struct perf_opts *o, struct perf_result *r)
{
	static struct perf_open_run run;
	uint8_t *payload = calloc(1, o->payload + 1);
	struct dprpc_agent *a = perf_rpc_agent("client", port);
	uint32_t hid = dprpc_handler_id(o->handler);
	struct open_payload p = {payload, o->payload};
	struct perf_open_source src = {open_fixed_request, NULL, &p};
	const char *why = NULL;
	int rc = 0;

	if (payload == NULL || a == NULL)
		why = "no memory or no agent";
	else if (hid == 0)
		why = "a bad --handler name";
	else if (dprpc_agent_wait_link(a, 20 * 1000 * 1000) != 0)
		why = "the link did not come up in 20 s";
	else if (perf_open_loop(a, 0, hid, perf_max_outstanding, o, &src, &run, r) != 0)
		why = "no memory for the histograms";
	if (why != NULL) {
		fprintf(stderr, "dprpc-perf: open client: %s\n", why);
		free(payload);
		if (a != NULL)
			(void)dprpc_agent_destroy(a);
		return -EIO;
	}
	if (!o->quiet) {
		rc = perf_open_spectrum(o, &run);
		perf_client_stats(a, r);
		perf_open_report(o, &run, r);
		fflush(stdout);
	}
	free(payload);
	perf_open_run_free(&run);
	if (rc != 0)
		return rc;
	return perf_client_finish(a, r);
}
