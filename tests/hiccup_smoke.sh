#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# dprpc-hiccup runs, its JSON has the documented fields, every call of an
# ideal RPC is counted (RATE per second over the run less 10 ms) and none
# is faster than its service and wire; bad usage exits 2.  The machine's
# figures are not judged: they are what the tool measures.
set -euo pipefail
hiccup=$1
out=$("$hiccup" --duration 0.3 --cpus 0 --json --ideal 1000,1000,1000 --ideal 100000,2000,1000)
python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
assert [c["cpu"] for c in r["cpus"]] == [0], r["cpus"]
need = ["stalls", "lost_over_10us", "lost_over_100us", "lost_over_1ms", "max_us",
        "residual_p90_us", "residual_p99_us", "residual_p999_us", "preempted", "steal", "irq"]
c = r["cpus"][0]
missing = [k for k in need if k not in c]
assert not missing, f"missing {missing}"
assert 0 <= c["lost_over_1ms"] <= c["lost_over_100us"] <= c["lost_over_10us"] <= 1, c
assert c["residual_p90_us"] <= c["residual_p99_us"] <= c["residual_p999_us"], c
a, b = r["ideal"]
assert (a["calls"], b["calls"]) == (290, 29000), (a["calls"], b["calls"])
assert a["client_cpu"] == a["server_cpu"] == 0, a
assert abs(b["load"] - 0.2) < 1e-9, b
for i, floor in ((a, 2.0), (b, 3.0)):
    assert floor <= i["p50_us"] <= i["p90_us"] <= i["p99_us"] <= i["p999_us"] <= i["max_us"] * 1.001, i
print(f"cpu 0: {100 * c['lost_over_10us']:.2f}% lost in stalls > 10 us; "
      f"ideal RPC at 100000/s: p50 {b['p50_us']:.2f} us, p99 {b['p99_us']:.2f} us")
PY
for bad in "--duration 0" "--cpus 0,0" "--cpus 0 --server-cpu 1" "--ideal 1000,1000" "--bogus"; do
	rc=0
	# shellcheck disable=SC2086
	"$hiccup" $bad >/dev/null 2>&1 || rc=$?
	[ "$rc" = 2 ] || { echo "$bad: exit $rc, not 2"; exit 1; }
done
echo "hiccup_smoke: ok"
