/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The start-up rendezvous (rendezvous.c): dprpc_world_wait() and the pings
 * the poller sends meanwhile; the worker descriptions
 * (dprpc_get_worker_info()).
 */
#ifndef DP_RENDEZVOUS_H
#define DP_RENDEZVOUS_H

#include <stdint.h>

#include "dp_agent.h"

/* How often the poller pings every worker not heard from yet while a
 * thread waits for the world. */
#define DP_RDV_PING_MS 10

/* The poller, on its timer, while a thread is in dprpc_world_wait() (pings
 * to the workers not heard from) or dprpc_world_leave() (LEAVE to those
 * that did not acknowledge it). */
void dp_rendezvous_timer(struct dprpc_agent *a, uint64_t now);

#endif /* DP_RENDEZVOUS_H */
