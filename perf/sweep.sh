#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A rate sweep and its figure: dprpc-perf's sweep mode (open-loop runs at
# rising rates, over memif, server and client pinned to their CPUs) writes
# CSV; gnuplot draws latency against offered load (p50, p99, p99.9, log
# scale) above completions against offered load, with the knee and the
# maximum sustainable rate marked (their definitions: perf/sweep.c).
#
#   perf/sweep.sh DPRPC_PERF OUT_PREFIX TITLE -- SWEEP OPTIONS...
#
# e.g. perf/sweep.sh build/perf/dprpc-perf perf/figures/sweep-echo "echo, 32 B" \
#          -- --rate-min 20000 --rate-max 400000 --steps 12
# writes OUT_PREFIX.csv and OUT_PREFIX.png.  DPRPC_PERF "-" redraws
# OUT_PREFIX.png from an existing OUT_PREFIX.csv.  Needs gnuplot
# (scripts/setup-deps.sh installs gnuplot-nox).
set -euo pipefail
[ $# -ge 4 ] && [ "$4" = "--" ] || {
	echo "usage: $0 DPRPC_PERF OUT_PREFIX TITLE -- SWEEP OPTIONS..." >&2
	exit 2
}
perf=$1 out=$2 title=$3
shift 4
command -v gnuplot >/dev/null || { echo "$0: no gnuplot: run scripts/setup-deps.sh" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
if [ "$perf" != "-" ]; then
	"$perf" -- sweep --csv "$@" >"$out.csv"
fi

# The results, from the "# key=value" lines after the rows.
val() { { grep -o "$1=[0-9.]*" "$out.csv" || true; } | head -1 | cut -d= -f2; }
knee=$(val knee_rps) msr=$(val max_sustainable_rps) at80=$(val at80_rps)
p50=$(val at80_p50_us) p99=$(val at80_p99_us) load=$(val at80_loadavg_1m)
echo "$title: knee ${knee} calls/s, max sustainable ${msr} calls/s; at ${at80}: p50 ${p50} us, p99 ${p99} us (load ${load})"

gnuplot <<EOF
set terminal pngcairo size 900,800 font ",10" noenhanced
set output "$out.png"
set datafile separator ","
set key top left
set multiplot layout 2,1 title "dprpc open loop, $title: latency from the intended send vs offered load"
set logscale y
set grid
set ylabel "latency (us)"
set xlabel "offered calls/s"
$( [ "$knee" != "0.0" ] && echo "set arrow from $knee, graph 0 to $knee, graph 1 nohead dt 2 lc rgb 'red'" )
$( [ "$knee" != "0.0" ] && printf "set label 'knee: %.0f calls/s (red)' at graph 0.3, graph 0.95 tc rgb 'red'" "$knee" )
$( [ "$msr" != "0.0" ] && echo "set arrow from $msr, graph 0 to $msr, graph 1 nohead dt 3 lc rgb 'blue'" )
$( [ "$msr" != "0.0" ] && printf "set label 'max sustainable: %.0f calls/s (blue)' at graph 0.3, graph 0.88 tc rgb 'blue'" "$msr" )
$( [ -n "$at80" ] && printf "set label 'at %.0f calls/s (80%%): p50 %.0f us, p99 %.0f us' at graph 0.3, graph 0.81" "$at80" "$p50" "$p99" )
plot "$out.csv" every ::1 using 1:7 with linespoints title "p50", \
     "" every ::1 using 1:9 with linespoints title "p99", \
     "" every ::1 using 1:10 with linespoints title "p99.9"
unset logscale y
unset label
set ylabel "calls/s"
plot "$out.csv" every ::1 using 1:6 with linespoints title "achieved calls/s", \
     "" every ::1 using 1:1 with lines dt 2 title "offered/s"
unset multiplot
EOF
echo "wrote $out.csv and $out.png"
