/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rpc layer of an agent (struct dp_rpc, which begins with its base,
 * dp_base.h): its peers, the handler registry and lcores, the budgets, the
 * timers' settings, the responses kept for rpc_sync; the types the calls'
 * files share (the peer, the request object, the calls' per-mbuf
 * metadata).  The world and the agent embed it (dp_agent.h).  Never
 * installed.
 */
#ifndef DP_RPC_H
#define DP_RPC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

#include <dprpc/dprpc_agent.h>
#include <dprpc/dprpc_future.h>
#include <dprpc/dprpc_rpc.h>

#include "dp_base.h"
#include "dp_handler.h"
#include "dprpc_atomic.h"

/* Incarnation ids of a peer remembered after it restarted (struct dp_peer). */
#define DP_RETIRED 4

struct dp_rxmsg;
struct dp_slot;
struct dp_srv_slot;
struct dp_txmsg;
struct dp_srv_stream;
struct dprpc_stream;

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
	/* "call to NAME timed out": the message of a call failed at its
	 * expiry (fut_set_expiry()), constant. */
	char expire_msg[DPRPC_ERRMSG_MAX];
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
	/* What srv holds for the peer against the agent's budgets (dp_server.h),
	 * poller only: mbufs kept as responses, and bytes of multi-frame
	 * messages (requests being reassembled, responses until acked). */
	unsigned int srv_kept;
	uint64_t srv_bytes;
	/* Request objects of the peer's calls held here, against
	 * conf.serve.peer_requests_max (dp_srv_live()): taken, counted by the
	 * poller; released on the poller (an inline handler's), counted by
	 * it too; released on any other thread (handler lcores, deferred
	 * replies), counted in srv_freed_away (relaxed: a bound only, nothing
	 * is published through it).  No locked instruction per request on
	 * the inline path. */
	unsigned int srv_taken, srv_freed_here;
	atomic_uint srv_freed_away;
	/* The resend timeout for new calls to this peer, adaptive (RFC 6298
	 * in TSC units; dp_rtt_sample() in dp_client.h): the smoothed round
	 * trip (0 before the first sample) and its variation.  Written by the
	 * poller; rto and srtt read by dprpc_worker_rtt_get() on any thread
	 * (relaxed: a snapshot, nothing is published through them). */
	_Atomic uint64_t rto_tsc, srtt_tsc;
	uint64_t rttvar_tsc;
	/* What the peer last answered of our calls (a response, a HELD, a
	 * CANCEL_ACK): the highest request number (serial order) and when,
	 * and when a silent peer was last probed: a call's resend needs a
	 * sign that its frame was lost (dp_slot_lost()).  Poller only. */
	uint32_t ans_req;
	uint64_t ans_tsc, probe_tsc;
	/* The peer's incarnation, once known (dp_check_session()), and the
	 * DP_RETIRED ones before it, most recent at retired[(nb_retired - 1)
	 * % DP_RETIRED]: a frame of those is late, not a restart. */
	uint64_t session;
	bool session_known;
	/* The incarnation new calls are addressed to: session while it is
	 * known and the peer neither DOWN nor LEFT, else 0 (no session is 0),
	 * when dp_start_call() parks or refuses them.  One load on the path
	 * of every call instead of two (dp_peer_addressable()). */
	uint64_t tx_session;
	unsigned int nb_retired;
	uint64_t retired[DP_RETIRED];
	/* Liveness, poller only but for state, which any thread reads
	 * (relaxed: a snapshot, nothing is published through it). */
	uint64_t last_rx_tsc;	   /* last frame from the peer */
	uint64_t last_ping_tsc;	   /* last keep-alive sent to it */
	uint64_t nudge_tsc;	   /* last PONG for a request to another incarnation */
	uint64_t silent_since_tsc; /* UNKNOWN peer: since calls wait on it */
	_Atomic uint8_t state;	   /* enum dprpc_peer_state */
	/* LEFT: the incarnation that left (dp_peer_left()); its frames do
	 * not make it UP again, a new incarnation's do.  Poller only. */
	uint64_t left_session;
	/* With a world key (proof.c), poller only: when an incarnation of
	 * the peer was last challenged; and the replay window of the current
	 * incarnation's frames: the highest seq seen and the 63 below it, a
	 * bit each (rw_bits, the highest at bit 0). */
	uint64_t chal_tsc;
	uint64_t rw_session, rw_top, rw_bits;
};

/*
 * The life of a request object (reply.c, dispatch.c), in struct
 * dprpc_request.state: the phase in the low two bits, and above them the
 * number of handler runs (dp_run_handler()) executing it right now, on any
 * threads.
 *   LIVE      taken from req_pool, not answered: queued to a handler
 *             lcore, run by a handler, or deferred (held, no run).
 *   REPLYING  one thread claimed the answer (LIVE -> REPLYING, a CAS) and
 *             builds it; back to LIVE if that fails (-ENOBUFS, -EMSGSIZE).
 *   DONE      answered, or released unanswered (dp_request_free()); the
 *             object goes back to req_pool as soon as no run holds it:
 *             freed by whoever leaves the count at DONE with no run.
 *   FREE      back in req_pool; a late reply still finds it so until
 *             dp_req_new() hands the object out again.
 * A reply on anything but LIVE is refused with -EALREADY and counted.
 */
