/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The start-up rendezvous (rendezvous.c; the waits in wait.c):
 * dprpc_world_wait() and the pings the poller sends meanwhile; the worker
 * descriptions (dprpc_worker_info_get()).
 */
#ifndef DP_RENDEZVOUS_H
#define DP_RENDEZVOUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dp_membership.h"

/* How often the poller pings every worker not heard from yet while a
 * thread waits for the world. */
#define DP_RDV_PING_MS 10

/* The poller, on its timer, while a thread is in dprpc_world_wait() (pings
 * to the workers not heard from) or dprpc_world_leave() (LEAVE to those
 * that did not acknowledge it). */
void dp_rendezvous_timer(struct dp_membership *a, uint64_t now);
/* dprpc_world_leave()'s steps (wait.c): its start (our LEAVE goes to every
 * worker from the next tick); whether every worker up for us acknowledged
 * it, and those whose LEAVE crossed ours answered it; its end. */
void dp_leave_begin(struct dp_membership *a);
bool dp_leave_told(struct dp_membership *a);
void dp_leave_end(struct dp_membership *a);
/* dprpc_world_wait()'s steps: whether every worker is up, or was and left
 * since, the names of the others into @missing (", " between them; "..."
 * when they do not fit); the rendezvous window raised to @end. */
bool dp_world_formed(const struct dp_membership *a, char *missing, size_t len);
void dp_rdv_extend(struct dp_membership *a, uint64_t end);
/* A LEAVE or LEAVE_ACK (@op) from peer @p. */
void dp_leave_rx(struct dp_membership *a, unsigned int p, uint32_t op);

/* How many flushes the receiver of a last word tries to get its answer
 * out (dp_link_answer()). */
#define DP_LINK_CLOSE_FLUSH_TRIES 1000
/* Answer worker @p's last word on its own link (@op: LEAVE_ACK to its
 * LEAVE, CLOSE_ACK to its CLOSE), flush the answer and make the link quiet
 * and answered (struct dp_port): its worker closes its end first.  The
 * poller, or dp_links_close(). */
void dp_link_answer(struct dp_membership *a, unsigned int p, uint32_t op);

#endif /* DP_RENDEZVOUS_H */
