#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A world across a router (issue 30): two IPv4 subnets joined by a Linux
# router in a namespace of its own (tests/netns/netns.sh,
# netns_routed_setup), alice 10.1.0.2 and carol 10.1.0.3 on a bridge in
# 10.1.0.0/24, bob 10.2.0.2 in 10.2.0.0/24, each worker on a DPDK
# net_af_packet port bound to its veth, whose kernel has no address.  The
# world map gives no MAC at all: every agent takes its port's, and finds
# its next hop's by ARP (the peer on its subnet, else the gateway its
# "subnet ... via" line names).
#
#   netns_routed.sh BUILD_DIR SOURCE_DIR
#
# 1. All three started at once (tests/world/world_worker): rendezvous,
#    all-to-all calls with values checked, an RRef on every other worker
#    fetched, checked and released, the owners' RRef counts back to where
#    they were (--rrefs), a world barrier and an all_gather of the ranks
#    (--gather), and a graceful shutdown (--shutdown); all exit 0.
# 2. The router's kernel found every worker by ARP (its neighbour table
#    holds each worker's veth MAC for its address once the calls crossed
#    it), and each agent answers the router's ping, 3 of 3, while the
#    workers serve (--linger-ms); each agent answered exactly those 3
#    echoes, and all three leave the world with no call failed and no
#    worker declared down.
# 3. A MAC that changes: alice calls bob (a world of two) one call at a
#    time for 6 s (--calls-for); 2 s in, bob's veth gets a new MAC (`ip
#    link set DEV address ...`: a veth takes it while up, as a NIC whose
#    driver allows it, so the link stays up).  Bob's agent reads its
#    port's MAC every 100 ms and announces a change by a gratuitous ARP:
#    the router's neighbour entry for bob must show the new MAC within 2 s,
#    and every call must succeed (none may fail, no worker be declared
#    down).  The number of calls and the longest one are printed for the
#    record, not judged.
#
# Exit 77 (skip) when no namespace can be created (not root, no
# CAP_SYS_ADMIN).  Everything is cleaned up on any exit: namespaces (and
# with them the veths and the bridge), processes, files, EAL runtime
# directories.
set -Eeuo pipefail

build=${1:?usage: netns_routed.sh BUILD_DIR SOURCE_DIR}
src=${2:?usage: netns_routed.sh BUILD_DIR SOURCE_DIR}
worker="$build/tests/world_worker"
# shellcheck source=tests/netns/netns.sh
. "$src/tests/netns/netns.sh"


[ -x "$worker" ] || fail "$worker is not built"
command -v ping >/dev/null || fail "no ping (scripts/setup-deps.sh installs iputils-ping)"
netns_can_create || skip "cannot create a network namespace here (needs root or CAP_SYS_ADMIN)"

netns_traps

netns_routed_setup
R=$NETNS_RT
names=(alice bob carol)
subnets="subnet 10.1.0.0/24 via 10.1.0.1; subnet 10.2.0.0/24 via 10.2.0.1"
world="$subnets"
for i in 0 1 2; do
	world+="; ${names[i]} $i ${NETNS_RT_IP[i]} 7000"
	say "${names[i]}: ${NETNS_RT_IP[i]} in ${NETNS_RT_NET[i]} via ${NETNS_RT_GW[i]}," \
		"${NETNS_RT_IF[i]} ${NETNS_RT_MAC[i]} in ${NETNS_RT_NS[i]}"
done
say "router $R: br0 10.1.0.1/24 (ports rp0, rp2), rp1 10.2.0.1/24, forwarding on; world: $world"

# start TAG I WORLD [WORKER OPTION...]: world_worker names[I] in host I,
# in the background; its pid in pids[I].
pids=()
start() {
	local tag=$1 i=$2 map=$3
	shift 3
	netns_world_worker "${NETNS_RT_NS[i]}" "${NETNS_RT_IF[i]}" "$NETNS_TMP/$tag-${names[i]}.log" \
		"$(netns_prefix "$tag-$i")" "${names[i]}" "$map" "$@"
	pids[i]=$NETNS_PID
}

# finish TAG LAST I...: wait for hosts I... (90 s at most), each must exit
# 0 having said LAST; their runtime directories must be gone.
finish() {
	local tag=$1 last=$2 i
	shift 2
	for i in "$@"; do
		netns_world_finish "$tag: ${names[i]}" "${pids[i]}" "$NETNS_TMP/$tag-${names[i]}.log" \
			"$(netns_prefix "$tag-$i")" "${names[i]}: $last"
	done
}

# has TAG I TEXT: the log of names[I] in TAG has a line TEXT (a regex).
has() {
	grep -q "^${names[$2]}: $3" "$NETNS_TMP/$1-${names[$2]}.log"
}

# arp_field TAG I FIELD: a counter of the ARP line names[I] printed.
arp_field() {
	sed -n "s/^${names[$2]}: ARP .*[ ,;]\([0-9][0-9]*\) $3.*/\1/p" "$NETNS_TMP/$1-${names[$2]}.log"
}

# ---- 1. rendezvous, calls, RRefs, a collective, graceful shutdown ----
t0=$(date +%s.%N)
for i in 0 1 2; do
	start routed "$i" "$world" --rrefs --gather --shutdown
done
finish routed "shut down gracefully" 0 1 2
for i in 0 1 2; do
	has routed "$i" "3 workers called 3 ways, values checked" ||
		fail "1. ${names[i]} did not call every worker"
	has routed "$i" "2 RRefs on the others, values checked; owned 2 more while held, back to 0" ||
		fail "1. ${names[i]} did not check its RRefs"
	has routed "$i" "all_gather of 3 ranks checked" || fail "1. ${names[i]} did not gather"
	[ "$(arp_field routed "$i" resolved)" -ge 1 ] ||
		fail "1. ${names[i]} resolved no next hop by ARP"
