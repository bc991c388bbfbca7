/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The base layer of an agent (struct dp_base): its identity and world map,
 * its pools and rings, the poll flag and the poller's time, counters,
 * fault injection, extensions' states, and its ports (struct dp_ports).
 * Every layer above embeds the one below as its first member, the agent
 * last (dp_agent.h): a function of this layer takes the agent as its base,
 * at the same address: a cast, no load.
 * Never installed.
 *
 * One thread at a time polls an agent (the holder of agent->polling): it
 * alone touches the port's queues, tx_buf and the slots.  Any thread hands
 * calls and replies to it through tx_ring; handler lcores take requests from
 * their own rings.  Every mbuf has one owner at a time, passed on with it:
 * the ledger of who owns and frees each one is docs/mbuf-ownership.md.
 */
#ifndef DP_BASE_H
#define DP_BASE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include <dprpc/dprpc_agent.h>
#include <dprpc/dprpc_future.h>
#include <dprpc/dprpc_conf.h>
#include <dprpc/dprpc_stats.h>

#include "dp_arp.h"
#include "dp_stamp.h"
#include "dp_ext.h"
#include "dp_fault.h"
#include "dp_log.h"
#include "dp_port.h"
#include "dp_rcu.h"
#include "dp_req_pool.h"
#include "dp_wire.h"
#include "dprpc_atomic.h"

#define DP_RX_BURST  32
#define DP_RX_MIN    4 /* frames received per poll even with tx_buf full */
#define DP_RING_SIZE 4096
/* Staged frames are handed to the port as soon as this many are waiting,
 * not only at the end of a poll: a burst of replies (or of calls issued
 * from completion callbacks) then overlaps with the peer's work instead of
 * alternating with it.  See perf/RESULTS.md. */
#define DP_TX_FLUSH_AT 4
/* A poller whose timer has not ticked for this long is stalled: threads
 * waiting on the agent's futures fail the calls this long past their
 * deadline themselves (dp_expire_stalled(), progress.c; a call's expiry,
 * fut_set_expiry()).  Five timer periods. */
#define DP_STALL_US 500

/* Counters.  All but reply_nombuf and the handler contract's are written
 * by the poller alone (dp_count: a relaxed load and store, no locked
 * instruction) and read by anyone (relaxed). */
struct dp_stats {
	_Atomic uint64_t rx_frames, tx_frames, tx_retries, tx_dropped, tx_discarded;
	_Atomic uint64_t calls_sent, calls_ok, calls_failed, calls_timed_out;
	_Atomic uint64_t requests_handled, requests_unknown, requests_resent, retransmits;
	_Atomic uint64_t keepalives, peers_down, peers_restarted, peers_left, links_closed;
	_Atomic uint64_t msgs_sent, msgs_received, frames_resent, acks_sent, credits_cut;
	_Atomic uint64_t msgs_live; /* multi-frame messages held by slots */
	/* The server's holdings for all peers: gauges, up and down (struct
	 * dp_peer's srv_kept and srv_bytes summed), read back by the poller
	 * against the budgets. */
	_Atomic uint64_t kept_mbufs, msg_bytes;
	_Atomic uint64_t keeps_refused, reclaimed_mbufs, reclaimed_msgs;
	_Atomic uint64_t drops[DPRPC_DROP_MAX];
	_Atomic uint64_t reply_nombuf; /* any thread: dp_count_mt */
	/* Handler contract violations, any thread: dp_count_mt. */
	_Atomic uint64_t reply_again, handler_unanswered, handler_error_after_reply;
	_Atomic uint64_t handler_bad_return;
	/* Serving under load (docs/serving.md).  Written by the poller
	 * (dp_count) but requests_expired and requests_cancelled, which the
	 * handler lcores add to too (dp_count_mt). */
	_Atomic uint64_t requests_expired;	     /* not run: the deadline passed while queued */
	_Atomic uint64_t requests_cancelled;	     /* not run: cancelled while queued */
	_Atomic uint64_t cancels_received;	     /* CANCEL frames naming a request we hold */
	_Atomic uint64_t calls_cancelled;	     /* calls the application cancelled */
	_Atomic uint64_t cancels_resent;	     /* CANCELs sent again, unanswered */
	_Atomic uint64_t holds_sent, holds_received; /* HELD answers (poller) */
	_Atomic uint64_t arp_answered, echo_answered;		 /* dp_host_rx() (poller) */
	_Atomic uint64_t arp_sent, arp_resolved, arp_unresolved; /* arp.c (poller) */
	_Atomic uint64_t rejected_pool, rejected_peer, rejected_requests; /* -EBUSY answers */
	_Atomic uint64_t rejected_inline; /* -EBUSY: the inline backlog (poller) */
	/* -EBUSY from a handler, dprpc_reply_busy() (any thread: dp_count_mt) */
	_Atomic uint64_t rejected_handler;
	_Atomic uint64_t rejected_delay; /* -EBUSY: queue_delay_max_us (poller) */
	/* Server streaming (dp_stream.h): the first two written by the
	 * threads that send chunks (dp_count_mt), the others by the poller. */
	_Atomic uint64_t stream_chunks_sent, stream_window_full;
	_Atomic uint64_t stream_frames_resent, stream_chunks_received;
};

