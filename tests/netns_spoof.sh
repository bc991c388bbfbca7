#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Spoofing a world with a key (issue 30, docs/security.md): alice and bob,
# each on a DPDK net_af_packet port bound to its veth, and a third host,
# the attacker (tests/netns/spoof.py: no key, not in the world map), on one
# L2 segment: three namespaces on a Linux bridge made a hub
# (netns_bridge_hub: every frame flooded to every port), so the attacker
# sniffs every frame of the world.  The world map gives every MAC (no ARP
# to muddle the counts).  The key: 32 random bytes, mode 0600.
#
#   netns_spoof.sh BUILD_DIR SOURCE_DIR
#
# 1. An earlier incarnation of the world: alice calls bob for 2 s holding
#    an RRef of 4000 bytes on him (tests/world/world_worker --calls-for
#    --hold-rref: every to_here() is a FETCH, its answer three frames
#    and ACKs), while the attacker captures it all (spoof.py sniff); both
#    exit 0.  With the key, spoof.py recomputes every captured frame's
#    tag and world id (spoof.py tags): they must all agree, so the
#    "other world" frames it makes with a key of its own are what another
#    world would send.  The key is used for nothing else.
# 2. The attack: alice and bob started again (new incarnations), alice
#    calling bob for 8 s holding an RRef on him, both printing their
#    counters (--counters) once their first calls are done ("before") and
#    after alice's calls and a world barrier ("after").  The attacker
#    sniffs from before they start until both printed "before" and alice
#    has called for 2 s, learns the world from the frames, and sends
#    (spoof.py attack): forged REQUESTs (the handler it saw, new slots),
#    a forged RRef DELETE of alice's RRef, forged PING, PONG, LEAVE,
#    CLOSE, CANCEL, JOIN, frames of a new incarnation of each worker, all
#    of the world's id with a tag of zeros or random; the same kinds of
#    another world (its own key's id and tags); replays of what it
#    sniffed (every CONTROL frame, requests, responses and ACKs), each 3
#    times; and replays of the earlier incarnation's capture (part 1).
#    It must be done before alice's calls end.  Then:
#    - every call succeeded, every fetch of the RRef too (the last after
#      the calls), no worker was declared down, restarted or left (the
#      "after" counters), both exit 0 (no call failed, nothing leaked);
#    - no forged or replayed request ran: each worker ran "mul" for each
#      caller exactly as often as that caller had its "mul" calls
#      answered, and bob ran "fill" once (the RRef's creation);
#    - each receiver's counters, "after" less "before" (the drops of the
#      handshake of two new incarnations, unconfirmed, come before), account
#      for what the attacker sent it: auth_failed = its forged frames,
#      other_world = its other world's, unconfirmed = its replays of the
#      earlier incarnation (each an incarnation it never met), and replayed
#      between (K - 1) * D and K * D for D distinct CONTROL frames replayed
#      K times (a copy of a frame the receiver had dropped before it knew
#      its sender, unconfirmed, is fresh to its window once).  Equal, not
#      at least: the attacker paces its frames and the receivers poll, so
#      none is lost on the way (a shortfall would fail here, and show).
#      The replays of requests, responses and ACKs are not refused by
#      the tag (they carry a right one) but by the calls' own state: they
#      are printed (duplicate, stale, requests answered again), and judged
#      by the first two checks.
# 3. The same attack on the same world without a key (no part-1 capture:
#    an incarnation of a keyless world is taken from its first frame):
#    it must harm it, or the attacker was not sending anything useful:
#    alice must have run "mul" for "bob" more often than bob called her
#    (a forged request ran).  The rest (alice's calls, her RRef, the
#    peers she took for restarted or left, her exit status) is printed.
# 4. A dead worker's frames replayed: with the key, bob is killed 2 s into
#    alice's calls, and the attacker replays his last 50 responses
#    (spoof.py revive: right tags, his incarnation alice knows) to her
#    every 0.1 s for 4 s, and one more 7 s after his death.  Every replay
#    must be dropped as replayed (the replay window covers every frame),
#    and her peers_down must be 1: no replay kept him up, none took him up
#    again once down.  How long her call pending at his death lasted is
#    printed (peer_timeout_us is 1 s).  Her calls fail and she exits
#    non-zero: expected.
#
# Exit 77 (skip) when no namespace can be created (not root, no
# CAP_SYS_ADMIN).  Everything is cleaned up on any exit: namespaces (and
# with them the veths and the bridge), processes, files, EAL runtime
# directories.
set -Eeuo pipefail