done
rdv=$(for i in 0 1 2; do
	sed -n "s/^${names[i]}: world of 3 formed, \([0-9]*\) ms.*/${names[i]} \1 ms/p" \
		"$NETNS_TMP/routed-${names[i]}.log"
done | paste -sd, -)
say "1. across the router, no MAC in the map: rendezvous ($rdv after create), all-to-all," \
	"2 RRefs per worker fetched, checked and released (owners' counts back to 0)," \
	"barrier and all_gather, graceful shutdowns ($(since "$t0") s)"
for i in 0 1 2; do
	say "   $(grep "^${names[i]}: ARP" "$NETNS_TMP/routed-${names[i]}.log")"
done

# ---- 2. the router's ARP and ping while the workers serve ----
t0=$(date +%s.%N)
for i in 0 1 2; do
	start linger "$i" "$world" --linger-ms 8000
done
for _ in $(seq 1200); do
	n=0
	for i in 0 1 2; do
		has linger "$i" "serving 8000 ms more" && n=$((n + 1))
		kill -0 "${pids[i]}" 2>/dev/null || fail "2. ${names[i]} ended before it served on"
	done
	[ "$n" = 3 ] && break
	sleep 0.05
done
[ "$n" = 3 ] || fail "2. $n of 3 workers serving after 60 s"
for i in 0 1 2; do
	mac=$(netns_neigh_mac "$R" "${NETNS_RT_IP[i]}")
	[ "$mac" = "${NETNS_RT_MAC[i]}" ] ||
		fail "2. the router holds '$mac' for ${names[i]} (${NETNS_RT_IP[i]}), not" \
			"${NETNS_RT_MAC[i]}: $(ip -n "$R" neigh show)"
done
say "2. the router's kernel found every worker by ARP:" \
	"$(ip -n "$R" neigh show | sed 's/ *$//' | paste -sd, -)"
for i in 0 1 2; do
	rc=0
	netns_run_bounded 20 "$R" ping -c 3 -i 0.2 -W 1 "${NETNS_RT_IP[i]}" \
		>"$NETNS_TMP/ping-${names[i]}.txt" 2>&1 || rc=$?
	sed 's/^/    /' "$NETNS_TMP/ping-${names[i]}.txt"
	[ "$rc" = 0 ] || fail "2. ping of ${names[i]} from the router exited with $rc"
	grep -q "3 packets transmitted, 3 received, 0% packet loss" "$NETNS_TMP/ping-${names[i]}.txt" ||
		fail "2. ping of ${names[i]}: not 3 answers of 3"
	kill -0 "${pids[i]}" 2>/dev/null || fail "2. ${names[i]} ended before its ping was done"
done
finish linger "clean exit" 0 1 2
for i in 0 1 2; do
	[ "$(arp_field linger "$i" "echoes answered")" = 3 ] ||
		fail "2. ${names[i]} answered $(arp_field linger "$i" "echoes answered") echoes, not 3"
done
say "2. the router pinged each agent: 3 of 3 answers each, each agent counted 3 echoes," \
	"clean leaves, no call failed ($(since "$t0") s)"

# ---- 3. bob's MAC changes under alice's calls ----
t0=$(date +%s.%N)
world2="$subnets; alice 0 ${NETNS_RT_IP[0]} 7000; bob 1 ${NETNS_RT_IP[1]} 7000"
new_mac=02:00:00:00:03:f2
start mac 0 "$world2" --calls-for 6
start mac 1 "$world2"
for _ in $(seq 1200); do
	has mac 0 "calling the others" && break
	kill -0 "${pids[0]}" 2>/dev/null || fail "3. alice ended before her calls"
	sleep 0.05
done
has mac 0 "calling the others" || fail "3. alice not calling after 60 s"
sleep 2
old_mac=$(netns_mac "${NETNS_RT_NS[1]}" "${NETNS_RT_IF[1]}")
[ "$(netns_neigh_mac "$R" "${NETNS_RT_IP[1]}")" = "$old_mac" ] ||
	fail "3. the router does not hold bob's MAC $old_mac before the change"
t_change=$(date +%s.%N)
ip -n "${NETNS_RT_NS[1]}" link set "${NETNS_RT_IF[1]}" address "$new_mac"
learned=""
for _ in $(seq 200); do
	if [ "$(netns_neigh_mac "$R" "${NETNS_RT_IP[1]}")" = "$new_mac" ]; then
		learned=$(since "$t_change")
		break
	fi
	sleep 0.01
done
[ -n "$learned" ] || fail "3. the router still holds $(netns_neigh_mac "$R" "${NETNS_RT_IP[1]}")" \
	"for bob 2 s after his MAC became $new_mac: not announced"
ip -n "${NETNS_RT_NS[1]}" link show "${NETNS_RT_IF[1]}" | grep -q LOWER_UP ||
	fail "3. bob's veth went down with its MAC change"
say "3. bob's veth $old_mac -> $new_mac at 2 s of alice's calls; the router held the new MAC" \
	"$learned s later"
finish mac "clean exit" 0 1
calls=$(sed -n 's/^alice: \([0-9]*\) calls in .*, 0 failed, the longest \(.*\)$/\1 calls, the longest \2/p' \
	"$NETNS_TMP/mac-alice.log")
[ -n "$calls" ] || fail "3. alice did not report her calls"
say "3. alice -> bob across the router through the change: $calls, none failed," \
	"bob declared down by no one ($(since "$t0") s)"
say "   $(grep "^bob: ARP" "$NETNS_TMP/mac-bob.log")"
say "all parts passed"
