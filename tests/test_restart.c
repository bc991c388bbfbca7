/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * At most once across a restart (docs/reliability.md): two agents in one
 * process over a net_ring pair, both polled by the test thread alone (no io
 * lcore), so the test decides who runs when.  The server b is killed with
 * calls in flight (its parked requests vanish unanswered and the agent is
 * destroyed) and made again under the same name; a server that stops
 * polling is declared down with frames still queued for it; a first call
 * waits to hear the peer's incarnation; requests addressed to no
 * incarnation or to another one are never run.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <string.h>

#include <criterion/criterion.h>

#include <rte_cycles.h>
#include <rte_errno.h>

#include "dp_agent.h"
#include "dp_ext.h"
#include "dpt.h"

static struct dpt_ring_pair pair;
static struct rte_mempool *mp;
static struct dprpc_agent *a, *b;

/* Runs of the "job" handler per request id, over every incarnation of b. */
#define NB_IDS 2048
static atomic_uint runs[NB_IDS];
static atomic_uint runs_total;
/* Requests "job" parked unanswered, released when b is killed. */
static struct dprpc_request *parked[NB_IDS];
static unsigned int nb_parked;
static bool job_answers; /* reply at once instead of parking */
/* a's peer_event calls, by event. */
static atomic_uint a_events[DPRPC_PEER_EVENT_LEFT + 1];

/* Counts its run for the id its payload starts with, then parks the
 * request (or answers it). */
static int
h_job(struct dprpc_request *req, void *arg)
{
	size_t len;
	const uint8_t *p = dprpc_request_payload(req, &len);
	uint32_t id;

	(void)arg;
	if (len < sizeof(id))
		return -EINVAL;
	memcpy(&id, p, sizeof(id));
	if (id >= NB_IDS || nb_parked == NB_IDS)
		return -ERANGE;
	atomic_fetch_add(&runs[id], 1);
	atomic_fetch_add(&runs_total, 1);
	if (job_answers)
		return dprpc_reply(req, &id, sizeof(id));
	parked[nb_parked++] = req;
	return DPRPC_DEFERRED;
}

static void
on_peer(struct dprpc_agent *ag, unsigned int rank, enum dprpc_peer_event ev, void *arg)
{
	if (arg != NULL && ev <= DPRPC_PEER_EVENT_LEFT)
		atomic_fetch_add(&a_events[ev], 1);
}

