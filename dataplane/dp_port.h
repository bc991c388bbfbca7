/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent's port (port.c): a vdev probed from conf.vdev, or a port of the
 * application's, handed over (configured and started by the agent) or
 * ready (conf.port_ready: configured and started by the application, only
 * its queues conf.rx_queue and conf.tx_queue used); stopped with the agent
 * if the agent started it, and closed if it probed it (the contract: struct
 * dprpc_agent_conf's port_id).  The thread that creates or destroys the
 * agent.
 */
#ifndef DP_PORT_H
#define DP_PORT_H

struct dprpc_agent;
struct dprpc_agent_conf;

/* Check @c's port fields and open @a's port as they say: 0, or a negative
 * errno, logged (dp_port_close() undoes what was done). */
int dp_port_open(struct dprpc_agent *a, const struct dprpc_agent_conf *c);
/* Stop the port if we started it, and close it if we probed it. */
void dp_port_close(struct dprpc_agent *a);

#endif /* DP_PORT_H */
