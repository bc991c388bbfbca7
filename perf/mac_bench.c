/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dprpc-mac-bench: what a keyed MAC costs per frame on this machine, so
 * that a frame's tag can be chosen by measured cost.
 *
 *   dprpc-mac-bench [--iters N] [--rounds R]
 *
 * A tag would cover about 80 bytes (the 72-byte header, the IPv4
 * addresses and the UDP ports) or the whole frame, up to 1400 bytes.  For
 * each candidate and both sizes, N calls (default: as many as take about
 * 50 ms) are timed with CLOCK_MONOTONIC, R times (default 11), the rounds
 * interleaved so that a change of the machine's speed touches every
 * candidate alike.  Each call sees a new message (its number written into
 * the buffer), a nonce where the construction needs one (that number), and
 * its tag goes to a volatile sink.  Every call goes through one function
 * pointer: the first row, which only copies 8 bytes, is that overhead.
 *
 * Before timing, each candidate's tag is compared with one computed
 * another way (libsodium against OpenSSL and back, EVP_MAC against
 * EVP_CIPHER, Nettle's UMAC fed in two pieces), and with published
 * vectors for SipHash-2-4, GCM and UMAC; any difference exits 1, so a
 * broken call is never measured.
 *
 * Nothing here uses DPDK or dprpc.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <nettle/umac.h>
#include <nettle/version.h>
#include <openssl/params.h>
#include <sodium.h>

#include "clock.h"

#define MAC_MAX_LEN    1400
#define MAC_MAX_ROUNDS 1001
#define MAC_TARGET_NS  (50 * 1000 * 1000)

static const size_t mac_sizes[] = {80, MAC_MAX_LEN};
#define MAC_NB_SIZES (sizeof(mac_sizes) / sizeof(mac_sizes[0]))

struct mac_state {
	uint8_t key[32]; /* key[0..15]: SipHash's, AES-128's and UMAC's key; all: AES-256's */
	uint64_t seq;	 /* the message's number, its nonce where one is needed */
	uint8_t iv[12];	 /* GMAC's: 4 zero bytes, then seq little-endian */
	/* HMAC's inner and outer states, keyed once, copied per message */
	crypto_auth_hmacsha256_state hmac;
	EVP_MAC *sip_mac, *gmac_mac;
	EVP_MAC_CTX *sip, *gmac;
	EVP_CIPHER *aes;
	EVP_CIPHER_CTX *gcm;
	OSSL_PARAM gmac_iv[2]; /* points at iv */
	struct umac64_ctx umac;
	crypto_aead_aes256gcm_state aes256; /* key[0..31], expanded once */
};

struct mac_candidate {
	const char *name;
	size_t tag_len;
	bool nonce;
	/* 0, or -1 if the library reported an error */
	int (*mac)(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag);
	/* the same tag computed another way (NULL: none) */
	int (*ref)(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag);
};

static volatile uint64_t mac_sink;

static void
le64_write(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static int
mac_none(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	memcpy(tag, msg, 8);
	return 0;
}

static int
mac_siphash24(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	return crypto_shorthash_siphash24(tag, msg, len, s->key);
}

static int
mac_siphashx24(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	return crypto_shorthash_siphashx24(tag, msg, len, s->key);
}

/* Poly1305's key used once: the first 32 bytes of ChaCha20 under the
 * long-term key and the message's number, as crypto_secretbox does. */
static int
mac_poly1305_chacha(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	uint8_t nonce[crypto_stream_chacha20_NONCEBYTES], otk[crypto_onetimeauth_poly1305_KEYBYTES];

	le64_write(nonce, s->seq);
	if (crypto_stream_chacha20(otk, sizeof(otk), nonce, s->key) != 0)
		return -1;
	return crypto_onetimeauth_poly1305(tag, msg, len, otk);
}

/* The same key for every message: forgeable after two tags, for the record. */
static int
mac_poly1305_fixed(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	return crypto_onetimeauth_poly1305(tag, msg, len, s->key);
}

static int
mac_hmacsha256(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	uint8_t full[crypto_auth_hmacsha256_BYTES];

	if (crypto_auth_hmacsha256(full, msg, len, s->key) != 0)
		return -1;
	memcpy(tag, full, 8);
	return 0;
}

/* The keyed inner and outer states copied, not hashed again per message. */
static int
mac_hmacsha256_pre(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	crypto_auth_hmacsha256_state st = s->hmac;
	uint8_t full[crypto_auth_hmacsha256_BYTES];

	if (crypto_auth_hmacsha256_update(&st, msg, len) != 0 ||
		crypto_auth_hmacsha256_final(&st, full) != 0)
		return -1;
	memcpy(tag, full, 8);
	return 0;
}

static int
mac_evp_siphash(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	size_t n;

	if (EVP_MAC_init(s->sip, s->key, 16, NULL) != 1 || EVP_MAC_update(s->sip, msg, len) != 1 ||
		EVP_MAC_final(s->sip, tag, &n, 8) != 1 || n != 8)
		return -1;
	return 0;
}

static int
mac_gmac_cipher(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	uint8_t none[16];
	int n;

	le64_write(s->iv + 4, s->seq);
	if (EVP_EncryptInit_ex(s->gcm, NULL, NULL, NULL, s->iv) != 1 ||
		EVP_EncryptUpdate(s->gcm, NULL, &n, msg, (int)len) != 1 ||
		EVP_EncryptFinal_ex(s->gcm, none, &n) != 1 ||
		EVP_CIPHER_CTX_ctrl(s->gcm, EVP_CTRL_AEAD_GET_TAG, 16, tag) != 1)
		return -1;
	return 0;
}

static int
mac_evp_gmac(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	size_t n;

	le64_write(s->iv + 4, s->seq);
	if (EVP_MAC_init(s->gmac, NULL, 0, s->gmac_iv) != 1 ||
		EVP_MAC_update(s->gmac, msg, len) != 1 ||
		EVP_MAC_final(s->gmac, tag, &n, 16) != 1 || n != 16)
		return -1;
	return 0;
}

/* The references: each a fresh context, or the other library. */

static int
ref_openssl_siphash(const uint8_t *key, size_t size, const uint8_t *msg, size_t len, uint8_t *tag)
{
	OSSL_PARAM p[] = {OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size),
		OSSL_PARAM_construct_end()};
	size_t n;

	if (EVP_Q_mac(NULL, "SIPHASH", NULL, NULL, p, key, 16, msg, len, tag, size, &n) == NULL ||
		n != size)
		return -1;
	return 0;
}

static int
ref_siphash24(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	return ref_openssl_siphash(s->key, 8, msg, len, tag);
}

static int
ref_siphashx24(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	return ref_openssl_siphash(s->key, 16, msg, len, tag);
}

static int
ref_evp_siphash(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	return crypto_shorthash_siphash24(tag, msg, len, s->key);
}

static int
ref_openssl_poly1305(const uint8_t *key, const uint8_t *msg, size_t len, uint8_t *tag)
{
	size_t n;

	if (EVP_Q_mac(NULL, "POLY1305", NULL, NULL, NULL, key, 32, msg, len, tag, 16, &n) == NULL ||
		n != 16)
		return -1;
	return 0;
}

static int
ref_poly1305_fixed(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	return ref_openssl_poly1305(s->key, msg, len, tag);
}

/* OpenSSL's ChaCha20 takes 16 bytes of IV, state words 12 to 15: the
 * original construction's 64-bit block counter (0), then its 64-bit nonce. */
static int
ref_poly1305_chacha(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	static const uint8_t zero[32];
	uint8_t iv[16] = {0}, otk[32];
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int n, ok;

	le64_write(iv + 8, s->seq);
	ok = c != NULL && EVP_EncryptInit_ex(c, EVP_chacha20(), NULL, s->key, iv) == 1 &&
	     EVP_EncryptUpdate(c, otk, &n, zero, sizeof(zero)) == 1 && n == sizeof(otk);
	EVP_CIPHER_CTX_free(c);
	return ok ? ref_openssl_poly1305(otk, msg, len, tag) : -1;
}

static int
ref_hmacsha256(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	uint8_t full[32];
	size_t n;

	if (EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, s->key, 32, msg, len, full, sizeof(full),
		    &n) == NULL ||
		n != sizeof(full))
		return -1;
	memcpy(tag, full, 8);
	return 0;
}

