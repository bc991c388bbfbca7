#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Run a libFuzzer target for a bounded time, from the committed seeds, with
# its growing corpus and any crash kept in the build directory.
set -euo pipefail
target=$1
seeds=$2
seconds=${3:-60}
work="$(dirname "$target")/fuzz-work-$(basename "$target")"
mkdir -p "$work/corpus" "$work/artifacts"
# -error_exitcode=1: libFuzzer's default, 77, is what meson reads as a
# skipped test, and a crash passed as one.
exec "$target" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
	-error_exitcode=1 -artifact_prefix="$work/artifacts/" "$work/corpus" "$seeds"
