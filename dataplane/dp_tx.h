/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transmission (tx.c): handing frames to the poller through tx_ring,
 * staging them in tx_buf for rte_eth_tx_burst(), flushing, and looping
 * frames addressed to ourselves back to the rx demux.  dp_submit() and
 * dp_frame_alloc(): any thread; the rest: the poller.
 *
 * dp_submit() and dp_frame_alloc() live here rather than with the calls
 * (call.c): replies (reply.c) and resends (server.c) use them too, and
 * dp_submit() is the producer side of tx_ring, whose consumer is
 * dp_drain_tx_ring().
 */
#ifndef DP_TX_H
#define DP_TX_H

#include <stdbool.h>
#include <stdint.h>

#include "dp_agent.h"

int dp_submit(struct dprpc_agent *a, struct rte_mbuf *m, bool must);
struct rte_mbuf *dp_frame_alloc(struct dprpc_agent *a, uint32_t len, uint8_t **frame);
unsigned int dp_drain_tx_ring(struct dprpc_agent *a);
void dp_stage_tx(struct dprpc_agent *a, struct rte_mbuf *m);
void dp_stage_out(struct dprpc_agent *a, struct rte_mbuf *m);
void dp_stage_port(struct dprpc_agent *a, struct rte_mbuf *m);
unsigned int dp_tx_flush(struct dprpc_agent *a);
/* Whether the port that reaches worker @to can stage one more frame:
 * its tx_buf not full once what it holds was offered to the port.  A
 * resend asks first: with no room it would be parked on tx_ring
 * (dp_stage_port()), where the resends of a peer that stopped reading
 * piled up, one per call and backoff, until calls could not be submitted
 * (-ENOBUFS). */
bool dp_tx_room(struct dprpc_agent *a, unsigned int to);
/* The most frames staged for any one port. */
unsigned int dp_tx_fill(const struct dprpc_agent *a);
/* Whether a frame staged earlier must not go out any more: addressed to an
 * incarnation of its peer that is gone, or a request whose call has ended
 * (failed as its peer went down, or restarted).  CONTROL frames always go. */
bool dp_tx_stale(struct dprpc_agent *a, struct rte_mbuf *m);
/* Free a stale frame, counted in tx_discarded. */
void dp_tx_discard(struct dprpc_agent *a, struct rte_mbuf *m);
/* Discard the stale frames for peer @p still in tx_buf or held by the
 * transmit faults (dp_fail_peer_slots()). */
void dp_tx_purge(struct dprpc_agent *a, unsigned int p);

#endif /* DP_TX_H */
