#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The digits server measured open loop over memif (run_memif.sh; the
# client's open and sweep modes are dprpc-perf's, client_open.c):
#  1. 500 calls/s for 1 s after 0.3 s of warm-up, each call's timeout
#     10 s: 500 (+-1 at the window's edges) issued, every one answered, no
#     timeout, overload or deadline drop; the histogram holds exactly the
#     calls answered, the per-second lines add up to them; every answer
#     (warm-up included) checked and the server computed exactly those;
#     the accuracy on the test split equals the offline model's (441/450);
#  2. the answers are really checked: the same run with a test split
#     whose expected class for image 0 is wrong exits non-zero, image 0's
#     two answers (k = 0 in the warm-up, k = 450 measured) counted unlike
#     the offline model and the measured one failed -EPROTO (class other);
#  3. a sweep of two rates (maybe a bisection step and the run at 80%:
#     load decides; the two rates alone make 720 calls, the split covered):
#     every point's calls accounted for, the results present, the
#     accuracy equal;
#  4. misuse refused: open without --rate, a mode other than open/sweep,
#     --handler.
#
#   open_memif.sh BUILD_DIR
set -euo pipefail

build=${1:?usage: open_memif.sh BUILD_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
run="$here/run_memif.sh"
out=$(mktemp /tmp/digits-open-XXXXXX)
bad=$(mktemp /tmp/digits-open-bad-XXXXXX.bin)
trap 'rm -f "$out" "$bad"' EXIT

fail() {
	echo "FAIL: $*" >&2
	sed 's/^/    /' "$out" >&2
	exit 1
}

# 1. A low rate: everything answered, right.
"$run" "$build" -- -- open --rate 500 --duration 1 --warmup 0.3 --timeout-us 10000000 \
	--json >"$out" 2>&1 || fail "open: exit status not 0"
python3 - "$out" <<'PY' || fail "open: counts"
import json, re, sys
text = open(sys.argv[1]).read()
objs = [json.loads(l) for l in text.splitlines() if l.startswith("{")]
r = next(o for o in objs if o.get("mode") == "open")
h = next(o for o in objs if "hist_count" in o)
m = next(o for o in objs if o.get("model") == "digits")
assert r["handler"] == "digits.classify" and r["payload_bytes"] == 72, r
assert abs(r["issued"] - 500) <= 1, r["issued"]
assert r["ok"] == r["issued"] and r["failed"] == 0 and r["unsent"] == 0, r
assert r["timeouts"] == r["overload"] == r["deadline"] == r["other"] == 0, r
assert h["hist_count"] == h["ok"] == r["ok"], (h, r)
assert sum(s["ok"] for s in r["per_second"]) == r["ok"], r
assert 0 < r["min_us"] <= r["p50_us"] <= r["p99_us"] <= r["max_us"], r
assert m["mismatched"] == 0 and m["malformed"] == 0, m
assert m["images_answered"] == m["n"] == 450, m
assert m["correct"] == m["offline_correct"] == 441 and m["accuracy_equal"] is True, m
assert m["answers"] >= r["ok"] + 149, (m, r)  # the 0.3 s warm-up's 150 (+-1) too
srv = re.search(r"^server: admitted (\d+), computed (\d+)", text, re.M)
assert srv and int(srv[1]) == int(srv[2]) == m["answers"], (srv and srv.groups(), m)
print(f"ok: open 500/s: {r['ok']} of {r['issued']} answered, p50 {r['p50_us']} us, "
      f"p99 {r['p99_us']} us; accuracy {m['correct']}/{m['n']} equal")
PY
grep -q "accuracy on the test split 441/450 = 0.980000; offline model 441/450 = 0.980000: equal" \
	"$out" || fail "open: the accuracy line"

# 2. A wrong expectation is caught: image 0's expected class changed
# (header 20 bytes, record 0: 64 pixels, label, prediction at byte 85).
cp "$here/digits_test.bin" "$bad"
python3 - "$bad" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[85] = (b[85] + 1) % 10
open(sys.argv[1], "wb").write(b)
PY
if "$run" "$build" -- --testset "$bad" -- open --rate 500 --duration 1 --warmup 0.3 \
	--timeout-us 10000000 --json >"$out" 2>&1; then
	fail "wrong expectations: exit status 0"
fi
python3 - "$out" <<'PY' || fail "wrong expectations: counts"
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
r = next(o for o in objs if o.get("mode") == "open")
m = next(o for o in objs if o.get("model") == "digits")
assert m["mismatched"] == 2 and m["malformed"] == 0, m
assert r["other"] == 1 and r["errors_by_errno"] == {"EPROTO": 1}, r
assert r["ok"] + r["failed"] == r["issued"], r
print(f"ok: wrong expectations: {m['mismatched']} answers unlike them, 1 measured call failed EPROTO")
PY

# 3. A short sweep on one connection.
"$run" "$build" -- -- sweep --rates 600,1200 --duration 0.3 --warmup 0.1 --refine 1 \
	--timeout-us 10000000 --json >"$out" 2>&1 || fail "sweep: exit status not 0"
python3 - "$out" <<'PY' || fail "sweep: counts"
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
s = next(o for o in objs if o.get("mode") == "sweep")
m = next(o for o in objs if o.get("model") == "digits")
assert s["handler"] == "digits.classify", s
assert len(s["points"]) >= 2, s
for p in s["points"]:
    assert p["issued"] == p["ok"] + p["failed"] + p["unsent"], p
    assert abs(p["issued"] - 0.3 * p["offered_rps"]) <= 1, p
for k in ["knee_rps", "max_sustainable_rps", "baseline_p99_us"]:
    assert k in s, k
assert m["mismatched"] == 0 and m["malformed"] == 0 and m["accuracy_equal"] is True, m
print(f"ok: sweep: {len(s['points'])} points, max sustainable {s['max_sustainable_rps']}/s; "
      f"accuracy {m['correct']}/{m['n']} equal")
PY

# 4. Misuse: refused with the usage status (2) before any agent exists
# (no server needed).
world="server 0 02:00:00:00:00:01 10.0.0.1 7000; client 1 02:00:00:00:00:02 10.0.0.2 7000"
prefix="digits-open-misuse-$$"
for args in "open --duration 1" "latency" "open --rate 100 --handler echo"; do
	rc=0
	# shellcheck disable=SC2086
	"$build/examples/model/digits_client" -l 0 --no-pci --no-huge -m 64 --huge-unlink=never --no-shconf \
		--no-telemetry --file-prefix "$prefix" --log-level=lib.eal:error -- \
		--name client --world "$world" --server server --testset "$here/digits_test.bin" \
		-- $args >"$out" 2>&1 || rc=$?
	rm -rf "/var/run/dpdk/$prefix" 2>/dev/null || true
	[ "$rc" = 2 ] || fail "$args: exit status $rc, expected 2 (usage)"
done
echo "ok: misuse refused"
echo "open_memif: 4 of 4 passed"
