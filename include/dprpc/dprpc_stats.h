/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * An agent's counters, drop reasons and resource counts.
 */
#ifndef DPRPC_STATS_H
#define DPRPC_STATS_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An agent: opaque (dprpc_agent.h). */
struct dprpc_agent;

/** Why a received frame was dropped. */
enum dprpc_drop_reason {
	DPRPC_DROP_TRUNCATED = 0, /**< shorter than its headers or lengths say */
	DPRPC_DROP_NOT_DPRPC,	  /**< not IPv4/UDP to our address and port */
	DPRPC_DROP_BAD_CSUM,	  /**< IPv4 header checksum wrong */
	DPRPC_DROP_BAD_MAGIC,	  /**< dprpc magic wrong */
	DPRPC_DROP_BAD_VERSION,	  /**< unsupported dprpc version */
	DPRPC_DROP_BAD_TYPE,	  /**< unknown frame type or flags */
	DPRPC_DROP_BAD_LENGTH,	  /**< lengths inconsistent */
	DPRPC_DROP_FOREIGN,	  /**< source is not the world's worker it claims,
				       or destination is not this worker */
	DPRPC_DROP_UNSUPPORTED,	  /**< chained mbuf larger than one mbuf can hold */
	DPRPC_DROP_STALE,	  /**< response to no pending call (late, duplicate),
				       or an answer to a CANCEL already answered */
	DPRPC_DROP_NO_REQUEST,	  /**< no request object left for an incoming call */
	DPRPC_DROP_HANDLER_FULL,  /**< handler pool ring full */
	DPRPC_DROP_DUPLICATE,	  /**< a request whose handler still runs, or an
				       older request than the slot's last */
	DPRPC_DROP_OLD_SESSION,	  /**< from an earlier incarnation of its sender */
	DPRPC_DROP_TOO_BIG,	  /**< a message longer than max_msg_size */
	DPRPC_DROP_NO_MEMORY,	  /**< no memory to reassemble a message, or to
				       keep state for a slot beyond those the
				       peer used before (the sender resends it
				       later) */
	/** Addressed to another incarnation of this worker: a previous one,
	 * or none (its sender never heard from it).  A request so addressed
	 * is never run (docs/reliability.md). */
	DPRPC_DROP_WRONG_INCARNATION,
	DPRPC_DROP_OVER_BUDGET, /**< a request not run because its caller (or
				       all callers) hold their message budget
				       (dprpc_agent_conf.budgets.msg_bytes_max): answered
				       -ENOBUFS */
	/** Sent to another station's MAC: its Ethernet destination neither
	 * this agent's (its world map's, or its port's) nor broadcast.  A promiscuous port
	 * on a shared segment sees them. */
	DPRPC_DROP_OTHER_MAC,
	/** UDP checksum present (not 0) and wrong: the frame was damaged
	 * on its way (a router recomputes the Ethernet FCS, not this). */
	DPRPC_DROP_BAD_UDP_CSUM,
	/** Of another world: its world id is not this agent's
	 * (dprpc_agent_conf.auth.world_id, or the one its key gives). */
	DPRPC_DROP_OTHER_WORLD,
	/** Its tag is not the one the world's key gives it: forged, or
	 * changed on its way (docs/security.md).  Dropped before anything
	 * of the agent's state is touched. */
	DPRPC_DROP_AUTH_FAILED,
	/** A frame already received, or older than the 64 last of its
	 * sender's incarnation (the replay window; with a key only). */
	DPRPC_DROP_REPLAYED,
	/** From an incarnation of its sender not proven yet (with a key, a
	 * new one echoes a challenge of this agent's first: docs/security.md);
	 * its sender sends again. */
	DPRPC_DROP_UNCONFIRMED,
	DPRPC_DROP_MAX
};

/** A short name for a drop reason, e.g. "truncated" ("unknown" for a value
 * out of range); a static string.  Thread context: any. */
const char *dprpc_drop_reason_str(enum dprpc_drop_reason reason);

/**
 * Counters of an agent.  Each is written by the polling thread (except
 * reply_nombuf and the handler contract's, written by whichever thread
 * sees the event) and may be read at any time; a snapshot is not atomic
 * as a whole.
 */
