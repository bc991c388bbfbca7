/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The world key, read once, and the stamp of each frame (dp_stamp.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include <rte_byteorder.h>
#include <rte_mbuf.h>

#include "dp_base.h"
#include "dp_stamp.h"

/* The longest key file read. */
#define DP_KEY_FILE_MAX 4096

/* @path's bytes into @buf (at most DP_KEY_FILE_MAX): their count, or a
 * negative errno. */
static ssize_t
dp_key_file_read(const char *path, uint8_t *buf)
{
	ssize_t n, got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (got <= DP_KEY_FILE_MAX) {
		n = read(fd, buf + got, DP_KEY_FILE_MAX + 1 - (size_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	close(fd);
	if (got > DP_KEY_FILE_MAX)
		return -EFBIG;
	return got;
}

int
dp_auth_init(struct dp_base *a, const struct dprpc_agent_conf *c)
{
	struct dp_auth *au = &a->auth;
	uint8_t buf[DP_KEY_FILE_MAX + 1];
	const uint8_t *key = c->auth.key;
	size_t len = c->auth.key_len;
	uint32_t derived = 0;
	ssize_t n;
	int rc;

	if (sodium_init() < 0) {
		DP_LOG(ERR, "agent %s: libsodium cannot start", a->name);
		return -EINVAL;
	}
	if (key != NULL && c->auth.key_file != NULL) {
		DP_LOG(ERR, "agent %s: conf.auth gives both a key and a key_file", a->name);
		return -EINVAL;
	}
	if (c->auth.key_file != NULL) {
		n = dp_key_file_read(c->auth.key_file, buf);
		if (n < 0) {
			DP_LOG(ERR, "agent %s: conf.auth.key_file '%s': %s", a->name,
				c->auth.key_file, strerror((int)-n));
			return -EINVAL;
		}
		key = buf;
		len = (size_t)n;
	}
	if (key != NULL && c->auth.mode != DPRPC_AUTH_OFF) {
		au->keys = calloc(1, sizeof(*au->keys));
		if (au->keys == NULL) {
			sodium_memzero(buf, sizeof(buf));
			return -ENOMEM;
		}
		rc = dp_auth_derive(key, len, au->keys, &derived);
		sodium_memzero(buf, sizeof(buf));
		if (rc != 0) {
			DP_LOG(ERR,
				"agent %s: conf.auth: the world key has %zu bytes, fewer than 16",
				a->name, len);
			return rc;
		}
		au->on = true;
		au->payload = c->auth.mode == DPRPC_AUTH_PAYLOAD;
		randombytes_buf(au->chal, sizeof(au->chal));
	}
	au->world_id = rte_cpu_to_be_32(c->auth.world_id != 0 ? c->auth.world_id : derived);
	a->rx_ctx.world_id = au->world_id;
	return 0;
}

/* Whether a frame of @type with @len payload bytes has its payload tagged:
 * with DPRPC_AUTH_PAYLOAD, and always a CONTROL frame's (the join
 * operations': who joins, at which address). */
static inline bool
dp_auth_covers(const struct dp_auth *au, uint8_t type, uint32_t len)
{
	return au->payload || (type == DP_FRAME_CONTROL && len != 0);
}

/* The payload of @m, a frame of @len payload bytes: after its headers,
 * or in its second segment. */
static const void *
dp_auth_payload(const struct rte_mbuf *m, uint32_t len)
{
	if (m->data_len >= DP_HDRS_LEN + len)
		return rte_pktmbuf_mtod_offset(m, const uint8_t *, DP_HDRS_LEN);
	return rte_pktmbuf_mtod(m->next, const void *);
}

static inline uint32_t
dp_auth_payload_len(const uint8_t *frame)
{
	const struct rte_udp_hdr *udp =
		(const struct rte_udp_hdr *)(frame + sizeof(struct rte_ether_hdr) +
					     sizeof(struct rte_ipv4_hdr));

	return (uint32_t)rte_be_to_cpu_16(udp->dgram_len) - (uint32_t)sizeof(*udp) -
	       (uint32_t)sizeof(struct dp_wire_hdr);
}

void
dp_auth_stamp(struct dp_base *a, struct rte_mbuf *m)
{
	struct dp_auth *au = &a->auth;
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	struct dp_wire_hdr *h = dp_frame_hdr(f);
	uint32_t len;

	h->world_id = au->world_id;
	if (!au->on)
		return;
	h->seq = rte_cpu_to_be_64(++au->seq);
	len = dp_auth_payload_len(f);
	dp_frame_tag(f, dp_auth_covers(au, h->type, len) ? dp_auth_payload(m, len) : NULL, len,
		au->keys, h->tag);
}

bool
dp_auth_ok(struct dp_base *a, const struct rte_mbuf *m, const struct dp_parsed *p)
{
	return dp_frame_tag_ok(rte_pktmbuf_mtod(m, const uint8_t *),
		dp_auth_covers(&a->auth, p->type, p->payload_len) ? p->payload : NULL,
		p->payload_len, a->auth.keys);
}

uint64_t
dp_auth_nonce(const struct dp_base *a, uint64_t who, uint64_t epoch)
{
	uint64_t in[2] = {who, epoch}, n;

	crypto_shorthash_siphash24((uint8_t *)&n, (const uint8_t *)in, sizeof(in), a->auth.chal);
	return n != 0 ? n : 1;
}

bool
dp_auth_echo_ok(const struct dp_base *a, uint64_t who, uint64_t echo)
{
	uint64_t epoch = a->now_tsc / a->tsc_hz;

	return echo == dp_auth_nonce(a, who, epoch) || echo == dp_auth_nonce(a, who, epoch - 1);
}

void
dp_auth_fini(struct dp_base *a)
{
	if (a->auth.keys == NULL)
		return;
	sodium_memzero(a->auth.keys, sizeof(*a->auth.keys));
	free(a->auth.keys);
	a->auth.keys = NULL;
}
