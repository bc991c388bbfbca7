/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * liburcu QSBR for dprpc's threads (rcu.c).  Never installed.
 *
 * A thread that polls for good (an io lcore) stays online and reports a
 * quiescent state from its timer (dp_rcu_quiescent()), going offline only
 * while it sleeps; its read-side sections cost nothing.  Every other
 * thread (application threads, handler lcores) is registered on first use
 * and stays offline, coming online only for the length of a read-side
 * section; inside a poll (an application's loop, a caller polling while it
 * waits) it stays online from its first section to the end of the poll
 * (dp_rcu_poll_end()), reporting quiescent states from the poll's timer.
 * Sections may nest.
 *
 * The poll loop (poll.c) calls everything but the read lock; a module that
 * keeps RCU-protected tables calls only dp_rcu_read_lock()/_unlock() and
 * the liburcu QSBR flavour's call_rcu()/barrier.
 */
#ifndef DP_RCU_H
#define DP_RCU_H

void dp_rcu_online_begin(void);
void dp_rcu_online_end(void);
void dp_rcu_quiescent(void);
void dp_rcu_poll_end(void);
void dp_rcu_sleep_begin(void);
void dp_rcu_sleep_end(void);
void dp_rcu_read_lock(void);
void dp_rcu_read_unlock(void);

#endif /* DP_RCU_H */
