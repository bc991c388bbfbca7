#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# dprpc-perf runs end to end (forked sides over memif) and its JSON has the
# documented fields.  Numbers are not judged here: benchmarks are for perf/.
set -euo pipefail
perf=$1
for mode in "latency" "throughput --window 8"; do
	# shellcheck disable=SC2086
	out=$("$perf" -- $mode --duration 0.2 --warmup 0.05 --json --compare-raw 2>/dev/null)
	python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
need = ["mode", "payload_bytes", "window", "rtt_p50_us", "rtt_p99_us", "rtt_p999_us",
        "rate_rps", "raw", "ratio_p50", "ratio_rate", "dropped", "calls_failed", "retransmits"]
missing = [k for k in need if k not in r]
assert not missing, f"missing {missing} in {r}"
assert r["calls"] > 0 and r["raw"]["calls"] > 0, r
# A loss-free memif: nothing fails; the only frames dropped are second
# responses to requests resent when the machine stalled a call past the
# retransmission timer.
assert r["calls_failed"] == 0 and r["dropped"] <= r["retransmits"], r
assert 0 < r["rtt_p50_us"] <= r["rtt_p99_us"] <= r["rtt_p999_us"], r
print(f"{r['mode']}: {r['calls']} calls, p50 {r['rtt_p50_us']} us, ratio_p50 {r['ratio_p50']}")
PY
done
# RRefs: remote() + to_here() beside rpc_sync, with proxies; and a churn
# whose owner ends with no RRef left.
out=$("$perf" -- rref --duration 0.2 --warmup 0.05 --json --compare-rpc 2>/dev/null)
python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
need = ["rtt_p50_us", "rtt_p99_us", "proxy_p50_us", "proxy_p99_us", "rpc_sync", "ratio_p50"]
missing = [k for k in need if k not in r]
assert not missing, f"missing {missing} in {r}"
assert r["calls"] > 0 and r["rpc_sync"]["calls"] > 0 and r["calls_failed"] == 0, r
assert 0 < r["proxy_p50_us"] <= r["proxy_p99_us"], r
print(f"rref: {r['calls']} remote+to_here, p50 {r['rtt_p50_us']} us, ratio_p50 {r['ratio_p50']}")
PY
out=$("$perf" -- rref-churn --rrefs 20000 --batch 2048 --json 2>/dev/null)
python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
assert r["rrefs"] == 20000 and r["owners_left"] == 0 and r["owner_rss_last_kb"] > 0, r
print(f"rref-churn: {r['rrefs']} RRefs, owner RSS {r['owner_rss_first_kb']} -> {r['owner_rss_last_kb']} kB")
PY
# Lateness: application threads against a handler slower than the calls
# they make; calls time out and the report has its fields (no threshold).
out=$("$perf" -- lateness --threads 2 --window 32 --timeout-us 20000 --duration 0.3 \
	--warmup 0.05 --json 2>/dev/null)
python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
need = ["threads", "timeouts", "completions", "lateness_max_us", "lateness_p99_us",
        "lateness_p50_us", "observed_lateness_max_us", "completion_gap_max_us",
        "submit_max_us", "loadavg_1m"]
missing = [k for k in need if k not in r]
assert not missing, f"missing {missing} in {r}"
assert r["threads"] == 2 and r["timeouts"] > 0, r
assert 0 <= r["lateness_p50_us"] <= r["lateness_p99_us"] <= r["lateness_max_us"], r
print(f"lateness: {r['timeouts']} timeouts, worst {r['lateness_max_us']} us late")
PY
# One side per process, as across namespaces: --role with EAL options.
sock=/tmp/dprpc-perf-smoke-$$.sock
srv=""
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
	rm -f "$sock"
}
trap cleanup EXIT
eal="--no-pci --no-huge -m 256 --no-shconf --no-telemetry --log-level=lib.eal:error"
# shellcheck disable=SC2086
"$perf" -l 1 $eal --file-prefix smoke-srv-$$ \
	--vdev "net_memif0,role=server,socket-abstract=no,socket=$sock" -- latency --role server \
	>/dev/null 2>&1 &
srv=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
# shellcheck disable=SC2086
out=$("$perf" -l 0 $eal --file-prefix smoke-cli-$$ \
	--vdev "net_memif0,role=client,socket-abstract=no,socket=$sock" -- latency --role client \
	--duration 0.2 --warmup 0.05 --json 2>/dev/null)
python3 -c 'import json,sys; r=json.loads(sys.argv[1]); assert r["calls"] > 0, r; print("role mode:", r["calls"], "calls")' "$out"
kill "$srv"
wait "$srv" || { echo "role server exited with $?"; exit 1; }
srv=""

# Bad usage is an error, not a crash.
if "$perf" -- nosuchmode 2>/dev/null; then echo "accepted a bad mode"; exit 1; fi
if "$perf" -- latency --window 4 2>/dev/null; then echo "accepted latency with a window"; exit 1; fi
if "$perf" -- latency --compare-rpc 2>/dev/null; then echo "accepted --compare-rpc outside rref"; exit 1; fi