static struct dprpc_agent *
make(const char *name, int port, unsigned int max_out, uint32_t keepalive_us,
	uint32_t peer_timeout_us, uint32_t retransmit_us, const struct dprpc_fault_conf *ftx)
{
	struct dprpc_agent_conf c;
	struct dprpc_agent *ag;

	dprpc_agent_conf_init(&c);
	c.name = name;
	c.world = DPT_WORLD2;
	c.port.id = port;
	c.port.mbuf_pool = mp;
	c.calls.max_outstanding = max_out;
	c.liveness.keepalive_us = keepalive_us;
	c.liveness.peer_timeout_us = peer_timeout_us;
	c.calls.retransmit_us = retransmit_us;
	/* No bound on the inline backlog: the test thread polls both agents,
	 * so b's poller CPU time counts a's polls too, and under ASan a ring
	 * of 1023 requests (or the 256 KiB messages' frames) stayed unread
	 * past the default 10 ms: b answered the rest -EBUSY ("b ran 895
	 * requests, 1023 were on the wire", "calls completed before the
	 * restart").  Overload is not what these tests are about. */
	c.serve.inline_wait_max_us = DPRPC_INLINE_WAIT_UNBOUNDED;
	if (ftx != NULL)
		c.faults.tx = *ftx;
	c.liveness.peer_event = on_peer;
	c.liveness.peer_event_arg = strcmp(name, "a") == 0 ? &a_events : NULL;
	ag = dprpc_agent_create(&c);
	cr_assert_not_null(ag, "agent %s: %s", name, rte_strerror(rte_errno));
	cr_assert_eq(dprpc_register(ag, "job", h_job, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(ag, "echo", dpt_echo, NULL, DPRPC_HANDLER_INLINE), 0);
	return ag;
}

/* b dies: the requests it holds vanish unanswered, then the agent. */
static void
kill_b(void)
{
	unsigned int i;

	for (i = 0; i < nb_parked; i++)
		dp_request_free(parked[i]);
	nb_parked = 0;
	cr_assert_eq(dprpc_agent_destroy(b), 0);
	b = NULL;
}

static void
pump(void)
{
	dprpc_poll(a, 32);
	if (b != NULL)
		dprpc_poll(b, 32);
}

/* Pump both until @f is done (bounded: about 20 s); its error code. */
static int
wait_pumping(struct dprpc_future *f)
{
	for (int i = 0; i < 200000 && !dprpc_future_is_done(f); i++) {
		pump();
		if (i > 1000)
			usleep(100);
	}
	cr_assert(dprpc_future_is_done(f), "call still pending");
	return dprpc_future_wait(f, 0);
}

/* Pump both for @us, and at least one round per 100 us of it: a stall of
 * this thread takes time, not the chances a fault has to show. */
static void
pump_for_us(uint64_t us)
{
	uint64_t end = rte_rdtsc() + us * rte_get_tsc_hz() / 1000000;

	for (uint64_t n = 0; rte_rdtsc() < end || n < us / 100; n++) {
		pump();
		usleep(50);
	}
}

static void
setup(void)
{
	cr_assert_geq(dpt_eal_init("restart"), 0);
	mp = dpt_pool_and_pair("dpt_restart", 8191, &pair);
	cr_assert_not_null(mp);
	memset(runs, 0, sizeof(runs));
	memset(a_events, 0, sizeof(a_events));
	atomic_store(&runs_total, 0);
	nb_parked = 0;
	job_answers = false;
}

static void
teardown(void)
{
	struct dprpc_agent_usage u;

	if (b != NULL)
		kill_b();
	if (a != NULL) {
		cr_assert_eq(dprpc_agent_usage_get(a, &u), 0);
		cr_expect_eq(u.futures, 0u, "futures leaked on a: %u", u.futures);
		cr_expect_eq(u.calls, 0u);
		cr_assert_eq(dprpc_agent_destroy(a), 0);
		a = NULL;
	}
	dpt_ring_drain(pair.ab);
	dpt_ring_drain(pair.ba);
	cr_expect_eq(
		rte_mempool_in_use_count(mp), 0u, "mbufs leaked: %u", rte_mempool_in_use_count(mp));
	dpt_eal_cleanup();
}

TestSuite(restart, .init = setup, .fini = teardown, .timeout = 120);

/*
 * 32 calls in flight, 8 of them 256 KiB messages of 185 frames, to a
 * server that is killed once it has run every small one and a few large
 * ones (others half received), and comes back under the same name.  a's
 * frames are delayed at random (its fault stage holds some across the
 * restart).  Every call fails (-ECONNRESET: the new incarnation never saw
 * it; -EHOSTDOWN allowed), no request runs twice over the two
 * incarnations, and the new one holds no message half received.  Before,
 * a's resends (and frames queued or held for the old incarnation) reached
 * the new one, which ran them again and began reassembling the large ones,
 * which nobody would ever finish.
 */
Test(restart, calls_in_flight_run_at_most_once_across_a_restart)
{
	enum { SMALL = 24, NB = 32, BIG = 256 * 1024 };
	struct dprpc_fault_conf ftx = {.seed = 9, .delay_ppm = 200000, .delay_us = 3000};
	static uint8_t big[NB - SMALL][BIG];
	struct dprpc_future *fs[NB], *f;
	struct dprpc_agent_stats sa, sb;
	struct dprpc_agent_usage u;
	unsigned int i, n_reset = 0;
	uint32_t id;
	int rc;

	a = make("a", pair.port_a, 64, 100 * 1000, 1000 * 1000, 1000, &ftx);
	b = make("b", pair.port_b, 64, 100 * 1000, 1000 * 1000, 1000, NULL);
	/* a knows b's first incarnation. */
	f = dprpc_rpc_async(a, "b", "echo", "hi", 2, 0);
	cr_assert_not_null(f);
	cr_assert_eq(wait_pumping(f), 0);
	dprpc_future_put(f);
	for (i = 0; i < NB; i++) {
		id = i;
		if (i < SMALL) {
			fs[i] = dprpc_rpc_async(a, "b", "job", &id, sizeof(id), 0);
		} else {
			memset(big[i - SMALL], (int)i, BIG);
			memcpy(big[i - SMALL], &id, sizeof(id));
			fs[i] = dprpc_rpc_async(a, "b", "job", big[i - SMALL], BIG, 0);
		}
		cr_assert_not_null(fs[i], "call %u: %s", i, rte_strerror(rte_errno));
	}
	/* b runs every small one and some large ones. */
	for (i = 0; i < 200000 && atomic_load(&runs_total) < SMALL + 2; i++)
		pump();
	cr_assert_geq(atomic_load(&runs_total), SMALL + 2u);
	cr_assert_eq(dprpc_agent_usage_get(a, &u), 0);
	cr_assert_eq(u.calls, (unsigned int)NB, "calls completed before the restart");
	kill_b();
	b = make("b", pair.port_b, 64, 100 * 1000, 1000 * 1000, 1000, NULL);
	for (i = 0; i < NB; i++) {
		rc = wait_pumping(fs[i]);
		cr_assert(rc == -ECONNRESET || rc == -EHOSTDOWN, "call %u ended with %d", i, rc);
		n_reset += rc == -ECONNRESET;
		dprpc_future_put(fs[i]);
	}
	/* Whatever a still held or resent reaches the new b meanwhile. */
	pump_for_us(50 * 1000);
	for (i = 0; i < NB; i++)
		cr_assert_leq(atomic_load(&runs[i]), 1u, "request %u ran %u times", i,
			atomic_load(&runs[i]));
	cr_assert_eq(dprpc_agent_usage_get(b, &u), 0);
	cr_assert_eq(u.messages, 0u, "the new b holds %u messages half received", u.messages);
	cr_assert_eq(dprpc_agent_stats_get(b, &sb), 0);
	cr_assert_eq(sb.requests_handled, 0u, "the new b ran requests of the old one");
	cr_assert_gt(sb.drops[DPRPC_DROP_WRONG_INCARNATION], 0u);
	cr_assert_eq(dprpc_agent_stats_get(a, &sa), 0);
	cr_assert_eq(sa.peers_restarted, 1u);
	cr_assert_eq(n_reset, (unsigned int)NB);
	/* a's application was told of the restart, once, and of nothing else. */
	cr_assert_eq(atomic_load(&a_events[DPRPC_PEER_EVENT_RESTARTED]), 1u);
	cr_assert_eq(atomic_load(&a_events[DPRPC_PEER_EVENT_DOWN]), 0u);
	cr_assert_eq(atomic_load(&a_events[DPRPC_PEER_EVENT_LEFT]), 0u);
	/* The new incarnation serves new calls, each once. */
	job_answers = true;
	id = NB;
	f = dprpc_rpc_async(a, "b", "job", &id, sizeof(id), 0);
	cr_assert_not_null(f);
	cr_assert_eq(wait_pumping(f), 0);
	dprpc_future_put(f);
	cr_assert_eq(atomic_load(&runs[NB]), 1u);
}

/*
 * b stops polling: its ring fills (1023 frames), the rest of 2000 calls
 * queue in a's tx_buf and tx_ring.  a declares b down: every call fails
 * -EHOSTDOWN, and the requests still queued go with their calls.  When b
 * polls again (the same incarnation) it runs exactly what was handed to
 * the port before (that cannot be recalled), nothing more.  Before, a sent
 * the queued requests once the ring had room, and b ran calls a had
 * reported failed.
 */
Test(restart, frames_queued_for_a_peer_declared_down_are_discarded)
{
	enum { N = 2000 };
	struct dprpc_future *fs[N], *f;
	struct dprpc_agent_stats sa, sb;
	unsigned int i, in_ring;
	uint32_t id;

	job_answers = true;
	/* No resends, no keep-alives: one frame per call, nothing else. */
	a = make("a", pair.port_a, N, 0, 50 * 1000, 0, NULL);
	b = make("b", pair.port_b, 64, 0, 0, 0, NULL);
	f = dprpc_rpc_async(a, "b", "echo", "hi", 2, 0);
	cr_assert_not_null(f);
	cr_assert_eq(wait_pumping(f), 0);
	dprpc_future_put(f);
	for (i = 0; i < N; i++) {
		id = i;
		fs[i] = dprpc_rpc_async(a, "b", "job", &id, sizeof(id), 0);
		cr_assert_not_null(fs[i], "call %u: %s", i, rte_strerror(rte_errno));
	}
	/* b is silent (not polled): a declares it down. */
	for (i = 0; i < N; i++) {
		cr_assert_eq(dprpc_future_wait(fs[i], 0), -EHOSTDOWN, "call %u", i);
		dprpc_future_put(fs[i]);
	}
	cr_assert_eq(dprpc_worker_state(a, 1), DPRPC_PEER_DOWN);
	in_ring = rte_ring_count(pair.ab);
	cr_assert_gt(in_ring, 0u);
	cr_assert_lt(in_ring, (unsigned int)N);
	/* b comes back; a polls on: b runs what is on the wire (bounded,
	 * ~20 s), then has the time to run more, were more sent. */
	for (i = 0; i < 200000 && atomic_load(&runs_total) < in_ring; i++) {
		pump();
		usleep(50);
	}
	pump_for_us(50 * 1000);
	cr_assert_eq(dprpc_agent_stats_get(b, &sb), 0);
	cr_assert_eq(atomic_load(&runs_total), in_ring,
		"b ran %u requests, %u were on the wire (refused as overload: %" PRIu64 ")",
		atomic_load(&runs_total), in_ring, sb.rejected_inline);
	for (i = 0; i < in_ring; i++)
		cr_assert_eq(atomic_load(&runs[i]), 1u, "request %u", i);
	cr_assert_eq(dprpc_agent_stats_get(a, &sa), 0);
	cr_assert_eq(sa.tx_discarded, N - in_ring);
	cr_assert_eq(sa.tx_dropped, 0u);
}

/* Take the one frame @r holds, check it is of @type, and return its
 * parsed header (the frame is freed; nobody else uses the ring now). */
static struct dp_wire_hdr
take_frame(struct rte_ring *r, uint8_t type)
{
	struct dp_wire_hdr h;
	struct rte_mbuf *m;

	cr_assert_eq(rte_ring_count(r), 1u, "%u frames on the wire", rte_ring_count(r));
	cr_assert_eq(rte_ring_dequeue(r, (void **)&m), 0);
	cr_assert_geq(m->data_len, DP_HDRS_LEN);
	memcpy(&h, dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *)), sizeof(h));
	rte_pktmbuf_free(m);
	cr_assert_eq(h.type, type, "frame of type %u, not %u", h.type, type);
	return h;
}