static int
ref_gmac_cipher(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	OSSL_PARAM p[] = {OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV, s->iv, 12),
		OSSL_PARAM_construct_end()};
	size_t n;

	le64_write(s->iv + 4, s->seq);
	if (EVP_Q_mac(NULL, "GMAC", NULL, "AES-128-GCM", p, s->key, 16, msg, len, tag, 16, &n) ==
			NULL ||
		n != 16)
		return -1;
	return 0;
}

/* The GCM tag of @msg as associated data, nothing encrypted, under
 * @cipher (AES-128-GCM or AES-256-GCM) with the key s->key and the IV of
 * message s->seq, through a context of its own. */
static int
evp_gcm_tag(
	const EVP_CIPHER *cipher, struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	uint8_t none[16];
	int n, ok;

	le64_write(s->iv + 4, s->seq);
	ok = c != NULL && EVP_EncryptInit_ex(c, cipher, NULL, s->key, s->iv) == 1 &&
	     (len == 0 || EVP_EncryptUpdate(c, NULL, &n, msg, (int)len) == 1) &&
	     EVP_EncryptFinal_ex(c, none, &n) == 1 &&
	     EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16, tag) == 1;
	EVP_CIPHER_CTX_free(c);
	return ok ? 0 : -1;
}

static int
ref_evp_gmac(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	return evp_gcm_tag(EVP_aes_128_gcm(), s, msg, len, tag);
}

