/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent's side of the extension interface (ext/dp_ext.h): the
 * accessors it offers an extension, and the calls that run every
 * extension's ops at the agent's creation, destruction, and on peer
 * events.  The extensions are those lib/extensions.c lists.
 */
#include <stdbool.h>
#include <stdint.h>

#include "dp_base.h"

void *
dp_ext_state(const struct dprpc_agent *agent, const struct dp_ext_ops *ops)
{
	const struct dp_base *a = dp_base_of(agent);
	unsigned int i;

	for (i = 0; i < DP_EXT_MAX && dp_extensions[i] != NULL; i++)
		if (dp_extensions[i] == ops)
			return a->ext[i];
	return NULL;
}

unsigned int
dp_agent_instance(const struct dprpc_agent *agent)
{
	const struct dp_base *a = dp_base_of(agent);

	return a->instance;
}

bool
dp_agent_has_io_lcore(const struct dprpc_agent *agent)
{
	const struct dp_base *a = dp_base_of(agent);

	return a->io_launched;
}

void
dp_refuse_calls(struct dprpc_agent *agent)
{
	struct dp_base *a = dp_base_of(agent);

	/* Relaxed: only the flag matters; its readers (dprpc_rpc_async_id(),
	 * dp_req_start()) serve or refuse what races with it. */
	atomic_store_explicit(&a->refusing, true, memory_order_relaxed);
}

bool
dp_agent_refusing(const struct dprpc_agent *agent)
{
	const struct dp_base *a = dp_base_of(agent);

	/* Relaxed: as in dp_refuse_calls(). */
	return atomic_load_explicit(&a->refusing, memory_order_relaxed);
}

/* Each extension's init, in order; stops at the first that fails (its
 * state, and the others', are released by dp_ext_free_all()). */
int
dp_ext_init_all(struct dp_base *a, const struct dprpc_agent_conf *c)
{
	unsigned int i;
	int rc;

	for (i = 0; i < DP_EXT_MAX && dp_extensions[i] != NULL; i++) {
		rc = dp_extensions[i]->init(dp_agent_handle(a), c, &a->ext[i]);
		if (rc != 0)
			return rc;
	}
	return 0;
}

void
dp_ext_closing_all(struct dp_base *a)
{
	unsigned int i;

	for (i = 0; i < DP_EXT_MAX && dp_extensions[i] != NULL; i++)
		if (a->ext[i] != NULL)
			dp_extensions[i]->closing(a->ext[i]);
}

/* The requests the extensions keep and will answer when quiesced. */
unsigned int
dp_ext_held_all(struct dp_base *a)
{
	unsigned int i, n = 0;

	for (i = 0; i < DP_EXT_MAX && dp_extensions[i] != NULL; i++)
		if (a->ext[i] != NULL && dp_extensions[i]->held_requests != NULL)
			n += dp_extensions[i]->held_requests(a->ext[i]);
	return n;
}

void
dp_ext_quiesce_all(struct dp_base *a)
{
	unsigned int i;

	for (i = 0; i < DP_EXT_MAX && dp_extensions[i] != NULL; i++)
		if (a->ext[i] != NULL)
			dp_extensions[i]->quiesce(a->ext[i]);
}

void
dp_ext_peer_event(struct dp_base *a, unsigned int rank, enum dp_peer_event ev)
{
	unsigned int i;

	for (i = 0; i < DP_EXT_MAX && dp_extensions[i] != NULL; i++)
		if (a->ext[i] != NULL && dp_extensions[i]->peer_event != NULL)
			dp_extensions[i]->peer_event(a->ext[i], rank, ev);
}

/* In reverse order of init. */
void
dp_ext_free_all(struct dp_base *a)
{
	unsigned int i = 0;

	while (i < DP_EXT_MAX && dp_extensions[i] != NULL)
		i++;
	while (i-- > 0) {
		if (a->ext[i] != NULL)
			dp_extensions[i]->free(a->ext[i]);
		a->ext[i] = NULL;
	}
}
