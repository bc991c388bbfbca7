/* SPDX-License-Identifier: BSD-3-Clause */
/* two_workers_rref: each worker makes a value on the other (remote()), fetches it (to_here())
 * and calls a handler through the RRef (a proxy call, run on the owner), then releases it.
 * Run: two_workers_rref alice & two_workers_rref bob [socket folder] */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <dprpc/dprpc.h>

/* The RRef's value, made on its owner: the owner's name. */
static int
make(struct dprpc_request *req, void *arg)
{
	const char *me = dprpc_agent_name(dprpc_request_agent(req));

	return dprpc_reply(req, me, strlen(me));
}

/* A proxy call, run on the RRef's owner with its value: the value's length. */
static int
length(struct dprpc_request *req, void *arg)
{
	size_t len;

	dprpc_request_rref_value(req, &len);
	return dprpc_reply(req, &len, sizeof(len));
}

int
main(int argc, char **argv)
{
	static const struct dprpc_handler_def handlers[] = {
		{.name = "make", .fn = make}, {.name = "length", .fn = length}};
	const char *me = argc > 1 ? argv[1] : "alice", *dir = argc > 2 ? argv[2] : "/tmp/dprpc-2w";
	struct dprpc_agent_conf conf;
	char world[128], value[16] = "";
	size_t value_len = sizeof(value) - 1, len = 0, len_len = sizeof(len);

	snprintf(world, sizeof(world), "alice 0; bob 1; mesh memif:%s", dir); /* a memif link */
	dprpc_agent_conf_init(&conf);
	conf.name = me;
	conf.world = world;
	conf.serve.handlers = handlers;
	conf.serve.nb_handlers = 2;
	struct dprpc_agent *a = dprpc_eal_init_local(NULL) == 0 ? dprpc_agent_create(&conf) : NULL;
	const char *peer = a ? dprpc_worker_name(a, 1 - dprpc_agent_rank(a)) : "-"; /* the other */
	int rc = dprpc_world_wait(a, 60000000, NULL, 0); /* the rendezvous: everyone is here */
	struct dprpc_rref *r = dprpc_remote(a, peer, "make", NULL, 0, 60000000); /* a value there */
	if (rc == 0) /* the value, fetched from its owner */
		rc = dprpc_rref_to_here(r, 60000000, value, &value_len, NULL);
	if (rc == 0) /* "length" runs on the owner, with the value */
		rc = dprpc_rref_rpc_sync(r, "length", NULL, 0, 60000000, &len, &len_len, NULL);
	printf("%s: RRef on %s: to_here \"%s\", proxy length %zu (%d)\n", me, peer, value, len, rc);
	dprpc_rref_release(r); /* the owner is told, and frees the value: nobody holds it */
	int bye = dprpc_shutdown(a, true, 60000000, NULL); /* graceful: when both are done */
	dprpc_eal_cleanup();
	(void)rmdir(dir); /* the last one out removes the folder */
	return rc == 0 && bye == 0 ? 0 : 1;
}
