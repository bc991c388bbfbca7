/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The short path to a world (launch/): the store's rendezvous between
 * threads (maps, strangers, duplicates, timeouts), and dprpc_launch() in
 * worker processes that call each other and leave nothing behind.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <criterion/criterion.h>

#include <rte_errno.h>

#include <dprpc/dprpc.h>

#include "ln_internal.h"

#define T_SEC (1000ull * 1000)

/* A TCP port nobody listens on now. */
static uint16_t
free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

struct rdv {
	uint16_t port;
	unsigned int rank, size;
	const char *name;
	uint64_t timeout_us;
	int rc;
	char world[DPRPC_LAUNCH_WORLD_MAX];
	char err[256];
};

static void *
rdv_thread(void *arg)
{
	struct rdv *r = arg;

	r->rc = dprpc_store_rendezvous("127.0.0.1", r->port, r->name, r->rank, r->size, "/tmp",
		r->timeout_us, r->world, sizeof(r->world), r->err, sizeof(r->err));
	return NULL;
}

static void
rdv_run(struct rdv *r, unsigned int n)
{
	pthread_t t[8];

	for (unsigned int i = 0; i < n; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, rdv_thread, &r[i]), 0);
	for (unsigned int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

/* The mesh directory named by a world map (removed by the caller). */
static void
map_dir(const char *world, char *dir, size_t cap)
{
	const char *m = strstr(world, "mesh memif:");

	cr_assert_not_null(m, "%s", world);
	snprintf(dir, cap, "%.*s", (int)strcspn(m + 11, "\n"), m + 11);
}

Test(launch, store_gives_every_rank_the_same_map)
{
	static struct rdv r[3];
	const char *names[] = {"alpha", "beta", "gamma"};
	uint16_t port = free_port();
	char dir[256], line[64];
	struct stat st;

	for (unsigned int i = 0; i < 3; i++)
		r[i] = (struct rdv){.port = port,
			.rank = i,
			.size = 3,
			.name = names[i],
			.timeout_us = 10 * T_SEC};
	rdv_run(r, 3);
	for (unsigned int i = 0; i < 3; i++) {
		cr_assert_gt(r[i].rc, 0, "rank %u: %d %s", i, r[i].rc, r[i].err);
		cr_assert_eq((size_t)r[i].rc, strlen(r[i].world));
		cr_assert_str_eq(r[i].world, r[0].world);
	}
	for (unsigned int i = 0; i < 3; i++) {
		snprintf(line, sizeof(line), "%s %u\n", names[i], i);
		cr_assert(strstr(r[0].world, line) != NULL, "%s in %s", line, r[0].world);
	}
	map_dir(r[0].world, dir, sizeof(dir));
	cr_assert_eq(stat(dir, &st), 0, "%s", dir);
	cr_assert(S_ISDIR(st.st_mode));
	cr_assert_eq(rmdir(dir), 0);
}

/* A connection that is no worker of the world is closed and counted; the
 * rendezvous completes all the same. */
Test(launch, store_drops_a_stranger)
{
	static struct rdv r[2];
	uint16_t port = free_port();
	unsigned long before = ln_store_rejected;
	struct sockaddr_in sa = {.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	pthread_t t0;
	char buf[16], dir[256];
	int fd = -1;

	r[0] = (struct rdv){
		.port = port, .rank = 0, .size = 2, .name = "w0", .timeout_us = 10 * T_SEC};
	r[1] = (struct rdv){
		.port = port, .rank = 1, .size = 2, .name = "w1", .timeout_us = 10 * T_SEC};
	cr_assert_eq(pthread_create(&t0, NULL, rdv_thread, &r[0]), 0);
	for (int i = 0; i < 500; i++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		close(fd);
		fd = -1;
		usleep(10000);
	}
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "GET / HTTP/1.0\r\n\r\n", 18), 18);
	/* Closed without a word to it. */
	cr_assert_eq(read(fd, buf, sizeof(buf)), 0);
	close(fd);
	rdv_thread(&r[1]);
	pthread_join(t0, NULL);
	cr_assert_gt(r[0].rc, 0, "%s", r[0].err);
	cr_assert_gt(r[1].rc, 0, "%s", r[1].err);
	cr_assert_str_eq(r[0].world, r[1].world);
	cr_assert_eq(ln_store_rejected, before + 1);
	map_dir(r[0].world, dir, sizeof(dir));
	cr_assert_eq(rmdir(dir), 0);
}

