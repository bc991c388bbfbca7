/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent's teardown (dprpc_agent_destroy()), and its lcores launched
 * and stopped (creation and teardown).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_random.h>

#include "dp_agent.h"
#include "dp_client.h"
#include "dp_eal.h"
#include "dp_handler.h"
#include "dp_link_close.h"
#include "dp_liveness.h"
#include "dp_mbuf_pool.h"
#include "dp_msg.h"
#include "dp_poll.h"
#include "dp_port.h"
#include "dp_server.h"
#include "dp_stream.h"
#include "fut_internal.h"
#include "dprpc_atomic.h"
#include "dprpc_mempool_free.h"

static void
dp_drain_rings(struct dprpc_agent *a)
{
	struct rte_mbuf *m;
	struct dprpc_request *req;
	unsigned int i;

	/* Calls never started and replies never sent. */
	while (rte_ring_sc_dequeue(a->m.r.b.tx_ring, (void **)&m) == 0) {
		struct dp_call_meta *meta = dp_meta(m);
		unsigned int dst =
			rte_be_to_cpu_16(dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *))->dst_worker);

		dp_txmsg_put(meta->tx);
		if (meta->fut != NULL) {
			dp_stream_put(dp_stream_of(m)); /* a stream call's */
			fut_fail_consume(meta->fut, -ESHUTDOWN, a->m.r.b.rank, "agent shut down");
			/* Relaxed: a bound only, pairs with nothing (as in
			 * dp_slot_release()). */
			atomic_fetch_sub_explicit(
				&a->m.r.peers[dst].outstanding, 1, memory_order_relaxed);
			dp_count(&a->m.r.b.st.calls_failed, 1);
		}
		rte_pktmbuf_free(m);
	}
	/* Requests queued to handler lcores that stopped: released unanswered
	 * (their callers fail with the port gone). */
	for (i = 0; i < a->m.r.nb_hl; i++) {
		while (rte_ring_sc_dequeue(a->m.r.hl[i].ring, (void **)&req) == 0)
			dp_request_free(req); /* its frame, message and hook too */
	}
	for (i = 0; i < a->m.r.b.port.nb_ports; i++)
		while (a->m.r.b.port.ports[i].tx_n > 0)
			rte_pktmbuf_free(
				a->m.r.b.port.ports[i].tx_buf[--a->m.r.b.port.ports[i].tx_n]);
}

void
dp_agent_free(struct dprpc_agent *a)
{
	unsigned int i, in_use;

	dp_ext_closing_all(&a->m.r.b);
	dp_port_close(&a->m.r.b.port);
	if (a->m.r.b.tx_ring != NULL)
		dp_drain_rings(a);
	if (a->m.r.peers != NULL)
		dp_fail_all_slots(&a->m.r, -ESHUTDOWN, "agent shut down");
	dp_fault_free(&a->m.r.b.ftx);
	dp_fault_free(&a->m.r.b.frx);
	dp_arp_fini(&a->m.r.b);
	dp_auth_fini(&a->m.r.b);
	if (a->m.r.peers != NULL)
		for (i = 0; i < a->m.r.b.world.n; i++)
			dp_srv_reset(&a->m.r, &a->m.r.peers[i]);
	dp_ext_free_all(&a->m.r.b);
	/* Their futures and response mbufs go back before the pools. */
	dp_sync_kept_free(&a->m.r);
	for (i = 0; i < a->m.r.nb_hl; i++)
		rte_ring_free(a->m.r.hl[i].ring);
	rte_ring_free(a->m.r.b.tx_ring);
	if (a->m.r.b.fpool != NULL) {
		/* A future still held may be cancelled after the agent is
		 * gone (the pool then outlives it). */
		fut_pool_set_cancel_hook(a->m.r.b.fpool, NULL, NULL);
		dprpc_future_pool_release(a->m.r.b.fpool);
	}
	dp_req_pool_free(&a->m.r.b.rq);
	if (a->m.r.b.own_mp) {
		in_use = rte_mempool_in_use_count(a->m.r.b.mp);
		if (in_use == 0)
			dprpc_mempool_free_idle(a->m.r.b.mp);
		else
			/* Response values still held by futures point into
			 * these mbufs: leaking the pool is the safe choice. */
			DP_LOG(WARNING,
				"agent %s: %u mbufs still held (futures not put?); "
				"mbuf pool leaked",
				a->m.r.b.name, in_use);
	}
	free(a->m.r.handlers);
	dp_peers_free(&a->m.r);
	pthread_mutex_destroy(&a->m.r.reg_lock);
	pthread_mutex_destroy(&a->m.r.sync_kept_lock);
	dp_join_free(&a->m);
	dp_agent_name_drop(a);
	free(a);
}

