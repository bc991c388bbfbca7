#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A world across a router against one on a single segment (issue 30):
#
#   perf/routed.sh BUILD_DIR [PAIRS]
#
# Two topologies of network namespaces, dprpc-perf's server and client on
# net_af_packet ports bound to veths (the kernels of their namespaces have
# no address: DPDK owns the veths), both with a world map without MACs
# (dprpc-perf --world), so every next hop is found by ARP:
#
#   segment  server 10.0.0.1 and client 10.0.0.2 on one veth pair, one /24
#            (tests/netns/netns.sh's netns_setup);
#   routed   server 10.1.0.1/24 and client 10.2.0.1/24, each on a veth to a
#            router namespace (10.1.0.254, 10.2.0.254, ip_forward=1) whose
#            kernel forwards between them; the map's "subnet ... via" lines
#            give the gateways.
#
# Each of PAIRS (default 11) pairs runs both topologies back to back, in
# turn first (drift cancels), and in each: latency (1 s) and throughput
# --window 32 (1 s), a fresh server and client per run (server on CPU 1,
# client on CPU 0, started together) and the router's neighbour cache
# flushed before it, so every run forms a cold world.  Formation is
# dprpc-perf's first_call_ms of the latency run: from the client's start
# to its first call that succeeded.  The report gives each pair's
# routed/segment ratios, then per metric the medians, the ratio of the
# medians and the median of the per-pair ratios, and /proc/loadavg before
# and after (ROUTED_VERBOSE=1: each run's JSON too).  A run whose client
# fails, or in which a call fails, ends the script with both logs.  Needs
# root and iproute2; every process is bounded in time, and namespaces,
# processes, files and EAL run directories are removed on any exit.
set -Eeuo pipefail

build=${1:?usage: routed.sh BUILD_DIR [PAIRS]}
pairs=${2:-11}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
perf="$build/perf/dprpc-perf"
# shellcheck source=tests/netns/netns.sh
. "$src/tests/netns/netns.sh"

# The routed topology's namespaces (netns.sh's two are the segment's).
RT_S="dprpc-$$-rs"
RT_R="dprpc-$$-rr"
RT_C="dprpc-$$-rc"
RT_IF_S="drs$$"
RT_IF_C="drc$$"

# rt_setup: server and client namespaces, each with one veth to the router
# namespace; only the router's ends have addresses.
rt_setup() {
	local ns

	for ns in "$RT_S" "$RT_R" "$RT_C"; do
		netns_add "$ns"
	done
	ip link add "$RT_IF_S" netns "$RT_S" address 02:00:00:00:01:01 mtu 1500 type veth \
		peer name r1 netns "$RT_R" address 02:00:00:00:01:fe mtu 1500
	ip link add "$RT_IF_C" netns "$RT_C" address 02:00:00:00:02:01 mtu 1500 type veth \
		peer name r2 netns "$RT_R" address 02:00:00:00:02:fe mtu 1500
	netns_addr "$RT_R" r1 10.1.0.254/24
	netns_addr "$RT_R" r2 10.2.0.254/24
	ip netns exec "$RT_R" sysctl -qw net.ipv4.ip_forward=1
	ip -n "$RT_R" link set r1 up
	ip -n "$RT_R" link set r2 up
	ip -n "$RT_S" link set "$RT_IF_S" up
	ip -n "$RT_C" link set "$RT_IF_C" up
	netns_links_up "$RT_S/$RT_IF_S" "$RT_C/$RT_IF_C" && return 0
	echo "routed.sh: the routed veths did not come up" >&2
	return 1
}

# run_one TOPO MODE TAG [ARG...]: a fresh server and client of MODE in
# TOPO (seg or rt), the client given ARGs; its JSON line in CJSON.
CJSON=""
run_one() {
	local topo=$1 mode=$2 tag=$3 sns cns sif cif srv rc=0
	shift 3

	if [ "$topo" = seg ]; then
		sns=$NETNS_A cns=$NETNS_B sif=$NETNS_IF_A cif=$NETNS_IF_B
	else
		sns=$RT_S cns=$RT_C sif=$RT_IF_S cif=$RT_IF_C
		ip -n "$RT_R" neigh flush all
	fi
	netns_eal 1 "$tag-server" "$sif"
	netns_spawn 30 "$sns" "$NETNS_TMP/$tag-server.log" "$perf" "${EAL[@]}" -- \
		"$mode" --role server --world "@$NETNS_TMP/$topo.map" --inline-wait-us 4294967295
	srv=$NETNS_PID
	netns_eal 0 "$tag-client" "$cif"
	netns_run_bounded 30 "$cns" "$perf" "${EAL[@]}" -- "$mode" --role client \
		--world "@$NETNS_TMP/$topo.map" --duration 1 --json "$@" \
		>"$NETNS_TMP/$tag-client.log" 2>&1 || rc=$?
	netns_stop "$srv" 5 || { echo "$tag: server exited with $?" >&2; rc=1; }
	CJSON=$(grep '^{' "$NETNS_TMP/$tag-client.log" || true)
	if [ "$rc" = 0 ] && [ -n "$CJSON" ] &&
		[ "$(netns_json_field "$CJSON" calls_failed)" = 0 ] &&
		[ "$(netns_json_field "$CJSON" corrupt)" = 0 ]; then
		[ "${ROUTED_VERBOSE:-0}" = 0 ] || echo "$tag: $CJSON"
		return 0
	fi
	echo "$tag: the client exited with $rc, or a call failed or came back corrupt;" \
		"its log and the server's:" >&2
	tail -n 20 "$NETNS_TMP/$tag-client.log" "$NETNS_TMP/$tag-server.log" >&2
	return 1
}

