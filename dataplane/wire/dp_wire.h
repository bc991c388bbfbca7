/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dprpc wire format, version 3: Ethernet + IPv4 (no options, never
 * fragmented) + UDP + this 72-byte header + payload.  Big-endian, packed,
 * no bitfields.  Each field's meaning per frame type, and the flags:
 * docs/wire.md, "The dprpc header".
 *
 *   off  size  field
 *     0     2  magic        DP_WIRE_MAGIC
 *     2     1  version      DP_WIRE_VERSION
 *     3     1  type         enum dp_frame_type
 *     4     2  flags        per type (enum dp_*_flag); unknown ones ignored
 *     6     2  src_worker   sender's rank
 *     8     2  dst_worker   receiver's rank
 *    10     2  slot         the call's session slot (client's numbering)
 *    12     4  req_num      request number within the slot
 *    16     8  session      sender's incarnation: random, never 0
 *    24     8  dst_session  receiver's incarnation as the sender knows it
 *    32     2  pkt_idx      frame index in its message; ACK: frames held
 *    34     2  pkt_cnt      frames in the message
 *    36     4  msg_len      message length; ACK: 1 + highest frame held
 *    40     4  handler_id   handler; CONTROL: the operation; stream frames:
 *                           a sequence number
 *    44     4  status       0 or a positive errno; ACK: the type acknowledged
 *    48     2  credits      a window (ACK, stream REQUEST, STREAM_ACK); else 0
 *    50     2  budget       dp_budget_encode()d time: deadline, retry-after,
 *                           hold time or HELD estimate; 0: none
 *    52     4  world_id     the sender's world (conf.auth.world_id)
 *    56     8  seq          with a key: the sender's count of the frames
 *                           it sent, for the receiver's replay window
 *    64     8  tag          keyed MAC of the frame (auth.c); 0: no key
 */
#ifndef DP_WIRE_H
#define DP_WIRE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include <rte_branch_prediction.h>
#include <rte_byteorder.h>
#include <rte_common.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include <dprpc/dprpc_agent.h>
#include <dprpc/dprpc_stats.h>

#define DP_WIRE_MAGIC	0xD9C1
#define DP_WIRE_VERSION 3

enum dp_frame_type {
	DP_FRAME_REQUEST = 1,
	DP_FRAME_RESPONSE = 2,
	DP_FRAME_ACK = 3,     /* a multi-frame message's receiver: progress, credits */
	DP_FRAME_CONTROL = 4, /* liveness: handler_id is the operation */
	/* Server streaming (dp_stream.h): a frame of a stream's chunk, or
	 * its end, server to client; handler_id is the frame's sequence
	 * number in the stream. */
	DP_FRAME_CHUNK = 5,
	/* The client's acknowledgement of a stream: handler_id every frame
	 * below it received, status the sequence number the server may send
	 * up to (excluded), credits the frames held beyond handler_id. */
	DP_FRAME_STREAM_ACK = 6,
};

/* Flags of a REQUEST frame. */
enum dp_req_flag {
	/* The caller takes a stream (dprpc_rpc_stream()): credits is its
	 * window, in frames. */
	DP_REQ_STREAM = 2,
};

/* Flags of a RESPONSE frame. */
enum dp_resp_flag {
	/* An error answer the library gave without running the handler
	 * (refused, expired): the request never ran.  Not kept for resends
	 * (a resent answer, and an old sender's, say nothing). */
	DP_RESP_UNRUN = 1,
};

/* Flags of a CHUNK frame. */
enum dp_chunk_flag {
	DP_CHUNK_LAST = 1, /* the last frame of its chunk */
	/* The end of the stream: status is its final status, the payload
	 * its error message. */
	DP_CHUNK_END = 2,
};

/* Flags of a STREAM_ACK frame. */
enum dp_sack_flag {
	DP_SACK_NACK = 1,  /* frame handler_id is missing, later ones came */
	DP_SACK_PROBE = 2, /* nothing came for a while: resend what is not held */
};