/* The header of the one frame @r holds, which stays on the wire. */
static struct dp_wire_hdr
peek_frame(struct rte_ring *r, uint8_t type)
{
	struct dp_wire_hdr h;
	struct rte_mbuf *m;

	cr_assert_eq(rte_ring_count(r), 1u, "%u frames on the wire", rte_ring_count(r));
	cr_assert_eq(rte_ring_dequeue(r, (void **)&m), 0);
	memcpy(&h, dp_frame_hdr(rte_pktmbuf_mtod(m, uint8_t *)), sizeof(h));
	cr_assert_eq(rte_ring_enqueue(r, m), 0);
	cr_assert_eq(h.type, type, "frame of type %u, not %u", h.type, type);
	return h;
}

/* A first call to a peer never heard from sends no request: it pings the
 * peer (again on its resend timer while nothing comes), and its request
 * goes, addressed to the incarnation that answered, once the PONG is in.
 * Later calls go at once. */
Test(restart, first_request_waits_for_the_peers_incarnation)
{
	struct dprpc_agent_stats sa;
	struct dprpc_future *f;
	struct dp_wire_hdr h;
	uint32_t id = 7;

	job_answers = true;
	a = make("a", pair.port_a, 64, 0, 0, 1000, NULL);
	b = make("b", pair.port_b, 64, 0, 0, 1000, NULL);
	f = dprpc_rpc_async(a, "b", "job", &id, sizeof(id), 0);
	cr_assert_not_null(f);
	/* On the wire: a PING naming no incarnation, no request. */
	h = take_frame(pair.ab, DP_FRAME_CONTROL);
	cr_assert_eq(rte_be_to_cpu_32(h.handler_id), (uint32_t)DP_CTRL_PING);
	cr_assert_eq(h.dst_session, 0u);
	cr_assert_eq(dprpc_agent_stats_get(a, &sa), 0);
	cr_assert_eq(sa.calls_sent, 1u);
	cr_assert_eq(sa.keepalives, 1u);
	/* That one was lost (taken off the wire): a's resend timer asks
	 * again, still without the request. */
	for (int i = 0; i < 1000000 && rte_ring_count(pair.ab) == 0; i++)
		dprpc_poll(a, 32);
	h = peek_frame(pair.ab, DP_FRAME_CONTROL);
	cr_assert_eq(rte_be_to_cpu_32(h.handler_id), (uint32_t)DP_CTRL_PING);
	/* b answers with its session; a's request goes, addressed to it. */
	dprpc_poll(b, 32);
	h = peek_frame(pair.ba, DP_FRAME_CONTROL);
	cr_assert_eq(rte_be_to_cpu_32(h.handler_id), (uint32_t)DP_CTRL_PONG);
	cr_assert_eq(atomic_load(&runs[7]), 0u);
	dprpc_poll(a, 32);
	h = peek_frame(pair.ab, DP_FRAME_REQUEST);
	cr_assert_eq(rte_be_to_cpu_64(h.dst_session), dp_base_of(b)->session);
	cr_assert_eq(rte_be_to_cpu_64(h.session), dp_base_of(a)->session);
	cr_assert_eq(wait_pumping(f), 0);
	dprpc_future_put(f);
	cr_assert_eq(atomic_load(&runs[7]), 1u);
	/* A second call goes at once, no PING. */
	id = 8;
	f = dprpc_rpc_async(a, "b", "job", &id, sizeof(id), 0);
	cr_assert_not_null(f);
	h = peek_frame(pair.ab, DP_FRAME_REQUEST);
	cr_assert_eq(rte_be_to_cpu_64(h.dst_session), dp_base_of(b)->session);
	cr_assert_eq(wait_pumping(f), 0);
	dprpc_future_put(f);
	cr_assert_eq(atomic_load(&runs[8]), 1u);
	cr_assert_eq(dprpc_agent_stats_get(a, &sa), 0);
	cr_assert_eq(sa.keepalives, 2u);
}

