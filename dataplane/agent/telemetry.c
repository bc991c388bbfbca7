/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Read-only telemetry commands (docs/architecture.md), for dpdk-telemetry.py:
 *
 *   /dprpc/agents          the agents of this process, by name
 *   /dprpc/stats,NAME      one agent's counters (dprpc_agent_stats) and
 *                          what it holds for callers (dprpc_agent_usage:
 *                          kept_mbufs, msg_bytes)
 *
 * They run on EAL's telemetry thread; they read the agent registry under
 * its lock (so an agent cannot be freed meanwhile) and the counters with
 * relaxed loads, like dprpc_agent_stats_get().
 */
#include <pthread.h>
#include <string.h>

#include <rte_telemetry.h>

#include "dp_agent.h"
#include <dprpc/dprpc_agent.h>
#include <dprpc/dprpc_stats.h>
#include <dprpc/dprpc_world.h>

static void
dp_tel_add_name(struct dprpc_agent *a, void *arg)
{
	rte_tel_data_add_array_string(arg, a->m.r.b.name);
}

static int
dp_tel_agents(const char *cmd, const char *params, struct rte_tel_data *d)
{
	RTE_SET_USED(cmd);
	RTE_SET_USED(params);
	rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
	dp_agents_foreach(dp_tel_add_name, d);
	return 0;
}

struct dp_tel_query {
	const char *name;
	struct rte_tel_data *d;
	bool found;
};

