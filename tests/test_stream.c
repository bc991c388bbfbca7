/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Server streaming (dprpc_stream.h, docs/serving.md), between two agents
 * in one process over a net_ring pair: a is the caller, polled by the test
 * itself, with a window (credits) of 16 frames; b serves on io lcore 1.
 * b's "park" handler keeps its request for the test, which then sends the
 * chunks from its own thread (a deferred stream), so that what is sent and
 * when is the test's to decide.
 *
 * stream_loss/thousand_chunks_under_loss: 1,000 chunks of 0 to 3099 bytes (one
 * to three frames) arrive byte-exact and in order with 5% of frames lost
 * each way; the handler ran once.  stream/cancel_half_way: cancelled after
 * 500 chunks: nothing delivered after, the handler sees the cancellation,
 * -ECANCELED from stream_send, exact counts, nothing leaked.
 * stream/zero_chunks, stream/error_end: the end alone; an error end after
 * three chunks (callback and iterator).  stream/slow_consumer_window: an
 * iterator not read holds the server at exactly the window; each chunk
 * read lets exactly one more go.  stream/a_waiting_sender_goes_as_the_window_opens:
 * dprpc_stream_send_wait() times out on a window nobody reads, then sends
 * 300 chunks to a slow reader, each once the window has room, counted
 * once per wait.  stream/next_without_a_limit_waits,
 * stream/next_on_the_polling_thread,
 * stream/next_without_a_limit_parks_when_an_io_lcore_polls:
 * dprpc_stream_next() with DPRPC_TIMEOUT_NONE waits for a chunk and for
 * the end (polling a), fails -EDEADLK at once on a's polling thread
 * (DPRPC_STREAM_POLL: -EAGAIN), and parks a reader of b's, woken by each
 * chunk and by the end.  stream/by_rank_and_handler_id: the _id forms give
 * the chunks and end of the by-name forms.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rte_errno.h>

#include "dpt.h"

#define WINDOW 16

static struct dpt_ring_pair pair;
static struct rte_mempool *mp;
static struct dprpc_agent *a, *b;

static struct dprpc_request *_Atomic parked;
static atomic_uint runs_park;

/* Inline: keeps the request for the test (a deferred stream). */
static int
h_park(struct dprpc_request *req, void *arg)
{
	(void)arg;
	atomic_fetch_add(&runs_park, 1);
	atomic_store(&parked, req);
	return DPRPC_DEFERRED;
}

/* Inline: the end alone. */
static int
h_empty(struct dprpc_request *req, void *arg)
{
	(void)arg;
	return dprpc_stream_end(req, 0);
}

/* Inline: three chunks "0", "1", "2", then -EIO. */
static int
h_err3(struct dprpc_request *req, void *arg)
{
	(void)arg;
	for (int i = 0; i < 3; i++) {
		char c = (char)('0' + i);

		cr_assert_eq(dprpc_stream_send(req, &c, 1), 0);
	}
	return dprpc_stream_end(req, -EIO);
}

static struct dprpc_agent *
make_agent(const char *name, int port, bool server, bool lossy)
{
	struct dprpc_agent_conf c;
	struct dprpc_agent *ag;

	dprpc_agent_conf_init(&c);
	c.name = name;
	c.world = DPT_WORLD2;
	c.port.id = port;
	c.port.mbuf_pool = mp;
	c.calls.retransmit_us = lossy ? 1000 : 0;
	c.liveness.keepalive_us = 0;
	c.liveness.peer_timeout_us = 0;
	c.calls.credits = WINDOW;
	if (lossy) {
		c.faults.tx.drop_ppm = 50000;
		c.faults.tx.seed = 16;
		c.faults.rx.drop_ppm = 50000;
		c.faults.rx.seed = 61;
	}
	if (server) {
		c.lcores.io = 1;
		c.calls.credits = 64;
	}
	ag = dprpc_agent_create(&c);
	cr_assert_not_null(ag, "agent %s: %s", name, rte_strerror(rte_errno));
	return ag;
}