/* Put a frame from @from to @to, written by hand, on the wire. */
static void
inject(struct rte_ring *r, struct dprpc_agent *from, unsigned int to, const struct dp_hdr_fields *f,
	const void *payload, uint32_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	uint8_t *frame;

	cr_assert_not_null(m);
	frame = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(DP_HDRS_LEN + len));
	cr_assert_not_null(frame);
	dp_frame_write(frame, dp_rpc_of(from)->peers[to].tmpl, f, payload, len);
	cr_assert_eq(rte_ring_enqueue(r, m), 0);
}

/* Requests that name no incarnation of b, or another one, are never run:
 * dropped as wrong_incarnation and answered by a PONG that shows b's
 * session; the frame of a multi-frame request so addressed starts no
 * reassembly.  A response to another incarnation of a is dropped too. */
Test(restart, requests_for_another_incarnation_are_never_run)
{
	static uint8_t chunk[DPRPC_MAX_FRAME_PAYLOAD];
	struct dprpc_agent_stats sa, sb;
	struct dprpc_agent_usage u;
	struct dp_hdr_fields f;
	struct dp_wire_hdr h;
	struct dprpc_future *fut;
	uint64_t wrong[2];
	uint32_t id;
	unsigned int i;

	job_answers = true;
	a = make("a", pair.port_a, 64, 0, 0, 1000, NULL);
	b = make("b", pair.port_b, 64, 0, 0, 1000, NULL);
	fut = dprpc_rpc_async(a, "b", "echo", "hi", 2, 0);
	cr_assert_not_null(fut);
	cr_assert_eq(wait_pumping(fut), 0);
	dprpc_future_put(fut);
	dpt_ring_drain(pair.ab);
	dpt_ring_drain(pair.ba);
	wrong[0] = 0;			       /* a sender that never heard from b */
	wrong[1] = dp_base_of(b)->session ^ 1; /* b's previous incarnation, say */
	for (i = 0; i < 2; i++) {
		id = 100 + i;
		f = (struct dp_hdr_fields){.type = DP_FRAME_REQUEST,
			.src = 0,
			.dst = 1,
			.slot = (uint16_t)(40 + i),
			.session = dp_base_of(a)->session,
			.dst_session = wrong[i],
			.req_num = 5,
			.handler_id = dprpc_handler_id("job")};
		inject(pair.ab, a, 1, &f, &id, sizeof(id));
		dprpc_poll(b, 32);
		h = take_frame(pair.ba, DP_FRAME_CONTROL);
		cr_assert_eq(rte_be_to_cpu_32(h.handler_id), (uint32_t)DP_CTRL_PONG);
		cr_assert_eq(rte_be_to_cpu_64(h.session), dp_base_of(b)->session);
		cr_assert_eq(rte_be_to_cpu_64(h.dst_session), dp_base_of(a)->session);
		usleep(200); /* past the PONGs' rate limit */
	}
	/* The first frame of a two-frame request for another incarnation. */
	f.slot = 42;
	f.dst_session = wrong[1];
	f.pkt_idx = 0;
	f.pkt_cnt = 2;
	f.msg_len = DPRPC_MAX_FRAME_PAYLOAD + 1;
	inject(pair.ab, a, 1, &f, chunk, sizeof(chunk));
	dprpc_poll(b, 32);
	(void)take_frame(pair.ba, DP_FRAME_CONTROL);
	/* The same request, addressed right, runs. */
	id = 102;
	f = (struct dp_hdr_fields){.type = DP_FRAME_REQUEST,
		.src = 0,
		.dst = 1,
		.slot = 43,
		.session = dp_base_of(a)->session,
		.dst_session = dp_base_of(b)->session,
		.req_num = 5,
		.handler_id = dprpc_handler_id("job")};
	inject(pair.ab, a, 1, &f, &id, sizeof(id));
	dprpc_poll(b, 32);
	(void)take_frame(pair.ba, DP_FRAME_RESPONSE);
	cr_assert_eq(atomic_load(&runs[100]), 0u);
	cr_assert_eq(atomic_load(&runs[101]), 0u);
	cr_assert_eq(atomic_load(&runs[102]), 1u);
	cr_assert_eq(dprpc_agent_stats_get(b, &sb), 0);
	cr_assert_eq(sb.drops[DPRPC_DROP_WRONG_INCARNATION], 3u);
	cr_assert_eq(dprpc_agent_usage_get(b, &u), 0);
	cr_assert_eq(u.messages, 0u);
	/* A response for another incarnation of a: dropped, not matched. */
	f = (struct dp_hdr_fields){.type = DP_FRAME_RESPONSE,
		.src = 1,
		.dst = 0,
		.slot = 0,
		.session = dp_base_of(b)->session,
		.dst_session = dp_base_of(a)->session + 1,
		.req_num = 5};
	inject(pair.ba, b, 0, &f, "x", 1);
	dprpc_poll(a, 32);
	cr_assert_eq(dprpc_agent_stats_get(a, &sa), 0);
	cr_assert_eq(sa.drops[DPRPC_DROP_WRONG_INCARNATION], 1u);
	cr_assert_eq(sa.drops[DPRPC_DROP_STALE], 0u);
	cr_assert_eq(rte_ring_count(pair.ab), 0u, "a answered a response");
}

