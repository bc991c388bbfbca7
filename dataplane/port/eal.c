/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * EAL set-up: dprpc_eal_init(), dprpc_eal_init_local() (the arguments
 * of a machine without a NIC or hugepages) and dprpc_eal_cleanup(), the
 * dataplane's log type, and the lcore ids (hence mempool caches) of
 * threads that EAL did not create (dp_thread_lcore()).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include <dprpc/dprpc_agent.h>
#include <dprpc/dprpc_eal.h>

#include "dp_eal.h"
#include "dp_intr.h"
#include "dp_log.h"
#include "dprpc_lcore.h"

RTE_LOG_REGISTER(dp_logtype, dprpc.dataplane, INFO);

/*
 * The first call into an agent from a thread EAL did not create registers
 * it (rte_thread_register()), so its gets and puts use per-lcore mempool
 * caches rather than the shared rings (docs/architecture.md, "Pools and
 * preemption"); a key destructor unregisters it.  With no id left it goes
 * on without.
 */
__thread int8_t dp_tls_lcore __attribute__((tls_model("initial-exec")));
/* The id whose caches the library's own gets and puts use (dprpc_lcore.h):
 * set below, once the thread's id is known to stay. */
__thread uint32_t dprpc_tls_lcore_id __attribute__((tls_model("initial-exec"))) = DPRPC_LCORE_ASK;
static pthread_key_t dp_lcore_key;
static pthread_once_t dp_lcore_once = PTHREAD_ONCE_INIT;
static bool dp_lcore_key_ok;
/* Set by dprpc_eal_cleanup() (release) before EAL goes; a thread that
 * exits after must not unregister (acquire). */
static atomic_bool dp_eal_down;

static void
dp_lcore_thread_exit(void *unused)
{
	(void)unused;
	/* The id goes back to EAL below: no use of it after. */
	dprpc_tls_lcore_id = DPRPC_LCORE_ASK;
	/* Acquire: pairs with the release store in dprpc_eal_cleanup(). */
	if (!atomic_load_explicit(&dp_eal_down, memory_order_acquire))
		rte_thread_unregister();
}

static void
dp_lcore_key_make(void)
{
	dp_lcore_key_ok = pthread_key_create(&dp_lcore_key, dp_lcore_thread_exit) == 0;
}

void
dp_thread_lcore_slow(void)
{
	unsigned int id = rte_lcore_id();

	dp_tls_lcore = -1; /* one attempt per thread */
	if (id != LCORE_ID_ANY) {
		dp_tls_lcore = 1; /* an EAL lcore, or registered already */
		/* An EAL lcore's id is fixed; one the application registered
		 * it may take back, so it is asked for each time. */
		if (rte_eal_lcore_role(id) != ROLE_NON_EAL)
			dprpc_tls_lcore_id = id;
		return;
	}
	(void)pthread_once(&dp_lcore_once, dp_lcore_key_make);
	if (!dp_lcore_key_ok || rte_thread_register() != 0)
		return;
	if (rte_lcore_id() == LCORE_ID_ANY)
		return; /* registered without an id (a secondary process) */
	/* A non-NULL value, or the destructor does not run. */
	if (pthread_setspecific(dp_lcore_key, &dp_lcore_key) != 0) {
		rte_thread_unregister();
		return;
	}
	dp_tls_lcore = 1;
	dprpc_tls_lcore_id = rte_lcore_id(); /* ours until the destructor */
}

