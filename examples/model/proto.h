/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the digits client and server say to each other over dprpc
 * (little-endian, host structs: both ends are this program on x86-64).
 *
 *  "digits.classify"  request struct digits_req, response struct
 *                     digits_resp; errors: -EBUSY (overloaded: refused
 *                     at admission, not computed), -ETIMEDOUT (its budget
 *                     ran out before its batch: not computed),
 *                     -ECANCELED (cancelled while queued, or the server
 *                     stopping: not computed), -EINVAL (malformed).
 *  "digits.cancel"    request: the u64 id of a classify request of the
 *                     same caller; response: a u32, 1 if it was still
 *                     queued and is now cancelled, 0 if not found.
 *  "digits.stats"     response: struct digits_stats.
 *  "digits.stop"      the server answers, drains and exits.
 */
#ifndef MODEL_PROTO_H
#define MODEL_PROTO_H

#include <stdint.h>

#define DIGITS_PIXELS 64

struct digits_req {
	uint64_t id;	    /* the caller's, echoed in the response */
	uint64_t budget_us; /* time left to the caller's deadline; 0: none */
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
	uint64_t cancel_requests, cancel_found;
};

#endif /* MODEL_PROTO_H */