/* A name taken twice: the worker that came second is told why; rank 0
 * times out naming its rank, and makes no directory. */
Test(launch, store_refuses_a_name_twice_and_times_out_naming_the_missing)
{
	static struct rdv r[3];
	uint16_t port = free_port();
	unsigned int second;
	char want[32];

	r[0] = (struct rdv){
		.port = port, .rank = 0, .size = 3, .name = "w0", .timeout_us = 2 * T_SEC};
	r[1] = (struct rdv){
		.port = port, .rank = 1, .size = 3, .name = "same", .timeout_us = 5 * T_SEC};
	r[2] = (struct rdv){
		.port = port, .rank = 2, .size = 3, .name = "same", .timeout_us = 5 * T_SEC};
	rdv_run(r, 3);
	second = r[1].rc == -EEXIST ? 1 : 2;
	cr_assert_eq(r[second].rc, -EEXIST, "%d %d", r[1].rc, r[2].rc);
	cr_assert(strstr(r[second].err, "name taken") != NULL, "%s", r[second].err);
	/* The first was accepted, then the store closed without a map. */
	cr_assert_eq(r[3 - second].rc, -ECONNRESET, "%d %s", r[3 - second].rc, r[3 - second].err);
	cr_assert_eq(r[0].rc, -ETIMEDOUT, "%d", r[0].rc);
	snprintf(want, sizeof(want), "ranks %u did not come", second);
	cr_assert(strstr(r[0].err, want) != NULL, "%s", r[0].err);
}

Test(launch, store_rank0_alone_times_out)
{
	static struct rdv r;

	r = (struct rdv){
		.port = free_port(), .rank = 0, .size = 2, .name = "w0", .timeout_us = 200000};
	rdv_thread(&r);
	cr_assert_eq(r.rc, -ETIMEDOUT);
	cr_assert(strstr(r.err, "ranks 1 did not come (1 of 2)") != NULL, "%s", r.err);
}

/* --- dprpc_launch() in worker processes ----------------------------------- */

/* Fork and exec tests/launch_worker (no Criterion in the child). */
static pid_t
spawn_worker(unsigned int rank, unsigned int n, uint16_t port, const char *run_dir)
{
	char r[16], ns[16], p[16];
	pid_t pid;

	snprintf(r, sizeof(r), "%u", rank);
	snprintf(ns, sizeof(ns), "%u", n);
	snprintf(p, sizeof(p), "%u", port);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(DPRPC_TEST_BUILDDIR "/launch_worker", "launch_worker", r, ns, p, run_dir,
			(char *)NULL);
		_exit(127);
	}
	return pid;
}

Test(launch, three_processes_form_a_world_and_leave_nothing, .timeout = 200)
{
	char run_dir[] = "/tmp/dprpc-launch-XXXXXX", path[64];
	uint16_t port = free_port();
	pid_t pid[3];
	struct dirent *e;
	DIR *d;

	cr_assert_not_null(mkdtemp(run_dir));
	for (unsigned int i = 0; i < 3; i++) {
		pid[i] = spawn_worker(i, 3, port, run_dir);
		cr_assert_gt(pid[i], 0);
	}
	for (unsigned int i = 0; i < 3; i++) {
		int st;

		cr_assert_eq(waitpid(pid[i], &st, 0), pid[i]);
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "w%u: status %#x", i, st);
		snprintf(path, sizeof(path), "/var/run/dpdk/dprpc-%d-%u", (int)pid[i], i);
		cr_expect_neq(access(path, F_OK), 0, "%s left behind", path);
	}
	d = opendir(run_dir);
	cr_assert_not_null(d);
	while ((e = readdir(d)) != NULL)
		cr_expect(strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0,
			"%s/%s left behind", run_dir, e->d_name);
	closedir(d);
	if (rmdir(run_dir) != 0) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "ls -laR %s >&2; rm -rf %s", run_dir, run_dir);
		cr_expect_eq(system(cmd), 0);
		cr_assert_fail("%s was not empty", run_dir);
	}
}