/* Launch the handler lcores and the io lcore.  Every launch is tried and
 * checked: -EBUSY (logged) if any failed (its lcore was not waiting:
 * something else runs there), those that launched running. */
int
dp_lcores_launch(struct dprpc_agent *a)
{
	unsigned int i;
	int rc = 0;

	/* Relaxed: rte_eal_remote_launch() hands the lcore its work through
	 * EAL's own release/acquire pair, which publishes this store too. */
	atomic_store_explicit(&a->m.r.b.stop, false, memory_order_relaxed);
	for (i = 0; i < a->m.r.nb_hl; i++) {
		if (rte_eal_remote_launch(dp_lcore_handler, &a->m.r.hl[i], a->m.r.hl[i].lcore) !=
			0) {
			DP_LOG(ERR, "agent %s: cannot launch handler lcore %u", a->m.r.b.name,
				a->m.r.hl[i].lcore);
			rc = -EBUSY;
			continue;
		}
		a->m.r.hl[i].launched = true;
	}
	if (a->io_lcore != DPRPC_LCORE_NONE) {
		if (rte_eal_remote_launch(dp_lcore_io, a, a->io_lcore) != 0) {
			DP_LOG(ERR, "agent %s: cannot launch io lcore %u", a->m.r.b.name,
				a->io_lcore);
			rc = -EBUSY;
		} else {
			a->m.r.b.io_launched = true;
		}
	}
	return rc;
}

/* rte_eal_wait_lcore() spins on the lcore's state: the thread that
 * destroys often shares its CPU with the lcore it waits for (the io lcore
 * pinned beside the main one), which then runs only once the spinner's
 * time slice ends (milliseconds).  Sleep until the lcore is back in WAIT
 * first; the wait then returns at once. */
static void
dp_lcore_join(unsigned int lcore)
{
	while (rte_eal_get_lcore_state(lcore) != WAIT)
		usleep(20);
	rte_eal_wait_lcore(lcore);
}

void
dp_lcores_stop(struct dprpc_agent *a)
{
	unsigned int i;

	/* Release: pairs with the acquire loads in the lcore loops. */
	atomic_store_explicit(&a->m.r.b.stop, true, memory_order_release);
	for (i = 0; i < a->m.r.nb_hl; i++) {
		if (a->m.r.hl[i].launched)
			dp_lcore_join(a->m.r.hl[i].lcore);
		a->m.r.hl[i].launched = false;
	}
	if (a->m.r.b.io_launched)
		dp_lcore_join(a->io_lcore);
	a->m.r.b.io_launched = false;
}

/* The requests the application keeps, deferred and unanswered: those in
 * use but the ones queued to the handler lcores (ours to release) and
 * those the extensions keep and will answer when quiesced.  Exact only
 * with the lcores stopped: they run handlers that may defer, and the io
 * lcore takes new requests. */
static unsigned int
dp_requests_held(struct dprpc_agent *a)
{
	unsigned int in_use = dp_requests_in_use(&a->m.r.b), other = dp_ext_held_all(&a->m.r.b), i;

	for (i = 0; i < a->m.r.nb_hl; i++)
		other += rte_ring_count(a->m.r.hl[i].ring);
	return in_use > other ? in_use - other : 0;
}

int
dprpc_agent_destroy(struct dprpc_agent *a)
{
	unsigned int held;

	if (a == NULL)
		return -EINVAL;
	/* Decide before changing anything: only the lcores stop, to count. */
	dp_lcores_stop(a);
	held = dp_requests_held(a);
	if (held == 0) {
		/* Requests waiting for something that will never come (an
		 * RRef value) are answered (-ESHUTDOWN) rather than left
		 * deferred: the extensions counted them above. */
		dp_ext_quiesce_all(&a->m.r.b);
		held = dp_requests_held(a);
		if (held == 0) {
			/* Its memif links' workers stop polling them first. */
			dp_links_close(&a->m);
			dp_agent_free(a);
			return 0;
		}
		/* Not expected: an extension kept more than it said. */
		DP_LOG(ERR, "agent %s: requests still kept after quiesce", a->m.r.b.name);
	}
	/* Deferred requests hold a pointer to the agent: refused, and the
	 * agent left as it was, its lcores running again. */
	DP_LOG(ERR, "agent %s: %u deferred requests unanswered, not destroyed", a->m.r.b.name,
		held);
	if (dp_lcores_launch(a) != 0)
		DP_LOG(ERR,
			"agent %s: an lcore could not be restarted after the refused destroy; "
			"the agent runs without it (dprpc_agent.h)",
			a->m.r.b.name);
	return -EBUSY;
}
