/* SPDX-License-Identifier: BSD-3-Clause */
/* two_workers_stream: a server stream, one call answered with several chunks then an end,
 * read with an iterator.  Run: two_workers_stream alice & two_workers_stream bob [socket folder] */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include <dprpc/dprpc.h>

/* A stream handler: the numbers 1 to n (16 at most), one chunk each, then the end.  They fit
 * the caller's window (64 frames by default): dprpc_stream_send() never waits, and would
 * return -EAGAIN on a full window (dprpc_stream_send_wait() waits, off the polling thread). */
static int
count(struct dprpc_request *req, void *arg)
{
	size_t len;
	const uint32_t *n = dprpc_request_payload(req, &len);
	int rc = len == sizeof(*n) && *n <= 16 ? 0 : -EINVAL;

	for (uint32_t i = 1; rc == 0 && i <= *n; i++)
		rc = dprpc_stream_send(req, &i, sizeof(i));
	return dprpc_stream_end(req, rc); /* 0: the request is answered */
}

int
main(int argc, char **argv)
{
	const char *me = argc > 1 ? argv[1] : "alice", *dir = argc > 2 ? argv[2] : "/tmp/dprpc-2w";
	struct dprpc_agent_conf conf;
	char world[128];
	uint32_t n = 5, sum = 0;
	const void *chunk;
	size_t len;

	snprintf(world, sizeof(world), "alice 0; bob 1; mesh memif:%s", dir); /* a memif link */
	dprpc_agent_conf_init(&conf);
	conf.name = me;
	conf.world = world;
	conf.serve.handlers = &(const struct dprpc_handler_def){.name = "count", .fn = count};
	conf.serve.nb_handlers = 1;
	struct dprpc_agent *a = dprpc_eal_init_local(NULL) == 0 ? dprpc_agent_create(&conf) : NULL;
	const char *peer = a ? dprpc_worker_name(a, 1 - dprpc_agent_rank(a)) : "-"; /* the other */
	int rc = dprpc_world_wait(a, 60000000, NULL, 0); /* the rendezvous: everyone is here */
	struct dprpc_stream *s = NULL;

	if (rc == 0) /* the whole stream's timeout: 60 s */
		s = dprpc_stream_open(a, peer, "count", &n, sizeof(n), 60000000);
	/* Each chunk in order: DPRPC_TIMEOUT_NONE waits for the next (or the end). */
	while ((rc = dprpc_stream_next(s, &chunk, &len, DPRPC_TIMEOUT_NONE)) == 0)
		sum += *(const uint32_t *)chunk;
	dprpc_stream_close(s);
	rc = rc == DPRPC_STREAM_END ? 0 : rc; /* the end, after every chunk */
	printf("%s: %s streamed 1 to %u, sum %u (%d)\n", me, peer, n, sum, rc);
	int bye = dprpc_shutdown(a, true, 60000000, NULL); /* graceful: when both are done */
	dprpc_eal_cleanup();
	(void)rmdir(dir); /* the last one out removes the folder */
	return rc == 0 && bye == 0 ? 0 : 1;
}
