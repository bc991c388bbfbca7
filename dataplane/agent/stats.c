/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counters and dumps: the drop reasons' names, dprpc_agent_stats_get(),
 * dprpc_agent_usage_get() and dprpc_agent_dump().  Any thread: counters are
 * read relaxed (struct dp_stats), a snapshot that may lag the poller.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ether.h>

#include <rte_ring.h>

#include "dp_agent.h"
#include "dprpc_atomic.h"
#include <dprpc/dprpc_stats.h>

static const char *const dp_drop_names[DPRPC_DROP_MAX] = {
	[DPRPC_DROP_TRUNCATED] = "truncated",
	[DPRPC_DROP_NOT_DPRPC] = "not_dprpc",
	[DPRPC_DROP_BAD_CSUM] = "bad_csum",
	[DPRPC_DROP_BAD_MAGIC] = "bad_magic",
	[DPRPC_DROP_BAD_VERSION] = "bad_version",
	[DPRPC_DROP_BAD_TYPE] = "bad_type",
	[DPRPC_DROP_BAD_LENGTH] = "bad_length",
	[DPRPC_DROP_FOREIGN] = "foreign",
	[DPRPC_DROP_UNSUPPORTED] = "unsupported",
	[DPRPC_DROP_STALE] = "stale",
	[DPRPC_DROP_NO_REQUEST] = "no_request",
	[DPRPC_DROP_HANDLER_FULL] = "handler_full",
	[DPRPC_DROP_DUPLICATE] = "duplicate",
	[DPRPC_DROP_OLD_SESSION] = "old_session",
	[DPRPC_DROP_TOO_BIG] = "too_big",
	[DPRPC_DROP_NO_MEMORY] = "no_memory",
	[DPRPC_DROP_WRONG_INCARNATION] = "wrong_incarnation",
	[DPRPC_DROP_OVER_BUDGET] = "over_budget",
	[DPRPC_DROP_OTHER_MAC] = "other_mac",
	[DPRPC_DROP_BAD_UDP_CSUM] = "bad_udp_csum",
	[DPRPC_DROP_OTHER_WORLD] = "other_world",
	[DPRPC_DROP_AUTH_FAILED] = "auth_failed",
	[DPRPC_DROP_REPLAYED] = "replayed",
	[DPRPC_DROP_UNCONFIRMED] = "unconfirmed",
};

const char *
dprpc_drop_reason_str(enum dprpc_drop_reason r)
{
	return (unsigned int)r < DPRPC_DROP_MAX ? dp_drop_names[r] : "unknown";
}

