/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pieces an agent's start-up and teardown rest on:
 *  - where its own mbuf pool lives (dataplane/port/mbuf_pool.c): a private
 *    mapping when nothing can DMA into it (no hugepages, IOVA as VA, virtual
 *    ports only), the EAL heap otherwise; either way every mbuf usable and
 *    the pool freed whole;
 *  - jobs on the EAL interrupt thread (dataplane/port/memif2211/intr.c): run there, once
 *    each, never from that thread itself, and the settling rounds that
 *    dprpc_eal_cleanup() waits for;
 *  - the idle back-off of an agent whose world forms (dp_idle_sleeps(),
 *    dataplane/base/poll_lock.c): it sleeps as soon as it is idle, and only then.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <criterion/criterion.h>

#include <rte_alarm.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_memory.h>

#include "dp_agent.h"
#include "dp_intr.h"
#include "dp_mbuf_pool.h"
#include "dp_poll.h"
#include "dpt.h"

static void
setup(void)
{
	cr_assert_geq(dpt_eal_init("teardown"), 0);
}

static void
teardown(void)
{
	dpt_eal_cleanup();
}

TestSuite(teardown, .init = setup, .fini = teardown, .timeout = 60);

/* Take every mbuf of @mp, write each one's whole data room, check that
 * it lies (@in_heap) inside EAL memory or not, give them all back. */
static void
use_every_mbuf(struct rte_mempool *mp, unsigned int n, bool in_heap)
{
	struct rte_mbuf **m = calloc(n + 1, sizeof(*m));
	unsigned int i;

	cr_assert_not_null(m);
	cr_assert_eq(rte_mempool_avail_count(mp), n);
	cr_assert_eq(rte_pktmbuf_alloc_bulk(mp, m, n), 0, "all %u mbufs", n);
	cr_assert_null(rte_pktmbuf_alloc(mp), "no mbuf beyond the %u", n);
	for (i = 0; i < n; i++) {
		uint16_t room = rte_pktmbuf_tailroom(m[i]);
		char *p = rte_pktmbuf_append(m[i], room);

		cr_assert_eq(room, RTE_MBUF_DEFAULT_DATAROOM, "mbuf %u's room", i);
		cr_assert_not_null(p);
		memset(p, (int)(i & 0xff), room);
		cr_assert_eq(rte_mem_virt2memseg(m[i], NULL) != NULL, in_heap,
			"mbuf %u at %p %s the EAL heap", i, (void *)m[i],
			in_heap ? "outside" : "in");
		cr_assert_eq(rte_mbuf_data_iova(m[i]) != RTE_BAD_IOVA, true);
	}
	/* No two mbufs overlap: each still holds its own pattern. */
	for (i = 0; i < n; i++)
		cr_assert_eq(
			*rte_pktmbuf_mtod_offset(m[i], uint8_t *, rte_pktmbuf_data_len(m[i]) - 1),
			(uint8_t)(i & 0xff));
	rte_pktmbuf_free_bulk(m, n);
	cr_assert_eq(rte_mempool_in_use_count(mp), 0u);
	free(m);
}

Test(teardown, own_pool_with_virtual_ports_only_is_a_private_mapping)
{
	struct rte_mempool *mp = dp_mbuf_pool_create("dpt_mb_priv", 1023, SOCKET_ID_ANY, -1);

	cr_assert_not_null(mp, "%s", rte_strerror(rte_errno));
	cr_assert_eq(mp->size, 1023u);
	use_every_mbuf(mp, 1023, false);
	rte_mempool_free(mp);
	/* Its name is free again: the pool went whole. */
	mp = dp_mbuf_pool_create("dpt_mb_priv", 511, SOCKET_ID_ANY, -1);
	cr_assert_not_null(mp);
	use_every_mbuf(mp, 511, false);
	rte_mempool_free(mp);
}

Test(teardown, own_pool_for_an_applications_vdev_port_is_private)
{
	struct dpt_ring_pair rp;
	struct rte_mempool *mp;

	cr_assert_eq(dpt_ring_pair(&rp), 0);
	mp = dp_mbuf_pool_create("dpt_mb_ring", 255, SOCKET_ID_ANY, rp.port_a);
	cr_assert_not_null(mp);
	use_every_mbuf(mp, 255, false);
	rte_mempool_free(mp);
}

Test(teardown, own_pool_for_a_port_not_known_virtual_is_in_the_heap)
{
	/* No such port: nothing says no device can DMA into it. */
	struct rte_mempool *mp = dp_mbuf_pool_create("dpt_mb_heap", 255, SOCKET_ID_ANY, 77);

	cr_assert_not_null(mp);
	use_every_mbuf(mp, 255, true);
	rte_mempool_free(mp);
}

Test(teardown, own_pool_name_taken_fails_with_eexist)
{
	struct rte_mempool *mp = dp_mbuf_pool_create("dpt_mb_dup", 63, SOCKET_ID_ANY, -1);

	cr_assert_not_null(mp);
	cr_assert_null(dp_mbuf_pool_create("dpt_mb_dup", 63, SOCKET_ID_ANY, -1));
	cr_assert_eq(rte_errno, EEXIST);
	cr_assert_null(dp_mbuf_pool_create("dpt_mb_dup", 63, SOCKET_ID_ANY, 77));
	cr_assert_eq(rte_errno, EEXIST);
	rte_mempool_free(mp);
}