/*
 * A client stops in the middle of a 256 KiB request: the server holds it
 * half received until it declares the client down, then frees it.  The
 * client comes back (the same incarnation): its resend learns that the
 * request was let go without running (-ENOBUFS, docs/reliability.md,
 * "Budgets and reclaim"), and calling again runs it once.  Before, the
 * half-received message stayed until the client's next request on that
 * slot.
 */
Test(restart, half_received_request_is_freed_when_its_sender_goes_down)
{
	enum { BIG = 256 * 1024 };
	static uint8_t big[BIG];
	struct dprpc_agent_stats sb;
	struct dprpc_agent_usage u;
	struct dprpc_future *f;
	uint32_t id = 9;
	int i;

	job_answers = true;
	a = make("a", pair.port_a, 64, 0, 0, 1000, NULL);
	/* a is silent whenever this thread does not pump: a peer timeout that
	 * a stall of its cannot reach. */
	b = make("b", pair.port_b, 64, 20 * 1000, 1000 * 1000, 1000, NULL);
	f = dprpc_rpc_async(a, "b", "echo", "hi", 2, 0);
	cr_assert_not_null(f);
	cr_assert_eq(wait_pumping(f), 0);
	dprpc_future_put(f);
	memcpy(big, &id, sizeof(id));
	f = dprpc_rpc_async(a, "b", "job", big, BIG, 0);
	cr_assert_not_null(f);
	/* b takes in what a sent (its first window), then a falls silent. */
	for (i = 0; i < 100; i++)
		dprpc_poll(b, 32);
	cr_assert_eq(dprpc_agent_usage_get(b, &u), 0);
	cr_assert_eq(u.messages, 1u, "b holds no message half received");
	for (i = 0; i < 100000 && dprpc_worker_state(b, 0) != DPRPC_PEER_DOWN; i++) {
		dprpc_poll(b, 32);
		usleep(50);
	}
	cr_assert_eq(dprpc_worker_state(b, 0), DPRPC_PEER_DOWN);
	cr_assert_eq(dprpc_agent_usage_get(b, &u), 0);
	cr_assert_eq(u.messages, 0u, "b still holds %u messages of a, down", u.messages);
	cr_assert_eq(atomic_load(&runs[id]), 0u);
	/* a is back: its call learns the request never ran; again, it runs
	 * once. */
	cr_assert_eq(wait_pumping(f), -ENOBUFS);
	dprpc_future_put(f);
	cr_assert_eq(atomic_load(&runs[id]), 0u);
	f = dprpc_rpc_async(a, "b", "job", big, BIG, 0);
	cr_assert_not_null(f);
	cr_assert_eq(wait_pumping(f), 0);
	dprpc_future_put(f);
	cr_assert_eq(atomic_load(&runs[id]), 1u);
	cr_assert_eq(dprpc_agent_stats_get(b, &sb), 0);
	cr_assert_eq(sb.peers_down, 1u);
	cr_assert_eq(dprpc_agent_usage_get(b, &u), 0);
	cr_assert_eq(u.messages, 0u);
}

