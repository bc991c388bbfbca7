/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * liburcu QSBR registration of the threads that touch the RRef tables
 * (rr_internal.h).  Per-thread state only: no lock, no shared write.
 */
#include <pthread.h>
#include <stdint.h>

#include <urcu/urcu-qsbr.h>

#include "dp_agent.h"
#include "rr_internal.h"

enum rr_rcu_state {
	RR_RCU_NONE = 0,    /* not registered with liburcu */
	RR_RCU_OFFLINE = 1, /* registered, online only inside sections */
	RR_RCU_ONLINE = 2,  /* registered, online for good (an io lcore) */
	RR_RCU_POLL = 3,    /* online until the current poll ends */
};

static __thread uint8_t rr_tls_state __attribute__((tls_model("initial-exec")));
static __thread uint32_t rr_tls_depth __attribute__((tls_model("initial-exec")));
static pthread_key_t rr_key;
static pthread_once_t rr_key_once = PTHREAD_ONCE_INIT;
/* The call_rcu worker of dprpc's threads.  URCU_CALL_RCU_RT: it polls its
 * queue (short sleeps) instead of being woken by a futex on each
 * call_rcu(), so a release costs the releasing poller no system call and
 * the worker does not preempt busy pollers once per RRef; it frees in
 * batches instead. */
static struct call_rcu_data *rr_crdp;

/* A registered thread that exits must leave liburcu's registry, or the
 * next grace period reads its freed thread-local state. */
static void
rr_thread_exit(void *unused)
{
	(void)unused;
	if (rr_tls_state != RR_RCU_NONE)
		urcu_qsbr_unregister_thread();
	rr_tls_state = RR_RCU_NONE;
}

static void
rr_key_make(void)
{
	(void)pthread_key_create(&rr_key, rr_thread_exit);
	rr_crdp = urcu_qsbr_create_call_rcu_data(URCU_CALL_RCU_RT, -1);
}

static void
rr_register(void)
{
	(void)pthread_once(&rr_key_once, rr_key_make);
	urcu_qsbr_register_thread(); /* registers online */
	urcu_qsbr_thread_offline();
	if (rr_crdp != NULL)
		urcu_qsbr_set_thread_call_rcu_data(rr_crdp);
	(void)pthread_setspecific(rr_key, (void *)(uintptr_t)1);
	rr_tls_state = RR_RCU_OFFLINE;
}

void
rr_rcu_online_begin(void)
{
	if (rr_tls_state == RR_RCU_NONE)
		rr_register();
	if (rr_tls_state == RR_RCU_OFFLINE && rr_tls_depth == 0)
		urcu_qsbr_thread_online();
	rr_tls_state = RR_RCU_ONLINE;
}

void
rr_rcu_online_end(void)
{
	if (rr_tls_state != RR_RCU_ONLINE)
		return;
	if (rr_tls_depth == 0)
		urcu_qsbr_thread_offline();
	rr_tls_state = RR_RCU_OFFLINE;
}

void
rr_rcu_quiescent(void)
{
	if (rr_tls_state >= RR_RCU_ONLINE && rr_tls_depth == 0)
		urcu_qsbr_quiescent_state();
}

void
rr_rcu_poll_end(void)
{
	if (rr_tls_state == RR_RCU_POLL && rr_tls_depth == 0) {
		urcu_qsbr_thread_offline();
		rr_tls_state = RR_RCU_OFFLINE;
	}
}

void
rr_rcu_sleep_begin(void)
{
	if (rr_tls_state == RR_RCU_ONLINE && rr_tls_depth == 0)
		urcu_qsbr_thread_offline();
}

void
rr_rcu_sleep_end(void)
{
	if (rr_tls_state == RR_RCU_ONLINE && rr_tls_depth == 0)
		urcu_qsbr_thread_online();
}

void
rr_read_lock(void)
{
	if (rr_tls_state == RR_RCU_NONE)
		rr_register();
	if (rr_tls_state == RR_RCU_OFFLINE && rr_tls_depth == 0) {
		urcu_qsbr_thread_online();
		/* Inside a poll, stay online until it ends (rr_rcu_poll_end()):
		 * one online/offline pair per poll, not per section.  The
		 * poll's timer reports quiescent states meanwhile. */
		if (dp_tls_poller != NULL)
			rr_tls_state = RR_RCU_POLL;
	}
	rr_tls_depth++;
	urcu_qsbr_read_lock();
}

void
rr_read_unlock(void)
{
	urcu_qsbr_read_unlock();
	if (--rr_tls_depth == 0 && rr_tls_state == RR_RCU_OFFLINE)
		urcu_qsbr_thread_offline();
}
