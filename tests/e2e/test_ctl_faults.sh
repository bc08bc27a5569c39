#!/usr/bin/env bash
# test_ctl_faults.sh - storage faults under the real daemon (issue 16):
# tests/faults/faultfs.c (LD_PRELOAD) fails the Nth write or sync of the
# store's files with EIO, ENOSPC, or tears it and kills the process there,
# for N spread over every call a scripted workload makes (leases, top-ups,
# and their audit entries). Each time: the daemon stops by itself (a failed
# commit: it answers nobody and exits), and after a plain restart every
# request it acknowledged (2xx) is there, at most the one in flight besides,
# the tenant's balance is the sum of the acknowledged top-ups (plus at most
# the one in flight), and the audit log verifies. Counts go to stdout (and
# bench/results/faults.md quotes them); no timing is asserted.
#
# env: FAULTS_STEP (I/O points between runs; default a tenth of them, as
# make check runs it: bench/faults.sh gives 1, every point), FAULTS_MODES
# (default "eio enospc torn"), FAULTS_LOG (a file that gets one line per run:
# MODE AT START ACKED PAID STOPPED CONSISTENT [WHAT WAS WRONG]).
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
: "${SL_FAULTFS:?SL_FAULTFS must point at libfaultfs.so}"
PRISTINE="$TMP/pristine"
DATA="$TMP/data"
"$SUANLID" init --data "$PRISTINE" >/dev/null || { bad "init"; finish; exit 1; }
start_daemon "$TMP/log" --data "$PRISTINE" --simulate --fleet "$SL_ROOT/examples/demo-fleet.yaml" ||
	{ bad "serve"; finish; exit 1; }
A=$(cat "$PRISTINE/admin.token")
api "$A" POST /v1/tenants '{"name":"acme"}' >/dev/null
stop_daemon

# workload: leases and top-ups until one is not acknowledged; writes
# $TMP/acked (lease ids), $TMP/paid (sum of acknowledged top-ups) and
# $TMP/inflight (the amount of a top-up that got no answer, else 0).
workload() {
	: >"$TMP/acked"
	echo 0 >"$TMP/paid"
	echo 0 >"$TMP/inflight"
	local paid=0
	for i in 1 2 3 4 5 6; do
		r=$(api "$A" POST /v1/leases '{"tenant":"acme","gpus":1,"duration_s":3600}')
		[[ $(status_of "$r") == 2* ]] || return 0
		body_of "$r" | jq -r .id >>"$TMP/acked"
		r=$(api "$A" POST /v1/tenants/acme/topups "{\"amount\":$((i * 100))}")
		if [[ $(status_of "$r") != 2* ]]; then echo $((i * 100)) >"$TMP/inflight"; return 0; fi
		paid=$((paid + i * 100))
		echo "$paid" >"$TMP/paid"
	done
}

# topups_of SUM: how many top-ups (100, 200, 300, ...) make SUM
topups_of() { local k=0 sum=0; while [ $sum -lt "$1" ]; do k=$((k + 1)); sum=$((sum + k * 100)); done; echo $k; }

run_with() { # MODE AT: the workload under the shim; sets STOPPED (exit status or "running")
	rm -rf "$DATA" && cp -a "$PRISTINE" "$DATA"
	: >"$TMP/flog"
	LD_PRELOAD="$SL_FAULTFS" ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0" \
		FAULTFS_MATCH=suanli.db FAULTFS_MODE=$1 FAULTFS_AT=$2 FAULTFS_COUNT="$TMP/count" \
		"$SUANLID" serve --listen 127.0.0.1:0 --data "$DATA" --simulate 2>"$TMP/flog" &
	DAEMON_PID=$!
	for _ in $(seq 1 100); do
		PORT=$(sed -n 's/.*msg=listening .*port=\([0-9][0-9]*\).*/\1/p' "$TMP/flog" | head -1)
		[ -n "$PORT" ] && break
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.05
	done
	URL="http://127.0.0.1:$PORT"
	STARTED=no
	[ -n "$PORT" ] && STARTED=yes && workload
	STOPPED=running
	# a failed commit stops the daemon at once; with every request
	# acknowledged there is nothing to wait for (a fault still to come
	# falls on the shutdown's writes)
	local waits=50
	[ "$(wc -l <"$TMP/acked") $(cat "$TMP/paid")" = "6 2100" ] && waits=2
	for _ in $(seq 1 $waits); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$DAEMON_PID" 2>/dev/null; then
		kill "$DAEMON_PID"
		wait "$DAEMON_PID"
	else
		wait "$DAEMON_PID"
		STOPPED=$?
	fi
	DAEMON_PID=""
}

