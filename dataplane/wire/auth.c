/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The frames' tags (docs/security.md): SipHash-2-4 (libsodium's
 * crypto_shorthash_siphash24, 64 bits) over the dprpc header and, where
 * the world asks for it, the UMAC-64 (Nettle's, RFC 4418) of the payload
 * under a key of its own.  Each the cheapest measured at its size by
 * dprpc-mac-bench (perf/RESULTS.md): SipHash at the header's 64 bytes,
 * UMAC at a frame's 1400.
 */
#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "dp_auth.h"
#include "dp_wire.h"

/* What the tag covers: the header up to its tag, and the payload's hash.
 * The addresses are not: the parser takes a frame from a rank only from
 * that worker's IPv4 address and UDP port, to ours (dp_frame_parse()). */
#define DP_TAG_IN (offsetof(struct dp_wire_hdr, tag) + 8)

int
dp_auth_derive(const uint8_t *key, size_t len, struct dp_auth_keys *k, uint32_t *world_id)
{
	static const uint8_t ctx_mac[] = "dprpc frame mac", ctx_pay[] = "dprpc payload",
			     ctx_id[] = "dprpc world id";
	uint8_t id[16], pay[UMAC_KEY_SIZE], digest[crypto_generichash_KEYBYTES_MAX];
	int rc = 0;

	if (key == NULL || len < 16)
		return -EINVAL;
	/* BLAKE2b takes keys of up to 64 bytes: a longer world key is
	 * hashed to 64 first, as HMAC does with a long key. */
	if (len > sizeof(digest)) {
		if (crypto_generichash(digest, sizeof(digest), key, len, NULL, 0) != 0)
			return -EINVAL;
		key = digest;
		len = sizeof(digest);
	}
	/* BLAKE2b keyed by the world key, one context string per use. */
	if (crypto_generichash(k->mac, sizeof(k->mac), ctx_mac, sizeof(ctx_mac), key, len) != 0 ||
		crypto_generichash(pay, sizeof(pay), ctx_pay, sizeof(ctx_pay), key, len) != 0 ||
		crypto_generichash(id, sizeof(id), ctx_id, sizeof(ctx_id), key, len) != 0)
		rc = -EINVAL;
	if (rc == 0) {
		umac64_set_key(&k->pay, pay);
		memcpy(world_id, id, sizeof(*world_id));
	}
	sodium_memzero(digest, sizeof(digest));
	sodium_memzero(pay, sizeof(pay));
	sodium_memzero(id, sizeof(id));
	return rc;
}

void
dp_frame_tag(const uint8_t *frame, const void *pay, uint32_t pay_len, struct dp_auth_keys *k,
	uint8_t tag[8])
{
	const struct dp_wire_hdr *hdr = dp_frame_hdr((uint8_t *)(uintptr_t)frame);
	const uint8_t *h = (const uint8_t *)hdr;
	uint8_t in[DP_TAG_IN], nonce[16];
	size_t n = offsetof(struct dp_wire_hdr, tag);

	if (pay == NULL) {
		crypto_shorthash_siphash24(tag, h, n, k->mac);
		return;
	}
	memcpy(in, h, n);
	/* A sender's session and sequence number: no two of its frames
	 * share a nonce, and the tag over the header vouches for both. */
	memcpy(nonce, &hdr->session, 8);
	memcpy(nonce + 8, &hdr->seq, 8);
	umac64_set_nonce(&k->pay, sizeof(nonce), nonce);
	umac64_update(&k->pay, pay_len, pay);
	umac64_digest(&k->pay, 8, in + n);
	crypto_shorthash_siphash24(tag, in, n + 8, k->mac);
}

bool
dp_frame_tag_ok(const uint8_t *frame, const void *pay, uint32_t pay_len, struct dp_auth_keys *k)
{
	uint64_t mine, theirs;
	uint8_t tag[8];

	dp_frame_tag(frame, pay, pay_len, k, tag);
	/* One 64-bit compare: no early exit to time. */
	memcpy(&mine, tag, sizeof(mine));
	memcpy(&theirs, dp_frame_hdr((uint8_t *)(uintptr_t)frame)->tag, sizeof(theirs));
	return (mine ^ theirs) == 0;
}