/* Operations of a CONTROL frame (in its handler_id field, no payload). */
enum dp_ctrl_op {
	DP_CTRL_PING = 1, /* are you there? answered by a PONG */
	DP_CTRL_PONG = 2,
	/* The caller cancelled its call on slot/req_num (session: the
	 * caller's incarnation, dst_session: the server's): a queued request
	 * is dropped, a running one sees dprpc_request_cancelled().  With
	 * DP_CANCEL_ACK_WANTED the caller holds its slot and resends the
	 * CANCEL until a CANCEL_ACK (or the call's response) comes. */
	DP_CTRL_CANCEL = 3,
	/* The sender's incarnation leaves the world for good
	 * (dprpc_world_leave()); answered by a LEAVE_ACK. */
	DP_CTRL_LEAVE = 4,
	DP_CTRL_LEAVE_ACK = 5,
	/* The server has acted on the CANCEL of slot/req_num (every copy is
	 * answered: the caller frees its slot on the first that comes). */
	DP_CTRL_CANCEL_ACK = 6,
	/* Joining a running world (dprpc_world_join(), join.c): the only
	 * CONTROL operations with a payload (struct dp_join_msg), and, for
	 * JOIN and JOIN_ACK, the only frames between a worker and one that
	 * is not (yet) in its world: dst_worker DP_RANK_NONE.
	 *   JOIN         joiner -> the member it names, resent until answered
	 *   JOIN_RELAY   that member -> the assigner (lowest live rank)
	 *   ANNOUNCE     assigner -> every member: worker @rank joined;
	 *                resent until each answers ANNOUNCE_ACK
	 *   JOIN_DONE    assigner -> the relaying member, once every member
	 *                acknowledged (or a refusal, status)
	 *   JOIN_ACK     member -> joiner: its rank, and the members from
	 *                entry @have on (or a refusal, status) */
	DP_CTRL_JOIN = 7,
	DP_CTRL_JOIN_RELAY = 8,
	DP_CTRL_ANNOUNCE = 9,
	DP_CTRL_ANNOUNCE_ACK = 10,
	DP_CTRL_JOIN_DONE = 11,
	DP_CTRL_JOIN_ACK = 12,
	/* The sender is about to close its memif link to the receiver (its
	 * agent destroyed): the receiver answers CLOSE_ACK and polls the link
	 * no more, nothing else changes (link_close.c). */
	DP_CTRL_CLOSE = 13,
	DP_CTRL_CLOSE_ACK = 14,
	/* The server holds the request of slot/req_num, queued or running,
	 * and expects to answer it in budget microseconds: the caller resends
	 * it only if no answer came well after that.  Sent when it is queued
	 * behind work, and to a copy of a request it holds. */
	DP_CTRL_HELD = 15,
};

/* Flags of a CONTROL frame. */
enum dp_ctrl_flag {
	/* CANCEL: the caller keeps its slot until answered by a CANCEL_ACK. */
	DP_CANCEL_ACK_WANTED = 1,
	/* CANCEL_ACK: the request never ran and never will; without it, it
	 * had started or was answered. */
	DP_CANCEL_STOPPED = 2,
};

/* The rank of a worker not in the world (a joiner), in src_worker or
 * dst_worker of a JOIN or JOIN_ACK. */
#define DP_RANK_NONE UINT16_MAX

/* One worker as join messages carry it: 44 bytes. */
struct dp_join_entry {
	char name[DPRPC_NAME_MAX];
	uint8_t mac[RTE_ETHER_ADDR_LEN];
	rte_be32_t ip;
	rte_be16_t port;
} __rte_packed;
_Static_assert(sizeof(struct dp_join_entry) == 44, "a join entry is 44 bytes");

/* The payload of every join operation (big-endian fields):
 *   joiner   the joining worker (JOIN, RELAY, DONE, ACK) or the worker
 *            that joined (ANNOUNCE, ANNOUNCE_ACK)
 *   session  the joiner's incarnation
 *   rank     its rank (ANNOUNCE, ANNOUNCE_ACK, DONE, ACK), else 0
 *   status   0, or a positive errno refusing the join (DONE, ACK)
 *   via      RELAY, DONE: the rank of the member the joiner contacted
 *   have     JOIN, RELAY, DONE, ACK: members the joiner already holds;
 *            an ACK lists entries have, have+1, ... (count of them)
 *   world_n  ACK: the world's size as the answering member knows it
 *   count    ACK: entries that follow (at most DP_JOIN_PAGE) */
