# shellcheck shell=bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Two "hosts" on one machine for tests: two network namespaces joined by a
# veth pair, optional XDP programs on the veth ends, and a cleanup that
# undoes all of it.  Source it from a bash test (set -euo pipefail is fine):
#
#   . tests/netns/netns.sh                # also say, skip, fail, since,
#                                        # netns_traps (below)
#   netns_can_create || exit 77          # not root, no CAP_SYS_ADMIN, ...
#   trap netns_cleanup EXIT
#   trap 'exit 143' TERM; trap 'exit 130' INT
#   netns_setup                          # NETNS_KERNEL_IPS=1: give the
#                                        # kernel interfaces their IPs too
#   netns_exec "$NETNS_A" some-command   # runs inside namespace A
#   netns_run_bounded 20 "$NETNS_B" cmd  # foreground, killed after 20 s,
#                                        # interruptible by the traps
#   netns_spawn 30 "$NETNS_A" log cmd ...  # background, tracked: $NETNS_PID
#   netns_xdp_attach "$NETNS_A" "$NETNS_IF_A" drop.o
#   netns_xdp_detach "$NETNS_A" "$NETNS_IF_A"
#   netns_bridge_setup 3                 # or: three hosts on a bridge
#   netns_bridge_hub                     # ... that floods every frame
#   netns_routed_setup                   # or: three hosts in two subnets
#                                        # joined by a router
#
# After netns_setup:
#   NETNS_A, NETNS_B         namespace names (dprpc-<pid>-a, dprpc-<pid>-b)
#   NETNS_IF_A, NETNS_IF_B   the veth ends, one in each namespace, up, MTU 1500
#   NETNS_MAC_A, NETNS_MAC_B their MACs (02:00:00:00:00:01 and :02 unless
#                            NETNS_MAC_A/NETNS_MAC_B are set before setup)
#   NETNS_IP_A, NETNS_IP_B   10.0.0.1 and 10.0.0.2 (unless set before): the
#                            addresses to put in a dprpc world map.  They are
#                            given to the kernel only if NETNS_KERNEL_IPS=1.
#   NETNS_TMP                a private directory (also netns_tmpdir), removed
#                            by netns_cleanup
#
# By default the kernel in the namespaces has no address at all (IPv4
# none, IPv6 disabled).  DPDK's af_packet PMD gets a copy of every frame
# the veth receives, so dprpc needs no kernel address; the kernel's own
# stack sees the same frames, and with no address it drops them quietly:
# it neither answers dprpc's UDP frames (no ICMP port unreachable) nor
# sends router solicitations, DAD or MLD frames of its own.  The only
# frames on the wire are the test's.
#
# Safety: every link is created directly inside its namespace (`ip link
# add ... netns NS`), so nothing is ever created, renamed or moved in the
# default namespace, and its interfaces and routes are never touched.
# netns_cleanup deletes only namespaces this shell created and kills only
# processes inside them or started through netns_spawn/netns_run_bounded.

# A test's reporting: say (a line with the seconds since the test began),
# skip (exit 77), fail (the reason, then the tail of every log in NETNS_TMP,
# exit 1); since T, the seconds since T (date +%s.%N).
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
		tail -n 40 "$f" >&2
	done
	exit 1
}

# A test's traps: a failing command says which and where (ERR), any exit
# cleans up (netns_cleanup), and TERM, INT and HUP exit with their status.
netns_traps() {
	trap 'echo "FAIL: line $LINENO: \"$BASH_COMMAND\" returned $?" >&2' ERR
	trap 'trap - ERR; netns_cleanup' EXIT
	trap 'exit 143' TERM
	trap 'exit 130' INT
	trap 'exit 129' HUP
}

# Set here, used by the sourcing test.
# shellcheck disable=SC2034
NETNS_A=""
NETNS_B=""
NETNS_IF_A=""
NETNS_IF_B=""
NETNS_TMP=""
NETNS_XDP_MODE=""
# Namespaces created by this shell, and background pids to kill on cleanup.
_netns_created=()
_netns_pids=()

