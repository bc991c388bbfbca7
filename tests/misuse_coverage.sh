#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every dprpc_* function the shared library exports has a test of its own in
# the misuse suite (tests/test_misuse.c names each test after its symbol).
#   misuse_coverage.sh LIBDPRPC_SO TEST_MISUSE
set -euo pipefail
lib=$1
suite=$2
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | sort -u)
tested=$("$suite" --list 2>/dev/null | sed -n 's/^[^a-z]*\(dprpc_[a-z0-9_]*\)$/\1/p' | sort -u)
missing=$(comm -23 <(echo "$exported") <(echo "$tested"))
n=$(echo "$exported" | wc -l)
if [ -n "$missing" ]; then
	echo "exported without a misuse test:"
	echo "$missing"
	exit 1
fi
echo "all $n exported functions have a misuse test"