struct dp_join_msg {
	struct dp_join_entry joiner;
	rte_be64_t session;
	rte_be16_t rank, status, via, have, world_n, count;
} __rte_packed;
#define DP_JOIN_PAGE                                              \
	((DPRPC_MAX_FRAME_PAYLOAD - sizeof(struct dp_join_msg)) / \
		(sizeof(struct dp_join_entry) + 1))
/* An ACK's entries are followed by one state byte each (DPRPC_PEER_LEFT:
 * the member left; else 0). */

/* Flags of an ACK frame. */
enum dp_ack_flag {
	DP_ACK_NACK = 1, /* frame pkt_idx is missing, later ones came: resend it */
	/* Nothing came for a while (the client's resend timer): resend frame
	 * pkt_idx if below msg_len (1 + the highest frame held), then go on
	 * from msg_len; gaps in between come back by NACK. */
	DP_ACK_PROBE = 2,
	/* The answer to a DP_MSG_PROBE frame: the receiver's state once it
	 * had that frame, so once it had every frame sent before it. */
	DP_ACK_ANSWER = 4,
};

/* Flags of a request or response frame of a multi-frame message. */
enum dp_msg_flag {
	DP_MSG_ACK_NOW = 1, /* acknowledge on receipt: the sender's window is
			     * a quarter further on, or full */
	/* The sender's resend timer asks where the receiver stands (with
	 * DP_MSG_ACK_NOW): answered by an ACK with DP_ACK_ANSWER. */
	DP_MSG_PROBE = 4,
};

struct dp_wire_hdr {
	rte_be16_t magic;
	uint8_t version;
	uint8_t type;
	rte_be16_t flags;
	rte_be16_t src_worker;
	rte_be16_t dst_worker;
	rte_be16_t slot;
	rte_be32_t req_num;
	rte_be64_t session;
	rte_be64_t dst_session;
	rte_be16_t pkt_idx;
	rte_be16_t pkt_cnt;
	rte_be32_t msg_len;
	rte_be32_t handler_id;
	rte_be32_t status;
	rte_be16_t credits;
	rte_be16_t budget;
	rte_be32_t world_id;
	rte_be64_t seq;
	uint8_t tag[8];
} __rte_packed;

_Static_assert(sizeof(struct dp_wire_hdr) == 72, "dprpc header is 72 bytes on the wire");
_Static_assert(offsetof(struct dp_wire_hdr, session) == 16 &&
		       offsetof(struct dp_wire_hdr, dst_session) == 24 &&
		       offsetof(struct dp_wire_hdr, budget) == 50 &&
		       offsetof(struct dp_wire_hdr, world_id) == 52 &&
		       offsetof(struct dp_wire_hdr, seq) == 56 &&
		       offsetof(struct dp_wire_hdr, tag) == 64,
	"dprpc header fields at their documented offsets");

/* Ethernet + IPv4 + UDP, prebuilt per peer. */
#define DP_L2L4_LEN \
	(sizeof(struct rte_ether_hdr) + sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr))
#define DP_HDRS_LEN (DP_L2L4_LEN + sizeof(struct dp_wire_hdr))
_Static_assert(DP_L2L4_LEN == 42, "L2-L4 headers are 42 bytes");
/* 1500-byte IP MTU: 20 IPv4 + 8 UDP + 72 dprpc + payload. */
_Static_assert(DPRPC_MAX_FRAME_PAYLOAD + 20 + 8 + sizeof(struct dp_wire_hdr) == 1500,
	"one frame's payload fills a 1500-byte MTU");

/* One worker's address, from the world map.  A MAC of all zeros: none
 * given, the next hop's is found by ARP when a frame goes out (arp.c). */
struct dp_addr {
	struct rte_ether_addr mac;
	rte_be32_t ip;
	rte_be16_t port;
};

/* Whether the frame with header @h belongs to a call, as every frame but
 * CONTROL ones does; a CANCEL and its CANCEL_ACK do (they are resent
 * until answered, like the call's own frames), the liveness operations
 * (PING, PONG, LEAVE...) do not.  Fault injection acts on a call's frames
 * only (dp_fault_one()). */
