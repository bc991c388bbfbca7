/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The frames' tags (auth.c, docs/security.md): the keys a world key
 * gives, and the tag of a frame under them.
 */
#ifndef DP_AUTH_H
#define DP_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nettle/umac.h>

/* A world's keys, made from its key: the frames' MAC key (SipHash-2-4),
 * and the payloads' hash, UMAC-64 keyed once (its context is written by
 * every tag, so one thread tags and checks with it: the poller). */
struct dp_auth_keys {
	uint8_t mac[16];
	struct umac64_ctx pay;
};
/* Make @k and *@world_id from @key (@len bytes, at least 16): 0, or
 * -EINVAL for a short key. */
int dp_auth_derive(const uint8_t *key, size_t len, struct dp_auth_keys *k, uint32_t *world_id);
/* The tag of the frame whose headers start at @frame: its dprpc header up
 * to the tag field, and with @pay (NULL: the header only) the UMAC-64 of
 * the @pay_len payload bytes there, its nonce the header's session and
 * seq. */
void dp_frame_tag(const uint8_t *frame, const void *pay, uint32_t pay_len, struct dp_auth_keys *k,
	uint8_t tag[8]);
/* Whether @frame's tag is its own under @k (constant time). */
bool dp_frame_tag_ok(
	const uint8_t *frame, const void *pay, uint32_t pay_len, struct dp_auth_keys *k);

#endif /* DP_AUTH_H */
