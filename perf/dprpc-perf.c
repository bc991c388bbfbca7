/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dprpc-perf: latency and message rate of dprpc over a DPDK port, next to
 * the raw floor of the same port measured by the same tool.
 *
 *   dprpc-perf [EAL options] -- MODE [options]
 *
 * MODE is latency (one rpc_sync outstanding), throughput (rpc_async keeping
 * --window calls in flight) or raw (the port echoing raw frames of the same
 * size, without dprpc; --window applies).
 *
 * Without EAL options the tool runs both sides on this machine: for each
 * measured phase it forks a server and a client process, each with its own
 * EAL (--no-huge --no-pci --no-shconf, a private file prefix), joined by a
 * memif pair, the server pinned to --server-cpu and the client to
 * --client-cpu.  With EAL options it runs one side (--role server|client)
 * on the port the options create, e.g. an af_packet port in a namespace.
 *
 * Times come from the TSC; a run discards --warmup seconds and then
 * measures for --duration seconds.  With --compare-raw every repeat
 * measures the raw floor and dprpc back to back, so their ratio is taken
 * under the same machine noise; medians over --repeat runs are reported.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <dprpc/dprpc.h>

#define PERF_MAX_SAMPLES (8u << 20)
#define PERF_MAX_WINDOW	 1024
#define PERF_HDRS	 (14 + 20 + 8 + 40) /* a dprpc frame's headers */
#define PERF_ECHO	 UINT32_MAX	    /* --response not given: echo */
#define PERF_WORLD                                   \
	"server 0 02:00:00:00:00:01 10.0.0.1 7000\n" \
	"client 1 02:00:00:00:00:02 10.0.0.2 7000\n"

enum perf_mode { MODE_LATENCY, MODE_THROUGHPUT, MODE_RAW, MODE_RREF, MODE_RREF_CHURN, MODE_MAX };
static const char *const mode_names[] = {"latency", "throughput", "raw", "rref", "rref-churn"};

struct perf_opts {
	enum perf_mode mode;
	const char *role; /* NULL: both, forked */
	unsigned int payload;
	unsigned int response; /* latency, throughput: response bytes; PERF_ECHO: echo */
	unsigned int window;
	double duration_s;
	double warmup_s;
	unsigned int repeat;
	unsigned int server_cpu, client_cpu;
	bool json;
	bool compare_raw;
	bool compare_rpc;   /* rref: rpc_sync latency runs alternate as the baseline */
	uint64_t rrefs;	    /* rref-churn: RRefs created and released */
	unsigned int batch; /* rref-churn: alive at once */
	long retransmit_us; /* -1: the agent's default */
};

/* Agent settings from the options, for rpc_agent(). */
static long perf_retransmit_us = -1;

/* What a client measured; sent to the driver through a pipe. */
struct perf_result {
	int ok;
	enum perf_mode mode;
	unsigned int window;
	uint64_t calls;
	double seconds;
	double rate;
	double p50_us, p99_us, p999_us, max_us;
	uint64_t dropped, tx_retries, calls_failed, retransmits;
	uint64_t frames_resent, acks_sent, msgs_sent, msgs_received;
	uint64_t corrupt;	       /* echoes that came back different (checked when echoing) */
	uint64_t calls_sent, calls_ok; /* the agent's totals, warm-up and drain included */
	/* rref: proxy rpc_sync calls on one RRef, interleaved with the
	 * remote + to_here round trips. */
	double proxy_p50_us, proxy_p99_us;
	/* rref-churn: the owner's resident memory after the first batch and
	 * after the last, and its RRef count at the end. */
	uint64_t rss_first_kb, rss_warm_kb, rss_last_kb, owners_left;
};

static volatile sig_atomic_t perf_stop;
/* --role server --json: print the server agent's counters when it stops. */
static bool perf_server_json;
/* Forked client: where its result goes, and the pipe it holds on to. */
static int perf_out_fd = -1, perf_hold_fd = -1;

/* Hand the result to the driver, then wait (before the port stops) until
 * the driver has stopped the server: see spawn_side(). */
static void
publish_and_hold(const struct perf_result *r)
{
	char c;

	if (perf_out_fd >= 0 && write(perf_out_fd, r, sizeof(*r)) != (ssize_t)sizeof(*r))
		fprintf(stderr, "dprpc-perf: cannot hand the result over\n");
	if (perf_hold_fd >= 0)
		while (read(perf_hold_fd, &c, 1) > 0)
			;
}

static void
perf_on_signal(int sig)
{
	(void)sig;
	perf_stop = 1;
}

static void
usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [EAL options] -- MODE [options]\n"
		"MODE: latency | throughput | raw | rref | rref-churn\n"
		"  --payload BYTES   request (and response) payload (default 32; up to %u in\n"
		"                    latency and throughput, %d otherwise)\n"
		"  --response BYTES  latency, throughput: the server answers this many bytes\n"
		"                    instead of echoing\n"
		"  --window W        calls (or raw frames) in flight (default 1 for latency, 32 "
		"otherwise)\n"
		"  --duration S      seconds measured per run (default 2)\n"
		"  --warmup S        seconds discarded before measuring (default 0.3)\n"
		"  --repeat N        runs; medians are reported (default 1)\n"
		"  --compare-raw     measure the raw floor in the same run, alternating\n"
		"  --compare-rpc     rref: measure rpc_sync latency in the same run, alternating\n"
		"  --rrefs N         rref-churn: RRefs created and released (default 1000000)\n"
		"  --batch B         rref-churn: RRefs alive at once (default 4096)\n"
		"  --json            print one JSON object\n"
		"  --role R          server | client: run one side with the given EAL options\n"
		"  --server-cpu C, --client-cpu C   CPUs of the forked sides (default 1, 0)\n"
		"  --retransmit-us US  the agents' retransmit_us (0: no resends; default the\n"
		"                    agent's, 1000)\n",
		prog, DPRPC_MAX_MSG_DEFAULT, DPRPC_MAX_FRAME_PAYLOAD);
}