#define DP_REQ_LIVE	0u
#define DP_REQ_REPLYING 1u
#define DP_REQ_DONE	2u
#define DP_REQ_FREE	3u
#define DP_REQ_PHASE	3u /* mask of the phase */
#define DP_REQ_RUN	4u /* one handler run */

/* Bits of struct dprpc_request.cancelled. */
#define DP_REQ_CANCELLED 1u
#define DP_REQ_STARTED	 2u

/* A response dprpc_rpc_sync() could not copy out (-EMSGSIZE), kept for the
 * thread that called until dprpc_rpc_sync_take() or destroy (call.c). */
struct dp_sync_kept {
	struct dp_sync_kept *next;
	uint64_t thread;	  /* the caller's dp_thread_id() (call.c) */
	struct dprpc_future *fut; /* DONE; the caller's reference */
};

struct dprpc_request {
	struct dp_rpc *rpc;
	_Atomic uint32_t state; /* phase | runs * DP_REQ_RUN, see above */
	struct rte_mbuf *m;	/* the request frame; payload points into it */
	const uint8_t *payload;
	uint32_t len;
	uint16_t src;
	uint16_t slot;
	uint32_t req_num;
	uint32_t handler_id;  /* the id the caller called: echoed in the reply */
	uint64_t src_session; /* the caller's incarnation: the reply's dst_session */
	const struct dp_handler *h;
	/* Set by an extension (dp_req_set_hook(), dp_req_set_input());
	 * NULL/0 otherwise. */
	const struct dp_req_hook *hook;
	void *hook_arg[2];
	const void *in_val;
	uint32_t in_len;
	struct dp_rxmsg *rx; /* a reassembled request: owns the payload */
	struct dp_txmsg *tx; /* a multi-frame request to self: owns the payload */
	/* The caller's deadline on this agent's TSC: its budget (dp_wire.h)
	 * added to the poll's TSC when the request was taken; 0: none.
	 * Written by dp_req_new() (the poller) before the request is handed
	 * over, read by whoever holds it. */
	uint64_t deadline_tsc;
	/* DP_REQ_CANCELLED: the caller cancelled the call (a CANCEL frame),
	 * or was declared down or restarted; set by the poller, read by
	 * whoever holds the request (relaxed: a hint, nothing is published
	 * through it).  DP_REQ_STARTED: its handler ran or runs; set by the
	 * thread that runs it, on a handler lcore only if CANCELLED is not
	 * set (a CAS, dp_req_begin()), so that a CANCEL that finds it clear
	 * knows the request never runs (dp_srv_cancel()). */
	_Atomic uint8_t cancelled;
	/* The poll's TSC when the request was taken (dp_req_new()): its
	 * response tells the caller how long it was held. */
	uint64_t rx_tsc;
	/* The retry-after hint of the library's -EBUSY answer (encoded as a
	 * budget, dp_wire.h), 0 otherwise. */
	uint16_t retry_hint;
	/* Server streaming (dp_stream.h), set by dp_req_new(): the caller
	 * takes a stream (DP_REQ_STREAM), with its window in frames
	 * (st_window) of which this agent allows st_weff (at most its
	 * credits).  st_next: the next frame's sequence number, the sending
	 * thread's (one at a time, dprpc_stream_send()).  st_limit: the first
	 * sequence number the caller lets us send (what it consumed plus
	 * st_window), written by the poller from the caller's
	 * acknowledgements and read by the sending thread (relaxed: a bound
	 * only, nothing is published through it). */
	bool stream;
	uint16_t st_window, st_weff;
	uint32_t st_next;
	_Atomic uint32_t st_limit;
};

struct dp_rpc {
	struct dp_base b; /* first: the rpc layer is its base too */

	/* Handler registry: open addressing, power-of-two size, never
	 * shrinks; writers serialised by reg_lock, readers lock-free. */
	pthread_mutex_t reg_lock;
	unsigned int nb_handlers, max_handlers, handler_mask;
	struct dp_handler *handlers;

	unsigned int nb_hl, hl_next;
	/* conf.serve.handler_queue_max and conf.serve.peer_requests_max, defaults
	 * applied: requests queued to one handler lcore, and requests of one
	 * caller held at once (queued, running or deferred). */
	unsigned int hl_queue_max, peer_req_max;
	/* The inline backlog's bound (conf.serve.inline_wait_max_us, the backlog
	 * itself: struct dp_base) in TSC cycles (UINT64_MAX: none). */
	uint64_t inline_max_tsc;
	/* conf.serve.queue_delay_max_us in TSC cycles, 0: off (dp_pool_slow()). */
	uint64_t queue_delay_max_tsc;
	/* conf.serve.service_time_us in TSC cycles, 0: none declared
	 * (dp_hl_service()). */
	uint64_t service_declared_tsc;
	struct dp_hlcore hl[DPRPC_MAX_HANDLER_LCORES];