_netns_log() {
	echo "netns: $*" >&2
}

# True when this process may create (and delete) a network namespace.
netns_can_create() {
	local probe="dprpc-$$-probe"

	command -v ip >/dev/null 2>&1 || { _netns_log "no 'ip' command (iproute2)"; return 1; }
	ip netns add "$probe" >/dev/null 2>&1 || return 1
	ip netns del "$probe" >/dev/null 2>&1 || true
	return 0
}

# netns_tmpdir: create NETNS_TMP (once); netns_cleanup removes it.
netns_tmpdir() {
	if [ -z "$NETNS_TMP" ]; then
		NETNS_TMP=$(mktemp -d "${TMPDIR:-/tmp}/dprpc-netns-$$.XXXXXX")
	fi
}

# netns_add NS: namespace NS, deleted by netns_cleanup, its loopback up and
# no IPv6 on links created in it from now on (no RS, DAD or MLD frames).
netns_add() {
	ip netns add "$1"
	_netns_created+=("$1")
	ip -n "$1" link set lo up
	# /proc/sys/net shows the namespace of the process reading it.
	echo 1 | ip netns exec "$1" tee /proc/sys/net/ipv6/conf/all/disable_ipv6 \
		/proc/sys/net/ipv6/conf/default/disable_ipv6 >/dev/null 2>&1 ||
		_netns_log "cannot disable IPv6 in $1: expect its frames on its links"
}

# netns_links_up NS/IF...: until every link IF of namespace NS reports
# carrier (2 s at most): 0, or 1 if one does not.
netns_links_up() {
	local _ l ok
	for _ in $(seq 100); do
		ok=1
		for l in "$@"; do
			ip -n "${l%%/*}" link show "${l#*/}" | grep -q LOWER_UP || ok=0
		done
		[ "$ok" = 1 ] && return 0
		sleep 0.02
	done
	return 1
}

# netns_setup: the two namespaces and the veth pair.
netns_setup() {
	NETNS_A="dprpc-$$-a"
	NETNS_B="dprpc-$$-b"
	# Names are per namespace, so they cannot clash with the host's; the
	# pid suffix only makes them easy to attribute (15 characters max).
	NETNS_IF_A="dpa$$"
	NETNS_IF_B="dpb$$"
	NETNS_MAC_A=${NETNS_MAC_A:-02:00:00:00:00:01}
	NETNS_MAC_B=${NETNS_MAC_B:-02:00:00:00:00:02}
	NETNS_IP_A=${NETNS_IP_A:-10.0.0.1}
	NETNS_IP_B=${NETNS_IP_B:-10.0.0.2}
	netns_tmpdir

	netns_add "$NETNS_A"
	netns_add "$NETNS_B"
	# Both ends are created directly in their namespaces.
	ip link add "$NETNS_IF_A" netns "$NETNS_A" address "$NETNS_MAC_A" mtu 1500 type veth \
		peer name "$NETNS_IF_B" netns "$NETNS_B" address "$NETNS_MAC_B" mtu 1500
	if [ "${NETNS_KERNEL_IPS:-0}" = 1 ]; then
		netns_addr "$NETNS_A" "$NETNS_IF_A" "$NETNS_IP_A/24"
		netns_addr "$NETNS_B" "$NETNS_IF_B" "$NETNS_IP_B/24"
	fi
	ip -n "$NETNS_A" link set "$NETNS_IF_A" up
	ip -n "$NETNS_B" link set "$NETNS_IF_B" up
	# Both ends report carrier once both are up.
	netns_links_up "$NETNS_A/$NETNS_IF_A" "$NETNS_B/$NETNS_IF_B" && return 0
	_netns_log "veth $NETNS_IF_A/$NETNS_IF_B did not come up"
	return 1
}

