#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs an example as a newcomer would by hand, for the 'examples' suite:
#   run.sh PROGRAM PATTERN NAME...   one worker process per NAME, each run
#       as "PROGRAM NAME DIR", DIR a new folder for their memif sockets
#       (the last worker out removes it);
#   run.sh PROGRAM PATTERN --eal ARG...   one process, given EAL's arguments
#       for a machine without a NIC, a --file-prefix of its own, then ARG...
#       (dpdk_app).
# It passes when every process exits 0 with a line matching PATTERN
# (grep -E) in its output, and neither DIR nor an EAL runtime directory is
# left.  Each example bounds its own waits; meson's timeout the whole.
set -uo pipefail
prog=$(realpath "$1")
pattern=$2
shift 2
tmp=$(mktemp -d /tmp/dprpc-example-XXXXXX)
cd "$tmp" || exit 1
pids=()
runtime=()

cleanup() {
	local p
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${runtime[@]}"; do rm -rf "$p"; done
	rm -rf "$tmp"
}
trap cleanup EXIT

if [ "${1:-}" = --eal ]; then
	shift
	names=(app)
	"$prog" --no-pci --no-huge -m 256 --huge-unlink=never --no-shconf --no-telemetry \
		--log-level=lib.eal:error --file-prefix "dprpc-example-$$" "$@" >app.out 2>app.err &
	pids+=($!)
	runtime+=("/var/run/dpdk/dprpc-example-$$")
else
	names=("$@")
	for name in "${names[@]}"; do
		"$prog" "$name" "$tmp/sock" >"$name.out" 2>"$name.err" &
		pids+=($!)
		# dprpc_eal_init_local()'s file prefix: dprpc-PID or dprpc-PID-TAG
		runtime+=("/var/run/dpdk/dprpc-$!" "/var/run/dpdk/dprpc-$!-$name")
	done
fi

rc=0
for i in "${!pids[@]}"; do
	wait "${pids[$i]}"
	st=$?
	if [ $st -ne 0 ]; then
		echo "${names[$i]} exited $st" >&2
		rc=1
	fi
done
pids=()
for name in "${names[@]}"; do
	cat "$name.out"
	if ! grep -Eq -- "$pattern" "$name.out"; then
		echo "no line of $name's matches: $pattern" >&2
		rc=1
	fi
done
if [ -e sock ]; then
	echo "socket folder left: $(ls -A sock | tr '\n' ' ')" >&2
	rc=1
fi
for d in "${runtime[@]}"; do
	if [ -e "$d" ]; then
		echo "EAL runtime directory left: $d" >&2
		rc=1
	fi
done
if [ $rc -ne 0 ]; then
	for name in "${names[@]}"; do
		echo "--- $name's stderr:" >&2
		cat "$name.err" >&2
	done
fi
exit $rc
