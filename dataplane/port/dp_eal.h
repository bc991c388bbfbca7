/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * EAL set-up (eal.c): dprpc_eal_init() and dprpc_eal_cleanup() (declared
 * in dprpc_eal.h); the mbuf dynamic fields are the calls' (submit.c).
 * The thread that creates an agent.  The lcore ids of threads that EAL did
 * not create: any thread (dp_thread_lcore()).
 */
#ifndef DP_EAL_H
#define DP_EAL_H

#include <stdint.h>

#include <rte_branch_prediction.h>

/* Give a thread that EAL did not create an lcore id, hence mempool caches
 * (see dp_thread_lcore_slow() in eal.c).  Once per thread: dp_tls_lcore 0
 * not tried yet, 1 has an lcore id, -1 none to be had. */
extern __thread int8_t dp_tls_lcore __attribute__((tls_model("initial-exec")));
void dp_thread_lcore_slow(void);
static inline void
dp_thread_lcore(void)
{
	if (unlikely(dp_tls_lcore == 0))
		dp_thread_lcore_slow();
}

#endif /* DP_EAL_H */
