#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Batched vs unbatched serving of the digits model over memif
# (run_memif.sh): for each server mode, the client at window 1 (low load:
# latency) and window 64 (high load: the rate it sustains), each run
# SECONDS long, the whole matrix ROUNDS times interleaved; prints one line
# per run and the median of each cell, with the load average.
#
#   bench.sh BUILD_DIR [SECONDS (3)] [ROUNDS (3)]
set -euo pipefail

build=${1:?usage: bench.sh BUILD_DIR [SECONDS] [ROUNDS]}
secs=${2:-3}
rounds=${3:-3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
modes=("inline:--mode inline" "batched-thread:" "batched-poller:--compute poller")
windows=(1 64)
res=$(mktemp /tmp/digits-bench-XXXXXX)
trap 'rm -f "$res"' EXIT

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
	for m in "${modes[@]}"; do
		name=${m%%:*}
		# shellcheck disable=SC2206
		sargs=(${m#*:})
		for w in "${windows[@]}"; do
			line=$("$here/run_memif.sh" "$build" "${sargs[@]}" -- --window "$w" \
				--duration "$secs" --json | grep '^{')
			rate=$(echo "$line" | sed -E 's/.*"rate": ([0-9.]+).*/\1/')
			p50=$(echo "$line" | sed -E 's/.*"p50_us": ([0-9.]+).*/\1/')
			p99=$(echo "$line" | sed -E 's/.*"p99_us": ([0-9.]+).*/\1/')
			mb=$(echo "$line" | sed -E 's/.*"mean_batch": ([0-9.]+).*/\1/')
			echo "round $r $name window $w: rate $rate/s p50 $p50 us p99 $p99 us mean batch $mb"
			echo "$name $w $rate $p50 $p99 $mb" >>"$res"
		done
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "medians over $rounds rounds of $secs s:"
printf "%-16s %6s %12s %10s %10s %10s\n" mode window rate/s p50_us p99_us batch
for m in "${modes[@]}"; do
	name=${m%%:*}
	for w in "${windows[@]}"; do
		awk -v n="$name" -v w="$w" '$1 == n && $2 == w' "$res" | python3 -c '
import sys, statistics as st
rows = [l.split() for l in sys.stdin]
col = lambda i: st.median(float(r[i]) for r in rows)
print("%-16s %6s %12.0f %10.1f %10.1f %10.2f" % (rows[0][0], rows[0][1], col(2), col(3), col(4), col(5)))'
	done
done