run_with eio 0
total=$(cat "$TMP/count")
expect_eq "dry run: every request acknowledged" "$(wc -l <"$TMP/acked") $(cat "$TMP/paid")" "6 2100"
start_daemon "$TMP/log2" --data "$DATA" --simulate || { bad "restart"; finish; exit 1; }
expect_eq "dry run: the balance is the top-ups" \
	"$(body_of "$(api "$A" GET /v1/tenants/acme/balance)" | jq -r '.balance + .unposted_usage')" 2100
stop_daemon
expect_match "the workload makes store I/O calls" "$total" '^[0-9]+$'
step=${FAULTS_STEP:-$(( total / 10 ))}; [ "$step" -ge 1 ] || step=1
modes=${FAULTS_MODES:-eio enospc torn}
declare -A tried=() consistent=() selfstop=()
bad_runs=""
for mode in $modes; do
	tried[$mode]=0 consistent[$mode]=0 selfstop[$mode]=0
	for ((at = 1; at <= total; at += step)); do
		run_with "$mode" "$at"
		tried[$mode]=$((tried[$mode] + 1))
		[ "$STOPPED" != running ] && selfstop[$mode]=$((selfstop[$mode] + 1))
		acked=$(wc -l <"$TMP/acked"); paid=$(cat "$TMP/paid"); inflight=$(cat "$TMP/inflight")
		if ! start_daemon "$TMP/log2" --data "$DATA" --simulate; then
			bad_runs+="$mode@$at: no restart; "
			[ -n "${FAULTS_LOG:-}" ] && echo "$mode $at $STARTED $acked $paid $STOPPED no no-restart" >>"$FAULTS_LOG"
			continue
		fi
		ok_run=1 why=""
		while read -r id; do
			[ "$(status_of "$(api "$A" GET "/v1/leases/$id")")" = 200 ] || { ok_run=0; why+="lease-lost "; bad_runs+="$mode@$at: lease $id lost; "; }
		done <"$TMP/acked"
		n=$(body_of "$(api "$A" GET '/v1/leases?limit=1000')" | jq 'if type == "array" then length else (.leases // [] | length) end')
		[ "$n" -le $((acked + 1)) ] || { ok_run=0; why+="extra-leases "; bad_runs+="$mode@$at: $n leases for $acked acknowledged; "; }
		# money in minor units; usage not yet posted is what the leases ran up
		b=$(body_of "$(api "$A" GET /v1/tenants/acme/balance)" | jq -r '.balance + .unposted_usage')
		[ "$b" = "$paid" ] || [ "$b" = $((paid + inflight)) ] ||
			{ ok_run=0; why+="balance "; bad_runs+="$mode@$at: balance $b, acknowledged $paid (+$inflight); "; }
		# the ledger: each acknowledged top-up posted once (the one in flight
		# at most once), nothing else
		tu=$(body_of "$(api "$A" GET '/v1/tenants/acme/ledger?type=topup&limit=1000')" |
			jq -r '(if type == "array" then . else (.entries // .postings // .items // []) end) | "\(length) \(map(.amount) | add // 0)"')
		case "$tu" in
		"$(topups_of "$paid") $paid" | "$(topups_of $((paid + inflight))) $((paid + inflight))") ;;
		*) ok_run=0; why+="ledger "; bad_runs+="$mode@$at: ledger top-ups '$tu', acknowledged $paid (+$inflight); " ;;
		esac
		out=$("$SUANLI" audit verify --server "$URL" --token "$A" 2>&1)
		[ $? -eq 0 ] || { ok_run=0; why+="audit "; bad_runs+="$mode@$at: audit: $(echo $out | head -c 200); "; }
		stop_daemon >/dev/null
		[ "$ok_run" = 1 ] && consistent[$mode]=$((consistent[$mode] + 1))
		[ -n "${FAULTS_LOG:-}" ] && echo "$mode $at $STARTED $acked $paid $STOPPED $([ "$ok_run" = 1 ] && echo yes || echo no) $why" >>"$FAULTS_LOG"
	done
	echo "faults: $mode at ${tried[$mode]} of $total I/O calls: ${selfstop[$mode]} stopped by themselves, ${consistent[$mode]} restarted consistent"
done
expect_eq "after every fault: acknowledged changes kept, balance = acknowledged top-ups, audit intact" "$bad_runs" ""
for mode in $modes; do
	expect_eq "$mode: every run restarted consistent (${tried[$mode]} I/O points)" "${consistent[$mode]}" "${tried[$mode]}"
done
finish