int
dprpc_agent_stats_get(const struct dprpc_agent *a, struct dprpc_agent_stats *s)
{
	unsigned int i;

	if (a == NULL || s == NULL)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	/* Relaxed: statistics publish nothing (struct dp_stats). */
	s->rx_frames = dp_load_relaxed(&a->m.r.b.st.rx_frames);
	s->tx_frames = dp_load_relaxed(&a->m.r.b.st.tx_frames);
	s->tx_retries = dp_load_relaxed(&a->m.r.b.st.tx_retries);
	s->tx_dropped = dp_load_relaxed(&a->m.r.b.st.tx_dropped);
	s->tx_discarded = dp_load_relaxed(&a->m.r.b.st.tx_discarded);
	s->reply_nombuf = dp_load_relaxed(&a->m.r.b.st.reply_nombuf);
	s->requests_resent = dp_load_relaxed(&a->m.r.b.st.requests_resent);
	s->retransmits = dp_load_relaxed(&a->m.r.b.st.retransmits);
	s->keepalives = dp_load_relaxed(&a->m.r.b.st.keepalives);
	s->peers_down = dp_load_relaxed(&a->m.r.b.st.peers_down);
	s->peers_restarted = dp_load_relaxed(&a->m.r.b.st.peers_restarted);
	s->peers_left = dp_load_relaxed(&a->m.r.b.st.peers_left);
	s->links_closed = dp_load_relaxed(&a->m.r.b.st.links_closed);
	s->msgs_sent = dp_load_relaxed(&a->m.r.b.st.msgs_sent);
	s->msgs_received = dp_load_relaxed(&a->m.r.b.st.msgs_received);
	s->frames_resent = dp_load_relaxed(&a->m.r.b.st.frames_resent);
	s->acks_sent = dp_load_relaxed(&a->m.r.b.st.acks_sent);
	s->credits_cut = dp_load_relaxed(&a->m.r.b.st.credits_cut);
	s->keeps_refused = dp_load_relaxed(&a->m.r.b.st.keeps_refused);
	s->reclaimed_mbufs = dp_load_relaxed(&a->m.r.b.st.reclaimed_mbufs);
	s->reclaimed_msgs = dp_load_relaxed(&a->m.r.b.st.reclaimed_msgs);
	/* Plain reads of poller-written counters: statistics, may lag. */
	s->fault_dropped = a->m.r.b.ftx.dropped + a->m.r.b.frx.dropped;
	s->fault_duplicated = a->m.r.b.ftx.duplicated + a->m.r.b.frx.duplicated;
	s->fault_reordered = a->m.r.b.ftx.reordered + a->m.r.b.frx.reordered;
	s->fault_delayed = a->m.r.b.ftx.delayed + a->m.r.b.frx.delayed;
	s->calls_sent = dp_load_relaxed(&a->m.r.b.st.calls_sent);
	s->calls_ok = dp_load_relaxed(&a->m.r.b.st.calls_ok);
	s->calls_failed = dp_load_relaxed(&a->m.r.b.st.calls_failed);
	s->calls_timed_out = dp_load_relaxed(&a->m.r.b.st.calls_timed_out);
	s->requests_handled = dp_load_relaxed(&a->m.r.b.st.requests_handled);
	s->requests_unknown = dp_load_relaxed(&a->m.r.b.st.requests_unknown);
	for (i = 0; i < DPRPC_DROP_MAX; i++) {
		s->drops[i] = dp_load_relaxed(&a->m.r.b.st.drops[i]);
		s->dropped += s->drops[i];
	}
	s->reply_again = dp_load_relaxed(&a->m.r.b.st.reply_again);
	s->handler_unanswered = dp_load_relaxed(&a->m.r.b.st.handler_unanswered);
	s->handler_error_after_reply = dp_load_relaxed(&a->m.r.b.st.handler_error_after_reply);
	s->handler_bad_return = dp_load_relaxed(&a->m.r.b.st.handler_bad_return);
	s->handler_misuse = s->reply_again + s->handler_unanswered + s->handler_error_after_reply +
			    s->handler_bad_return;
	s->requests_expired = dp_load_relaxed(&a->m.r.b.st.requests_expired);
	s->requests_cancelled = dp_load_relaxed(&a->m.r.b.st.requests_cancelled);
	s->cancels_received = dp_load_relaxed(&a->m.r.b.st.cancels_received);
	s->calls_cancelled = dp_load_relaxed(&a->m.r.b.st.calls_cancelled);
	s->cancels_resent = dp_load_relaxed(&a->m.r.b.st.cancels_resent);
	s->holds_sent = dp_load_relaxed(&a->m.r.b.st.holds_sent);
	s->holds_received = dp_load_relaxed(&a->m.r.b.st.holds_received);
	s->arp_answered = dp_load_relaxed(&a->m.r.b.st.arp_answered);
	s->arp_sent = dp_load_relaxed(&a->m.r.b.st.arp_sent);
	s->arp_resolved = dp_load_relaxed(&a->m.r.b.st.arp_resolved);
	s->arp_unresolved = dp_load_relaxed(&a->m.r.b.st.arp_unresolved);
	s->echo_answered = dp_load_relaxed(&a->m.r.b.st.echo_answered);
	s->rejected_pool = dp_load_relaxed(&a->m.r.b.st.rejected_pool);
	s->rejected_peer = dp_load_relaxed(&a->m.r.b.st.rejected_peer);
	s->rejected_inline = dp_load_relaxed(&a->m.r.b.st.rejected_inline);
	s->rejected_requests = dp_load_relaxed(&a->m.r.b.st.rejected_requests);
	s->rejected_handler = dp_load_relaxed(&a->m.r.b.st.rejected_handler);
	s->rejected_delay = dp_load_relaxed(&a->m.r.b.st.rejected_delay);
	s->rejected_overload = s->rejected_pool + s->rejected_peer + s->rejected_requests +
			       s->rejected_inline + s->rejected_handler + s->rejected_delay;
	s->queue_depth = 0;
	for (i = 0; i < a->m.r.nb_hl; i++)
		s->queue_depth += rte_ring_count(a->m.r.hl[i].ring);
	s->requests_held = dp_requests_in_use(&a->m.r.b);
	s->stream_chunks_sent = dp_load_relaxed(&a->m.r.b.st.stream_chunks_sent);
	s->stream_window_full = dp_load_relaxed(&a->m.r.b.st.stream_window_full);
	s->stream_frames_resent = dp_load_relaxed(&a->m.r.b.st.stream_frames_resent);
	s->stream_chunks_received = dp_load_relaxed(&a->m.r.b.st.stream_chunks_received);
	return 0;
}

