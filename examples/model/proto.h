/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the digits client and server say to each other over dprpc
 * (little-endian, host structs: both ends are this program on x86-64).
 *
 *  "digits.classify"  request struct digits_req, response struct
 *                     digits_resp; errors: -EBUSY (overloaded: refused
 *                     at admission, not computed; retry_after_us 0),
 *                     -ETIME (the call's deadline, its timeout carried
 *                     by dprpc, passed before its batch: not computed;
 *                     the caller's own timer may say -ETIMEDOUT first),
 *                     -ECANCELED (the server stopping: not computed; a
 *                     call the caller cancelled, dprpc_future_cancel(),
 *                     is not computed if still queued, and its caller
 *                     sees its own -ECANCELED), -EINVAL (malformed).
 *  "digits.stats"     response: struct digits_stats.
 *  "digits.stop"      the server answers, drains its queue and shuts down
 *                     gracefully (dprpc_shutdown()): so must the caller.
 */
#ifndef MODEL_PROTO_H
#define MODEL_PROTO_H

#include <stdint.h>

#define DIGITS_PIXELS 64

struct digits_req {
	uint64_t id; /* the caller's, echoed in the response */
	uint8_t pixels[DIGITS_PIXELS];
};

struct digits_resp {
	uint64_t id;
	uint32_t cls;	/* the class, 0..9 */
	uint32_t batch; /* size of the batch it was computed in */
};

struct digits_stats {
	uint64_t admitted, refused_full, refused_expired, refused_cancelled;
	uint64_t batches, computed, expired, cancelled, max_batch_seen;
	uint64_t cancels_received; /* dprpc_agent_stats: CANCEL frames for held requests */
};

#endif /* MODEL_PROTO_H */
