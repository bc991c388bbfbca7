/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The accessors of the agent and its workers: rank, name, the world's
 * size, the default port.  Any thread.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include <rte_errno.h>

#include "dp_base.h"

unsigned int
dprpc_agent_rank(const struct dprpc_agent *agent)
{
	const struct dp_base *a = dp_base_of(agent);

	if (a == NULL) {
		rte_errno = EINVAL;
		return UINT_MAX;
	}
	return a->rank;
}

const char *
dprpc_agent_name(const struct dprpc_agent *agent)
{
	const struct dp_base *a = dp_base_of(agent);

	if (a == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	return a->name;
}

unsigned int
dprpc_world_size(const struct dprpc_agent *agent)
{
	const struct dp_base *a = dp_base_of(agent);

	if (a == NULL) {
		rte_errno = EINVAL;
		return 0;
	}
	return dp_world_n(a);
}

int
dprpc_worker_rank(const struct dprpc_agent *agent, const char *name)
{
	const struct dp_base *a = dp_base_of(agent);
	unsigned int i, n;

	if (a == NULL || name == NULL)
		return -EINVAL;
	for (i = 0, n = dp_world_n(a); i < n; i++)
		if (strcmp(a->world.w[i].name, name) == 0)
			return (int)i;
	return -ENOENT;
}

const char *
dprpc_worker_name(const struct dprpc_agent *agent, unsigned int rank)
{
	const struct dp_base *a = dp_base_of(agent);

	if (a == NULL || rank >= dp_world_n(a)) {
		rte_errno = a == NULL ? EINVAL : ENOENT;
		return NULL;
	}
	return a->world.w[rank].name;
}

uint16_t
dprpc_agent_port(const struct dprpc_agent *agent)
{
	const struct dp_base *a = dp_base_of(agent);

	if (a == NULL) {
		rte_errno = EINVAL;
		return UINT16_MAX;
	}
	return a->port.ports[0].id;
}
