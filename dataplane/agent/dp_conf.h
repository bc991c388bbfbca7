/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An agent's configuration checked, and its derived budgets (conf.c).
 */
#ifndef DP_CONF_H
#define DP_CONF_H

#include <stdint.h>

#include <dprpc/dprpc_conf.h>

/* The server's budgets, DPRPC_CONF_AUTO resolved. */
struct dp_budgets {
	unsigned int peer_requests_max, kept_max, kept_peer_max;
	uint64_t msg_max, msg_peer_max;
};

/* 0, or -EINVAL (a field out of range, logged with its range) or -EBUSY
 * (an lcore that is not a free worker lcore). */
int dp_conf_check(const struct dprpc_agent_conf *c);

/* The budgets for an mbuf pool of @p pool mbufs: 0, or -EINVAL (one out of
 * range, logged). */
int dp_conf_budgets(const struct dprpc_agent_conf *c, unsigned int pool, struct dp_budgets *b);

#endif /* DP_CONF_H */