	/* A call's future was cancelled (dp_client_cancel_kick(), any
	 * thread; exchanged by the poller, which then frees its slot and
	 * sends the CANCEL in that poll, dp_client_cancels()). */
	atomic_bool cancel_kick;

	struct dp_peer *peers;
	unsigned int max_outstanding;
	/* The timeout of calls given DPRPC_TIMEOUT_DEFAULT, in us (0: none):
	 * conf.calls.timeout_us, stored at creation before the agent is
	 * shared, then by dprpc_rpc_timeout_set() on any thread.  Every
	 * access is relaxed: a call reads it once, when it starts, and
	 * nothing else is published through it. */
	_Atomic uint64_t default_timeout_us;
	uint32_t max_msg; /* conf.calls.max_msg_size */
	/* The server's budgets (conf.budgets.kept_mbufs_max and the rest, defaults
	 * applied): mbufs kept as responses, bytes of messages held. */
	unsigned int kept_max, kept_peer_max;
	uint64_t msg_max, msg_peer_max;
	uint32_t credits; /* conf.calls.credits */
	/* conf.calls.retransmit_us: the first resend timeout towards a peer not
	 * measured yet (0: no retransmission), and 64 times it, the most a
	 * timeout grows to. */
	uint64_t rto_tsc, rto_max_tsc;
	uint64_t keepalive_tsc, peer_timeout_tsc; /* 0: off */
	dprpc_peer_event_fn_t peer_event;
	void *peer_event_arg;

	/* Responses kept by rpc_sync for their threads, at most one per
	 * thread (call.c); the list under sync_kept_lock: the slow path of a
	 * response longer than the caller's buffer only. */
	pthread_mutex_t sync_kept_lock;
	struct dp_sync_kept *sync_kept;

	/* Before this TSC a worker never heard from is not declared down
	 * (0: none): the end of the rendezvous window (rendezvous.c,
	 * dp_rdv_extend()); written by the thread that creates the agent or
	 * waits for its world, read by the poller (relaxed: a time, nothing
	 * is published through it).  The threads waiting for the world:
	 * struct dp_base's startup_waiters. */
	_Atomic uint64_t down_after_tsc;
};

/* The agent @a seen as its rpc layer, which it begins with: a cast, no
 * load. */
static inline struct dp_rpc *
dp_rpc_of_mut(struct dprpc_agent *a)
{
	return (struct dp_rpc *)(void *)a;
}

static inline const struct dp_rpc *
dp_rpc_of_const(const struct dprpc_agent *a)
{
	return (const struct dp_rpc *)(const void *)a;
}

#define dp_rpc_of(a) \
	_Generic((a), const struct dprpc_agent *: dp_rpc_of_const, struct dprpc_agent *: dp_rpc_of_mut)(a)

_Static_assert(offsetof(struct dp_rpc, b) == 0, "the rpc layer begins with its base");

/* peer.c: the state towards peer @p, allocated (the world's creation, or
 * the poller as @p joins): 0 or -ENOMEM. */
int dp_peer_init(struct dp_rpc *a, unsigned int p);

/* The handler registered under wire id @id, NULL if none (handler.c).
 * Any thread, no lock.  Inline: the poller looks up every request's
 * handler (dp_req_new()). */
static inline const struct dp_handler *
dp_handler_find(const struct dp_rpc *a, uint32_t id)
{
	unsigned int i, b;

	/* 0 marks a free bucket: no handler has it, though a frame may
	 * carry it. */
	if (id == 0)
		return NULL;
	for (i = 0, b = id & a->handler_mask; i <= a->handler_mask;
		i++, b = (b + 1) & a->handler_mask) {
		/* Acquire: pairs with the release store of id in
		 * dprpc_register(), so fn, arg and mode are visible. */
		uint32_t cur = atomic_load_explicit(&a->handlers[b].id, memory_order_acquire);

		if (cur == id)
			return &a->handlers[b];
		if (cur == 0)
			return NULL;
	}
	return NULL;
}

/* Request objects of @peer's calls held here (struct dp_peer), poller only. */
static inline unsigned int
dp_srv_live(struct dp_peer *peer)
{
	/* Relaxed: a bound only (struct dp_peer). */
	return peer->srv_taken - peer->srv_freed_here -
	       atomic_load_explicit(&peer->srv_freed_away, memory_order_relaxed);
}

/* peer.c: peers[] for the world's capacity, the map's workers' entries
 * allocated (0 or -ENOMEM); and freed. */
int dp_peers_init(struct dp_rpc *a);
void dp_peers_free(struct dp_rpc *a);
/* call.c: release the responses kept for dprpc_rpc_sync_take() (the
 * agent's teardown, before its pools go). */
void dp_sync_kept_free(struct dp_rpc *a);

/* Tell the application of a peer's event (conf.liveness.peer_event): on the poller. */
static inline void
dp_peer_tell(struct dp_rpc *a, unsigned int p, enum dprpc_peer_event ev)
{
	if (a->peer_event != NULL)
		a->peer_event(dp_agent_handle(&a->b), p, ev, a->peer_event_arg);
}

#endif /* DP_RPC_H */
