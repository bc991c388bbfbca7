/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Agent internals, shared by the dataplane's files.  Never installed.
 *
 * Threads and ownership (DESIGN.md sections 2 and 3):
 *
 *  - The poller is whoever holds agent->polling (dprpc_poll()): the io
 *    lcore, the application's lcore, or a waiting thread.  It alone touches
 *    the rx queue, the tx queue, tx_buf, the session slots and the
 *    handler-lcore rings' producer side.
 *  - Any thread submits calls (dprpc_rpc_async_id()) and off-thread replies
 *    through tx_ring (multi-producer, single consumer: the poller).
 *  - Handler lcores consume their own ring (single producer: the poller).
 *
 * Mbuf ownership ledger (STYLE.md 8):
 *  - submit: the caller allocates the request mbuf, writes the whole frame,
 *    and hands it to tx_ring; from then on the poller owns it;
 *  - transmit: the poller stamps slot and req_num, moves it to tx_buf, and
 *    rte_eth_tx_burst() hands it to the PMD, which frees it; a request to
 *    resend is kept first (copied if small, else one more reference: see
 *    dp_keep() in rpc.c); a call to self is looped back instead and
 *    becomes an incoming request;
 *  - incoming request: the request object owns the mbuf (payload read in
 *    place) until the reply, which frees it;
 *  - response: a matching response mbuf becomes the future's value (zero
 *    copy) and is freed by the future's last put; any other frame is freed
 *    at once after counting its drop reason;
 *  - multi-frame messages (msg.c): the sender's dp_txmsg is handed over in
 *    a carrier mbuf's metadata and owned by the session slot (client) or
 *    the server slot (response) until acknowledged; each frame's payload
 *    mbuf holds a reference to it; received frames are copied into a
 *    dp_rxmsg and freed at once; a whole dp_rxmsg is owned by the request
 *    (freed with it) or the future (freed by its last put).
 */
#ifndef DP_AGENT_H
#define DP_AGENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_errno.h>
#include <rte_log.h>
#include <rte_dev.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include <dprpc/dprpc_agent.h>
#include <dprpc/dprpc_future.h>
#include <dprpc/dprpc_rpc.h>

#include "dp_ext.h"
#include "dp_fault.h"
#include "dp_log.h"
#include "dp_wire.h"
#include "dprpc_atomic.h"

#define DP_RX_BURST  32
#define DP_RX_MIN    4	 /* frames received per poll even with tx_buf full */
#define DP_TX_BUF    512 /* frames staged for tx_burst; >= DP_RX_BURST * 2 */
#define DP_RING_SIZE 4096
/* Staged frames are handed to the port as soon as this many are waiting,
 * not only at the end of a poll: a burst of replies (or of calls issued
 * from completion callbacks) then overlaps with the peer's work instead of
 * alternating with it.  See perf/RESULTS.md. */
#define DP_TX_FLUSH_AT 4

struct dp_txmsg;

/* Per-mbuf metadata of a submitted frame, in an mbuf dynamic field.  Every
 * mbuf handed to tx_ring or dp_stage_tx() has it set (dp_meta_plain() for
 * a frame that is neither a call nor a multi-frame message). */
struct dp_call_meta {
	struct dprpc_future *fut; /* the agent's reference; NULL for a reply */
	uint64_t deadline_tsc;	  /* 0: no timeout */
	/* Not NULL: this mbuf only carries a multi-frame message to the
	 * poller (and is freed there); the frames are made from @tx. */
	struct dp_txmsg *tx;
};
extern int dp_meta_offset;
static inline struct dp_call_meta *
dp_meta(struct rte_mbuf *m)
{
	return RTE_MBUF_DYNFIELD(m, dp_meta_offset, struct dp_call_meta *);
}

static inline void
dp_meta_plain(struct rte_mbuf *m)
{
	dp_meta(m)->fut = NULL;
	dp_meta(m)->tx = NULL;
}

/*
 * Multi-frame messages (msg.c).  A message longer than one frame's payload
 * is copied once into a dp_txmsg; its frames are made on demand, each a
 * header mbuf chained to an mbuf attached (no copy) to its slice of the
 * copy, so only the window's frames exist at a time.  The receiver copies
 * each frame's payload into a dp_rxmsg (one copy) and acknowledges.
 */
