/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An agent's configuration: the defaults (the one place they are written)
 * and the range of every field, checked before anything is made.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include <rte_lcore.h>
#include <rte_memory.h>

#include "dp_agent.h"
#include "dp_conf.h"

void
dprpc_agent_conf_init(struct dprpc_agent_conf *c)
{
	if (c == NULL)
		return;
	memset(c, 0, sizeof(*c));
	c->max_workers = DPRPC_MAX_WORKERS;
	c->port.id = -1;
	c->port.nb_mbufs = 8191;
	c->port.socket_id = SOCKET_ID_ANY;
	c->port.ttl = 64;
	c->port.udp_checksum = DPRPC_UDP_CSUM_WIRE;
	c->port.arp_reachable_ms = 30 * 1000;
	c->port.arp_retry_ms = 10;
	c->lcores.io = DPRPC_LCORE_NONE;
	c->lcores.idle_pause_polls = 256;
	c->lcores.idle_yield_polls = 4096;
	c->lcores.idle_sleep_polls = 32768;
	c->lcores.idle_sleep_us = 50;
	c->calls.max_outstanding = 64;
	c->calls.timeout_us = 60ull * 1000 * 1000;
	c->calls.retransmit_us = 1000;
	c->calls.max_msg_size = DPRPC_MAX_MSG_DEFAULT;
	c->calls.credits = 64;
	c->liveness.keepalive_us = 100 * 1000;
	c->liveness.peer_timeout_us = 1000 * 1000;
	c->serve.max_handlers = 256;
	c->serve.max_requests = 1024;
	c->serve.handler_queue_max = DP_RING_SIZE - 1;
	c->serve.peer_requests_max = DPRPC_CONF_AUTO;
	c->serve.inline_wait_max_us = DPRPC_INLINE_WAIT_DEFAULT_US;
	c->budgets.kept_mbufs_max = DPRPC_CONF_AUTO;
	c->budgets.kept_mbufs_peer_max = DPRPC_CONF_AUTO;
	c->budgets.msg_bytes_max = DPRPC_CONF_AUTO;
	c->budgets.msg_bytes_peer_max = DPRPC_CONF_AUTO;
	c->rrefs.max = 16384;
	c->auth.mode = DPRPC_AUTH_HEADER;
}

/* A field with a fixed range. */
struct dp_conf_range {
	const char *field;
	size_t off;
	uint64_t min, max;
};

#define DP_RANGE(f, lo, hi)                                          \
	{                                                            \
#f, offsetof(struct dprpc_agent_conf, f), (lo), (hi) \
	}

/* Every field is an unsigned int here. */
static const struct dp_conf_range dp_conf_ranges[] = {
	DP_RANGE(max_workers, 1, DPRPC_MAX_WORKERS),
	DP_RANGE(port.nb_mbufs, 1024, UINT32_MAX),
	DP_RANGE(port.ipv4_prefix_len, 0, 32),
	DP_RANGE(port.ttl, 1, 255),
	DP_RANGE(port.udp_checksum, DPRPC_UDP_CSUM_OFF, DPRPC_UDP_CSUM_WIRE),
	DP_RANGE(port.arp_retry_ms, 1, 10000),
	DP_RANGE(lcores.nb_pool, 0, DPRPC_MAX_HANDLER_LCORES),
	DP_RANGE(calls.max_outstanding, 1, UINT16_MAX),
	DP_RANGE(calls.credits, 1, 1024),
	DP_RANGE(serve.max_handlers, 1, 1u << 20),
	DP_RANGE(serve.max_requests, 1, UINT32_MAX),
	DP_RANGE(serve.handler_queue_max, 1, DP_RING_SIZE - 1),
	DP_RANGE(rrefs.max, 1, 1u << 24),
	DP_RANGE(auth.mode, DPRPC_AUTH_OFF, DPRPC_AUTH_PAYLOAD),
};

static int
dp_conf_out_of_range(const char *name, const char *field, uint64_t v, uint64_t lo, uint64_t hi)
{
	DP_LOG(ERR, "agent %s: conf.%s = %" PRIu64 " is out of range [%" PRIu64 ", %" PRIu64 "]",
		name, field, v, lo, hi);
	return -EINVAL;
}