static int
parse_opts(int argc, char **argv, struct perf_opts *o)
{
	static const struct option longopts[] = {
		{"payload", required_argument, NULL, 'p'},
		{"response", required_argument, NULL, 'A'},
		{"window", required_argument, NULL, 'w'},
		{"duration", required_argument, NULL, 'd'},
		{"warmup", required_argument, NULL, 'W'},
		{"repeat", required_argument, NULL, 'r'},
		{"compare-raw", no_argument, NULL, 'c'},
		{"compare-rpc", no_argument, NULL, 'P'},
		{"rrefs", required_argument, NULL, 'N'},
		{"batch", required_argument, NULL, 'B'},
		{"json", no_argument, NULL, 'j'},
		{"role", required_argument, NULL, 'R'},
		{"server-cpu", required_argument, NULL, 'S'},
		{"client-cpu", required_argument, NULL, 'C'},
		{"retransmit-us", required_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool window_set = false;
	int c, i;

	memset(o, 0, sizeof(*o));
	o->payload = 32;
	o->response = PERF_ECHO;
	o->duration_s = 2.0;
	o->warmup_s = 0.3;
	o->repeat = 1;
	o->server_cpu = 1;
	o->client_cpu = 0;
	o->rrefs = 1000000;
	o->batch = 4096;
	o->retransmit_us = -1;
	if (argc < 2) {
		fprintf(stderr, "dprpc-perf: give a MODE after --\n");
		return -EINVAL;
	}
	for (i = 0; i < MODE_MAX && strcmp(argv[1], mode_names[i]) != 0; i++)
		;
	if (i == MODE_MAX) {
		fprintf(stderr, "dprpc-perf: unknown mode '%s'\n", argv[1]);
		return -EINVAL;
	}
	o->mode = (enum perf_mode)i;
	optind = 2;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			o->payload = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'A':
			o->response = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'w':
			o->window = (unsigned int)strtoul(optarg, NULL, 0);
			window_set = true;
			break;
		case 'd':
			o->duration_s = strtod(optarg, NULL);
			break;
		case 'W':
			o->warmup_s = strtod(optarg, NULL);
			break;
		case 'r':
			o->repeat = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'c':
			o->compare_raw = true;
			break;
		case 'P':
			o->compare_rpc = true;
			break;
		case 'N':
			o->rrefs = strtoull(optarg, NULL, 0);
			break;
		case 'B':
			o->batch = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'j':
			o->json = true;
			break;
		case 'R':
			o->role = optarg;
			break;
		case 'S':
			o->server_cpu = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'C':
			o->client_cpu = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'T':
			o->retransmit_us = strtol(optarg, NULL, 0);
			break;
		default:
			return -EINVAL;
		}
	}
	if (!window_set)
		o->window = o->mode == MODE_THROUGHPUT || o->mode == MODE_RAW ? 32 : 1;
	if (o->window != 1 && o->mode != MODE_THROUGHPUT && o->mode != MODE_RAW) {
		fprintf(stderr, "dprpc-perf: %s mode keeps one call outstanding\n",
			mode_names[o->mode]);
		return -EINVAL;
	}
	if ((o->compare_rpc && o->mode != MODE_RREF) || (o->compare_raw && o->compare_rpc) ||
		o->rrefs == 0 || o->batch == 0 || o->batch > 8192) {
		fprintf(stderr, "dprpc-perf: --compare-rpc is for rref; --batch is 1..8192\n");
		return -EINVAL;
	}
	if (o->mode == MODE_LATENCY || o->mode == MODE_THROUGHPUT) {
		if (o->payload > DPRPC_MAX_MSG_DEFAULT ||
			(o->response != PERF_ECHO && o->response > DPRPC_MAX_MSG_DEFAULT)) {
			fprintf(stderr, "dprpc-perf: --payload and --response are at most %u\n",
				DPRPC_MAX_MSG_DEFAULT);
			return -EINVAL;
		}
	} else if (o->payload > DPRPC_MAX_FRAME_PAYLOAD || o->response != PERF_ECHO) {
		fprintf(stderr, "dprpc-perf: %s mode: --payload up to %d, no --response\n",
			mode_names[o->mode], DPRPC_MAX_FRAME_PAYLOAD);
		return -EINVAL;
	}
	if (o->window == 0 || o->window > PERF_MAX_WINDOW || o->duration_s <= 0 ||
		o->warmup_s < 0 || o->repeat == 0 || o->repeat > 100 || o->retransmit_us < -1 ||
		o->retransmit_us > 10 * 1000 * 1000) {
		fprintf(stderr, "dprpc-perf: option out of range\n");
		return -EINVAL;
	}
	if (o->role != NULL && strcmp(o->role, "server") != 0 && strcmp(o->role, "client") != 0) {
		fprintf(stderr, "dprpc-perf: --role is server or client\n");
		return -EINVAL;
	}
	return 0;
}

/* ---- measurement ---- */

struct perf_clock {
	uint64_t hz, start, measure_from, end;
	uint32_t *samples; /* RTTs in TSC ticks, converted at the end */
	uint64_t nb_samples, calls;
};

static int
clock_init(struct perf_clock *k, const struct perf_opts *o)
{
	k->hz = rte_get_tsc_hz();
	k->start = rte_rdtsc();
	k->measure_from = k->start + (uint64_t)(o->warmup_s * (double)k->hz);
	k->end = k->measure_from + (uint64_t)(o->duration_s * (double)k->hz);
	k->samples = malloc(PERF_MAX_SAMPLES * sizeof(uint32_t));
	k->nb_samples = 0;
	k->calls = 0;
	return k->samples == NULL ? -ENOMEM : 0;
}

