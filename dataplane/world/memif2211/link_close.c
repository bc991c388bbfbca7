/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Closing a memif link without crashing the worker at its other end
 * (docs/worlds.md, "A destroy without a leave" and "Leaving"): DPDK 22.11's
 * memif PMD unmaps a link's rings on its interrupt thread when the peer
 * disconnects, while that worker's poller may be reading them.
 *
 * Design
 * ======
 *
 * dp_links_close() sends a CLOSE on each memif link that is up and polled,
 * then reads those links itself, nothing else of the agent running, until
 * each answered CLOSE_ACK or went down, at most DP_LINK_CLOSE_WAIT_MS.  The
 * receiver (dp_link_close_rx()) answers the first CLOSE, flushes the answer
 * and makes the link quiet.
 *
 * Invariant: a link is closed only after its other end's last read of it.
 * The closer reads the answer once the receiver's tx_burst has written it,
 * after the receiver's last rx_burst on the link.  The end that answered a
 * CLOSE or a LEAVE (DP_LINK_ANSWERED, CLOSED) closes only once the other
 * end closed its own, or DP_LINK_ANSWERED_WAIT_MS after the answer.  Of
 * two CLOSEs that cross, the lower rank's end answers.  Links left with
 * nothing to wait for close first, in one batch (dp_links_close_done()), so
 * the waits of a world shutting down do not chain.
 *
 * Not covered: an end that never answers, a closer that closes between the
 * answer's write and tx_burst's read of the ring's flags, a process killed.
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