struct dp_txmsg {
	/* Holds one reference for the agent, one per frame in flight; the
	 * last one frees the message (any thread: the PMD frees frames). */
	struct rte_mbuf_ext_shared_info shinfo;
	struct dp_hdr_fields f; /* every frame's header but the frame fields */
	uint32_t len, n;	/* bytes, frames */
	uint32_t next;		/* the next frame to send */
	uint32_t hi;		/* frames below this were sent at least once */
	uint32_t acked;		/* the receiver holds every frame below this */
	uint32_t window;	/* the receiver's credits beyond acked */
	bool probing;		/* the resend timer asked the receiver where it stands */
	uint8_t *buf;
};

struct dp_rxmsg {
	uint32_t req_num, len, n;
	uint32_t handler_id, status;
	uint32_t have;	    /* frames received */
	uint32_t cum;	    /* every frame below this is here */
	uint32_t hi;	    /* no frame from this on is here */
	uint32_t ooo, dups; /* frames beyond a gap at cum; duplicates */
	bool jumped;	    /* the last frame moved cum over frames held */
	uint8_t *buf;	    /* len bytes, cache-line aligned */
	uint64_t bits[];    /* frames received */
};
/*
 * A frame kept to be sent again (a client's request until its response, a
 * server's response until the client moves on).  Only what the slot does
 * not know is kept: a frame whose handler id, status and payload fit in
 * DP_KEEP_BYTES has those copied into the slot's area (dp_keep_area(): in
 * the peer's keep array for a request, in its srv_keep for a response),
 * and its headers are rebuilt on a resend.  For a small call that is one
 * cache line, which costs less than the reference it replaces (a locked
 * increment here, a locked decrement in the PMD's free, and an mbuf kept
 * out of the pool's per-lcore cache for the call's life).  A larger frame
 * keeps one reference to its mbuf.
 */
#define DP_KEEP_BYTES 256
struct dp_kept {
	struct rte_mbuf *m; /* a reference, or NULL */
	uint16_t len;	    /* bytes copied to the area (8 + payload), or 0 */
};

/* A session slot: one call in flight towards a peer.  Poller only. */
struct dp_slot {
	struct dprpc_future *fut; /* NULL when free */
	uint32_t req_num;
	uint64_t deadline_tsc;
	struct dp_kept req;  /* the request, for resending */
	struct dp_txmsg *tx; /* a multi-frame request: ours until the slot is freed */
	struct dp_rxmsg *rx; /* a multi-frame response being reassembled */
	uint64_t rtx_tsc;    /* next resend */
	uint64_t rto_tsc;    /* current resend interval */
	/* First transmission of a single-frame request, for a round-trip
	 * sample; 0 once resent (Karn: an answer to which copy is unknown)
	 * or for a multi-frame one (its transfer is not a round trip). */
	uint64_t sent_tsc;
};

enum dp_srv_state { DP_SRV_EMPTY, DP_SRV_RECEIVING, DP_SRV_RUNNING, DP_SRV_DONE };

struct dp_srv_slot {
	uint32_t req_num;
	uint8_t state;	     /* enum dp_srv_state */
	struct dp_kept resp; /* DONE: the response */
	struct dp_txmsg *tx; /* DONE: a multi-frame response, until acked whole */
	struct dp_rxmsg *rx; /* RECEIVING: the request being reassembled */
};

struct dp_peer {
	uint8_t tmpl[DP_L2L4_LEN]; /* Ethernet/IPv4/UDP from us to the peer */
	/* Calls submitted towards the peer and not finished.  Callers
	 * increment it (relaxed: it is only a bound, nothing is published
	 * through it); the poller decrements when a slot is freed. */
	atomic_uint outstanding;
	uint32_t next_req; /* poller only */
	unsigned int nb_free;
	uint16_t *free_slots; /* stack of free slot indexes, poller only */
	/* 1 + the highest slot index ever taken, poller only: the stack hands
	 * out low indexes first, so scans of the slots (timers, failing a
	 * peer) stop here instead of at max_outstanding. */
	unsigned int slots_hi;
	struct dp_slot *slots;
	/* Server side, for requests from this peer (at-most-once), poller
	 * only: per slot of the peer's numbering, the last request seen and,
	 * once answered, its response, kept until the peer moves on.  The
	 * peer numbers its slots up to its own max_outstanding, which need
	 * not be ours: srv starts with max_outstanding entries and grows
	 * (dp_srv_slot()) when the peer uses a slot beyond them. */
	struct dp_srv_slot *srv;
	unsigned int srv_cap; /* entries in srv and srv_keep */
	/* DP_KEEP_BYTES per slot, each on its own cache lines: keep for
	 * slots[i], srv_keep for srv[i]. */
	uint8_t *keep, *srv_keep;
	/* The resend timeout for new calls to this peer, adaptive (RFC 6298
	 * in TSC units; dp_rtt_sample() in poll.c): the smoothed round trip
	 * (0 before the first sample) and its variation.  Written by the
	 * poller; rto and srtt read by dprpc_worker_rtt() on any thread
	 * (relaxed: a snapshot, nothing is published through them). */
	_Atomic uint64_t rto_tsc, srtt_tsc;
	uint64_t rttvar_tsc;
	uint32_t session; /* the peer's incarnation, once known */
	bool session_known;
	/* Liveness, poller only but for state, which any thread reads
	 * (relaxed: a snapshot, nothing is published through it). */
	uint64_t last_rx_tsc;	   /* last frame from the peer */
	uint64_t last_ping_tsc;	   /* last keep-alive sent to it */
	uint64_t silent_since_tsc; /* UNKNOWN peer: since calls wait on it */
	_Atomic uint8_t state;	   /* enum dprpc_peer_state */
};

