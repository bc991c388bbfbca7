/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the dataplane needs from rref/ (never installed, not exported).
 */
#ifndef RR_INTERNAL_H
#define RR_INTERNAL_H

#include <stdbool.h>

struct dprpc_agent;
struct dprpc_agent_conf;

/* rref.c: the agent's RRef contexts.  create registers the "dprpc.rref.*"
 * handlers; closing stops outgoing RRef messages (the agent is going);
 * quiesce fails every value still pending with -ESHUTDOWN (answering the
 * requests that wait for one); free releases everything, without
 * messages, after an RCU barrier.  timer runs on the poller every timer
 * period: it retries RRef messages that found no call slot. */
int rr_ctx_create(struct dprpc_agent *a, const struct dprpc_agent_conf *c);
void rr_ctx_closing(struct dprpc_agent *a);
void rr_ctx_quiesce(struct dprpc_agent *a);
void rr_ctx_free(struct dprpc_agent *a);
unsigned int rr_ctx_timer(struct dprpc_agent *a);

/* rcu.c: liburcu QSBR for dprpc's threads.
 *
 * A thread that polls for good (an io lcore) stays online and reports a
 * quiescent state from its timer (rr_rcu_quiescent()), going offline only
 * while it sleeps; its read-side sections cost nothing.  Every other
 * thread (application threads, handler lcores) is registered on first use
 * and stays offline, coming online only for the length of a read-side
 * section; inside a poll (an application's loop, a caller polling while it
 * waits) it stays online from its first section to the end of the poll
 * (rr_rcu_poll_end()), reporting quiescent states from the poll's timer.
 * Sections may nest. */
void rr_rcu_online_begin(void);
void rr_rcu_online_end(void);
void rr_rcu_quiescent(void);
void rr_rcu_poll_end(void);
void rr_rcu_sleep_begin(void);
void rr_rcu_sleep_end(void);
void rr_read_lock(void);
void rr_read_unlock(void);

/* cds_lfht_for_each_entry() takes container_of() of the NULL node that
 * ends a walk (undefined behaviour: UBSan reports it under the fuzzer);
 * this walks the nodes and converts only real ones. */
#define rr_for_each_entry(ht, iter, pos, member)                                               \
	for (cds_lfht_first(ht, iter); cds_lfht_iter_get_node(iter) != NULL &&                 \
				       ((pos) = caa_container_of(cds_lfht_iter_get_node(iter), \
						__typeof__(*(pos)), member),                   \
				       1);                                                     \
		cds_lfht_next(ht, iter))

#endif /* RR_INTERNAL_H */
