/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent's port (port.c): a vdev probed from conf.vdev or a port of the
 * application's, configured and started unless conf.port_ready says the
 * application did; stopped and closed with the agent.  The thread that
 * creates or destroys the agent.
 */
#ifndef DP_PORT_H
#define DP_PORT_H

struct dprpc_agent;
struct dprpc_agent_conf;

/* Open @a's port as @c says: 0 or a negative errno (dp_port_close() undoes
 * what was done). */
int dp_port_open(struct dprpc_agent *a, const struct dprpc_agent_conf *c);
/* Stop the port if we started it, and close it if we probed it. */
void dp_port_close(struct dprpc_agent *a);

#endif /* DP_PORT_H */
