/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The poll loop: rx burst -> parse -> complete responses / dispatch
 * requests -> drain submitted calls and replies -> timers -> tx flush.
 *
 * Everything here runs on the poller (the holder of agent->polling), so the
 * session slots, tx_buf and the port queues need no synchronisation of
 * their own.  Nothing here allocates, locks or logs per frame.  The poll
 * flag's design is at the top of poll_lock.c.
 */
#include <errno.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "dp_agent.h"
#include "dp_client.h"
#include "dp_eal.h"
#include "dp_link_close.h"
#include "dp_liveness.h"
#include "dp_msg.h"
#include "dp_poll.h"
#include "dp_port.h"
#include "dp_rcu.h"
#include "dp_rendezvous.h"
#include "dp_rx.h"
#include "dp_server.h"
#include "dp_stage.h"
#include "dp_stream.h"
#include "dp_submit.h"
#include "dprpc_atomic.h"
#include <dprpc/dprpc_stats.h>

/* A world with a key (docs/security.md): the frame's tag, then, from a
 * peer, its incarnation's proof (proof.c), before anything reads the
 * agent's state.  False: dropped. */
static __rte_noinline bool
dp_rx_auth(struct dprpc_agent *a, struct rte_mbuf *m, const struct dp_parsed *p)
{
	enum dprpc_drop_reason why;

	if (!dp_auth_ok(&a->m.r.b, m, p))
		why = DPRPC_DROP_AUTH_FAILED;
	else if (p->dst != DP_RANK_NONE && p->src != a->m.r.b.rank &&
		 !dp_session_proven(&a->m.r, p))
		why = DPRPC_DROP_UNCONFIRMED;
	else
		return true;
	dp_drop_frame(&a->m.r.b, m, why);
	return false;
}

/* A frame @m (parsed into @p) whose UDP checksum was sent: the port's
 * verdict where it gives one, else ours. */
static bool
dp_rx_udp_ok(const struct rte_mbuf *m, const struct dp_parsed *p)
{
	switch (m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) {
	case RTE_MBUF_F_RX_L4_CKSUM_GOOD:
		return true;
	case RTE_MBUF_F_RX_L4_CKSUM_BAD:
		return false;
	default:
		return dp_frame_udp_ok(rte_pktmbuf_mtod(m, const uint8_t *), p);
	}
}

void __rte_hot
dp_rx_frame(struct dprpc_agent *a, struct rte_mbuf *m)
{
	enum dprpc_drop_reason why;
	struct dp_parsed p;

	if (unlikely(m->nb_segs != 1 || rte_mbuf_refcnt_read(m) > 1)) {
		m = dp_rx_private(&a->m.r, m);
		if (m == NULL)
			return;
	}
	if (!dp_frame_parse(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, &a->m.r.b.rx_ctx, &p,
		    &why)) {
		if (unlikely(why == DPRPC_DROP_NOT_DPRPC) && dp_host_rx(&a->m.r.b, m))
			return;
		dp_drop_frame(&a->m.r.b, m, why);
		return;
	}
	if (unlikely(dp_frame_udp_csum(&p) != 0) && !dp_rx_udp_ok(m, &p)) {
		dp_drop_frame(&a->m.r.b, m, DPRPC_DROP_BAD_UDP_CSUM);
		return;
	}
	if (unlikely(a->m.r.b.auth.on) && !dp_rx_auth(a, m, &p))
		return;
	if (unlikely(p.dst == DP_RANK_NONE)) {
		/* A join frame, from or to a worker not in the world. */
		dp_join_rx(&a->m, &p);
		rte_pktmbuf_free(m);
		return;
	}
	if (p.src != a->m.r.b.rank) {
		if (!dp_check_session(&a->m.r, &p)) {
			dp_drop_frame(&a->m.r.b, m, DPRPC_DROP_OLD_SESSION);
			return;
		}
		/* A frame replayed proves nobody alive (proof.c). */
		if (unlikely(a->m.r.b.auth.on) && !dp_frame_fresh(&a->m.r, &p)) {
			dp_drop_frame(&a->m.r.b, m, DPRPC_DROP_REPLAYED);
			return;
		}
		dp_peer_heard(&a->m.r, p.src);
		/* Sent to a previous incarnation of ours, or to none: not
		 * ours to act on (a request is never run, docs/reliability.md).
		 * A PING or PONG is, whoever it names. */
		if (unlikely(p.dst_session != a->m.r.b.session) && p.type != DP_FRAME_CONTROL) {
			dp_wrong_incarnation(&a->m.r, m, &p);
			return;
		}
	}
	/* The world's operations between members (a LEAVE, a CLOSE, a join
	 * operation); the rest is the calls' (dp_rpc_rx()). */
	if (unlikely(p.type == DP_FRAME_CONTROL) && p.src != a->m.r.b.rank) {
		if (p.handler_id == DP_CTRL_LEAVE || p.handler_id == DP_CTRL_LEAVE_ACK) {
			dp_leave_rx(&a->m, p.src, p.handler_id);
			rte_pktmbuf_free(m);
			return;
		}
		if (p.handler_id == DP_CTRL_CLOSE || p.handler_id == DP_CTRL_CLOSE_ACK) {
			dp_link_close_rx(&a->m, p.src, p.handler_id);
			rte_pktmbuf_free(m);
			return;
		}
		if (p.handler_id >= DP_CTRL_JOIN && p.handler_id <= DP_CTRL_JOIN_ACK) {
			dp_join_rx(&a->m, &p);
			rte_pktmbuf_free(m);
			return;
		}
	}
	dp_rpc_rx(&a->m.r, m, &p);
}