build=${1:?usage: netns_spoof.sh BUILD_DIR SOURCE_DIR}
src=${2:?usage: netns_spoof.sh BUILD_DIR SOURCE_DIR}
worker="$build/tests/world_worker"
spoof="$src/tests/netns/spoof.py"
# shellcheck source=tests/netns/netns.sh
. "$src/tests/netns/netns.sh"


[ -x "$worker" ] || fail "$worker is not built"
py=$(command -v python3) || fail "no python3"
"$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || fail "$py is older than 3.11"
netns_can_create || skip "cannot create a network namespace here (needs root or CAP_SYS_ADMIN)"

netns_traps

netns_bridge_setup 3
netns_bridge_hub
names=(alice bob)
A=2 # the attacker's host
world="alice 0 ${NETNS_BR_MAC[0]} ${NETNS_BR_IP[0]} 7000; bob 1 ${NETNS_BR_MAC[1]} ${NETNS_BR_IP[1]} 7000"
key="$NETNS_TMP/world.key"
(
	umask 077
	head -c 32 /dev/urandom >"$key"
)
[ "$(stat -c %a "$key")" = 600 ] || fail "the key file is not mode 0600"
say "alice, bob and the attacker on a hub (br0 in $NETNS_BR_SW, no learning); world: $world"

# start TAG I [WORKER OPTION...]: world_worker names[I] in host I, in the
# background; its pid in pids[I].
pids=()
start() {
	local tag=$1 i=$2
	shift 2
	netns_world_worker "${NETNS_BR_NS[i]}" "${NETNS_BR_IF[i]}" "$NETNS_TMP/$tag-${names[i]}.log" \
		"$(netns_prefix "$tag-$i")" "${names[i]}" "$world" "$@"
	pids[i]=$NETNS_PID
}

# attacker TAG CMD [OPTION...]: spoof.py CMD in the attacker's host, in the
# background, sniffing until $NETNS_TMP/TAG.go exists; its pid in apid.
apid=""
attacker() {
	local tag=$1 cmd=$2
	shift 2
	rm -f "$NETNS_TMP/$tag.go"
	netns_spawn 90 "${NETNS_BR_NS[A]}" "$NETNS_TMP/$tag-attacker.log" "$py" "$spoof" "$cmd" \
		--iface "${NETNS_BR_IF[A]}" --until "$NETNS_TMP/$tag.go" "$@"
	apid=$NETNS_PID
	for _ in $(seq 200); do
		grep -q "^spoof: sniffing" "$NETNS_TMP/$tag-attacker.log" && return 0
		kill -0 "$apid" 2>/dev/null || fail "$tag: the attacker ended before sniffing"
		sleep 0.05
	done
	fail "$tag: the attacker is not sniffing after 10 s"
}

# finish TAG I...: wait for workers I... (90 s at most); each must exit 0
# having said "clean exit"; their runtime directories must be gone.
finish() {
	local tag=$1 i
	shift
	for i in "$@"; do
		netns_world_finish "$tag: ${names[i]}" "${pids[i]}" "$NETNS_TMP/$tag-${names[i]}.log" \
			"$(netns_prefix "$tag-$i")" "^${names[i]}: clean exit"
	done
}

# wait_log TAG I TEXT SECS: until names[I]'s log in TAG has a line TEXT.
wait_log() {
	local _
	for _ in $(seq $(($4 * 20))); do
		grep -q "^${names[$2]}: $3" "$NETNS_TMP/$1-${names[$2]}.log" && return 0
		kill -0 "${pids[$2]}" 2>/dev/null || fail "$1: ${names[$2]} ended before \"$3\""
		sleep 0.05
	done
	fail "$1: ${names[$2]} did not say \"$3\" within $4 s"
}

# field TAG I WHEN KEY: KEY=N from the last "counters WHEN", "mul WHEN" or
# "drops WHEN" line of names[I] in TAG (0 if the line has no KEY).
field() {
	local v
	v=$(grep "^${names[$2]}: [a-z]* $3:" "$NETNS_TMP/$1-${names[$2]}.log" |
		sed -n "s/.*[ :]$4=\([0-9,]*\).*/\1/p" | tail -n 1) || true
	echo "${v:-0}"
}

