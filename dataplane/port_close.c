/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Closing the agent's ports (dp_port_close()), and the two defects of DPDK
 * 22.11's memif PMD it works around (docs/worlds.md, "Closing memif
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
 * The work-around: every stop and close of the agent's ports runs on the
 * EAL interrupt thread (a callback of ours, dp_on_intr()), which runs the
 * PMD's callbacks one at a time: none of them is running while a port goes, so
 * memif_disconnect() unregisters the control channel at once (no -EAGAIN)
 * and no callback is left with the device.  Before that, in an earlier
 * round (an earlier epoll batch of the interrupt thread: the events it
 * handles in the round that closes the port were gathered after the
 * sockets were replaced, so none is for them), every socket the process
 * holds that is bound to a memif server port's socket path (the listener,
 * and the control channels it accepted) has an eventfd put in its place
 * with dup3(): the socket closes (the client sees its peer go), and the
 * file descriptor number the PMD's forgotten callbacks are registered on
 * is never readable again.  That descriptor stays open until the process
 * ends (one per server link port, plus any channel caught half-way): it
 * must, as the interrupt thread adds every registered descriptor to its
 * epoll set again each time the set changes (a closed one is fatal).
 *
 * The thread that destroys the agent (dp_agent_free()); on the interrupt
 * thread itself (an agent destroyed from an alarm) everything runs in
 * place.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>

#include "dp_agent.h"
#include "dp_port.h"

/* How long to wait for the interrupt thread before doing the work in
 * place (it runs a callback within microseconds; this is for a thread
 * that never comes). */
#define DP_INTR_WAIT_MS 5000

/*
 * Work for the interrupt thread: a callback of our own on an eventfd,
 * registered for the close and unregistered before it returns.  Not an EAL
 * alarm: rte_eal_cleanup() unregisters the alarms' callback, which makes
 * the interrupt thread rebuild its epoll set from every source while the
 * memory is being unmapped, the sources the memif PMD left registered
 * (defect 2) among them, whose handles live in that memory (workers died
 * in rte_intr_fd_get()).  Ours is unregistered here, with the memory
 * intact; its handle is private (malloc), as is the EAL's copy of it.
 */
struct dp_intr_job {
	struct dprpc_agent *a;
	int efd;
	/* Set before the eventfd write that triggers the callback, read
	 * after the callback's read of it: the eventfd orders them. */
	void (*fn)(struct dprpc_agent *a);
	/* Release by the interrupt thread once fn returned; acquire by the
	 * waiting thread: fn's effects are seen by it. */
	atomic_bool done;
};