/* libsodium's GMAC through OpenSSL's AES-256-GCM. */
static int
ref_sodium_gmac(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	return evp_gcm_tag(EVP_aes_256_gcm(), s, msg, len, tag);
}

/* UMAC-64 (RFC 4418), keyed once; its nonce the message's number, so one
 * AES block per message besides the hash.  The message fed as @first
 * bytes, then the rest. */
static int
umac64_tag(struct mac_state *s, const uint8_t *msg, size_t len, size_t first, uint8_t *tag)
{
	uint8_t nonce[16] = {0};

	le64_write(nonce, s->seq);
	umac64_set_nonce(&s->umac, sizeof(nonce), nonce);
	umac64_update(&s->umac, first, msg);
	if (first < len)
		umac64_update(&s->umac, len - first, msg + first);
	umac64_digest(&s->umac, 8, tag);
	return 0;
}

static int
mac_umac64(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	return umac64_tag(s, msg, len, len, tag);
}

/* The same, fed in two pieces (Nettle's block buffer). */
static int
ref_umac64(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	return umac64_tag(s, msg, len, len / 3, tag);
}

/* AES-256-GCM with nothing to encrypt, the message as its associated data:
 * a GMAC, through libsodium's AES-NI code and its expanded key. */
static int
mac_sodium_gmac(struct mac_state *s, const uint8_t *msg, size_t len, uint8_t *tag)
{
	uint8_t npub[crypto_aead_aes256gcm_NPUBBYTES] = {0};
	unsigned long long tag_len;
	uint8_t none[1]; /* no ciphertext, but libsodium wants somewhere to write it */

	le64_write(npub + 4, s->seq);
	return crypto_aead_aes256gcm_encrypt_detached_afternm(
		none, tag, &tag_len, NULL, 0, msg, len, NULL, npub, &s->aes256);
}

static const struct mac_candidate mac_candidates[] = {
	{"loop only (8-byte copy)", 8, false, mac_none, NULL},
	{"sodium siphash24", 8, false, mac_siphash24, ref_siphash24},
	{"sodium siphashx24", 16, false, mac_siphashx24, ref_siphashx24},
	{"sodium poly1305, chacha20 key", 16, true, mac_poly1305_chacha, ref_poly1305_chacha},
	{"sodium poly1305, fixed key", 16, false, mac_poly1305_fixed, ref_poly1305_fixed},
	{"sodium hmacsha256/64", 8, false, mac_hmacsha256, ref_hmacsha256},
	{"sodium hmacsha256/64, pre-keyed", 8, false, mac_hmacsha256_pre, ref_hmacsha256},
	{"openssl EVP_MAC SIPHASH/64", 8, false, mac_evp_siphash, ref_evp_siphash},
	{"openssl AES-128-GMAC, EVP_CIPHER", 16, true, mac_gmac_cipher, ref_gmac_cipher},
	{"openssl EVP_MAC GMAC", 16, true, mac_evp_gmac, ref_evp_gmac},
	{"nettle umac64", 8, true, mac_umac64, ref_umac64},
	{"sodium AES-256-GMAC, aesni", 16, true, mac_sodium_gmac, ref_sodium_gmac},
};
#define MAC_NB_CANDIDATES (sizeof(mac_candidates) / sizeof(mac_candidates[0]))

