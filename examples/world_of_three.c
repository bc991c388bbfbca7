/* SPDX-License-Identifier: BSD-3-Clause */
/* world_of_three: the rendezvous, an RRef w0 makes on w1 and forks to w2, an all_gather and a
 * graceful shutdown.  Run: world_of_three w0 & world_of_three w1 & world_of_three w2 [folder] */
#include <stdio.h>
#include <unistd.h>

#include <dprpc/dprpc.h>

static int
make(struct dprpc_request *req, void *arg)
{
	return dprpc_reply(req, "kept by w1", 10);
}

/* w0: an RRef made on w1 (remote() returns at once), forked to the caller in the answer. */
static int
give(struct dprpc_request *req, void *arg)
{
	struct dprpc_agent *a = dprpc_request_agent(req);
	struct dprpc_rref *r = dprpc_remote(a, "w1", "make", NULL, 0, 60000000);
	char fork[DPRPC_RREF_FORK_SIZE];
	int n = dprpc_rref_fork_to(r, dprpc_request_caller(req), fork, sizeof(fork));

	dprpc_rref_release(r); /* the fork keeps the value until w1 knows of the caller's */
	return n < 0 ? n : dprpc_reply(req, fork, (size_t)n);
}

int
main(int argc, char **argv)
{
	static const struct dprpc_handler_def handlers[] = {
		{.name = "make", .fn = make}, {.name = "give", .fn = give}};
	const char *me = argc > 1 ? argv[1] : "w0", *dir = argc > 2 ? argv[2] : "/tmp/dprpc-3w";
	struct dprpc_agent_conf conf;
	struct dprpc_gather *g = NULL;
	char world[128], value[16] = "", fork[DPRPC_RREF_FORK_SIZE];
	size_t fork_len = sizeof(fork), len = sizeof(value) - 1;

	snprintf(world, sizeof(world), "w0 0; w1 1; w2 2; mesh memif:%s", dir); /* a link a pair */
	dprpc_agent_conf_init(&conf);
	conf.name = me;
	conf.world = world;
	conf.serve.handlers = handlers;
	conf.serve.nb_handlers = 2;
	struct dprpc_agent *a = dprpc_eal_init_local(NULL) == 0 ? dprpc_agent_create(&conf) : NULL;
	int rc = dprpc_world_wait(a, 60000000, NULL, 0); /* the rendezvous: everyone is here */
	if (rc == 0 && dprpc_agent_rank(a) == 2) { /* w2: the RRef from w0, its value from w1 */
		rc = dprpc_rpc_sync(a, "w0", "give", NULL, 0, 60000000, fork, &fork_len, NULL);
		struct dprpc_rref *r = rc == 0 ? dprpc_rref_from_fork(a, fork, fork_len) : NULL;
		rc = dprpc_rref_to_here(r, 60000000, value, &len, NULL); /* -EINVAL without r */
		dprpc_rref_release(r);
	}
	int grc = dprpc_all_gather(a, NULL, 0, value, sizeof(value), 60000000, &g, NULL);
	printf("%s: w2 got \"%s\"\n", me, g ? (const char *)dprpc_gather_value(g, 2, NULL) : "");
	dprpc_gather_free(g);
	int bye = dprpc_shutdown(a, true, 60000000, NULL); /* graceful: when all are done */
	dprpc_eal_cleanup();
	(void)rmdir(dir); /* the last one out removes the folder */
	return rc == 0 && grc == 0 && bye == 0 ? 0 : 1;
}