int
dp_conf_check(const struct dprpc_agent_conf *c)
{
	unsigned int i;

	if (c->name == NULL || c->name[0] == '\0' || strlen(c->name) >= DPRPC_NAME_MAX) {
		DP_LOG(ERR, "agent name missing or longer than %d bytes", DPRPC_NAME_MAX - 1);
		return -EINVAL;
	}
	/* Zeros where every default is non-zero: a conf nobody filled. */
	if (c->calls.max_outstanding == 0 && c->serve.max_requests == 0 && c->port.nb_mbufs == 0) {
		DP_LOG(ERR, "agent %s: conf not filled by dprpc_agent_conf_init()", c->name);
		return -EINVAL;
	}
	for (i = 0; i < RTE_DIM(dp_conf_ranges); i++) {
		const struct dp_conf_range *r = &dp_conf_ranges[i];
		unsigned int v;

		memcpy(&v, (const char *)c + r->off, sizeof(v));
		if (v < r->min || v > r->max)
			return dp_conf_out_of_range(c->name, r->field, v, r->min, r->max);
	}
	if (c->calls.max_msg_size < DPRPC_MAX_FRAME_PAYLOAD ||
		c->calls.max_msg_size > DPRPC_MAX_MSG_LIMIT)
		return dp_conf_out_of_range(c->name, "calls.max_msg_size", c->calls.max_msg_size,
			DPRPC_MAX_FRAME_PAYLOAD, DPRPC_MAX_MSG_LIMIT);
	/* UINT64_MAX is DPRPC_TIMEOUT_DEFAULT, which only a call may take. */
	if (c->calls.timeout_us == UINT64_MAX)
		return dp_conf_out_of_range(
			c->name, "calls.timeout_us", c->calls.timeout_us, 0, UINT64_MAX - 1);
	if (c->serve.peer_requests_max > c->serve.max_requests)
		return dp_conf_out_of_range(c->name, "serve.peer_requests_max",
			c->serve.peer_requests_max, 0, c->serve.max_requests);
	for (i = 0; i < c->lcores.nb_pool; i++) {
		if (!rte_lcore_is_enabled(c->lcores.pool[i]) ||
			c->lcores.pool[i] == rte_get_main_lcore() ||
			c->lcores.pool[i] == c->lcores.io) {
			DP_LOG(ERR,
				"agent %s: conf.lcores.pool[%u] = %u is not a free worker lcore",
				c->name, i, c->lcores.pool[i]);
			return -EBUSY;
		}
	}
	if (c->lcores.io != DPRPC_LCORE_NONE &&
		(!rte_lcore_is_enabled(c->lcores.io) || c->lcores.io == rte_get_main_lcore())) {
		DP_LOG(ERR, "agent %s: conf.lcores.io = %u is not a worker lcore", c->name,
			c->lcores.io);
		return -EBUSY;
	}
	return 0;
}

int
dp_conf_budgets(const struct dprpc_agent_conf *c, unsigned int pool, struct dp_budgets *b)
{
	uint64_t max_msg = c->calls.max_msg_size;
	unsigned int kept_auto = RTE_MAX(pool / 4, c->budgets.kept_mbufs_peer_max);

	b->peer_requests_max = c->serve.peer_requests_max != DPRPC_CONF_AUTO
				       ? c->serve.peer_requests_max
				       : c->serve.max_requests;
	b->kept_max = c->budgets.kept_mbufs_max != DPRPC_CONF_AUTO ? c->budgets.kept_mbufs_max
								   : RTE_MIN(kept_auto, pool / 2);
	b->kept_peer_max = c->budgets.kept_mbufs_peer_max != DPRPC_CONF_AUTO
				   ? c->budgets.kept_mbufs_peer_max
				   : b->kept_max / 2;
	b->msg_max = c->budgets.msg_bytes_max != DPRPC_CONF_AUTO
			     ? c->budgets.msg_bytes_max
			     : RTE_MAX(16 * max_msg, c->budgets.msg_bytes_peer_max);
	b->msg_peer_max = c->budgets.msg_bytes_peer_max != DPRPC_CONF_AUTO
				  ? c->budgets.msg_bytes_peer_max
				  : RTE_MIN(4 * max_msg, b->msg_max);
	if (b->kept_max > pool / 2)
		return dp_conf_out_of_range(
			c->name, "budgets.kept_mbufs_max", b->kept_max, 1, pool / 2);
	if (b->kept_peer_max > b->kept_max)
		return dp_conf_out_of_range(
			c->name, "budgets.kept_mbufs_peer_max", b->kept_peer_max, 1, b->kept_max);
	if (b->msg_peer_max < max_msg || b->msg_peer_max > b->msg_max)
		return dp_conf_out_of_range(c->name, "budgets.msg_bytes_peer_max", b->msg_peer_max,
			max_msg, b->msg_max);
	return 0;
}