static void
dp_intr_job_run(void *arg)
{
	struct dp_intr_job *job = arg;
	uint64_t v;

	if (read(job->efd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		return; /* not ours yet (spurious) */
	job->fn(job->a);
	atomic_store_explicit(&job->done, true, memory_order_release);
}

/* Whether the interrupt thread ran @job->fn: triggered, waited for up to
 * DP_INTR_WAIT_MS. */
static bool
dp_intr_job_wait(struct dp_intr_job *job, void (*fn)(struct dprpc_agent *a))
{
	uint64_t one = 1, deadline = rte_rdtsc() + rte_get_tsc_hz() / 1000 * DP_INTR_WAIT_MS;

	job->fn = fn;
	atomic_store_explicit(&job->done, false, memory_order_relaxed);
	if (write(job->efd, &one, sizeof(one)) != (ssize_t)sizeof(one))
		return false;
	while (!atomic_load_explicit(&job->done, memory_order_acquire)) {
		if (rte_rdtsc() >= deadline)
			return false;
		usleep(50);
	}
	return true;
}

/* Run @fn1(@a), then @fn2(@a) in a later round of the interrupt thread,
 * on the EAL interrupt thread, waited for; in place on that thread itself
 * or if it cannot be reached. */
static void
dp_on_intr(struct dprpc_agent *a, void (*fn1)(struct dprpc_agent *a),
	void (*fn2)(struct dprpc_agent *a))
{
	struct rte_intr_handle *ih = NULL;
	struct dp_intr_job *job = NULL;
	bool ran1 = false, ran2 = false;
	int rc = -ENOMEM;

	if (rte_thread_is_intr())
		goto in_place;
	/* On the heap: leaked rather than freed if it cannot be
	 * unregistered. */
	job = calloc(1, sizeof(*job));
	ih = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
	if (job == NULL || ih == NULL)
		goto in_place;
	job->a = a;
	atomic_init(&job->done, false);
	job->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (job->efd < 0 || rte_intr_fd_set(ih, job->efd) != 0 ||
		rte_intr_type_set(ih, RTE_INTR_HANDLE_EXT) != 0)
		goto in_place;
	rc = rte_intr_callback_register(ih, dp_intr_job_run, job);
	if (rc != 0)
		goto in_place;
	ran1 = dp_intr_job_wait(job, fn1);
	if (ran1)
		ran2 = dp_intr_job_wait(job, fn2);
	/* Waits while the callback runs: after it, job is not touched. */
	rc = rte_intr_callback_unregister_sync(ih, dp_intr_job_run, job);
	if (rc < 0) {
		/* Not expected (registered above): job, its eventfd and ih
		 * stay, the callback may still refer to them. */
		DP_LOG(ERR, "agent %s: cannot unregister its ports' close callback: %s", a->name,
			strerror(-rc));
		job = NULL;
		ih = NULL;
		goto in_place;
	}
	/* A wait that timed out: whether its trigger ran after all. */
	if (!ran1)
		ran1 = atomic_load_explicit(&job->done, memory_order_acquire);
	else if (!ran2)
		ran2 = atomic_load_explicit(&job->done, memory_order_acquire);
	if (!ran1 || !ran2)
		rc = -ETIMEDOUT;
in_place:
	if (!ran1 || !ran2)
		DP_LOG(WARNING,
			"agent %s: closing its ports in place, not on the EAL interrupt thread "
			"(%s)",
			a->name, rte_thread_is_intr() ? "called there" : strerror(-rc));
	if (!ran1)
		fn1(a);
	if (!ran2)
		fn2(a);
	rte_intr_instance_free(ih);
	if (job != NULL && job->efd >= 0)
		close(job->efd);
	free(job);
}

/* Whether @fd is a socket bound to the filesystem path @path. */
static bool
dp_fd_bound_to(int fd, const char *path)
{
	struct sockaddr_un un;
	socklen_t len = sizeof(un);

	memset(&un, 0, sizeof(un));
	if (getsockname(fd, (struct sockaddr *)&un, &len) != 0 || un.sun_family != AF_UNIX)
		return false;
	if (len <= offsetof(struct sockaddr_un, sun_path) || un.sun_path[0] == '\0')
		return false; /* unbound (a client's), or abstract */
	return strncmp(un.sun_path, path, sizeof(un.sun_path)) == 0;
}

/* Put eventfd @efd in the place of every socket of the process bound to
 * @path (defect 2 above).  Only the interrupt thread closes these sockets
 * (the PMD's callbacks, and rte_eth_dev_stop() run here), so a descriptor
 * found cannot be closed and reused before it is replaced. */
static void
dp_memif_server_unhook(struct dprpc_agent *a, const char *path, int efd)
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
		if (fd == dirfd(d) || fd == efd || !dp_fd_bound_to(fd, path))
			continue;
		if (dup3(efd, fd, O_CLOEXEC) < 0)
			DP_LOG(WARNING, "agent %s: memif socket %s (fd %d) kept: %s", a->name, path,
				fd, strerror(errno));
	}
	closedir(d);
}

/* Interrupt thread: defect 2, for every memif server port. */
static void
dp_ports_unhook(struct dprpc_agent *a)
{
	unsigned int i;
	int efd = -1;

	for (i = 0; i < a->nb_ports; i++) {
		const struct dp_port *pt = &a->ports[i];

		if (!pt->link || pt->client || !pt->probed)
			continue;
		if (efd < 0)
			efd = eventfd(0, EFD_CLOEXEC);
		if (efd < 0) {
			DP_LOG(WARNING, "agent %s: no eventfd (%s): memif sockets kept", a->name,
				strerror(errno));
			return;
		}
		dp_memif_server_unhook(a, pt->sock, efd);
	}
	if (efd >= 0)
		close(efd); /* its duplicates stay */
}

/* Interrupt thread (defect 1): stop what dp_port_open() started, close what
 * it probed.  An application's port given with port_ready is neither
 * stopped nor closed. */
static void
dp_ports_stop_close(struct dprpc_agent *a)
{
	unsigned int i;

	for (i = 0; i < a->nb_ports; i++) {
		struct dp_port *pt = &a->ports[i];

		if (pt->started) {
			(void)rte_eth_dev_stop(pt->id);
			pt->started = false;
		}
		if (pt->probed)
			(void)rte_eth_dev_close(pt->id);
	}
}

void
dp_port_close(struct dprpc_agent *a)
{
	unsigned int i;

	if (a->nb_link_ports > 0) {
		dp_on_intr(a, dp_ports_unhook, dp_ports_stop_close);
	} else {
		dp_ports_stop_close(a);
	}
	/* No PMD callback refers to the vdev device itself: removed here. */
	for (i = 0; i < a->nb_ports; i++) {
		struct dp_port *pt = &a->ports[i];

		if (pt->probed) {
			(void)rte_eal_hotplug_remove("vdev", pt->vdev_name);
			pt->probed = false;
		}
	}
}
