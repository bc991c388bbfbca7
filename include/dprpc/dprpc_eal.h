/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * EAL conveniences for applications, tools and examples.
 *
 * The application owns EAL: the library never calls rte_eal_init() except
 * through dprpc_eal_init() and dprpc_eal_init_local() (the set for a
 * machine without a NIC), conveniences for applications, tools and tests.
 */
#ifndef DPRPC_EAL_H
#define DPRPC_EAL_H

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Convenience EAL initialisation for applications, tools and examples:
 * rte_eal_init() with the given arguments, tolerating an EAL that is
 * already up (then nothing is done).
 *
 * Quiet by default: EAL starts with three log types below their own
 * defaults, whose messages at those defaults are about normal events of
 * a run without a NIC (docs/launch.md lists them): lib.eal and
 * lib.telemetry at error, pmd.net.memif at critical (that PMD logs a
 * probe under --no-shconf and a client started before its server as
 * errors; the agent logs a memif port's real failures itself).  They are
 * given as --log-level options before @p argv's, so a --log-level of the
 * application's (lib.eal:info, 'pmd.*:debug') wins; one that sets the
 * global level (--log-level=debug, no type) drops them all.
 *
 * @p argv is left as rte_eal_init() leaves it (the program name before
 * the first argument not consumed): skip the returned count, as with
 * rte_eal_init().
 *
 * @return the number of arguments consumed (as rte_eal_init()), 0 if EAL
 *         was already initialised, -EINVAL if @p argc is below 1 or
 *         @p argv (or argv[0]) is NULL, -ENOMEM, or rte_eal_init()'s
 *         negative errno.
 * Thread context: the main thread, once, before any other call.
 * Ownership: @p argv stays the caller's.
 */
int dprpc_eal_init(int argc, char **argv);

/** Default of dprpc_eal_local_conf.mem_mb. */
#define DPRPC_EAL_LOCAL_MEM_DEFAULT_MB 256u

/**
 * What dprpc_eal_init_local() gives EAL.  Fill it with
 * dprpc_eal_local_conf_init(), the one source of its defaults, and change
 * what you need.
 */
struct dprpc_eal_local_conf {
	/** Names the process's EAL files: --file-prefix dprpc-PID-TAG, or
	 * dprpc-PID for NULL (the default).  Up to 32 of [A-Za-z0-9_.-]. */
	const char *tag;
	/** EAL's memory (-m), in MB; default DPRPC_EAL_LOCAL_MEM_DEFAULT_MB. */
	unsigned int mem_mb;
	/** EAL lcores: 2 (the default): lcores 0 and 1, lcore 1 free for an
	 * agent's io lcore (dprpc_lcore_conf.io); 1: lcore 0 only.  Each floats over every CPU of the process's affinity (EAL
	 * pins no thread of the application).  At most 2. */
	unsigned int lcores;
	/**
	 * More EAL arguments, separated by spaces (NULL: none), e.g.
	 * "--vdev net_memif0,role=server,socket=/tmp/s.sock".  They come
	 * after the set's: a --log-level here wins over the set's levels, and
	 * an -m or --socket-mem, a --file-prefix, or an -l, -c or --lcores
	 * here replaces the set's own.  At most 48 arguments, 1023 bytes.
	 */
	const char *args;
};

/**
 * Fill @p conf with the defaults: no tag, DPRPC_EAL_LOCAL_MEM_DEFAULT_MB,
 * two lcores, no more arguments.  A NULL @p conf is ignored.  Any thread.
 */
void dprpc_eal_local_conf_init(struct dprpc_eal_local_conf *conf);

/**
 * EAL for a machine without a NIC or hugepages, one process among others
 * (the set dprpc_launch() uses): dprpc_eal_init() (quiet by default) with
 *     --no-pci --no-huge -m MEM_MB --huge-unlink=never --no-shconf
 *     --no-telemetry --file-prefix dprpc-PID[-TAG]
 *     --lcores 0@(CPUS)[,1@(CPUS)]
 * then @p conf's args.  CPUS are the CPUs of the process's affinity.  The
 * file prefix is the process's own, so several such processes run side
 * by side; dprpc_eal_cleanup() removes its runtime directory.  Devices
 * come from a vdev (dprpc_agent_conf.port.vdev, or --vdev in args) or the
 * world map's memif links: "w0 0; w1 1; mesh memif:/tmp/w" needs no more.
 *
 * @param conf  the set (dprpc_eal_local_conf_init()); NULL: the defaults.
 *              Read during the call only.
 * @return 0 (EAL up: now, or already, in which case nothing is done);
 *         -EINVAL (a tag that is too long or has other characters, lcores
 *         not 1 or 2, mem_mb 0, args too long or too many, or arguments EAL refuses);
 *         or rte_eal_init()'s other negative errno.
 * Thread context: the main thread, once, before any other call (as
 * dprpc_eal_init()).
 */
int dprpc_eal_init_local(const struct dprpc_eal_local_conf *conf);

/**
 * Convenience EAL teardown for tools, tests and examples that run with a
 * private --file-prefix: rte_eal_cleanup(), then remove the files of EAL's
 * runtime directory (/var/run/dpdk/PREFIX: sockets, configuration) and the
 * directory, which EAL leaves behind even with --no-shconf.  Not for a
 * multi-process primary whose secondaries still use that directory.
 *
 * Before rte_eal_cleanup() it waits (two rounds of the EAL interrupt
 * thread, microseconds when that thread has a CPU) until the interrupt
 * thread has rebuilt its epoll set after the last memif port closed:
 * DPDK 22.11's memif PMD leaves sources registered whose handles it freed
 * in the EAL heap (docs/worlds.md, "Closing memif ports").  An
 * application that calls rte_eal_cleanup() itself after destroying agents
 * with memif links should call this instead, or wait the same way.
 *
 * With --no-huge, give EAL --huge-unlink=never: otherwise DPDK 22.11's
 * rte_eal_cleanup() walks every 4 KiB segment of -m for hugepage files
 * that --no-huge does not have (perf/RESULTS.md has the cost).
 *
 * @return 0; -EALREADY if EAL is not up (never initialised, or cleaned
 *         up already); or rte_eal_cleanup()'s negative errno (the
 *         directory is removed all the same).
 * Thread context: the main thread, last; no DPDK call may follow.
 */
int dprpc_eal_cleanup(void);

#ifdef __cplusplus
}
#endif

#endif /* DPRPC_EAL_H */