# delta TAG I KEY: KEY's rise in names[I]'s counters from "before" to "after".
delta() {
	echo $(($(field "$1" "$2" after "$3") - $(field "$1" "$2" before "$3")))
}

# rank_of LIST R: the R-th number of a comma-separated list.
rank_of() {
	echo "$1" | cut -d, -f$(($2 + 1))
}

# sent TAG R KEY: what the attacker said it sent to rank R (KEY=N).
sent() {
	sed -n "s/^spoof: to rank $2:.* $3=\([0-9]*\).*/\1/p" "$NETNS_TMP/$1-attacker.log"
}

# attack TAG [WORKER OPTION...]: alice calls bob for 8 s holding an RRef
# on him, both printing their counters; the attacker, sniffing from before
# they start, is let go once both printed "before" and alice has called
# for 2 s, and must be done before her calls end.  Leaves the workers
# running (pids) and the attacker's exit status in arc.
arc=0
attack() {
	local tag=$1 t_go
	shift
	attacker "$tag" attack "$@"
	start "$tag" 0 --calls-for 8 --hold-rref 4000 --counters "${worker_opts[@]}"
	start "$tag" 1 --counters "${worker_opts[@]}"
	wait_log "$tag" 0 "calling the others" 60
	wait_log "$tag" 1 "counters before" 60
	sleep 2
	: >"$NETNS_TMP/$tag.go"
	t_go=$(date +%s.%N)
	arc=0
	wait "$apid" || arc=$?
	say "$tag: the attacker sent for $(since "$t_go") s, exit status $arc"
	sed "s/^/    /" "$NETNS_TMP/$tag-attacker.log"
	if grep -q "^alice: [0-9]* calls in" "$NETNS_TMP/$tag-alice.log"; then
		fail "$tag: alice's calls ended before the attacker was done"
	fi
}

# ---- 1. an earlier incarnation, captured ----
t0=$(date +%s.%N)
worker_opts=(--key-file "$key")
attacker early sniff --save "$NETNS_TMP/early.pcap"
start early 0 --calls-for 2 --hold-rref 4000 "${worker_opts[@]}"
start early 1 "${worker_opts[@]}"
finish early 0 1
: >"$NETNS_TMP/early.go"
rc=0
wait "$apid" || rc=$?
sed "s/^/    /" "$NETNS_TMP/early-attacker.log"
[ "$rc" = 0 ] || fail "1. the capture exited with $rc"
rc=0
"$py" "$spoof" tags --capture "$NETNS_TMP/early.pcap" --key-file "$key" \
	>"$NETNS_TMP/tags.txt" 2>&1 || rc=$?
sed "s/^/    /" "$NETNS_TMP/tags.txt"
[ "$rc" = 0 ] || fail "1. spoof.py's tags or world id disagree with the library's"
say "1. an earlier incarnation of the keyed world captured; spoof.py's SipHash-2-4 and" \
	"key derivation agree with every tag and world id captured ($(since "$t0") s)"

# ---- 2. the attack on the world with a key ----
t0=$(date +%s.%N)
attack keyed --old "$NETNS_TMP/early.pcap" --repeat 3
[ "$arc" = 0 ] || fail "2. the attacker exited with $arc"
finish keyed 0 1
grep -q "^alice: [0-9]* calls in .*, 0 failed" "$NETNS_TMP/keyed-alice.log" ||
	fail "2. alice's calls did not all succeed"
grep -q "^alice: the RRef on bob held through the calls: [0-9]* fetches, 0 failed" \
	"$NETNS_TMP/keyed-alice.log" || fail "2. alice's RRef on bob did not stay valid"
for i in 0 1; do
	for k in peers_restarted peers_down peers_left calls_failed; do
		[ "$(field keyed "$i" after "$k")" = 0 ] ||
			fail "2. ${names[i]}: $k=$(field keyed "$i" after "$k") after the attack"
	done
done
for i in 0 1; do
	ran=$(field keyed "$i" after ran_from)
	for j in 0 1; do
		ok=$(field keyed "$j" after answered_by)
		[ "$(rank_of "$ran" "$j")" = "$(rank_of "$ok" "$i")" ] ||
			fail "2. ${names[i]} ran \"mul\" $(rank_of "$ran" "$j") times for ${names[j]}," \
				"who had $(rank_of "$ok" "$i") answered: a forged or replayed request ran"
	done