/* What staging does to a frame (dp_base.wire_out). */
#define DP_OUT_STAMP 1u /* world id, seq, tag: every port (stamp.c) */
#define DP_OUT_L2    2u /* UDP checksum, MACs by ARP: the default port */

struct dp_base {
	char name[DPRPC_NAME_MAX];
	uint16_t rank;
	uint64_t session; /* our incarnation, random (dp_new_session()) */
	unsigned int instance;
	/* The world.  Its size, world.n, grows as workers join (join.c):
	 * written by the poller alone (with release, after the new worker's
	 * entry, peer and port are set), read by other threads with acquire
	 * (dp_world_n()).  world_cap: conf.max_workers, the size of peers[]
	 * (never reallocated). */
	struct dp_world world;
	unsigned int world_cap;
	/* Ours: also world.addrs[rank] once in the world, but for a MAC taken
	 * from the port (the map's is zero: arp.c), which only this holds. */
	struct dp_addr self_addr;
	/* The IPv4 TTL of what we send (every peer's template); the default
	 * port's UDP checksums (enum dp_udp_csum_by); what staging does to a
	 * frame besides putting it in a tx_buf (DP_OUT_*: the stamp on every
	 * port, checksums and MACs on the default one). */
	uint8_t ttl;
	uint8_t udp_csum;
	uint8_t wire_out;
	struct dp_arp arp;
	struct dp_auth auth; /* the world id and key (stamp.c) */
	struct dp_rx_ctx rx_ctx;

	struct rte_mempool *mp;
	bool own_mp;
	struct dprpc_future_pool *fpool;
	/* Set at creation for the layers below the poll loop, which is the
	 * agent's: its progress hook (dp_progress()), handed as data to
	 * every call's future (fut_new_call()); and its poll (dprpc_poll()),
	 * run by a reply that finds tx_ring full when nobody polls
	 * (dp_submit(): a cold path). */
	int (*progress)(void *agent);
	int (*poll)(struct dprpc_agent *a, unsigned int budget);
	struct dp_req_pool rq; /* incoming requests (req_pool.c) */

	/* Submitted calls, off-thread replies: any thread enqueues, in RTS
	 * mode (a producer preempted mid-enqueue lets the others complete
	 * theirs; its frames and theirs show once it finishes), the poller
	 * dequeues (SC: its tail is exact, so RTS cannot make the ring look
	 * full, see DP_POOL_OPS).  rte_ring_enqueue() only: the _mp_ variant
	 * would run the classic algorithm on an RTS ring. */
	struct rte_ring *tx_ring;

