/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every libFuzzer target that runs an agent sets up once per
 * process: EAL with a private prefix (taken down at exit, runtime
 * directory included: libFuzzer ends with exit()), an mbuf pool, and a
 * net_ring port that receives what the target puts in *to and sends into
 * *from.  Aborts on failure: a fuzz process has no one to report to.
 */
#ifndef FUZZ_ENV_H
#define FUZZ_ENV_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_eth_ring.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <dprpc/dprpc.h>

static void
fuzz_env_cleanup(void)
{
	(void)dprpc_eal_cleanup();
}

/* @name: the target's name (argv[0] and the file prefix).  Returns the
 * port. */
static inline int
fuzz_env_up(const char *name, struct rte_mempool **mp, struct rte_ring **to, struct rte_ring **from)
{
	/* EAL takes char **: writable copies of the fixed arguments. */
	char fixed[][24] = {"fuzz", "--no-pci", "--no-huge", "-m", "256", "--huge-unlink=never",
		"--no-shconf", "--no-telemetry", "--lcores=0", "--log-level=*:crit"};
	char prog[32], prefix[64];
	char *eal[RTE_DIM(fixed) + 2];
	unsigned int i, n = 0;
	int port;

	snprintf(prog, sizeof(prog), "%s", name);
	snprintf(prefix, sizeof(prefix), "--file-prefix=%s_%d", name, (int)getpid());
	eal[n++] = prog;
	for (i = 1; i < RTE_DIM(fixed); i++)
		eal[n++] = fixed[i];
	eal[n++] = prefix;
	eal[n] = NULL;
	if (dprpc_eal_init((int)n, eal) < 0)
		abort();
	atexit(fuzz_env_cleanup);
	*mp = rte_pktmbuf_pool_create("fuzz_mp", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	*to = rte_ring_create("fuzz_to", 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
	*from = rte_ring_create("fuzz_from", 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (*mp == NULL || *to == NULL || *from == NULL)
		abort();
	port = rte_eth_from_rings("fuzz_port", to, 1, from, 1, 0);
	if (port < 0)
		abort();
	return port;
}

#endif /* FUZZ_ENV_H */
