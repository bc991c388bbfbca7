#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The digits server end to end over memif (two processes, run_memif.sh):
#  1. batched on a worker thread, window 16, two passes: every answer is
#     the offline model's and the accuracy equals the offline accuracy
#     (441/450) -- the client checks and exits non-zero otherwise;
#  2. the same, batched on the poller; 3. the same, inline (unbatched);
#  4. overload: queue 4, batches that never fill (max batch 8) and close
#     after 1 s: of 32 calls sent at once exactly 4 are admitted and 28
#     answered -EBUSY at admission, as the server counts, with a
#     retry-after hint (dprpc_reply_busy(): before any batch, the agent's
#     estimate, at least 100 us);
#  5. deadlines: calls with a 50 ms timeout (dprpc carries it to the
#     server as the request's deadline) wait for a batch that closes after
#     200 ms: all 8 fail past their deadline (-ETIME from the server, or
#     -ETIMEDOUT from the client's timer), none answered, and the server
#     took all 8 out of its queue as expired, none computed;
#  6. cancellation: 8 calls wait for a batch that closes after 1 s; once
#     the server has admitted them all, the client cancels every second one
#     (dprpc_future_cancel()): 4 fail -ECANCELED at once, the server
#     receives 4 CANCEL frames and takes the 4 out unbatched, computes the
#     other 4 in one batch, and the client gets those 4 answers.
#
#   e2e_memif.sh BUILD_DIR
set -euo pipefail

build=${1:?usage: e2e_memif.sh BUILD_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
run="$here/run_memif.sh"
out=$(mktemp /tmp/digits-e2e-XXXXXX)
trap 'rm -f "$out"' EXIT

fail() {
	echo "FAIL: $*" >&2
	sed 's/^/    /' "$out" >&2
	exit 1
}
# field NAME: from the client's JSON line
field() {
	grep '^{' "$out" | sed -E "s/.*\"$1\": ([0-9.]+).*/\1/"
}
# server COUNTER: from the server's last line ("... COUNTER N ...")
server_line() { grep '^server: admitted' "$out"; }

step() {
	local name=$1
	shift
	if ! "$run" "$build" "$@" >"$out" 2>&1; then
		fail "$name: exit status not 0"
	fi
	echo "ok: $name: $(grep -E '^client: (accuracy|[0-9]+ sent)' "$out" | tr '\n' ' ')"
}

step "batched (worker thread)" -- --window 16 --passes 2 --json
grep -q "accuracy on the test split 441/450 = 0.980000; offline model 441/450 = 0.980000: equal" \
	"$out" || fail "batched: accuracy not the offline 441/450"
[ "$(field mismatched)" = 0 ] || fail "answers unlike the offline model"
step "batched (poller)" --compute poller -- --window 16 --passes 1 --json
grep -q "441/450 = 0.980000: equal" "$out" || fail "batched on the poller: accuracy"
step "inline" --mode inline -- --window 4 --passes 1 --json
grep -q "441/450 = 0.980000: equal" "$out" || fail "inline: accuracy"

step "overload" --queue-max 4 --max-batch 8 --max-delay-us 1000000 -- \
	--window 32 --count 32 --json
[ "$(field busy)" = 28 ] || fail "overload: $(field busy) refused busy, expected 28"
[ "$(field answered)" = 4 ] || fail "overload: $(field answered) answered, expected 4"
[ "$(field retry_after_max_us)" -ge 100 ] ||
	fail "overload: retry-after hint $(field retry_after_max_us) us, expected at least 100"
server_line | grep -q "admitted 4, computed 4 in 1 batches (largest 4), refused: 28 full" ||
	fail "overload: server counts"

step "deadline" --max-batch 64 --max-delay-us 200000 -- \
	--window 8 --count 8 --timeout-us 50000 --json
late=$(($(field expired) + $(field timed_out)))
[ "$late" = 8 ] || fail "deadline: $late past their deadline, expected 8"
[ "$(field answered)" = 0 ] || fail "deadline: $(field answered) answered, expected 0"
server_line | grep -q "admitted 8, computed 0 in 0 batches.*skipped in queue: 8 expired, 0 cancelled" ||
	fail "deadline: server counts"

step "cancel" --max-batch 64 --max-delay-us 1000000 -- \
	--window 8 --count 8 --cancel-every 2 --cancel-queued --json
[ "$(field cancelled)" = 4 ] || fail "cancel: $(field cancelled) cancelled, expected 4"
[ "$(field answered)" = 4 ] || fail "cancel: $(field answered) answered, expected 4"
server_line | grep -q "admitted 8, computed 4 in 1 batches.*skipped in queue: 0 expired, 4 cancelled; cancels received 4$" ||
	fail "cancel: server counts"
echo "e2e_memif: 6 of 6 passed"
