#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The project's entry points (see README):
#   scripts/dev.sh demo    install what is missing, build, run a world of four
#                          worker processes over memif on this machine (a
#                          fifth joins it while it runs)
#                          (examples/world_demo.c; DPRPC_DEMO_WORKERS=N for
#                          more), then dprpc-perf
#   scripts/dev.sh test    install what is missing, build with warnings as
#                          errors, run every test suite (the C suites and
#                          the Python package's pytest suite), the unit suites
#                          again under ASan+UBSan, and the fuzzers (parsers,
#                          reassembly, server budgets) a minute each
#                          (DPRPC_FUZZ_SECONDS); end with
#                          "N passed, N failed"
#   scripts/dev.sh perf [MODE options]   dprpc-perf with the raw floor beside it
#   scripts/dev.sh model [SERVER OPTIONS -- CLIENT OPTIONS]
#                          the digits model server (examples/model) and
#                          its client over a memif pair: accuracy checked
#                          against the offline model, latency p50/p99
#   scripts/dev.sh model-netns [SERVER OPTIONS -- CLIENT OPTIONS]
#                          the same across two network namespaces over
#                          net_af_packet (as root)
#
# Nothing here needs a NIC or hugepages: every DPDK process gets --no-pci,
# --no-huge and a private --file-prefix.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cmd=${1:-}
[ $# -gt 0 ] && shift

build() {
	local dir=$1
	shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" "$top" "$@" >/dev/null || return 1
	fi
	# Quiet when it works; the compiler's words when it does not.
	ninja -C "$dir" >"$dir/ninja.log" 2>&1 || { cat "$dir/ninja.log"; return 1; }
}

# EAL options for one demo process: no PCI, no hugepages, private prefix.
eal_opts() {
	local cpu=$1 prefix=$2 vdev=$3
	echo "-l $cpu --no-pci --no-huge -m 256 --huge-unlink=never --no-shconf --no-telemetry" \
		"--file-prefix $prefix --log-level=lib.eal:error" \
		"--log-level=pmd.net.memif:error --vdev $vdev"
}

demo() {
	build "$top/build"
	local n=${DPRPC_DEMO_WORKERS:-4} ncpu i world="" names=() rc=0
	local worker="$top/build/examples/world_demo"
	ncpu=$(nproc)
	demo_dir=$(mktemp -d /tmp/dprpc-demo-XXXXXX)
	demo_prefixes=()
	demo_pids=()
	# shellcheck disable=SC2317
	cleanup() {
		local p
		for p in "${demo_pids[@]}"; do kill "$p" 2>/dev/null || true; done
		for p in "${demo_prefixes[@]}"; do rm -rf "/var/run/dpdk/$p"; done
		rm -rf "${demo_dir:-}"
	}
	trap cleanup EXIT
	for ((i = 0; i < n; i++)); do
		names+=("w$i")
		world+="w$i $i 02:00:00:00:0a:$(printf %02x $((i + 1))) 10.0.10.$((i + 1)) 7000
"
	done
	# One memif link per pair of workers, their sockets in demo_dir.
	world+="mesh memif:$demo_dir/sock"
	mkdir "$demo_dir/sock"

	# One more worker, not in the map: it joins the running world through
	# w1 at step 6 (when w0 creates the signal file), hot-plugging a memif
	# link to every member.
	local jmac jip joiner
	jmac="02:00:00:00:0a:$(printf %02x $((n + 1)))" jip="10.0.10.$((n + 1))"
	joiner="w$n - $jmac $jip 7000
mesh memif:$demo_dir/sock"
	echo "== a world of $n dprpc workers, $n processes, a memif link per pair (pinned over $ncpu CPUs); w$n joins it later"
	for ((i = 0; i <= n; i++)); do
		local args=(--name "w$i" --world "$world" --join-signal "$demo_dir/join")
		[ "$i" -lt "$n" ] || args=(--name "w$i" --world "$joiner" --join-signal "$demo_dir/join"
			--join "w1 02:00:00:00:0a:02 10.0.10.2 7000")
		demo_prefixes+=("dprpc-demo-$$-$i")
		"$worker" --lcores="0@$((i % ncpu)),1@$(((i + 1) % ncpu))" --no-pci --no-huge \
			-m 256 --huge-unlink=never --no-shconf --no-telemetry --file-prefix "dprpc-demo-$$-$i" \
			--log-level=lib.eal:error --log-level=pmd.net.memif:2 -- "${args[@]}" &
		demo_pids+=($!)
	done
	names+=("w$n")
	for i in "${!demo_pids[@]}"; do
		wait "${demo_pids[$i]}" || { echo "${names[$i]} failed (exit $?)" >&2; rc=1; }
	done
	demo_pids=()
	[ "$(find "$demo_dir/sock" -mindepth 1 | wc -l)" -eq 0 ] ||
		{ echo "memif sockets left behind" >&2; rc=1; }
	for i in "${demo_prefixes[@]}"; do
		[ ! -e "/var/run/dpdk/$i" ] || { echo "/var/run/dpdk/$i left behind" >&2; rc=1; }
	done
	[ $rc -eq 0 ] || return 1
	echo "== every worker exited 0; no memif socket, EAL runtime dir or child left"
	echo
	echo "== what it costs: dprpc-perf, dprpc beside the raw memif echo (the floor), same run"
	"$top/build/perf/dprpc-perf" -- latency --compare-raw --duration 1 --repeat 3
	"$top/build/perf/dprpc-perf" -- throughput --window 32 --compare-raw --duration 1 --repeat 3
	echo
	echo "== RRefs: remote() + to_here() and proxy calls beside rpc_sync, same run"
	"$top/build/perf/dprpc-perf" -- rref --compare-rpc --duration 1 --repeat 3
	echo
	echo "== worlds: 4 workers all to all beside 2 workers, same run"
	"$top/build/perf/dprpc-perf" -- world --workers 4 --compare-workers 2 --duration 1
}

# Sum Criterion's per-suite "Synthesis" lines and pytest's closing line
# (and meson's verdict for anything that printed neither) into one
# "N passed, N failed" line.
summarize() {
	python3 - "$@" <<'PY'
import json, re, sys
passed = failed = 0
syn = re.compile(r"Synthesis: Tested: (\d+) \| Passing: (\d+) \| Failing: (\d+) \| Crashing: (\d+)")
pyt = re.compile(r"^=*\s*((?:\d+ [a-z]+(?:, )?)+) in [\d.]+s", re.M)
import os
for log in sys.argv[1:]:
  if not os.path.exists(log):
    failed += 1       # that build or run never happened
    continue
  with open(log) as f:
    for line in f:
        t = json.loads(line)
        out = (t.get("stdout") or "") + (t.get("stderr") or "")
        m = syn.findall(out)
        p = pyt.findall(out) if t.get("name") == "python" else []
        ok = t.get("result") in ("OK", "EXPECTEDFAIL", "SKIP")
        if p and not m:
            counts = dict((k, int(n)) for n, k in re.findall(r"(\d+) ([a-z]+)", p[-1]))
            passed += counts.get("passed", 0)
            bad = counts.get("failed", 0) + counts.get("error", 0) + counts.get("errors", 0)
            failed += bad
            if not ok and bad == 0:
                failed += 1   # pytest failed outside a test (collection, exit code)
        elif m:
            tested, passing, failing, crashing = map(int, m[-1])
            passed += passing
            failed += failing + crashing
            if not ok and failing + crashing == 0:
                failed += 1   # the suite failed (timeout, leak, exit code) outside a test
        elif ok:
            passed += 1
        else:
            failed += 1
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
}

run_tests() {
	local dir="$top/build-test" asan="$top/build-asan" fuzz="$top/build-fuzz" rc=0
	rm -f "$dir/meson-logs/testlog.json" "$asan/meson-logs/testlog.json" \
		"$fuzz/meson-logs/testlog.json"
	echo "== build (warnings are errors) and every suite"
	if build "$dir" -Dwerror=true -Dbuildtype=debugoptimized; then
		meson test -C "$dir" --print-errorlogs --num-processes 1 || rc=1
	else
		rc=1
	fi
	echo "== the unit suites again under AddressSanitizer and UndefinedBehaviorSanitizer"
	if build "$asan" -Dwerror=true -Dbuildtype=debug -Db_sanitize=address,undefined \
		-Db_lundef=false -Dpython_bindings=disabled; then
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 meson test -C "$asan" \
			--print-errorlogs --num-processes 1 --suite unit || rc=1
	else
		rc=1
	fi
	echo "== libFuzzer on the parsers, reassembly and server budgets (clang, ${DPRPC_FUZZ_SECONDS:-60} s each)"
	if CC=clang build "$fuzz" -Dwerror=true -Dtests=false -Dfuzz=true -Dpython_bindings=disabled \
		-Dfuzz_seconds="${DPRPC_FUZZ_SECONDS:-60}"; then
		meson test -C "$fuzz" --print-errorlogs --num-processes 1 --suite fuzz || rc=1
	else
		rc=1
	fi
	summarize "$dir/meson-logs/testlog.json" "$asan/meson-logs/testlog.json" \
		"$fuzz/meson-logs/testlog.json" || rc=1
	return $rc
}

"$top/scripts/setup-deps.sh"
case "$cmd" in
demo) demo ;;
test) run_tests ;;
model)
	build "$top/build"
	if [ $# -eq 0 ]; then
		set -- -- --window 16 --passes 20
	fi
	"$top/examples/model/run_memif.sh" "$top/build" "$@"
	;;
model-netns)
	build "$top/build"
	if [ $# -eq 0 ]; then
		set -- -- --window 16 --passes 20
	fi
	"$top/examples/model/run_netns.sh" "$top/build" "$@"
	;;
perf)
	build "$top/build"
	"$top/build/perf/dprpc-perf" -- "${@:-latency}" --compare-raw
	;;
*)
	echo "usage: scripts/dev.sh demo | test | perf [MODE options] | model[-netns] [SERVER OPTIONS -- CLIENT OPTIONS]" >&2
	exit 2
	;;
esac
