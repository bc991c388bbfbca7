/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * EAL set-up: dprpc_eal_init() and dprpc_eal_cleanup(), and the mbuf
 * dynamic field in which every submitted frame carries its struct
 * dp_call_meta.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf_dyn.h>

#include "dp_agent.h"
#include "dp_eal.h"

int dp_meta_offset = -1;

int
dprpc_eal_cleanup(void)
{
	char dir[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int rc;

	/* EAL counts its lcores at init: none means it was never set up (or
	 * was cleaned up), and rte_eal_cleanup() would tear down nothing. */
	if (rte_lcore_count() == 0)
		return -EALREADY;
	snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
	rc = rte_eal_cleanup();
	d = opendir(dir);
	if (d != NULL) {
		while ((e = readdir(d)) != NULL)
			if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
				(void)unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
		(void)rmdir(dir);
	}
	return rc < 0 ? rc : 0;
}

int
dprpc_eal_init(int argc, char **argv)
{
	int rc;

	if (argc < 1 || argv == NULL || argv[0] == NULL)
		return -EINVAL;
	rc = rte_eal_init(argc, argv);
	if (rc < 0)
		return rte_errno == EALREADY ? 0 : -rte_errno;
	return rc;
}

int
dp_register_dynfield(void)
{
	static const struct rte_mbuf_dynfield desc = {
		.name = "dprpc_call_meta",
		.size = sizeof(struct dp_call_meta),
		.align = __alignof__(struct dp_call_meta),
	};
	/* Idempotent: the same name and size give back the same offset. */
	int off = rte_mbuf_dynfield_register(&desc);

	if (off < 0)
		return -rte_errno;
	dp_meta_offset = off;
	return 0;
}
