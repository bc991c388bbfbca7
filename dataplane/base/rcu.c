/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * liburcu QSBR state of dprpc's threads (dp_rcu.h): which threads are
 * registered, online or offline.  The poll loop owns it: it brings an io
 * lcore online for good and reports quiescent states from its timer;
 * modules that keep RCU-protected tables (rref/) only open read-side
 * sections.  Per-thread state only: no lock, no shared write.
 */
#include <pthread.h>
#include <stdint.h>

#include <urcu/urcu-qsbr.h>

#include "dp_base.h"
#include "dp_rcu.h"

enum dp_rcu_state {
	DP_RCU_NONE = 0,    /* not registered with liburcu */
	DP_RCU_OFFLINE = 1, /* registered, online only inside sections */
	DP_RCU_ONLINE = 2,  /* registered, online for good (an io lcore) */
	DP_RCU_POLL = 3,    /* online until the current poll ends */
};

static __thread uint8_t dp_rcu_tls_state __attribute__((tls_model("initial-exec")));
static __thread uint32_t dp_rcu_tls_depth __attribute__((tls_model("initial-exec")));
static pthread_key_t dp_rcu_key;
static pthread_once_t dp_rcu_key_once = PTHREAD_ONCE_INIT;
/* The call_rcu worker of dprpc's threads.  URCU_CALL_RCU_RT: it polls its
 * queue (short sleeps) instead of being woken by a futex on each
 * call_rcu(), so a release costs the releasing poller no system call and
 * the worker does not preempt busy pollers once per RRef; it frees in
 * batches instead. */
static struct call_rcu_data *dp_rcu_crdp;

/* A registered thread that exits must leave liburcu's registry, or the
 * next grace period reads its freed thread-local state. */
static void
dp_rcu_thread_exit(void *unused)
{
	(void)unused;
	if (dp_rcu_tls_state != DP_RCU_NONE)
		urcu_qsbr_unregister_thread();
	dp_rcu_tls_state = DP_RCU_NONE;
}

static void
dp_rcu_key_make(void)
{
	(void)pthread_key_create(&dp_rcu_key, dp_rcu_thread_exit);
	dp_rcu_crdp = urcu_qsbr_create_call_rcu_data(URCU_CALL_RCU_RT, -1);
}

static void
dp_rcu_register(void)
{
	(void)pthread_once(&dp_rcu_key_once, dp_rcu_key_make);
	urcu_qsbr_register_thread(); /* registers online */
	urcu_qsbr_thread_offline();
	if (dp_rcu_crdp != NULL)
		urcu_qsbr_set_thread_call_rcu_data(dp_rcu_crdp);
	(void)pthread_setspecific(dp_rcu_key, (void *)(uintptr_t)1);
	dp_rcu_tls_state = DP_RCU_OFFLINE;
}

void
dp_rcu_online_begin(void)
{
	if (dp_rcu_tls_state == DP_RCU_NONE)
		dp_rcu_register();
	if (dp_rcu_tls_state == DP_RCU_OFFLINE && dp_rcu_tls_depth == 0)
		urcu_qsbr_thread_online();
	dp_rcu_tls_state = DP_RCU_ONLINE;
}

void
dp_rcu_online_end(void)
{
	if (dp_rcu_tls_state != DP_RCU_ONLINE)
		return;
	if (dp_rcu_tls_depth == 0)
		urcu_qsbr_thread_offline();
	dp_rcu_tls_state = DP_RCU_OFFLINE;
}

void
dp_rcu_quiescent(void)
{
	if (dp_rcu_tls_state >= DP_RCU_ONLINE && dp_rcu_tls_depth == 0)
		urcu_qsbr_quiescent_state();
}

void __rte_hot
dp_rcu_poll_end(void)
{
	if (dp_rcu_tls_state == DP_RCU_POLL && dp_rcu_tls_depth == 0) {
		urcu_qsbr_thread_offline();
		dp_rcu_tls_state = DP_RCU_OFFLINE;
	}
}

void
dp_rcu_sleep_begin(void)
{
	if (dp_rcu_tls_state == DP_RCU_ONLINE && dp_rcu_tls_depth == 0)
		urcu_qsbr_thread_offline();
}

void
dp_rcu_sleep_end(void)
{
	if (dp_rcu_tls_state == DP_RCU_ONLINE && dp_rcu_tls_depth == 0)
		urcu_qsbr_thread_online();
}

void
dp_rcu_read_lock(void)
{
	if (dp_rcu_tls_state == DP_RCU_NONE)
		dp_rcu_register();
	if (dp_rcu_tls_state == DP_RCU_OFFLINE && dp_rcu_tls_depth == 0) {
		urcu_qsbr_thread_online();
		/* Inside a poll, stay online until it ends (dp_rcu_poll_end()):
		 * one online/offline pair per poll, not per section.  The
		 * poll's timer reports quiescent states meanwhile. */
		if (dp_tls_poller != NULL)
			dp_rcu_tls_state = DP_RCU_POLL;
	}
	dp_rcu_tls_depth++;
	urcu_qsbr_read_lock();
}

void
dp_rcu_read_unlock(void)
{
	urcu_qsbr_read_unlock();
	if (--dp_rcu_tls_depth == 0 && dp_rcu_tls_state == DP_RCU_OFFLINE)
		urcu_qsbr_thread_offline();
}