static inline bool
dp_frame_of_call(const struct dp_wire_hdr *h)
{
	uint32_t op;

	if (h->type != DP_FRAME_CONTROL)
		return true;
	op = rte_be_to_cpu_32(h->handler_id);
	return op == DP_CTRL_CANCEL || op == DP_CTRL_CANCEL_ACK || op == DP_CTRL_HELD;
}

/* What the parser needs to know about the receiving worker. */
struct dp_rx_ctx {
	const struct dp_addr *addrs; /* world addresses, indexed by rank */
	unsigned int nb_workers;
	uint16_t self_rank;
	/* Our own address, if not addrs[self_rank] (a worker that has not
	 * joined yet has no rank: DP_RANK_NONE). */
	const struct dp_addr *self;
	rte_be32_t world_id; /* the world's id: a frame of another is dropped */
};

/* A frame that passed every check; pointers into the frame. */
struct dp_parsed {
	const struct dp_wire_hdr *hdr;
	const uint8_t *payload;
	uint32_t payload_len;
	uint8_t type;
	uint16_t src;
	uint16_t dst; /* ours, or DP_RANK_NONE (a join frame, dp_wire.h) */
	uint16_t slot;
	uint64_t session;     /* the sender's incarnation */
	uint64_t dst_session; /* ours, as the sender knows it (0: none) */
	uint32_t req_num;
	uint32_t handler_id;
	uint32_t status;
	uint32_t msg_len; /* the whole message's length */
	uint16_t pkt_idx, pkt_cnt, flags, credits;
	uint16_t budget; /* encoded (dp_budget_decode()); 0: none */
};

/* The parts of a frame's dprpc header the sender chooses.  pkt_cnt 0 (what
 * an initialiser leaves) means a message of one frame, the payload given
 * to dp_frame_write(); pkt_idx, msg_len then do not matter. */
struct dp_hdr_fields {
	uint8_t type;
	uint16_t src;
	uint16_t dst;
	uint16_t slot;
	uint64_t session;     /* the sender's incarnation */
	uint64_t dst_session; /* the receiver's, as far as the sender knows */
	uint32_t req_num;
	uint32_t handler_id;
	uint32_t status;
	uint16_t pkt_idx, pkt_cnt, flags, credits;
	uint32_t msg_len;
	uint16_t budget; /* encoded (dp_budget_encode()); 0: none */
};

/*
 * The budget field (a deadline's time left, or a retry-after hint) in 16
 * bits: an 11-bit mantissa and a 5-bit exponent, mant << exp microseconds,
 * so 1 us to 2047 << 31 us (about 50 days) with less than 1/1024 lost to
 * rounding, which is always down (a server never believes it has more time
 * than the caller gave).  0 means none; a time left of 0 is sent as 1 us.
 */
#define DP_BUDGET_MANT_BITS 11
#define DP_BUDGET_MANT_MAX  ((1u << DP_BUDGET_MANT_BITS) - 1)
#define DP_BUDGET_EXP_MAX   31u

static inline uint16_t
dp_budget_encode(uint64_t us)
{
	unsigned int e;

	if (us == 0)
		return 1; /* expired, but a deadline: 1 us */
	if (us <= DP_BUDGET_MANT_MAX)
		return (uint16_t)us;
	/* The top set bit goes to the mantissa's top bit. */
	e = (unsigned int)(63 - __builtin_clzll(us)) - (DP_BUDGET_MANT_BITS - 1);
	if (e > DP_BUDGET_EXP_MAX)
		return (uint16_t)((DP_BUDGET_EXP_MAX << DP_BUDGET_MANT_BITS) | DP_BUDGET_MANT_MAX);
	return (uint16_t)((e << DP_BUDGET_MANT_BITS) | (unsigned int)(us >> e));
}

/* A response's hold time (@us microseconds) in the budget field: as a
 * budget, but 0 (none) under 1 us. */
static inline uint16_t
dp_hold_encode(uint64_t us)
{
	return us == 0 ? 0 : dp_budget_encode(us);
}

static inline uint64_t
dp_budget_decode(uint16_t v)
{
	return (uint64_t)(v & DP_BUDGET_MANT_MAX) << (v >> DP_BUDGET_MANT_BITS);
}

/* Build the Ethernet/IPv4/UDP headers from @src to @dst, IPv4 TTL @ttl,
 * into tmpl[DP_L2L4_LEN]; lengths and checksum are filled per frame by
 * dp_frame_write(). */
