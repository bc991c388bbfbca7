#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Throughput under loss on the kernel path (issue: reliable transport):
#
#   perf/loss-afpacket.sh BUILD_DIR [PCT] [REPEAT]
#
# Two network namespaces joined by a veth pair, dprpc-perf throughput
# (window 32, 1 s) with the server in one and the client in the other over
# net_af_packet.  Each repeat runs loss-free, then with xdp_drop PCT% (5 by
# default) on both veths, back to back; the report gives each pair's ratio
# and the median.  Needs root, iproute2 and clang -target bpf; cleans up
# its namespaces on any exit.
set -Eeuo pipefail

build=${1:?usage: loss-afpacket.sh BUILD_DIR [PCT] [REPEAT]}
pct=${2:-5}
repeat=${3:-5}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
perf="$build/perf/dprpc-perf"
# shellcheck source=tests/netns/netns.sh
. "$src/tests/netns/netns.sh"

[ -x "$perf" ] || { echo "no $perf: build first" >&2; exit 2; }
netns_can_create || { echo "cannot create network namespaces here" >&2; exit 2; }
trap netns_cleanup EXIT
trap 'exit 130' INT
netns_tmpdir
for p in 0 "$pct"; do
	netns_build_xdp_drop "$src/tests/netns/xdp_drop.c" "$p" "$NETNS_TMP/xdp_drop_$p.o"
done
netns_setup

rates0=() ratesp=() ratios=()
for i in $(seq "$repeat"); do
	netns_perf_through_loss "$perf" "$NETNS_TMP/xdp_drop_0.o" "r$i-0" 32 1
	r0=$(netns_json_field "$NETNS_CJSON" rate_rps)
	netns_perf_through_loss "$perf" "$NETNS_TMP/xdp_drop_$pct.o" "r$i-$pct" 32 1
	rp=$(netns_json_field "$NETNS_CJSON" rate_rps)
	failed=$(netns_json_field "$NETNS_CJSON" calls_failed)
	resent=$(netns_json_field "$NETNS_CJSON" retransmits)
	ratio=$(awk -v a="$rp" -v b="$r0" 'BEGIN { printf "%.3f", a / b }')
	echo "run $i: 0% $r0 calls/s, $pct% $rp calls/s ($resent resent, $failed failed): ratio $ratio"
	rates0+=("$r0") ratesp+=("$rp") ratios+=("$ratio")
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "af_packet throughput, window 32: 0% $(median "${rates0[@]}") calls/s," \
	"$pct% loss both ways $(median "${ratesp[@]}") calls/s;" \
	"ratio $(median "${ratios[@]}") (median of $repeat back-to-back pairs)"
