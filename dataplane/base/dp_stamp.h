/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a frame carries for its world (stamp.c, docs/security.md): the
 * world id, with a key its sequence number for the receiver's replay
 * window, and the tag made with the world key; written as the frame is
 * staged (dp_stage_port(), a frame to ourselves excepted), checked as it
 * is received (dp_rx_frame()) before anything else reads it.
 */
#ifndef DP_STAMP_H
#define DP_STAMP_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include <dprpc/dprpc_conf.h>

#include "dp_auth.h"
#include "dp_wire.h"

struct dp_base;

struct dp_auth {
	bool on;      /* a key: frames tagged and checked */
	bool payload; /* the tags cover the payload too */
	rte_be32_t world_id;
	uint64_t seq;		   /* frames stamped with a key, the poller's */
	struct dp_auth_keys *keys; /* with a key (allocated: UMAC's context is large) */
	uint8_t chal[16];	   /* this agent's, random: dp_auth_nonce()'s key */
};

/* The world key and id from @c (the key read from conf.auth.key_file if
 * given): 0, -ENOMEM (the keys), or -EINVAL (logged: libsodium cannot
 * start, both a key and a file, a key shorter than 16 bytes, a file that
 * cannot be read). */
int dp_auth_init(struct dp_base *a, const struct dprpc_agent_conf *c);
/* The keys wiped and freed (destroy; any state dp_auth_init() left). */
void dp_auth_fini(struct dp_base *a);
/* Write @m's world id and, with a key, its sequence number and its tag.
 * The poller. */
void dp_auth_stamp(struct dp_base *a, struct rte_mbuf *m);
/* The challenge nonce for @who in second @epoch: a peer's rank (proof.c)
 * or a joiner's session (join.c); a SipHash of both under this agent's
 * random key, never 0. */
uint64_t dp_auth_nonce(const struct dp_base *a, uint64_t who, uint64_t epoch);
/* The 64-bit nonce a frame carries in req_num and status: a challenge,
 * or its echo (proof.c, join.c). */
static inline uint64_t
dp_parsed_nonce(const struct dp_parsed *p)
{
	return (uint64_t)p->req_num << 32 | p->status;
}
/* Whether @echo is our challenge to @who (dp_auth_nonce()) of this second
 * or the one before: whoever echoes it is alive now. */
bool dp_auth_echo_ok(const struct dp_base *a, uint64_t who, uint64_t echo);
/* Whether the frame @m parsed into @p has its tag (a world with a key). */
bool dp_auth_ok(struct dp_base *a, const struct rte_mbuf *m, const struct dp_parsed *p);

#endif /* DP_STAMP_H */
