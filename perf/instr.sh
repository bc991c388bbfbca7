#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Instructions per call, by function, of one side of a W=32 run, counted by
# valgrind's callgrind: a figure the machine's load and speed do not move
# (perf/RESULTS.md: rates here change from minute to minute, so a small
# change of the per-call cost is lost in their noise).
#
#   perf/instr.sh BUILD server|client [BUILD_B]
#
# INSTR_OPTS, if set, is added to both sides' dprpc-perf options, e.g.
# INSTR_OPTS="--auth header" for a world with a key.
#
# One side runs under callgrind (about 50 times slower), the other natively
# on the other CPU, both dprpc-perf of BUILD, over memif, `throughput
# --window 32` for 4 s with no resends (--retransmit-us 0: the slow side
# would otherwise be resent to) and, for the server, no inline backlog
# bound (its rejections would be counted as calls).  The report divides
# each function's own instructions (callgrind's self cost; dprpc's, libc's
# and libsodium's, the tags' SipHash) by the calls the
# run sent (each one a request on the server) and lists those above 1 per call, then their sum without
# the poll loop's own functions and timers (they run per poll or per tick,
# not per call, and a side slowed by callgrind polls differently) and
# without start-up.  With BUILD_B, both builds side by side.
#
# Needs valgrind (Debian's package).  Cleans up its sockets and EAL
# runtime directories.
set -euo pipefail

