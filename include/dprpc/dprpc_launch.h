/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The short path to a world (PyTorch's init_rpc() and shutdown()):
 * workers named and ranked by a launcher find each other through a store,
 * on one machine over memif links made for them, with EAL set up for a
 * machine without a NIC or hugepages (docs/launch.md in the source tree).
 *
 * @code
 * struct dprpc_launch_conf c;
 * char err[256];
 *
 * dprpc_launch_conf_init(&c);          // rank, world size, store from env://
 * c.name = "trainer0";
 * c.agent.serve.handlers = defs;             // registered before anyone can call
 * c.agent.serve.nb_handlers = n;
 * struct dprpc_agent *a = dprpc_launch(&c, err, sizeof(err));
 * ... dprpc_rpc_sync(a, "trainer1", ...) ...
 * dprpc_launch_shutdown(a, true, 0, NULL);
 * dprpc_eal_cleanup();                 // at the end of the process
 * @endcode
 *
 * The store is PyTorch's env:// rendezvous: rank 0 listens on
 * MASTER_ADDR:MASTER_PORT (TCP), every other rank connects and says its
 * rank and name; once all have, rank 0 sends each the world map it made:
 * the workers by rank, and a "mesh memif:DIR" line, DIR a new directory
 * that holds the memif sockets.  Only the world map crosses TCP; every
 * call then travels over DPDK.
 */
#ifndef DPRPC_LAUNCH_H
#define DPRPC_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dprpc/dprpc_agent.h>
#include <dprpc/dprpc_collective.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Default of dprpc_launch_conf.timeout_us: 60 s. */
#define DPRPC_LAUNCH_TIMEOUT_DEFAULT_US (60ull * 1000 * 1000)
/** Default of dprpc_launch_conf.eal_mem_mb. */
#define DPRPC_LAUNCH_MEM_DEFAULT_MB 256u
/** Longest world map a store sends, including the terminating NUL. */
#define DPRPC_LAUNCH_WORLD_MAX 8192u

/**
 * What dprpc_launch() needs.  Fill it with dprpc_launch_conf_init(), the
 * one source of its defaults, which also fills @ref agent with
 * dprpc_agent_conf_init()'s; every value is then taken as it is.
 */
struct dprpc_launch_conf {
	/** This worker's name (required): 1 to DPRPC_NAME_MAX - 1 of
	 * [A-Za-z0-9_.:-], not "link" or "mesh". */
	const char *name;
	/** This worker's rank; -1: the environment's RANK. */
	int rank;
	/** Workers in the world; -1: the environment's WORLD_SIZE.  1 to
	 * DPRPC_MAX_WORKERS. */
	int world_size;
	/**
	 * Where the store is: NULL or "env://" (MASTER_ADDR, default
	 * 127.0.0.1, and MASTER_PORT, required), or "tcp://HOST:PORT".
	 * HOST is an IPv4 address or a name getaddrinfo() resolves.
	 */
	const char *init_method;
	/** How long the store and the rendezvous (dprpc_world_wait()) may
	 * take, each; default DPRPC_LAUNCH_TIMEOUT_DEFAULT_US, 0: no limit. */
	uint64_t timeout_us;
	/** Where rank 0 makes the directory of the memif sockets: NULL:
	 * $TMPDIR, else /tmp.  The socket paths must stay under 108 bytes:
	 * the directory's path under 40. */
	const char *run_dir;
	/** A world map of the application's (dprpc_agent_conf.world): no
	 * store is used, and rank and world size come from the map.  NULL
	 * (the default): the store makes one. */
	const char *world;
	/**
	 * EAL's arguments, separated by spaces, when dprpc_launch()
	 * initialises EAL (it does when no one has yet in this process).
	 * NULL: the no-NIC set of dprpc_eal_init_local(), tagged with the
	 * rank (--file-prefix dprpc-PID-RANK), with -m eal_mem_mb and
	 * eal_lcores lcores, lcore 1 (if any) the agent's io lcore.
	 */
	const char *eal_args;
	/** Memory of the no-NIC EAL, in MB; default DPRPC_LAUNCH_MEM_DEFAULT_MB. */
	unsigned int eal_mem_mb;
	/** Lcores of the no-NIC EAL: 2 (the default), lcore 1 the io
	 * lcore; 1: no io lcore, the application polls (dprpc_poll(), and
	 * its threads waiting on futures do).  At most 2. */
	unsigned int eal_lcores;
	/**
	 * The agent's configuration.  dprpc_launch() sets name and world
	 * (the store's), and lcores.io when it is DPRPC_LCORE_NONE: to the
	 * first EAL worker lcore, if there is one.  The handlers given here
	 * exist before any other worker can call this one.
	 */
	struct dprpc_agent_conf agent;
};

/**
 * Fill @p conf with the defaults: no name, rank and world size from the
 * environment, env://, 60 s, the no-NIC EAL, and dprpc_agent_conf_init()'s
 * agent.  Nothing for a NULL @p conf.  Any thread.
 */
void dprpc_launch_conf_init(struct dprpc_launch_conf *conf);

/**
 * The store alone: form the world map of a world of @p world_size workers
 * named and ranked by a launcher.  Rank 0 listens on @p host:@p port and
 * answers the others once all have come; the others connect (again every
 * 10 ms while nothing listens).  What a connection sends that is not a
 * worker of this world (another program, a rank twice, a name twice, a
 * different world size) is closed and counted, and the store goes on
 * waiting; a duplicate name or rank fails the worker that came second
 * with the reason.
 *
 * @param host, port  the store (rank 0 binds host:port, SO_REUSEADDR).
 * @param name        this worker's name (as dprpc_launch_conf.name).
 * @param rank        0 to @p world_size - 1.
 * @param run_dir     as dprpc_launch_conf.run_dir (rank 0 only).
 * @param timeout_us  how long it may take; 0: no limit.
 * @param world       receives the world map, NUL-terminated.
 * @param cap         its size; DPRPC_LAUNCH_WORLD_MAX always suffices.
 * @param err, errlen receive a message on failure (may be NULL, 0).
 * @return the map's length; -EINVAL (bad argument), -ETIMEDOUT (not all
 *         came, or rank 0 did not answer, within @p timeout_us; rank 0's
 *         message names the ranks missing), -EADDRINUSE (rank 0 could not
 *         bind), -EEXIST (rank or name taken by another worker),
 *         -ECONNRESET (the store closed without a map), -ENOSPC (@p cap
 *         too small), or another negative errno of the socket calls.
 *
 * Thread context: any thread; blocks up to @p timeout_us.  Needs no EAL.
 * Ownership: @p world is the caller's; rank 0's directory is removed by
 * dprpc_launch_shutdown() (or by the caller, when it uses the map itself).
 */
int dprpc_store_rendezvous(const char *host, uint16_t port, const char *name, unsigned int rank,
	unsigned int world_size, const char *run_dir, uint64_t timeout_us, char *world, size_t cap,
	char *err, size_t errlen);

/**
 * Join a world the short way (PyTorch's init_rpc()): set EAL up if no one
 * has in this process, form the world map (the store, unless @p conf gives
 * one), create the agent and wait until every worker has been heard from
 * (dprpc_world_wait()).
 *
 * @param conf  the configuration (dprpc_launch_conf_init()); read during
 *              the call only.
 * @param err, errlen receive a message on failure (may be NULL, 0).
 * @return the agent, or NULL with rte_errno: EINVAL (bad @p conf: a
 *         missing or bad name, rank or world size, an unreadable
 *         RANK/WORLD_SIZE/MASTER_PORT, a bad init_method, eal_args that
 *         EAL refuses, eal_lcores not 1 or 2, eal_mem_mb 0), EALREADY (this process already has an agent made
 *         by dprpc_launch()), ETIMEDOUT (the store or the rendezvous did
 *         not complete: @p err names the workers missing), or the errors
 *         of dprpc_store_rendezvous() and dprpc_agent_create().  After
 *         NULL nothing is left but EAL.
 *
 * Thread context: any thread that may call rte_eal_init() (the process's
 * main thread, if EAL is not up yet); blocks up to twice timeout_us.
 * Ownership: the agent is the caller's, ended by dprpc_launch_shutdown().
 */
struct dprpc_agent *dprpc_launch(const struct dprpc_launch_conf *conf, char *err, size_t errlen);

/**
 * Leave a world joined by dprpc_launch() (PyTorch's shutdown()):
 * dprpc_shutdown(@p agent, @p graceful, @p timeout_us, @p err), which
 * destroys the agent, then remove the memif directory once it is empty
 * (the last worker out removes it).  EAL stays up: a later dprpc_launch()
 * in the process uses it; dprpc_eal_cleanup() ends it.
 *
 * @return dprpc_shutdown()'s result; -EINVAL for an agent that
 *         dprpc_launch() did not make (nothing done).
 * Thread context: as dprpc_shutdown().
 */
int dprpc_launch_shutdown(
	struct dprpc_agent *agent, bool graceful, uint64_t timeout_us, struct dprpc_error *err);

#ifdef __cplusplus
}
#endif

#endif /* DPRPC_LAUNCH_H */
