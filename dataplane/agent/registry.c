/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The process's registry of agents: their names, to refuse duplicates,
 * and their instance numbers; walked by the telemetry commands.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "dp_agent.h"

/* Names of the agents alive in this process, to refuse duplicates. */
static pthread_mutex_t dp_agents_lock = PTHREAD_MUTEX_INITIALIZER;

static struct dprpc_agent *dp_agents[64];

static unsigned int dp_instances;

int
dp_agent_name_take(struct dprpc_agent *a)
{
	unsigned int i, free_i = RTE_DIM(dp_agents);
	int rc = 0;

	pthread_mutex_lock(&dp_agents_lock);
	for (i = 0; i < RTE_DIM(dp_agents); i++) {
		if (dp_agents[i] == NULL) {
			if (free_i == RTE_DIM(dp_agents))
				free_i = i;
		} else if (strcmp(dp_agents[i]->m.r.b.name, a->m.r.b.name) == 0) {
			rc = -EEXIST;
		}
	}
	if (rc == 0 && free_i == RTE_DIM(dp_agents))
		rc = -ENOSPC;
	if (rc == 0) {
		dp_agents[free_i] = a;
		a->m.r.b.instance = dp_instances++;
	}
	pthread_mutex_unlock(&dp_agents_lock);
	return rc;
}

void
dp_agents_foreach(void (*fn)(struct dprpc_agent *a, void *arg), void *arg)
{
	unsigned int i;

	pthread_mutex_lock(&dp_agents_lock);
	for (i = 0; i < RTE_DIM(dp_agents); i++)
		if (dp_agents[i] != NULL)
			fn(dp_agents[i], arg);
	pthread_mutex_unlock(&dp_agents_lock);
}

void
dp_agent_name_drop(struct dprpc_agent *a)
{
	unsigned int i;

	pthread_mutex_lock(&dp_agents_lock);
	for (i = 0; i < RTE_DIM(dp_agents); i++)
		if (dp_agents[i] == a)
			dp_agents[i] = NULL;
	pthread_mutex_unlock(&dp_agents_lock);
}