struct dp_handler {
	/* Wire id; 0 while the bucket is free.  Written last, with release,
	 * by dprpc_register(); read with acquire by dp_handler_find(). */
	_Atomic uint32_t id;
	enum dprpc_handler_mode mode;
	dprpc_handler_t fn;
	void *arg;
	char name[DPRPC_HANDLER_NAME_MAX];
};

struct dprpc_request {
	struct dprpc_agent *agent;
	struct rte_mbuf *m; /* the request frame; payload points into it */
	const uint8_t *payload;
	uint32_t len;
	uint16_t src;
	uint16_t slot;
	uint32_t req_num;
	uint32_t handler_id; /* the id the caller called: echoed in the reply */
	const struct dp_handler *h;
	/* Set by an extension (dp_req_set_hook(), dp_req_set_input());
	 * NULL/0 otherwise. */
	const struct dp_req_hook *hook;
	void *hook_arg[2];
	const void *in_val;
	uint32_t in_len;
	struct dp_rxmsg *rx; /* a reassembled request: owns the payload */
	struct dp_txmsg *tx; /* a multi-frame request to self: owns the payload */
};

struct dp_hlcore {
	struct dprpc_agent *agent;
	unsigned int lcore;
	struct rte_ring *ring; /* SP (poller) / SC (this lcore) */
	bool launched;
};

/* Counters.  All but reply_nombuf are written by the poller alone
 * (dp_count: a relaxed load and store, no locked instruction) and read by
 * anyone (relaxed). */
struct dp_stats {
	_Atomic uint64_t rx_frames, tx_frames, tx_retries, tx_dropped;
	_Atomic uint64_t calls_sent, calls_ok, calls_failed, calls_timed_out;
	_Atomic uint64_t requests_handled, requests_unknown, requests_resent, retransmits;
	_Atomic uint64_t keepalives, peers_down, peers_restarted;
	_Atomic uint64_t msgs_sent, msgs_received, frames_resent, acks_sent, credits_cut;
	_Atomic uint64_t msgs_live; /* multi-frame messages held by slots */
	_Atomic uint64_t drops[DPRPC_DROP_MAX];
	_Atomic uint64_t reply_nombuf; /* any thread: dp_count_mt */
};

struct dprpc_agent {
	char name[DPRPC_NAME_MAX];
	uint16_t rank;
	uint32_t session; /* our incarnation, random */
	unsigned int instance;
	struct dp_world world;
	struct dp_rx_ctx rx_ctx;

	uint16_t port_id, rxq, txq;
	bool port_probed;  /* we created it from conf.vdev */
	bool port_started; /* we configured and started it */
	char vdev_name[RTE_DEV_NAME_MAX_LEN];

	struct rte_mempool *mp;
	bool own_mp;
	struct dprpc_future_pool *fpool;
	struct rte_mempool *req_pool;

	struct rte_ring *tx_ring; /* MP/SC: submitted calls, off-thread replies */

	/* Handler registry: open addressing, power-of-two size, never
	 * shrinks; writers serialised by reg_lock, readers lock-free. */
	pthread_mutex_t reg_lock;
	unsigned int nb_handlers, max_handlers, handler_mask;
	struct dp_handler *handlers;

