/* SPDX-License-Identifier: BSD-3-Clause */
/* two_workers_deferred: a handler that defers, calls another worker and answers once that
 * call is done.  Run: two_workers_deferred alice & two_workers_deferred bob [socket folder] */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <dprpc/dprpc.h>

/* The call out completed: its answer (or error) answers the deferred request. */
static void
answer(struct dprpc_future *f, void *req)
{
	const struct dprpc_error *e = dprpc_future_error(f);
	size_t len;
	const void *v = dprpc_future_value(f, &len);

	(void)(e ? dprpc_reply_error(req, e->code, e->msg) : dprpc_reply(req, v, len));
}

/* "who": no payload: this worker's name; a payload: the caller's "who", answered later. */
static int
who(struct dprpc_request *req, void *arg)
{
	struct dprpc_agent *a = dprpc_request_agent(req);

	if (dprpc_request_payload(req, NULL) == NULL)
		return dprpc_reply(req, dprpc_agent_name(a), strlen(dprpc_agent_name(a)));
	struct dprpc_future *f = dprpc_rpc_async(
		a, dprpc_worker_name(a, dprpc_request_caller(req)), "who", NULL, 0, 60000000);
	int rc = dprpc_future_add_callback(f, answer, req); /* -EINVAL for no future */
	dprpc_future_put(f); /* the call holds a reference of its own */
	return rc == 0 ? DPRPC_DEFERRED : rc;
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
	conf.serve.handlers = &(const struct dprpc_handler_def){.name = "who", .fn = who};
	conf.serve.nb_handlers = 1;
	struct dprpc_agent *a = dprpc_eal_init_local(NULL) == 0 ? dprpc_agent_create(&conf) : NULL;
	const char *peer = a ? dprpc_worker_name(a, 1 - dprpc_agent_rank(a)) : "-"; /* the other */
	int rc = dprpc_world_wait(a, 60000000, NULL, 0); /* the rendezvous: everyone is here */
	if (rc == 0) /* while this thread waits it polls, and so answers the peer's call back */
		rc = dprpc_rpc_sync(a, peer, "who", "?", 1, 60000000, out, &out_len, NULL);
	printf("%s: %s's \"who\" asked mine and answered \"%s\" (%d)\n", me, peer, out, rc);
	int bye = dprpc_shutdown(a, true, 60000000, NULL); /* graceful: when both are done */
	dprpc_eal_cleanup();
	(void)rmdir(dir); /* the last one out removes the folder */
	return rc == 0 && bye == 0 ? 0 : 1;
}