struct dprpc_agent_stats {
	uint64_t rx_frames;	   /**< frames received from the port */
	uint64_t tx_frames;	   /**< frames handed to the port */
	uint64_t tx_retries;	   /**< tx bursts that left frames for later */
	uint64_t tx_dropped;	   /**< frames dropped because the port pushed back
				        and the tx ring was full as well, or
				        because the memif link to their
				        destination was not up (docs/worlds.md) */
	uint64_t tx_discarded;	   /**< frames queued for a peer and not sent: their
				        call failed (the peer went down or
				        restarted) or the peer's incarnation they
				        were addressed to is gone */
	uint64_t calls_sent;	   /**< calls started: given a session slot and sent
				        (remote) or looped back (self) */
	uint64_t calls_ok;	   /**< calls completed with a value */
	uint64_t calls_failed;	   /**< calls failed (remote error, timeout, ...) */
	uint64_t calls_timed_out;  /**< of which timed out */
	uint64_t requests_handled; /**< incoming requests given to a handler */
	uint64_t requests_unknown; /**< incoming requests for no handler */
	uint64_t reply_nombuf;	   /**< replies (errors) lost for want of an mbuf */
	uint64_t requests_resent;  /**< duplicate requests answered again with the
				        stored response, the handler not run */
	uint64_t retransmits;	   /**< requests sent again for want of a response */
	uint64_t keepalives;	   /**< pings sent: keep-alives, to learn the
				        incarnation of a peer calls wait for, and
				        the rendezvous's (dprpc_world_wait()) */
	uint64_t peers_down;	   /**< times a peer was declared down */
	uint64_t peers_restarted;  /**< times a peer was seen to have restarted */
	uint64_t peers_left;	   /**< times a peer left the world gracefully
				        (dprpc_world_leave()) */
	uint64_t links_closed;	   /**< memif links whose worker said it closes
				        them (its agent destroyed without a
				        leave): answered, polled no more */
	uint64_t msgs_sent;	   /**< multi-frame messages started (requests and
				        responses) */
	uint64_t msgs_received;	   /**< multi-frame messages reassembled whole */
	uint64_t frames_resent;	   /**< frames of multi-frame messages sent again
				        (lost, or their acknowledgement was) */
	uint64_t acks_sent;	   /**< acknowledgements (credit returns) sent */
	uint64_t credits_cut;	   /**< acknowledgements granting a reduced window
				        because this agent's mbuf pool ran low */
	uint64_t keeps_refused;	   /**< responses sent but not kept for resends:
				        the keep budget (kept_mbufs_max,
				        kept_mbufs_peer_max) was full or the
				        caller down; a resend is answered
				        -ENODATA */
	uint64_t reclaimed_mbufs;  /**< kept responses freed because their caller
				        was declared down */
	uint64_t reclaimed_msgs;   /**< multi-frame messages freed because their
				        caller was declared down: requests half
				        received, responses not acknowledged */
	uint64_t dropped;	   /**< sum of drops[] */
	uint64_t drops[DPRPC_DROP_MAX];
	/** Injected faults (dprpc_fault_conf), transmit and receive together. */
	uint64_t fault_dropped, fault_duplicated, fault_reordered, fault_delayed;
	/** The handler contract broken (dprpc_handler_fn_t in dprpc_handler.h), once
	 * per event; the caller got exactly one answer each time. */
	uint64_t reply_again;		    /**< dprpc_reply() or dprpc_reply_error() on a
					         request already answered: -EALREADY,
					         nothing sent */
	uint64_t handler_unanswered;	    /**< handlers that returned 0 without replying
					         or deferring: the caller got -EPROTO */
	uint64_t handler_error_after_reply; /**< handlers that returned a negative errno
					         after replying: nothing more sent */
	uint64_t handler_bad_return;	    /**< handlers that returned a positive value
					         other than DPRPC_DEFERRED: the caller
					         got -EPROTO, unless they had replied */
	uint64_t handler_misuse;	    /**< sum of the four above */
	/** Serving under load (docs/serving.md). */
	uint64_t requests_expired;   /**< requests not run: their caller's deadline
				          passed while they waited (queued to a
				          handler lcore, reassembled, or held for an
				          RRef value); the caller got -ETIME */
	uint64_t requests_cancelled; /**< requests not run: their caller cancelled
				          them, or was declared down or restarted,
				          while they were queued or half received */
	uint64_t cancels_received;   /**< requests of this agent's callers
				          cancelled (queued, running, deferred, half
				          received, or not received yet), each once
				          however often its CANCEL came */
	uint64_t calls_cancelled;    /**< this agent's calls cancelled by
				          dprpc_future_cancel() (in calls_failed) */
	uint64_t rejected_pool;	     /**< requests answered -EBUSY: their handler
				          lcore's queue was full (handler_queue_max) */
	uint64_t rejected_peer;	     /**< requests answered -EBUSY: their caller held
				          peer_requests_max requests already */
	uint64_t rejected_requests;  /**< requests answered -EBUSY: no request object
				          was free (max_requests) */
	uint64_t rejected_inline;    /**< requests answered -EBUSY: their inline
				          handler's backlog was older than
				          inline_wait_max_us */
	uint64_t rejected_overload;  /**< sum of the six: the four above,
				          rejected_handler and rejected_delay
				          (below) */
	uint64_t queue_depth;	     /**< gauge: requests queued to the handler
				          lcores now, not started */
	uint64_t requests_held;	     /**< gauge: request objects in use now (queued,
				          running or deferred) */
	/* Server streaming (dprpc_stream.h, docs/serving.md). */
	uint64_t stream_chunks_sent;	 /**< chunks dprpc_stream_send() handed on */
	uint64_t stream_window_full;	 /**< dprpc_stream_send() calls refused
					      -EAGAIN: the caller's window was full */
	uint64_t stream_frames_resent;	 /**< stream frames sent again (a NACK or a
					      probe from the caller) */
	uint64_t stream_chunks_received; /**< chunks of this agent's streams
					      delivered in order (callback or
					      iterator queue) */
	uint64_t rejected_handler;	 /**< requests a handler answered -EBUSY
					      with dprpc_reply_busy() (in
					      rejected_overload) */
	uint64_t rejected_delay;	 /**< requests answered -EBUSY: the work
					      queued to their handler lcore was
					      estimated beyond queue_delay_max_us */
	uint64_t cancels_resent;	 /**< CANCELs of this agent's calls sent
					      again: unanswered after a resend
					      timeout (docs/serving.md) */
	uint64_t holds_sent;		 /**< HELD answers sent: a request queued
					      behind work, or a copy of one held
					      (docs/reliability.md) */
	uint64_t holds_received;	 /**< HELD answers to this agent's calls
					      (their resends put off; late ones,
					      for calls ended since, included) */
	/* The host on the default port (docs/wire.md, "IPv4 as a host"). */
	uint64_t arp_answered;	/**< ARP requests for this agent's IPv4
				     address answered */
	uint64_t echo_answered; /**< ICMP echo requests to it answered (ping) */
	/* Its peers found by ARP (docs/wire.md, "IPv4 as a host"). */
	uint64_t arp_sent;	 /**< ARP requests sent: for a next hop's MAC,
				      refreshes, gratuitous ones */
	uint64_t arp_resolved;	 /**< next hops' MACs learned or changed */
	uint64_t arp_unresolved; /**< frames dropped for want of their next
				      hop's MAC (their calls resend) */
};