	unsigned int nb_hl, hl_next;
	struct dp_hlcore hl[DPRPC_MAX_HANDLER_LCORES];
	unsigned int io_lcore;
	bool io_launched;
	atomic_bool stop; /* tells the lcores to return; release/acquire */

	/* The poll flag: exchanged to true with acquire by the thread that
	 * polls, stored false with release when it stops, so one poller's
	 * writes to poller-only state happen before the next one's reads. */
	atomic_bool polling;
	unsigned int tx_n;
	struct rte_mbuf *tx_buf[DP_TX_BUF];
	uint64_t next_timer_tsc, timer_period_tsc, tsc_hz;

	struct dp_fault ftx, frx; /* fault injection, poller only */

	struct dp_peer *peers;
	unsigned int max_outstanding;
	uint64_t default_timeout_us;
	uint32_t max_msg; /* conf.max_msg_size */
	uint32_t credits; /* conf.credits */
	/* conf.retransmit_us: the first resend timeout towards a peer not
	 * measured yet (0: no retransmission), and 64 times it, the most a
	 * timeout grows to. */
	uint64_t rto_tsc, rto_max_tsc;
	uint64_t keepalive_tsc, peer_timeout_tsc; /* 0: off */
	dprpc_peer_event_t peer_event;
	void *peer_event_arg;
	uint64_t now_tsc; /* TSC at the start of the current poll */
	unsigned int idle_pause, idle_yield, idle_sleep, idle_sleep_us;

	struct dp_stats st;

	/* Extensions' states, in the order of dp_extensions[] (dp_ext.h). */
	void *ext[DP_EXT_MAX];
};

/* The agent whose poll loop runs on this thread, if any. */
/* initial-exec: a plain %fs-relative access, no __tls_get_addr call per
 * poll (the library is linked at start-up, not dlopen'ed late). */
extern __thread struct dprpc_agent *dp_tls_poller __attribute__((tls_model("initial-exec")));

/* agent.c: call @fn on every agent of the process, under the registry
 * lock (an agent cannot be destroyed meanwhile; @fn must not block). */
void dp_agents_foreach(void (*fn)(struct dprpc_agent *a, void *arg), void *arg);
/* agent.c: tell every extension that has a peer_event op (dp_ext.h) what
 * happened to peer @rank.  On the poller. */
void dp_ext_peer_event(struct dprpc_agent *a, unsigned int rank, enum dp_peer_event ev);

/* telemetry.c */
void dp_telemetry_register(void);

/* poll.c */
/* For a synchronous caller: poll, holding the poll flag throughout (one
 * exchange instead of one per poll), until @fut completes or the wait
 * grows long.  False if it did not (or could not) see it complete. */
bool dp_poll_until_done(struct dprpc_agent *a, const struct dprpc_future *fut);
bool dp_poll_trylock(struct dprpc_agent *a);
void dp_poll_unlock(struct dprpc_agent *a);
unsigned int dp_drain_tx_ring(struct dprpc_agent *a);
unsigned int dp_tx_flush(struct dprpc_agent *a);
void dp_idle(const struct dprpc_agent *a, unsigned int *empty);
int dp_lcore_io(void *agent);
void dp_stage_tx(struct dprpc_agent *a, struct rte_mbuf *m);
void dp_stage_out(struct dprpc_agent *a, struct rte_mbuf *m);
void dp_rx_frame(struct dprpc_agent *a, struct rte_mbuf *m);
void dp_start_call(struct dprpc_agent *a, struct rte_mbuf *m, uint64_t now);
struct dprpc_future *dp_slot_release(
	struct dprpc_agent *a, struct dp_peer *peer, struct dp_slot *s);
void dp_fail_all_slots(struct dprpc_agent *a, int code, const char *msg);
void dp_fail_peer_slots(struct dprpc_agent *a, unsigned int p, int code, const char *msg);

/* msg.c */
struct dp_txmsg *dp_txmsg_new(
	const struct dprpc_agent *a, const struct dp_hdr_fields *f, const void *data, uint32_t len);
void dp_txmsg_put(struct dp_txmsg *t);
void dp_rxmsg_free(void *r);
struct rte_mbuf *dp_carrier_new(struct dprpc_agent *a, struct dp_txmsg *t);
void dp_msg_start_call(struct dprpc_agent *a, struct dp_slot *s, struct dp_txmsg *t);
void dp_msg_start_response(struct dprpc_agent *a, struct dp_txmsg *t);
void dp_msg_rx_request(struct dprpc_agent *a, struct rte_mbuf *m, const struct dp_parsed *p);
void dp_msg_rx_response(
	struct dprpc_agent *a, struct dp_slot *s, struct rte_mbuf *m, const struct dp_parsed *p);
