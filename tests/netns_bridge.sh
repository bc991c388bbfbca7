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
#    (dprpc_world_join(); nothing is plugged: the bridge reaches it); its
#    own line and the member it names have no MAC, so it takes its port's
#    and finds h1's by ARP, and the members, whose map gives every MAC,
#    find its by ARP (docs/wire.md, "IPv4 as a host"); and
#    all four call every worker of the world of four, values checked.
# 5. A joiner killed and restarted: as 4 (h3 joining through h1), then
#    all four pass a world barrier; h3 is killed (SIGKILL) and started
#    again by the same command (EAL options and file prefix, map, --join
#    through h1; --restarted for --be-killed, as test_world_memif's
#    a_killed_joiner_restarted_takes_its_rank_back): it joins as rank 3
#    again (the others' world stays four), every survivor's calls to it
#    succeed once its new incarnation answers, a world barrier passes with
#    it, and all four shut down gracefully (dprpc_shutdown()), their
#    runtime directories gone (the killed one's too: its restart, under
#    the same prefix, removes it).  How soon the restarted h3 was back in
#    the world is printed, not checked.
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


[ -x "$worker" ] || fail "$worker is not built"
netns_can_create || skip "cannot create a network namespace here (needs root or CAP_SYS_ADMIN)"

netns_traps

N=3
netns_bridge_setup $((N + 1)) # h3: the joiner of parts 4 and 5
world=""
for ((i = 0; i < N; i++)); do
	world+="h$i $i ${NETNS_BR_MAC[i]} ${NETNS_BR_IP[i]} 7000; "
done
say "hosts ${NETNS_BR_NS[*]} on br0 in $NETNS_BR_SW; world: $world"

# start TAG I [WORKER OPTION...]: world_worker h<I> in host I, in the
# background; its pid in pids[I].
pids=()
start() {
	local tag=$1 i=$2
	shift 2
	netns_world_worker "${NETNS_BR_NS[i]}" "${NETNS_BR_IF[i]}" "$NETNS_TMP/$tag-h$i.log" \
		"$(netns_prefix "$tag-h$i")" "h$i" "$world" "$@"
	pids[i]=$NETNS_PID
}

# finish TAG COUNT [LAST]: wait for hosts 0..COUNT-1 (90 s at most), each
# must exit 0 having said LAST ("clean exit" unless given); their runtime
# directories must be gone.
finish() {
	local tag=$1 count=$2 last=${3:-clean exit} i
	for ((i = 0; i < count; i++)); do
		netns_world_finish "$tag: h$i" "${pids[i]}" "$NETNS_TMP/$tag-h$i.log" \
			"$(netns_prefix "$tag-h$i")" "h$i: $last"
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
start joined "$N" --world "h$N - ${NETNS_BR_IP[N]} 7000" --join "h1 ${NETNS_BR_IP[1]} 7000"
finish joined $((N + 1))
for ((i = 0; i <= N; i++)); do
	grep -q "h$i: $((N + 1)) workers called 3 ways, values checked" "$NETNS_TMP/joined-h$i.log" ||
		fail "joined: h$i did not call every worker of the grown world"
done
grep -q "h$N: joined as rank $N" "$NETNS_TMP/joined-h$N.log" || fail "joined: h$N has not rank $N"
say "4. h$N joined the running world through h1: all-to-all of four, clean exits ($(since "$t0") s)"

# ---- 5. a joiner killed and started again ----
# As tests/test_world_memif.c's a_killed_joiner_restarted_takes_its_rank_back:
# each worker leaves a mark in $marks once past the first world barrier;
# then h3 is killed and started again, and the mark "restarted" tells the
# survivors to call it until its new incarnation answers.
t0=$(date +%s.%N)
marks="$NETNS_TMP/rejoin-marks"
mkdir "$marks"
joiner_world="h$N - ${NETNS_BR_MAC[N]} ${NETNS_BR_IP[N]} 7000"
via_h1="h1 ${NETNS_BR_MAC[1]} ${NETNS_BR_IP[1]} 7000"
for ((i = 0; i < N; i++)); do
	start rejoin "$i" --expect-joiners 1 --restart-of "h$N" --mark-dir "$marks"
done
sleep 1
start rejoin "$N" --world "$joiner_world" --join "$via_h1" \
	--restart-of "h$N" --mark-dir "$marks" --be-killed
for _ in $(seq 1200); do
	n=0
	for ((i = 0; i <= N; i++)); do
		[ -e "$marks/h$i" ] && n=$((n + 1))
		kill -0 "${pids[i]}" 2>/dev/null || fail "rejoin: h$i ended before the first barrier"
	done
	[ "$n" = $((N + 1)) ] && break
	sleep 0.05
done
[ "$n" = $((N + 1)) ] || fail "rejoin: $n of $((N + 1)) workers passed the first barrier"
# The worker itself, not its timeout: world_worker is the only process in
# h3's namespace (ip netns exec and env exec it in place).
victim=$(ip netns pids "${NETNS_BR_NS[N]}")
if ! [[ $victim =~ ^[0-9]+$ ]] || [ "$(cat "/proc/$victim/comm")" != world_worker ]; then
	fail "rejoin: h$N's namespace holds \"$victim\", not one world_worker"
fi
kill -KILL "$victim"
rc=0
# (Its timeout dies of the same signal: no job notice for it here.)
wait "${pids[N]}" 2>/dev/null || rc=$?
[ "$rc" = 137 ] || fail "rejoin: h$N was not killed by SIGKILL (its timeout exited $rc)"
[ -z "$(ip netns pids "${NETNS_BR_NS[N]}")" ] || fail "rejoin: processes left in h$N's namespace"
mv "$NETNS_TMP/rejoin-h$N.log" "$NETNS_TMP/rejoin-h$N-killed.log"
sed "s/^/    /" "$NETNS_TMP/rejoin-h$N-killed.log" | grep -v "mp action" || true
grep -q "h$N: joined as rank $N" "$NETNS_TMP/rejoin-h$N-killed.log" ||
	fail "rejoin: h$N had not rank $N"
say "5. h$N killed (SIGKILL) past the first barrier ($(since "$t0") s); runtime directory left: $(
	[ -d "/var/run/dpdk/$(netns_prefix "rejoin-h$N")" ] && echo yes || echo no)"