/**
 * Read the counters.
 * @return 0, or -EINVAL on NULL.
 * Thread context: any thread.  Memory order: relaxed per counter.
 */
int dprpc_agent_stats_get(const struct dprpc_agent *agent, struct dprpc_agent_stats *stats);

/**
 * Print the agent's state and counters for debugging.  Prints nothing when
 * @p agent or @p f is NULL.
 * Thread context: any thread.
 */
void dprpc_agent_dump(const struct dprpc_agent *agent, FILE *f);

/**
 * Resource counts, for leak checks in tests and tools: objects currently
 * taken from the agent's pools.
 */
struct dprpc_agent_usage {
	unsigned int futures;	 /**< futures not yet returned to the pool */
	unsigned int requests;	 /**< incoming request objects in use */
	unsigned int mbufs;	 /**< mbufs of the agent-created pool in use
				      (0 if the pool is the application's) */
	unsigned int calls;	 /**< calls in flight, all peers */
	unsigned int messages;	 /**< multi-frame messages being sent (until
				      acknowledged whole) or reassembled */
	unsigned int kept_mbufs; /**< mbufs held as kept responses, all callers
				      (at most kept_mbufs_max) */
	uint64_t msg_bytes;	 /**< bytes of callers' multi-frame messages held
				      (requests being reassembled, responses
				      not yet acknowledged whole; see
				      msg_bytes_max) */
};

/**
 * Read the resource counts.
 * @return 0, or -EINVAL.
 * Thread context: any thread; exact only when the agent is quiescent.
 */
int dprpc_agent_usage_get(const struct dprpc_agent *agent, struct dprpc_agent_usage *usage);

#ifdef __cplusplus
}
#endif

#endif /* DPRPC_STATS_H */
