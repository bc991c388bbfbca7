/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The dataplane's log type, "dprpc.dataplane" (registered in eal.c; the
 * other modules have theirs: "dprpc.rref" in rref/'s internal header,
 * "dprpc.future" in future/fut_internal.h), so that EAL's
 * --log-level='dprpc.*:debug' or --log-level=dprpc.dataplane:debug reaches
 * it.  Nothing is logged on the packet path: drops and errors there are
 * counted (dprpc_agent_stats_get()).  Never installed.
 */
#ifndef DP_LOG_H
#define DP_LOG_H

#include <rte_log.h>

/* The "dprpc.dataplane" log type's id (RTE_LOG_REGISTER: at load time). */
extern int dp_logtype;
/* One line at RTE_LOG_<level> under "dprpc.dataplane". */
#define DP_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, dp_logtype, "dprpc: " fmt "\n", ##__VA_ARGS__)

#endif /* DP_LOG_H */