int
dprpc_eal_cleanup(void)
{
	char dir[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int rc;

	/* EAL counts its lcores at init: none means it was never set up (or
	 * was cleaned up), and rte_eal_cleanup() would tear down nothing. */
	if (rte_lcore_count() == 0)
		return -EALREADY;
	snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
	/* The interrupt thread's pending rebuilds of its epoll set (after a
	 * memif port's close) read sources whose handles are in the heap,
	 * which rte_eal_cleanup() unmaps: they run first (intr.c). */
	(void)dp_intr_settle();
	/* Release: pairs with the acquire load in dp_lcore_thread_exit(). */
	atomic_store_explicit(&dp_eal_down, true, memory_order_release);
	rc = rte_eal_cleanup();
	d = opendir(dir);
	if (d != NULL) {
		while ((e = readdir(d)) != NULL)
			if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
				(void)unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
		(void)rmdir(dir);
	}
	return rc < 0 ? rc : 0;
}

/*
 * The levels EAL starts with, below its defaults for the types that log
 * normal events in a clean run (docs/launch.md, "Quiet by default"); the
 * agent logs its ports' real failures itself.
 */
static char dp_eal_quiet_levels[][40] = {
	"--log-level=lib.eal:error",
	"--log-level=lib.telemetry:error",
	"--log-level=pmd.net.memif:critical",
};
#define DP_EAL_QUIET_N ((int)RTE_DIM(dp_eal_quiet_levels))

/* Whether @argv sets EAL's global log level (--log-level=LEVEL, with no
 * type): then the application asked for every type's messages up to
 * that level, and no default of ours stands in its way. */
static bool
dp_eal_global_level(int argc, char **argv)
{
	const char *v;

	for (int i = 1; i < argc; i++) {
		if (argv[i] == NULL)
			break;
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strncmp(argv[i], "--log-level=", 12) == 0)
			v = argv[i] + 12;
		else if (strcmp(argv[i], "--log-level") == 0 && i + 1 < argc)
			v = argv[++i];
		else
			continue;
		if (v != NULL && strchr(v, ':') == NULL && strchr(v, ',') == NULL)
			return true;
	}
	return false;
}

int
dprpc_eal_init(int argc, char **argv)
{
	char **v = argv;
	int n = 0, rc;

	if (argc < 1 || argv == NULL || argv[0] == NULL)
		return -EINVAL;
	if (rte_lcore_count() != 0)
		return 0; /* up (no lcore before init): rte_eal_init() would log it */
	/* The quiet levels first, as options: the application's come after
	 * and win, and options reach the PMDs' log types, which a shared DPDK
	 * registers only inside rte_eal_init(). */
	if (!dp_eal_global_level(argc, argv)) {
		v = malloc(((size_t)argc + DP_EAL_QUIET_N + 1) * sizeof(*v));
		if (v == NULL)
			return -ENOMEM;
		n = DP_EAL_QUIET_N;
		v[0] = argv[0];
		for (int i = 0; i < n; i++)
			v[1 + i] = dp_eal_quiet_levels[i];
		memcpy(v + 1 + n, argv + 1, (size_t)(argc - 1) * sizeof(*v));
		v[argc + n] = NULL;
	}
	rc = rte_eal_init(argc + n, v);
	if (v != argv) {
		/* What rte_eal_init() did to the arguments (getopt's order, the
		 * program name put before the first one it left), as it would
		 * have done to the caller's array; ours are first and stay. */
		memcpy(argv + 1, v + 1 + n, (size_t)(argc - 1) * sizeof(*v));
		free(v);
	}
	if (rc < 0)
		return rte_errno == EALREADY ? 0 : -rte_errno;
	return rc - n;
}

/* Most arguments and bytes of dprpc_eal_local_conf.args; the set's own
 * arguments take at most 16. */
#define DP_EAL_LOCAL_ARGS_MAX 48
#define DP_EAL_LOCAL_ARGS_LEN 1024
#define DP_EAL_LOCAL_TAG_MAX  32

void
dprpc_eal_local_conf_init(struct dprpc_eal_local_conf *conf)
{
	if (conf == NULL)
		return;
	memset(conf, 0, sizeof(*conf));
	conf->mem_mb = DPRPC_EAL_LOCAL_MEM_DEFAULT_MB;
	conf->lcores = 2;
}

/* "0,1,...": the CPUs this process may run on, for --lcores. */
static void
dp_cpu_set(char *out, size_t cap)
{
	cpu_set_t set;
	size_t off = 0;

	out[0] = '\0';
	if (sched_getaffinity(0, sizeof(set), &set) != 0) {
		snprintf(out, cap, "0");
		return;
	}
	for (int c = 0; c < CPU_SETSIZE && off + 8 < cap; c++)
		if (CPU_ISSET(c, &set))
			off += (size_t)snprintf(out + off, cap - off, "%s%d", off ? "," : "", c);
}