/* Whether a received frame looks like a liveness CONTROL frame, not one
 * of a call's (dp_frame_of_call(); not parsed yet: only what its first
 * segment holds). */
static bool
dp_rx_looks_control(const struct rte_mbuf *m)
{
	const struct dp_wire_hdr *h;

	if (m->data_len < DP_HDRS_LEN)
		return false;
	h = dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *));
	return h->magic == rte_cpu_to_be_16(DP_WIRE_MAGIC) && !dp_frame_of_call(h);
}

/* Received frames through the rx faults. */
static void
dp_rx_faulty(struct dprpc_agent *a, struct rte_mbuf **rx, unsigned int n)
{
	struct rte_mbuf *out[2];
	uint64_t now = rte_rdtsc();
	unsigned int i, j, k;

	for (i = 0; i < n; i++) {
		k = dp_fault_one(&a->m.r.b.frx, rx[i], out, now, !dp_rx_looks_control(rx[i]));
		for (j = 0; j < k; j++)
			dp_rx_frame(a, out[j]);
	}
}

/* Held frames that are due go on: received ones to the parser, sent ones
 * to the port. */
static unsigned int
dp_fault_release(struct dprpc_agent *a, uint64_t now)
{
	struct rte_mbuf *ms[DP_FAULT_HELD];
	unsigned int i, n, m;

	n = dp_fault_due(&a->m.r.b.frx, ms, DP_FAULT_HELD, now);
	for (i = 0; i < n; i++)
		dp_rx_frame(a, ms[i]);
	m = dp_fault_due(&a->m.r.b.ftx, ms, DP_FAULT_HELD, now);
	for (i = 0; i < m; i++) {
		if (unlikely(dp_tx_stale(&a->m.r, ms[i])))
			dp_tx_discard(
				&a->m.r.b, ms[i]); /* its call or its peer's incarnation ended */
		else
			dp_stage_port(&a->m.r.b, ms[i]);
	}
	return n + m;
}

static inline unsigned int dp_poll_port(
	struct dprpc_agent *a, struct dp_port *pt, unsigned int budget);

