/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dprpc-perf's command line after the "--": the MODE, its options and
 * their defaults, the checks that reject a combination the modes cannot
 * run, and the usage text printed when they do.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dprpc/dprpc.h>

#include "perf.h"

const char *const perf_mode_names[MODE_MAX] = {
	"latency", "throughput", "raw", "rref", "rref-churn", "lateness", "open", "sweep", "world"};

void
perf_usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [EAL options] -- MODE [options]\n"
		"MODE: latency | throughput | raw | rref | rref-churn | lateness | open | sweep | "
		"world\n"
		"  --payload BYTES   request (and response) payload (default 32; up to %u in\n"
		"                    latency and throughput, %d otherwise)\n"
		"  --response BYTES  latency, throughput: the server answers this many bytes\n"
		"                    instead of echoing\n"
		"  --window W        calls (or raw frames) in flight (default 1 for latency, 256\n"
		"                    per thread for lateness, 32 otherwise)\n"
		"  --duration S      seconds measured per run (default 2)\n"
		"  --warmup S        seconds discarded before measuring (default 0.3)\n"
		"  --repeat N        runs; medians are reported (default 1)\n"
		"  --compare-raw     measure the raw floor in the same run, alternating\n"
		"  --compare-rpc     rref: measure rpc_sync latency in the same run, alternating\n"
		"  --value-size B    rref: the RRef's value is B bytes (up to %u) made by the\n"
		"                    server, not the echoed payload; to_here() of it and\n"
		"                    rpc_sync() answering B bytes are measured too, call\n"
		"                    for call\n"
		"  --rrefs N         rref-churn: RRefs created and released (default 1000000)\n"
		"  --batch B         rref-churn: RRefs alive at once (default 4096)\n"
		"  --json            print one JSON object\n"
		"  --role R          server | client: run one side with the given EAL options\n"
		"  --world MAP       with --role: the world map (text, ';' between lines, or\n"
		"                    @FILE) instead of the fixed 'server 0 02:00:00:00:00:01\n"
		"                    10.0.0.1 7000; client 1 02:00:00:00:00:02 10.0.0.2 7000';\n"
		"                    it must name a server (rank 0) and a client, and may\n"
		"                    leave MACs out and give subnet lines (found by ARP)\n"
		"  --server-cpu C, --client-cpu C   CPUs of the forked sides (default 1, 0)\n"
		"  --retransmit-us US  the agents' retransmit_us (0: no resends; default the\n"
		"                    agent's, 1000)\n"
		"  --inline-wait-us US  the server's inline_wait_max_us: the inline backlog's\n"
		"                    bound (0: the agent's default, 10000; 4294967295: none;\n"
		"                    rref-churn's default: none)\n"
		"  --auth A          none | header | payload: both agents share a fixed 32-byte\n"
		"                    world key, their frames tagged over the header, or the\n"
		"                    header and the payload (docs/security.md); default none,\n"
		"                    no key; not for world\n"
		"  --threads N       lateness: client application threads (pthreads, floating\n"
		"                    over every CPU; default 4)\n"
		"  --service-us US   lateness: the server's busy time per call (default 1000;\n"
		"                    above --timeout-us, every call times out)\n"
		"  --watch           lateness: run the stall watch (perf/watch.h) and report\n"
		"                    the lateness net of the machine's stalls of every CPU\n"
		"  --timeout-us US   lateness, open: each call's timeout (default 50000 for\n"
		"                    lateness, 1000000 for open)\n"
		"open (open loop, as wrk2: latency from each call's intended send time):\n"
		"  --rate R          calls per second offered (required)\n"
		"  --poisson         exponential gaps between calls (seeded) instead of fixed\n"
		"  --seed N          the Poisson schedule's seed (default 1)\n"
		"  --handler NAME    the server's handler: echo (default), spin (busy\n"
		"                    --service-us), sleep (sleeps --service-us), or any name\n"
		"                    a --role server registers\n"
		"  --csv             per-second rows and a summary row as CSV\n"
		"  --spectrum FILE   write the full percentile spectrum there (CSV with --csv)\n"
		"  --hist-digits D   the histogram's significant digits, 1..5 (default 3)\n"
		"  --hist-max-us US  its highest value (default 60000000); above: overflow\n"
		"sweep (open-loop runs at rising rates; options of open apply):\n"
		"  --rates R1,R2,..  the rates, ascending; or\n"
		"  --rate-min R --rate-max R [--steps N]  N rates evenly spaced (default 10)\n"
		"  --refine N        bisection steps past the last sustainable rate (default 3)\n"
		"  --repeat N        runs per rate; the one of median p99 counts (default 1)\n"
		"  --slo-us US       p99 bound of a sustainable rate (default: 10x the p99 at\n"
		"                    the lowest rate)\n"
		"world (N worker processes over memif, pinned round robin over the CPUs; each\n"
		"keeps --window calls in flight to every other, default 8; then a graceful\n"
		"shutdown):\n"
		"  --workers N       worker processes, 2..%d (default 4)\n"
		"  --compare-workers M  a world of M first, reported beside (e.g. 2 beside 4)\n",
		prog, DPRPC_MAX_MSG_DEFAULT, DPRPC_MAX_FRAME_PAYLOAD, DPRPC_MAX_MSG_DEFAULT,
		PERF_WORLD_MAX);
}