# netns_bridge_setup N: N "hosts" on one L2 segment: namespaces
# dprpc-<pid>-h0..h<N-1>, each with a veth end (NETNS_BR_IF[i], MAC
# 02:00:00:00:02:<i+1>, IP 10.0.2.<i+1> in NETNS_BR_MAC[i], NETNS_BR_IP[i])
# whose peer is a port of the bridge br0 in a namespace of its own,
# dprpc-<pid>-sw (NETNS_BR_SW).  Host namespaces in NETNS_BR_NS[i].  No
# kernel addresses, no IPv6 (as netns_setup); no STP, no forwarding delay.
NETNS_BR_NS=()
NETNS_BR_IF=()
NETNS_BR_MAC=()
NETNS_BR_IP=()
NETNS_BR_SW=""
netns_bridge_setup() {
	local n=$1 i ns links
	NETNS_BR_SW="dprpc-$$-sw"
	netns_tmpdir
	for ns in "$NETNS_BR_SW" $(for ((i = 0; i < n; i++)); do echo "dprpc-$$-h$i"; done); do
		netns_add "$ns"
	done
	ip -n "$NETNS_BR_SW" link add br0 type bridge stp_state 0 forward_delay 0
	for ((i = 0; i < n; i++)); do
		NETNS_BR_NS[i]="dprpc-$$-h$i"
		NETNS_BR_IF[i]="dph$i$$"
		NETNS_BR_MAC[i]=$(printf '02:00:00:00:02:%02x' $((i + 1)))
		NETNS_BR_IP[i]="10.0.2.$((i + 1))"
		# Both ends created in their namespaces: nothing in the default one.
		ip link add "${NETNS_BR_IF[i]}" netns "${NETNS_BR_NS[i]}" address "${NETNS_BR_MAC[i]}" \
			mtu 1500 type veth peer name "sw$i" netns "$NETNS_BR_SW" mtu 1500
		ip -n "$NETNS_BR_SW" link set "sw$i" master br0
		ip -n "$NETNS_BR_SW" link set "sw$i" up
		ip -n "${NETNS_BR_NS[i]}" link set "${NETNS_BR_IF[i]}" up
	done
	ip -n "$NETNS_BR_SW" link set br0 up
	links=()
	for ((i = 0; i < n; i++)); do
		links+=("${NETNS_BR_NS[i]}/${NETNS_BR_IF[i]}")
	done
	netns_links_up "${links[@]}" && return 0
	_netns_log "the bridge's veths did not come up"
	return 1
}

