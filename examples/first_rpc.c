/* SPDX-License-Identifier: BSD-3-Clause */
/* first_rpc: the shortest dprpc world, two workers on one machine with no
 * NIC nor hugepages, over a memif link made for them; each calls the other's
 * "echo", then both shut down.  `first_rpc alice & first_rpc bob [DIR]` */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <dprpc/dprpc.h>

static int
echo(struct dprpc_request *req, void *arg)
{
	size_t len;
	const void *p = dprpc_request_payload(req, &len);

	return dprpc_reply(req, p, len);
}

int
main(int argc, char **argv)
{
	static const struct dprpc_handler_def handlers[] = {
		{"echo", echo, NULL, DPRPC_HANDLER_INLINE}};
	const char *me = argc > 1 ? argv[1] : "alice",
		   *dir = argc > 2 ? argv[2] : "/tmp/dprpc-first";
	const char *peer = strcmp(me, "alice") == 0 ? "bob" : "alice";
	struct dprpc_eal_local_conf eal;
	struct dprpc_agent_conf conf;
	struct dprpc_agent *a;
	char world[256], out[64], missing[64];
	size_t out_len = sizeof(out) - 1;
	int rc;

	dprpc_eal_local_conf_init(&eal); /* no NIC, no hugepages, a file prefix of its own */
	eal.tag = me;
	if (dprpc_eal_init_local(&eal) < 0)
		return 1;
	snprintf(world, sizeof(world), "alice 0; bob 1; mesh memif:%s", dir);
	dprpc_agent_conf_init(&conf);
	conf.name = me;
	conf.world = world; /* only memif links: no MAC, IPv4 or port to give */
	conf.serve.handlers = handlers;
	conf.serve.nb_handlers = 1;
	a = dprpc_agent_create(&conf); /* makes the folder if it is missing */
	if (a == NULL || dprpc_world_wait(a, 10 * 1000 * 1000, missing, sizeof(missing)) != 0) {
		fprintf(stderr, "%s: no world (missing: %s)\n", me, a ? missing : "-");
		return 1;
	}
	rc = dprpc_rpc_sync(a, peer, "echo", "hello", 5, 0, out, &out_len, NULL);
	out[rc == 0 ? out_len : 0] = '\0';
	printf("%s: %s answered \"%s\" (%d)\n", me, peer, out, rc);
	fflush(stdout);
	if (dprpc_shutdown(a, true, 10 * 1000 * 1000, NULL) != 0) /* both done */
		rc = rc ? rc : -1;
	dprpc_eal_cleanup();
	(void)rmdir(dir); /* the last one out removes the folder */
	return rc == 0 ? 0 : 1;
}