# measure TOPO PAIR: formation (ms), p50 (us), rate (calls/s) into
# FORM_TOPO[PAIR], P50_TOPO[PAIR], RATE_TOPO[PAIR].
declare -A FORM P50 RATE
measure() {
	local topo=$1 i=$2

	run_one "$topo" latency "p$i-$topo-lat"
	FORM[$topo,$i]=$(netns_json_field "$CJSON" first_call_ms)
	P50[$topo,$i]=$(netns_json_field "$CJSON" rtt_p50_us)
	run_one "$topo" throughput "p$i-$topo-tput" --window 32
	RATE[$topo,$i]=$(netns_json_field "$CJSON" rate_rps)
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

[ -x "$perf" ] || { echo "no $perf: build first" >&2; exit 2; }
[[ $pairs =~ ^[1-9][0-9]*$ ]] || { echo "PAIRS must be a positive number" >&2; exit 2; }
netns_can_create || { echo "cannot create network namespaces here" >&2; exit 2; }
trap netns_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
load_before=$(cat /proc/loadavg)
netns_tmpdir
netns_setup
rt_setup
printf '%s\n' "server 0 $NETNS_IP_A 7000" "client 1 $NETNS_IP_B 7000" \
	"subnet 10.0.0.0/24" >"$NETNS_TMP/seg.map"
printf '%s\n' "server 0 10.1.0.1 7000" "client 1 10.2.0.1 7000" \
	"subnet 10.1.0.0/24 via 10.1.0.254" "subnet 10.2.0.0/24 via 10.2.0.254" \
	>"$NETNS_TMP/rt.map"

echo "load before: $load_before"
rf=() rp=() rr=()
for i in $(seq "$pairs"); do
	if [ $((i % 2)) = 1 ]; then
		measure seg "$i"
		measure rt "$i"
	else
		measure rt "$i"
		measure seg "$i"
	fi
	rf+=("$(ratio "${FORM[rt,$i]}" "${FORM[seg,$i]}")")
	rp+=("$(ratio "${P50[rt,$i]}" "${P50[seg,$i]}")")
	rr+=("$(ratio "${RATE[rt,$i]}" "${RATE[seg,$i]}")")
	echo "pair $i ($([ $((i % 2)) = 1 ] && echo segment || echo routed) first):" \
		"formation ${FORM[seg,$i]} / ${FORM[rt,$i]} ms," \
		"p50 ${P50[seg,$i]} / ${P50[rt,$i]} us," \
		"rate ${RATE[seg,$i]} / ${RATE[rt,$i]} calls/s (segment / routed);" \
		"routed/segment ${rf[-1]} ${rp[-1]} ${rr[-1]}"
done

echo
echo "medians of $pairs pairs (af_packet both ways, 32 B):"
printf '%-22s %12s %12s %18s %18s\n' metric segment routed "ratio of medians" "median of ratios"
for m in FORM P50 RATE; do
	declare -n tab=$m
	seg=() rt=()
	for i in $(seq "$pairs"); do
		seg+=("${tab[seg,$i]}")
		rt+=("${tab[rt,$i]}")
	done
	ms=$(median "${seg[@]}") mr=$(median "${rt[@]}")
	case $m in
	FORM) name="formation (ms)" mor=$(median "${rf[@]}") ;;
	P50) name="latency p50 (us)" mor=$(median "${rp[@]}") ;;
	RATE) name="rate, window 32 (/s)" mor=$(median "${rr[@]}") ;;
	esac
	printf '%-22s %12s %12s %18s %18s\n' "$name" "$ms" "$mr" "$(ratio "$mr" "$ms")" "$mor"
	unset -n tab
done
echo "load before: $load_before"
echo "load after:  $(cat /proc/loadavg)"
