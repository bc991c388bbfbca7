#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A world of three "hosts" on one L2 segment: three network namespaces
# whose veths are ports of a Linux bridge in a fourth namespace, each
# worker on a DPDK net_af_packet port bound to its veth (one port reaches
# every other worker: the world map has no link lines).
#
#   netns_bridge.sh BUILD_DIR SOURCE_DIR
#
# 1. Rendezvous and all-to-all: tests/world/world_worker in each host, all
#    started at once: each waits for the world, calls every worker (itself
#    included) by name, by rank and through its worker info with the
#    values checked, leaves the world (dprpc_world_leave()), and exits 0
#    only if no worker was declared down, nothing is in use and its EAL
#    runtime directory is gone.
# 2. Staggered: the same with the hosts started 0, 1.5 and 3 s apart, each
#    calling every worker before its rendezvous too (the late ones are
#    waited for, not declared down).
# 3. A host that never comes: the two others' rendezvous (2 s) times out
#    naming it.
# 4. A host joins: the three form their world, a fourth host (h3, a
#    namespace on the same bridge, not in their map) joins it through h1
#    (dprpc_world_join(); nothing is plugged: the bridge reaches it), and
#    all four call every worker of the world of four, values checked.
#
# Exit 77 (skip) when no namespace can be created (not root, no
# CAP_SYS_ADMIN).  Everything is cleaned up on any exit: namespaces (and
# with them the veths and the bridge), processes, files.
set -Eeuo pipefail

build=${1:?usage: netns_bridge.sh BUILD_DIR SOURCE_DIR}
src=${2:?usage: netns_bridge.sh BUILD_DIR SOURCE_DIR}
worker="$build/tests/world_worker"
# shellcheck source=tests/netns/netns.sh
. "$src/tests/netns/netns.sh"

t_start=$(date +%s.%N)
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
say() { echo "[$(since "$t_start") s] $*"; }
skip() { echo "SKIP: $*"; exit 77; }
fail() {
	echo "FAIL: $*" >&2
	local f
	for f in "${NETNS_TMP:-/nonexistent}"/*.log; do
		[ -f "$f" ] || continue
		echo "---- $(basename "$f")" >&2
		tail -n 30 "$f" >&2
	done
	exit 1
}

[ -x "$worker" ] || fail "$worker is not built"
netns_can_create || skip "cannot create a network namespace here (needs root or CAP_SYS_ADMIN)"

trap 'echo "FAIL: line $LINENO: \"$BASH_COMMAND\" returned $?" >&2' ERR
on_exit() {
	trap - ERR
	netns_cleanup
}
trap on_exit EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP

N=3
netns_bridge_setup $((N + 1)) # h3: the joiner of part 4
world=""
for ((i = 0; i < N; i++)); do
	world+="h$i $i ${NETNS_BR_MAC[i]} ${NETNS_BR_IP[i]} 7000; "
done
say "hosts ${NETNS_BR_NS[*]} on br0 in $NETNS_BR_SW; world: $world"

# start TAG I [WORKER OPTION...]: world_worker h<I> in host I, in the
# background; its pid in pids[I].
pids=()
start() {
	local tag=$1 i=$2 prefix
	shift 2
	prefix=$(netns_prefix "$tag-h$i")
	netns_spawn 90 "${NETNS_BR_NS[i]}" "$NETNS_TMP/$tag-h$i.log" env WORLD_PREFIX="$prefix" \
		"$worker" --lcores=0@0,1@1 --no-pci --no-huge -m 256 --huge-unlink=never --no-shconf --no-telemetry \
		--file-prefix "$prefix" --log-level=lib.eal:error \
		--vdev "net_af_packet0,iface=${NETNS_BR_IF[i]}" -- \
		--name "h$i" --world "$world" --port-id 0 "$@"
	pids[i]=$NETNS_PID
}

# finish TAG COUNT: wait for hosts 0..COUNT-1 (80 s at most), each must
# exit 0 having said "clean exit"; their runtime directories must be gone.
finish() {
	local tag=$1 count=$2 i rc
	for ((i = 0; i < count; i++)); do
		rc=0
		wait "${pids[i]}" || rc=$?
		sed "s/^/    /" "$NETNS_TMP/$tag-h$i.log" | grep -v "mp action" || true
		[ "$rc" = 0 ] || fail "$tag: h$i exited with $rc"
		grep -q "h$i: clean exit" "$NETNS_TMP/$tag-h$i.log" || fail "$tag: h$i did not exit cleanly"
		[ ! -d "/var/run/dpdk/$(netns_prefix "$tag-h$i")" ] || fail "$tag: h$i left its runtime directory"
	done
}

# ---- 1. all at once ----
t0=$(date +%s.%N)
for ((i = 0; i < N; i++)); do
	start together "$i"
done
finish together "$N"
for ((i = 0; i < N; i++)); do
	grep -q "h$i: 3 workers called 3 ways, values checked" "$NETNS_TMP/together-h$i.log" ||
		fail "together: h$i did not call every worker"
done
say "1. three hosts on a bridge: rendezvous and all-to-all, values checked, clean exits ($(since "$t0") s)"

# ---- 2. staggered ----
t0=$(date +%s.%N)
for ((i = 0; i < N; i++)); do
	[ "$i" = 0 ] || sleep 1.5
	start staggered "$i" --call-early
done
finish staggered "$N"
say "2. hosts started 1.5 s apart, calling before their rendezvous: one world ($(since "$t0") s)"

# ---- 3. a host that never comes ----
t0=$(date +%s.%N)
for ((i = 0; i < N - 1; i++)); do
	start missing "$i" --rendezvous-ms 2000 --expect-missing "h$((N - 1))"
done
finish missing $((N - 1))
say "3. h$((N - 1)) never came: the others' rendezvous timed out naming it ($(since "$t0") s)"
# ---- 4. a host joins the running world ----
t0=$(date +%s.%N)
for ((i = 0; i < N; i++)); do
	start joined "$i" --expect-joiners 1
done
sleep 1
start joined "$N" --world "h$N - ${NETNS_BR_MAC[N]} ${NETNS_BR_IP[N]} 7000" \
	--join "h1 ${NETNS_BR_MAC[1]} ${NETNS_BR_IP[1]} 7000"
finish joined $((N + 1))
for ((i = 0; i <= N; i++)); do
	grep -q "h$i: $((N + 1)) workers called 3 ways, values checked" "$NETNS_TMP/joined-h$i.log" ||
		fail "joined: h$i did not call every worker of the grown world"
done
grep -q "h$N: joined as rank $N" "$NETNS_TMP/joined-h$N.log" || fail "joined: h$N has not rank $N"
say "4. h$N joined the running world through h1: all-to-all of four, clean exits ($(since "$t0") s)"
say "all parts passed"
