/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The short path to a world (dprpc_launch.h): EAL for a machine without a
 * NIC, the store's world map, the agent, the rendezvous; and its end.
 * One launched agent per process (PyTorch's one RPC agent), kept under a
 * mutex with the memif directory it uses.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include <dprpc/dprpc_agent.h>
#include <dprpc/dprpc_collective.h>
#include <dprpc/dprpc_launch.h>
#include <dprpc/dprpc_eal.h>

#include "ln_internal.h"

#define LN_EAL_ARGS_MAX 64
/* How long a worker waits, after its shutdown, for its memif sockets to
 * go before it tries to remove the directory. */
#define LN_DIR_WAIT_US 1000000u

static pthread_mutex_t ln_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dprpc_agent *ln_agent; /* the launched agent, under ln_lock */
static char ln_dir[PATH_MAX];	     /* its memif directory ("" if none) */

void
dprpc_launch_conf_init(struct dprpc_launch_conf *conf)
{
	if (conf == NULL)
		return;
	memset(conf, 0, sizeof(*conf));
	conf->rank = -1;
	conf->world_size = -1;
	conf->timeout_us = DPRPC_LAUNCH_TIMEOUT_DEFAULT_US;
	conf->eal_mem_mb = DPRPC_LAUNCH_MEM_DEFAULT_MB;
	conf->eal_lcores = 2;
	dprpc_agent_conf_init(&conf->agent);
}

/* A non-negative integer from @v; -1 if it is not one. */
static long
ln_parse_uint(const char *v)
{
	char *end;
	long n;

	if (v == NULL || *v == '\0')
		return -1;
	errno = 0;
	n = strtol(v, &end, 10);
	return errno != 0 || *end != '\0' || n < 0 ? -1 : n;
}

/* The store's address from init_method (NULL, "env://", "tcp://H:P"). */
static int
ln_store_addr(const char *method, char *host, size_t hlen, uint16_t *port, char *err, size_t errlen)
{
	const char *h, *p;
	long n;

	if (method == NULL || strcmp(method, "env://") == 0) {
		h = getenv("MASTER_ADDR");
		p = getenv("MASTER_PORT");
		if (h == NULL || *h == '\0')
			h = "127.0.0.1";
		if (p == NULL) {
			ln_err(err, errlen, "env:// needs MASTER_PORT");
			return -EINVAL;
		}
		snprintf(host, hlen, "%s", h);
	} else if (strncmp(method, "tcp://", 6) == 0) {
		const char *colon = strrchr(method + 6, ':');

		if (colon == NULL || (size_t)(colon - method - 6) >= hlen || colon == method + 6) {
			ln_err(err, errlen, "init_method %s: want tcp://HOST:PORT", method);
			return -EINVAL;
		}
		snprintf(host, hlen, "%.*s", (int)(colon - method - 6), method + 6);
		p = colon + 1;
	} else {
		ln_err(err, errlen, "init_method %s: want env:// or tcp://HOST:PORT", method);
		return -EINVAL;
	}
	n = ln_parse_uint(p);
	if (n <= 0 || n > 65535) {
		ln_err(err, errlen, "bad store port '%s'", p);
		return -EINVAL;
	}
	*port = (uint16_t)n;
	return 0;
}

/* rte_eal_init() with the no-NIC set (dprpc_eal_init_local(), tagged
 * with the rank) or the caller's arguments; 0 if EAL is up (now, or
 * already). */
static int
ln_eal_up(const struct dprpc_launch_conf *c, unsigned int rank, char *err, size_t errlen)
{
	char buf[1024], *argv[LN_EAL_ARGS_MAX], *save = NULL, *tok;
	struct dprpc_eal_local_conf lc;
	int argc = 0, rc;

	if (c->eal_lcores < 1 || c->eal_lcores > 2 || c->eal_mem_mb == 0) {
		ln_err(err, errlen,
			"eal_lcores %u, eal_mem_mb %u: want 1 or 2 lcores, 1 MB or more",
			c->eal_lcores, c->eal_mem_mb);
		return -EINVAL;
	}
	if (c->eal_args == NULL) {
		char tag[16];

		snprintf(tag, sizeof(tag), "%u", rank);
		dprpc_eal_local_conf_init(&lc);
		lc.tag = tag;
		lc.mem_mb = c->eal_mem_mb;
		lc.lcores = c->eal_lcores;
		rc = dprpc_eal_init_local(&lc);
		if (rc < 0) {
			ln_err(err, errlen, "EAL refused its arguments: %s", rte_strerror(-rc));
			return -EINVAL;
		}
		return 0;
	}
	if ((size_t)snprintf(buf, sizeof(buf), "dprpc %s", c->eal_args) >= sizeof(buf)) {
		ln_err(err, errlen, "eal_args longer than %zu bytes", sizeof(buf) - 7);
		return -EINVAL;
	}
	for (tok = strtok_r(buf, " ", &save); tok != NULL; tok = strtok_r(NULL, " ", &save)) {
		if (argc == LN_EAL_ARGS_MAX - 1) {
			ln_err(err, errlen, "more than %d EAL arguments", LN_EAL_ARGS_MAX - 2);
			return -EINVAL;
		}
		argv[argc++] = tok;
	}
	argv[argc] = NULL;
	rc = dprpc_eal_init(argc, argv);
	if (rc < 0) {
		ln_err(err, errlen, "EAL refused its arguments: %s", rte_strerror(-rc));
		return -EINVAL;
	}
	return 0;
}

/* The DIR of the map's "mesh memif:DIR" line, if any, into ln_dir. */
static void
ln_note_dir(const char *world)
{
	const char *m = strstr(world, "mesh memif:");

	ln_dir[0] = '\0';
	if (m != NULL)
		snprintf(ln_dir, sizeof(ln_dir), "%.*s", (int)strcspn(m + 11, "\n;"), m + 11);
}

/* The memif sockets this worker serves: DIR/SELF-PEER.sock (and its
 * name before the port started, with a '~') for every higher rank. */
static unsigned int
ln_own_sockets(struct dprpc_agent *a, char (*paths)[PATH_MAX], unsigned int cap)
{
	unsigned int self = dprpc_agent_rank(a), n = 0;

	for (unsigned int q = self + 1; q < dprpc_world_size(a) && n + 2 <= cap; q++) {
		const char *peer = dprpc_worker_name(a, q);

		if (peer == NULL)
			continue;
		if (snprintf(paths[n], PATH_MAX, "%s/%s-%s.sock", ln_dir, dprpc_agent_name(a),
			    peer) < PATH_MAX - 1 &&
			snprintf(paths[n + 1], PATH_MAX, "%s/%s-%s.sock~", ln_dir,
				dprpc_agent_name(a), peer) < PATH_MAX)
			n += 2;
	}
	return n;
}

/* Remove the memif directory once this worker's own sockets are gone (the
 * interrupt thread closes its ports after the agent is destroyed): the
 * worker whose sockets go last finds it empty. */
static void
ln_remove_dir(char (*own)[PATH_MAX], unsigned int n_own)
{
	uint64_t until = ln_now_us() + LN_DIR_WAIT_US;

	if (ln_dir[0] == '\0')
		return;
	for (unsigned int i = 0; i < n_own; i++)
		while (access(own[i], F_OK) == 0 && ln_now_us() < until)
			usleep(1000);
	(void)rmdir(ln_dir);
	ln_dir[0] = '\0';
}

struct dprpc_agent *
dprpc_launch(const struct dprpc_launch_conf *c, char *err, size_t errlen)
{
	struct dprpc_agent_conf ac;
	char host[256], missing[512], *world = NULL;
	struct dprpc_agent *a = NULL;
	uint16_t port = 0;
	long rank = -1, size = -1;
	int rc;

	if (c == NULL || !ln_name_ok(c->name)) {
		ln_err(err, errlen, "a worker name of 1-%d characters [A-Za-z0-9_.:-] is needed",
			DPRPC_NAME_MAX - 1);
		rte_errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&ln_lock);
	if (ln_agent != NULL) {
		ln_err(err, errlen, "this process already has a launched agent");
		rc = -EALREADY;
		goto fail;
	}
	if (c->world == NULL) {
		rank = c->rank >= 0 ? c->rank : ln_parse_uint(getenv("RANK"));
		size = c->world_size >= 0 ? c->world_size : ln_parse_uint(getenv("WORLD_SIZE"));
		if (rank < 0 || size <= 0 || size > DPRPC_MAX_WORKERS || rank >= size) {
			ln_err(err, errlen,
				"rank %ld, world size %ld: want 0 <= rank < size <= %d "
				"(arguments, or RANK and WORLD_SIZE)",
				rank, size, DPRPC_MAX_WORKERS);
			rc = -EINVAL;
			goto fail;
		}
		rc = ln_store_addr(c->init_method, host, sizeof(host), &port, err, errlen);
		if (rc < 0)
			goto fail;
	}
	rc = ln_eal_up(c, rank < 0 ? 0 : (unsigned int)rank, err, errlen);
	if (rc < 0)
		goto fail;
	if (c->world == NULL) {
		world = malloc(DPRPC_LAUNCH_WORLD_MAX);
		if (world == NULL) {
			rc = -ENOMEM;
			goto fail;
		}
		rc = dprpc_store_rendezvous(host, port, c->name, (unsigned int)rank,
			(unsigned int)size, c->run_dir, c->timeout_us, world,
			DPRPC_LAUNCH_WORLD_MAX, err, errlen);
		if (rc < 0)
			goto fail;
		ln_note_dir(world);
	}
	ac = c->agent;
	ac.name = c->name;
	ac.world = c->world != NULL ? c->world : world;
	if (ac.lcores.io == DPRPC_LCORE_NONE) {
		unsigned int l = rte_get_next_lcore(-1, 1, 0);

		if (l < RTE_MAX_LCORE)
			ac.lcores.io = l;
	}
	a = dprpc_agent_create(&ac);
	if (a == NULL) {
		rc = -rte_errno;
		ln_err(err, errlen, "the agent: %s", rte_strerror(rte_errno));
		goto fail;
	}
	rc = dprpc_world_wait(a, c->timeout_us, missing, sizeof(missing));
	if (rc < 0) {
		ln_err(err, errlen, "rendezvous: %s%s%s", strerror(-rc),
			rc == -ETIMEDOUT ? "; not heard from: " : "",
			rc == -ETIMEDOUT ? missing : "");
		dprpc_agent_destroy(a);
		a = NULL;
		goto fail;
	}
	ln_agent = a;
	pthread_mutex_unlock(&ln_lock);
	free(world);
	return a;
fail:
	if (world != NULL) /* a directory of this call's store, if any */
		ln_remove_dir(NULL, 0);
	pthread_mutex_unlock(&ln_lock);
	free(world);
	rte_errno = -rc;
	return NULL;
}

int
dprpc_launch_shutdown(
	struct dprpc_agent *agent, bool graceful, uint64_t timeout_us, struct dprpc_error *err)
{
	static char own[2 * DPRPC_MAX_WORKERS][PATH_MAX];
	unsigned int n_own;
	int rc;

	pthread_mutex_lock(&ln_lock);
	if (agent == NULL || agent != ln_agent) {
		pthread_mutex_unlock(&ln_lock);
		return -EINVAL;
	}
	n_own = ln_own_sockets(agent, own, RTE_DIM_LN(own));
	rc = dprpc_shutdown(agent, graceful, timeout_us, err);
	if (rc != -EBUSY && rc != -EDEADLK) {
		ln_agent = NULL;
		ln_remove_dir(own, n_own);
	}
	pthread_mutex_unlock(&ln_lock);
	return rc;
}