static inline void
clock_record(struct perf_clock *k, uint64_t t0, uint64_t t1)
{
	if (t0 < k->measure_from || t1 > k->end)
		return;
	k->calls++;
	if (k->nb_samples < PERF_MAX_SAMPLES)
		k->samples[k->nb_samples++] = (uint32_t)RTE_MIN(t1 - t0, (uint64_t)UINT32_MAX);
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static double
pct_us(const struct perf_clock *k, double q)
{
	uint64_t n = k->nb_samples, i = (uint64_t)(q * (double)(n - 1) + 0.5);

	return n == 0 ? 0.0 : k->samples[i] * 1e6 / (double)k->hz;
}

static void
clock_finish(struct perf_clock *k, const struct perf_opts *o, struct perf_result *r)
{
	qsort(k->samples, k->nb_samples, sizeof(uint32_t), cmp_u32);
	r->calls = k->calls;
	r->seconds = o->duration_s;
	r->rate = (double)k->calls / o->duration_s;
	r->p50_us = pct_us(k, 0.50);
	r->p99_us = pct_us(k, 0.99);
	r->p999_us = pct_us(k, 0.999);
	r->max_us = pct_us(k, 1.0);
	r->ok = k->calls > 0;
	free(k->samples);
}

/* ---- raw floor: the port echoing frames of a dprpc frame's size ---- */

static struct rte_mempool *
raw_port_setup(uint16_t port)
{
	struct rte_eth_conf conf;
	struct rte_mempool *mp;

	mp = rte_pktmbuf_pool_create(
		"perf_raw", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	memset(&conf, 0, sizeof(conf));
	if (mp == NULL || rte_eth_dev_configure(port, 1, 1, &conf) != 0 ||
		rte_eth_rx_queue_setup(port, 0, 1024, rte_socket_id(), NULL, mp) != 0 ||
		rte_eth_tx_queue_setup(port, 0, 1024, rte_socket_id(), NULL) != 0 ||
		rte_eth_dev_start(port) != 0)
		return NULL;
	return mp;
}

static int
raw_server(uint16_t port)
{
	struct rte_mbuf *pkts[32];
	uint16_t n, sent;

	if (raw_port_setup(port) == NULL)
		return -EIO;
	while (!perf_stop) {
		n = rte_eth_rx_burst(port, 0, pkts, 32);
		if (n == 0)
			continue;
		sent = rte_eth_tx_burst(port, 0, pkts, n);
		while (sent < n)
			rte_pktmbuf_free(pkts[sent++]);
	}
	rte_eth_dev_stop(port);
	return 0;
}

static int
wait_link(uint16_t port)
{
	struct rte_eth_link link;
	int i;

	for (i = 0; i < 20000; i++) {
		if (rte_eth_link_get_nowait(port, &link) == 0 && link.link_status)
			return 0;
		usleep(1000);
	}
	return -ETIMEDOUT;
}

/* Send up to @n frames of @size bytes in one burst, each stamped with its
 * send time; returns how many left. */
static unsigned int
raw_send(uint16_t port, struct rte_mempool *mp, unsigned int size, unsigned int n)
{
	struct rte_mbuf *ms[32];
	uint16_t sent;
	uint64_t now;
	unsigned int i;
	uint8_t *d;

	n = RTE_MIN(n, (unsigned int)RTE_DIM(ms));
	if (n == 0 || rte_pktmbuf_alloc_bulk(mp, ms, n) != 0)
		return 0;
	now = rte_rdtsc();
	for (i = 0; i < n; i++) {
		d = (uint8_t *)rte_pktmbuf_append(ms[i], (uint16_t)size);
		memset(d, 0, 14);
		d[0] = 0x02;
		d[12] = 0x88; /* local experimental ethertype 0x88b5 */
		d[13] = 0xb5;
		memcpy(d + 14, &now, sizeof(now));
	}
	sent = rte_eth_tx_burst(port, 0, ms, (uint16_t)n);
	for (i = sent; i < n; i++)
		rte_pktmbuf_free(ms[i]);
	return sent;
}

static int
raw_client(uint16_t port, const struct perf_opts *o, struct perf_result *r)
{
	struct rte_mempool *mp = raw_port_setup(port);
	unsigned int size = PERF_HDRS + o->payload, inflight = 0, i;
	struct rte_mbuf *pkts[32];
	struct perf_clock k;
	uint64_t now = 0, t0;
	uint16_t n;

	if (mp == NULL || wait_link(port) != 0 || clock_init(&k, o) != 0)
		return -EIO;
	if (size < 60)
		size = 60;
	while ((now = rte_rdtsc()) < k.end) {
		inflight += raw_send(port, mp, size, o->window - inflight);
		n = rte_eth_rx_burst(port, 0, pkts, 32);
		if (n == 0)
			continue;
		now = rte_rdtsc();
		for (i = 0; i < n; i++) {
			memcpy(&t0, rte_pktmbuf_mtod_offset(pkts[i], uint8_t *, 14), sizeof(t0));
			clock_record(&k, t0, now);
			rte_pktmbuf_free(pkts[i]);
		}
		inflight -= RTE_MIN(inflight, (unsigned int)n);
	}
	clock_finish(&k, o, r);
	publish_and_hold(r);
	rte_eth_dev_stop(port);
	return 0;
}

/* ---- dprpc ---- */

/* --response: what the server answers instead of an echo. */
static uint8_t *perf_response;
static unsigned int perf_response_len = PERF_ECHO;

static int
h_echo(struct dprpc_request *req, void *arg)
{
	size_t len;
	const void *p = dprpc_request_payload(req, &len);

	(void)arg;
	if (perf_response_len != PERF_ECHO)
		return dprpc_reply(req, perf_response, perf_response_len);
	return dprpc_reply(req, p, len);
}

/* rref: a proxy handler answering with the RRef's value. */
static int
h_value(struct dprpc_request *req, void *arg)
{
	size_t len;
	const void *v = dprpc_request_rref_value(req, &len);

	(void)arg;
	return v == NULL ? -EINVAL : dprpc_reply(req, v, len);
}

/* rref-churn: the server's RRef count and resident memory. */
struct perf_rrefstat {
	uint64_t owners, rss_kb;
};

static uint64_t
rss_kb(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f != NULL) {
		if (fscanf(f, "%lu %lu", &size, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE) / 1024;
}

static int
h_rrefstat(struct dprpc_request *req, void *arg)
{
	struct dprpc_rref_debug d;
	struct perf_rrefstat st;

	(void)arg;
	dprpc_rref_debug_info(dprpc_request_agent(req), &d);
	st.owners = d.num_owner_rrefs;
	st.rss_kb = rss_kb();
	return dprpc_reply(req, &st, sizeof(st));
}

static struct dprpc_agent *
rpc_agent(const char *name, uint16_t port)
{
	struct dprpc_agent_conf c;
	struct dprpc_agent *a;

	dprpc_agent_conf_init(&c);
	c.name = name;
	c.world = PERF_WORLD;
	c.port_id = port;
	c.max_outstanding = PERF_MAX_WINDOW;
	c.default_timeout_us = 5 * 1000 * 1000;
	if (perf_retransmit_us >= 0)
		c.retransmit_us = (uint32_t)perf_retransmit_us;
	a = dprpc_agent_create(&c);
	if (a == NULL)
		fprintf(stderr, "dprpc-perf: agent %s: %s\n", name, rte_strerror(rte_errno));
	return a;
}

static int
rpc_server(uint16_t port)
{
	struct dprpc_agent *a = rpc_agent("server", port);

	if (a == NULL || dprpc_register(a, "echo", h_echo, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(a, "value", h_value, NULL, DPRPC_HANDLER_INLINE) != 0 ||
		dprpc_register(a, "rrefstat", h_rrefstat, NULL, DPRPC_HANDLER_INLINE) != 0)
		return -EIO;
	/* Way 1: this process's main lcore is the poll loop, busy. */
	while (!perf_stop)
		dprpc_poll(a, 32);
	if (perf_server_json) {
		struct dprpc_agent_stats st;

		dprpc_agent_stats_get(a, &st);
		printf("{\"role\": \"server\", \"requests_handled\": %" PRIu64
		       ", \"requests_resent\": %" PRIu64 ", \"dropped\": %" PRIu64
		       ", \"frames_resent\": %" PRIu64 ", \"acks_sent\": %" PRIu64 "}\n",
			st.requests_handled, st.requests_resent, st.dropped, st.frames_resent,
			st.acks_sent);
		fflush(stdout);
	}
	return dprpc_agent_destroy(a);
}

struct rpc_lane {
	struct perf_clock *k;
	struct dprpc_agent *a;
	const uint8_t *payload;
	unsigned int len;
	uint32_t hid;
	uint64_t t0;
};

static bool rpc_running;
/* Echo mode: every answer is compared with what was sent. */
static bool rpc_verify;
static uint64_t rpc_corrupt;
/* Lanes whose last issue failed (EAGAIN/ENOBUFS), retried by the loop. */
static struct rpc_lane *idle_lanes[PERF_MAX_WINDOW];
static unsigned int nb_idle, nb_busy;

static void rpc_lane_done(struct dprpc_future *f, void *arg);

static void
rpc_lane_issue(struct rpc_lane *l)
{
	struct dprpc_future *f;

	l->t0 = rte_rdtsc();
	f = dprpc_rpc_async_id(l->a, 0, l->hid, l->payload, l->len, DPRPC_TIMEOUT_DEFAULT);
	if (f == NULL) {
		idle_lanes[nb_idle++] = l;
		return;
	}
	nb_busy++;
	/* The callback takes over the caller's reference.  A future's first
	 * callback uses its inline node: it cannot fail for want of one. */
	(void)dprpc_future_add_callback(f, rpc_lane_done, l);
}

static void
rpc_lane_done(struct dprpc_future *f, void *arg)
{
	struct rpc_lane *l = arg;

	if (dprpc_future_state(f) == DPRPC_FUTURE_DONE) {
		clock_record(l->k, l->t0, rte_rdtsc());
		if (rpc_verify) {
			size_t len;
			const void *v = dprpc_future_value(f, &len);

			if (len != l->len || (len > 0 && memcmp(v, l->payload, len) != 0))
				rpc_corrupt++;
		}
	}
	dprpc_future_put(f);
	nb_busy--;
	if (rpc_running)
		rpc_lane_issue(l);
}

static int client_finish(struct dprpc_agent *a, struct perf_result *r);

static int
rpc_client(uint16_t port, const struct perf_opts *o, struct perf_result *r)
{
	static struct rpc_lane lanes[PERF_MAX_WINDOW];
	size_t out_max = o->response != PERF_ECHO ? o->response : o->payload;
	uint8_t *payload = malloc(o->payload + 1), *out = malloc(out_max + 1);
	struct dprpc_agent *a = rpc_agent("client", port);
	uint32_t hid = dprpc_handler_id("echo");
	struct perf_clock k;
	unsigned int i;
	uint64_t t0, now;
	size_t out_len;
	int rc;

	if (payload == NULL || out == NULL || a == NULL ||
		dprpc_agent_wait_link(a, 20 * 1000 * 1000) != 0 || clock_init(&k, o) != 0) {
		free(payload);
		free(out);
		return -EIO;
	}
	/* Position-dependent, so a frame put in the wrong place shows. */
	for (i = 0; i < o->payload; i++)
		payload[i] = (uint8_t)(i * 7 + (i >> 8));
	rpc_verify = o->response == PERF_ECHO;
	if (o->mode == MODE_LATENCY) {
		while ((t0 = rte_rdtsc()) < k.end) {
			out_len = out_max;
			rc = dprpc_rpc_sync_id(a, 0, hid, payload, o->payload,
				DPRPC_TIMEOUT_DEFAULT, out, &out_len, NULL);
			now = rte_rdtsc();
			if (rc == 0)
				clock_record(&k, t0, now);
			if (rc == 0 && rpc_verify &&
				(out_len != o->payload || memcmp(out, payload, out_len) != 0))
				rpc_corrupt++;
		}
	} else {
		rpc_running = true;
		for (i = 0; i < o->window; i++) {
			lanes[i] = (struct rpc_lane){
				.k = &k, .a = a, .payload = payload, .len = o->payload, .hid = hid};
			rpc_lane_issue(&lanes[i]);
		}
		while (rte_rdtsc() < k.end) {
			dprpc_poll(a, 32);
			for (i = nb_idle, nb_idle = 0; i > 0; i--)
				rpc_lane_issue(idle_lanes[i - 1]);
		}
		rpc_running = false;
		/* Drain: every call completes or times out (bounded). */
		while (nb_busy > 0)
			dprpc_poll(a, 32);
	}
	clock_finish(&k, o, r);
	r->corrupt = rpc_corrupt;
	free(payload);
	free(out);
	return client_finish(a, r);
}

/* The agent's totals into a result; hand it over; destroy the agent. */
static int
client_finish(struct dprpc_agent *a, struct perf_result *r)
{
	struct dprpc_agent_stats st;

	dprpc_agent_stats_get(a, &st);
	r->dropped = st.dropped;
	r->tx_retries = st.tx_retries;
	r->calls_failed = st.calls_failed;
	r->retransmits = st.retransmits;
	r->frames_resent = st.frames_resent;
	r->acks_sent = st.acks_sent;
	r->msgs_sent = st.msgs_sent;
	r->msgs_received = st.msgs_received;
	r->calls_sent = st.calls_sent;
	r->calls_ok = st.calls_ok;
	publish_and_hold(r);
	return dprpc_agent_destroy(a);
}

/* remote() + to_here() + release, round after round; then proxy rpc_sync
 * calls on one long-lived RRef, for as long again. */
static int
rref_client(uint16_t port, const struct perf_opts *o, struct perf_result *r)
{
	static uint8_t payload[DPRPC_MAX_FRAME_PAYLOAD], out[DPRPC_MAX_FRAME_PAYLOAD];
	struct dprpc_agent *a = rpc_agent("client", port);
	uint32_t hid = dprpc_handler_id("echo");
	struct perf_clock k, kp;
	struct perf_result rp;
	struct dprpc_rref *base, *x;
	uint64_t t0, t1;
	size_t out_len;
	int rc;

	if (a == NULL || dprpc_agent_wait_link(a, 20 * 1000 * 1000) != 0 ||
		clock_init(&k, o) != 0 || clock_init(&kp, o) != 0)
		return -EIO;
	memset(payload, 0x5a, sizeof(payload));
	base = dprpc_remote_id(a, 0, hid, payload, o->payload, DPRPC_TIMEOUT_DEFAULT);
	out_len = sizeof(out);
	if (base == NULL ||
		dprpc_rref_to_here(base, DPRPC_TIMEOUT_DEFAULT, out, &out_len, NULL) != 0)
		return -EIO;
	while ((t0 = rte_rdtsc()) < k.end) {
		x = dprpc_remote_id(a, 0, hid, payload, o->payload, DPRPC_TIMEOUT_DEFAULT);
		if (x == NULL)
			continue;
		out_len = sizeof(out);
		rc = dprpc_rref_to_here(x, DPRPC_TIMEOUT_DEFAULT, out, &out_len, NULL);
		t1 = rte_rdtsc();
		if (rc == 0)
			clock_record(&k, t0, t1);
		dprpc_rref_release(x);
	}
	/* Then proxies, for a second window of the same length. */
	free(kp.samples);
	if (clock_init(&kp, o) != 0)
		return -EIO;
	while ((t0 = rte_rdtsc()) < kp.end) {
		out_len = sizeof(out);
		rc = dprpc_rref_rpc_sync(
			base, "value", NULL, 0, DPRPC_TIMEOUT_DEFAULT, out, &out_len, NULL);
		t1 = rte_rdtsc();
		if (rc == 0)
			clock_record(&kp, t0, t1);
	}
	dprpc_rref_release(base);
	clock_finish(&k, o, r);
	clock_finish(&kp, o, &rp);
	r->proxy_p50_us = rp.p50_us;
	r->proxy_p99_us = rp.p99_us;
	/* Every user reference deleted on the owner before the agent goes. */
	(void)dprpc_rref_shutdown(a, 2 * 1000 * 1000, 0);
	return client_finish(a, r);
}

static int
churn_stat(struct dprpc_agent *a, struct perf_rrefstat *st)
{
	size_t len = sizeof(*st);
	int rc;

	/* The DELETEs of a batch may hold every call slot for a while. */
	while ((rc = dprpc_rpc_sync(a, "server", "rrefstat", NULL, 0, DPRPC_TIMEOUT_DEFAULT, st,
			&len, NULL)) == -EAGAIN ||
		rc == -ENOBUFS)
		dprpc_poll(a, 32);
	return rc;
}

/* Create and release o->rrefs RRefs on the server, o->batch alive at a
 * time; the server's resident memory after the first and last batch. */
static int
churn_client(uint16_t port, const struct perf_opts *o, struct perf_result *r)
{
	static struct dprpc_rref *rs[8192];
	struct dprpc_agent *a = rpc_agent("client", port);
	uint32_t hid = dprpc_handler_id("echo");
	struct perf_rrefstat st;
	uint64_t done = 0, failed = 0, v, t0, hz = rte_get_tsc_hz();
	unsigned int i, n;

	if (a == NULL || dprpc_agent_wait_link(a, 20 * 1000 * 1000) != 0)
		return -EIO;
	t0 = rte_rdtsc();
	while (done < o->rrefs && !perf_stop) {
		n = (unsigned int)RTE_MIN((uint64_t)o->batch, o->rrefs - done);
		for (i = 0; i < n; i++) {
			v = done + i;
			while ((rs[i] = dprpc_remote_id(
					a, 0, hid, &v, sizeof(v), DPRPC_TIMEOUT_DEFAULT)) == NULL) {
				if (rte_errno != EAGAIN && rte_errno != ENOBUFS) {
					fprintf(stderr, "dprpc-perf: remote: %s\n",
						rte_strerror(rte_errno));
					dprpc_agent_dump(a, stderr);
					return -EIO;
				}
				dprpc_poll(a, 32);
			}
		}
		for (i = 0; i < n; i++) {
			struct dprpc_future *f = dprpc_rref_creation_future(rs[i]);
			int rc = dprpc_future_wait(f, 0);

			dprpc_future_put(f);
			if (rc != 0)
				failed++;
			dprpc_rref_release(rs[i]);
		}
		/* The owner has freed them all before the next batch. */
		do {
			dprpc_poll(a, 32);
			if (churn_stat(a, &st) != 0) {
				fprintf(stderr, "dprpc-perf: rrefstat failed\n");
				dprpc_agent_dump(a, stderr);
				return -EIO;
			}
		} while (st.owners != 0 && !perf_stop);
		if (done == 0)
			r->rss_first_kb = st.rss_kb;
		if (r->rss_warm_kb == 0 && done + n >= o->rrefs / 10)
			r->rss_warm_kb = st.rss_kb; /* after a tenth of the run */
		r->rss_last_kb = st.rss_kb;
		done += n;
	}
	r->owners_left = st.owners;
	r->calls = done;
	r->seconds = (double)(rte_rdtsc() - t0) / (double)hz;
	r->rate = (double)done / r->seconds;
	r->ok = done == o->rrefs && failed == 0;
	return client_finish(a, r);
}

/* ---- one side, in this process ---- */

static int
run_side(const char *role, const struct perf_opts *o, struct perf_result *r)
{
	uint16_t port;

	if (rte_eth_dev_count_avail() == 0) {
		fprintf(stderr, "dprpc-perf: no ethdev port: give one with --vdev\n");
		return -ENODEV;
	}
	RTE_ETH_FOREACH_DEV(port)
	break;
	signal(SIGTERM, perf_on_signal);
	signal(SIGINT, perf_on_signal);
	memset(r, 0, sizeof(*r));
	r->mode = o->mode;
	r->window = o->window;
	if (strcmp(role, "server") == 0) {
		if (o->response != PERF_ECHO) {
			perf_response = calloc(1, o->response + 1);
			if (perf_response == NULL)
				return -ENOMEM;
			perf_response_len = o->response;
		}
		return o->mode == MODE_RAW ? raw_server(port) : rpc_server(port);
	}
	switch (o->mode) {
	case MODE_RAW:
		return raw_client(port, o, r);
	case MODE_RREF:
		return rref_client(port, o, r);
	case MODE_RREF_CHURN:
		return churn_client(port, o, r);
	default:
		return rpc_client(port, o, r);
	}
}

/* ---- the driver: fork both sides per phase ---- */

/*
 * Fork one side.  The client writes its result to @out_fd and then waits
 * for EOF on @hold_fd before it stops its port: memif on DPDK 22.11 may
 * tear a ring down under a peer that is still polling it, so the driver
 * stops the server first and only then lets the client go.
 */
static pid_t
spawn_side(const char *role, unsigned int cpu, const char *sock, unsigned int tag,
	const struct perf_opts *o, enum perf_mode mode, int out_fd, int hold_fd[2])
{
	char lcores[32], prefix[64], vdev[300];
	struct perf_opts so = *o;
	struct perf_result r;
	char *argv[16];
	int argc = 0, rc;
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (hold_fd != NULL)
		close(hold_fd[1]);
	snprintf(lcores, sizeof(lcores), "-l%u", cpu);
	snprintf(prefix, sizeof(prefix), "--file-prefix=dprpc-perf-%d-%s-%u", (int)getppid(), role,
		tag);
	snprintf(vdev, sizeof(vdev), "--vdev=net_memif0,role=%s,socket-abstract=no,socket=%s", role,
		sock);
	argv[argc++] = (char *)"dprpc-perf";
	argv[argc++] = lcores;
	argv[argc++] = (char *)"--no-pci";
	argv[argc++] = (char *)"--no-huge";
	argv[argc++] = (char *)"-m512";
	argv[argc++] = (char *)"--no-shconf";
	argv[argc++] = (char *)"--no-telemetry";
	argv[argc++] = (char *)"--log-level=lib.eal:error";
	argv[argc++] = (char *)"--log-level=pmd.net.memif:error";
	argv[argc++] = prefix;
	argv[argc++] = vdev;
	argv[argc] = NULL;
	if (rte_eal_init(argc, argv) < 0) {
		fprintf(stderr, "dprpc-perf %s: EAL: %s\n", role, rte_strerror(rte_errno));
		_exit(2);
	}
	so.mode = mode;
	perf_out_fd = out_fd;
	perf_hold_fd = hold_fd != NULL ? hold_fd[0] : -1;
	rc = run_side(role, &so, &r);
	dprpc_eal_cleanup();
	_exit(rc == 0 ? 0 : 1);
}

static int
reap(pid_t pid, int timeout_ms)
{
	int status = 0, i;

	for (i = 0; i < timeout_ms; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		usleep(1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return 255;
}

static int
run_phase(const struct perf_opts *o, enum perf_mode mode, unsigned int tag, struct perf_result *r)
{
	char sock[108];
	struct pollfd pfd;
	pid_t srv, cli;
	int fds[2], hold[2], i, st, rc = 0;
	double budget_ms = (o->warmup_s + o->duration_s) * 1000 + 30000;

	snprintf(sock, sizeof(sock), "/tmp/dprpc-perf-%d-%u.sock", (int)getpid(), tag);
	unlink(sock);
	if (pipe(fds) != 0)
		return -errno;
	srv = spawn_side("server", o->server_cpu, sock, tag, o, mode, -1, NULL);
	for (i = 0; i < 10000 && access(sock, F_OK) != 0; i++)
		usleep(1000);
	if (pipe(hold) != 0)
		return -errno;
	cli = spawn_side("client", o->client_cpu, sock, tag, o, mode, fds[1], hold);
	close(fds[1]);
	close(hold[0]);
	pfd = (struct pollfd){.fd = fds[0], .events = POLLIN};
	memset(r, 0, sizeof(*r));
	if (poll(&pfd, 1, (int)budget_ms) != 1 || read(fds[0], r, sizeof(*r)) != sizeof(*r))
		rc = -ETIMEDOUT;
	close(fds[0]);
	/* Server first, then let the client stop its port (see spawn_side). */
	kill(srv, SIGTERM);
	st = reap(srv, 5000);
	if (st != 0) {
		fprintf(stderr, "dprpc-perf: %s server exited with %d\n", mode_names[mode], st);
		rc = rc ? rc : -EIO;
	}
	close(hold[1]);
	st = reap(cli, 5000);
	if (st != 0) {
		fprintf(stderr, "dprpc-perf: %s client exited with %d\n", mode_names[mode], st);
		rc = rc ? rc : -EIO;
	}
	unlink(sock);
	if (rc == 0 && !r->ok) {
		fprintf(stderr, "dprpc-perf: %s run completed no call\n", mode_names[mode]);
		rc = -EIO;
	}
	return rc;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median, field by field, over the runs. */
static void
median_result(struct perf_result *runs, unsigned int n, struct perf_result *m)
{
	double v[100];
	unsigned int i;

	*m = runs[0];
#define MEDIAN(field)                                    \
	do {                                             \
		for (i = 0; i < n; i++)                  \
			v[i] = (double)runs[i].field;    \
		qsort(v, n, sizeof(double), cmp_double); \
		m->field = v[n / 2];                     \
	} while (0)
	MEDIAN(rate);
	MEDIAN(p50_us);
	MEDIAN(p99_us);
	MEDIAN(p999_us);
	MEDIAN(max_us);
	MEDIAN(calls);
	MEDIAN(proxy_p50_us);
	MEDIAN(proxy_p99_us);
	MEDIAN(rss_last_kb);
#undef MEDIAN
	m->dropped = m->tx_retries = m->calls_failed = m->retransmits = 0;
	for (i = 0; i < n; i++) {
		m->dropped += runs[i].dropped;
		m->tx_retries += runs[i].tx_retries;
		m->calls_failed += runs[i].calls_failed;
		m->retransmits += runs[i].retransmits;
	}
}

static void
print_fields(const struct perf_result *r)
{
	printf("\"calls\": %" PRIu64 ", \"seconds\": %.3f, \"rate_rps\": %.0f, "
	       "\"rtt_p50_us\": %.3f, \"rtt_p99_us\": %.3f, \"rtt_p999_us\": %.3f, "
	       "\"rtt_max_us\": %.3f",
		r->calls, r->seconds, r->rate, r->p50_us, r->p99_us, r->p999_us, r->max_us);
}

/* Pairwise ratios: each dprpc run over the raw run just before it, so a
 * machine that changes speed between repeats does not skew them. */
struct perf_ratios {
	double p50, rate;
};

static double
median_of(double *v, unsigned int n)
{
	qsort(v, n, sizeof(double), cmp_double);
	return v[n / 2];
}

static void
report_churn(const struct perf_opts *o, const struct perf_result *d)
{
	double growth = d->rss_warm_kb > 0 ? (double)d->rss_last_kb / (double)d->rss_warm_kb : 0;

	if (o->json) {
		printf("{\"mode\": \"rref-churn\", \"rrefs\": %" PRIu64 ", \"batch\": %u, "
		       "\"seconds\": %.3f, \"rate_rps\": %.0f, \"owner_rss_first_kb\": %" PRIu64
		       ", \"owner_rss_warm_kb\": %" PRIu64 ", \"owner_rss_last_kb\": %" PRIu64
		       ", \"rss_ratio_last_to_warm\": %.4f, \"owners_left\": %" PRIu64
		       ", \"calls_failed\": %" PRIu64 "}\n",
			d->calls, o->batch, d->seconds, d->rate, d->rss_first_kb, d->rss_warm_kb,
			d->rss_last_kb, growth, d->owners_left, d->calls_failed);
		return;
	}
	printf("rref-churn: %" PRIu64 " RRefs (batches of %u) created and released in %.2f s "
	       "(%.0f/s); owner RSS after the first batch %" PRIu64 " kB, after a tenth %" PRIu64
	       " kB, after the last %" PRIu64 " kB (last/tenth %.4fx); %" PRIu64 " left\n",
		d->calls, o->batch, d->seconds, d->rate, d->rss_first_kb, d->rss_warm_kb,
		d->rss_last_kb, growth, d->owners_left);
}

/* Bytes of each response. */
static unsigned int
resp_bytes(const struct perf_opts *o)
{
	return o->response == PERF_ECHO ? o->payload : o->response;
}

static void
report(const struct perf_opts *o, const struct perf_result *d, const struct perf_result *raw,
	const struct perf_ratios *pr)
{
	const char *base = o->compare_rpc ? "rpc_sync" : "raw";

	if (o->mode == MODE_RREF_CHURN) {
		report_churn(o, d);
		return;
	}
	if (o->json) {
		printf("{\"mode\": \"%s\", \"payload_bytes\": %u, \"window\": %u, \"repeat\": %u, ",
			mode_names[o->mode], o->payload, o->window, o->repeat);
		print_fields(d);
		if (o->mode != MODE_RAW)
			printf(", \"dropped\": %" PRIu64 ", \"tx_retries\": %" PRIu64
			       ", \"calls_failed\": %" PRIu64 ", \"retransmits\": %" PRIu64
			       ", \"frames_resent\": %" PRIu64 ", \"acks_sent\": %" PRIu64
			       ", \"msgs_sent\": %" PRIu64 ", \"msgs_received\": %" PRIu64
			       ", \"corrupt\": %" PRIu64 ", \"calls_sent\": %" PRIu64
			       ", \"calls_ok\": %" PRIu64,
				d->dropped, d->tx_retries, d->calls_failed, d->retransmits,
				d->frames_resent, d->acks_sent, d->msgs_sent, d->msgs_received,
				d->corrupt, d->calls_sent, d->calls_ok);
		if (o->mode == MODE_LATENCY || o->mode == MODE_THROUGHPUT)
			printf(", \"response_bytes\": %u, \"bytes_per_s\": %.0f", resp_bytes(o),
				d->rate * (o->payload + resp_bytes(o)));
		if (o->mode == MODE_RREF)
			printf(", \"proxy_p50_us\": %.3f, \"proxy_p99_us\": %.3f", d->proxy_p50_us,
				d->proxy_p99_us);
		if (raw != NULL) {
			printf(", \"%s\": {", base);
			print_fields(raw);
			printf("}, \"ratio_p50\": %.3f, \"ratio_rate\": %.3f, "
			       "\"ratio_p50_of_medians\": %.3f, \"ratio_rate_of_medians\": %.3f",
				pr->p50, pr->rate, raw->p50_us > 0 ? d->p50_us / raw->p50_us : 0,
				raw->rate > 0 ? d->rate / raw->rate : 0);
		}
		printf("}\n");
		return;
	}
	printf("%-10s payload %u B window %u: %.0f calls/s  rtt p50 %.2f us  p99 %.2f us  "
	       "p99.9 %.2f us  max %.2f us\n",
		mode_names[o->mode], o->payload, o->window, d->rate, d->p50_us, d->p99_us,
		d->p999_us, d->max_us);
	if ((o->mode == MODE_LATENCY || o->mode == MODE_THROUGHPUT) &&
		o->payload + resp_bytes(o) > DPRPC_MAX_FRAME_PAYLOAD)
		printf("%-10s response %u B: %.3f GB/s of payload (both ways); frames resent "
		       "%" PRIu64 "\n",
			"", resp_bytes(o), d->rate * (o->payload + resp_bytes(o)) / 1e9,
			d->frames_resent);
	if (o->mode == MODE_RREF)
		printf("%-10s proxy rpc_sync on one RRef: p50 %.2f us  p99 %.2f us\n", "",
			d->proxy_p50_us, d->proxy_p99_us);
	if (raw != NULL) {
		printf("%-10s payload %u B window %u: %.0f %s/s rtt p50 %.2f us  p99 %.2f us  "
		       "p99.9 %.2f us  max %.2f us\n",
			o->compare_rpc ? "rpc_sync" : "raw floor", o->payload, o->window, raw->rate,
			o->compare_rpc ? "calls" : "echoes", raw->p50_us, raw->p99_us, raw->p999_us,
			raw->max_us);
		printf("%s / %s: p50 %.3fx, rate %.3fx (median of %u back-to-back pairs; "
		       "of the medians: %.3fx, %.3fx)\n",
			o->compare_rpc ? "remote+to_here" : "dprpc", base, pr->p50, pr->rate,
			o->repeat, d->p50_us / raw->p50_us, d->rate / raw->rate);
	}
}

static int
drive(const struct perf_opts *o)
{
	static struct perf_result runs[100], raws[100];
	struct perf_result d, raw;
	struct perf_ratios pr = {0, 0};
	bool with_raw = (o->compare_raw && o->mode != MODE_RAW) || o->compare_rpc;
	enum perf_mode base = o->compare_rpc ? MODE_LATENCY : MODE_RAW;
	unsigned int i, tag = 0;
	int rc;

	for (i = 0; i < o->repeat; i++) {
		if (with_raw) {
			rc = run_phase(o, base, tag++, &raws[i]);
			if (rc != 0) {
				fprintf(stderr, "dprpc-perf: %s run %u failed: %s\n",
					mode_names[base], i, strerror(-rc));
				return 1;
			}
		}
		rc = run_phase(o, o->mode, tag++, &runs[i]);
		if (rc != 0) {
			fprintf(stderr, "dprpc-perf: %s run %u failed: %s\n", mode_names[o->mode],
				i, strerror(-rc));
			return 1;
		}
	}
	median_result(runs, o->repeat, &d);
	if (with_raw) {
		double p50[100], rate[100];

		median_result(raws, o->repeat, &raw);
		for (i = 0; i < o->repeat; i++) {
			p50[i] = runs[i].p50_us / raws[i].p50_us;
			rate[i] = runs[i].rate / raws[i].rate;
		}
		pr.p50 = median_of(p50, o->repeat);
		pr.rate = median_of(rate, o->repeat);
	}
	report(o, &d, with_raw ? &raw : NULL, &pr);
	return 0;
}

int
main(int argc, char **argv)
{
	struct perf_opts o;
	struct perf_result r;
	int sep, rc;

	for (sep = 1; sep < argc && strcmp(argv[sep], "--") != 0; sep++)
		;
	if (sep == argc) {
		/* No "--": everything is tool options (a MODE first). */
		sep = 0;
	}
	if (parse_opts(argc - sep, argv + sep, &o) != 0) {
		usage(argv[0]);
		return 2;
	}
	perf_retransmit_us = o.retransmit_us;
	if (sep <= 1) {
		/* No EAL options: fork both sides over a memif pair. */
		if (o.role != NULL) {
			fprintf(stderr, "dprpc-perf: --role needs EAL options (a port)\n");
			return 2;
		}
		return drive(&o);
	}
	if (o.role == NULL) {
		fprintf(stderr, "dprpc-perf: with EAL options, give --role server|client\n");
		return 2;
	}
	if (o.compare_raw || o.compare_rpc || o.repeat != 1) {
		fprintf(stderr, "dprpc-perf: --compare-raw and --repeat need the forked mode\n");
		return 2;
	}
	perf_server_json = o.json && strcmp(o.role, "server") == 0;
	rc = dprpc_eal_init(sep, argv);
	if (rc < 0) {
		fprintf(stderr, "dprpc-perf: EAL: %s\n", strerror(-rc));
		return 1;
	}
	rc = run_side(o.role, &o, &r);
	if (rc == 0 && strcmp(o.role, "client") == 0)
		report(&o, &r, NULL, NULL);
	dprpc_eal_cleanup();
	return rc == 0 ? 0 : 1;
}
