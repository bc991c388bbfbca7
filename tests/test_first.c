/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a first program meets: EAL set up for a machine without a NIC by
 * one call (dprpc_eal_init_local()), and a clean run that prints nothing
 * of EAL's or the PMDs' (dprpc_eal_init()'s quiet levels), checked on
 * worker processes of examples/ whose output is captured.  Each test runs
 * in a process of its own (Criterion's), so each initialises EAL once.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include <dprpc/dprpc.h>

/* A test that failed half-way leaves its runtime directory: remove it. */
static void
eal_local_fini(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf /var/run/dpdk/dprpc-%d /var/run/dpdk/dprpc-%d-t1",
		(int)getpid(), (int)getpid());
	(void)system(cmd);
}

TestSuite(eal_local, .fini = eal_local_fini, .timeout = 60);

/* The runtime directory ends in @prefix; gone after dprpc_eal_cleanup(). */
static void
expect_prefix_then_cleanup(const char *prefix)
{
	char dir[PATH_MAX];
	const char *base;
	struct stat sb;

	snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
	base = strrchr(dir, '/');
	cr_assert_not_null(base);
	cr_expect_str_eq(base + 1, prefix);
	cr_assert_eq(dprpc_eal_cleanup(), 0);
	cr_expect_neq(stat(dir, &sb), 0, "%s left behind", dir);
}

/* The set: two lcores, no hugepages, no PCI, the file prefix
 * dprpc-PID-TAG. */
Test(eal_local, the_set_with_a_tag)
{
	struct dprpc_eal_local_conf c;
	char prefix[64];

	dprpc_eal_local_conf_init(&c);
	c.tag = "t1";
	cr_assert_eq(dprpc_eal_init_local(&c), 0);
	cr_expect_eq(rte_lcore_count(), 2u);
	cr_expect_eq(rte_eal_has_hugepages(), 0);
	cr_expect_eq(rte_eal_has_pci(), 0);
	cr_expect_eq(rte_eth_dev_count_avail(), 0u);
	/* Up already: nothing is done. */
	cr_assert_eq(dprpc_eal_init_local(&c), 0);
	snprintf(prefix, sizeof(prefix), "dprpc-%d-t1", (int)getpid());
	expect_prefix_then_cleanup(prefix);
}

/* NULL: the defaults, the file prefix dprpc-PID. */
Test(eal_local, null_gives_the_defaults)
{
	char prefix[64];

	cr_assert_eq(dprpc_eal_init_local(NULL), 0);
	cr_expect_eq(rte_lcore_count(), 2u);
	snprintf(prefix, sizeof(prefix), "dprpc-%d", (int)getpid());
	expect_prefix_then_cleanup(prefix);
}

Test(eal_local, one_lcore)
{
	struct dprpc_eal_local_conf c;
	char prefix[64];

	dprpc_eal_local_conf_init(&c);
	c.lcores = 1;
	cr_assert_eq(dprpc_eal_init_local(&c), 0);
	cr_expect_eq(rte_lcore_count(), 1u);
	snprintf(prefix, sizeof(prefix), "dprpc-%d", (int)getpid());
	expect_prefix_then_cleanup(prefix);
}

/* The caller's arguments come after the set's: a vdev is probed, and its
 * --lcores, -m and --file-prefix replace the set's own (EAL would refuse
 * two --lcores). */
Test(eal_local, args_add_a_vdev_and_replace_the_set_own)
{
	struct dprpc_eal_local_conf c;
	char args[160], prefix[64];

	snprintf(prefix, sizeof(prefix), "dprpc-%d-t1", (int)getpid());
	snprintf(args, sizeof(args),
		"--vdev net_ring0 --lcores=0@0,1@0,2@0 -m 128 --file-prefix=%s", prefix);
	dprpc_eal_local_conf_init(&c);
	c.args = args;
	cr_assert_eq(dprpc_eal_init_local(&c), 0);
	cr_expect_eq(rte_lcore_count(), 3u);
	cr_expect_eq(rte_eth_dev_count_avail(), 1u);
	expect_prefix_then_cleanup(prefix);
}

/* Arguments EAL refuses: -EINVAL. */
Test(eal_local, arguments_eal_refuses)
{
	struct dprpc_eal_local_conf c;

	dprpc_eal_local_conf_init(&c);
	c.args = "--no-such-option";
	cr_assert_eq(dprpc_eal_init_local(&c), -EINVAL);
}

/* --- a clean run is quiet ------------------------------------------------ */

#define EXAMPLES DPRPC_TEST_BUILDDIR "/../examples/"

static char qdir[64]; /* this test's folder: outputs, sockets */

static void
quiet_init(void)
{
	snprintf(qdir, sizeof(qdir), "/tmp/dprpc-quiet-XXXXXX");
	cr_assert_not_null(mkdtemp(qdir));
}

static void
quiet_fini(void)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf %s /var/run/dpdk/dpt_quiet_%d_*", qdir, (int)getpid());
	(void)system(cmd);
}