static void
mac_state_fini(struct mac_state *s)
{
	EVP_MAC_CTX_free(s->sip);
	EVP_MAC_CTX_free(s->gmac);
	EVP_MAC_free(s->sip_mac);
	EVP_MAC_free(s->gmac_mac);
	EVP_CIPHER_CTX_free(s->gcm);
	EVP_CIPHER_free(s->aes);
	*s = (struct mac_state){0};
}

static int
mac_state_init(struct mac_state *s, const uint8_t key[32])
{
	static char aes_name[] = "AES-128-GCM";
	size_t sip_size = 8;
	OSSL_PARAM sip_p[] = {OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &sip_size),
		OSSL_PARAM_construct_end()};
	OSSL_PARAM gmac_p[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER, aes_name, 0),
		OSSL_PARAM_construct_end()};

	*s = (struct mac_state){0};
	memcpy(s->key, key, sizeof(s->key));
	s->gmac_iv[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV, s->iv, sizeof(s->iv));
	s->gmac_iv[1] = OSSL_PARAM_construct_end();
	if (crypto_auth_hmacsha256_init(&s->hmac, s->key, sizeof(s->key)) != 0)
		return -1;
	umac64_set_key(&s->umac, s->key);
	/* libsodium's AES-GCM needs AES-NI and PCLMULQDQ. */
	if (!crypto_aead_aes256gcm_is_available() ||
		crypto_aead_aes256gcm_beforenm(&s->aes256, s->key) != 0)
		return -1;
	/* OpenSSL's SipHash gives 16 bytes unless told 8 before its key. */
	s->sip_mac = EVP_MAC_fetch(NULL, "SIPHASH", NULL);
	s->sip = s->sip_mac == NULL ? NULL : EVP_MAC_CTX_new(s->sip_mac);
	if (s->sip == NULL || EVP_MAC_CTX_set_params(s->sip, sip_p) != 1)
		goto fail;
	s->aes = EVP_CIPHER_fetch(NULL, "AES-128-GCM", NULL);
	s->gcm = EVP_CIPHER_CTX_new();
	if (s->aes == NULL || s->gcm == NULL ||
		EVP_EncryptInit_ex(s->gcm, s->aes, NULL, s->key, NULL) != 1)
		goto fail;
	s->gmac_mac = EVP_MAC_fetch(NULL, "GMAC", NULL);
	s->gmac = s->gmac_mac == NULL ? NULL : EVP_MAC_CTX_new(s->gmac_mac);
	if (s->gmac == NULL || EVP_MAC_init(s->gmac, s->key, 16, gmac_p) != 1)
		goto fail;
	return 0;
fail:
	mac_state_fini(s);
	return -1;
}

static void
hex(const char *what, const uint8_t *p, size_t n)
{
	fprintf(stderr, "  %s ", what);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "%02x", p[i]);
	fprintf(stderr, "\n");
}

static int
check_one(const struct mac_candidate *c, struct mac_state *s, const uint8_t *msg, size_t len,
	uint64_t seq, const uint8_t *want)
{
	uint8_t tag[32] = {0}, ref[32] = {0};
	int rc;

	s->seq = seq;
	rc = c->mac(s, msg, len, tag);
	if (want != NULL)
		memcpy(ref, want, c->tag_len);
	else if (rc == 0)
		rc = c->ref(s, msg, len, ref);
	if (rc == 0 && memcmp(tag, ref, c->tag_len) == 0)
		return 0;
	fprintf(stderr, "dprpc-mac-bench: %s, %zu bytes, message %" PRIu64 ": %s\n", c->name, len,
		seq, rc != 0 ? "the library reported an error" : "tags differ");
	ERR_print_errors_fp(stderr);
	hex("tag      ", tag, c->tag_len);
	hex(want != NULL ? "published" : "other way", ref, c->tag_len);
	return -1;
}