# netns_bridge_hub: after netns_bridge_setup, make br0 a hub: no port
# learns a MAC (and what was learned is flushed), so every frame is
# flooded to every other port, as on a shared segment or a switch's
# mirror port: each host sees its neighbours' unicast frames (the
# attacker of tests/netns_spoof.sh sniffs them so).  A frame whose
# Ethernet source is another host's then moves nothing either.
netns_bridge_hub() {
	local i
	for ((i = 0; i < ${#NETNS_BR_NS[@]}; i++)); do
		ip -n "$NETNS_BR_SW" link set "sw$i" type bridge_slave learning off flood on
		ip -n "$NETNS_BR_SW" link set "sw$i" type bridge_slave fdb_flush
	done
}

# netns_routed_setup: three "hosts" in two IPv4 subnets joined by a
# router, a namespace of its own, dprpc-<pid>-rt (NETNS_RT) with IPv4
# forwarding on: 10.1.0.0/24, the router 10.1.0.1 on the bridge br0 whose
# ports are the peers of hosts 0 and 2's veths, and 10.2.0.0/24, the
# router 10.2.0.1 on the peer of host 1's veth.  Host i: namespace
# dprpc-<pid>-rh<i> (NETNS_RT_NS[i]), its veth end NETNS_RT_IF[i] (MAC
# 02:00:00:00:03:<i+1>, NETNS_RT_MAC[i]) for the address NETNS_RT_IP[i]
# (10.1.0.2, 10.2.0.2, 10.1.0.3) of subnet NETNS_RT_NET[i] through gateway
# NETNS_RT_GW[i]; the router's interface towards it NETNS_RT_RIF[i] (br0
# for hosts 0 and 2).  The hosts' kernels have no address (a NIC that
# DPDK owns), the router's have only theirs; no IPv6 anywhere, no STP, no
# forwarding delay.
NETNS_RT=""
NETNS_RT_NS=()
NETNS_RT_IF=()
NETNS_RT_MAC=()
NETNS_RT_IP=()
NETNS_RT_NET=()
NETNS_RT_GW=()
NETNS_RT_RIF=()
netns_routed_setup() {
	local i ns
	NETNS_RT="dprpc-$$-rt"
	NETNS_RT_IP=(10.1.0.2 10.2.0.2 10.1.0.3)
	NETNS_RT_NET=(10.1.0.0/24 10.2.0.0/24 10.1.0.0/24)
	NETNS_RT_GW=(10.1.0.1 10.2.0.1 10.1.0.1)
	NETNS_RT_RIF=(br0 rp1 br0)
	netns_tmpdir
	for ns in "$NETNS_RT" dprpc-$$-rh0 dprpc-$$-rh1 dprpc-$$-rh2; do
		netns_add "$ns"
	done
	echo 1 | ip netns exec "$NETNS_RT" tee /proc/sys/net/ipv4/ip_forward >/dev/null
	ip -n "$NETNS_RT" link add br0 type bridge stp_state 0 forward_delay 0
	for i in 0 1 2; do
		NETNS_RT_NS[i]="dprpc-$$-rh$i"
		NETNS_RT_IF[i]="dpr$i$$"
		NETNS_RT_MAC[i]=$(printf '02:00:00:00:03:%02x' $((i + 1)))
		# Both ends created in their namespaces: nothing in the default one.
		ip link add "${NETNS_RT_IF[i]}" netns "${NETNS_RT_NS[i]}" address "${NETNS_RT_MAC[i]}" \
			mtu 1500 type veth peer name "rp$i" netns "$NETNS_RT" mtu 1500
		[ "${NETNS_RT_RIF[i]}" = br0 ] && ip -n "$NETNS_RT" link set "rp$i" master br0
		ip -n "$NETNS_RT" link set "rp$i" up
		ip -n "${NETNS_RT_NS[i]}" link set "${NETNS_RT_IF[i]}" up
	done
	netns_addr "$NETNS_RT" br0 10.1.0.1/24
	netns_addr "$NETNS_RT" rp1 10.2.0.1/24
	ip -n "$NETNS_RT" link set br0 up
	netns_links_up "${NETNS_RT_NS[0]}/${NETNS_RT_IF[0]}" "${NETNS_RT_NS[1]}/${NETNS_RT_IF[1]}" \
		"${NETNS_RT_NS[2]}/${NETNS_RT_IF[2]}" "$NETNS_RT/br0" && return 0
	_netns_log "the router's links did not come up"
	return 1
}

# netns_neigh_mac NS IP: the MAC NS's kernel holds for IP (empty if none).
netns_neigh_mac() {
	ip -n "$1" neigh show "$2" | sed -n 's|.* lladdr \([0-9a-f:]*\).*|\1|p' | head -n 1
}

# netns_addr NS IF CIDR: give the kernel interface an IPv4 address.
netns_addr() {
	ip -n "$1" addr add "$3" dev "$2"
}

# netns_mac NS IF: the interface's MAC as the kernel reports it.
netns_mac() {
	ip -n "$1" -o link show dev "$2" | sed -n 's|.*link/ether \([0-9a-f:]*\) .*|\1|p'
}

# netns_stat NS IF rx|tx: the interface's packet counter (a number, or
# a non-zero return).  `ip netns exec` mounts the namespace's own sysfs.
netns_stat() {
	local v
	v=$(ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3_packets") || return 1
	[[ $v =~ ^[0-9]+$ ]] || return 1
	echo "$v"
}

# netns_icmp_out NS: ICMP messages the kernel in NS has sent (OutMsgs).
netns_icmp_out() {
	ip netns exec "$1" cat /proc/net/snmp | awk '$1 == "Icmp:" {
		if (!n) { for (i = 2; i <= NF; i++) if ($i == "OutMsgs") col = i; n = 1 }
		else { print $col; exit }
	}'
}

# netns_packet_sockets NS: how many AF_PACKET sockets are open in NS
# (a DPDK af_packet port opens and binds its socket during EAL init).
netns_packet_sockets() {
	ip netns exec "$1" cat /proc/net/packet | awk 'NR > 1' | wc -l
}

# netns_wait_flag NS IF FLAG SECS: wait until IF shows FLAG (e.g. PROMISC,
# which a dprpc agent sets on its af_packet port once the port started).
netns_wait_flag() {
	local _
	for _ in $(seq $(($4 * 20))); do
		ip -n "$1" link show dev "$2" | grep -q "[<,]$3[,>]" && return 0
		sleep 0.05
	done
	return 1
}

# netns_exec NS CMD...: run CMD in namespace NS (no time bound).
netns_exec() {
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}

# netns_prefix NAME: a unique DPDK --file-prefix (dprpc-netns-<pid>-NAME).
# Its run directory (/var/run/dpdk/PREFIX, which EAL leaves behind even
# with --no-shconf) is removed by netns_cleanup.
netns_prefix() {
	echo "dprpc-netns-$$-$1"
}

# netns_spawn SECS NS LOG CMD...: start CMD in namespace NS in the
# background, killed after SECS seconds at the latest, output to LOG.
# Sets NETNS_PID to its pid (for wait, or netns_stop).  Not in a $(...):
# the child must belong to this shell.
NETNS_PID=""
netns_spawn() {
	local secs=$1 ns=$2 log=$3
	shift 3
	timeout -k 3 "$secs" ip netns exec "$ns" "$@" >"$log" 2>&1 &
	NETNS_PID=$!
	_netns_pids+=("$NETNS_PID")
}

# netns_world_worker NS IFACE LOG PREFIX NAME MAP [OPTION...]: the sourcing
# test's world_worker ($worker) NAME of world MAP, in namespace NS on a
# net_af_packet port over IFACE with EAL file prefix PREFIX, in the
# background (90 s at most), its output in LOG: its pid in NETNS_PID.
netns_world_worker() {
	local ns=$1 iface=$2 log=$3 prefix=$4 name=$5 map=$6
	shift 6
	# shellcheck disable=SC2154 # $worker: set by the sourcing test
	netns_spawn 90 "$ns" "$log" env WORLD_PREFIX="$prefix" "$worker" --lcores=0@0,1@1 \
		--no-pci --no-huge -m 256 --huge-unlink=never --no-shconf --no-telemetry \
		--file-prefix "$prefix" --log-level=lib.eal:error --vdev "net_af_packet0,iface=$iface" \
		-- --name "$name" --world "$map" --port-id 0 "$@"
}

# netns_world_finish WHO PID LOG PREFIX LAST: wait for PID (shown
# indented, its log LOG); it must exit 0 with a line of LOG matching LAST
# (a grep regex), and its EAL runtime directory (prefix PREFIX) must be
# gone.  WHO names it in a failure.
netns_world_finish() {
	local who=$1 pid=$2 log=$3 prefix=$4 last=$5 rc=0
	wait "$pid" || rc=$?
	sed "s/^/    /" "$log" | grep -v "mp action" || true
	[ "$rc" = 0 ] || fail "$who exited with $rc"
	grep -q "$last" "$log" || fail "$who did not end with \"$last\""
	[ ! -d "/var/run/dpdk/$prefix" ] || fail "$who left its runtime directory"
}

# netns_run_bounded SECS NS CMD...: run CMD in namespace NS, wait for it
# (interruptibly: a trapped signal runs its trap at once), return its exit
# status; after SECS seconds it is killed (status 124, or 137).
netns_run_bounded() {
	local secs=$1 ns=$2 pid rc=0
	shift 2
	timeout -k 3 "$secs" ip netns exec "$ns" "$@" &
	pid=$!
	_netns_pids+=("$pid")
	wait "$pid" || rc=$?
	return "$rc"
}

# netns_stop PID [SECS]: SIGTERM, then SIGKILL after SECS (default 5);
# returns PID's exit status (143 when the TERM killed it).
netns_stop() {
	local pid=$1 secs=${2:-5} _ rc=0

	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq $((secs * 20))); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || rc=$?
	return "$rc"
}

# netns_build_xdp_drop SRC PCT OUT: compile xdp_drop.c for PCT percent.
# Returns non-zero (with clang's words on stderr) if clang cannot target
# BPF.  /usr/include/<multiarch> holds asm/types.h on Debian.
netns_build_xdp_drop() {
	local src=$1 pct=$2 out=$3 ma

	command -v clang >/dev/null 2>&1 || { _netns_log "clang not found"; return 1; }
	ma=$(gcc -print-multiarch 2>/dev/null || true)
	[ -n "$ma" ] || ma="$(uname -m)-linux-gnu"
	clang -O2 -g -Wall -target bpf "-I/usr/include/$ma" "-DDROP_PCT=$pct" -c "$src" -o "$out"
}

# netns_xdp_attach NS IF OBJ: attach OBJ's "xdp" section to IF in place
# of any program there, native (driver) mode first, then generic (skb)
# mode.  Sets NETNS_XDP_MODE to xdpdrv or xdpgeneric; returns non-zero if
# both are refused.  Set NETNS_XDP_FORCE=xdpdrv|xdpgeneric to try only one.
netns_xdp_attach() {
	local ns=$1 ifc=$2 obj=$3 mode modes=(xdpdrv xdpgeneric) err

	[ -n "${NETNS_XDP_FORCE:-}" ] && modes=("$NETNS_XDP_FORCE")
	netns_xdp_detach "$ns" "$ifc"
	for mode in "${modes[@]}"; do
		if err=$(ip -n "$ns" link set dev "$ifc" "$mode" obj "$obj" sec xdp 2>&1); then
			NETNS_XDP_MODE=$mode
			return 0
		fi
		_netns_log "$mode attach on $ifc refused: $err"
	done
	# shellcheck disable=SC2034
	NETNS_XDP_MODE=""
	return 1
}

# netns_xdp_detach NS IF: remove any XDP program from IF (both modes).
netns_xdp_detach() {
	ip -n "$1" link set dev "$2" xdpdrv off >/dev/null 2>&1 || true
	ip -n "$1" link set dev "$2" xdpgeneric off >/dev/null 2>&1 || true
}

# netns_eal CPU NAME IFACE: EAL=(...), the EAL options of one worker on an
# af_packet port bound to IFACE: as scripts/dev.sh gives the demo, with
# that port instead of memif.
netns_eal() {
	EAL=(-l "$1" --no-pci --no-huge -m 256 --huge-unlink=never --no-shconf --no-telemetry
		--file-prefix "$(netns_prefix "$2")" --log-level=lib.eal:error
		--vdev "net_af_packet0,iface=$3")
}

# netns_json_field JSON KEY: a number from a flat JSON line.
netns_json_field() {
	echo "$1" | sed -n "s/.*\"$2\": \([0-9.]*\).*/\1/p"
}

# netns_perf_through_loss PERF XDP_OBJ TAG WINDOW SECONDS [ARG...]: dprpc-perf
# throughput (the client given ARGs too, e.g. --payload) across the namespaces, server in A on CPU 1 and client in B on
# CPU 0, with XDP_OBJ on both veths.  Sets NETNS_CJSON and NETNS_SJSON to
# the client's and the server's JSON lines; non-zero with a message on
# stderr if a side fails (logs: $NETNS_TMP/TAG-{server,client}.log).
netns_perf_through_loss() {
	local perf=$1 obj=$2 tag=$3 window=$4 secs=$5 srv rc=0
	shift 5

	NETNS_CJSON="" NETNS_SJSON=""
	netns_xdp_attach "$NETNS_A" "$NETNS_IF_A" "$obj" &&
		netns_xdp_attach "$NETNS_B" "$NETNS_IF_B" "$obj" ||
		{ echo "XDP attach refused" >&2; return 1; }
	# PROMISC, which the agent sets once its port started, is the
	# readiness signal: clear what a killed process may have left.
	ip -n "$NETNS_A" link set dev "$NETNS_IF_A" promisc off
	netns_eal 1 "$tag-server" "$NETNS_IF_A"
	# No bound on the server's inline backlog: a window of 32 through the
	# kernel path can keep its rx queue from emptying for 10 ms of its CPU
	# time (with the resends of answers late past the 1 ms timeout), and
	# the calls it then refuses -EBUSY are overload, not what this
	# measures (it failed 2 runs of 5 so at 0% loss, before and after).
	netns_spawn 60 "$NETNS_A" "$NETNS_TMP/$tag-server.log" "$perf" "${EAL[@]}" -- \
		throughput --role server --json --inline-wait-us 4294967295
	srv=$NETNS_PID
	netns_wait_flag "$NETNS_A" "$NETNS_IF_A" PROMISC 20 ||
		{ echo "$tag: the server's port did not start" >&2; return 1; }
	netns_eal 0 "$tag-client" "$NETNS_IF_B"
	netns_run_bounded 60 "$NETNS_B" "$perf" "${EAL[@]}" -- throughput --role client \
		--window "$window" --duration "$secs" --warmup 0.2 --json "$@" \
		>"$NETNS_TMP/$tag-client.log" 2>&1 || rc=$?
	netns_stop "$srv" 5 || { echo "$tag: server exited with $?" >&2; rc=1; }
	netns_xdp_detach "$NETNS_A" "$NETNS_IF_A"
	netns_xdp_detach "$NETNS_B" "$NETNS_IF_B"
	[ "$rc" = 0 ] || { echo "$tag: client exited with $rc" >&2; return 1; }
	NETNS_CJSON=$(grep '^{' "$NETNS_TMP/$tag-client.log") &&
		NETNS_SJSON=$(grep '^{' "$NETNS_TMP/$tag-server.log") ||
		{ echo "$tag: no JSON from dprpc-perf" >&2; return 1; }
}

# netns_cleanup: kill what we started and whatever still runs in our
# namespaces, delete the namespaces (and with them the veth pair), remove
# the private directory and our DPDK run directories.  Idempotent and safe
# from a trap, whatever state setup reached.
netns_cleanup() {
	local pid ns p pids errexit=0

	[[ $- == *e* ]] && errexit=1
	set +e
	for pid in "${_netns_pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for ns in "${_netns_created[@]}"; do
		pids=$(ip netns pids "$ns" 2>/dev/null)
		# shellcheck disable=SC2086
		[ -n "$pids" ] && kill -TERM $pids 2>/dev/null
	done
	sleep 0.2
	for pid in "${_netns_pids[@]}"; do
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	_netns_pids=()
	for ns in "${_netns_created[@]}"; do
		pids=$(ip netns pids "$ns" 2>/dev/null)
		# shellcheck disable=SC2086
		[ -n "$pids" ] && kill -KILL $pids 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	_netns_created=()
	if [ -n "$NETNS_TMP" ]; then
		rm -rf -- "$NETNS_TMP"
		NETNS_TMP=""
	fi
	for p in /var/run/dpdk/dprpc-netns-"$$"-*; do
		[ -d "$p" ] && rm -rf -- "$p"
	done
	[ "$errexit" = 1 ] && set -e
	return 0
}