static void
dp_tel_add_stats(struct dprpc_agent *a, void *arg)
{
	struct dp_tel_query *q = arg;
	struct dprpc_agent_stats s;
	struct dprpc_agent_usage u;
	struct rte_tel_data *d = q->d;
	char key[48];
	unsigned int i;

	if (q->found || strcmp(a->m.r.b.name, q->name) != 0)
		return;
	q->found = true;
	dprpc_agent_stats_get(a, &s);
	dprpc_agent_usage_get(a, &u);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "name", a->m.r.b.name);
	rte_tel_data_add_dict_int(d, "rank", a->m.r.b.rank);
	rte_tel_data_add_dict_int(d, "world_size", (int)dp_world_n(&a->m.r.b));
	rte_tel_data_add_dict_u64(d, "rx_frames", s.rx_frames);
	rte_tel_data_add_dict_u64(d, "tx_frames", s.tx_frames);
	rte_tel_data_add_dict_u64(d, "tx_retries", s.tx_retries);
	rte_tel_data_add_dict_u64(d, "tx_dropped", s.tx_dropped);
	rte_tel_data_add_dict_u64(d, "tx_discarded", s.tx_discarded);
	rte_tel_data_add_dict_u64(d, "calls_sent", s.calls_sent);
	rte_tel_data_add_dict_u64(d, "calls_ok", s.calls_ok);
	rte_tel_data_add_dict_u64(d, "calls_failed", s.calls_failed);
	rte_tel_data_add_dict_u64(d, "calls_timed_out", s.calls_timed_out);
	rte_tel_data_add_dict_u64(d, "requests_handled", s.requests_handled);
	rte_tel_data_add_dict_u64(d, "requests_unknown", s.requests_unknown);
	rte_tel_data_add_dict_u64(d, "reply_nombuf", s.reply_nombuf);
	rte_tel_data_add_dict_u64(d, "handler_misuse", s.handler_misuse);
	rte_tel_data_add_dict_u64(d, "reply_again", s.reply_again);
	rte_tel_data_add_dict_u64(d, "handler_unanswered", s.handler_unanswered);
	rte_tel_data_add_dict_u64(d, "handler_error_after_reply", s.handler_error_after_reply);
	rte_tel_data_add_dict_u64(d, "handler_bad_return", s.handler_bad_return);
	rte_tel_data_add_dict_u64(d, "keeps_refused", s.keeps_refused);
	rte_tel_data_add_dict_u64(d, "reclaimed_mbufs", s.reclaimed_mbufs);
	rte_tel_data_add_dict_u64(d, "reclaimed_msgs", s.reclaimed_msgs);
	rte_tel_data_add_dict_u64(d, "kept_mbufs", u.kept_mbufs);
	rte_tel_data_add_dict_u64(d, "msg_bytes", u.msg_bytes);
	rte_tel_data_add_dict_u64(d, "requests_expired", s.requests_expired);
	rte_tel_data_add_dict_u64(d, "requests_cancelled", s.requests_cancelled);
	rte_tel_data_add_dict_u64(d, "cancels_received", s.cancels_received);
	rte_tel_data_add_dict_u64(d, "calls_cancelled", s.calls_cancelled);
	rte_tel_data_add_dict_u64(d, "cancels_resent", s.cancels_resent);
	rte_tel_data_add_dict_u64(d, "holds_sent", s.holds_sent);
	rte_tel_data_add_dict_u64(d, "holds_received", s.holds_received);
	rte_tel_data_add_dict_u64(d, "arp_answered", s.arp_answered);
	rte_tel_data_add_dict_u64(d, "arp_sent", s.arp_sent);
	rte_tel_data_add_dict_u64(d, "arp_resolved", s.arp_resolved);
	rte_tel_data_add_dict_u64(d, "arp_unresolved", s.arp_unresolved);
	rte_tel_data_add_dict_u64(d, "echo_answered", s.echo_answered);
	rte_tel_data_add_dict_u64(d, "rejected_overload", s.rejected_overload);
	rte_tel_data_add_dict_u64(d, "rejected_pool", s.rejected_pool);
	rte_tel_data_add_dict_u64(d, "rejected_peer", s.rejected_peer);
	rte_tel_data_add_dict_u64(d, "rejected_inline", s.rejected_inline);
	rte_tel_data_add_dict_u64(d, "rejected_handler", s.rejected_handler);
	rte_tel_data_add_dict_u64(d, "rejected_delay", s.rejected_delay);
	rte_tel_data_add_dict_u64(d, "rejected_requests", s.rejected_requests);
	rte_tel_data_add_dict_u64(d, "queue_depth", s.queue_depth);
	rte_tel_data_add_dict_u64(d, "requests_held", s.requests_held);
	rte_tel_data_add_dict_u64(d, "stream_chunks_sent", s.stream_chunks_sent);
	rte_tel_data_add_dict_u64(d, "stream_window_full", s.stream_window_full);
	rte_tel_data_add_dict_u64(d, "stream_frames_resent", s.stream_frames_resent);
	rte_tel_data_add_dict_u64(d, "stream_chunks_received", s.stream_chunks_received);
	rte_tel_data_add_dict_u64(d, "dropped", s.dropped);
	for (i = 0; i < DPRPC_DROP_MAX; i++) {
		snprintf(key, sizeof(key), "drop_%s", dprpc_drop_reason_str(i));
		rte_tel_data_add_dict_u64(d, key, s.drops[i]);
	}
}

static int
dp_tel_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dp_tel_query q = {.name = params, .d = d, .found = false};

	RTE_SET_USED(cmd);
	if (params == NULL || params[0] == '\0')
		return -EINVAL;
	dp_agents_foreach(dp_tel_add_stats, &q);
	return q.found ? 0 : -ENOENT;
}

static void
dp_telemetry_register_once(void)
{
	rte_telemetry_register_cmd("/dprpc/agents", dp_tel_agents,
		"Names of the dprpc agents in this process. Takes no parameters");
	rte_telemetry_register_cmd("/dprpc/stats", dp_tel_stats,
		"Counters of one dprpc agent. Parameters: agent name");
}

/* Called by dprpc_agent_create(), not from a constructor: a constructor in
 * an object nothing references is left out of a static link. */
void
dp_telemetry_register(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, dp_telemetry_register_once);
}