int
perf_parse_opts(int argc, char **argv, struct perf_opts *o)
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
		{"value-size", required_argument, NULL, 'V'},
		{"batch", required_argument, NULL, 'B'},
		{"json", no_argument, NULL, 'j'},
		{"role", required_argument, NULL, 'R'},
		{"world", required_argument, NULL, 'U'},
		{"server-cpu", required_argument, NULL, 'S'},
		{"client-cpu", required_argument, NULL, 'C'},
		{"retransmit-us", required_argument, NULL, 'T'},
		{"inline-wait-us", required_argument, NULL, 'I'},
		{"auth", required_argument, NULL, 'Q'},
		{"threads", required_argument, NULL, 'n'},
		{"service-us", required_argument, NULL, 's'},
		{"watch", no_argument, NULL, 'K'},
		{"timeout-us", required_argument, NULL, 't'},
		{"rate", required_argument, NULL, 'a'},
		{"poisson", no_argument, NULL, 'O'},
		{"seed", required_argument, NULL, 'E'},
		{"handler", required_argument, NULL, 'H'},
		{"csv", no_argument, NULL, 'v'},
		{"spectrum", required_argument, NULL, 'G'},
		{"hist-digits", required_argument, NULL, 'g'},
		{"hist-max-us", required_argument, NULL, 'X'},
		{"rates", required_argument, NULL, 'L'},
		{"rate-min", required_argument, NULL, 'm'},
		{"rate-max", required_argument, NULL, 'M'},
		{"steps", required_argument, NULL, 'k'},
		{"refine", required_argument, NULL, 'f'},
		{"slo-us", required_argument, NULL, 'l'},
		{"workers", required_argument, NULL, 'x'},
		{"compare-workers", required_argument, NULL, 'y'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	/* --auth's words, by enum dprpc_auth_mode. */
	static const char *const auth_names[] = {[DPRPC_AUTH_OFF] = "none",
		[DPRPC_AUTH_HEADER] = "header",
		[DPRPC_AUTH_PAYLOAD] = "payload"};
	bool window_set = false, open_opts = false;
	double rate_min = 0, rate_max = 0;
	unsigned int steps = 10;
	char *p, *end;
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
	o->inline_wait_us = -1;
	o->threads = 4;
	o->service_us = 1000;
	o->timeout_us = 0;
	o->seed = 1;
	o->handler = "echo";
	o->hist_digits = 3;
	o->hist_max_us = 60ull * 1000 * 1000;
	o->refine = 3;
	o->workers = 4;
	if (argc < 2) {
		fprintf(stderr, "dprpc-perf: give a MODE after --\n");
		return -EINVAL;
	}
	for (i = 0; i < MODE_MAX && strcmp(argv[1], perf_mode_names[i]) != 0; i++)
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
		case 'V':
			o->value_size = (unsigned int)strtoul(optarg, NULL, 0);
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
		case 'U':
			o->world = optarg;
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
		case 'I':
			o->inline_wait_us = strtol(optarg, NULL, 0);
			break;
		case 'Q':
			for (i = 0;
				i < (int)RTE_DIM(auth_names) && strcmp(optarg, auth_names[i]) != 0;
				i++)
				;
			if (i == (int)RTE_DIM(auth_names)) {
				fprintf(stderr, "dprpc-perf: --auth is none, header or payload\n");
				return -EINVAL;
			}
			o->auth = (unsigned int)i;
			break;
		case 'n':
			o->threads = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 's':
			o->service_us = strtoull(optarg, NULL, 0);
			break;
		case 'K':
			o->watch = true;
			break;
		case 't':
			o->timeout_us = strtoull(optarg, NULL, 0);
			break;
		case 'a':
			o->rate = strtod(optarg, NULL);
			open_opts = true;
			break;
		case 'O':
			o->poisson = true;
			open_opts = true;
			break;
		case 'E':
			o->seed = strtoull(optarg, NULL, 0);
			open_opts = true;
			break;
		case 'H':
			o->handler = optarg;
			open_opts = true;
			break;
		case 'v':
			o->csv = true;
			open_opts = true;
			break;
		case 'G':
			o->spectrum = optarg;
			open_opts = true;
			break;
		case 'g':
			o->hist_digits = (unsigned int)strtoul(optarg, NULL, 0);
			open_opts = true;
			break;
		case 'X':
			o->hist_max_us = strtoull(optarg, NULL, 0);
			open_opts = true;
			break;
		case 'L':
			for (p = optarg; *p != '\0' && o->nb_rates < PERF_SWEEP_MAX; p = end) {
				o->rates[o->nb_rates++] = strtod(p, &end);
				if (end == p || (*end != ',' && *end != '\0'))
					return -EINVAL;
				if (*end == ',')
					end++;
			}
			if (*p != '\0')
				return -EINVAL;
			break;
		case 'm':
			rate_min = strtod(optarg, NULL);
			break;
		case 'M':
			rate_max = strtod(optarg, NULL);
			break;
		case 'k':
			steps = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'f':
			o->refine = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'l':
			o->slo_us = strtod(optarg, NULL);
			break;
		case 'x':
			o->workers = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'y':
			o->compare_workers = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		default:
			return -EINVAL;
		}
	}
	if (o->timeout_us == 0)
		o->timeout_us = o->mode == MODE_LATENESS ? 50000 : 1000000;
	if (open_opts && o->mode != MODE_OPEN && o->mode != MODE_SWEEP) {
		fprintf(stderr, "dprpc-perf: --rate, --poisson, --seed, --handler, --csv, "
				"--spectrum and --hist-* are for open and sweep\n");
		return -EINVAL;
	}
	if (o->auth != DPRPC_AUTH_OFF && o->mode == MODE_WORLD) {
		fprintf(stderr, "dprpc-perf: world makes its agents itself: no --auth\n");
		return -EINVAL;
	}
	if (o->mode == MODE_SWEEP && o->nb_rates == 0 && steps >= 2 && steps <= PERF_SWEEP_MAX &&
		rate_min > 0 && rate_max > rate_min)
		for (i = 0; i < (int)steps; i++)
			o->rates[o->nb_rates++] =
				rate_min + (rate_max - rate_min) * i / (steps - 1);
	if (o->mode == MODE_SWEEP) {
		for (i = 1; i < (int)o->nb_rates && o->rates[i] > o->rates[i - 1]; i++)
			;
		if (o->nb_rates < 2 || i < (int)o->nb_rates || o->rates[0] <= 0 ||
			o->nb_rates + o->refine + 1 > PERF_SWEEP_MAX || o->slo_us < 0) {
			fprintf(stderr,
				"dprpc-perf: sweep: give 2 to %d ascending positive "
				"--rates, or --rate-min < --rate-max and --steps 2..%d; "
				"rates + --refine under %d\n",
				PERF_SWEEP_MAX, PERF_SWEEP_MAX, PERF_SWEEP_MAX);
			return -EINVAL;
		}
		o->rate = o->rates[0];
	}
	if ((o->mode == MODE_OPEN || o->mode == MODE_SWEEP) &&
		(o->rate <= 0 || o->rate > 1e8 || o->duration_s > 600 ||
			(o->repeat != 1 && o->mode == MODE_OPEN) || o->compare_raw ||
			o->hist_digits < 1 || o->hist_digits > PERF_HIST_DIGITS_MAX ||
			o->hist_max_us < 200 || o->hist_max_us > 1000ull * 1000 * 1000 * 1000 ||
			o->timeout_us > 60ull * 1000 * 1000)) {
		fprintf(stderr,
			"dprpc-perf: open: --rate 0..1e8 (required), --duration up to "
			"600, --repeat for sweep only, no --compare-raw, --hist-digits 1..5, "
			"--hist-max-us 200..1e12, --timeout-us up to 60000000\n");
		return -EINVAL;
	}
	if (!window_set)
		o->window = o->mode == MODE_THROUGHPUT || o->mode == MODE_RAW ? 32
			    : o->mode == MODE_LATENESS			      ? 256
			    : o->mode == MODE_WORLD			      ? 8
									      : 1;
	if ((o->workers != 4 || o->compare_workers != 0) && o->mode != MODE_WORLD) {
		fprintf(stderr, "dprpc-perf: --workers and --compare-workers are for world\n");
		return -EINVAL;
	}
	if (o->mode == MODE_WORLD &&
		(o->workers < 2 || o->workers > PERF_WORLD_MAX || o->compare_workers == 1 ||
			o->compare_workers > PERF_WORLD_MAX || o->repeat != 1 || o->compare_raw ||
			o->payload > DPRPC_MAX_FRAME_PAYLOAD ||
			o->window * (o->workers - 1) > 4096)) {
		fprintf(stderr,
			"dprpc-perf: world: --workers 2..%d, --compare-workers 0 or "
			"2..%d, no --repeat or --compare-raw, --payload up to %d, "
			"--window x (workers - 1) up to 4096\n",
			PERF_WORLD_MAX, PERF_WORLD_MAX, DPRPC_MAX_FRAME_PAYLOAD);
		return -EINVAL;
	}
	if (o->window != 1 && o->mode != MODE_THROUGHPUT && o->mode != MODE_RAW &&
		o->mode != MODE_LATENESS && o->mode != MODE_WORLD) {
		fprintf(stderr, "dprpc-perf: %s mode keeps one call outstanding\n",
			perf_mode_names[o->mode]);
		return -EINVAL;
	}
	if ((o->compare_rpc && o->mode != MODE_RREF) || (o->compare_raw && o->compare_rpc) ||
		o->rrefs == 0 || o->batch == 0 || o->batch > 8192) {
		fprintf(stderr, "dprpc-perf: --compare-rpc is for rref; --batch is 1..8192\n");
		return -EINVAL;
	}
	if (o->mode == MODE_LATENCY || o->mode == MODE_THROUGHPUT || o->mode == MODE_OPEN ||
		o->mode == MODE_SWEEP) {
		if (o->payload > DPRPC_MAX_MSG_DEFAULT ||
			(o->response != PERF_ECHO && o->response > DPRPC_MAX_MSG_DEFAULT)) {
			fprintf(stderr, "dprpc-perf: --payload and --response are at most %u\n",
				DPRPC_MAX_MSG_DEFAULT);
			return -EINVAL;
		}
	} else if (o->payload > DPRPC_MAX_FRAME_PAYLOAD || o->response != PERF_ECHO) {
		fprintf(stderr, "dprpc-perf: %s mode: --payload up to %d, no --response\n",
			perf_mode_names[o->mode], DPRPC_MAX_FRAME_PAYLOAD);
		return -EINVAL;
	}
	if (o->value_size > DPRPC_MAX_MSG_DEFAULT || (o->value_size > 0 && o->mode != MODE_RREF)) {
		fprintf(stderr, "dprpc-perf: --value-size is for rref, up to %u\n",
			DPRPC_MAX_MSG_DEFAULT);
		return -EINVAL;
	}
	if (o->mode == MODE_LATENESS &&
		(o->threads == 0 || o->threads > 64 || o->threads * o->window > 8192 ||
			o->timeout_us == 0 || o->timeout_us > 60ull * 1000 * 1000 ||
			o->service_us > 1000 * 1000)) {
		fprintf(stderr, "dprpc-perf: lateness: --threads 1..64, --threads x --window up "
				"to 8192, --timeout-us 1..60000000, --service-us up to 1000000\n");
		return -EINVAL;
	}
	if (o->window == 0 || o->window > PERF_MAX_WINDOW || o->duration_s <= 0 ||
		o->warmup_s < 0 || o->repeat == 0 || o->repeat > 100 || o->retransmit_us < -1 ||
		o->retransmit_us > 10 * 1000 * 1000 || o->inline_wait_us < -1 ||
		o->inline_wait_us > UINT32_MAX) {
		fprintf(stderr, "dprpc-perf: option out of range\n");
		return -EINVAL;
	}
	if (o->role != NULL && strcmp(o->role, "server") != 0 && strcmp(o->role, "client") != 0) {
		fprintf(stderr, "dprpc-perf: --role is server or client\n");
		return -EINVAL;
	}
	/* rref-churn offers a whole batch (--batch, 2048) of RRef creations
	 * and deletions at once, by design: more than the server's default
	 * inline backlog (10 ms of inline handler runs while its rx bursts
	 * come back full) whenever the machine is loaded, which it refuses
	 * -EBUSY (overload control: not what this mode measures).
	 * Unbounded unless asked for. */
	if (o->mode == MODE_RREF_CHURN && o->inline_wait_us < 0)
		o->inline_wait_us = DPRPC_INLINE_WAIT_UNBOUNDED;
	return 0;
}