/* --- the interrupt thread ------------------------------------------------ */

struct job {
	atomic_uint runs;
	atomic_bool on_intr; /* every run was on the interrupt thread */
};

static void
job_fn(void *arg)
{
	struct job *j = arg;

	if (!rte_thread_is_intr())
		atomic_store(&j->on_intr, false);
	atomic_fetch_add(&j->runs, 1);
}

Test(teardown, intr_jobs_run_on_the_interrupt_thread_once_each)
{
	struct job j;
	unsigned int i;

	atomic_init(&j.runs, 0);
	atomic_init(&j.on_intr, true);
	cr_assert_not(rte_thread_is_intr());
	for (i = 0; i < 200; i++) {
		cr_assert(dp_intr_run(job_fn, &j), "job %u not run there", i);
		/* Waited for: it ran, once, before dp_intr_run() returned. */
		cr_assert_eq(atomic_load(&j.runs), i + 1);
	}
	cr_assert(atomic_load(&j.on_intr));
	cr_assert(dp_intr_settle());
	cr_assert(dp_intr_run(NULL, NULL), "a round alone");
	cr_assert_eq(atomic_load(&j.runs), 200u);
}

/* Two threads hand jobs over at once: each runs exactly once. */
static struct job shared_job;

static void *
job_thread(void *arg)
{
	for (int i = 0; i < 100; i++)
		if (!dp_intr_run(job_fn, &shared_job))
			return (void *)1;
	return arg;
}

Test(teardown, intr_jobs_from_two_threads_each_run_once)
{
	pthread_t t[2];
	void *r;

	atomic_init(&shared_job.runs, 0);
	atomic_init(&shared_job.on_intr, true);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, job_thread, NULL), 0);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(pthread_join(t[i], &r), 0);
		cr_assert_null(r, "a job was not run there");
	}
	cr_assert_eq(atomic_load(&shared_job.runs), 200u);
	cr_assert(atomic_load(&shared_job.on_intr));
}

/* From the interrupt thread itself (an EAL alarm runs there) a job cannot
 * wait for that thread: refused at once, not run, the caller does it. */
static struct job alarm_job;
static atomic_int alarm_result = -1;

static void
alarm_cb(void *arg)
{
	(void)arg;
	atomic_store(&alarm_result, dp_intr_run(job_fn, &alarm_job) ? 1 : 0);
}

Test(teardown, intr_job_from_the_interrupt_thread_is_refused)
{
	atomic_init(&alarm_job.runs, 0);
	atomic_init(&alarm_job.on_intr, true);
	cr_assert_eq(rte_eal_alarm_set(100, alarm_cb, NULL), 0);
	for (int i = 0; i < 20000 && atomic_load(&alarm_result) < 0; i++)
		usleep(100);
	cr_assert_eq(atomic_load(&alarm_result), 0, "refused");
	cr_assert_eq(atomic_load(&alarm_job.runs), 0u, "not run");
}

/* --- the idle back-off --------------------------------------------------- */

Test(teardown, idle_poller_sleeps_early_while_its_world_forms)
{
	struct dprpc_agent *a = calloc(1, sizeof(*a));

	cr_assert_not_null(a);
	dp_base_of(a)->idle_pause = 256;
	dp_base_of(a)->idle_yield = 4096;
	dp_base_of(a)->idle_sleep = 32768;
	/* Serving: busy, then pauses and yields, sleeping only after
	 * idle_sleep empty polls. */
	cr_assert_not(dp_idle_sleeps(dp_base_of(a), 0));
	cr_assert_not(dp_idle_sleeps(dp_base_of(a), 300));
	cr_assert_not(dp_idle_sleeps(dp_base_of(a), 32766));
	cr_assert(dp_idle_sleeps(dp_base_of(a), 32767));
	/* Calls refused (a shutdown) or a leave: the poller stays as quick
	 * as when serving (a peer's LEAVE_ACK is read at once). */
	atomic_store(&dp_base_of(a)->refusing, true);
	atomic_store(&dp_membership_of(a)->leaving, true);
	cr_assert_not(dp_idle_sleeps(dp_base_of(a), 300));
	cr_assert_not(dp_idle_sleeps(dp_base_of(a), 32766));
	cr_assert(dp_idle_sleeps(dp_base_of(a), 32767));
	atomic_store(&dp_base_of(a)->refusing, false);
	atomic_store(&dp_membership_of(a)->leaving, false);
	/* A thread in dprpc_world_wait(). */
	atomic_store(&dp_base_of(a)->startup_waiters, 1);
	cr_assert_not(dp_idle_sleeps(dp_base_of(a), 10));
	cr_assert(dp_idle_sleeps(dp_base_of(a), 300));
	atomic_store(&dp_base_of(a)->startup_waiters, 0);
	cr_assert_not(dp_idle_sleeps(dp_base_of(a), 300));
	free(a);
}