static void
start(bool lossy)
{
	cr_assert_geq(dpt_eal_init("stream"), 0);
	mp = dpt_pool_and_pair("dpt_mp", 8191, &pair);
	cr_assert_not_null(mp);
	a = make_agent("a", pair.port_a, false, lossy);
	b = make_agent("b", pair.port_b, true, false);
	cr_assert_eq(dprpc_register(b, "park", h_park, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(b, "empty", h_empty, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(b, "err3", h_err3, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(b, "echo", dpt_echo, NULL, DPRPC_HANDLER_INLINE), 0);
}

static void
setup(void)
{
	start(false);
}

static void
setup_lossy(void)
{
	start(true);
}

static struct dprpc_agent_usage
usage(struct dprpc_agent *ag)
{
	struct dprpc_agent_usage u;

	cr_assert_eq(dprpc_agent_usage_get(ag, &u), 0);
	return u;
}

/* Bounded wait (~10 s) until b holds no request object and keeps no mbuf.
 * First a moves on: one call, on the slot its last stream used (the lowest
 * free one).  The server keeps a stream's end until the caller
 * acknowledges it and has no timer, so an acknowledgement lost (stream_loss
 * drops 5% of a's frames) leaves the end kept until the caller's next call
 * on that slot, like a kept response (docs/serving.md; seen once as "mbufs
 * still kept on b: 1", and every time with the end's acknowledgement
 * dropped by fault_tx.drop_nth). */
static void
b_settles(void)
{
	struct dprpc_agent_usage u = {0};

	(void)dprpc_rpc_sync(a, "b", "echo", NULL, 0, 5000 * 1000, NULL, NULL, NULL);
	for (int i = 0; i < 100000; i++) {
		dprpc_poll(a, 32);
		u = usage(b);
		if (u.requests == 0 && u.kept_mbufs == 0)
			break;
		usleep(100);
	}
	cr_expect_eq(u.requests, 0u, "requests leaked on b: %u", u.requests);
	cr_expect_eq(u.kept_mbufs, 0u, "mbufs still kept on b: %u", u.kept_mbufs);
}

static void
teardown(void)
{
	struct dprpc_agent_usage u;

	if (a != NULL) {
		b_settles();
		u = usage(a);
		cr_expect_eq(u.futures, 0u, "futures leaked on a: %u", u.futures);
		cr_expect_eq(u.calls, 0u, "calls left on a: %u", u.calls);
		cr_assert_eq(dprpc_agent_destroy(a), 0);
	}
	if (b != NULL)
		cr_assert_eq(dprpc_agent_destroy(b), 0);
	a = b = NULL;
	dpt_ring_drain(pair.ab);
	dpt_ring_drain(pair.ba);
	cr_expect_eq(
		rte_mempool_in_use_count(mp), 0u, "mbufs leaked: %u", rte_mempool_in_use_count(mp));
	dpt_eal_cleanup();
}

TestSuite(stream, .init = setup, .fini = teardown, .timeout = 240);

static struct dprpc_agent_stats
stats(struct dprpc_agent *ag)
{
	struct dprpc_agent_stats s;

	cr_assert_eq(dprpc_agent_stats_get(ag, &s), 0);
	return s;
}

/* Poll a (bounded, ~20 s) until @f is done. */
static void
poll_until_done(struct dprpc_future *f)
{
	for (int i = 0; i < 200000 && !dprpc_future_is_done(f); i++) {
		if (dprpc_poll(a, 32) == 0)
			usleep(100);
	}
	cr_assert(dprpc_future_is_done(f), "a stream never ended");
}

/* a learns b's incarnation with one call. */
static void
warm_up(void)
{
	char out[8];
	size_t len = sizeof(out);

	cr_assert_eq(dprpc_rpc_sync(a, "b", "echo", "w", 1, 5000 * 1000, out, &len, NULL), 0);
}

/* Poll a (bounded) until b's park handler holds the stream's request. */
static struct dprpc_request *
wait_parked(void)
{
	for (int i = 0; i < 100000 && atomic_load(&parked) == NULL; i++) {
		dprpc_poll(a, 32);
		usleep(100);
	}
	cr_assert_not_null(atomic_load(&parked), "the stream's handler never ran");
	return atomic_load(&parked);
}

/* Chunk @i: 0 to 3099 bytes, starting with its index. */
static size_t
chunk_len(uint32_t i)
{
	return (i * 131u) % 3100u;
}

static void
chunk_make(uint32_t i, uint8_t *buf)
{
	size_t len = chunk_len(i);

	for (size_t j = 0; j < len; j++)
		buf[j] = (uint8_t)(i * 7u + j);
	if (len >= 4)
		memcpy(buf, &i, 4);
}

struct check {
	uint32_t next; /* the chunk expected */
	uint32_t bad;  /* chunks not as sent */
};

static int
on_chunk(const void *data, size_t len, void *arg)
{
	struct check *c = arg;
	uint8_t want[3100];

	chunk_make(c->next, want);
	if (len != chunk_len(c->next) || (len > 0 && memcmp(data, want, len) != 0) ||
		((uintptr_t)data & (DPRPC_PAYLOAD_ALIGN - 1)) != 0)
		c->bad++;
	c->next++;
	return 0;
}

/* Send chunks [*sent, @upto) of @req from this thread, polling a while the
 * window is full (bounded).  Returns the last stream_send() result. */
static int
send_chunks(struct dprpc_request *req, uint32_t *sent, uint32_t upto)
{
	uint8_t buf[3100];
	int rc = 0;

	for (long spins = 0; *sent < upto && spins < 2000000; spins++) {
		chunk_make(*sent, buf);
		rc = dprpc_stream_send(req, buf, chunk_len(*sent));
		if (rc == 0) {
			(*sent)++;
			continue;
		}
		if (rc != -EAGAIN)
			return rc;
		if (dprpc_poll(a, 32) == 0)
			usleep(20);
	}
	return rc;
}

TestSuite(stream_loss, .init = setup_lossy, .fini = teardown, .timeout = 240);

Test(stream_loss, thousand_chunks_under_loss)
{
	struct check c = {0};
	struct dprpc_future *f;
	struct dprpc_request *req;
	struct dprpc_agent_stats sb;
	uint32_t sent = 0;
	size_t len;

	warm_up();
	f = dprpc_rpc_stream(a, "b", "park", "go", 2, DPRPC_TIMEOUT_NONE, on_chunk, &c);
	cr_assert_not_null(f, "%s", rte_strerror(rte_errno));
	req = wait_parked();
	cr_assert_eq(send_chunks(req, &sent, 1000), 0);
	cr_assert_eq(sent, 1000u);
	cr_assert_eq(dprpc_stream_end(req, 0), 0);
	poll_until_done(f);
	cr_assert_eq(dprpc_future_state(f), DPRPC_FUTURE_DONE, "failed: %d %s",
		dprpc_future_error(f) ? dprpc_future_error(f)->code : 0,
		dprpc_future_error(f) ? dprpc_future_error(f)->msg : "");
	(void)dprpc_future_value(f, &len);
	cr_assert_eq(len, 0u);
	cr_assert_eq(c.next, 1000u, "chunks delivered: %u", c.next);
	cr_assert_eq(c.bad, 0u, "chunks not byte-exact: %u", c.bad);
	cr_assert_eq(atomic_load(&runs_park), 1u, "the handler ran again");
	sb = stats(b);
	cr_assert_eq(sb.stream_chunks_sent, 1000u);
	cr_assert_eq(stats(a).stream_chunks_received, 1000u);
	cr_assert_gt(stats(a).fault_dropped, 0u);
	cr_assert_gt(sb.stream_frames_resent, 0u, "no frame was lost?");
	dprpc_future_put(f);
}

Test(stream, cancel_half_way)
{
	struct check c = {0};
	struct dprpc_future *f;
	struct dprpc_request *req;
	uint32_t sent = 0, at_cancel;
	uint8_t x = 1;

	warm_up();
	f = dprpc_rpc_stream(a, "b", "park", NULL, 0, DPRPC_TIMEOUT_NONE, on_chunk, &c);
	cr_assert_not_null(f);
	req = wait_parked();
	cr_assert_eq(send_chunks(req, &sent, 500), 0);
	for (int i = 0; i < 100000 && c.next < 500; i++)
		if (dprpc_poll(a, 32) == 0)
			usleep(100);
	cr_assert_eq(c.next, 500u);
	cr_assert_eq(dprpc_stream_send(req, &x, 1), 0); /* one in flight */
	cr_assert_eq(dprpc_future_cancel(f), DPRPC_CANCEL_DONE);
	at_cancel = c.next;
	for (int i = 0; i < 100000 && stats(b).cancels_received == 0; i++) {
		dprpc_poll(a, 32);
		usleep(100);
	}
	cr_assert_eq(stats(b).cancels_received, 1u);
	cr_assert(dprpc_request_cancelled(req));
	cr_assert_eq(dprpc_stream_send(req, &x, 1), -ECANCELED);
	cr_assert_eq(dprpc_stream_end(req, 0), 0);
	cr_assert_eq(dprpc_stream_end(req, 0), -EALREADY);
	for (int i = 0; i < 100; i++) {
		dprpc_poll(a, 32);
		usleep(100);
	}
	cr_assert_eq(c.next, at_cancel, "a chunk was delivered after the cancel");
	cr_assert_eq(c.bad, 0u);
	cr_assert_eq(dprpc_future_error(f)->code, -ECANCELED);
	cr_assert_eq(stats(b).stream_chunks_sent, 501u);
	cr_assert_eq(stats(a).stream_chunks_received, at_cancel);
	cr_assert_eq(stats(a).calls_cancelled, 1u);
	dprpc_future_put(f);
	b_settles();
	cr_assert_eq(usage(a).calls, 0u, "a's slot is not free");
}

Test(stream, zero_chunks)
{
	struct check c = {0};
	struct dprpc_future *f;
	struct dprpc_stream *s;
	const void *d;
	size_t len = 1;

	warm_up();
	f = dprpc_rpc_stream(a, "b", "empty", NULL, 0, DPRPC_TIMEOUT_NONE, on_chunk, &c);
	cr_assert_not_null(f);
	poll_until_done(f);
	cr_assert_eq(dprpc_future_state(f), DPRPC_FUTURE_DONE);
	cr_assert_null(dprpc_future_value(f, &len));
	cr_assert_eq(len, 0u);
	cr_assert_eq(c.next, 0u);
	dprpc_future_put(f);
	/* The same with an iterator. */
	s = dprpc_stream_open(a, "b", "empty", NULL, 0, DPRPC_TIMEOUT_NONE);
	cr_assert_not_null(s);
	cr_assert_eq(dprpc_stream_next(s, &d, &len, 10 * 1000 * 1000), DPRPC_STREAM_END);
	cr_assert_eq(dprpc_future_state(dprpc_stream_future(s)), DPRPC_FUTURE_DONE);
	cr_assert_eq(dprpc_stream_close(s), 0);
	cr_assert_eq(stats(b).stream_chunks_sent, 0u);
}

Test(stream, error_end)
{
	struct dprpc_future *f;
	struct dprpc_stream *s;
	const char *d;
	size_t len;
	uint32_t n = 0;
	int rc;

	warm_up();
	s = dprpc_stream_open(a, "b", "err3", NULL, 0, DPRPC_TIMEOUT_NONE);
	cr_assert_not_null(s);
	while ((rc = dprpc_stream_next(s, (const void **)&d, &len, 10 * 1000 * 1000)) == 0) {
		cr_assert_eq(len, 1u);
		cr_assert_eq(d[0], (char)('0' + n));
		n++;
	}
	cr_assert_eq(rc, -EIO, "got %d", rc);
	cr_assert_eq(n, 3u);
	f = dprpc_stream_future(s);
	cr_assert_eq(dprpc_future_state(f), DPRPC_FUTURE_FAILED);
	cr_assert_eq(dprpc_future_error(f)->code, -EIO);
	cr_assert_eq(dprpc_future_error(f)->origin, 1u);
	cr_assert_eq(dprpc_stream_next(s, (const void **)&d, &len, 0), -EIO);
	cr_assert_eq(dprpc_stream_close(s), 0);
}

/* Collects one-byte chunks into a string. */
struct collect {
	char got[8];
	unsigned int n;
};

static int
on_byte(const void *data, size_t len, void *arg)
{
	struct collect *c = arg;

	if (len == 1 && c->n < sizeof(c->got) - 1)
		c->got[c->n++] = *(const char *)data;
	return 0;
}

/* The _id forms by rank and handler id: the same chunks and end as by
 * name, through the callback and the iterator; an id the server does not
 * know ends the stream -ENOENT there; a bad rank, id 0 or self are refused
 * here. */
Test(stream, by_rank_and_handler_id)
{
	uint32_t err3 = dprpc_handler_id("err3");
	struct collect c = {0};
	struct dprpc_future *f;
	struct dprpc_stream *s;
	const char *d;
	size_t len;
	int rc;

	warm_up();
	f = dprpc_rpc_stream_id(a, 1, err3, NULL, 0, DPRPC_TIMEOUT_NONE, on_byte, &c);
	cr_assert_not_null(f, "%s", rte_strerror(rte_errno));
	poll_until_done(f);
	cr_assert_str_eq(c.got, "012");
	cr_assert_eq(dprpc_future_state(f), DPRPC_FUTURE_FAILED);
	cr_assert_eq(dprpc_future_error(f)->code, -EIO);
	cr_assert_eq(dprpc_future_error(f)->origin, 1u);
	dprpc_future_put(f);
	s = dprpc_stream_open_id(a, 1, err3, NULL, 0, DPRPC_TIMEOUT_NONE);
	cr_assert_not_null(s, "%s", rte_strerror(rte_errno));
	for (c.n = 0; (rc = dprpc_stream_next(s, (const void **)&d, &len, 10 * 1000 * 1000)) == 0;)
		cr_assert_eq(d[0], (char)('0' + c.n++));
	cr_assert_eq(rc, -EIO, "got %d", rc);
	cr_assert_eq(c.n, 3u);
	cr_assert_eq(dprpc_stream_close(s), 0);
	s = dprpc_stream_open_id(a, 1, dprpc_handler_id("nope"), NULL, 0, DPRPC_TIMEOUT_NONE);
	cr_assert_not_null(s);
	cr_assert_eq(dprpc_stream_next(s, (const void **)&d, &len, 10 * 1000 * 1000), -ENOENT);
	cr_assert_eq(dprpc_future_error(dprpc_stream_future(s))->origin, 1u);
	cr_assert_eq(dprpc_stream_close(s), 0);
	rte_errno = 0;
	cr_assert_null(dprpc_stream_open_id(a, 0, err3, NULL, 0, 0));
	cr_assert_eq(rte_errno, ENOTSUP);
	cr_assert_null(dprpc_stream_open_id(a, 2, err3, NULL, 0, 0));
	cr_assert_eq(rte_errno, EINVAL);
	cr_assert_null(dprpc_rpc_stream_id(a, 1, 0, NULL, 0, 0, on_byte, &c));
	cr_assert_eq(rte_errno, EINVAL);
	cr_assert_eq(stats(b).stream_chunks_sent, 6u);
}

Test(stream, slow_consumer_window)
{
	struct dprpc_stream *s;
	struct dprpc_request *req;
	const uint32_t *d;
	uint32_t sent = 0, got = 0, i;
	size_t len;
	int rc;

	warm_up();
	s = dprpc_stream_open(a, "b", "park", NULL, 0, DPRPC_TIMEOUT_NONE);
	cr_assert_not_null(s);
	req = wait_parked();
	/* Nothing read: exactly the window goes, then -EAGAIN for good. */
	for (i = 0; i < 1000 && dprpc_stream_send(req, &sent, sizeof(sent)) == 0; i++)
		sent++;
	cr_assert_eq(sent, (uint32_t)WINDOW);
	/* The window reaches a (bounded, ~10 s), and then 20 ms more. */
	for (i = 0; i < 100000 && stats(a).stream_chunks_received < WINDOW; i++) {
		dprpc_poll(a, 32);
		usleep(100);
	}
	for (i = 0; i < 200; i++) {
		dprpc_poll(a, 32);
		usleep(100);
	}
	cr_assert_eq(dprpc_stream_send(req, &sent, sizeof(sent)), -EAGAIN);
	cr_assert_eq(stats(a).stream_chunks_received, (uint64_t)WINDOW);
	cr_assert_geq(stats(b).stream_window_full, 2u);
	/* Each chunk read lets exactly one more go. */
	for (int round = 0; round < 3; round++) {
		cr_assert_eq(dprpc_stream_next(s, (const void **)&d, &len, DPRPC_STREAM_POLL), 0);
		cr_assert_eq(len, sizeof(uint32_t));
		cr_assert_eq(*d, got);
		got++;
		rc = -EAGAIN;
		for (i = 0; i < 100000 && rc == -EAGAIN; i++) {
			dprpc_poll(a, 32);
			rc = dprpc_stream_send(req, &sent, sizeof(sent));
			if (rc == -EAGAIN)
				usleep(50);
		}
		cr_assert_eq(rc, 0);
		sent++;
		cr_assert_eq(dprpc_stream_send(req, &sent, sizeof(sent)), -EAGAIN);
		cr_assert_eq(sent - got, (uint32_t)WINDOW, "more than the window outstanding");
	}
	cr_assert_eq(dprpc_stream_end(req, 0), 0);
	while ((rc = dprpc_stream_next(s, (const void **)&d, &len, 10 * 1000 * 1000)) == 0) {
		cr_assert_eq(*d, got);
		got++;
	}
	cr_assert_eq(rc, DPRPC_STREAM_END, "got %d", rc);
	cr_assert_eq(got, sent);
	cr_assert_eq(dprpc_stream_close(s), 0);
}

#define NB_WAITED 300u

/* Reads NB_WAITED chunks of its stream slowly (polling a as it waits);
 * returns how many came in order. */
static void *
slow_reader(void *arg)
{
	struct dprpc_stream *s = arg;
	const uint32_t *d;
	uintptr_t got = 0;
	size_t len;

	while (got < NB_WAITED &&
		dprpc_stream_next(s, (const void **)&d, &len, 20 * 1000 * 1000) == 0) {
		if (len != sizeof(*d) || *d != got)
			break;
		got++;
		if (got % 8 == 0)
			usleep(200);
	}
	return (void *)got;
}

Test(stream, a_waiting_sender_goes_as_the_window_opens)
{
	struct dprpc_stream *s;
	struct dprpc_request *req;
	uint64_t full0;
	uint32_t i;
	pthread_t t;
	void *got;

	warm_up();
	s = dprpc_stream_open(a, "b", "park", NULL, 0, DPRPC_TIMEOUT_NONE);
	cr_assert_not_null(s);
	req = wait_parked();
	for (i = 0; i < WINDOW; i++)
		cr_assert_eq(dprpc_stream_send(req, &i, sizeof(i)), 0);
	/* Nobody reads: the wait ends at its timeout, nothing sent. */
	cr_assert_eq(dprpc_stream_send_wait(req, &i, sizeof(i), 20 * 1000), -ETIMEDOUT);
	full0 = stats(b).stream_window_full;
	cr_assert_eq(full0, 1u, "one wait, counted once: %lu", (unsigned long)full0);
	cr_assert_eq(pthread_create(&t, NULL, slow_reader, s), 0);
	for (; i < NB_WAITED; i++)
		cr_assert_eq(dprpc_stream_send_wait(req, &i, sizeof(i), DPRPC_TIMEOUT_NONE), 0,
			"chunk %u", i);
	cr_assert_eq(pthread_join(t, &got), 0);
	cr_assert_eq((uintptr_t)got, NB_WAITED, "%lu chunks read in order",
		(unsigned long)(uintptr_t)got);
	/* At most one count per chunk that waited. */
	cr_assert_leq(stats(b).stream_window_full - full0, (uint64_t)(NB_WAITED - WINDOW));
	cr_assert_eq(dprpc_stream_end(req, 0), 0);
	{
		const void *d;
		size_t len;

		cr_assert_eq(dprpc_stream_next(s, &d, &len, 10 * 1000 * 1000), DPRPC_STREAM_END);
	}
	cr_assert_eq(dprpc_stream_close(s), 0);
}

/* Sends "x" from its own thread 50 ms after it starts, then ends the
 * stream 50 ms later: a reader waiting without a limit has nothing to
 * read for a while. */
static void *
late_sender(void *arg)
{
	struct dprpc_request *req = arg;
	char x = 'x';

	usleep(50 * 1000);
	if (dprpc_stream_send(req, &x, 1) != 0)
		return (void *)1;
	usleep(50 * 1000);
	return (void *)(uintptr_t)(dprpc_stream_end(req, 0) != 0);
}

/* DPRPC_TIMEOUT_NONE waits without a limit, as everywhere in the API: for
 * the next chunk, then for the end; the reader polls a (nobody else
 * does). */
Test(stream, next_without_a_limit_waits)
{
	struct dprpc_stream *s;
	struct dprpc_request *req;
	const char *d;
	size_t len;
	pthread_t t;
	void *ret;
	int rc;

	warm_up();
	s = dprpc_stream_open(a, "b", "park", NULL, 0, DPRPC_TIMEOUT_NONE);
	cr_assert_not_null(s);
	req = wait_parked();
	cr_assert_eq(pthread_create(&t, NULL, late_sender, req), 0);
	rc = dprpc_stream_next(s, (const void **)&d, &len, DPRPC_TIMEOUT_NONE);
	cr_assert_eq(rc, 0, "got %d", rc);
	cr_assert_eq(len, 1u);
	cr_assert_eq(d[0], 'x');
	rc = dprpc_stream_next(s, (const void **)&d, &len, DPRPC_TIMEOUT_NONE);
	cr_assert_eq(rc, DPRPC_STREAM_END, "got %d", rc);
	cr_assert_eq(pthread_join(t, &ret), 0);
	cr_assert_null(ret, "the sender failed");
	cr_assert_eq(dprpc_stream_close(s), 0);
}

struct on_poller {
	struct dprpc_stream *s;
	int none, poll; /* what dprpc_stream_next() returned */
	atomic_bool ran;
};

static void
next_on_poller(struct dprpc_future *f, void *arg)
{
	struct on_poller *op = arg;
	const void *d;
	size_t len;

	(void)f;
	op->none = dprpc_stream_next(op->s, &d, &len, DPRPC_TIMEOUT_NONE);
	op->poll = dprpc_stream_next(op->s, &d, &len, DPRPC_STREAM_POLL);
	atomic_store(&op->ran, true);
}

/* On a's polling thread (a completion callback) nothing can come while it
 * waits: without a limit, -EDEADLK at once; the poll form, -EAGAIN.  Off
 * the poller, the poll form returns at once too. */
Test(stream, next_on_the_polling_thread)
{
	struct on_poller op = {.none = 1, .poll = 1};
	struct dprpc_request *req;
	struct dprpc_future *f;
	const void *d;
	size_t len;

	warm_up();
	op.s = dprpc_stream_open(a, "b", "park", NULL, 0, DPRPC_TIMEOUT_NONE);
	cr_assert_not_null(op.s);
	req = wait_parked();
	cr_assert_eq(dprpc_stream_next(op.s, &d, &len, DPRPC_STREAM_POLL), -EAGAIN);
	f = dprpc_rpc_async(a, "b", "echo", "e", 1, 5000 * 1000);
	cr_assert_not_null(f);
	cr_assert_eq(dprpc_future_add_callback(f, next_on_poller, &op), 0);
	poll_until_done(f);
	for (int i = 0; i < 100000 && !atomic_load(&op.ran); i++)
		dprpc_poll(a, 32);
	cr_assert(atomic_load(&op.ran));
	cr_assert_eq(op.none, -EDEADLK, "got %d", op.none);
	cr_assert_eq(op.poll, -EAGAIN, "got %d", op.poll);
	dprpc_future_put(f);
	cr_assert_eq(dprpc_stream_end(req, 0), 0);
	cr_assert_eq(dprpc_stream_next(op.s, &d, &len, DPRPC_TIMEOUT_NONE), DPRPC_STREAM_END);
	cr_assert_eq(dprpc_stream_close(op.s), 0);
}

#define NB_PARKED 20u

struct parked_reader {
	struct dprpc_stream *s;
	uint32_t got; /* chunks in order */
	int rc;	      /* the last dprpc_stream_next() */
	double cpu_s, wall_s;
	atomic_bool done;
};

static double
secs(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *
parked_reader(void *arg)
{
	struct parked_reader *r = arg;
	double cpu0 = secs(CLOCK_THREAD_CPUTIME_ID), wall0 = secs(CLOCK_MONOTONIC);
	const uint32_t *d;
	size_t len;

	while ((r->rc = dprpc_stream_next(r->s, (const void **)&d, &len, DPRPC_TIMEOUT_NONE)) ==
		0) {
		if (len != sizeof(*d) || *d != r->got)
			break;
		r->got++;
	}
	r->cpu_s = secs(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	r->wall_s = secs(CLOCK_MONOTONIC) - wall0;
	atomic_store(&r->done, true);
	return NULL;
}

/* Poll a for about @us microseconds. */
static void
poll_a_for(unsigned int us)
{
	double end = secs(CLOCK_MONOTONIC) + us * 1e-6;

	while (secs(CLOCK_MONOTONIC) < end)
		if (dprpc_poll(a, 32) == 0)
			usleep(100);
}

/* A reader of b's (an io lcore polls b) waits without a limit: it parks
 * rather than spins, woken by each chunk (one every 5 ms) and by the end.
 * a serves, polled by the test. */
Test(stream, next_without_a_limit_parks_when_an_io_lcore_polls)
{
	struct parked_reader r = {.rc = 1};
	struct dprpc_request *req;
	struct dprpc_future *f;
	pthread_t t;
	uint32_t i = 0;
	int rc;

	cr_assert_eq(dprpc_register(a, "park", h_park, NULL, DPRPC_HANDLER_INLINE), 0);
	cr_assert_eq(dprpc_register(a, "echo", dpt_echo, NULL, DPRPC_HANDLER_INLINE), 0);
	f = dprpc_rpc_async(b, "a", "echo", "w", 1, 5000 * 1000);
	cr_assert_not_null(f);
	poll_until_done(f);
	cr_assert_eq(dprpc_future_state(f), DPRPC_FUTURE_DONE);
	dprpc_future_put(f);
	r.s = dprpc_stream_open(b, "a", "park", NULL, 0, DPRPC_TIMEOUT_NONE);
	cr_assert_not_null(r.s);
	req = wait_parked();
	cr_assert_eq(pthread_create(&t, NULL, parked_reader, &r), 0);
	for (int n = 0; i < NB_PARKED && n < 2000; n++) {
		poll_a_for(5000);
		rc = dprpc_stream_send(req, &i, sizeof(i));
		if (rc == 0)
			i++;
		else
			cr_assert_eq(rc, -EAGAIN, "chunk %u: %d", i, rc);
	}
	cr_assert_eq(i, NB_PARKED, "the reader stopped reading: %d after %u chunks", r.rc, r.got);
	poll_a_for(5000);
	cr_assert_eq(dprpc_stream_end(req, 0), 0);
	for (int n = 0; n < 100000 && !atomic_load(&r.done); n++)
		if (dprpc_poll(a, 32) == 0)
			usleep(100);
	cr_assert(atomic_load(&r.done), "the reader never saw the end");
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(r.rc, DPRPC_STREAM_END, "got %d after %u chunks", r.rc, r.got);
	cr_assert_eq(r.got, NB_PARKED);
	/* Parked, it used a small part of a CPU over its ~100 ms wait; a
	 * spinning reader uses whatever CPU it is given. */
	cr_expect_lt(r.cpu_s, r.wall_s / 4, "the reader used %.1f ms of CPU in %.1f ms",
		r.cpu_s * 1e3, r.wall_s * 1e3);
	cr_assert_eq(dprpc_stream_close(r.s), 0);
}

Test(stream, misuse_on_a_plain_call)
{
	struct dprpc_future *f;
	struct dprpc_request *req;
	uint8_t x = 0;

	warm_up();
	f = dprpc_rpc_async(a, "b", "park", NULL, 0, DPRPC_TIMEOUT_NONE);
	cr_assert_not_null(f);
	req = wait_parked();
	cr_assert_eq(dprpc_stream_send(req, &x, 1), -ENOTSUP);
	cr_assert_eq(dprpc_stream_end(req, 0), -ENOTSUP);
	cr_assert_eq(dprpc_reply(req, NULL, 0), 0);
	poll_until_done(f);
	cr_assert_eq(dprpc_future_state(f), DPRPC_FUTURE_DONE);
	dprpc_future_put(f);
	/* Not to self, and the request fits one frame. */
	cr_assert_null(dprpc_stream_open(a, "a", "park", NULL, 0, DPRPC_TIMEOUT_NONE));
	cr_assert_eq(rte_errno, ENOTSUP);
	cr_assert_null(dprpc_stream_open(a, "b", "park", &x, DPRPC_MAX_FRAME_PAYLOAD + 1, 0));
	cr_assert_eq(rte_errno, EMSGSIZE);
}
