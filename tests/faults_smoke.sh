#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# dprpc-faults runs both modes end to end and reports what they promise:
# every flood call answered (-EBUSY or a value), and under loss not one
# request whose cancel was confirmed ran (the tool exits non-zero then).
# Latencies and resend counts are not judged here: benchmarks are for perf/.
set -euo pipefail
faults=$1
out=$("$faults" flood --calls 300 --runs 2 --service-us 200)
echo "$out"
[ "$(grep -c '^run ' <<<"$out")" = 2 ]
# ok + busy: every call ended with a value or -EBUSY.
python3 - "$out" <<'PY'
import re, sys
for line in sys.argv[1].splitlines():
    m = re.match(r"run +\d+.*: ok (\d+) busy (\d+) ", line)
    if m:
        assert int(m.group(1)) + int(m.group(2)) == 300, line
        assert int(m.group(1)) >= 1, line
PY
out=$("$faults" cancel --calls 300 --runs 2)
echo "$out"
grep -q '^total: [1-9][0-9]* cancels, [0-9]* confirmed stopped of which 0 ran;' <<<"$out"
