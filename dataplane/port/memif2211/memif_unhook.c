/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The two defects of DPDK 22.11's memif PMD that closing the agent's ports
 * (port_close.c) works around (docs/worlds.md, "Closing memif ports"):
 *
 *  1. memif_disconnect() does not wait for the interrupt thread: on -EAGAIN
 *     from rte_intr_callback_unregister() it only defers the channel's
 *     free, and the running callback goes on with the device, so a peer's
 *     disconnect and our close can both free it.
 *  2. memif_socket_remove_device() frees a server socket's listener and its
 *     interrupt handle without unregistering its callback or closing the
 *     socket; a channel accepted but not yet given a device keeps it.
 *
 * The work-around, for an agent with any memif port (dp_port.memif): the
 * ports' stop and close run on the EAL interrupt thread (dp_on_intr()),
 * where no PMD callback runs meanwhile (1).  One round earlier, every
 * socket bound to the socket of a memif server port the agent probed (and
 * no other port of the process listens on) is replaced by an eventfd with
 * dup3() (2), kept open for good: the interrupt thread adds every
 * registered descriptor to its epoll set again whenever the set changes.
 * dprpc_eal_cleanup() waits for the rebuilds the PMD's unregistrations
 * leave pending (dp_intr_settle(), intr.c).
 *
 * The thread that destroys the agent (dp_agent_free()); on the interrupt
 * thread itself (an agent destroyed from an alarm) everything runs in
 * place.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "dp_intr.h"
#include "dp_log.h"
#include "dp_memif2211.h"
#include "dp_port.h"
#include "dp_port_int.h"

/* Whether @fd is a socket bound to @path: the filesystem path, or with
 * @abstract the name in the abstract namespace (a NUL, then the name,
 * as the memif PMD binds it). */
static bool
dp_fd_bound_to(int fd, const char *path, bool abstract)
{
	const size_t off = offsetof(struct sockaddr_un, sun_path);
	struct sockaddr_un un;
	socklen_t len = sizeof(un);
	size_t n;

	memset(&un, 0, sizeof(un));
	if (getsockname(fd, (struct sockaddr *)&un, &len) != 0 || un.sun_family != AF_UNIX)
		return false;
	if (len <= off)
		return false; /* unbound (a client's) */
	if (!abstract)
		return un.sun_path[0] != '\0' &&
		       strncmp(un.sun_path, path, sizeof(un.sun_path)) == 0;
	/* An abstract name is exactly its length: no NUL at its end. */
	n = strlen(path);
	return un.sun_path[0] == '\0' && len - off == n + 1 &&
	       memcmp(un.sun_path + 1, path, n) == 0;
}

/* Put eventfd @efd in the place of every socket of the process bound to
 * @path (defect 2 above).  Only the interrupt thread closes these sockets
 * (the PMD's callbacks, and rte_eth_dev_stop() run here), so a descriptor
 * found cannot be closed and reused before it is replaced. */
static void
dp_memif_server_unhook(struct dp_ports *a, const char *path, bool abstract, int efd)
{
	struct dirent *e;
	DIR *d = opendir("/proc/self/fd");
	int fd;

	if (d == NULL) {
		DP_LOG(WARNING, "agent %s: cannot list /proc/self/fd: memif socket %s kept",
			a->name, path);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		fd = atoi(e->d_name);
		if (fd == dirfd(d) || fd == efd || !dp_fd_bound_to(fd, path, abstract))
			continue;
		if (dup3(efd, fd, O_CLOEXEC) < 0)
			DP_LOG(WARNING, "agent %s: memif socket %s (fd %d) kept: %s", a->name, path,
				fd, strerror(errno));
	}
	closedir(d);
}

/* Whether a memif server port of the process other than @id listens on
 * @s: the PMD then keeps the listener when @id closes (defect 2 does not
 * happen), and the sockets bound to @s are that port's too. */
static bool
dp_memif_sock_shared(uint16_t id, const struct dp_memif_sock *s)
{
	struct dp_memif_sock o;
	uint16_t p;

	RTE_ETH_FOREACH_DEV(p)
	if (p != id && dp_memif_role(p, &o) == 1 && o.abstract == s->abstract &&
		strcmp(o.path, s->path) == 0)
		return true;
	return false;
}

/* Interrupt thread: defect 2, for every memif server port the agent
 * probed whose socket no other port of the process listens on: its
 * links and join port (each on a socket of its own) and a default port
 * from a memif server vdev. */
static void
dp_ports_unhook(struct dp_ports *a)
{
	struct dp_memif_sock s;
	unsigned int i;
	int efd = -1;

	for (i = 0; i < a->nb_ports; i++) {
		const struct dp_port *pt = &a->ports[i];

		if (!pt->close_now || !pt->probed || dp_memif_role(pt->id, &s) != 1 ||
			dp_memif_sock_shared(pt->id, &s))
			continue;
		if (efd < 0)
			efd = eventfd(0, EFD_CLOEXEC);
		if (efd < 0) {
			DP_LOG(WARNING, "agent %s: no eventfd (%s): memif sockets kept", a->name,
				strerror(errno));
			return;
		}
		dp_memif_server_unhook(a, s.path, s.abstract, efd);
	}
	if (efd >= 0)
		close(efd); /* its duplicates stay */
}

/* The jobs for the interrupt thread take the agent. */
static void
dp_ports_unhook_job(void *a)
{
	dp_ports_unhook(a);
}

static void
dp_ports_stop_close_job(void *a)
{
	dp_ports_stop_close(a);
}

/* dp_ports_unhook(), then dp_ports_stop_close() in a later round, on the
 * EAL interrupt thread (dp_intr.h), waited for.  In place on that thread
 * itself, or if it cannot be reached. */
void
dp_on_intr(struct dp_ports *a)
{
	bool ran1 = dp_intr_run(dp_ports_unhook_job, a), ran2 = false;

	if (ran1)
		ran2 = dp_intr_run(dp_ports_stop_close_job, a);
	if (!ran1 || !ran2)
		DP_LOG(WARNING,
			"agent %s: closing its ports in place, not on the EAL interrupt thread "
			"(%s)",
			a->name, rte_thread_is_intr() ? "called there" : "not reached");
	if (!ran1)
		dp_ports_unhook(a);
	if (!ran2)
		dp_ports_stop_close(a);
}
