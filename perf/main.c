/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dprpc-perf: latency and message rate of dprpc over a DPDK port, next to
 * the raw floor of the same port measured by the same tool.
 *
 *   dprpc-perf [EAL options] -- MODE [options]
 *
 * MODE is latency (one rpc_sync outstanding), throughput (rpc_async keeping
 * --window calls in flight), raw (the port echoing raw frames of the same
 * size, without dprpc; --window applies), rref, rref-churn, lateness
 * (--threads application threads against a slow handler: how late do
 * timeouts fire), open (calls at --rate whatever the answers, latency from
 * each call's intended send: open.c) or sweep (open-loop runs at rising
 * rates: the knee and the maximum sustainable rate, sweep.c) or world (N
 * worker processes over memif calling each other all to all, world.c).
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
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include <dprpc/dprpc.h>

#include "perf.h"

/* Forked client: where its result goes, and the pipe it holds on to. */
static int perf_out_fd = -1, perf_hold_fd = -1;

uint64_t perf_start_ns;

/* Hand the result to the driver, then wait (before the port stops) until
 * the driver has stopped the server: see spawn_side(). */
void
perf_publish_and_hold(const struct perf_result *r)
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
		if (o->response != PERF_ECHO && perf_rpc_set_response(o->response) != 0)
			return -ENOMEM;
		if (o->value_size > 0 && perf_rpc_set_blob(o->value_size) != 0)
			return -ENOMEM;
		if (o->mode == MODE_LATENESS)
			return perf_lateness_server(port, o);
		return o->mode == MODE_RAW ? perf_raw_server(port) : perf_rpc_server(port);
	}
	switch (o->mode) {
	case MODE_RAW:
		return perf_raw_client(port, o, r);
	case MODE_RREF:
		return perf_rref_client(port, o, r);
	case MODE_RREF_CHURN:
		return perf_churn_client(port, o, r);
	case MODE_LATENESS:
		return perf_lateness_client(port, o, r);
	case MODE_OPEN:
		return perf_open_client(port, o, r);
	default:
		return perf_rpc_client(port, o, r);
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
	/* EAL takes char **: writable copies of the fixed arguments. */
	char fixed[][40] = {"dprpc-perf", "--no-pci", "--no-huge", "-m512", "--no-shconf",
		"--no-telemetry", "--huge-unlink=never", "--log-level=lib.eal:error",
		"--log-level=pmd.net.memif:error"};
	char lcores[32], prefix[64], vdev[300];
	struct perf_opts so = *o;
	struct perf_result r;
	char *argv[16];
	int argc = 0, rc;
	unsigned int i;
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	perf_start_ns = perf_mono_ns();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (hold_fd != NULL)
		close(hold_fd[1]);
	snprintf(lcores, sizeof(lcores), "-l%u", cpu);
	snprintf(prefix, sizeof(prefix), "--file-prefix=dprpc-perf-%d-%s-%u", (int)getppid(), role,
		tag);
	snprintf(vdev, sizeof(vdev), "--vdev=net_memif0,role=%s,socket-abstract=no,socket=%s", role,
		sock);
	for (i = 0; i < RTE_DIM(fixed); i++)
		argv[argc++] = fixed[i];
	argv[argc++] = lcores;
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

int
perf_run_phase(
	const struct perf_opts *o, enum perf_mode mode, unsigned int tag, struct perf_result *r)
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
		fprintf(stderr, "dprpc-perf: %s server exited with %d\n", perf_mode_names[mode],
			st);
		rc = rc ? rc : -EIO;
	}
	close(hold[1]);
	st = reap(cli, 5000);
	if (st != 0) {
		fprintf(stderr, "dprpc-perf: %s client exited with %d\n", perf_mode_names[mode],
			st);
		rc = rc ? rc : -EIO;
	}
	unlink(sock);
	if (rc == 0 && !r->ok) {
		fprintf(stderr, "dprpc-perf: %s run completed no call\n", perf_mode_names[mode]);
		rc = -EIO;
	}
	return rc;
}

/* A sweep's run: a fresh server and client over memif (open.c). */
static int
sweep_phase(const struct perf_opts *o, unsigned int tag, struct perf_result *r, void *ctx)
{
	(void)ctx;
	return perf_run_phase(o, MODE_OPEN, tag, r);
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

	if (o->mode == MODE_SWEEP)
		return perf_sweep(o, sweep_phase, NULL) == 0 ? 0 : 1;
	if (o->mode == MODE_WORLD) {
		rc = perf_world(o);
		if (rc != 0)
			fprintf(stderr, "dprpc-perf: world failed: %s\n", strerror(-rc));
		return rc == 0 ? 0 : 1;
	}
	for (i = 0; i < o->repeat; i++) {
		if (with_raw) {
			rc = perf_run_phase(o, base, tag++, &raws[i]);
			if (rc != 0) {
				fprintf(stderr, "dprpc-perf: %s run %u failed: %s\n",
					perf_mode_names[base], i, strerror(-rc));
				return 1;
			}
		}
		rc = perf_run_phase(o, o->mode, tag++, &runs[i]);
		if (rc != 0) {
			fprintf(stderr, "dprpc-perf: %s run %u failed: %s\n",
				perf_mode_names[o->mode], i, strerror(-rc));
			return 1;
		}
	}
	perf_median_result(runs, o->repeat, &d);
	if (with_raw) {
		double p50[100], rate[100];

		perf_median_result(raws, o->repeat, &raw);
		for (i = 0; i < o->repeat; i++) {
			p50[i] = runs[i].p50_us / raws[i].p50_us;
			rate[i] = runs[i].rate / raws[i].rate;
		}
		pr.p50 = perf_median_of(p50, o->repeat);
		pr.rate = perf_median_of(rate, o->repeat);
	}
	perf_report(o, &d, with_raw ? &raw : NULL, &pr);
	return 0;
}

int
main(int argc, char **argv)
{
	struct perf_opts o;
	struct perf_result r;
	int sep, rc;

	perf_start_ns = perf_mono_ns();
	for (sep = 1; sep < argc && strcmp(argv[sep], "--") != 0; sep++)
		;
	if (sep == argc) {
		/* No "--": everything is tool options (a MODE first). */
		sep = 0;
	}
	if (perf_parse_opts(argc - sep, argv + sep, &o) != 0) {
		perf_usage(argv[0]);
		return 2;
	}
	perf_world_map = o.world;
	perf_retransmit_us = o.retransmit_us;
	perf_inline_wait_us = o.inline_wait_us;
	perf_service_us = o.service_us;
	perf_auth = o.auth;
	if (sep <= 1) {
		/* No EAL options: fork both sides over a memif pair. */
		if (o.role != NULL || o.world != NULL) {
			fprintf(stderr,
				"dprpc-perf: --role and --world need EAL options (a port)\n");
			return 2;
		}
		return drive(&o);
	}
	if (o.role == NULL) {
		fprintf(stderr, "dprpc-perf: with EAL options, give --role server|client\n");
		return 2;
	}
	if (o.compare_raw || o.compare_rpc || o.repeat != 1 || o.mode == MODE_SWEEP ||
		o.mode == MODE_WORLD || (o.world != NULL && o.mode == MODE_RAW)) {
		fprintf(stderr, "dprpc-perf: --compare-raw, --repeat, sweep and world need the "
				"forked mode; raw takes no --world\n");
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
		perf_report(&o, &r, NULL, NULL);
	dprpc_eal_cleanup();
	return rc == 0 ? 0 : 1;
}
