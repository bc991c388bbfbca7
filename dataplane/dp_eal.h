/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * EAL set-up (eal.c): dprpc_eal_init() and dprpc_eal_cleanup() (declared
 * in dprpc_agent.h), and the mbuf dynamic field in which every submitted
 * frame carries its struct dp_call_meta (dp_meta_offset, dp_meta()).  The
 * thread that creates an agent.
 */
#ifndef DP_EAL_H
#define DP_EAL_H

/* Register the dynamic field and set dp_meta_offset: 0 or -rte_errno.
 * Idempotent: the same name and size give back the same offset. */
int dp_register_dynfield(void);

#endif /* DP_EAL_H */