/* Each candidate against another way, then the published vectors: SipHash-2-4
 * (its paper's appendix: key 00..0f, empty message) and GCM (McGrew and
 * Viega, test case 1: key and IV zero, nothing to authenticate). */
static int
check_all(struct mac_state *s)
{
	static const size_t lens[] = {0, 1, 15, 16, 17, 80, 1023, MAC_MAX_LEN};
	static const uint8_t sip_empty[8] = {0x31, 0x0e, 0x0e, 0xdd, 0x47, 0xdb, 0x6f, 0x72};
	static const uint8_t gcm_empty[16] = {0x58, 0xe2, 0xfc, 0xce, 0xfa, 0x7e, 0x30, 0x61, 0x36,
		0x7f, 0x1d, 0x57, 0xa4, 0xe7, 0x45, 0x5a};
	static const uint8_t umac_empty[8] = {0x6e, 0x15, 0x5f, 0xad, 0x26, 0x90, 0x0b, 0xe1};
	static const uint8_t zero_key[32];
	static uint8_t msg[MAC_MAX_LEN];
	uint8_t tag[8];
	struct mac_state z;
	int bad = 0;

	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 7 + 1);
	for (size_t c = 0; c < MAC_NB_CANDIDATES; c++) {
		if (mac_candidates[c].ref == NULL)
			continue;
		for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
			bad |= check_one(
				&mac_candidates[c], s, msg, lens[l], (1ull << 63) + l, NULL);
	}
	bad |= check_one(&mac_candidates[1], s, msg, 0, 0, sip_empty);
	bad |= check_one(&mac_candidates[7], s, msg, 0, 0, sip_empty);
	if (mac_state_init(&z, zero_key) != 0)
		return -1;
	bad |= check_one(&mac_candidates[8], &z, msg, 0, 0, gcm_empty);
	bad |= check_one(&mac_candidates[9], &z, msg, 0, 0, gcm_empty);
	mac_state_fini(&z);
	/* RFC 4418's first vector: its key and nonce, the empty message. */
	umac64_set_key(&z.umac, (const uint8_t *)"abcdefghijklmnop");
	umac64_set_nonce(&z.umac, 8, (const uint8_t *)"bcdefghi");
	umac64_digest(&z.umac, 8, tag);
	if (memcmp(tag, umac_empty, sizeof(umac_empty)) != 0) {
		fprintf(stderr, "dprpc-mac-bench: nettle umac64: RFC 4418's vector differs\n");
		hex("tag      ", tag, 8);
		bad = -1;
	}
	return bad;
}

static int
time_calls(const struct mac_candidate *c, struct mac_state *s, uint8_t *buf, size_t len, uint64_t n,
	uint64_t *ns)
{
	uint8_t tag[32];
	uint64_t t0, v;
	int bad = 0;

	t0 = perf_mono_ns();
	for (uint64_t i = 0; i < n; i++) {
		s->seq++;
		memcpy(buf, &s->seq, sizeof(s->seq));
		bad |= c->mac(s, buf, len, tag);
		memcpy(&v, tag, sizeof(v));
		mac_sink = v;
	}
	*ns = perf_mono_ns() - t0;
	return bad;
}

/* As many calls as take about MAC_TARGET_NS. */
static int
calibrate(const struct mac_candidate *c, struct mac_state *s, uint8_t *buf, size_t len, uint64_t *n)
{
	uint64_t k = 64, ns;

	for (;;) {
		if (time_calls(c, s, buf, len, k, &ns) != 0)
			return -1;
		if (ns >= MAC_TARGET_NS / 10 || k >= (1ull << 32))
			break;
		k *= 2;
	}
	*n = ns == 0 ? k : k * MAC_TARGET_NS / ns;
	if (*n == 0)
		*n = 1;
	return 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void
usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [--iters N] [--rounds R]\n", argv0);
}

