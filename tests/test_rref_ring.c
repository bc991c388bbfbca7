/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RRefs between three agents in one process (a, b, c), joined by a
 * software switch over net_ring ports.  EAL lcore 1 runs the switch and
 * polls the three agents; the test thread (lcore 0) and, in the
 * concurrency test, plain threads call the API.
 *
 * Longer than most files: one Criterion suite per module (rref/), sharing
 * the three-agent fixture; its cases are independent and each short.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <criterion/criterion.h>

#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include "dpt.h"
#include "rr_internal.h"

static struct dpt_switch sw;
static struct rte_mempool *mp;
static struct dprpc_agent *ag[3];
#define A (ag[0])
#define B (ag[1])
#define C (ag[2])
static atomic_bool stop_bg;

/* Requests parked by "park", answered by the test. */
static struct dprpc_request *_Atomic parked[8];
static atomic_uint nb_parked;
/* Handles rebuilt by "adopt", per agent. */
static struct dprpc_rref *_Atomic adopted[3][8];
static atomic_uint nb_adopted[3];

/* Values each agent was told were freed (rref_value_free): a count and
 * the last one's first 15 bytes. */
static pthread_mutex_t freed_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned int freed_n[3];
static char freed_last[3][16];

static void
value_freed(const void *v, size_t len, void *arg)
{
	unsigned int i = (unsigned int)(uintptr_t)arg;

	pthread_mutex_lock(&freed_mu);
	freed_n[i]++;
	memset(freed_last[i], 0, sizeof(freed_last[i]));
	memcpy(freed_last[i], v, len < 15 ? len : 15);
	pthread_mutex_unlock(&freed_mu);
}

/* Bounded wait (the hook runs after a grace period) until agent @i was
 * told of @n values; the count then. */
static unsigned int
freed_count(unsigned int i, unsigned int n)
{
	unsigned int got = 0;

	for (int k = 0; k < 20000; k++) {
		pthread_mutex_lock(&freed_mu);
		got = freed_n[i];
		pthread_mutex_unlock(&freed_mu);
		if (got >= n)
			break;
		usleep(100);
	}
	return got;
}

/* The value is the request's payload. */
static int
h_make(struct dprpc_request *req, void *arg)
{
	return dpt_echo(req, arg);
}

static int
h_fail(struct dprpc_request *req, void *arg)
{
	return dprpc_reply_error(req, -EPERM, "no");
}

static int
h_park(struct dprpc_request *req, void *arg)
{
	unsigned int i = atomic_fetch_add(&nb_parked, 1);

	if (i >= 8)
		return -ENOSPC;
	atomic_store(&parked[i], req);
	return DPRPC_DEFERRED;
}

/* Proxy: the RRef's value (a uint64) plus the argument (a uint64). */
static int
h_add(struct dprpc_request *req, void *arg)
{
	size_t vlen, alen;
	const uint64_t *v = dprpc_request_rref_value(req, &vlen);
	const uint64_t *x = dprpc_request_payload(req, &alen);
	uint64_t sum;

	if (v == NULL || vlen != sizeof(*v) || alen != sizeof(*x))
		return -EINVAL;
	sum = *v + *x;
	return dprpc_reply(req, &sum, sizeof(sum));
}

/* Rebuild the RRef forked into the payload; reply with its slot. */
static int
h_adopt(struct dprpc_request *req, void *arg)
{
	unsigned int w = (unsigned int)(uintptr_t)arg;
	size_t len;
	const void *p = dprpc_request_payload(req, &len);
	struct dprpc_rref *r = dprpc_rref_from_fork(dprpc_request_agent(req), p, len);
	uint32_t slot;

	if (r == NULL)
		return -rte_errno;
	slot = atomic_fetch_add(&nb_adopted[w], 1);
	if (slot >= 8) {
		dprpc_rref_release(r);
		return -ENOSPC;
	}
	atomic_store(&adopted[w][slot], r);
	return dprpc_reply(req, &slot, sizeof(slot));
}

/* Byte @i of a large value: position-dependent, so a misplaced frame
 * shows. */
static uint8_t
big_byte(size_t i)
{
	return (uint8_t)(i * 7 + (i >> 11) + 1);
}

static uint8_t *
big_buf(size_t n)
{
	uint8_t *b = malloc(n > 0 ? n : 1);

	cr_assert_not_null(b);
	for (size_t i = 0; i < n; i++)
		b[i] = big_byte(i);
	return b;
}

/* 64-bit FNV-1a of @len bytes. */
static uint64_t
fnv64(const uint8_t *p, size_t len)
{
	uint64_t h = 14695981039346656037ull;

	while (len-- > 0) {
		h ^= *p++;
		h *= 1099511628211ull;
	}
	return h;
}

/* Replies as many big_byte() bytes as its 8-byte payload says (an error
 * from dprpc_reply() beyond max_msg_size). */
static int
h_big(struct dprpc_request *req, void *arg)
{
	size_t len;
	const uint64_t *n = dprpc_request_payload(req, &len);
	uint8_t *b;
	int rc;

	if (len != sizeof(*n))
		return -EINVAL;
	b = malloc(*n > 0 ? *n : 1);
	if (b == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < *n; i++)
		b[i] = big_byte(i);
	rc = dprpc_reply(req, b, *n);
	free(b);
	return rc;
}

/* Proxy: the checksums and lengths of the RRef's value and of the
 * arguments. */
static int
h_vsum(struct dprpc_request *req, void *arg)
{
	size_t vlen, alen;
	const uint8_t *v = dprpc_request_rref_value(req, &vlen);
	const uint8_t *x = dprpc_request_payload(req, &alen);
	uint64_t out[4] = {fnv64(v, vlen), vlen, fnv64(x, alen), alen};

	if (v == NULL)
		return -EINVAL;
	return dprpc_reply(req, out, sizeof(out));
}

static void
reply_parked(const void *v, size_t len)
{
	unsigned int i, n = atomic_load(&nb_parked);

	for (i = 0; i < n; i++) {
		struct dprpc_request *req = atomic_exchange(&parked[i], NULL);

		if (req != NULL)
			cr_assert_eq(dprpc_reply(req, v, len), 0);
	}
}

static int
bg_loop(void *unused)
{
	unsigned int idle = 0, i;

	(void)unused;
	while (!atomic_load(&stop_bg)) {
		unsigned int work = dpt_switch_step(&sw);

		for (i = 0; i < 3; i++) {
			int n = dprpc_poll(ag[i], 32);

			work += n > 0 ? (unsigned int)n : 0;
		}
		if (work > 0)
			idle = 0;
		else if (++idle > 1000)
			usleep(20);
	}
	return 0;
}

