/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The dataplane's log type.  Nothing is logged on the packet path: drops
 * and errors there are counted (dprpc_agent_stats_get()).  Never installed.
 */
#ifndef DP_LOG_H
#define DP_LOG_H

#include <rte_log.h>

extern int dp_logtype;
#define DP_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, dp_logtype, "dprpc: " fmt "\n", ##__VA_ARGS__)

#endif /* DP_LOG_H */
