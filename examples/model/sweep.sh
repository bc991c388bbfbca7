#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The digits model server's rate sweep and its figure, in one command:
# digits_server and digits_client over memif (run_memif.sh: server on
# CPU 1, client on CPU 0), the client sweeping open-loop rates with
# dprpc-perf's engine and sweep (client_open.c; the definitions of the
# knee and the maximum sustainable rate: perf/sweep.c), every answer
# checked; then perf/sweep.sh draws the figure from the CSV.
#
#   examples/model/sweep.sh BUILD_DIR [OUT_PREFIX [TITLE]] [-- SERVER OPTIONS -- SWEEP OPTIONS]
#
# OUT_PREFIX defaults to perf/figures/sweep-model (writes .csv and .png),
# the sweep options to those below: a p99 bound of 20 ms for a
# sustainable rate, a model-serving budget, rather than dprpc-perf's
# default of 10x the lowest p99 (on a shared machine one quiet run makes
# that bound a fraction of the scheduler's stalls, and no rate is
# sustainable).  About two minutes; both processes are given
# MODEL_RUN_SECONDS (default 900) to finish.  Exits non-zero if the
# client did (an answer unlike the offline model's, the accuracy not
# 441/450, the sweep failing to run).  Needs gnuplot
# (scripts/setup-deps.sh).
set -euo pipefail

build=${1:?usage: sweep.sh BUILD_DIR [OUT_PREFIX [TITLE]] [-- SERVER OPTIONS -- SWEEP OPTIONS]}
shift
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/perf/figures/sweep-model"
title="digits MLP, batched on a worker thread, 72 B"
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
	out=$1
	shift
fi
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
	title=$1
	shift
fi
srv_args=()
sweep_args=(--rate-min 2000 --rate-max 30000 --steps 10 --refine 3 --repeat 3
	--duration 2 --warmup 0.5 --slo-us 20000)
if [ $# -gt 0 ]; then
	shift # --
	srv_args=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do
		srv_args+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	[ $# -gt 0 ] && sweep_args=("$@")
fi
mkdir -p "$(dirname "$out")"
log=$(mktemp /tmp/digits-sweep-XXXXXX)
trap 'rm -f "$log"' EXIT

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
rc=0
MODEL_RUN_SECONDS=${MODEL_RUN_SECONDS:-900} "$here/run_memif.sh" "$build" "${srv_args[@]}" -- -- sweep --csv "${sweep_args[@]}" \
	>"$log" 2>&1 || rc=$?
# The CSV: its header, the rows, the "# key=value" lines (the client's and
# server's other lines left out).
grep -E '^(offered_rps,|[0-9]|# )' "$log" >"$out.csv" || true
grep -E '^(client|server):|^# client' "$log" || true
if [ "$rc" != 0 ]; then
	echo "sweep.sh: the run failed ($rc):" >&2
	cat "$log" >&2
	exit "$rc"
fi
"$root/perf/sweep.sh" - "$out" "$title" --
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