static void
setup(void)
{
	static const char *names[] = {"a", "b", "c"};
	struct dprpc_agent_conf c;
	unsigned int i;

	cr_assert_geq(dpt_eal_init("rref"), 0);
	mp = rte_pktmbuf_pool_create(
		"dpt_mp", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	cr_assert_not_null(mp);
	cr_assert_eq(dpt_switch_make(&sw, 3), 0);
	for (i = 0; i < 3; i++) {
		dprpc_agent_conf_init(&c);
		c.name = names[i];
		c.world = DPT_WORLD3;
		c.port.id = sw.port[i];
		c.port.mbuf_pool = mp;
		c.port.nb_mbufs = 2048;
		c.rrefs.max = 4096;
		/* One lcore polls the three agents and runs their handlers,
		 * which checksum values of up to 8 MiB: on a loaded machine
		 * (ASan, other builds) that may keep a peer silent for over a
		 * second.  No test here is about liveness. */
		c.liveness.peer_timeout_us = 30 * 1000 * 1000;
		c.rrefs.value_free = value_freed;
		c.rrefs.value_free_arg = (void *)(uintptr_t)i;
		ag[i] = dprpc_agent_create(&c);
		cr_assert_not_null(ag[i], "agent %s: %s", names[i], rte_strerror(rte_errno));
		cr_assert_eq(dprpc_register(ag[i], "make", h_make, NULL, DPRPC_HANDLER_INLINE), 0);
		cr_assert_eq(dprpc_register(ag[i], "fail", h_fail, NULL, DPRPC_HANDLER_INLINE), 0);
		cr_assert_eq(dprpc_register(ag[i], "park", h_park, NULL, DPRPC_HANDLER_INLINE), 0);
		cr_assert_eq(dprpc_register(ag[i], "add", h_add, NULL, DPRPC_HANDLER_INLINE), 0);
		cr_assert_eq(dprpc_register(ag[i], "big", h_big, NULL, DPRPC_HANDLER_INLINE), 0);
		cr_assert_eq(dprpc_register(ag[i], "vsum", h_vsum, NULL, DPRPC_HANDLER_INLINE), 0);
		cr_assert_eq(dprpc_register(ag[i], "adopt", h_adopt, (void *)(uintptr_t)i,
				     DPRPC_HANDLER_INLINE),
			0);
	}
	atomic_store(&stop_bg, false);
	cr_assert_eq(rte_eal_remote_launch(bg_loop, NULL, 1), 0);
}

static void
teardown(void)
{
	struct dprpc_agent_usage u;
	unsigned int i;

	/* A test may end with a bookkeeping message (a DELETE's answer) still
	 * on its way: let the agents settle (bounded) before counting. */
	for (i = 0; i < 3; i++)
		for (int k = 0; k < 2000 && ag[i] != NULL &&
				dprpc_agent_usage_get(ag[i], &u) == 0 && u.futures != 0;
			k++)
			usleep(1000);
	atomic_store(&stop_bg, true);
	rte_eal_wait_lcore(1);
	for (i = 0; i < 3; i++) {
		if (ag[i] == NULL)
			continue;
		cr_assert_eq(dprpc_agent_usage_get(ag[i], &u), 0);
		cr_expect_eq(u.futures, 0u, "futures left on %u: %u", i, u.futures);
		cr_assert_eq(dprpc_agent_destroy(ag[i]), 0);
		ag[i] = NULL;
	}
	cr_expect_eq(rte_mempool_in_use_count(mp), 0u, "mbufs leaked");
	dpt_eal_cleanup();
}

TestSuite(rref_ring, .init = setup, .fini = teardown, .timeout = 60);

static struct dprpc_rref_debug
dbg(struct dprpc_agent *x)
{
	struct dprpc_rref_debug d;

	cr_assert_eq(dprpc_rref_debug_get(x, &d), 0);
	return d;
}

/* Wait (bounded, ~2 s) until @x owns @owners values with @forks forks. */
static void
wait_owner(struct dprpc_agent *x, uint64_t owners, uint64_t forks)
{
	struct dprpc_rref_debug d;

	for (int i = 0; i < 20000; i++) {
		d = dbg(x);
		if (d.num_owner_rrefs == owners && d.num_forks == forks)
			return;
		usleep(100);
	}
	cr_assert_fail("%s owns %lu values with %lu forks, expected %lu and %lu",
		dprpc_agent_name(x), (unsigned long)d.num_owner_rrefs, (unsigned long)d.num_forks,
		(unsigned long)owners, (unsigned long)forks);
}

/* Wait until @x has no pending fork and no pending user. */
static void
wait_settled(struct dprpc_agent *x)
{
	struct dprpc_rref_debug d;

	for (int i = 0; i < 20000; i++) {
		d = dbg(x);
		if (d.num_pending_forks == 0 && d.num_pending_users == 0)
			return;
		usleep(100);
	}
	cr_assert_fail("%s: %lu pending forks, %lu pending users", dprpc_agent_name(x),
		(unsigned long)d.num_pending_forks, (unsigned long)d.num_pending_users);
}

/* The waits below that must end well are bounded at 20 s: only a failing
 * test waits that long, and a busy machine may stall the loop polling the
 * agents for a good part of a shorter bound. */
static void
expect_value(struct dprpc_rref *r, const void *v, size_t len)
{
	char out[64];
	size_t out_len = sizeof(out);
	struct dprpc_error e;
	int rc = dprpc_rref_to_here(r, 20 * 1000 * 1000, out, &out_len, &e);

	cr_assert_eq(rc, 0, "to_here: %d (%s)", rc, rc != 0 ? e.msg : "");
	cr_assert_eq(out_len, len);
	cr_assert_arr_eq(out, v, len);
}

static struct dprpc_rref *
fork_to(struct dprpc_rref *r, struct dprpc_agent *to)
{
	uint8_t d[DPRPC_RREF_FORK_SIZE];
	struct dprpc_rref *child;

	cr_assert_eq(dprpc_rref_fork(r, d, sizeof(d)), DPRPC_RREF_FORK_SIZE);
	child = dprpc_rref_from_fork(to, d, sizeof(d));
	cr_assert_not_null(child, "from_fork: %s", rte_strerror(rte_errno));
	return child;
}

Test(rref_ring, remote_to_here_and_release_frees_the_value)
{
	struct dprpc_future *f;
	struct dprpc_rref *r = dprpc_remote(A, "b", "make", "hello", 5, DPRPC_TIMEOUT_DEFAULT);

	cr_assert_not_null(r);
	cr_assert_not(dprpc_rref_is_owner(r));
	cr_assert_eq(dprpc_rref_owner(r), 1u);
	cr_assert_str_eq(dprpc_rref_owner_name(r), "b");
	cr_assert_eq(dprpc_rref_id(r) >> 48, 0u, "created by a");
	expect_value(r, "hello", 5);
	f = dprpc_rref_creation_future(r);
	cr_assert_eq(dprpc_future_wait(f, 20 * 1000 * 1000), 0);
	dprpc_future_put(f);
	cr_assert(dprpc_rref_confirmed_by_owner(r));
	wait_owner(B, 1, 1);
	cr_assert_eq(dbg(A).num_users, 1u);
	cr_assert_eq(dprpc_rref_release(r), 0);
	cr_assert_eq(dbg(A).num_users, 0u);
	wait_owner(B, 0, 0);
	cr_assert_eq(dbg(B).deletes_unknown, 0u);
	cr_assert_eq(dbg(A).messages_failed, 0u);
}

/* The owner is told of each value it frees, once, with its bytes; not of a
 * creation that failed. */
Test(rref_ring, the_owner_is_told_of_each_value_freed)
{
	unsigned int b0 = freed_count(1, 0), c0 = freed_count(2, 0);
	struct dprpc_rref *bad = dprpc_remote(A, "b", "fail", NULL, 0, DPRPC_TIMEOUT_DEFAULT);
	struct dprpc_rref *r, *loc;
	char out[16];
	size_t len = sizeof(out);

	cr_assert_not_null(bad);
	cr_assert_eq(dprpc_rref_to_here(bad, 20 * 1000 * 1000, out, &len, NULL), -EPERM);
	cr_assert_eq(dprpc_rref_release(bad), 0);
	wait_owner(B, 0, 0);
	r = dprpc_remote(A, "b", "make", "one value", 9, DPRPC_TIMEOUT_DEFAULT);
	cr_assert_not_null(r);
	expect_value(r, "one value", 9);
	cr_assert_eq(dprpc_rref_release(r), 0);
	wait_owner(B, 0, 0);
	cr_assert_eq(freed_count(1, b0 + 1), b0 + 1);
	cr_assert_str_eq(freed_last[1], "one value");
	loc = dprpc_rref_create_local(C, "local", 5);
	cr_assert_not_null(loc);
	cr_assert_eq(dprpc_rref_release(loc), 0);
	cr_assert_eq(freed_count(2, c0 + 1), c0 + 1);
	cr_assert_str_eq(freed_last[2], "local");
	/* Nothing more comes for b: the failed creation is never reported. */
	wait_owner(B, 0, 0);
	cr_assert_eq(freed_count(1, b0 + 2), b0 + 1);
}

Test(rref_ring, local_rref_lives_while_a_user_holds_it)
{
	const void *v;
	size_t len;
	struct dprpc_rref *r = dprpc_rref_create_local(A, "local", 5), *rb;

	cr_assert_not_null(r);
	cr_assert(dprpc_rref_is_owner(r));
	cr_assert(dprpc_rref_confirmed_by_owner(r));
	cr_assert_eq(dprpc_rref_local_value(r, &v, &len), 0);
	cr_assert_eq(len, 5u);
	cr_assert_arr_eq(v, "local", 5);
	expect_value(r, "local", 5);
	rb = fork_to(r, B);
	cr_assert_eq(dprpc_rref_local_value(rb, &v, &len), -EPERM);
	expect_value(rb, "local", 5);
	wait_settled(B);
	cr_assert_eq(dprpc_rref_release(r), 0);
	/* b's reference keeps it. */
	wait_owner(A, 1, 1);
	expect_value(rb, "local", 5);
	cr_assert_eq(dprpc_rref_release(rb), 0);
	wait_owner(A, 0, 0);
}

Test(rref_ring, remote_to_self_is_an_owner_handle)
{
	const void *v;
	size_t len;
	struct dprpc_rref *r = dprpc_remote(A, "a", "make", "me", 2, DPRPC_TIMEOUT_DEFAULT);

	cr_assert_not_null(r);
	cr_assert(dprpc_rref_is_owner(r));
	expect_value(r, "me", 2);
	cr_assert_eq(dprpc_rref_local_value(r, &v, &len), 0);
	cr_assert_arr_eq(v, "me", 2);
	cr_assert_eq(dbg(A).num_owner_rrefs, 1u);
	cr_assert_eq(dbg(A).num_owner_handles, 1u);
	cr_assert_eq(dprpc_rref_release(r), 0);
	cr_assert_eq(dbg(A).num_owner_rrefs, 0u);
	cr_assert_eq(dbg(A).num_owner_handles, 0u);
}

Test(rref_ring, proxies_run_on_the_owner_with_its_value)
{
	uint64_t forty = 40, two = 2, five = 5, out, want;
	size_t out_len = sizeof(out);
	struct dprpc_rref *r = dprpc_remote(A, "b", "make", &forty, 8, DPRPC_TIMEOUT_DEFAULT), *r2;
	struct dprpc_future *f;

	cr_assert_not_null(r);
	cr_assert_eq(
		dprpc_rref_rpc_sync(r, "add", &two, 8, DPRPC_TIMEOUT_DEFAULT, &out, &out_len, NULL),
		0);
	cr_assert_eq(out, 42u);
	f = dprpc_rref_rpc_async(r, "add", &five, 8, DPRPC_TIMEOUT_DEFAULT);
	cr_assert_not_null(f);
	cr_assert_eq(dprpc_future_wait(f, 20 * 1000 * 1000), 0);
	cr_assert_eq(*(const uint64_t *)dprpc_future_value(f, NULL), 45u);
	dprpc_future_put(f);
	/* rref.remote().add(5): a new RRef on b. */
	r2 = dprpc_rref_remote(r, "add", &five, 8, DPRPC_TIMEOUT_DEFAULT);
	cr_assert_not_null(r2);
	cr_assert_eq(dprpc_rref_owner(r2), 1u);
	want = 45;
	expect_value(r2, &want, 8);
	wait_owner(B, 2, 2);
	/* A proxy on an owner handle runs locally. */
	{
		struct dprpc_rref *l = dprpc_rref_create_local(A, &forty, 8);

		out_len = sizeof(out);
		cr_assert_eq(dprpc_rref_rpc_sync(l, "add", &two, 8, DPRPC_TIMEOUT_DEFAULT, &out,
				     &out_len, NULL),
			0);
		cr_assert_eq(out, 42u);
		dprpc_rref_release(l);
	}
	dprpc_rref_release(r);
	dprpc_rref_release(r2);
	wait_owner(B, 0, 0);
	cr_assert_eq(dbg(A).num_owner_rrefs, 0u);
}

/* The proxies by handler id (dprpc_rref_rpc_sync_id(),
 * dprpc_rref_remote_id()) answer as by name; a handler the owner does not
 * have fails there (-ENOENT, origin the owner), id 0 here, and a
 * creation's error comes back from both at once. */
Test(rref_ring, proxies_by_handler_id)
{
	uint64_t forty = 40, two = 2, five = 5, out, want = 45;
	size_t out_len = sizeof(out);
	uint32_t add = dprpc_handler_id("add"), nope = dprpc_handler_id("nope");
	struct dprpc_rref *r, *r2, *bad;
	struct dprpc_error e;

	r = dprpc_remote_id(A, 1, dprpc_handler_id("make"), &forty, 8, DPRPC_TIMEOUT_DEFAULT);
	cr_assert_not_null(r);
	cr_assert_eq(
		dprpc_rref_rpc_sync_id(r, add, &two, 8, DPRPC_TIMEOUT_DEFAULT, &out, &out_len, &e),
		0);
	cr_assert_eq(out_len, 8u);
	cr_assert_eq(out, 42u);
	r2 = dprpc_rref_remote_id(r, add, &five, 8, DPRPC_TIMEOUT_DEFAULT);
	cr_assert_not_null(r2, "%s", rte_strerror(rte_errno));
	cr_assert_eq(dprpc_rref_owner(r2), 1u);
	cr_assert_not(dprpc_rref_is_owner(r2));
	expect_value(r2, &want, 8);
	wait_owner(B, 2, 2);
	/* No such handler on the owner. */
	out_len = sizeof(out);
	cr_assert_eq(
		dprpc_rref_rpc_sync_id(r, nope, &two, 8, DPRPC_TIMEOUT_DEFAULT, &out, &out_len, &e),
		-ENOENT);
	cr_assert_eq(e.code, -ENOENT);
	cr_assert_eq(e.origin, 1u);
	bad = dprpc_rref_remote_id(r, nope, NULL, 0, DPRPC_TIMEOUT_DEFAULT);
	cr_assert_not_null(bad);
	out_len = sizeof(out);
	cr_assert_eq(dprpc_rref_to_here(bad, DPRPC_TIMEOUT_DEFAULT, &out, &out_len, &e), -ENOENT);
	cr_assert_eq(e.origin, 1u);
	/* Refused here. */
	out_len = sizeof(out);
	cr_assert_eq(dprpc_rref_rpc_sync_id(r, 0, &two, 8, 0, &out, &out_len, NULL), -EINVAL);
	cr_assert_eq(dprpc_rref_rpc_sync_id(r, add, NULL, 8, 0, &out, &out_len, NULL), -EINVAL);
	rte_errno = 0;
	cr_assert_null(dprpc_rref_remote_id(r, 0, &two, 8, 0));
	cr_assert_eq(rte_errno, EINVAL);
	/* A failed creation's error, from both, at once. */
	out_len = sizeof(out);
	cr_assert_eq(dprpc_rref_rpc_sync_id(
			     bad, add, &two, 8, DPRPC_TIMEOUT_DEFAULT, &out, &out_len, &e),
		-ENOENT);
	rte_errno = 0;
	cr_assert_null(dprpc_rref_remote_id(bad, add, &two, 8, DPRPC_TIMEOUT_DEFAULT));
	cr_assert_eq(rte_errno, ENOENT);
	dprpc_rref_release(bad);
	dprpc_rref_release(r2);
	dprpc_rref_release(r);
	wait_owner(B, 0, 0);
}

/* A proxy and a fetch sent before the value exists wait for it on the
 * owner. */
Test(rref_ring, uses_wait_for_a_pending_value)
{
	uint64_t forty = 40, two = 2;
	struct dprpc_rref *r = dprpc_remote(A, "b", "park", NULL, 0, DPRPC_TIMEOUT_DEFAULT), *rc;
	struct dprpc_future *fetch, *proxy, *fetch_c;

	cr_assert_not_null(r);
	fetch = dprpc_rref_to_here_async(r, DPRPC_TIMEOUT_DEFAULT);
	proxy = dprpc_rref_rpc_async(r, "add", &two, 8, DPRPC_TIMEOUT_DEFAULT);
	cr_assert_not_null(fetch);
	cr_assert_not_null(proxy);
	/* A forked user fetches from the owner (FETCH waits there). */
	rc = fork_to(r, C);
	fetch_c = dprpc_rref_to_here_async(rc, DPRPC_TIMEOUT_DEFAULT);
	cr_assert_not_null(fetch_c);
	for (int i = 0; i < 20000 && atomic_load(&nb_parked) == 0; i++)
		usleep(100);
	cr_assert_eq(atomic_load(&nb_parked), 1u);
	cr_assert_eq(dbg(A).num_pending_users, 1u);
	usleep(10000);
	cr_assert_not(dprpc_future_is_done(fetch));
	cr_assert_not(dprpc_future_is_done(proxy));
	cr_assert_not(dprpc_future_is_done(fetch_c));
	reply_parked(&forty, 8);
	cr_assert_eq(dprpc_future_wait(fetch_c, 20 * 1000 * 1000), 0);
	cr_assert_eq(*(const uint64_t *)dprpc_future_value(fetch_c, NULL), 40u);
	dprpc_future_put(fetch_c);
	dprpc_rref_release(rc);
	cr_assert_eq(dprpc_future_wait(fetch, 20 * 1000 * 1000), 0);
	cr_assert_eq(*(const uint64_t *)dprpc_future_value(fetch, NULL), 40u);
	cr_assert_eq(dprpc_future_wait(proxy, 20 * 1000 * 1000), 0);
	cr_assert_eq(*(const uint64_t *)dprpc_future_value(proxy, NULL), 42u);
	dprpc_future_put(fetch);
	dprpc_future_put(proxy);
	wait_settled(A);
	dprpc_rref_release(r);
	wait_owner(B, 0, 0);
}

/* a creates on b, forks to c through an RPC (c adopts it), c forks back to
 * a; the three user references are released in each of the 6 orders: the
 * value lives exactly until the last one goes. */
Test(rref_ring, fork_chain_released_in_every_order)
{
	static const int orders[6][3] = {
		{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
	uint8_t d[DPRPC_RREF_FORK_SIZE];
	uint32_t slot;
	size_t slen;

	for (int o = 0; o < 6; o++) {
		uint64_t v = 1000 + (uint64_t)o;
		struct dprpc_rref *h[3];

		h[0] = dprpc_remote(A, "b", "make", &v, 8, DPRPC_TIMEOUT_DEFAULT);
		cr_assert_not_null(h[0]);
		/* a -> c inside a call's payload. */
		cr_assert_eq(dprpc_rref_fork(h[0], d, sizeof(d)), DPRPC_RREF_FORK_SIZE);
		slen = sizeof(slot);
		cr_assert_eq(dprpc_rpc_sync(A, "c", "adopt", d, sizeof(d), DPRPC_TIMEOUT_DEFAULT,
				     &slot, &slen, NULL),
			0);
		h[1] = atomic_exchange(&adopted[2][slot], NULL);
		cr_assert_not_null(h[1]);
		cr_assert_eq(dprpc_rref_agent(h[1]), C);
		/* c -> a. */
		h[2] = fork_to(h[1], A);
		for (int i = 0; i < 3; i++)
			expect_value(h[i], &v, 8);
		wait_settled(A);
		wait_settled(C);
		wait_owner(B, 1, 3);
		for (int k = 0; k < 3; k++) {
			cr_assert_eq(dprpc_rref_release(h[orders[o][k]]), 0);
			if (k < 2) {
				wait_owner(B, 1, 2 - (uint64_t)k);
				expect_value(h[orders[o][2]], &v, 8);
			}
		}
		wait_owner(B, 0, 0);
		cr_assert_eq(dbg(A).num_users, 0u);
		cr_assert_eq(dbg(C).num_users, 0u);
	}
	cr_assert_eq(dbg(B).deletes_unknown, 0u);
}

/* G2: a parent released before its child is confirmed keeps its reference
 * until the owner accepts the child. */
Test(rref_ring, parent_keeps_its_reference_until_the_child_is_confirmed)
{
	uint8_t d[DPRPC_RREF_FORK_SIZE];
	struct dprpc_rref *r = dprpc_remote(A, "b", "make", "g2", 2, DPRPC_TIMEOUT_DEFAULT), *rc;

	cr_assert_not_null(r);
	expect_value(r, "g2", 2);
	cr_assert_eq(dprpc_rref_fork(r, d, sizeof(d)), DPRPC_RREF_FORK_SIZE);
	cr_assert_eq(dprpc_rref_release(r), 0);
	cr_assert_eq(dprpc_rref_release(r), -EINVAL, "a second release is refused");
	usleep(20000);
	/* Nothing went to b: a still counts its user, with one pending fork. */
	cr_assert_eq(dbg(A).num_users, 1u);
	cr_assert_eq(dbg(A).num_pending_forks, 1u);
	wait_owner(B, 1, 1);
	rc = dprpc_rref_from_fork(C, d, sizeof(d));
	cr_assert_not_null(rc);
	expect_value(rc, "g2", 2);
	wait_settled(A);
	cr_assert_eq(dbg(A).num_users, 0u);
	wait_owner(B, 1, 1); /* c's fork only */
	dprpc_rref_release(rc);
	wait_owner(B, 0, 0);
}

/* A fork that reaches the owner becomes an owner handle. */
Test(rref_ring, fork_back_to_the_owner_is_an_owner_handle)
{
	const void *v;
	size_t len;
	struct dprpc_rref *r = dprpc_remote(A, "b", "make", "own", 3, DPRPC_TIMEOUT_DEFAULT), *rb;

	cr_assert_not_null(r);
	expect_value(r, "own", 3);
	rb = fork_to(r, B);
	cr_assert(dprpc_rref_is_owner(rb));
	cr_assert_eq(dprpc_rref_local_value(rb, &v, &len), 0);
	cr_assert_arr_eq(v, "own", 3);
	wait_settled(A);
	dprpc_rref_release(r);
	wait_owner(B, 1, 0); /* the local handle keeps it */
	cr_assert_eq(dbg(B).num_owner_handles, 1u);
	dprpc_rref_release(rb);
	wait_owner(B, 0, 0);
}

Test(rref_ring, failed_creation_is_reported_on_every_use)
{
	char out[8];
	size_t out_len = sizeof(out);
	struct dprpc_error e;
	uint8_t d[DPRPC_RREF_FORK_SIZE];
	struct dprpc_future *f;
	struct dprpc_rref *r = dprpc_remote(A, "b", "fail", NULL, 0, DPRPC_TIMEOUT_DEFAULT), *r2;

	cr_assert_not_null(r);
	cr_assert_eq(dprpc_rref_to_here(r, DPRPC_TIMEOUT_DEFAULT, out, &out_len, &e), -EPERM);
	cr_assert_eq(e.origin, 1u);
	cr_assert_str_eq(e.msg, "no");
	f = dprpc_rref_creation_future(r);
	cr_assert_eq(dprpc_future_wait(f, 20 * 1000 * 1000), -EPERM);
	dprpc_future_put(f);
	cr_assert_not(dprpc_rref_confirmed_by_owner(r));
	/* Once the creation is known to have failed, uses fail at once. */
	f = dprpc_rref_rpc_async(r, "add", NULL, 0, DPRPC_TIMEOUT_DEFAULT);
	cr_assert_not_null(f);
	cr_assert_eq(dprpc_future_wait(f, 0), -EPERM);
	cr_assert_str_eq(dprpc_future_error(f)->msg, "no");
	dprpc_future_put(f);
	cr_assert_eq(dprpc_rref_fork(r, d, sizeof(d)), -EPERM);
	cr_assert_null(dprpc_rref_remote(r, "add", NULL, 0, DPRPC_TIMEOUT_DEFAULT));
	cr_assert_eq(rte_errno, EPERM);
	/* The owner keeps the error until the user goes. */
	wait_owner(B, 1, 1);
	dprpc_rref_release(r);
	wait_owner(B, 0, 0);
	/* An unknown handler. */
	r2 = dprpc_remote(A, "b", "nope", NULL, 0, DPRPC_TIMEOUT_DEFAULT);
	cr_assert_not_null(r2);
	out_len = sizeof(out);
	cr_assert_eq(dprpc_rref_to_here(r2, DPRPC_TIMEOUT_DEFAULT, out, &out_len, &e), -ENOENT);
	dprpc_rref_release(r2);
	wait_owner(B, 0, 0);
}

Test(rref_ring, timeouts_of_creation_and_of_to_here)
{
	char out[8];
	size_t out_len = sizeof(out);
	struct dprpc_error e;
	struct dprpc_rref *r;
	uint64_t t0, t1;

	/* to_here times out while the owner's handler has not replied. */
	r = dprpc_remote(A, "b", "park", NULL, 0, DPRPC_TIMEOUT_DEFAULT);
	cr_assert_not_null(r);
	t0 = rte_rdtsc();
	cr_assert_eq(dprpc_rref_to_here(r, 20000, out, &out_len, &e), -ETIMEDOUT);
	t1 = rte_rdtsc();
	cr_assert_geq(t1 - t0, rte_get_tsc_hz() / 100, "waited at least ~20 ms");
	reply_parked("late", 4);
	out_len = sizeof(out);
	cr_assert_eq(dprpc_rref_to_here(r, DPRPC_TIMEOUT_DEFAULT, out, &out_len, &e), 0);
	cr_assert_arr_eq(out, "late", 4);
	dprpc_rref_release(r);
	wait_owner(B, 0, 0);

	/* The creation times out: to_here reports it. */
	atomic_store(&nb_parked, 0);
	r = dprpc_remote(A, "b", "park", NULL, 0, 20000);
	cr_assert_not_null(r);
	out_len = sizeof(out);
	{
		struct dprpc_future *f = dprpc_rref_creation_future(r);

		cr_assert_eq(dprpc_future_wait(f, 2000000), -ETIMEDOUT);
		dprpc_future_put(f);
	}
	cr_assert_eq(dprpc_rref_to_here(r, DPRPC_TIMEOUT_DEFAULT, out, &out_len, &e), -ETIMEDOUT);
	reply_parked("x", 1);
	dprpc_rref_release(r);
	wait_owner(B, 0, 0);
}

Test(rref_ring, local_value_errors)
{
	const void *v;
	size_t len;
	struct dprpc_rref *r = dprpc_remote(A, "a", "park", NULL, 0, DPRPC_TIMEOUT_DEFAULT);

	cr_assert_not_null(r);
	for (int i = 0; i < 20000 && atomic_load(&nb_parked) == 0; i++)
		usleep(100);
	cr_assert_eq(dprpc_rref_local_value(r, &v, &len), -EAGAIN);
	reply_parked("ok", 2);
	for (int i = 0; i < 20000 && dprpc_rref_local_value(r, &v, &len) == -EAGAIN; i++)
		usleep(100);
	cr_assert_eq(dprpc_rref_local_value(r, &v, &len), 0);
	cr_assert_eq(dprpc_rref_local_value(r, NULL, &len), -EINVAL);
	dprpc_rref_release(r);
	r = dprpc_remote(A, "b", "fail", NULL, 0, DPRPC_TIMEOUT_DEFAULT);
	cr_assert_eq(dprpc_rref_local_value(r, &v, &len), -EPERM);
	dprpc_rref_release(r);
	wait_owner(B, 0, 0);
}

/* Fork data used after the RRef was deleted: the owner refuses it. */
Test(rref_ring, fork_of_a_deleted_rref_fails_clearly)
{
	uint8_t d[DPRPC_RREF_FORK_SIZE], bad[DPRPC_RREF_FORK_SIZE];
	char out[8];
	size_t out_len = sizeof(out);
	struct dprpc_error e;
	struct dprpc_rref *r = dprpc_remote(A, "b", "make", "gone", 4, DPRPC_TIMEOUT_DEFAULT), *rc;

	cr_assert_not_null(r);
	expect_value(r, "gone", 4);
	cr_assert_eq(dprpc_rref_fork(r, d, sizeof(d)), DPRPC_RREF_FORK_SIZE);
	rc = dprpc_rref_from_fork(C, d, sizeof(d));
	cr_assert_not_null(rc);
	wait_settled(C);
	dprpc_rref_release(r);
	dprpc_rref_release(rc);
	wait_owner(B, 0, 0);
	/* The same data again, on a user: the owner answers -ENOENT. */
	rc = dprpc_rref_from_fork(C, d, sizeof(d));
	cr_assert_not_null(rc);
	cr_assert_eq(dprpc_rref_to_here(rc, DPRPC_TIMEOUT_DEFAULT, out, &out_len, &e), -ENOENT);
	cr_assert_eq(e.origin, 1u);
	cr_assert_not(dprpc_rref_confirmed_by_owner(rc));
	dprpc_rref_release(rc);
	/* On the owner itself. */
	cr_assert_null(dprpc_rref_from_fork(B, d, sizeof(d)));
	cr_assert_eq(rte_errno, ENOENT);
	/* Garbage. */
	memcpy(bad, d, sizeof(bad));
	bad[0] ^= 0xff;
	cr_assert_null(dprpc_rref_from_fork(C, bad, sizeof(bad)));
	cr_assert_eq(rte_errno, EPROTO);
	cr_assert_null(dprpc_rref_from_fork(C, d, sizeof(d) - 1));
	cr_assert_eq(rte_errno, EINVAL);
	wait_settled(C);
	wait_owner(B, 0, 0);
	cr_assert_eq(dbg(C).num_users, 0u);
}

/* Entries removed while the agent runs are freed by their call_rcu
 * callbacks; the teardown waits for them with rr_rcu_drain() (no
 * urcu_qsbr_barrier(): rref/table.c).  After 64 RRefs made and released,
 * each side's count of entries queued goes back to 0 once drained, and
 * with it every RRef future is back in its pool: the futures a drain
 * that returned early would free after the pool. */
Test(rref_ring, released_entries_are_freed_by_the_drain)
{
	struct dprpc_rref *r[64];
	uint64_t v;
	unsigned int i;

	for (i = 0; i < 64; i++) {
		v = i;
		r[i] = dprpc_remote(A, "b", "make", &v, sizeof(v), DPRPC_TIMEOUT_DEFAULT);
		cr_assert_not_null(r[i]);
	}
	for (i = 0; i < 64; i++) {
		v = i;
		expect_value(r[i], &v, sizeof(v));
	}
	wait_owner(B, 64, 64);
	for (i = 0; i < 64; i++)
		cr_assert_eq(dprpc_rref_release(r[i]), 0);
	wait_owner(B, 0, 0);
	wait_settled(A);
	for (i = 0; i < 2; i++) {
		struct rr_ctx *ctx = rr_ctx_of(ag[i]);

		rr_rcu_drain(ctx);
		cr_assert_eq(atomic_load(&ctx->rcu_pending), 0u);
		cr_assert_eq(dprpc_future_pool_in_use(ctx->fpool), 0u, "RRef futures of %s",
			dprpc_agent_name(ag[i]));
	}
}

Test(rref_ring, leak_report_and_graceful_shutdown)
{
	struct dprpc_rref_info info[4];
	struct dprpc_rref *r = dprpc_remote(A, "b", "make", "leak", 4, DPRPC_TIMEOUT_DEFAULT);
	struct dprpc_rref *l = dprpc_rref_create_local(B, "mine", 4);

	cr_assert_not_null(r);
	cr_assert_not_null(l);
	expect_value(r, "leak", 4);
	wait_owner(B, 2, 1);
	cr_assert_eq(dprpc_rref_list(A, info, 4), 1);
	cr_assert_eq(info[0].kind, DPRPC_RREF_USER);
	cr_assert_eq(info[0].rref_id, dprpc_rref_id(r));
	cr_assert(info[0].confirmed);
	cr_assert_eq(dprpc_rref_list(B, info, 4), 2);
	/* Without the flag, what is left is ignored. */
	cr_assert_eq(dprpc_rref_shutdown(B, 20000, 0), 0);
	/* b released its own handle; a still holds its user: reported. */
	cr_assert_eq(dprpc_rref_shutdown(B, 20000, DPRPC_RREF_REPORT_LEAKS), 1);
	cr_assert_eq(dprpc_rref_list(B, info, 4), 1);
	cr_assert_eq(info[0].kind, DPRPC_RREF_OWNED);
	cr_assert_eq(info[0].refs, 1u);
	/* a's shutdown deletes its users; then nothing is left anywhere. */
	cr_assert_eq(dprpc_rref_shutdown(A, 20 * 1000 * 1000, DPRPC_RREF_REPORT_LEAKS), 0);
	cr_assert_eq(dprpc_rref_shutdown(B, 20 * 1000 * 1000, DPRPC_RREF_REPORT_LEAKS), 0);
	cr_assert_eq(dbg(B).num_owner_rrefs, 0u);
	(void)l;
}

/* dprpc_rref_shutdown() ends the references of the handles the
 * application still holds but not their memory: the handles stay valid,
 * their uses fail with ESHUTDOWN, and dprpc_rref_release() of each is then
 * a plain 0 that frees it (under ASan, a release that read a handle freed
 * by shutdown would be reported here). */
Test(rref_ring, handles_stay_valid_after_shutdown_until_released)
{
	uint8_t d[DPRPC_RREF_FORK_SIZE];
	const void *v;
	size_t len;
	char out[8];
	size_t out_len = sizeof(out);
	struct dprpc_future *f;
	struct dprpc_rref *r = dprpc_remote(A, "b", "make", "user", 4, DPRPC_TIMEOUT_DEFAULT);
	struct dprpc_rref *l = dprpc_rref_create_local(A, "own", 3);
	uint64_t rid, lid;

	cr_assert_not_null(r);
	cr_assert_not_null(l);
	expect_value(r, "user", 4);
	rid = dprpc_rref_id(r);
	lid = dprpc_rref_id(l);
	wait_owner(B, 1, 1);
	cr_assert_eq(dprpc_rref_shutdown(A, 20 * 1000 * 1000, DPRPC_RREF_REPORT_LEAKS), 0);
	wait_owner(B, 0, 0);
	cr_assert_eq(dbg(A).num_owner_rrefs, 0u);
	cr_assert_eq(dprpc_rref_list(A, NULL, 0), 0);
	/* Long past the grace period of anything shutdown freed. */
	usleep(100 * 1000);
	/* The handles are still the application's: accessors answer... */
	cr_assert_eq(dprpc_rref_id(r), rid);
	cr_assert_eq(dprpc_rref_id(l), lid);
	cr_assert_not(dprpc_rref_is_owner(r));
	cr_assert(dprpc_rref_is_owner(l));
	cr_assert_eq(dprpc_rref_owner(r), 1u);
	cr_assert_eq(dprpc_rref_agent(l), A);
	f = dprpc_rref_creation_future(l);
	cr_assert_not_null(f);
	dprpc_future_put(f);
	/* ...and every use fails with ESHUTDOWN, sending nothing. */
	cr_assert_eq(dprpc_rref_to_here(r, DPRPC_TIMEOUT_DEFAULT, out, &out_len, NULL), -ESHUTDOWN);
	cr_assert_null(dprpc_rref_to_here_async(l, DPRPC_TIMEOUT_DEFAULT));
	cr_assert_eq(rte_errno, ESHUTDOWN);
	cr_assert_null(dprpc_rref_rpc_async(r, "add", NULL, 0, DPRPC_TIMEOUT_DEFAULT));
	cr_assert_eq(rte_errno, ESHUTDOWN);
	cr_assert_null(dprpc_rref_remote(l, "add", NULL, 0, DPRPC_TIMEOUT_DEFAULT));
	cr_assert_eq(rte_errno, ESHUTDOWN);
	cr_assert_eq(dprpc_rref_fork(r, d, sizeof(d)), -ESHUTDOWN);
	cr_assert_eq(dprpc_rref_fork(l, d, sizeof(d)), -ESHUTDOWN);
	cr_assert_eq(dprpc_rref_local_value(l, &v, &len), -ESHUTDOWN);
	/* The application's release frees them. */
	cr_assert_eq(dprpc_rref_release(r), 0);
	cr_assert_eq(dprpc_rref_release(l), 0);
	cr_assert_eq(dbg(A).num_users, 0u);
	cr_assert_eq(dbg(A).messages_failed, 0u);
	cr_assert_eq(dbg(B).deletes_unknown, 0u);
	/* The agent works on: a new RRef after shutdown. */
	r = dprpc_remote(A, "b", "make", "again", 5, DPRPC_TIMEOUT_DEFAULT);
	cr_assert_not_null(r);
	expect_value(r, "again", 5);
	cr_assert_eq(dprpc_rref_release(r), 0);
	wait_owner(B, 0, 0);
}

/* to_here of @r is the @n bytes of big_byte(), byte-exact. */
static void
expect_big(struct dprpc_rref *r, size_t n)
{
	static uint8_t out[DPRPC_MAX_MSG_DEFAULT];
	size_t out_len = sizeof(out);
	struct dprpc_error e;
	int rc = dprpc_rref_to_here(r, 20 * 1000 * 1000, out, &out_len, &e);

	cr_assert_eq(rc, 0, "to_here of %zu bytes: %d (%s)", n, rc, rc != 0 ? e.msg : "");
	cr_assert_eq(out_len, n);
	for (size_t i = 0; i < n; i++)
		if (out[i] != big_byte(i))
			cr_assert_fail(
				"byte %zu of %zu: %u, expected %u", i, n, out[i], big_byte(i));
}

/* A proxy call on @r (its value is @n big_byte() bytes) with @alen
 * bytes of arguments: the owner's handler reads both whole. */
static void
expect_vsum(struct dprpc_rref *r, size_t n, size_t alen)
{
	uint8_t *args = big_buf(alen), *want = big_buf(n);
	uint64_t out[4];
	size_t out_len = sizeof(out);

	struct dprpc_error e;
	int rc = dprpc_rref_rpc_sync(r, "vsum", args, alen, 20 * 1000 * 1000, out, &out_len, &e);

	cr_assert_eq(rc, 0, "proxy on %zu bytes: %d (%s)", n, rc, rc != 0 ? e.msg : "");
	cr_assert_eq(out[0], fnv64(want, n));
	cr_assert_eq(out[1], n);
	cr_assert_eq(out[2], fnv64(args, alen));
	cr_assert_eq(out[3], alen);
	free(args);
	free(want);
}

/* Values of 1 MiB and 8 MiB (max_msg_size): made by remote(), read by
 * to_here byte-exact (they are not carried by the confirmation: fetched),
 * read by a proxy on the owner, and fetched by a user forked to a third
 * worker; an owner value of 1 MiB likewise. */
Test(rref_ring, values_up_to_max_msg_size, .timeout = 240)
{
	static const uint64_t sizes[] = {1u << 20, DPRPC_MAX_MSG_DEFAULT};
	struct dprpc_rref *r, *rc, *l;
	struct dprpc_future *f;
	uint8_t *v;
	size_t len;

	for (unsigned int k = 0; k < RTE_DIM(sizes); k++) {
		r = dprpc_remote(A, "b", "big", &sizes[k], 8, DPRPC_TIMEOUT_DEFAULT);
		cr_assert_not_null(r, "%s", rte_strerror(rte_errno));
		expect_big(r, sizes[k]);
		/* The confirmation came without the value. */
		f = dprpc_rref_creation_future(r);
		cr_assert_eq(dprpc_future_wait(f, 0), 0);
		cr_assert_null(dprpc_future_value(f, &len));
		cr_assert_eq(len, 0u);
		dprpc_future_put(f);
		expect_big(r, sizes[k]); /* again, once confirmed */
		expect_vsum(r, sizes[k], 16);
		rc = fork_to(r, C);
		expect_big(rc, sizes[k]);
		expect_vsum(rc, sizes[k], 0);
		wait_owner(B, 1, 2);
		cr_assert_eq(dprpc_rref_release(r), 0);
		cr_assert_eq(dprpc_rref_release(rc), 0);
		wait_owner(B, 0, 0);
	}
	/* An owner's value of 1 MiB, read here and by a user on b. */
	v = big_buf(sizes[0]);
	l = dprpc_rref_create_local(A, v, sizes[0]);
	free(v);
	cr_assert_not_null(l);
	expect_big(l, sizes[0]);
	rc = fork_to(l, B);
	expect_big(rc, sizes[0]);
	expect_vsum(rc, sizes[0], 3);
	cr_assert_eq(dprpc_rref_release(rc), 0);
	cr_assert_eq(dprpc_rref_release(l), 0);
	wait_owner(A, 0, 0);
	cr_assert_eq(dbg(A).messages_failed, 0u);
}

/* to_here_async() while the creation of a large value is pending: the
 * confirmation comes without the value and the future then fetches it. */
Test(rref_ring, to_here_async_of_a_pending_large_value)
{
	const size_t n = 300 * 1000;
	uint8_t *v = big_buf(n);
	struct dprpc_rref *r = dprpc_remote(A, "b", "park", NULL, 0, DPRPC_TIMEOUT_DEFAULT);
	struct dprpc_future *f;
	const uint8_t *got;
	size_t len;

	cr_assert_not_null(r);
	for (int i = 0; i < 20000 && atomic_load(&nb_parked) == 0; i++)
		usleep(100);
	cr_assert_eq(atomic_load(&nb_parked), 1u);
	f = dprpc_rref_to_here_async(r, DPRPC_TIMEOUT_DEFAULT);
	cr_assert_not_null(f);
	cr_assert_not(dprpc_future_is_done(f));
	reply_parked(v, n);
	cr_assert_eq(dprpc_future_wait(f, 20 * 1000 * 1000), 0);
	got = dprpc_future_value(f, &len);
	cr_assert_eq(len, n);
	cr_assert_eq(memcmp(got, v, n), 0);
	dprpc_future_put(f);
	free(v);
	cr_assert_eq(dprpc_rref_release(r), 0);
	wait_owner(B, 0, 0);
}

/* remote(), proxies and rref.remote() with 64 KiB of arguments. */
Test(rref_ring, remote_with_large_arguments)
{
	const size_t n = 64 * 1024;
	uint8_t *args = big_buf(n);
	uint64_t out[4];
	struct dprpc_rref *r = dprpc_remote(A, "b", "make", args, n, DPRPC_TIMEOUT_DEFAULT), *r2;

	cr_assert_not_null(r, "%s", rte_strerror(rte_errno));
	expect_big(r, n); /* "make" echoes its arguments */
	expect_vsum(r, n, n);
	r2 = dprpc_rref_remote(r, "vsum", args, n, DPRPC_TIMEOUT_DEFAULT);
	cr_assert_not_null(r2, "%s", rte_strerror(rte_errno));
	{
		size_t len = sizeof(out);

		cr_assert_eq(dprpc_rref_to_here(r2, 20 * 1000 * 1000, out, &len, NULL), 0);
		cr_assert_eq(len, sizeof(out));
		cr_assert_eq(out[0], fnv64(args, n));
		cr_assert_eq(out[1], n);
		cr_assert_eq(out[2], fnv64(args, n));
		cr_assert_eq(out[3], n);
	}
	free(args);
	cr_assert_eq(dprpc_rref_release(r), 0);
	cr_assert_eq(dprpc_rref_release(r2), 0);
	wait_owner(B, 0, 0);
}

/* The three gathered RRef calls: arguments from four parts (one empty),
 * one frame and several, arrive as one payload, byte-exact. */
Test(rref_ring, gathered_arguments_of_remote_and_proxies)
{
	static const size_t sizes[] = {10, 64 * 1024};

	for (unsigned int i = 0; i < RTE_DIM(sizes); i++) {
		size_t n = sizes[i], len = 0;
		uint8_t *args = big_buf(n);
		struct iovec v[4] = {
			{.iov_base = args, .iov_len = 3},
			{.iov_base = NULL, .iov_len = 0},
			{.iov_base = args + 3, .iov_len = n / 2 - 3},
			{.iov_base = args + n / 2, .iov_len = n - n / 2},
		};
		struct dprpc_rref *r, *r2;
		struct dprpc_future *f;
		const uint64_t *out;
		uint64_t got[4];

		r = dprpc_remote_iov(
			A, 1, dprpc_handler_id("make"), v, RTE_DIM(v), DPRPC_TIMEOUT_DEFAULT);
		cr_assert_not_null(r, "%s", rte_strerror(rte_errno));
		expect_big(r, n); /* "make" echoes its arguments */
		f = dprpc_rref_rpc_async_iov(
			r, dprpc_handler_id("vsum"), v, RTE_DIM(v), DPRPC_TIMEOUT_DEFAULT);
		cr_assert_not_null(f, "%s", rte_strerror(rte_errno));
		cr_assert_eq(dprpc_future_wait(f, 20 * 1000 * 1000), 0);
		out = dprpc_future_value(f, &len);
		cr_assert_eq(len, 4 * sizeof(*out));
		cr_assert(out[0] == fnv64(args, n) && out[1] == n && out[2] == fnv64(args, n) &&
			  out[3] == n);
		dprpc_future_put(f);
		r2 = dprpc_rref_remote_iov(
			r, dprpc_handler_id("vsum"), v, RTE_DIM(v), DPRPC_TIMEOUT_DEFAULT);
		cr_assert_not_null(r2, "%s", rte_strerror(rte_errno));
		len = sizeof(got);
		cr_assert_eq(dprpc_rref_to_here(r2, 20 * 1000 * 1000, got, &len, NULL), 0);
		cr_assert(len == sizeof(got) && got[0] == fnv64(args, n) && got[1] == n &&
			  got[2] == fnv64(args, n) && got[3] == n);
		free(args);
		cr_assert_eq(dprpc_rref_release(r), 0);
		cr_assert_eq(dprpc_rref_release(r2), 0);
		wait_owner(B, 0, 0);
	}
}

/* Beyond max_msg_size: a value fails its creation with -EMSGSIZE; a local
 * value and arguments are refused at once (nothing is created). */
Test(rref_ring, values_over_max_msg_size_fail_with_emsgsize)
{
	const uint64_t over = DPRPC_MAX_MSG_DEFAULT + 1;
	const size_t args_over = DPRPC_MAX_MSG_DEFAULT - 40 + 1;
	uint8_t *v = big_buf(over);
	char out[8];
	size_t out_len = sizeof(out);
	struct dprpc_rref *r = dprpc_remote(A, "b", "big", &over, 8, DPRPC_TIMEOUT_DEFAULT), *k;
	struct dprpc_future *f;

	cr_assert_not_null(r);
	cr_assert_eq(dprpc_rref_to_here(r, 20 * 1000 * 1000, out, &out_len, NULL), -EMSGSIZE);
	f = dprpc_rref_creation_future(r);
	cr_assert_eq(dprpc_future_wait(f, 0), -EMSGSIZE);
	dprpc_future_put(f);
	cr_assert_eq(dprpc_rref_release(r), 0);
	cr_assert_null(dprpc_rref_create_local(A, v, over));
	cr_assert_eq(rte_errno, EMSGSIZE);
	cr_assert_null(dprpc_remote(A, "b", "make", v, args_over, DPRPC_TIMEOUT_DEFAULT));
	cr_assert_eq(rte_errno, EMSGSIZE);
	k = dprpc_rref_create_local(A, "k", 1);
	cr_assert_not_null(k);
	cr_assert_null(dprpc_rref_rpc_async(k, "vsum", v, args_over, DPRPC_TIMEOUT_DEFAULT));
	cr_assert_eq(rte_errno, EMSGSIZE);
	cr_assert_null(dprpc_rref_remote(k, "vsum", v, args_over, DPRPC_TIMEOUT_DEFAULT));
	cr_assert_eq(rte_errno, EMSGSIZE);
	/* One byte less fits. */
	cr_assert_not_null(f = dprpc_rref_rpc_async(k, "vsum", v, args_over - 1, 20 * 1000 * 1000));
	cr_assert_eq(dprpc_future_wait(f, 0), 0);
	dprpc_future_put(f);
	cr_assert_eq(dprpc_rref_release(k), 0);
	free(v);
	wait_owner(B, 0, 0);
	cr_assert_eq(dbg(A).num_owner_rrefs, 0u);
}

Test(rref_ring, reserved_handler_names_are_refused)
{
	cr_assert_eq(
		dprpc_register(A, "dprpc.rref.fetch", h_make, NULL, DPRPC_HANDLER_INLINE), -EINVAL);
	cr_assert_eq(dprpc_register(A, "dprpc.mine", h_make, NULL, DPRPC_HANDLER_INLINE), -EINVAL);
}

/* Several threads create, fork, fetch and release at once on a (to b and
 * c); everything is freed in the end, once (ASan checks the frees). */
#define CONC_THREADS 4
#define CONC_ITERS   150
static atomic_uint conc_errors;

static void *
conc_thread(void *arg)
{
	unsigned int t = (unsigned int)(uintptr_t)arg;
	uint8_t d[DPRPC_RREF_FORK_SIZE];

	for (unsigned int i = 0; i < CONC_ITERS; i++) {
		uint64_t v = (uint64_t)t << 32 | i, out = 0;
		size_t out_len = sizeof(out);
		struct dprpc_rref *r, *rc, *l;

		r = dprpc_remote(A, i % 2 ? "b" : "c", "make", &v, 8, DPRPC_TIMEOUT_DEFAULT);
		l = dprpc_rref_create_local(A, &v, 8);
		if (r == NULL || l == NULL) {
			atomic_fetch_add(&conc_errors, 1);
			continue;
		}
		if (dprpc_rref_to_here(r, DPRPC_TIMEOUT_DEFAULT, &out, &out_len, NULL) != 0 ||
			out != v)
			atomic_fetch_add(&conc_errors, 1);
		/* Fork r to the worker that does not own it, and l to b. */
		if (dprpc_rref_fork(r, d, sizeof(d)) != DPRPC_RREF_FORK_SIZE ||
			(rc = dprpc_rref_from_fork(i % 2 ? C : B, d, sizeof(d))) == NULL) {
			atomic_fetch_add(&conc_errors, 1);
		} else {
			if (i % 3 == 0)
				dprpc_rref_release(r); /* parent first */
			out_len = sizeof(out);
			if (dprpc_rref_to_here(rc, DPRPC_TIMEOUT_DEFAULT, &out, &out_len, NULL) !=
					0 ||
				out != v)
				atomic_fetch_add(&conc_errors, 1);
			dprpc_rref_release(rc);
			if (i % 3 != 0)
				dprpc_rref_release(r);
		}
		if (dprpc_rref_fork(l, d, sizeof(d)) != DPRPC_RREF_FORK_SIZE ||
			(rc = dprpc_rref_from_fork(B, d, sizeof(d))) == NULL) {
			atomic_fetch_add(&conc_errors, 1);
			dprpc_rref_release(l);
			continue;
		}
		dprpc_rref_release(l);
		out_len = sizeof(out);
		if (dprpc_rref_to_here(rc, DPRPC_TIMEOUT_DEFAULT, &out, &out_len, NULL) != 0 ||
			out != v)
			atomic_fetch_add(&conc_errors, 1);
		dprpc_rref_release(rc);
	}
	return NULL;
}

Test(rref_ring, concurrent_create_fork_fetch_release, .timeout = 240)
{
	pthread_t th[CONC_THREADS];

	for (unsigned int t = 0; t < CONC_THREADS; t++)
		cr_assert_eq(pthread_create(&th[t], NULL, conc_thread, (void *)(uintptr_t)t), 0);
	for (unsigned int t = 0; t < CONC_THREADS; t++)
		pthread_join(th[t], NULL);
	cr_assert_eq(atomic_load(&conc_errors), 0u);
	for (int i = 0; i < 3; i++)
		wait_settled(ag[i]);
	for (int i = 0; i < 3; i++) {
		wait_owner(ag[i], 0, 0);
		cr_assert_eq(dbg(ag[i]).num_users, 0u);
		cr_assert_eq(dbg(ag[i]).num_owner_handles, 0u);
		cr_assert_eq(dbg(ag[i]).deletes_unknown, 0u);
		cr_assert_eq(dbg(ag[i]).messages_failed, 0u);
	}
}

/* RRef messages that are too short or name nothing known are answered
 * with an error and change nothing. */
Test(rref_ring, malformed_rref_messages_are_refused)
{
	static const char *const names[] = {"dprpc.rref.remote", "dprpc.rref.fetch",
		"dprpc.rref.proxy", "dprpc.rref.notify", "dprpc.rref.accept", "dprpc.rref.delete"};
	uint8_t junk[40];
	struct dprpc_rref *keep = dprpc_rref_create_local(B, "k", 1);
	int rc;

	cr_assert_not_null(keep);
	for (unsigned int i = 0; i < 6; i++) {
		rc = dprpc_rpc_sync(
			A, "b", names[i], "x", 1, DPRPC_TIMEOUT_DEFAULT, NULL, NULL, NULL);
		cr_assert_eq(rc, -EPROTO, "%s: %d", names[i], rc);
	}
	/* Well-formed but unknown ids, from a worker that created nothing. */
	srand(7);
	for (unsigned int n = 0; n < 200; n++) {
		for (unsigned int k = 0; k < sizeof(junk); k++)
			junk[k] = (uint8_t)rand();
		junk[0] = 0x00; /* rref ids of worker 0 (a)... */
		junk[1] = 0x00;
		junk[36] = 0x00; /* parent rank 0..255: refused if out of range */
		(void)dprpc_rpc_sync(A, "b", names[1 + n % 5], junk, sizeof(junk),
			DPRPC_TIMEOUT_DEFAULT, NULL, NULL, NULL);
	}
	/* Junk that claims to come from a's users may leave placeholders on
	 * b (the protocol trusts the world's workers, as PyTorch's does); it
	 * must not crash b or touch what b made itself. */
	cr_assert_eq(dbg(B).num_owner_handles, 1u);
	expect_value(keep, "k", 1);
	dprpc_rref_release(keep);
	cr_assert_eq(dbg(B).num_owner_handles, 0u);
}

/* --- waiting on the polling thread --------------------------------------- */

/* The RRef "use" works on, and what it does: 't' to_here, 'p' a proxy
 * rpc_sync ("add"); it answers with the value or with the error. */
static struct dprpc_rref *_Atomic use_target;

static int
h_use(struct dprpc_request *req, void *arg)
{
	struct dprpc_rref *r = atomic_load(&use_target);
	uint64_t two = 2;
	char out[64];
	size_t len, out_len = sizeof(out);
	const char *op = dprpc_request_payload(req, &len);
	int rc;

	(void)arg;
	if (len != 1 || r == NULL)
		return -EINVAL;
	if (op[0] == 't')
		rc = dprpc_rref_to_here(r, DPRPC_TIMEOUT_DEFAULT, out, &out_len, NULL);
	else
		rc = dprpc_rref_rpc_sync(
			r, "add", &two, 8, DPRPC_TIMEOUT_DEFAULT, out, &out_len, NULL);
	if (rc != 0)
		return dprpc_reply_error(req, rc, "waited on the poller");
	return dprpc_reply(req, out, out_len);
}

/* Call "use" on b with @op on @r: the error b's handler answered, with
 * nothing sent by b meanwhile. */
static int
use_on_b(struct dprpc_rref *r, char op, void *out, size_t *out_len)
{
	struct dprpc_agent_stats before, after;
	struct dprpc_error e;
	int rc;

	atomic_store(&use_target, r);
	cr_assert_eq(dprpc_agent_stats_get(B, &before), 0);
	rc = dprpc_rpc_sync(A, "b", "use", &op, 1, DPRPC_TIMEOUT_DEFAULT, out, out_len, &e);
	cr_assert_eq(dprpc_agent_stats_get(B, &after), 0);
	if (rc != 0) {
		cr_assert_eq(e.origin, 1u, "b's handler answered %d", rc);
		cr_assert_eq(after.calls_sent, before.calls_sent, "b sent nothing");
	}
	return rc;
}

Test(rref_ring, to_here_and_proxy_on_the_poller_are_edeadlk, .timeout = 30)
{
	struct dprpc_rref *pend, *val, *forked, *here;
	struct dprpc_future *f;
	char out[16];
	size_t out_len;

	cr_assert_eq(dprpc_register(B, "use", h_use, NULL, DPRPC_HANDLER_INLINE), 0);
	/* A user on b whose value is still pending on c. */
	pend = dprpc_remote(B, "c", "park", NULL, 0, DPRPC_TIMEOUT_DEFAULT);
	cr_assert_not_null(pend);
	for (int i = 0; i < 20000 && atomic_load(&nb_parked) == 0; i++)
		usleep(100);
	cr_assert_eq(use_on_b(pend, 't', NULL, NULL), -EDEADLK);
	cr_assert_eq(use_on_b(pend, 'p', NULL, NULL), -EDEADLK);
	/* A user on b forked from a's: its value lives on c, only a fetch
	 * would bring it. */
	val = dprpc_remote(A, "c", "make", "val", 3, DPRPC_TIMEOUT_DEFAULT);
	cr_assert_not_null(val);
	expect_value(val, "val", 3);
	forked = fork_to(val, B);
	f = dprpc_rref_creation_future(forked);
	cr_assert_eq(dprpc_future_wait(f, 20 * 1000 * 1000), 0, "confirmed by c");
	dprpc_future_put(f);
	cr_assert_eq(use_on_b(forked, 't', NULL, NULL), -EDEADLK);
	/* A value already here is returned, on the poller too. */
	here = dprpc_remote(B, "c", "make", "here", 4, DPRPC_TIMEOUT_DEFAULT);
	cr_assert_not_null(here);
	f = dprpc_rref_creation_future(here);
	cr_assert_eq(dprpc_future_wait(f, 20 * 1000 * 1000), 0);
	dprpc_future_put(f);
	out_len = sizeof(out);
	cr_assert_eq(use_on_b(here, 't', out, &out_len), 0);
	cr_assert_eq(out_len, 4u);
	cr_assert_arr_eq(out, "here", 4);
	/* Off the poller the pending one comes once c answers. */
	reply_parked("late", 4);
	expect_value(pend, "late", 4);
	cr_assert_eq(dprpc_rref_release(pend), 0);
	cr_assert_eq(dprpc_rref_release(forked), 0);
	cr_assert_eq(dprpc_rref_release(val), 0);
	cr_assert_eq(dprpc_rref_release(here), 0);
	wait_settled(B);
	wait_owner(C, 0, 0);
}

/* --- timeouts of any size ------------------------------------------------ */

/* Answers what "park" holds, 20 ms after it came. */
static void *
late_park_reply(void *arg)
{
	(void)arg;
	while (atomic_load(&nb_parked) == 0)
		usleep(100);
	usleep(20000);
	reply_parked("late", 4);
	return NULL;
}

Test(rref_ring, huge_timeouts_mean_no_deadline, .timeout = 60)
{
	static const uint64_t timeouts[] = {UINT64_MAX - 1, UINT64_C(1) << 62, UINT64_C(1) << 63};
	struct dprpc_rref *r, *rc;
	struct dprpc_error e;
	char out[8];
	size_t out_len;
	pthread_t t;
	int ret;

	for (unsigned int i = 0; i < RTE_DIM(timeouts); i++) {
		atomic_store(&nb_parked, 0);
		/* The creation, and a fork's fetch, with the timeout. */
		r = dprpc_remote(A, "b", "park", NULL, 0, timeouts[i]);
		cr_assert_not_null(r);
		rc = fork_to(r, C);
		cr_assert_eq(pthread_create(&t, NULL, late_park_reply, NULL), 0);
		out_len = sizeof(out);
		ret = dprpc_rref_to_here(rc, timeouts[i], out, &out_len, &e);
		cr_assert_eq(ret, 0, "fetch, timeout %#" PRIx64 ": %d (%s)", timeouts[i], ret,
			ret != 0 ? e.msg : "");
		cr_assert_arr_eq(out, "late", 4);
		out_len = sizeof(out);
		ret = dprpc_rref_to_here(r, timeouts[i], out, &out_len, &e);
		cr_assert_eq(ret, 0, "creation, timeout %#" PRIx64 ": %d (%s)", timeouts[i], ret,
			ret != 0 ? e.msg : "");
		cr_assert_arr_eq(out, "late", 4);
		pthread_join(t, NULL);
		cr_assert_eq(dprpc_rref_release(rc), 0);
		cr_assert_eq(dprpc_rref_release(r), 0);
	}
	wait_settled(A);
	wait_settled(C);
	wait_owner(B, 0, 0);
}