	/* The inline backlog (poller only, dp_rx_behind(); its bound is the
	 * rpc layer's, inline_max_tsc): whether the last rx burst came back
	 * full (frames may be left in the port's queue); the thread (its
	 * dp_tls_poller's address) and its CPU time (TSC cycles) at the
	 * first of the current run of full bursts; the TSC the poller is
	 * behind since, its CPU time counted only; and the TSC cycles it has
	 * run inline handlers for since (dp_run_behind()). */
	bool rx_backlog;
	const void *rx_behind_thread;
	uint64_t rx_behind_cpu, rx_behind_tsc, rx_handler_tsc;
	/* now_tsc of the last poll that left frames unread (a full burst,
	 * dp_rx_behind()): a peer's frames may wait among them, so
	 * dp_liveness() does not judge silence on that poll. */
	uint64_t rx_full_tsc;
	bool io_launched;
	bool waiters_park; /* conf.lcores.waiters_park */
	atomic_bool stop;  /* tells the lcores to return; release/acquire */
	/* dp_refuse_calls(): the application's calls and requests are refused
	 * with ESHUTDOWN (relaxed both ways: only the flag matters). */
	atomic_bool refusing;

	/* The poll flag: exchanged to true with acquire by the thread that
	 * polls, stored false with release when it stops, so one poller's
	 * writes to poller-only state happen before the next one's reads. */
	atomic_bool polling;
	uint64_t timer_period_tsc, tsc_hz;
	/* Microseconds per TSC tick in 32.32 fixed point, rounded down
	 * (dp_tsc_to_us_floor()): no division on the path of a call. */
	uint64_t us_per_tsc_q32;
	/* The TSC of the poller's last timer tick, written by the poller and
	 * read by any thread (relaxed: a hint, see dp_expire_stalled()); and
	 * how old it may be before waiters fire the timeouts themselves. */
	_Atomic uint64_t tick_tsc;
	uint64_t stall_tsc;

	struct dp_fault ftx, frx; /* fault injection, poller only */

	uint64_t now_tsc; /* TSC at the start of the current poll */
	unsigned int idle_pause, idle_yield, idle_sleep, idle_sleep_us;

	struct dp_stats st;

	/* Extensions' states, in the order of dp_extensions[] (dp_ext.h). */
	void *ext[DP_EXT_MAX];

	/* Threads in dprpc_world_wait(); while there are any, the poller
	 * pings every worker not heard from yet (rendezvous.c), and the idle
	 * back-off sleeps sooner (dp_idle_sleeps()).  Relaxed: a hint, the
	 * wait itself reads the peers' states. */
	atomic_uint startup_waiters;

	struct dp_ports port; /* the ports (dp_port.h) */
};

/* The agent @a seen as its base, which it begins with (and back, the
 * public handle of the agent whose base is @b): a cast, no load. */
static inline struct dp_base *
dp_base_of_mut(struct dprpc_agent *a)
{
	return (struct dp_base *)(void *)a;
}

static inline const struct dp_base *
dp_base_of_const(const struct dprpc_agent *a)
{
	return (const struct dp_base *)(const void *)a;
}

#define dp_base_of(a) \
	_Generic((a), const struct dprpc_agent *: dp_base_of_const, struct dprpc_agent *: dp_base_of_mut)(a)

static inline struct dprpc_agent *
dp_agent_handle(struct dp_base *b)
{
	return (struct dprpc_agent *)(void *)b;
}

/* The world's size, on any thread (struct dp_base): the entries,
 * peers and ports of the ranks below it are set. */
static inline unsigned int
dp_world_n(const struct dp_base *a)
{
	return __atomic_load_n(&a->world.n, __ATOMIC_ACQUIRE);
}

/* The agent whose poll loop runs on this thread, if any. */
/* initial-exec: a plain %fs-relative access, no __tls_get_addr call per
 * poll (the library is linked at start-up, not dlopen'ed late). */
extern __thread struct dp_base *dp_tls_poller __attribute__((tls_model("initial-exec")));

/* Become the poller.  Acquire: pairs with the release store in
 * dp_poll_unlock() by the previous poller, so its writes to slots, tx_buf
 * and the queues are visible to us.  Inline: no call per poll. */
static inline bool
dp_poll_trylock(struct dp_base *a)
{
	if (atomic_exchange_explicit(&a->polling, true, memory_order_acquire))
		return false;
	dp_tls_poller = a;
	return true;
}

