#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# digits_server and digits_client on two "hosts": network namespaces
# joined by a veth pair, each process on a net_af_packet port bound to its
# veth end (tests/netns/netns.sh makes and removes them).  Needs root (or
# CAP_SYS_ADMIN); exits 77 (skip) where no namespace can be created.
#
#   run_netns.sh BUILD_DIR [SERVER OPTIONS...] -- [CLIENT OPTIONS...]
#
# Same options and output as run_memif.sh; the client gets --stop.
set -euo pipefail

build=${1:?usage: run_netns.sh BUILD_DIR [SERVER OPTIONS] -- [CLIENT OPTIONS]}
shift
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
srv_args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	srv_args+=("$1")
	shift
done
[ $# -gt 0 ] && shift
bin="$build/examples/model"
# shellcheck source=tests/netns/netns.sh
. "$here/../../tests/netns/netns.sh"

netns_can_create || { echo "SKIP: cannot create a network namespace here"; exit 77; }
trap netns_cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
netns_tmpdir
netns_setup
A=$NETNS_A
B=$NETNS_B
world="server 0 $(netns_mac "$A" "$NETNS_IF_A") $NETNS_IP_A 7000;"
world+=" client 1 $(netns_mac "$B" "$NETNS_IF_B") $NETNS_IP_B 7000"

netns_eal 1 digits-server "$NETNS_IF_A"
netns_spawn 300 "$A" "$NETNS_TMP/server.log" "$bin/digits_server" "${EAL[@]}" -- \
	--name server --world "$world" --model "$here/digits_mlp.bin" --max-seconds 240 \
	"${srv_args[@]}"
srv=$NETNS_PID
# The agent turns promiscuous mode on once its port has started.
netns_wait_flag "$A" "$NETNS_IF_A" PROMISC 20 || {
	cat "$NETNS_TMP/server.log"
	echo "FAIL: the server's port did not start" >&2
	exit 1
}
netns_eal 0 digits-client "$NETNS_IF_B"
rc=0
netns_run_bounded 240 "$B" "$bin/digits_client" "${EAL[@]}" -- --name client \
	--world "$world" --server server --testset "$here/digits_test.bin" --stop "$@" || rc=$?
src=0
for _ in $(seq 200); do
	kill -0 "$srv" 2>/dev/null || break
	sleep 0.05
done
netns_stop "$srv" 5 || src=$?
cat "$NETNS_TMP/server.log"
[ "$rc" = 0 ] || exit "$rc"
exit "$src"
