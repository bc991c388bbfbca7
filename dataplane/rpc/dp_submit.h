/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Submission (submit.c): handing frames to the poller through tx_ring,
 * and what the poller does with each before it is staged (dp_stage.h):
 * starting a call, keeping a response, looping frames addressed to
 * ourselves back to the rx demux.  dp_submit(): any thread; the rest: the
 * poller.
 *
 * dp_submit() and dp_frame_alloc() (dp_stage.h) live apart from the calls
 * (call.c): replies (reply.c) and resends (server.c) use them too, and
 * dp_submit() is the producer side of tx_ring, whose consumer is
 * dp_drain_tx_ring().
 */
#ifndef DP_SUBMIT_H
#define DP_SUBMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "dp_rpc.h"
#include "dp_stage.h"

int dp_submit(struct dp_rpc *a, struct rte_mbuf *m, bool must);
unsigned int dp_drain_tx_ring(struct dp_rpc *a);
void dp_stage_tx(struct dp_rpc *a, struct rte_mbuf *m);
/* Whether a frame staged earlier must not go out any more: addressed to an
 * incarnation of its peer that is gone, or a request whose call has ended
 * (failed as its peer went down, or restarted).  CONTROL frames always go. */
bool dp_tx_stale(struct dp_rpc *a, struct rte_mbuf *m);
/* Discard the stale frames for peer @p still in tx_buf or held by the
 * transmit faults (dp_fail_peer_slots()). */
void dp_tx_purge(struct dp_rpc *a, unsigned int p);
/* Register the mbuf dynamic fields in which every submitted frame carries
 * its struct dp_call_meta (dp_meta_offset, dp_meta()) and a stream call's
 * request frame its stream (dp_stream_offset): 0 or -rte_errno.
 * Idempotent: the same name and size give back the same offset. */
int dp_register_dynfield(void);

#endif /* DP_SUBMIT_H */
