#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# dprpc-perf runs end to end (forked sides over memif) and its JSON has the
# documented fields.  Numbers are not judged here: benchmarks are for perf/.
set -euo pipefail
perf=$1
# Each run's stderr, shown if the script fails (a run that fails makes the
# assignment fail, which ends the script).
err=$(mktemp /tmp/perf-smoke-err-XXXXXX)
srv=""
sock=""
cleanup() {
	local rc=$?

	[ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
	[ -n "$sock" ] && rm -f "$sock"
	if [ "$rc" != 0 ]; then
		echo "perf_smoke: failed (exit $rc); the last dprpc-perf run's stderr:" >&2
		grep -v "mp action callback" "$err" | tail -40 >&2
	fi
	rm -f "$err"
}
trap cleanup EXIT
for mode in "latency" "throughput --window 8"; do
	# shellcheck disable=SC2086
	out=$("$perf" -- $mode --duration 0.2 --warmup 0.05 --json --compare-raw 2>"$err")
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
out=$("$perf" -- rref --duration 0.2 --warmup 0.05 --json --compare-rpc 2>"$err")
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
out=$("$perf" -- rref-churn --rrefs 20000 --batch 2048 --json 2>"$err")
python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
assert r["rrefs"] == 20000 and r["owners_left"] == 0 and r["owner_rss_last_kb"] > 0, r
print(f"rref-churn: {r['rrefs']} RRefs, owner RSS {r['owner_rss_first_kb']} -> {r['owner_rss_last_kb']} kB")
PY
# Lateness: application threads against a handler slower than the calls
# they make (30 ms of service each, 20 ms timeouts: a call the server does
# not shed times out); the report has its fields (no threshold).
out=$("$perf" -- lateness --threads 2 --window 32 --timeout-us 20000 --service-us 30000 \
	--duration 0.3 --warmup 0.05 --json 2>"$err")
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
# After submission: against a deadline no earlier than the application's.
assert r["submitted_lateness_max_us"] <= r["lateness_max_us"], r
assert "net_lateness_max_us" not in r, r  # no --watch, no net figures
print(f"lateness: {r['timeouts']} timeouts, worst {r['lateness_max_us']} us late")
PY
# Lateness with the stall watch, against a handler ten times slower than
# the timeout: every measured call times out, none completes (an answer
# comes 200 ms after its request at the soonest, its call's timer fires at
# 20 ms); the net figures take time away, never add it.
out=$("$perf" -- lateness --threads 2 --window 16 --timeout-us 20000 --service-us 200000 \
	--duration 0.3 --warmup 0.05 --watch --json 2>"$err")
python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
need = ["submitted_lateness_max_us", "net_lateness_max_us", "net_lateness_p99_us",
        "net_cpu_lateness_max_us", "net_cpu_lateness_p99_us", "completion_gap_stalled_us",
        "stall_all_cpus_max_us", "stall_one_cpu_max_us", "watch_realtime"]
missing = [k for k in need if k not in r]
assert not missing, f"missing {missing} in {r}"
assert r["timeouts"] > 0 and r["completions"] == 0, r
assert r["net_lateness_max_us"] <= r["submitted_lateness_max_us"] <= r["lateness_max_us"], r
assert r["net_cpu_lateness_max_us"] <= r["submitted_lateness_max_us"], r
assert r["net_lateness_p99_us"] <= r["submitted_lateness_p99_us"], r
assert r["stall_all_cpus_max_us"] <= r["stall_one_cpu_max_us"], r
assert r["completion_gap_stalled_us"] <= r["completion_gap_max_us"], r
assert isinstance(r["watch_realtime"], bool), r
print(f"lateness --watch: {r['timeouts']} timeouts, net worst {r['net_lateness_max_us']} us")
PY
# Open loop: calls at a fixed rate, each counted once (ok, failed by
# class and errno, or unsent), the per-second lines adding up.
out=$("$perf" -- open --rate 2000 --duration 0.5 --warmup 0.1 --json 2>"$err")
python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
need = ["offered_rps", "issued", "ok", "failed", "unsent", "timeouts", "overload", "deadline",
        "cancelled", "other", "retransmits", "done_rps", "achieved_rps", "p50_us", "p90_us", "p99_us", "p999_us",
        "p9999_us", "max_us", "min_us", "mean_us", "stddev_us", "uncorrected_p50_us",
        "send_lag_max_us", "errors_by_errno", "per_second", "loadavg_1m", "busy", "busy_p50_us",
        "busy_p99_us", "busy_max_us", "busy_from_send_p99_us", "busy_from_send_max_us"]
missing = [k for k in need if k not in r]
assert not missing, f"missing {missing} in {r}"
# A fixed schedule: 2000/s for 0.5 s, up to one call either side of the edges.
assert abs(r["issued"] - 1000) <= 1, r["issued"]
assert r["issued"] == r["ok"] + r["failed"] + r["unsent"], r
assert r["failed"] == sum(r[k] for k in ["timeouts", "overload", "deadline", "cancelled", "other"])
assert r["failed"] == sum(r["errors_by_errno"].values()), r
assert len(r["per_second"]) == 1 and r["per_second"][0]["issued"] == r["issued"], r
assert sum(s["ok"] for s in r["per_second"]) == r["ok"], r
assert 0 < r["min_us"] <= r["p50_us"] <= r["p99_us"] <= r["p999_us"] <= r["max_us"], r
print(f"open: {r['issued']} issued, {r['ok']} ok, p50 {r['p50_us']} us, p99 {r['p99_us']} us")
PY
# The error classes: a handler nobody registered (ENOENT: other), and one
# sleeping longer than every call's timeout (ETIMEDOUT: timeouts); Poisson
# gaps, CSV.
out=$("$perf" -- open --rate 1000 --poisson --duration 0.3 --warmup 0.05 --handler nosuch \
	--json 2>"$err")
python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
assert r["issued"] > 0 and r["ok"] == 0 and r["other"] == r["issued"], r
assert r["errors_by_errno"] == {"ENOENT": r["issued"]}, r
print(f"open, no such handler: {r['issued']} calls, all ENOENT")
PY
out=$("$perf" -- open --rate 100 --duration 0.3 --warmup 0 --handler sleep --service-us 30000 \
	--timeout-us 5000 --json 2>"$err")
python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
assert r["issued"] == 30 and r["timeouts"] == 30 and r["ok"] == 0, r
assert r["errors_by_errno"] == {"ETIMEDOUT": 30}, r
print("open, handler sleeping past the timeout: 30 calls, 30 timeouts")
PY
# The server's spin handler takes --service-us: no call is faster (the
# inline backlog unbounded: a client that falls behind on a loaded machine
# sends a burst, which must not be refused here).
out=$("$perf" -- open --rate 500 --duration 0.3 --warmup 0.05 --handler spin --service-us 300 \
	--inline-wait-us 4294967295 --json 2>"$err")
python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
assert r["ok"] == r["issued"] == 150 and r["min_us"] >= 300 and r["service_us"] == 300, r
print(f"open, spin 300 us: min {r['min_us']} us")
PY
# Overload of an inline handler (300 us at 10,000/s, 3x its CPU): refused
# EBUSY, each refusal measured apart, none left to its timeout.
out=$("$perf" -- open --rate 10000 --duration 0.5 --warmup 0.1 --handler spin --service-us 300 \
	--inline-wait-us 1000 --json 2>"$err")
python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
assert r["overload"] > 0 and r["timeouts"] == 0 and r["unsent"] == 0, r
assert r["busy"] == r["errors_by_errno"].get("EBUSY", 0) <= r["overload"], r
assert 0 < r["busy_p50_us"] <= r["busy_p99_us"] <= r["busy_max_us"], r
print(f"open, spin 300 us at 3x: {r['ok']} ok, {r['busy']} refused, refusal p99 "
      f"{r['busy_from_send_p99_us']} us from the send")
PY
out=$("$perf" -- open --rate 1000 --duration 1.5 --warmup 0.05 --handler spin --service-us 10 \
	--csv 2>"$err")
python3 - "$out" <<'PY'
import csv, io, sys
rows = list(csv.DictReader(io.StringIO(sys.argv[1])))
assert [r["second"] for r in rows] == ["0", "1", "all"], rows
assert int(rows[0]["issued"]) + int(rows[1]["issued"]) == int(rows[2]["issued"]), rows
assert int(rows[2]["issued"]) == int(rows[2]["ok"]) + int(rows[2]["failed"]) + int(rows[2]["unsent"])
print(f"open --csv: {rows[2]['issued']} calls over {len(rows) - 1} seconds")
PY
# The sweep: every rate's calls accounted for, the results present.
out=$("$perf" -- sweep --rates 1000,3000 --duration 0.3 --warmup 0.05 --refine 1 --json \
	2>"$err")
python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
for k in ["baseline_p99_us", "slo_us", "points", "knee_rps", "max_sustainable_rps"]:
    assert k in r, f"missing {k} in {r}"
rates = [p["offered_rps"] for p in r["points"]]
assert rates[:1] == [1000.0] and rates == sorted(rates) and 2 <= len(rates) <= 3, r
for p in r["points"]:
    assert p["issued"] == p["ok"] + p["failed"] + p["unsent"], p
    assert abs(p["issued"] - p["offered_rps"] * 0.3) <= 1, p
assert abs(r["slo_us"] - 10 * r["baseline_p99_us"]) < 0.01, r
# The definitions (perf/sweep.c), recomputed from the points.
pts = r["points"]
assert r["baseline_p99_us"] == min(p["p99_us"] for p in pts if p["offered_rps"] in (1000, 3000))
for p in pts:
    good = (p["failed"] + p["unsent"] <= 0.001 * p["issued"] and p["p99_us"] <= r["slo_us"] and
            p["achieved_rps"] >= 0.95 * p["issued"] / 0.3 - 0.1)
    assert p["sustainable"] == good, (p, r["slo_us"])
msr = 0
for p in pts:
    if not p["sustainable"]:
        break
    msr = p["offered_rps"]
assert r["max_sustainable_rps"] == msr, r
knee = 0
for p in reversed(pts):
    if p["p99_us"] <= 2 * r["baseline_p99_us"]:
        break
    knee = p["offered_rps"]
assert r["knee_rps"] == knee, r
assert (r["max_sustainable_rps"] > 0) == ("at80" in r), r
print(f"sweep: {len(rates)} rates, max sustainable {r['max_sustainable_rps']}, knee {r['knee_rps']}")
PY
# One side per process, as across namespaces: --role with EAL options.
sock=/tmp/dprpc-perf-smoke-$$.sock
eal="--no-pci --no-huge -m 256 --huge-unlink=never --no-shconf --no-telemetry --log-level=lib.eal:error"
# shellcheck disable=SC2086
"$perf" -l 1 $eal --file-prefix smoke-srv-$$ \
	--vdev "net_memif0,role=server,socket-abstract=no,socket=$sock" -- latency --role server \
	>/dev/null 2>&1 &
srv=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
# shellcheck disable=SC2086
out=$("$perf" -l 0 $eal --file-prefix smoke-cli-$$ \
	--vdev "net_memif0,role=client,socket-abstract=no,socket=$sock" -- latency --role client \
	--duration 0.2 --warmup 0.05 --json 2>"$err")
python3 -c 'import json,sys; r=json.loads(sys.argv[1]); assert r["calls"] > 0, r; print("role mode:", r["calls"], "calls")' "$out"
kill "$srv"
wait "$srv" || { echo "role server exited with $?"; exit 1; }
srv=""

# World: 4 worker processes over memif calling each other all to all, a
# world of 2 beside it; every worker reports, every call is accounted for
# (sent = ok + failed, none failed on a loss-free memif, each OK call
# handled exactly once by a worker), no worker left anything behind.
# What other runs on this machine may have left (never ours to judge).
left_before=$({ compgen -G "/var/run/dpdk/dprpc-perf-*-world*"; compgen -G "/tmp/dprpc-perf-world-*"; } | sort || true)
out=$("$perf" -- world --workers 4 --compare-workers 2 --duration 0.3 --warmup 0.05 --json \
	2>"$err")
python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
need = ["rate_rps", "rendezvous_ms", "shutdown_ms", "startup_ms", "eal_init_ms", "calls_sent",
        "calls_ok", "calls_failed", "calls_refused", "requests_handled", "per_worker", "compare",
        "loadavg"]
missing = [k for k in need if k not in r]
assert not missing, f"missing {missing} in {r}"
for w, n in ((r, 4), (r["compare"], 2)):
    assert w["workers"] == n and len(w["per_worker"]) == n, w
    assert sorted(p["name"] for p in w["per_worker"]) == [f"w{i}" for i in range(n)], w
    assert w["rate_rps"] > 0 and all(p["rate_rps"] > 0 for p in w["per_worker"]), w
    assert all(0 < p["p50_us"] <= p["p99_us"] for p in w["per_worker"]), w
    assert w["calls_failed"] == 0 and w["calls_refused"] == 0, w
    assert w["calls_sent"] == w["calls_ok"] + w["calls_failed"], w
    assert w["calls_ok"] == w["requests_handled"], w
    assert all(p["calls_sent"] == p["calls_ok"] + p["calls_failed"] for p in w["per_worker"]), w
    assert w["calls_sent"] == sum(p["calls_sent"] for p in w["per_worker"]), w
    assert w["rendezvous_ms"] > 0 and w["shutdown_ms"] > 0, w
    # From the last process start: its EAL init, then its rendezvous.
    assert 0 < w["eal_init_ms"] < w["startup_ms"], w
    assert w["rendezvous_ms"] < w["startup_ms"], w
    # Each worker's own call lasts at least as long as the world's, from
    # the last call to the last return, for the one that returns last.
    assert max(p["shutdown_ms"] for p in w["per_worker"]) >= w["shutdown_ms"] - 0.01, w
    assert all(p["shutdown_cpu_ms"] > 0 for p in w["per_worker"]), w
print(f"world: 4 workers {r['rate_rps']:.0f} calls/s, 2 workers {r['compare']['rate_rps']:.0f} calls/s")
PY
left_after=$({ compgen -G "/var/run/dpdk/dprpc-perf-*-world*"; compgen -G "/tmp/dprpc-perf-world-*"; } | sort || true)
if [ "$left_after" != "$left_before" ]; then
	echo "world: EAL runtime or memif socket directories left: $left_after"; exit 1
fi

# Bad usage is an error, not a crash.
if "$perf" -- nosuchmode 2>/dev/null; then echo "accepted a bad mode"; exit 1; fi
if "$perf" -- latency --window 4 2>/dev/null; then echo "accepted latency with a window"; exit 1; fi
if "$perf" -- latency --compare-rpc 2>/dev/null; then echo "accepted --compare-rpc outside rref"; exit 1; fi
if "$perf" -- open --duration 0.1 2>/dev/null; then echo "accepted open without --rate"; exit 1; fi
if "$perf" -- latency --rate 10 2>/dev/null; then echo "accepted --rate outside open"; exit 1; fi
if "$perf" -- sweep --rates 3000,1000 2>/dev/null; then echo "accepted descending rates"; exit 1; fi
if "$perf" -- world --workers 1 2>/dev/null; then echo "accepted a world of 1"; exit 1; fi
if "$perf" -- latency --workers 3 2>/dev/null; then echo "accepted --workers outside world"; exit 1; fi