void dp_l2l4_template(
	uint8_t *tmpl, const struct dp_addr *src, const struct dp_addr *dst, uint8_t ttl);

/* Write a whole frame at @frame: template, dprpc header, payload; fix the
 * IPv4/UDP lengths and the IPv4 checksum.  @frame has room for
 * DP_HDRS_LEN + len bytes; @payload may overlap the frame. */
void dp_frame_write(uint8_t *frame, const uint8_t *tmpl, const struct dp_hdr_fields *f,
	const void *payload, uint32_t len);

/* dp_frame_write() of a payload gathered from @cnt buffers (@len bytes
 * in all), none of which may overlap the frame. */
void dp_frame_write_iov(uint8_t *frame, const uint8_t *tmpl, const struct dp_hdr_fields *f,
	const struct iovec *iov, unsigned int cnt, uint32_t len);

/* Write only the headers of a frame carrying @len payload bytes (which
 * follow the headers, or sit in a further segment). */
void dp_frame_write_hdr(
	uint8_t *frame, const uint8_t *tmpl, const struct dp_hdr_fields *f, uint32_t len);

/* The ones' complement sum of the IPv4 header at @ip, @ihl bytes, folded
 * to 16 bits: 0xffff for a correct header.  A 20-byte header is summed as
 * five 32-bit words, then folded (RFC 1071: the sum does not depend on word
 * size), cheaper than rte_raw_cksum()'s loop, which takes headers with
 * options. */