# The same command again (same log name, same EAL file prefix).
t_again=$(date +%s.%N)
start rejoin "$N" --world "$joiner_world" --join "$via_h1" --restarted
: >"$marks/restarted"
# When the new h3 is back in the world (its join answered: every member
# was told before), as seen from here: its log says so at once.
back=""
for _ in $(seq 600); do
	if grep -q "h$N: world of $((N + 1)) formed" "$NETNS_TMP/rejoin-h$N.log"; then
		back=$(since "$t_again")
		break
	fi
	kill -0 "${pids[N]}" 2>/dev/null || break
	sleep 0.02
done
finish rejoin $((N + 1)) "shut down gracefully"
t_done=$(since "$t_again")
grep -q "h$N: joined as rank $N" "$NETNS_TMP/rejoin-h$N.log" ||
	fail "rejoin: the restarted h$N has not rank $N"
for ((i = 0; i < N; i++)); do
	grep -q "h$i: h$N restarted, answered, and passed a barrier" "$NETNS_TMP/rejoin-h$i.log" ||
		fail "rejoin: h$i did not call the restarted h$N and pass a barrier with it"
done
grep -q "h$N: $((N + 1)) workers called 3 ways, values checked" "$NETNS_TMP/rejoin-h$N.log" ||
	fail "rejoin: the restarted h$N did not call every worker"
create_ms=$(sed -n "s/^h$N: world of $((N + 1)) formed, \([0-9]*\) ms after its agent's create began$/\1/p" \
	"$NETNS_TMP/rejoin-h$N.log")
say "5. h$N restarted by the same command: rank $N again, called by every survivor," \
	"barrier passed, graceful shutdowns ($(since "$t0") s)"
# The survivors' calls to it succeeded before their second barrier, so
# before their shutdowns ended: t_done bounds them (from above).  Its
# create began about (back - create_ms) after its start (back is seen
# here up to 20 ms late).
bound="?"
[ -n "$back" ] && [ -n "$create_ms" ] &&
	bound=$(awk -v d="$t_done" -v b="$back" -v c="$create_ms" \
		'BEGIN { printf "%.2f", d - b + c / 1000 }')
say "   restarted h$N back in the world (joined) ${create_ms:-?} ms after its dprpc_agent_create() began," \
	"${back:-?} s after its process started; the survivors' calls to it succeeded, their barrier" \
	"passed and all four shut down within ${t_done} s of its start (about $bound s of its create)"
say "all parts passed"
