/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent (struct dprpc_agent, the public handle's type): its world
 * layer, which nests the layers below (docs/architecture.md, "The
 * dataplane's layers"), then what only the agent's own files use.  Never
 * installed.
 */
#ifndef DP_AGENT_H
#define DP_AGENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dprpc/dprpc_agent.h>

#include "dp_membership.h"
#include "dp_rpc.h"
/* The slot types of the client and the server, which struct dp_peer points
 * to (and tests look into). */
#include "dp_client.h"
#include "dp_server.h"

struct dprpc_agent {
	struct dp_membership m; /* first: the agent is all its layers too */
	unsigned int io_lcore;
	uint64_t next_timer_tsc;
};

_Static_assert(offsetof(struct dprpc_agent, m) == 0, "the agent begins with its world layer");

/* The agent whose rpc layer is @r (an agent's, the handle's it was made
 * from): a cast, no load. */
static inline struct dprpc_agent *
dp_agent_of(struct dp_rpc *r)
{
	return (struct dprpc_agent *)(void *)r;
}

/* The poll loop (poll.c): for a synchronous caller, poll, holding the
 * poll flag throughout (one exchange instead of one per poll), until @fut
 * completes or the wait grows long; false if it did not (or could not)
 * see it complete. */
bool dp_poll_until_done(struct dprpc_agent *a, const struct dprpc_future *fut);
/* The rx demux: a frame received (a frame looped back to ourselves goes to
 * dp_rx_local(), dp_rx.h). */
void dp_rx_frame(struct dprpc_agent *a, struct rte_mbuf *m);
int dp_lcore_io(void *agent);
/* wait.c: one step of a waiting thread (a rendezvous, a leave, a join):
 * -ETIMEDOUT once the TSC reaches @deadline; else 0, having polled @a
 * (unless an io lcore does) or slept 100 us when there was nothing to do.
 * Any thread but @a's poller. */
int dp_wait_step(struct dprpc_agent *a, uint64_t deadline);

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