static inline uint16_t
dp_ipv4_hdr_sum(const void *ip, uint32_t ihl)
{
	uint32_t w[5];
	uint64_t s;

	if (unlikely(ihl != sizeof(w)))
		return rte_raw_cksum(ip, ihl);
	memcpy(w, ip, sizeof(w));
	s = (uint64_t)w[0] + w[1] + w[2] + w[3] + w[4];
	s = (s & 0xffffffffu) + (s >> 32);
	s = (s & 0xffffffffu) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* Parse and check a frame of @len contiguous bytes.  Returns true and fills
 * @out, or false and sets @why.  Reads nothing outside [frame, frame+len). */
bool dp_frame_parse(const uint8_t *frame, uint32_t len, const struct dp_rx_ctx *ctx,
	struct dp_parsed *out, enum dprpc_drop_reason *why);

/* The UDP checksum of a frame @p parsed (0: none sent), as it came. */
static inline uint16_t
dp_frame_udp_csum(const struct dp_parsed *p)
{
	return ((const struct rte_udp_hdr *)p->hdr - 1)->dgram_cksum;
}

/* Whether the UDP checksum of @frame, parsed into @p and not 0, is right
 * (over the pseudo-header, the UDP header and what follows). */
bool dp_frame_udp_ok(const uint8_t *frame, const struct dp_parsed *p);

/* What dp_host_answer() made of a frame that is not dprpc's. */
enum dp_host_reply {
	DP_HOST_NONE, /* nothing to answer: the frame is untouched */
	DP_HOST_ARP,  /* an ARP request for @self's address, now its reply */
	DP_HOST_ECHO, /* an ICMP echo request to @self, now its reply */
};

/* Answer as a host does (host.c): an ARP request for @self's IPv4 address
 * (not a gratuitous one of the same address) or an ICMP echo request to
 * it becomes its reply in place, of the same length, addressed back to its
 * sender (an echo reply with TTL @ttl).  Reads and writes nothing outside
 * [frame, frame+len). */
enum dp_host_reply dp_host_answer(
	uint8_t *frame, uint32_t len, const struct dp_addr *self, uint8_t ttl);

/* An ARP frame's sender, whatever its operation: true and @ip, @mac if
 * @frame is a well-formed Ethernet/IPv4 ARP request or reply. */
bool dp_arp_sender(const uint8_t *frame, uint32_t len, rte_be32_t *ip, struct rte_ether_addr *mac);

/* The length of an ARP request dp_arp_request_write() makes (the
 * Ethernet minimum, padded). */
#define DP_ARP_FRAME_LEN (RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN)
/* An ARP request from @self for @tip into @frame (DP_ARP_FRAME_LEN
 * bytes), to @dst (NULL: broadcast).  @tip equal to @self's address:
 * a gratuitous ARP, announcing @self's MAC. */
void dp_arp_request_write(uint8_t *frame, const struct dp_addr *self, rte_be32_t tip,
	const struct rte_ether_addr *dst);

/* Offset of the dprpc header's slot and req_num fields in a frame, for the
 * poller to stamp a submitted request. */
static inline struct dp_wire_hdr *
dp_frame_hdr(uint8_t *frame)
{
	return (struct dp_wire_hdr *)(frame + DP_L2L4_LEN);
}

/* Format a dprpc header for debugging ("REQ 0->1 slot 3 req 7 ..."). */
int dp_wire_hdr_str(const struct dp_wire_hdr *h, char *buf, size_t size);

/* Parse "NAME RANK MAC IPV4 PORT" lines ("NAME RANK" for a worker only
 * memif links reach: its address made from its rank, world_map.c), and the
 * "link" and "mesh" lines that say which memif link reaches whom; see
 * dprpc_agent_conf.world. */
/* The UDP port of a worker line without an address. */
#define DP_WORLD_DERIVED_PORT 7000
struct dp_world_entry {
	char name[DPRPC_NAME_MAX];
	struct dp_addr addr;
};
/* Longest memif socket path, with its NUL (struct sockaddr_un). */
#define DP_SOCK_PATH_MAX 108
/* Most "link" lines in a map ("mesh" covers any number of pairs). */
#define DP_WORLD_LINKS_MAX 256
/* "link A B memif:PATH": a memif link between workers a and b, a the
 * memif server (it listens on PATH), b the client. */
struct dp_world_link {
	uint16_t a, b;
	char path[DP_SOCK_PATH_MAX];
};
/* Most "subnet" lines in a map. */
#define DP_WORLD_SUBNETS_MAX 64
/* "subnet IPV4/LEN [via GATEWAY]": a worker whose address is in it takes
 * its prefix length and gateway (0: none), unless its conf gives them. */
struct dp_world_subnet {
	rte_be32_t net, mask, gw;
	uint8_t len;
};
struct dp_world {
	unsigned int n;
	struct dp_world_entry w[DPRPC_MAX_WORKERS];
	struct dp_addr addrs[DPRPC_MAX_WORKERS]; /* copy of w[i].addr, for dp_rx_ctx */
	unsigned int nb_links;
	struct dp_world_link links[DP_WORLD_LINKS_MAX];
	/* "mesh memif:DIR": every pair with no link line of its own is
	 * joined by a memif link, socket DIR/A-B.sock (A the lower rank,
	 * the server); "" when the map has no mesh line. */
	char mesh_dir[DP_SOCK_PATH_MAX];
	/* The map of a worker that joins a running world: its own line with
	 * rank "-" (no rank yet) and nothing else; n is 0 (join.c). */
	bool joiner;
	struct dp_world_entry self;
	unsigned int nb_subnets;
	struct dp_world_subnet subnets[DP_WORLD_SUBNETS_MAX];
};
int dp_world_parse(const char *spec, struct dp_world *world, char *err, size_t errlen);
/* "NAME MAC IPV4 UDP_PORT" or "NAME IPV4 UDP_PORT" (a map line without
 * its rank) into @e: 0 or -EINVAL (message in @err). */
int dp_world_parse_member(const char *spec, struct dp_world_entry *e, char *err, size_t errlen);
/* The longest "subnet" line of @world holding @ip: 1 and its prefix
 * length and gateway (0: none), or 0 if there is none. */
int dp_world_subnet_of(const struct dp_world *world, rte_be32_t ip, uint8_t *len, rte_be32_t *gw);
/* The network-order mask of a prefix of @len bits (0..32). */
static inline rte_be32_t
dp_prefix_mask(unsigned int len)
{
	return len == 0 ? 0 : rte_cpu_to_be_32(~UINT32_C(0) << (32 - len));
}
/* The memif link between @self and @peer in @world, if any: its socket
 * path into @path, and whether @self is the memif server.  1 if there is
 * one, 0 if @peer is reached through the agent's default port, -EINVAL
 * (message in @err) if the mesh path would be too long. */
int dp_world_link_of(const struct dp_world *world, unsigned int self, unsigned int peer, char *path,
	bool *server, char *err, size_t errlen);

#endif /* DP_WIRE_H */
