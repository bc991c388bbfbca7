/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The port layer's work-arounds of DPDK 22.11's memif PMD (this folder;
 * docs/worlds.md, "Closing memif ports"), meant to go when the PMD is
 * fixed: delete the folder, its subdir() in ../meson.build, and make each
 * call site do without:
 *  - port_link.c: dp_memif_sock_reclaim() before a server binds its
 *    socket (a killed process's socket file);
 *  - port_close.c: dp_on_intr(), the close on the EAL interrupt thread,
 *    becomes a direct dp_ports_stop_close();
 *  - eal.c: dp_intr_settle() (dp_intr.h) before rte_eal_cleanup().
 * Only the port layer sees this folder.
 */
#ifndef DP_MEMIF2211_H
#define DP_MEMIF2211_H

#include "dp_intr.h"

struct dp_ports;

/* memif_sock.c: before a memif server binds @path, remove a socket file
 * there that nobody listens on (a killed process's); 0, -EADDRINUSE
 * (logged) if a live process listens on it, or another -errno. */
int dp_memif_sock_reclaim(struct dp_ports *a, const char *path);
/* memif_unhook.c: the memif work-around's close of the ports picked: the
 * server sockets unhooked, then dp_ports_stop_close(), on the EAL interrupt
 * thread (or in place if it cannot be reached), waited for. */
void dp_on_intr(struct dp_ports *a);

#endif /* DP_MEMIF2211_H */