static inline void
dp_poll_unlock(struct dp_base *a)
{
	dp_rcu_poll_end();
	dp_tls_poller = NULL;
	/* Release: pairs with the acquire exchange in dp_poll_trylock(). */
	atomic_store_explicit(&a->polling, false, memory_order_release);
}

/* ext.c: run every extension's op (dp_ext.h) on @a, in the order of
 * dp_extensions[] (free: the reverse).  init stops at the first that fails
 * and returns its error (free releases what the others made); held returns
 * the sum of the requests the extensions keep; peer_event tells those that
 * have the op what happened to peer @rank, on the poller.  The others run
 * on the thread that creates or destroys the agent. */
int dp_ext_init_all(struct dp_base *a, const struct dprpc_agent_conf *c);
void dp_ext_closing_all(struct dp_base *a);
unsigned int dp_ext_held_all(struct dp_base *a);
void dp_ext_quiesce_all(struct dp_base *a);
void dp_ext_free_all(struct dp_base *a);
void dp_ext_peer_event(struct dp_base *a, unsigned int rank, enum dp_peer_event ev);

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

/* Count a frame dropped for @why and free it.  The poller. */
static inline void
dp_drop_frame(struct dp_base *a, struct rte_mbuf *m, enum dprpc_drop_reason why)
{
	dp_count(&a->st.drops[why], 1);
	rte_pktmbuf_free(m);
}

/* Incoming requests taken and not yet answered. */
static inline unsigned int
dp_requests_in_use(const struct dp_base *a)
{
	return dp_req_pool_in_use(&a->rq);
}

/* Once per call (its deadline): a 64-bit product divided by a constant (a
 * multiply) whenever it cannot overflow (under 2^30 us with a TSC under
 * 2^34 Hz); the 128-bit division, a libgcc call, only beyond.  Saturates
 * at UINT64_MAX, so a timeout meant as "for ever" does not wrap. */
static inline uint64_t
dp_us_to_tsc(const struct dp_base *a, uint64_t us)
{
	__uint128_t t;

	if (likely(us < (UINT64_C(1) << 30) && a->tsc_hz < (UINT64_C(1) << 34)))
		return us * a->tsc_hz / 1000000;
	t = (__uint128_t)us * a->tsc_hz / 1000000;
	return t > UINT64_MAX ? UINT64_MAX : (uint64_t)t;
}

/* The TSC deadline @us microseconds after @now, as struct dp_call_meta
 * keeps it: 0, no deadline, for @us 0 and for a deadline the TSC never
 * reaches (beyond UINT64_MAX: saturated to "none" rather than wrapped
 * into the past, where it would expire at once). */
static inline uint64_t
dp_deadline_tsc(const struct dp_base *a, uint64_t now, uint64_t us)
{
	uint64_t t;

	if (us == 0)
		return 0;
	t = dp_us_to_tsc(a, us);
	return t >= UINT64_MAX - now ? 0 : now + t;
}

/* Microseconds in @tsc cycles, rounded down: a 64-bit product below 2^44
 * cycles (hours), the 128-bit division beyond. */
static inline uint64_t
dp_tsc_to_us(const struct dp_base *a, uint64_t tsc)
{
	if (likely(tsc < (UINT64_C(1) << 44)))
		return tsc * 1000000 / a->tsc_hz;
	return (uint64_t)((__uint128_t)tsc * 1000000 / a->tsc_hz);
}

/* @tsc in microseconds, never rounded up (a deadline's time left: nobody
 * is told it has more time than it has), by a multiplication. */
static inline uint64_t
dp_tsc_to_us_floor(const struct dp_base *a, uint64_t tsc)
{
	return (uint64_t)(((__uint128_t)tsc * a->us_per_tsc_q32) >> 32);
}

static inline uint64_t
dp_tsc_to_ns(const struct dp_base *a, uint64_t tsc)
{
	return (uint64_t)((__uint128_t)tsc * 1000000000u / a->tsc_hz);
}

#endif /* DP_BASE_H */