static unsigned int
dp_run_timers(struct dprpc_agent *a, uint64_t now)
{
	unsigned int i, n = 0;

	a->next_timer_tsc = now + a->m.r.b.timer_period_tsc;
	/* Relaxed: a hint for dp_expire_stalled(). */
	dp_store_relaxed(&a->m.r.b.tick_tsc, now);
	/* A link up: the rendezvous pings its worker at the next tick rather
	 * than up to DP_RDV_PING_MS later. */
	if (unlikely(a->m.r.b.port.nb_link_ports != 0 || a->m.r.b.port.ports[0].one_peer ||
		     a->m.r.b.port.ports[0].restart) &&
		dp_ports_timer(&a->m.r.b.port, now))
		a->m.rdv_ping_tsc = 0;
	if (unlikely(dp_load_relaxed(&a->m.r.b.startup_waiters) != 0 ||
		     dp_load_relaxed(&a->m.leaving)))
		dp_rendezvous_timer(&a->m, now);
	if (unlikely(dp_join_busy(&a->m)))
		dp_join_timer(&a->m, now);
	/* A member's join port (join.c): joiners are not in a hurry, it is
	 * received from once a tick, off the path of every poll. */
	if (unlikely(a->m.r.b.port.join_port > 0)) {
		struct dp_port *pt = &a->m.r.b.port.ports[a->m.r.b.port.join_port];

		if (pt->state != DP_LINK_PENDING && pt->state != DP_LINK_RETIRED)
			n += dp_poll_port(a, pt, DP_RX_BURST);
	}
	dp_liveness(&a->m.r, now);
	if (unlikely(a->m.r.b.arp.on))
		dp_arp_timer(&a->m.r.b, now);
	/* This thread is between read-side sections: a quiescent state for
	 * an io lcore or a poll that stays online (dp_rcu.h). */
	dp_rcu_quiescent();
	for (i = 0; i < DP_EXT_MAX && dp_extensions[i] != NULL; i++)
		if (a->m.r.b.ext[i] != NULL)
			n += dp_extensions[i]->timer(a->m.r.b.ext[i]);
	n += dp_client_timers(&a->m.r, now);
	return n;
}

/* Receive a burst from port @pt and handle it.  Inlined: one port costs
 * no call. */
static __rte_always_inline unsigned int
dp_poll_port(struct dprpc_agent *a, struct dp_port *pt, unsigned int budget)
{
	struct rte_mbuf *rx[DP_RX_BURST];
	unsigned int n, i, room;

	if (DP_TX_BUF - pt->tx_n < DP_RX_BURST)
		dp_tx_flush(&a->m.r.b);
	/* Each frame received may stage one reply: receive no more than
	 * tx_buf has room for, so the port's push-back reaches the peer, but
	 * at least DP_RX_MIN: two workers whose tx queues are both full would
	 * otherwise wait for each other for good.  A reply that finds tx_buf
	 * full is dropped and answered again, from the kept response, when
	 * the caller resends. */
	room = DP_TX_BUF - pt->tx_n;
	if (room < DP_RX_MIN)
		room = DP_RX_MIN;
	budget = RTE_MIN(budget, (unsigned int)DP_RX_BURST);
	budget = RTE_MIN(budget, room);
	n = budget == 0 ? 0 : rte_eth_rx_burst(pt->id, pt->rxq, rx, (uint16_t)budget);
	if (unlikely(n == budget) && budget != 0)
		dp_rx_behind(&a->m.r.b);
	else
		a->m.r.b.rx_backlog = false;
	if (n > 0) {
		/* Relaxed: a statistic (struct dp_stats). */
		dp_counter_add(&a->m.r.b.st.rx_frames, n);
		if (unlikely(a->m.r.b.frx.on)) {
			dp_rx_faulty(a, rx, n);
		} else {
			for (i = 0; i < n; i++) {
				if (i + 1 < n)
					rte_prefetch0(rte_pktmbuf_mtod(rx[i + 1], void *));
				dp_rx_frame(a, rx[i]);
			}
		}
	}
	return n;
}

