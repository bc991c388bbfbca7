/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Closing a memif link without crashing the worker at its other end.
 *
 * DPDK 22.11's memif PMD tears a connection down on its interrupt thread
 * when the peer disconnects, unmapping the rings while that worker's
 * poller may be inside rx_burst on them (docs/worlds.md, "Closing memif
 * ports").  A worker leaving the world gracefully already makes its peers
 * stop polling its links first (the LEAVE handshake, rendezvous.c).  An
 * agent destroyed without leaving did not: its peers' pollers were on the
 * link when it closed, and one died with SIGSEGV in rx_burst (a dprpc-perf
 * server whose client destroyed its agent: 9 runs in 140, 0 in 150 since).
 *
 * Design
 * ======
 *
 * dprpc_agent_destroy(), once it has decided to go on and its lcores are
 * stopped, calls dp_links_close(): to each worker at the other end of one
 * of its memif links that is up and not quiet (a link port, or the
 * default port when it reaches one worker alone), a CONTROL CLOSE; then it
 * reads those links itself, and nothing else of the agent runs, until
 * each has answered CLOSE_ACK (resent every DP_LINK_CLOSE_RESEND_MS) or
 * its link went down, for at most DP_LINK_CLOSE_WAIT_MS.  The worker that
 * receives a CLOSE (dp_link_close_rx(), its poller) answers, flushes the
 * answer and makes the link quiet (DP_LINK_QUIET, dp_port.h): never polled
 * nor sent on again until it has been down a while, or, should the timer
 * miss it going down (the closer's successor reconnecting between two
 * link checks), DP_LINK_CLOSED_QUIET_MAX_MS after the CLOSE.  It answers
 * the first CLOSE only (later ones are not read); a lost answer costs the
 * closer its wait.  Nothing else changes for it: the closing worker
 * stays what it was (it is declared down when its peer timeout passes,
 * as before), since a destroy without a leave is not a goodbye to the
 * world, only the end of a link; but a leave of the receiver's no longer
 * waits for it (dp_link_gone(), as for a link that went down).
 *
 * Why it is safe: the answer is the acknowledger's last use of the rings,
 * and the closer reads it before it closes.  On the receiver's side the
 * order is rx_burst (the CLOSE), the answer staged and flushed, then the
 * quiet flag, all on its poller; the closer sees the answer only once
 * tx_burst has written it, so the closer's disconnect comes after the
 * receiver's last rx_burst on the link.  Frames the closer reads meanwhile
 * that are not the answer are dropped unread: the agent is being
 * destroyed, its calls are failed and its requests' callers learn it when
 * the link goes down (or the peer timeout passes).
 *
 * The end that answers, the other way round, does not know when the
 * other read its answer: until then, its own disconnect would unmap the
 * rings under the other's rx_burst.  So a link whose worker's last word we
 * answered (dp_link_answer(), rendezvous.c: a CLOSE here, a LEAVE there) is
 * marked answered, and dp_links_close() closes it only once that worker
 * closed its end (the link down: that worker read the answer and is gone)
 * or DP_LINK_ANSWERED_WAIT_MS after the answer (a worker that left the
 * world and keeps its agent read its answer long before).  Of the two ends
 * of a link, one learns from an answer that the other stopped reading,
 * and closes first; the other closes after it.  A worker that answered
 * one LEAVE waits only for a worker that left before it did, so the waits
 * of a world shutting down form no cycle; one that did (stalls reordering
 * the LEAVEs) would cost the bound.
 *
 * Nor do they chain.  Were each worker's links closed together, the order
 * of a world whose workers all leave at once would be a chain: the
 * highest rank, answered by all, closes first; the next waits for it
 * before it closes any link, the next for both, and rank 0 for every
 * other close, one after the other (each a round of the interrupt
 * thread, milliseconds when four workers share two CPUs).  So once every
 * CLOSE of its own is answered, dp_links_close() closes at once the links
 * it has nothing more to wait for (dp_links_close_done(), one batch), and
 * the links it waits for with the rest of the ports afterwards: each link
 * waits for one close at most, its other end's.
 *
 * A CLOSE that meets a CLOSE (both ends destroying at once): the end of
 * the lower rank answers it, as any receiver does, and the other takes
 * that answer as the answer to its own, whereas if each took the other's
 * CLOSE for an answer, each would close while the other may still read.
 * An end that never answers (its poller stopped, or the application polls
 * it only now and then) costs DP_LINK_CLOSE_WAIT_MS, and is at risk if it
 * reads the link just as the closer, done waiting, closes it: the closer
 * cannot know.  That includes an end of the higher rank whose own destroy
 * starts as the other's wait ends, and which then waits, reading, for an
 * answer the other no longer reads its CLOSE to give.
 *
 * What stays: the answering end's tx_burst reads the ring's flags after it
 * wrote the answer's slot, so a closer that reads the answer and closes
 * within those few instructions, while the answering thread is preempted
 * exactly there, still meets the race.  A process killed, whose links
 * close without a word, is not covered either.
 */
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_pause.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "dp_membership.h"
#include "dp_link_close.h"
#include "dp_liveness.h"
#include "dp_port.h"
#include "dp_rendezvous.h"
#include "dp_stage.h"
#include "dprpc_atomic.h"

void
dp_link_close_rx(struct dp_membership *a, unsigned int p, uint32_t op)
{
	struct dp_port *pt = &a->r.b.port.ports[a->r.b.port.peer_port[p]];

	if (!dp_own_link(pt, p))
		return; /* not a link of its own: nothing to stop polling */
	if (op == DP_CTRL_CLOSE_ACK) {
		pt->close_acked = true; /* its answer: its last frame */
		return;
	}
	if (dp_port_quiet(pt))
		return; /* answered already: read no more */
	/* Its CLOSE crossed ours (both ends closing): the end of the lower
	 * rank answers, the other waits for that answer, so that one end
	 * knows the other stopped reading and closes first. */
	if (pt->state == DP_LINK_CLOSING && a->r.b.rank > p)
		return;
	dp_link_answer(a, p, DP_CTRL_CLOSE_ACK);
	/* Gone as a link that went down is (dp_link_gone()), and quiet no
	 * longer than DP_LINK_CLOSED_QUIET_MAX_MS after the answer should its
	 * going down be missed (dp_ports_timer()). */
	dp_port_set_state(pt, DP_LINK_CLOSED);
	dp_count(&a->r.b.st.links_closed, 1);
}

/* Whether @pt is a memif link dp_links_close() tells its worker about:
 * a worker's own link (not the join port), started by the agent (not the
 * application's port_ready port, which the agent leaves open), up, and
 * still polled. */
static bool
dp_link_to_close(const struct dp_membership *a, const struct dp_port *pt)
{
	struct rte_eth_link link;

	if ((pt->kind == DP_PORT_DEFAULT && !pt->one_peer) || pt->peer >= dp_world_n(&a->r.b) ||
		pt->peer == a->r.b.rank || !pt->started ||
		(pt->state != DP_LINK_LIVE && pt->state != DP_LINK_CLOSING))
		return false;
	return rte_eth_link_get_nowait(pt->id, &link) == 0 && link.link_status == RTE_ETH_LINK_UP;
}

/* Read what @pt received: its worker's answer (CLOSE_ACK, or LEAVE_ACK to
 * a LEAVE of ours) ends the wait, and so does its CLOSE crossing ours when
 * ours is the lower rank (we answer it, dp_link_close_rx()); anything else
 * is dropped.  Whether done. */
static bool
dp_link_close_read(struct dp_membership *a, struct dp_port *pt)
{
	struct rte_mbuf *rx[DP_RX_BURST];
	enum dprpc_drop_reason why;
	struct dp_parsed p;
	uint16_t n, i;

	n = rte_eth_rx_burst(pt->id, pt->rxq, rx, DP_RX_BURST);
	for (i = 0; i < n; i++) {
		if (dp_frame_parse(rte_pktmbuf_mtod(rx[i], const uint8_t *), rx[i]->data_len,
			    &a->r.b.rx_ctx, &p, &why) &&
			p.type == DP_FRAME_CONTROL && p.src == pt->peer) {
			if (p.handler_id == DP_CTRL_CLOSE || p.handler_id == DP_CTRL_CLOSE_ACK)
				dp_link_close_rx(a, pt->peer, p.handler_id);
			else if (p.handler_id == DP_CTRL_LEAVE_ACK)
				/* Its answer to our LEAVE (a crossed one's, see
				 * dp_leave_rx()): its last frame too. */
				pt->close_acked = true;
		}
		rte_pktmbuf_free(rx[i]);
	}
	/* Answered, or (a crossed CLOSE of ours the lower) we answered. */
	return pt->close_acked || dp_port_quiet(pt);
}

/* Whether @pt is a link whose worker's last word we answered
 * (DP_LINK_ANSWERED or CLOSED) and whose end that worker has not closed yet: not
 * closed before it has, or before DP_LINK_ANSWERED_WAIT_MS since the
 * answer.  A port the agent did not start (the application's) is not
 * closed by the agent: nothing to wait for. */
static bool
dp_link_awaits_close(const struct dp_membership *a, const struct dp_port *pt, uint64_t now)
{
	struct rte_eth_link link;

	/* A deadline, not a difference: an answer given in this pass of
	 * dp_links_close() is later than its @now. */
	if ((pt->state != DP_LINK_ANSWERED && pt->state != DP_LINK_CLOSED) || !pt->started ||
		now >= pt->answered_tsc + a->link_answered_wait_tsc)
		return false;
	return rte_eth_link_get_nowait(pt->id, &link) == 0 && link.link_status == RTE_ETH_LINK_UP;
}

/* Close now, while dp_links_close() waits for the workers of other links
 * to close theirs first, every memif link of the world map it is done
 * with: neither told about (a CLOSE unanswered) nor waiting for its worker
 * to close first.  Each made quiet first. */
static void
dp_links_close_done(struct dp_membership *a, uint64_t now)
{
	unsigned int i, n = 0;

	for (i = 0; i < a->r.b.port.nb_ports; i++) {
		struct dp_port *pt = &a->r.b.port.ports[i];

		if (pt->kind != DP_PORT_LINK || pt->state == DP_LINK_RETIRED ||
			!(pt->started || pt->probed) || pt->state == DP_LINK_CLOSING ||
			dp_link_awaits_close(a, pt, now))
			continue;
		dp_port_go_quiet(pt);
		pt->close_now = true;
		n++;
	}
	if (n > 0)
		dp_ports_close_picked(&a->r.b.port);
}

void
dp_links_close(struct dp_membership *a)
{
	uint64_t now = rte_rdtsc(), ms = a->r.b.tsc_hz / 1000, end, resend = 0;
	unsigned int i, left, telling, awaiting;
	bool early = false;

	for (i = 0, telling = 0; i < a->r.b.port.nb_ports; i++) {
		struct dp_port *pt = &a->r.b.port.ports[i];

		bool closing = dp_link_to_close(a, pt);

		pt->close_acked = false;
		/* Up as read just now: the timer's view (tx drops frames
		 * for a link port it has not seen up) may lag by a tick. */
		if (closing) {
			dp_port_set_state(pt, DP_LINK_CLOSING);
			dp_port_set_up(pt, true);
		}
		telling += closing;
	}
	end = now + ms * DP_LINK_CLOSE_WAIT_MS;
	for (;;) {
		if (telling > 0 && now >= resend && now < end) {
			for (i = 0; i < a->r.b.port.nb_ports; i++)
				if (a->r.b.port.ports[i].state == DP_LINK_CLOSING)
					dp_send_control(
						&a->r, a->r.b.port.ports[i].peer, DP_CTRL_CLOSE);
			(void)dp_tx_flush(&a->r.b);
			resend = now + ms * DP_LINK_CLOSE_RESEND_MS;
		}
		for (i = 0, left = 0, awaiting = 0; i < a->r.b.port.nb_ports; i++) {
			struct dp_port *pt = &a->r.b.port.ports[i];

			if (pt->state == DP_LINK_CLOSING && now < end) {
				/* Answered, or down: neither read nor sent on
				 * again. */
				if (dp_link_close_read(a, pt) || !dp_link_to_close(a, pt))
					dp_port_go_quiet(pt);
				else
					left++;
			}
			/* Its worker may still read our answer (ours to its
			 * CLOSE just now, or to its LEAVE or CLOSE before). */
			awaiting += dp_link_awaits_close(a, pt, now);
		}
		if (left + awaiting == 0)
			break;
		/* Every answer in, some workers to close first: the other
		 * links go now, once, so that the waits of a world shutting
		 * down do not chain (see the top of this file). */
		if (left == 0 && !early) {
			dp_links_close_done(a, now);
			early = true;
		}
		usleep(20);
		now = rte_rdtsc();
	}
	/* Nothing of the agent's touches them again before they close (those
	 * told and quiet since: quiet at once, quiet_tsc still 0). */
	for (i = 0; i < a->r.b.port.nb_ports; i++)
		if (a->r.b.port.ports[i].state == DP_LINK_CLOSING)
			dp_port_go_quiet(&a->r.b.port.ports[i]);
}