/* Whether argument @a is option @opt ("-m", "--lcores"): alone, with its
 * value attached (short options) or after '=' (long ones). */
static bool
dp_eal_opt_is(const char *a, const char *opt)
{
	size_t n = strlen(opt);

	if (strncmp(a, opt, n) != 0)
		return false;
	return a[n] == '\0' || (opt[1] != '-' && n == 2) || a[n] == '=';
}

static bool
dp_tag_ok(const char *tag)
{
	size_t n = strlen(tag);

	if (n == 0 || n > DP_EAL_LOCAL_TAG_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)tag[i]) && tag[i] != '_' && tag[i] != '.' &&
			tag[i] != '-')
			return false;
	return true;
}

int
dprpc_eal_init_local(const struct dprpc_eal_local_conf *conf)
{
	struct dprpc_eal_local_conf c;
	char extra[DP_EAL_LOCAL_ARGS_LEN], cpus[256], mem[16], prefix[64], lcores[600];
	char *argv[DP_EAL_LOCAL_ARGS_MAX + 20], *xargv[DP_EAL_LOCAL_ARGS_MAX], *save = NULL, *tok;
	/* EAL takes char **: writable copies of the fixed arguments. */
	char fixed[][40] = {"dprpc", "--no-pci", "--no-huge", "--huge-unlink=never", "--no-shconf",
		"--no-telemetry"},
	     m_opt[] = "-m", prefix_opt[] = "--file-prefix", lcores_opt[] = "--lcores";
	bool own_mem = true, own_prefix = true, own_lcores = true;
	int argc = 0, xargc = 0, rc;

	if (conf != NULL)
		c = *conf;
	else
		dprpc_eal_local_conf_init(&c);
	if ((c.tag != NULL && !dp_tag_ok(c.tag)) || c.lcores < 1 || c.lcores > 2 || c.mem_mb == 0)
		return -EINVAL;
	if (c.args != NULL) {
		if (strlen(c.args) >= sizeof(extra))
			return -EINVAL;
		memcpy(extra, c.args, strlen(c.args) + 1);
		for (tok = strtok_r(extra, " ", &save); tok != NULL;
			tok = strtok_r(NULL, " ", &save)) {
			if (xargc == DP_EAL_LOCAL_ARGS_MAX)
				return -EINVAL;
			xargv[xargc++] = tok;
			if (dp_eal_opt_is(tok, "-m") || dp_eal_opt_is(tok, "--socket-mem"))
				own_mem = false;
			else if (dp_eal_opt_is(tok, "--file-prefix"))
				own_prefix = false;
			else if (dp_eal_opt_is(tok, "-l") || dp_eal_opt_is(tok, "-c") ||
				 dp_eal_opt_is(tok, "--lcores"))
				own_lcores = false;
		}
	}
	/* Up already (no lcore before rte_eal_init()): rte_eal_init() would
	 * only log that it was called again. */
	if (rte_lcore_count() != 0)
		return 0;
	for (size_t i = 0; i < RTE_DIM(fixed); i++)
		argv[argc++] = fixed[i];
	if (own_mem) {
		snprintf(mem, sizeof(mem), "%u", c.mem_mb);
		argv[argc++] = m_opt;
		argv[argc++] = mem;
	}
	if (own_prefix) {
		snprintf(prefix, sizeof(prefix), "dprpc-%d%s%s", (int)getpid(),
			c.tag != NULL ? "-" : "", c.tag != NULL ? c.tag : "");
		argv[argc++] = prefix_opt;
		argv[argc++] = prefix;
	}
	if (own_lcores) {
		dp_cpu_set(cpus, sizeof(cpus));
		snprintf(lcores, sizeof(lcores), "0@(%s)%s%s%s", cpus, c.lcores == 1 ? "" : ",1@(",
			c.lcores == 1 ? "" : cpus, c.lcores == 1 ? "" : ")");
		argv[argc++] = lcores_opt;
		argv[argc++] = lcores;
	}
	for (int i = 0; i < xargc; i++)
		argv[argc++] = xargv[i];
	argv[argc] = NULL;
	rc = dprpc_eal_init(argc, argv);
	return rc < 0 ? rc : 0;
}