static int
parse_opts(int argc, char **argv, uint64_t *iters, unsigned int *rounds)
{
	char *end;

	for (int i = 1; i < argc; i += 2) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		unsigned long long x;

		if (v == NULL)
			return -EINVAL;
		x = strtoull(v, &end, 10);
		if (*end != '\0' || end == v)
			return -EINVAL;
		if (strcmp(a, "--iters") == 0 && x >= 1 && x <= 1000000000ull)
			*iters = x;
		else if (strcmp(a, "--rounds") == 0 && x >= 1 && x <= MAC_MAX_ROUNDS)
			*rounds = (unsigned int)x;
		else
			return -EINVAL;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static double per_op[MAC_NB_CANDIDATES][MAC_NB_SIZES][MAC_MAX_ROUNDS];
	static uint64_t iters[MAC_NB_CANDIDATES][MAC_NB_SIZES];
	static uint8_t buf[MAC_MAX_LEN];
	uint8_t key[32];
	uint64_t fixed_iters = 0, ns;
	unsigned int rounds = 11;
	struct mac_state s;
	double load[1] = {0};
	size_t c, z;

	if (parse_opts(argc, argv, &fixed_iters, &rounds) != 0) {
		usage(argv[0]);
		return 2;
	}
	if (sodium_init() < 0) {
		fprintf(stderr, "dprpc-mac-bench: sodium_init() failed\n");
		return 1;
	}
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)i;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 13 + 5);
	if (mac_state_init(&s, key) != 0) {
		fprintf(stderr,
			"dprpc-mac-bench: OpenSSL's SIPHASH, GMAC or AES-128-GCM missing\n");
		ERR_print_errors_fp(stderr);
		return 1;
	}
	if (check_all(&s) != 0) {
		mac_state_fini(&s);
		return 1;
	}
	s.seq = 0; /* the checks' nonces were 2^63 and up */

	for (c = 0; c < MAC_NB_CANDIDATES; c++)
		for (z = 0; z < MAC_NB_SIZES; z++) {
			iters[c][z] = fixed_iters;
			if (fixed_iters == 0 && calibrate(&mac_candidates[c], &s, buf, mac_sizes[z],
							&iters[c][z]) != 0)
				goto error;
		}
	for (unsigned int r = 0; r < rounds; r++)
		for (c = 0; c < MAC_NB_CANDIDATES; c++)
			for (z = 0; z < MAC_NB_SIZES; z++) {
				if (time_calls(&mac_candidates[c], &s, buf, mac_sizes[z],
					    iters[c][z], &ns) != 0)
					goto error;
				per_op[c][z][r] = (double)ns / (double)iters[c][z];
			}

	(void)getloadavg(load, 1);
	printf("dprpc-mac-bench: libsodium %s, Nettle %d.%d, %s; %u rounds; load average %.2f\n",
		sodium_version_string(), nettle_version_major(), nettle_version_minor(),
		OpenSSL_version(OPENSSL_VERSION), rounds, load[0]);
	printf("%-34s %3s %5s %5s %10s %10s %6s %10s\n", "candidate", "tag", "nonce", "bytes",
		"median ns", "min ns", "GB/s", "calls/run");
	for (c = 0; c < MAC_NB_CANDIDATES; c++)
		for (z = 0; z < MAC_NB_SIZES; z++) {
			double *v = per_op[c][z], med;

			qsort(v, rounds, sizeof(*v), cmp_double);
			med = rounds % 2 ? v[rounds / 2] : (v[rounds / 2 - 1] + v[rounds / 2]) / 2;
			printf("%-34s %3zu %5s %5zu %10.1f %10.1f ", mac_candidates[c].name,
				mac_candidates[c].tag_len, mac_candidates[c].nonce ? "yes" : "no",
				mac_sizes[z], med, v[0]);
			if (mac_sizes[z] == MAC_MAX_LEN)
				printf("%6.2f", (double)mac_sizes[z] / med);
			else
				printf("%6s", "-");
			printf(" %10" PRIu64 "\n", iters[c][z]);
		}
	mac_state_fini(&s);
	return 0;
error:
	fprintf(stderr, "dprpc-mac-bench: a timed call reported an error\n");
	ERR_print_errors_fp(stderr);
	mac_state_fini(&s);
	return 1;
}