TestSuite(quiet, .init = quiet_init, .fini = quiet_fini, .timeout = 120);

/* Run @argv with its stdout and stderr in qdir/@tag.out and .err. */
static pid_t
run(const char *tag, char *const *argv)
{
	char out[128], err[128];
	pid_t pid;

	snprintf(out, sizeof(out), "%s/%s.out", qdir, tag);
	snprintf(err, sizeof(err), "%s/%s.err", qdir, tag);
	pid = fork();
	if (pid == 0) {
		/* Never outlive the test process; no cr_ call in the child. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (freopen(out, "w", stdout) == NULL || freopen(err, "w", stderr) == NULL)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	cr_assert_gt(pid, 0);
	return pid;
}

/* @pid's exit status, waiting up to @secs (then killed: -1). */
static int
reap(pid_t pid, unsigned int secs)
{
	time_t end = time(NULL) + secs;
	int status;

	while (waitpid(pid, &status, WNOHANG) != pid) {
		if (time(NULL) >= end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		usleep(10 * 1000);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* qdir/@name's contents (at most 64 KiB; "" if none), malloc'd. */
static char *
slurp(const char *name)
{
	char path[128], *buf = calloc(1, 65536);
	size_t n = 0;
	FILE *f;

	cr_assert_not_null(buf);
	snprintf(path, sizeof(path), "%s/%s", qdir, name);
	f = fopen(path, "r");
	if (f != NULL) {
		n = fread(buf, 1, 65535, f);
		fclose(f);
	}
	buf[n] = '\0';
	return buf;
}

/* What EAL and the PMDs print: "EAL: ...", "TELEMETRY: ...", and a
 * PMD's "function(): ..." lines. */
static void
expect_no_dpdk_lines(const char *tag, const char *text)
{
	cr_expect_null(strstr(text, "EAL:"), "%s printed EAL's:\n%s", tag, text);
	cr_expect_null(strstr(text, "TELEMETRY:"), "%s printed telemetry's:\n%s", tag, text);
	cr_expect_null(strstr(text, "(): "), "%s printed a PMD's:\n%s", tag, text);
}

/* Both workers' stderr is empty, and nothing of DPDK's is on stdout. */
static void
expect_quiet(const char *const *tags, unsigned int n)
{
	char name[64];

	for (unsigned int i = 0; i < n; i++) {
		char *out, *err;

		snprintf(name, sizeof(name), "%s.err", tags[i]);
		err = slurp(name);
		snprintf(name, sizeof(name), "%s.out", tags[i]);
		out = slurp(name);
		cr_expect_str_empty(err, "%s's stderr:\n%s", tags[i], err);
		expect_no_dpdk_lines(tags[i], out);
		free(out);
		free(err);
	}
}

static char *
mut(const char *s)
{
	return (char *)(uintptr_t)s;
}

/*
 * examples/hello_rpc, two processes over a memif pair of EAL vdevs, EAL
 * arguments as a newcomer writes them (no --log-level): their whole
 * exchange, and not one line of EAL's or a PMD's.  Before, each printed
 * eight: EAL's "Detected CPU lcores", "Detected NUMA nodes", "Using
 * --huge-unlink=never may create data leaks", "Detected shared linkage
 * of DPDK", "Physical addresses are unavailable, selecting IOVA as VA
 * mode", "Selected IOVA mode 'VA'", the memif PMD's "Failed to register mp
 * action callback", and telemetry's "No legacy callbacks".
 */
Test(quiet, hello_rpc_over_memif_prints_nothing_of_eal_or_pmds)
{
	static const char *const tags[] = {"alice", "bob"};
	char sock[128], vdev[2][200], prefix[2][64],
		world[] = "alice 0 02:00:00:00:00:01 10.0.0.1 "
			  "7000;bob 1 02:00:00:00:00:02 10.0.0.2 7000";
	pid_t pid[2];
	char *out;

	snprintf(sock, sizeof(sock), "%s/hello.sock", qdir);
	for (unsigned int i = 0; i < 2; i++) {
		snprintf(vdev[i], sizeof(vdev[i]), "net_memif0,role=%s,socket=%s",
			i == 0 ? "server" : "client", sock);
		snprintf(prefix[i], sizeof(prefix[i]), "dpt_quiet_%d_%u", (int)getpid(), i);
	}
	for (unsigned int i = 0; i < 2; i++) {
		char *const argv[] = {mut(EXAMPLES "hello_rpc"), mut("--no-pci"), mut("--no-huge"),
			mut("-m"), mut("256"), mut("--huge-unlink=never"), mut("--no-shconf"),
			mut("--file-prefix"), prefix[i], mut("--vdev"), vdev[i], mut("--"),
			mut("--name"), mut(tags[i]), mut("--world"), world,
			mut(i ? "--peer" : NULL), mut("alice"), NULL};

		pid[i] = run(tags[i], argv);
		/* bob once alice serves (her memif server listens) */
		for (int k = 0; i == 0 && k < 1000; k++) {
			out = slurp("alice.out");
			bool up = strstr(out, "serving") != NULL;

			free(out);
			if (up)
				break;
			usleep(10 * 1000);
		}
	}
	cr_expect_eq(reap(pid[1], 60), 0, "bob's exit");
	cr_expect_eq(reap(pid[0], 10), 0, "alice's exit");
	out = slurp("bob.out");
	cr_expect_not_null(strstr(out, "asked alice to stop: ok"), "%s", out);
	free(out);
	expect_quiet(tags, 2);
}

/*
 * examples/first_rpc, the shortest world: dprpc_eal_init_local(), a map
 * of names and ranks over a memif mesh in a folder the agents make.  Its
 * two workers print their answer and nothing else; the folder and the
 * runtime directories are gone.
 */
Test(quiet, first_rpc_prints_its_answers_alone)
{
	static const char *const tags[] = {"alice", "bob"};
	char mesh[128], path[128];
	pid_t pid[2];
	struct stat sb;

	snprintf(mesh, sizeof(mesh), "%s/mesh", qdir);
	for (unsigned int i = 0; i < 2; i++) {
		char *const argv[] = {mut(EXAMPLES "first_rpc"), mut(tags[i]), mesh, NULL};

		pid[i] = run(tags[i], argv);
	}
	for (unsigned int i = 0; i < 2; i++) {
		char *out;

		cr_expect_eq(reap(pid[i], 60), 0, "%s's exit", tags[i]);
		snprintf(path, sizeof(path), "%s.out", tags[i]);
		out = slurp(path);
		cr_expect_str_eq(out, i == 0 ? "alice: bob answered \"hello\" (0)\n"
					     : "bob: alice answered \"hello\" (0)\n");
		free(out);
		snprintf(path, sizeof(path), "/var/run/dpdk/dprpc-%d-%s", (int)pid[i], tags[i]);
		cr_expect_neq(stat(path, &sb), 0, "%s left behind", path);
	}
	expect_quiet(tags, 2);
	cr_expect_neq(stat(mesh, &sb), 0, "%s left behind", mesh);
}

/* The application's own --log-level wins over the quiet levels: a type's
 * (lib.eal:info), and the global level (no type). */
Test(quiet, a_log_level_of_the_application_wins)
{
	static const char *const levels[] = {"--log-level=lib.eal:info", "--log-level=info"};

	for (unsigned int i = 0; i < 2; i++) {
		char prefix[64], tag[16];
		char *err;
		/* hello_rpc without --world: EAL up, then its usage (exit 2) */
		char *const argv[] = {mut(EXAMPLES "hello_rpc"), mut("--no-pci"), mut("--no-huge"),
			mut("-m"), mut("64"), mut("--huge-unlink=never"), mut("--no-shconf"),
			mut("--no-telemetry"), mut("--file-prefix"), prefix, mut(levels[i]),
			mut("--"), mut("--name"), mut("x"), NULL};

		snprintf(prefix, sizeof(prefix), "dpt_quiet_%d_l%u", (int)getpid(), i);
		snprintf(tag, sizeof(tag), "level%u", i);
		cr_expect_eq(reap(run(tag, argv), 30), 2, "%s", levels[i]);
		snprintf(tag, sizeof(tag), "level%u.err", i);
		err = slurp(tag);
		cr_expect_not_null(
			strstr(err, "EAL: Detected CPU lcores"), "%s:\n%s", levels[i], err);
		free(err);
	}
}