usage() {
	echo "usage: perf/instr.sh BUILD server|client [BUILD_B]" >&2
	exit 2
}
[ $# -ge 2 ] || usage
side=$2
[ "$side" = server ] || [ "$side" = client ] || usage
command -v valgrind >/dev/null || { echo "perf/instr.sh: no valgrind" >&2; exit 1; }
work=$(mktemp -d /tmp/dprpc-instr-XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work" /var/run/dpdk/dprpc-instr-$$-*
}
trap cleanup EXIT

eal="--no-pci --no-huge -m512 --huge-unlink=never --no-shconf --no-telemetry --log-level=lib.eal:error --log-level=pmd.net.memif:error"
opts="throughput --window 32 --duration 4 --warmup 1 --retransmit-us 0 ${INSTR_OPTS:-}"

# measure BUILD TAG: callgrind's output in $work/TAG.out, calls in $work/TAG.calls
measure() {
	local b=$1 tag=$2 sock=$work/$2.sock perf=$1/perf/dprpc-perf cg=$work/$2.out
	local vg=(valgrind --tool=callgrind "--callgrind-out-file=$cg") bound=()
	# Builds older than the inline backlog bound have no such option.  The
	# usage whole first: it exits non-zero, which pipefail would make the
	# pipeline's status (and grep -q quitting early could kill it with
	# SIGPIPE), so the bound was never given.
	local usage
	usage=$("$perf" -- --help 2>&1 || true)
	if grep -q inline-wait-us <<<"$usage"; then
		bound=(--inline-wait-us 4294967295)
	fi
	local srv=("$perf" $eal -l1 --file-prefix "dprpc-instr-$$-$tag-s"
		"--vdev=net_memif0,role=server,socket-abstract=no,socket=$sock" -- $opts
		"${bound[@]}" --role server)
	local cli=("$perf" $eal -l0 --file-prefix "dprpc-instr-$$-$tag-c"
		"--vdev=net_memif0,role=client,socket-abstract=no,socket=$sock" -- $opts
		--role client --json)
	[ -x "$perf" ] || { echo "perf/instr.sh: no $perf" >&2; exit 2; }
	if [ "$side" = server ]; then
		taskset -c 1 "${vg[@]}" "${srv[@]}" >"$work/$tag.srv" 2>&1 &
		pids=($!)
		sleep 12 # the server's EAL under callgrind
		taskset -c 0 "${cli[@]}" >"$work/$tag.cli" 2>&1 || true
		# The server under callgrind is told to write its counts now.
		callgrind_control -d "${pids[0]}" >/dev/null 2>&1 || true
		sleep 3
		kill "${pids[0]}" 2>/dev/null || true
		wait "${pids[0]}" 2>/dev/null || true
		cg=$(ls "$cg".* 2>/dev/null | head -1 || true)
		[ -n "$cg" ] || cg=$work/$tag.out
	else
		taskset -c 1 "${srv[@]}" >"$work/$tag.srv" 2>&1 &
		pids=($!)
		sleep 1
		taskset -c 0 "${vg[@]}" "${cli[@]}" >"$work/$tag.cli" 2>&1 || true
		kill "${pids[0]}" 2>/dev/null || true
		wait "${pids[0]}" 2>/dev/null || true
	fi
	pids=()
	grep -o '"calls_sent": [0-9]*' "$work/$tag.cli" | grep -o '[0-9]*$' >"$work/$tag.calls" ||
		{ echo "perf/instr.sh: the $tag run completed no call" >&2; tail -5 "$work/$tag.cli" >&2; exit 1; }
	callgrind_annotate --inclusive=no --threshold=100 "$cg" >"$work/$tag.txt" 2>/dev/null
}

measure "$1" a
[ $# -lt 3 ] || measure "$3" b
python3 - "$work" "$side" $# <<'PY'
import re, sys
work, side, nargs = sys.argv[1], sys.argv[2], int(sys.argv[3])
tags = ['a', 'b'] if nargs >= 3 else ['a']
# Per poll or per tick, not per call; or start-up.
skip = re.compile(r'^(dp_poll_locked|dp_drain_tx_ring|dprpc_poll|dp_tx_flush|dp_poll_trylock|'
	r'dp_poll_unlock|dp_tx_fill|dp_rcu_poll_end|dp_rcu_quiescent|rr_rcu_poll_end|rr_rcu_quiescent|dp_liveness|'
	r'dp_client_timers|dp_run_timers|rr_sweep|rr_ctx_timer|co_ctx_timer|fut_cancelled|'
	r'perf_rpc_server|perf_rpc_client|rpc_server|rpc_client|run_side|msort.*|cmp_u32|__memset.*|_IO_.*|.*printf.*|'
	r'_dl_.*|__str.*|_itoa_word|realpath.*|_int_malloc|malloc|free|fut_pool_alloc|'
	r'fut_mempool_obj_init|dprpc_future_pool_create|__sigsetjmp)$')
rows = {}
for t in tags:
	calls = int(open('%s/%s.calls' % (work, t)).read())
	# With debug info, callgrind also lists a function's code inlined from
	# a header as its own line, "header.h:function", with no [object]:
	# such a line belongs to the object its function is named with
	# elsewhere (a build with -g counted 986 per call, 1,388 without).
	lines = [re.match(r'\s*([\d,]+) \(\s*[\d.]+%\)\s+\S*?:(\S+)(?: \[(\S+)\])?\s*$', l)
		for l in open('%s/%s.txt' % (work, t))]
	lines = [m for m in lines if m]
	obj = {m.group(2): m.group(3) for m in lines if m.group(3)}
	for m in lines:
		o = m.group(3) or obj.get(m.group(2), '')
		if 'dprpc' not in o and 'libc' not in o and 'libsodium' not in o:
			continue
		fn = m.group(2).split('.lto_priv')[0].split('.isra')[0]
		rows.setdefault(fn, {})[t] = rows.get(fn, {}).get(t, 0) + int(m.group(1).replace(',', '')) / calls
print('%s side, instructions per call (callgrind self cost / calls sent)' % side)
print('%-32s' % 'function' + ''.join('%10s' % ('A', 'B')[i] for i in range(len(tags))))
tot = dict.fromkeys(tags, 0.0)
for fn, v in sorted(rows.items(), key=lambda kv: -max(kv[1].values())):
	if max(v.values()) < 1:
		continue
	mark = '' if not skip.match(fn) else '  (not counted)'
	print('%-32s' % fn + ''.join('%10.1f' % v.get(t, 0) for t in tags) + mark)
	if not skip.match(fn):
		for t in tags:
			tot[t] += v.get(t, 0)
print('%-32s' % 'per call, counted' + ''.join('%10.0f' % tot[t] for t in tags))
if len(tags) == 2 and tot['a'] > 0:
	print('B/A %.3f' % (tot['b'] / tot['a']))
PY
