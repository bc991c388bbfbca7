/* SPDX-License-Identifier: BSD-3-Clause */
/* two_workers_calls: rpc_sync, and rpc_async with a then() step, between two workers of one
 * machine without a NIC.  Run: two_workers_calls alice & two_workers_calls bob [socket folder] */
#include <stdio.h>
#include <unistd.h>

#include <dprpc/dprpc.h>

static int
echo(struct dprpc_request *req, void *arg)
{
	size_t len;
	const void *p = dprpc_request_payload(req, &len);

	return dprpc_reply(req, p, len);
}

/* A then() step: the answer's length becomes the derived future's value. */
static int
length(struct dprpc_future *src, struct dprpc_future *dst, void *arg)
{
	const struct dprpc_error *e = dprpc_future_error(src);
	size_t len;

	dprpc_future_value(src, &len);
	return e ? e->code : dprpc_future_complete_copy(dst, &len, sizeof(len)); /* <0: fails it */
}

int
main(int argc, char **argv)
{
	const char *me = argc > 1 ? argv[1] : "alice", *dir = argc > 2 ? argv[2] : "/tmp/dprpc-2w";
	struct dprpc_agent_conf conf;
	char world[128], out[16] = "";
	size_t out_len = sizeof(out) - 1;

	snprintf(world, sizeof(world), "alice 0; bob 1; mesh memif:%s", dir); /* a memif link */
	dprpc_agent_conf_init(&conf);
	conf.name = me;
	conf.world = world;
	conf.serve.handlers =
		&(const struct dprpc_handler_def){.name = "echo", .fn = echo}; /* inline */
	conf.serve.nb_handlers = 1;
	struct dprpc_agent *a = dprpc_eal_init_local(NULL) == 0 ? dprpc_agent_create(&conf) : NULL;
	const char *peer = a ? dprpc_worker_name(a, 1 - dprpc_agent_rank(a)) : "-"; /* the other */
	int rc = dprpc_world_wait(a, 60000000, NULL, 0); /* the rendezvous: everyone is here */
	if (rc == 0)
		rc = dprpc_rpc_sync(a, peer, "echo", "sync", 4, 60000000, out, &out_len, NULL);
	struct dprpc_future *f = dprpc_rpc_async(a, peer, "echo", "async!", 6, 60000000);
	struct dprpc_future *n = dprpc_future_then(f, length, NULL); /* NULL in: NULL out */
	if (rc == 0)
		rc = dprpc_future_wait(n, 0); /* 0 once DONE; the call's timeout bounds it */
	printf("%s: rpc_sync got \"%s\", rpc_async + then got %zu bytes (%d)\n", me, out,
		rc ? 0 : *(const size_t *)dprpc_future_value(n, NULL), rc);
	dprpc_future_put(n);
	dprpc_future_put(f);
	int bye = dprpc_shutdown(a, true, 60000000, NULL); /* graceful: when both are done */
	dprpc_eal_cleanup();
	(void)rmdir(dir); /* the last one out removes the folder */
	return rc == 0 && bye == 0 ? 0 : 1;
}
