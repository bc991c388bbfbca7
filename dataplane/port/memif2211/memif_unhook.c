/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The two defects of DPDK 22.11's memif PMD that closing the agent's
 * ports (port_close.c) works around (docs/worlds.md, "Closing memif
 * ports"):
 *
 *  1. memif_disconnect() (rte_eth_dev_stop(), and the interrupt thread's
 *     handling of a peer's disconnect or EOF) does not wait for the
 *     interrupt thread: when rte_intr_callback_unregister() answers -EAGAIN
 *     (the control channel's callback is running) it only defers the
 *     channel's free, and the callback goes on with its device.  A peer
 *     that closes its end while this agent closes its port makes both
 *     threads run memif_disconnect() on the same device: the interrupt
 *     thread freed the regions a second time, or read the device's
 *     process_private after rte_eth_dev_close() freed it (worker SIGSEGV in
 *     1 of 6 runs of world_memif's shutdown tests).
 *  2. memif_socket_remove_device() (rte_eth_dev_close() of a server's last
 *     port on a socket) frees the listener and its interrupt handle without
 *     unregistering memif_listener_handler() or closing the listening
 *     socket; a control channel accepted but not assigned to a device yet
 *     keeps a pointer to the freed listener.  A client that connects just
 *     before the socket file goes makes the interrupt thread run the
 *     listener's callback on freed memory (seen: "Failed to accept
 *     connection request on socket fd -1", 1849 times, then SIGSEGV).
 *
 * The work-around: when any of the agent's ports is a memif port (a link,
 * or a default port whose driver is net_memif: dp_port.memif), every stop
 * and close of its ports runs on the
 * EAL interrupt thread (a job of ours: dp_on_intr(), dp_intr.h), which runs
 * the PMD's callbacks one at a time: none of them is running while a port goes, so
 * memif_disconnect() unregisters the control channel at once (no -EAGAIN)
 * and no callback is left with the device.  Before that, in an earlier
 * round (an earlier epoll batch of the interrupt thread: the events it
 * handles in the round that closes the port were gathered after the
 * sockets were replaced, so none is for them), every socket the process
 * holds that is bound to the socket of a memif server port the agent
 * probed (the listener, and the control channels it accepted) has an
 * eventfd put in its place with dup3(): the socket closes (the client sees
 * its peer go), and the file descriptor number the PMD's forgotten
 * callbacks are registered on is never readable again.  Not a socket that
 * another memif server port of the process listens on too: the PMD keeps
 * its listener for that port (dp_memif_sock_shared()).  That descriptor
 * stays open until the process ends (one per server port, plus any channel
 * caught half-way): it
 * must, as the interrupt thread adds every registered descriptor to its
 * epoll set again each time the set changes (a closed one is fatal).
 * The PMD's unregistrations leave a rebuild of the interrupt thread's
 * epoll set pending, which reads the freed handles of defect 2: harmless
 * until rte_eal_cleanup() unmaps the EAL heap, so dprpc_eal_cleanup() waits
 * for it first (dp_intr_settle(), intr.c).
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
