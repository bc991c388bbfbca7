/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A memif server's socket file left by a process that died, which DPDK
 * 22.11's memif PMD cannot bind again (docs/worlds.md, "Which port reaches
 * whom").  Who listens is read from /proc/net/unix (__SO_ACCEPTCON,
 * 0x10000), not by connecting: that would start a handshake with a live
 * server.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dp_log.h"
#include "dp_memif2211.h"
#include "dp_port.h"

#define DP_SO_ACCEPTCON 0x10000ul

/* Whether a socket of this network namespace listens at @path: 1, 0, or
 * -errno if /proc/net/unix cannot be read. */
static int
dp_sock_listened(const char *path)
{
	char line[DP_SOCK_PATH_MAX + 128];
	FILE *f = fopen("/proc/net/unix", "r");
	int found = 0;

	if (f == NULL)
		return -errno;
	while (found == 0 && fgets(line, sizeof(line), f) != NULL) {
		unsigned long flags;
		char *p;
		int pos = 0;

		/* Num: RefCount Protocol Flags Type St Inode Path */
		if (sscanf(line, "%*s %*x %*x %lx %*x %*x %*u %n", &flags, &pos) != 1 || pos == 0)
			continue;
		p = line + pos;
		p[strcspn(p, "\n")] = '\0';
		if ((flags & DP_SO_ACCEPTCON) != 0 && strcmp(p, path) == 0)
			found = 1;
	}
	fclose(f);
	return found;
}

int
dp_memif_sock_reclaim(struct dp_ports *a, const char *path)
{
	struct stat st;
	int rc;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return 0; /* not ours to remove: the PMD's bind reports it */
	rc = dp_sock_listened(path);
	if (rc < 0)
		return 0; /* cannot tell: the PMD's bind decides */
	if (rc > 0) {
		DP_LOG(ERR,
			"agent %s: memif socket %s is in use: a live process listens on it "
			"(a worker of the same name still running?)",
			a->name, path);
		return -EADDRINUSE;
	}
	if (unlink(path) != 0 && errno != ENOENT) {
		rc = -errno;
		DP_LOG(ERR, "agent %s: memif socket %s, left by a process that is gone: %s",
			a->name, path, strerror(-rc));
		return rc;
	}
	DP_LOG(INFO, "agent %s: removed memif socket %s, left by a process that is gone", a->name,
		path);
	return 0;
}
