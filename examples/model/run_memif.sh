#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# digits_server and digits_client, two processes over a memif pair on this
# machine (server on CPU 1, client on CPU 0), each with its own EAL (no
# PCI, no hugepages, a private --file-prefix).
#
#   run_memif.sh BUILD_DIR [SERVER OPTIONS...] -- [CLIENT OPTIONS...]
#
# The client gets --stop: the server stops when it is done.  Prints both
# sides' output (the server's last); exits with the client's status, or
# the server's if that failed.  The client is given MODEL_RUN_SECONDS
# (default 240) to finish, the server as long and a minute more.
set -euo pipefail

build=${1:?usage: run_memif.sh BUILD_DIR [SERVER OPTIONS] -- [CLIENT OPTIONS]}
shift
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
srv_args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	srv_args+=("$1")
	shift
done
[ $# -gt 0 ] && shift
bin="$build/examples/model"
tag="digits-$$-$RANDOM"
sock="/tmp/$tag.sock"
log="/tmp/$tag-server.log"
world="server 0 02:00:00:00:00:01 10.0.0.1 7000; client 1 02:00:00:00:00:02 10.0.0.2 7000"
srv=""
# shellcheck disable=SC2317
cleanup() {
	if [ -n "$srv" ]; then
		kill "$srv" 2>/dev/null || true
		wait "$srv" 2>/dev/null || true
	fi
	rm -f "$sock" "$log"
	rm -rf "/var/run/dpdk/$tag-s" "/var/run/dpdk/$tag-c" 2>/dev/null || true
}
trap cleanup EXIT
eal() {
	echo "-l $1 --no-pci --no-huge -m 256 --huge-unlink=never --no-shconf --no-telemetry --file-prefix $2" \
		"--log-level=lib.eal:error --log-level=pmd.net.memif:error" \
		"--vdev net_memif0,role=$3,socket-abstract=no,socket=$sock"
}

secs=${MODEL_RUN_SECONDS:-240}
# shellcheck disable=SC2046
timeout $((secs + 60)) "$bin/digits_server" $(eal 1 "$tag-s" server) -- --name server --world "$world" \
	--model "$here/digits_mlp.bin" --max-seconds "$secs" "${srv_args[@]}" >"$log" 2>&1 &
srv=$!
for _ in $(seq 400); do
	[ -S "$sock" ] && break
	kill -0 "$srv" 2>/dev/null || break
	sleep 0.05
done
rc=0
# shellcheck disable=SC2046
timeout "$secs" "$bin/digits_client" $(eal 0 "$tag-c" client) -- --name client --world "$world" \
	--server server --testset "$here/digits_test.bin" --stop "$@" || rc=$?
src=0
wait "$srv" || src=$?
srv=""
cat "$log"
[ "$rc" = 0 ] || exit "$rc"
exit "$src"