static int __rte_hot
dp_poll_locked(struct dprpc_agent *a, unsigned int budget)
{
	unsigned int i, work = 0;
	uint64_t now;

	a->m.r.b.now_tsc = rte_rdtsc();
	if (likely(a->m.r.b.port.ports[0].io & DP_IO_RXTX))
		work += dp_poll_port(a, &a->m.r.b.port.ports[0], budget);
	/* Further ports: the memif links of the world map (port_link.c); one
	 * that is not started yet, or quiet, is left alone. */
	for (i = 1; i < a->m.r.b.port.nb_ports; i++)
		if (likely((a->m.r.b.port.ports[i].io & DP_IO_RXTX) &&
			    a->m.r.b.port.ports[i].kind != DP_PORT_JOIN))
			work += dp_poll_port(a, &a->m.r.b.port.ports[i], budget);
	work += dp_drain_tx_ring(&a->m.r);
	/* Acquire: pairs with the kick's release. */
	if (unlikely(dp_load_relaxed(&a->m.r.cancel_kick)) &&
		atomic_exchange_explicit(&a->m.r.cancel_kick, false, memory_order_acquire))
		work += dp_client_cancels(&a->m.r);
	now = rte_rdtsc();
	if (unlikely(a->m.r.b.frx.n_held + a->m.r.b.ftx.n_held > 0))
		work += dp_fault_release(a, now);
	if (now >= a->next_timer_tsc)
		work += dp_run_timers(a, now);
	dp_tx_flush(&a->m.r.b);
	return (int)work;
}

int __rte_hot
dprpc_poll(struct dprpc_agent *a, unsigned int budget)
{
	int n;

	if (a == NULL)
		return -EINVAL;
	dp_thread_lcore(); /* mempool caches for this thread */
	if (!dp_poll_trylock(&a->m.r.b))
		return -EBUSY;
	n = dp_poll_locked(a, budget == 0 ? DP_RX_BURST : budget);
	dp_poll_unlock(&a->m.r.b);
	return n;
}

bool
dp_poll_until_done(struct dprpc_agent *a, const struct dprpc_future *fut)
{
	unsigned int empty = 0;

	if (a->m.r.b.io_launched || dp_tls_poller == &a->m.r.b || !dp_poll_trylock(&a->m.r.b))
		return false;
	while (!dprpc_future_is_done(fut)) {
		if (dp_poll_locked(a, DP_RX_BURST) > 0) {
			empty = 0;
		} else if (++empty >= a->m.r.b.idle_yield) {
			/* A long wait: stop hogging the flag and let the
			 * generic wait (yield, park, other pollers) take over. */
			dp_poll_unlock(&a->m.r.b);
			return false;
		}
	}
	dp_poll_unlock(&a->m.r.b);
	return true;
}

int
dp_progress(void *arg)
{
	struct dprpc_agent *a = arg;
	int n;

	/* A thread that is already this agent's poller (a callback or an
	 * inline handler waiting) cannot poll recursively, and no other
	 * thread polls while it waits: a deadlock, reported as such.  Tested
	 * first: on the io lcore itself it is as much one. */
	if (dp_tls_poller == &a->m.r.b)
		return -EDEADLK;
	/* An io lcore polls: the waiter may park.  Whoever polls, if it
	 * stalls, this waiter fails the calls past their expiry. */
	n = a->m.r.b.io_launched ? -EBUSY : dprpc_poll(a, DP_RX_BURST);
	if (n == -EBUSY)
		dp_expire_stalled(&a->m.r);
	/* The application polls too (conf.lcores.waiters_park): an empty poll lets
	 * the waiter park, unless a message of several frames is in flight,
	 * whose window moves only as fast as someone polls.  Relaxed: a hint. */
	if (n == 0 && a->m.r.b.waiters_park && dp_load_relaxed(&a->m.r.b.st.msgs_live) == 0)
		return -1;
	return n < 0 ? -1 : n;
}

int
dp_lcore_io(void *arg)
{
	struct dprpc_agent *a = arg;
	unsigned int empty = 0;

	/* An io lcore is an RCU reader for good (QSBR): its timer reports the
	 * quiescent states (dp_run_timers()); it goes offline to sleep. */
	dp_rcu_online_begin();
	/* Acquire: pairs with the release store of stop in destroy. */
	while (!atomic_load_explicit(&a->m.r.b.stop, memory_order_acquire)) {
		if (dprpc_poll(a, DP_RX_BURST) > 0) {
			empty = 0;
		} else if (empty + 1 >= a->m.r.b.idle_yield || dp_idle_sleeps(&a->m.r.b, empty)) {
			dp_rcu_sleep_begin();
			dp_idle(&a->m.r.b, &empty);
			dp_rcu_sleep_end();
		} else {
			dp_idle(&a->m.r.b, &empty);
		}
	}
	dp_rcu_online_end();
	return 0;
}
