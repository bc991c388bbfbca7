/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * xdp_drop: drop DROP_PCT percent of the frames a veth end receives, at
 * random, in XDP (this kernel has no sch_netem; tc and nftables egress
 * hooks do not see frames sent through AF_PACKET, XDP on the receiving
 * veth does).
 *
 * The percentage is fixed when the object is compiled, one object per
 * percentage:
 *
 *   clang -O2 -g -target bpf -DDROP_PCT=20 -c xdp_drop.c -o xdp_drop_20.o
 *   ip -n NS link set dev IF xdp obj xdp_drop_20.o sec xdp
 *
 * (tests/netns/netns.sh: netns_build_xdp_drop, netns_xdp_attach.)
 */
#include <linux/bpf.h>

#include <bpf/bpf_helpers.h>

#ifndef DROP_PCT
#error "compile with -DDROP_PCT=N, N in 0..100"
#endif
#if DROP_PCT < 0 || DROP_PCT > 100
#error "DROP_PCT must be in 0..100"
#endif

SEC("xdp")
int
xdp_drop(struct xdp_md *ctx)
{
	(void)ctx;
	if (bpf_get_prandom_u32() % 100 < DROP_PCT)
		return XDP_DROP;
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