/*
 * Requests held by the client's transmit faults (delayed 100 ms) when it
 * learns that the server restarted: they go with their calls, and none
 * reaches the new incarnation.  Before, they went out when due and the new
 * incarnation ran them.
 */
Test(restart, held_requests_for_a_restarted_peer_are_discarded)
{
	enum { N = 8 };
	struct dprpc_fault_conf ftx = {.delay_ppm = 1000000, .delay_us = 100 * 1000};
	struct dprpc_future *fs[N], *f;
	struct dprpc_agent_stats sa, sb;
	struct dp_hdr_fields h;
	unsigned int i;
	uint32_t id;

	job_answers = true;
	a = make("a", pair.port_a, 64, 0, 0, 0, &ftx);
	b = make("b", pair.port_b, 64, 0, 0, 0, NULL);
	f = dprpc_rpc_async(a, "b", "echo", "hi", 2, 0);
	cr_assert_not_null(f);
	cr_assert_eq(wait_pumping(f), 0);
	dprpc_future_put(f);
	for (i = 0; i < N; i++) {
		id = i;
		fs[i] = dprpc_rpc_async(a, "b", "job", &id, sizeof(id), 0);
		cr_assert_not_null(fs[i]);
	}
	cr_assert_eq(dp_base_of(a)->ftx.n_held, (unsigned int)N);
	kill_b();
	b = make("b", pair.port_b, 64, 0, 0, 0, NULL);
	/* The new b's first word to a (as a PING of its would be answered). */
	h = (struct dp_hdr_fields){.type = DP_FRAME_CONTROL,
		.src = 1,
		.dst = 0,
		.session = dp_base_of(b)->session,
		.dst_session = dp_base_of(a)->session,
		.handler_id = DP_CTRL_PONG};
	inject(pair.ba, b, 0, &h, NULL, 0);
	dprpc_poll(a, 32);
	for (i = 0; i < N; i++) {
		cr_assert_eq(dprpc_future_wait(fs[i], 0), -ECONNRESET, "call %u", i);
		dprpc_future_put(fs[i]);
	}
	cr_assert_eq(dp_base_of(a)->ftx.n_held, 0u);
	pump_for_us(150 * 1000);
	cr_assert_eq(atomic_load(&runs_total), 0u, "the new b ran %u requests of the old one",
		atomic_load(&runs_total));
	cr_assert_eq(dprpc_agent_stats_get(b, &sb), 0);
	cr_assert_eq(sb.drops[DPRPC_DROP_WRONG_INCARNATION], 0u, "held requests went out");
	cr_assert_eq(dprpc_agent_stats_get(a, &sa), 0);
	cr_assert_eq(sa.tx_discarded, (uint64_t)N);
	cr_assert_eq(sa.peers_restarted, 1u);
}
