/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Closing a memif link without crashing the worker at its other end
 * (link_close.c): a CLOSE it answers and then polls the link no more; and
 * the close order of a link whose worker's last word (a CLOSE, or a LEAVE
 * of rendezvous.c) this end answered: after that worker closed its end.
 */
#ifndef DP_LINK_CLOSE_H
#define DP_LINK_CLOSE_H

#include <stdint.h>

struct dp_membership;

/* How long dprpc_agent_destroy() waits for the answers, and how often it
 * sends its CLOSE again meanwhile. */
#define DP_LINK_CLOSE_WAIT_MS	50
#define DP_LINK_CLOSE_RESEND_MS 10

/* How long dprpc_agent_destroy() keeps a link whose worker's last word it
 * answered (DP_LINK_ANSWERED) open for that worker to close its end
 * first, counted from the answer. */
#define DP_LINK_ANSWERED_WAIT_MS 100

/* A CONTROL CLOSE or CLOSE_ACK (@op) from worker @p, read by the poller
 * (or by dp_links_close()). */
void dp_link_close_rx(struct dp_membership *a, unsigned int p, uint32_t op);
/* From dprpc_agent_destroy(), its lcores stopped and nothing else polling
 * @a: tell the worker at the other end of each memif link that is up and
 * polled, and wait for its answer; wait for the worker at the other end
 * of each link we answered to close its end (see link_close.c); every
 * such link is quiet afterwards. */
void dp_links_close(struct dp_membership *a);

#endif /* DP_LINK_CLOSE_H */
