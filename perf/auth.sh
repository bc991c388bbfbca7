#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# What a world key costs (issue 30): one build of dprpc-perf, without a key
# and with header tags (--auth none, --auth header), in the same minutes:
#
#   perf/auth.sh BUILD [PAIRS]        (default 11 pairs)
#
# e.g.
#   meson setup build-rel -Dbuildtype=release -Dtests=false -Dpython_bindings=disabled
#   nice ninja -C build-rel
#   nice -n -20 perf/auth.sh build-rel 11
#
# Each pair runs, each one `--duration 1 --json`, none then header (header
# then none on even pairs, so a drift of the machine favours neither):
#   latency                    32 B, one call outstanding: p50
#   throughput --window 32     32 B: calls/s
#   latency --payload 1048576  a 1 MiB echo: p50, and the GB/s it implies
#                              (2 MiB of payload, both ways, per p50)
# and after its 1 MiB pair one 1 MiB run with --auth payload (the payload
# tagged too), for its GB/s.  This machine changes speed from minute to
# minute (perf/RESULTS.md), so the figures are per pair: header over none
# of the same pair; the report gives the median of those ratios beside the
# ratio of the medians, and /proc/loadavg before and after.  A run that
# fails is run again, up to twice, and counted; a pair missing a side is
# left out.  Every run is bounded (dprpc-perf's own budget, and timeout(1)
# past it); nothing needs root.
set -euo pipefail

build=${1:?usage: perf/auth.sh BUILD [PAIRS]}
pairs=${2:-11}
perf=$build/perf/dprpc-perf
[ -x "$perf" ] || { echo "perf/auth.sh: no $perf: build first" >&2; exit 2; }
# The usage whole first: it exits non-zero, which pipefail would make a
# pipeline's status.
usage=$("$perf" -- --help 2>&1 || true)
grep -q -- --auth <<<"$usage" || { echo "perf/auth.sh: $perf has no --auth" >&2; exit 2; }

out=$(mktemp)
retried=0
trap 'rm -f "$out"' EXIT

# run PAIR NAME AUTH MODE [options]: one dprpc-perf run, its JSON in $out.
run() {
	local i=$1 name=$2 auth=$3 line try
	shift 3
	for try in 1 2 3; do
		if line=$(timeout -k 5 90 "$perf" -- "$@" --auth "$auth" --duration 1 --json |
			tail -n 1) && [ -n "$line" ]; then
			printf '%s %s %s %s\n' "$i" "$name" "$auth" "$line" >>"$out"
			return 0
		fi
		echo "perf/auth.sh: pair $i $name $auth: run $try failed" >&2
		retried=$((retried + 1))
	done
}

load0=$(cat /proc/loadavg)
echo "loadavg before: $load0"
for i in $(seq "$pairs"); do
	order="none header"
	[ $((i % 2)) -eq 0 ] && order="header none"
	for a in $order; do run "$i" lat "$a" latency; done
	for a in $order; do run "$i" w32 "$a" throughput --window 32; done
	for a in $order; do run "$i" mib "$a" latency --payload 1048576; done
	run "$i" mib payload latency --payload 1048576
done
[ "$retried" -eq 0 ] || echo "perf/auth.sh: $retried failed runs were run again" >&2

python3 - "$out" "$pairs" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    i, name, auth, js = line.split(" ", 3)
    rows.setdefault(int(i), {})[(name, auth)] = json.loads(js)
med = statistics.median

def gbs(r):
    return (r["payload_bytes"] + r["response_bytes"]) / r["rtt_p50_us"] / 1e3

# metric: (run, its figure, what it is)
metrics = [("lat", lambda r: r["rtt_p50_us"], "latency p50 us"),
           ("w32", lambda r: r["rate_rps"], "W=32 calls/s"),
           ("mib", lambda r: r["rtt_p50_us"], "1 MiB p50 us"),
           ("mib", gbs, "1 MiB GB/s")]
fig = {m[2]: {"none": [], "header": [], "ratio": []} for m in metrics}
pay, pay_none = [], []
print("pair  lat p50 none/header us  h/n    W=32 none/header calls/s  h/n"
      "    1 MiB p50 none/header us  h/n    GB/s none/header/payload  h/n")
for i in sorted(rows):
    r = rows[i]
    cells = []
    for name, f, what in metrics:
        if (name, "none") not in r or (name, "header") not in r:
            cells.append(None)
            continue
        n, h = f(r[(name, "none")]), f(r[(name, "header")])
        fig[what]["none"].append(n)
        fig[what]["header"].append(h)
        fig[what]["ratio"].append(h / n)
        cells.append((n, h, h / n))
    p = gbs(r[("mib", "payload")]) if ("mib", "payload") in r else None
    if p is not None:
        pay.append(p)
        if ("mib", "none") in r:
            pay_none.append(p / gbs(r[("mib", "none")]))
    s = f"{i:4d}"
    for c, fmt in zip(cells, ["%7.3f %7.3f", "%9.0f %9.0f", "%9.1f %9.1f", "%5.2f %5.2f"]):
        s += "  " + ("-" if c is None else (fmt % c[:2]) + f" {c[2]:6.3f}")
    s += "  " + ("-" if p is None else f"payload {p:5.2f}")
    print(s)
print()
print(f"{'metric':16s} {'pairs':>5s} {'median none':>12s} {'median header':>14s}"
      f" {'median of h/n':>14s} {'h/n of medians':>15s}")
for name, f, what in metrics:
    d = fig[what]
    if not d["ratio"]:
        continue
    print(f"{what:16s} {len(d['ratio']):5d} {med(d['none']):12.3f} {med(d['header']):14.3f}"
          f" {med(d['ratio']):14.3f} {med(d['header']) / med(d['none']):15.3f}")
if pay:
    print(f"1 MiB GB/s, payload tags: median {med(pay):.3f} over {len(pay)} runs"
          f" ({min(pay):.3f}-{max(pay):.3f}); payload/none per pair, median"
          f" {med(pay_none):.3f}")
for name in ("lat", "w32", "mib"):
    for auth in ("none", "header", "payload"):
        runs = [rows[i][(name, auth)] for i in rows if (name, auth) in rows[i]]
        if runs:
            print(f"{name} {auth}: resends {sum(x['retransmits'] for x in runs)},"
                  f" frames resent {sum(x['frames_resent'] for x in runs)},"
                  f" dropped {sum(x['dropped'] for x in runs)},"
                  f" calls failed {sum(x['calls_failed'] for x in runs)}, in {len(runs)} runs")
PY
echo "loadavg before: $load0"
echo "loadavg after:  $(cat /proc/loadavg)"