done
[ "$(field keyed 1 after fill_ran)" = 1 ] && [ "$(field keyed 0 after fill_ran)" = 0 ] ||
	fail "2. \"fill\" ran $(field keyed 0 after fill_ran) times on alice and" \
		"$(field keyed 1 after fill_ran) on bob, not 0 and 1"
say "2. every call and fetch succeeded, alice's RRef on bob stayed, nobody was taken for" \
	"down, restarted or left, no forged or replayed request ran"
K=3
for i in 0 1; do
	forged=$(sent keyed "$i" forged)
	other=$(sent keyed "$i" other_world)
	old=$(sent keyed "$i" old)
	ctl=$(sent keyed "$i" replay_control)
	D=$(sent keyed "$i" replay_control_distinct)
	data=$(sent keyed "$i" replay_data)
	DD=$(sent keyed "$i" replay_distinct)
	[ -n "$forged" ] && [ "$forged" -gt 0 ] && [ "$other" -gt 0 ] && [ "$old" -gt 0 ] &&
		[ "$D" -gt 0 ] && [ "$data" -gt 0 ] ||
		fail "2. the attacker sent ${names[i]} too little: forged '$forged'," \
			"other_world '$other', old '$old', control replays '$D', data replays '$data'"
	say "   to ${names[i]}: forged $forged, other world $other, earlier incarnation $old," \
		"control replays $ctl ($D frames x $K), request/response/ACK replays $data"
	say "   ${names[i]} counted: auth_failed $(delta keyed "$i" auth_failed), other_world $(delta keyed "$i" other_world)," \
		"unconfirmed $(delta keyed "$i" unconfirmed), replayed $(delta keyed "$i" replayed); duplicate $(delta keyed "$i" duplicate)," \
		"stale $(delta keyed "$i" stale), requests answered again $(delta keyed "$i" requests_resent)," \
		"old_session $(delta keyed "$i" old_session), wrong_incarnation $(delta keyed "$i" wrong_incarnation)"
	[ "$(delta keyed "$i" auth_failed)" = "$forged" ] ||
		fail "2. ${names[i]}: auth_failed rose by $(delta keyed "$i" auth_failed), not the $forged forged frames"
	[ "$(delta keyed "$i" other_world)" = "$other" ] ||
		fail "2. ${names[i]}: other_world rose by $(delta keyed "$i" other_world), not the $other sent"
	[ "$(delta keyed "$i" unconfirmed)" = "$old" ] ||
		fail "2. ${names[i]}: unconfirmed rose by $(delta keyed "$i" unconfirmed), not the $old replays" \
			"of the earlier incarnation"
	# Every frame passes the replay window: all replays count, but a
	# copy of a frame the receiver dropped before it was in the window
	# (unconfirmed at start-up) counts once as fresh.
	[ "$(delta keyed "$i" replayed)" -ge $(((K - 1) * DD)) ] &&
		[ "$(delta keyed "$i" replayed)" -le $((ctl + data)) ] ||
		fail "2. ${names[i]}: replayed rose by $(delta keyed "$i" replayed), not in" \
			"[$(((K - 1) * DD)), $((ctl + data))] for $DD frames replayed $K times"
done
say "2. the attack on the keyed world refused and counted, the world unchanged ($(since "$t0") s)"

# ---- 3. the same attack on a world without a key ----
t0=$(date +%s.%N)
worker_opts=()
attack keyless --repeat 3
[ "$arc" = 0 ] || fail "3. the attacker exited with $arc"
rc=0
wait "${pids[0]}" || rc=$?
netns_stop "${pids[1]}" 5 || true
for i in 0 1; do
	sed "s/^/    /" "$NETNS_TMP/keyless-${names[i]}.log" | grep -v "mp action" || true
done
# alice's last counters: "after", or "at exit" if she failed first.
last=$(grep "^alice: mul [a-z ]*:" "$NETNS_TMP/keyless-alice.log" | tail -n 1)
ran=$(echo "$last" | sed -n 's/.* ran_from=\([0-9,]*\).*/\1/p')
called=$(rank_of "$(field keyless 1 before answered_by)" 0)
[ -n "$ran" ] && [ -n "$called" ] || fail "3. no counters from alice or bob"
forged_ran=$(($(rank_of "$ran" 1) - called))
[ "$forged_ran" -gt 0 ] ||
	fail "3. without a key alice ran \"mul\" $(rank_of "$ran" 1) times for bob, who called" \
		"her $called times: no forged request ran, the attack did nothing"
