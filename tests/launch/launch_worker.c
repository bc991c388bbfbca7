/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One worker of tests/test_launch.c's world, exec'd by it (no Criterion in
 * the worker process): launch through env://, call every other worker's
 * "rank", leave.
 *
 *   launch_worker RANK WORLD_SIZE PORT RUN_DIR
 *
 * The exit code says which step failed (0: all went well).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <rte_errno.h>

#include <dprpc/dprpc.h>

#define T_SEC (1000ull * 1000)

static int
h_rank(struct dprpc_request *req, void *arg)
{
	unsigned int r = dprpc_agent_rank(dprpc_request_agent(req));

	return dprpc_reply(req, &r, sizeof(r));
}

int
main(int argc, char **argv)
{
	static const struct dprpc_handler_def defs[] = {
		{"rank", h_rank, NULL, DPRPC_HANDLER_INLINE}};
	struct dprpc_launch_conf c;
	struct dprpc_agent *a;
	char name[16], err[256];
	unsigned int rank, n;
	int rc;

	if (argc != 5)
		return 2;
	rank = (unsigned int)atoi(argv[1]);
	n = (unsigned int)atoi(argv[2]);
	snprintf(name, sizeof(name), "w%u", rank);
	setenv("MASTER_ADDR", "127.0.0.1", 1);
	setenv("MASTER_PORT", argv[3], 1);
	setenv("RANK", argv[1], 1);
	setenv("WORLD_SIZE", argv[2], 1);
	dprpc_launch_conf_init(&c);
	c.name = name;
	c.run_dir = argv[4];
	c.timeout_us = 60 * T_SEC;
	c.agent.serve.handlers = defs;
	c.agent.serve.nb_handlers = 1;
	a = dprpc_launch(&c, err, sizeof(err));
	if (a == NULL) {
		fprintf(stderr, "w%u: launch: %s\n", rank, err);
		return 10;
	}
	if (dprpc_launch(&c, err, sizeof(err)) != NULL || rte_errno != EALREADY)
		return 11;
	if (dprpc_world_size(a) != n || dprpc_agent_rank(a) != rank)
		return 12;
	for (unsigned int to = 0; to < n; to++) {
		unsigned int got = ~0u;
		size_t len = sizeof(got);

		rc = dprpc_rpc_sync_id(
			a, to, dprpc_handler_id("rank"), NULL, 0, 30 * T_SEC, &got, &len, NULL);
		if (rc != 0 || len != sizeof(got) || got != to) {
			fprintf(stderr, "w%u: call to %u: %d, got %u\n", rank, to, rc, got);
			return 13;
		}
	}
	rc = dprpc_launch_shutdown(a, true, 30 * T_SEC, NULL);
	if (rc != 0) {
		fprintf(stderr, "w%u: shutdown: %d\n", rank, rc);
		return 14;
	}
	return dprpc_eal_cleanup() == 0 ? 0 : 15;
}
