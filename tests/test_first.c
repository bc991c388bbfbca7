/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a first program meets: EAL set up for a machine without a NIC by
 * one call (dprpc_eal_init_local()).  Each test runs in a process of its
 * own (Criterion's), so each initialises EAL once.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