int
dprpc_agent_usage_get(const struct dprpc_agent *a, struct dprpc_agent_usage *u)
{
	unsigned int p;

	if (a == NULL || u == NULL)
		return -EINVAL;
	memset(u, 0, sizeof(*u));
	u->futures = dprpc_future_pool_in_use(a->m.r.b.fpool);
	u->requests = dp_requests_in_use(&a->m.r.b);
	u->mbufs = a->m.r.b.own_mp ? rte_mempool_in_use_count(a->m.r.b.mp) : 0;
	/* Relaxed: counters for leak checks, exact only when quiescent. */
	for (p = 0; p < dp_world_n(&a->m.r.b); p++)
		u->calls += dp_load_relaxed(&a->m.r.peers[p].outstanding);
	u->messages = (unsigned int)dp_load_relaxed(&a->m.r.b.st.msgs_live);
	u->kept_mbufs = (unsigned int)dp_load_relaxed(&a->m.r.b.st.kept_mbufs);
	u->msg_bytes = dp_load_relaxed(&a->m.r.b.st.msg_bytes);
	return 0;
}

void
dprpc_agent_dump(const struct dprpc_agent *a, FILE *f)
{
	struct dprpc_agent_stats s;
	struct dprpc_agent_usage u;
	unsigned int i;

	if (a == NULL || f == NULL)
		return;
	dprpc_agent_stats_get(a, &s);
	dprpc_agent_usage_get(a, &u);
	fprintf(f,
		"agent %s rank %u/%u port %u session 0x%016" PRIx64
		" io_lcore %d handler_lcores %u\n",
		a->m.r.b.name, a->m.r.b.rank, dp_world_n(&a->m.r.b), a->m.r.b.port.ports[0].id,
		a->m.r.b.session, a->io_lcore == DPRPC_LCORE_NONE ? -1 : (int)a->io_lcore,
		a->m.r.nb_hl);
	fprintf(f,
		"  frames rx %" PRIu64 " tx %" PRIu64 " tx_retries %" PRIu64 " tx_dropped %" PRIu64
		" tx_discarded %" PRIu64 "\n",
		s.rx_frames, s.tx_frames, s.tx_retries, s.tx_dropped, s.tx_discarded);
	fprintf(f,
		"  calls sent %" PRIu64 " ok %" PRIu64 " failed %" PRIu64 " timed_out %" PRIu64
		"\n",
		s.calls_sent, s.calls_ok, s.calls_failed, s.calls_timed_out);
	fprintf(f, "  requests handled %" PRIu64 " unknown %" PRIu64 " resent %" PRIu64 "\n",
		s.requests_handled, s.requests_unknown, s.requests_resent);
	fprintf(f,
		"  handler misuse %" PRIu64 ": reply_again %" PRIu64 " unanswered %" PRIu64
		" error_after_reply %" PRIu64 " bad_return %" PRIu64 "\n",
		s.handler_misuse, s.reply_again, s.handler_unanswered, s.handler_error_after_reply,
		s.handler_bad_return);
	fprintf(f,
		"  messages sent %" PRIu64 " received %" PRIu64 " frames_resent %" PRIu64
		" acks %" PRIu64 " credits_cut %" PRIu64 "\n",
		s.msgs_sent, s.msgs_received, s.frames_resent, s.acks_sent, s.credits_cut);
	fprintf(f,
		"  held for callers: kept mbufs %u of %u (%u per caller), message bytes %" PRIu64
		" of %" PRIu64 " (%" PRIu64 " per caller); keeps_refused %" PRIu64
		" reclaimed mbufs %" PRIu64 " messages %" PRIu64 "\n",
		u.kept_mbufs, a->m.r.kept_max, a->m.r.kept_peer_max, u.msg_bytes, a->m.r.msg_max,
		a->m.r.msg_peer_max, s.keeps_refused, s.reclaimed_mbufs, s.reclaimed_msgs);
	fprintf(f,
		"  load: queue_depth %" PRIu64 " requests_held %" PRIu64 " expired %" PRIu64
		" cancelled %" PRIu64 " cancels_received %" PRIu64 " calls_cancelled %" PRIu64
		" cancels_resent %" PRIu64 " holds sent %" PRIu64 " received %" PRIu64
		" rejected %" PRIu64 " (pool %" PRIu64 " peer %" PRIu64 " requests %" PRIu64
		" inline %" PRIu64 " handler %" PRIu64 " delay %" PRIu64 ")\n",
		s.queue_depth, s.requests_held, s.requests_expired, s.requests_cancelled,
		s.cancels_received, s.calls_cancelled, s.cancels_resent, s.holds_sent,
		s.holds_received, s.rejected_overload, s.rejected_pool, s.rejected_peer,
		s.rejected_requests, s.rejected_inline, s.rejected_handler, s.rejected_delay);
	fprintf(f,
		"  streams: chunks sent %" PRIu64 " window_full %" PRIu64 " frames resent %" PRIu64
		" chunks received %" PRIu64 "\n",
		s.stream_chunks_sent, s.stream_window_full, s.stream_frames_resent,
		s.stream_chunks_received);
	fprintf(f, "  dropped %" PRIu64, s.dropped);
	for (i = 0; i < DPRPC_DROP_MAX; i++)
		if (s.drops[i] != 0)
			fprintf(f, " %s=%" PRIu64, dprpc_drop_reason_str(i), s.drops[i]);
	fprintf(f,
		"\n  in use: futures %u requests %u mbufs %u calls %u messages %u; handlers %u\n",
		u.futures, u.requests, u.mbufs, u.calls, u.messages, a->m.r.nb_handlers);
	for (i = 0; i < dp_world_n(&a->m.r.b); i++) {
		struct dprpc_worker_rtt r = {0, 0};

		(void)dprpc_worker_rtt_get(a, i, &r); /* zeros for ourselves */
		fprintf(f,
			"  worker %u %s " RTE_ETHER_ADDR_PRT_FMT
			" port %u srtt %.1f us rto %.1f us",
			i, a->m.r.b.world.w[i].name,
			RTE_ETHER_ADDR_BYTES(&a->m.r.b.world.w[i].addr.mac),
			rte_be_to_cpu_16(a->m.r.b.world.w[i].addr.port), r.srtt_ns / 1e3,
			r.rto_ns / 1e3);
		/* Several ports (docs/worlds.md): which one reaches it (fixed
		 * at creation). */
		if (a->m.r.b.port.nb_ports > 1 && i != a->m.r.b.rank)
			fprintf(f, " via ethdev port %u%s",
				a->m.r.b.port.ports[a->m.r.b.port.peer_port[i]].id,
				a->m.r.b.port.ports[a->m.r.b.port.peer_port[i]].kind !=
						DP_PORT_DEFAULT
					? " (memif link)"
					: "");
		fputc('\n', f);
	}
}
