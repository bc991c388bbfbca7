/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Agent internals, shared by the dataplane's files above its rpc layer
 * (dp_rpc.h), which the agent begins with.  Never installed.
 */
#ifndef DP_AGENT_H
#define DP_AGENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <dprpc/dprpc_agent.h>

#include "dp_join.h"
#include "dp_rpc.h"
/* The slot types of the client and the server, which struct dp_peer points
 * to (and tests look into). */
#include "dp_client.h"
#include "dp_server.h"

struct dprpc_agent {
	struct dp_rpc r; /* first: the agent is its rpc layer too (dp_rpc_of()) */
	struct dp_join join;
	unsigned int io_lcore;
	uint64_t next_timer_tsc;
	/* DP_LINK_ANSWERED_WAIT_MS in TSC cycles (dp_link_awaits_close());
	 * a field so that a test can lengthen it. */
	uint64_t link_answered_wait_tsc;
	/* A thread is in dprpc_world_leave(): the poller sends LEAVE to the
	 * workers that have not acknowledged it (relaxed: a hint, as
	 * startup_waiters). */
	atomic_bool leaving;
	uint64_t rdv_ping_tsc; /* poller only: the last round of pings */
};

/* The agent whose rpc layer is @r (an agent's, the handle's it was made
 * from): a cast, no load. */
static inline struct dprpc_agent *
dp_agent_of(struct dp_rpc *r)
{
	return (struct dprpc_agent *)(void *)r;
}

/* registry.c: call @fn on every agent of the process, under the registry
 * lock (an agent cannot be destroyed meanwhile; @fn must not block). */
void dp_agents_foreach(void (*fn)(struct dprpc_agent *a, void *arg), void *arg);
/* registry.c: enter @a under its name (-EEXIST: taken; -ENOSPC: too many
 * agents), giving it its instance number; and take it out. */
int dp_agent_name_take(struct dprpc_agent *a);
void dp_agent_name_drop(struct dprpc_agent *a);
/* destroy.c: free what creation made of @a, and @a (a failed creation, a
 * destroy); launch its handler and io lcores (-EBUSY, logged, if one
 * could not be), and stop them. */
void dp_agent_free(struct dprpc_agent *a);
int dp_lcores_launch(struct dprpc_agent *a);
void dp_lcores_stop(struct dprpc_agent *a);
/* telemetry.c */
void dp_telemetry_register(void);

#endif /* DP_AGENT_H */