void dp_msg_rx_ack(struct dprpc_agent *a, struct rte_mbuf *m, const struct dp_parsed *p);
void dp_msg_resend(struct dprpc_agent *a, unsigned int to, struct dp_slot *s);
bool dp_msg_resend_response(struct dprpc_agent *a, unsigned int from, uint16_t slot);
void dp_msg_slot_clear(struct dprpc_agent *a, struct dp_slot *s);
void dp_self_fail(
	struct dprpc_agent *a, uint16_t slot, uint32_t req_num, int code, const char *why);
void dp_msg_srv_clear(struct dprpc_agent *a, struct dp_srv_slot *e);

/* rpc.c */
void dp_srv_reset(struct dprpc_agent *a, struct dp_peer *peer);
struct dprpc_request *dp_req_new(struct dprpc_agent *a, const struct dp_parsed *p);
void dp_req_start(struct dprpc_agent *a, struct dprpc_request *req);
void dp_reply_error_or_drop(struct dprpc_request *req, int code, const char *msg);
void dp_keep_response(struct dprpc_agent *a, struct rte_mbuf *m, const struct dp_wire_hdr *h);
void dp_keep(struct dp_kept *k, uint8_t *area, struct rte_mbuf *m);
bool dp_kept_send(struct dprpc_agent *a, const struct dp_kept *k, const uint8_t *area, uint8_t type,
	unsigned int to, uint16_t slot, uint32_t req_num);
void dp_kept_clear(struct dp_kept *k);
static inline uint8_t *
dp_keep_area(const struct dp_peer *peer, unsigned int slot, bool srv)
{
	return (srv ? peer->srv_keep : peer->keep) + slot * (size_t)DP_KEEP_BYTES;
}
/* The server's entry for @slot of @peer's numbering, NULL if the peer never
 * used that slot. */
static inline struct dp_srv_slot *
dp_srv_find(const struct dp_peer *peer, unsigned int slot)
{
	return slot < peer->srv_cap ? &peer->srv[slot] : NULL;
}
/* The same, growing the peer's server state to hold @slot if it is beyond
 * what it holds; NULL if the memory cannot be had. */
struct dp_srv_slot *dp_srv_slot(struct dp_peer *peer, uint16_t slot);
/* Allocate (or grow to @cap entries) @peer's server state: 0 or -ENOMEM,
 * which leaves it as it was. */
int dp_srv_grow(struct dp_peer *peer, unsigned int cap);
const struct dp_handler *dp_handler_find(const struct dprpc_agent *a, uint32_t id);
void dp_dispatch_request(struct dprpc_agent *a, struct rte_mbuf *m, const struct dp_parsed *p);
void dp_run_handler(struct dprpc_request *req);
int dp_lcore_handler(void *hlcore_arg);

/* A counter written by the poller only.  Relaxed: statistics publish
 * nothing; a single writer needs no read-modify-write. */
static inline void
dp_count(_Atomic uint64_t *c, uint64_t v)
{
	dp_counter_add(c, v);
}

/* A counter written by any thread. */
static inline void
dp_count_mt(_Atomic uint64_t *c, uint64_t v)
{
	atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* Incoming requests taken and not yet answered. */
static inline unsigned int
dp_requests_in_use(const struct dprpc_agent *a)
{
	return rte_mempool_in_use_count(a->req_pool);
}

/* Once per call (its deadline): a 64-bit product divided by a constant,
 * which the compiler turns into a multiply, whenever it cannot overflow
 * (under 2^30 us, 17 minutes, with a TSC under 2^34 Hz); the 128-bit
 * division, a libgcc call of tens of cycles (0.6% of a busy caller's
 * samples), only beyond. */
static inline uint64_t
dp_us_to_tsc(const struct dprpc_agent *a, uint64_t us)
{
	if (likely(us < (UINT64_C(1) << 30) && a->tsc_hz < (UINT64_C(1) << 34)))
		return us * a->tsc_hz / 1000000;
	return (uint64_t)((__uint128_t)us * a->tsc_hz / 1000000);
}

static inline uint64_t
dp_tsc_to_ns(const struct dprpc_agent *a, uint64_t tsc)
{
	return (uint64_t)((__uint128_t)tsc * 1000000000u / a->tsc_hz);
}

#endif /* DP_AGENT_H */
