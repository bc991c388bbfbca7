#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A/B of two builds of dprpc-perf on this machine, in the same minutes:
#
#   perf/ab.sh BUILD_A BUILD_B ROUNDS MODE [dprpc-perf options]
#
# e.g. the reliable transport against the foundation build:
#   git worktree add /tmp/wt-old 3269099
#   (cd /tmp/wt-old && meson setup /tmp/old -Dbuildtype=release -Dtests=false && ninja -C /tmp/old)
#   meson setup /tmp/new -Dbuildtype=release -Dtests=false && ninja -C /tmp/new
#   perf/ab.sh /tmp/old /tmp/new 20 throughput --window 32
#
# Each round runs A then B (B then A on odd rounds, so a drift of the
# machine does not favour either), each one `MODE --compare-raw --repeat 1
# --duration 1 --json`, i.e. one raw floor run and one dprpc run.  This
# machine switches speed from minute to minute (perf/RESULTS.md), so the
# figures are per round: B's rate and p50 over A's of the same round, and
# each build's rate over the raw floor of its own invocation; the report
# gives their medians.  Nothing here needs root; each dprpc-perf run cleans
# up after itself.
set -euo pipefail

a=${1:?usage: ab.sh BUILD_A BUILD_B ROUNDS MODE [options]}
b=${2:?usage: ab.sh BUILD_A BUILD_B ROUNDS MODE [options]}
rounds=${3:?usage: ab.sh BUILD_A BUILD_B ROUNDS MODE [options]}
shift 3
[ $# -gt 0 ] || { echo "usage: ab.sh BUILD_A BUILD_B ROUNDS MODE [options]" >&2; exit 2; }
for d in "$a" "$b"; do
	[ -x "$d/perf/dprpc-perf" ] || { echo "no $d/perf/dprpc-perf: build first" >&2; exit 2; }
done

out=$(mktemp)
retried=0
trap 'rm -f "$out"' EXIT
for i in $(seq "$rounds"); do
	order="A B"
	[ $((i % 2)) -eq 0 ] && order="B A"
	for side in $order; do
		dir=$a
		[ "$side" = B ] && dir=$b
		# A run that fails (seen: a raw memif echo completing no call, about
		# once in a few hundred runs on a loaded machine) is run again, up
		# to twice, and counted; a round whose side never succeeds is left
		# out of the medians.
		for try in 1 2 3; do
			if line=$("$dir/perf/dprpc-perf" -- "$@" --compare-raw --repeat 1 --duration 1 \
				--json | tail -n 1) && [ -n "$line" ]; then
				printf '%s %s %s\n' "$i" "$side" "$line" >>"$out"
				break
			fi
			echo "ab.sh: round $i $side: run $try failed" >&2
			retried=$((retried + 1))
		done
	done
done
[ "$retried" -eq 0 ] || echo "ab.sh: $retried failed runs were run again" >&2

python3 - "$out" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    i, side, js = line.split(" ", 2)
    rows.setdefault(int(i), {})[side] = json.loads(js)
rate_ba, p50_ba, raw_a, raw_b = [], [], [], []
print("round  A calls/s  B calls/s   B/A rate  A p50 us  B p50 us  B/A p50  A/raw  B/raw")
for i in sorted(rows):
    r = rows[i]
    if "A" not in r or "B" not in r:
        continue
    A, B = r["A"], r["B"]
    rate_ba.append(B["rate_rps"] / A["rate_rps"])
    p50_ba.append(B["rtt_p50_us"] / A["rtt_p50_us"])
    raw_a.append(A["ratio_rate"])
    raw_b.append(B["ratio_rate"])
    print(f"{i:5d} {A['rate_rps']:10.0f} {B['rate_rps']:10.0f} {rate_ba[-1]:10.3f}"
          f" {A['rtt_p50_us']:9.3f} {B['rtt_p50_us']:9.3f} {p50_ba[-1]:8.3f}"
          f" {raw_a[-1]:6.3f} {raw_b[-1]:6.3f}")
med = statistics.median
rate_a = [rows[i]["A"]["rate_rps"] for i in rows if "A" in rows[i] and "B" in rows[i]]
rate_b = [rows[i]["B"]["rate_rps"] for i in rows if "A" in rows[i] and "B" in rows[i]]
p50_a = [rows[i]["A"]["rtt_p50_us"] for i in rows if "A" in rows[i] and "B" in rows[i]]
p50_b = [rows[i]["B"]["rtt_p50_us"] for i in rows if "A" in rows[i] and "B" in rows[i]]
drop_a = sum(rows[i]["A"].get("dropped", 0) for i in rows if "A" in rows[i])
drop_b = sum(rows[i]["B"].get("dropped", 0) for i in rows if "B" in rows[i])
print(f"dropped frames (stale duplicates of spurious resends, all rounds): A {drop_a}, B {drop_b}")
print(f"ratio of medians: B/A rate {med(rate_b) / med(rate_a):.3f}, B/A p50 {med(p50_b) / med(p50_a):.3f}")
# A raw floor of small frames against a 1 MiB call rounds to 0 in the JSON.
raw_ratio = f"{med(raw_b) / med(raw_a):.3f}" if med(raw_a) > 0 else "n/a"
print(f"median over {len(rate_ba)} rounds: B/A rate {med(rate_ba):.3f}, B/A p50 {med(p50_ba):.3f};"
      f" rate over the raw floor: A {med(raw_a):.3f}, B {med(raw_b):.3f}"
      f" (B/A of those {raw_ratio})")
PY