when=$(echo "$last" | sed -n 's/^alice: mul \([a-z ]*\):.*/\1/p')
say "3. without a key: alice ran $forged_ran forged \"mul\" requests \"from bob\" (ran" \
	"$(rank_of "$ran" 1), bob called $called)"
blast=$(grep "^bob: mul [a-z ]*:" "$NETNS_TMP/keyless-bob.log" | tail -n 1) || true
bran=$(echo "$blast" | sed -n 's/.* ran_from=\([0-9,]*\).*/\1/p')
aok=$(echo "$last" | sed -n 's/.* answered_by=\([0-9,]*\).*/\1/p')
[ -n "$bran" ] && say "   observed, not judged: bob ran \"mul\" $(rank_of "$bran" 0) times for" \
	"alice, who had $(rank_of "$aok" 1) answered"
say "   observed, not judged: alice exited with $rc; her counters $when:" \
	"peers_restarted $(field keyless 0 "$when" peers_restarted)," \
	"peers_left $(field keyless 0 "$when" peers_left)," \
	"peers_down $(field keyless 0 "$when" peers_down)"
for i in 0 1; do
	grep -E "^(${names[i]}: (call [0-9]+ to|to_here|[0-9]+ calls in|the RRef|barrier)|dprpc: agent ${names[i]}: worker)" \
		"$NETNS_TMP/keyless-${names[i]}.log" | sort | uniq -c | sort -rn | head -n 6 |
		sed "s/^ */   observed: /" || true
done
say "3. the same attack harms a world without a key ($(since "$t0") s)"

# ---- 4. a dead worker's frames replayed ----
t0=$(date +%s.%N)
worker_opts=(--key-file "$key")
attacker revive revive --rank 1 --dead "$NETNS_TMP/revive.dead" --every 0.1 --for 4 --again 7
start revive 0 --calls-for 10 --counters "${worker_opts[@]}"
start revive 1 "${worker_opts[@]}"
wait_log revive 0 "calling the others" 60
sleep 2
: >"$NETNS_TMP/revive.go"
for _ in $(seq 200); do
	grep -q "^spoof: kept" "$NETNS_TMP/revive-attacker.log" && break
	kill -0 "$apid" 2>/dev/null || fail "4. the attacker ended before it kept bob's frames"
	sleep 0.05
done
# The worker itself, not its timeout (as netns_bridge.sh part 5).
victim=$(ip netns pids "${NETNS_BR_NS[1]}")
if ! [[ $victim =~ ^[0-9]+$ ]] || [ "$(cat "/proc/$victim/comm")" != world_worker ]; then
	fail "4. bob's namespace holds \"$victim\", not one world_worker"
fi
kill -KILL "$victim"
: >"$NETNS_TMP/revive.dead"
wait "${pids[1]}" 2>/dev/null || true
rc=0
wait "${pids[0]}" || rc=$?
arc=0
wait "$apid" || arc=$?
sed "s/^/    /" "$NETNS_TMP/revive-attacker.log"
[ "$arc" = 0 ] || fail "4. the attacker exited with $arc"
longest=$(sed -n 's/^alice: [0-9]* calls in .* the longest \([0-9.]*\) ms.*/\1/p' \
	"$NETNS_TMP/revive-alice.log")
replays=$(sed -n 's/^spoof: replayed \([0-9]*\) of them.*/\1/p' "$NETNS_TMP/revive-attacker.log")
[ -n "$replays" ] && [ "$replays" -gt 0 ] || fail "4. the attacker replayed nothing"
[ "$(field revive 0 "at exit" peers_down)" = 1 ] ||
	fail "4. alice's peers_down is $(field revive 0 "at exit" peers_down), not 1:" \
		"a replay of bob's took him up again"
[ "$(field revive 0 "at exit" replayed)" -ge "$replays" ] ||
	fail "4. alice counted $(field revive 0 "at exit" replayed) replayed, fewer than the $replays" \
		"replays of bob's frames"
say "4. bob killed 2 s into alice's calls, $replays of his last responses replayed to her" \
	"0.1 to 4 s after, one more 7 s after: all dropped as replayed" \
	"($(field revive 0 "at exit" replayed)), her peers_down 1; her call pending at his death" \
	"lasted ${longest:-?} ms (peer_timeout_us 1 s); she exited with $rc ($(since "$t0") s)"
say "all parts passed"
