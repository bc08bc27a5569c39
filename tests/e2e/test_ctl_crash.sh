#!/usr/bin/env bash
# test_ctl_crash.sh - crash safety: clients create and release leases while the
# daemon is killed with SIGKILL at random moments (fixed seed), CYCLES times.
# After every restart: every acknowledged create is present, every
# acknowledged release is released, every running lease holds exactly its
# GPUs, and no GPU is in two leases. (bench/crash runs the long version.)
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
CYCLES=${CRASH_CYCLES:-50}
WORKERS=4
DATA="$TMP/data"
RANDOM=42

"$SUANLID" init --data "$DATA" >/dev/null || { bad "init"; finish; exit 1; }
ADMIN=$(cat "$DATA/admin.token")

# worker N CYCLE: creates and releases until the daemon goes away, logging
# only what the daemon acknowledged.
worker() {
	local w=$1 cyc=$2 i=0 ack="$TMP/ack.$1" out code id
	# Its leases still held from earlier cycles (as acknowledged), oldest first.
	local mine=()
	[ -f "$ack" ] && mapfile -t mine < <(awk '$1 == "create" { a[$2] = NR } $1 == "release" { delete a[$2] }
		END { for (k in a) print a[k], k }' "$ack" | sort -n | cut -d' ' -f2)
	while :; do
		i=$((i + 1))
		if [ ${#mine[@]} -gt 0 ] && [ $((i % 2)) -eq 0 ]; then
			id=${mine[0]}
			mine=("${mine[@]:1}")
			code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -X POST \
				-H "Authorization: Bearer $ADMIN" "$URL/v1/leases/$id/release")
			[ "$code" = 200 ] && echo "release $id" >>"$ack"
		else
			out=$(curl -s -m 5 -w ' %{http_code}' -X POST -H "Authorization: Bearer $ADMIN" \
				-H "Idempotency-Key: w$w-c$cyc-$i" \
				--data "{\"tenant\":\"acme\",\"gpus\":$((1 + (i * 7 + w) % 8)),\"models\":[\"h100-sxm\",\"h200-sxm\",\"a100-sxm\"]}" \
				"$URL/v1/leases")
			code=${out##* }
			if [ "$code" = 201 ]; then
				id=${out#*\"id\":\"}
				id=${id%%\"*}
				echo "create $id" >>"$ack"
				mine+=("$id")
			fi
		fi
		case $code in 000) return ;; esac
	done
}

start_daemon "$TMP/log.0" --data "$DATA" --fleet "$SL_ROOT/examples/demo-fleet.yaml" --simulate ||
	{ bad "daemon starts" "$(cat "$TMP/log.0")"; finish; exit 1; }
api "$ADMIN" POST /v1/tenants '{"name":"acme"}' >/dev/null
stop_daemon

violations=0
for cyc in $(seq 1 $((CYCLES + 1))); do
	if ! start_daemon "$TMP/log.$cyc" --data "$DATA" --simulate --keep-ended 8; then
		bad "cycle $cyc: daemon restarts" "$(tail -3 "$TMP/log.$cyc")"
		violations=$((violations + 1))
		break
	fi
	# Check what the previous cycles acknowledged.
	curl -s -H "Authorization: Bearer $ADMIN" "$URL/v1/leases" >"$TMP/leases.json"
	cat "$TMP"/ack.* 2>/dev/null | sort -u >"$TMP/acked"
	# One jq pass: ids present, ids not released, GPUs held twice, running
	# leases whose placement does not hold their GPUs, pending ones holding some.
	jq -r '(.[] | "have \(.id)"),
		(.[] | select(.state != "released") | "live \(.id)"),
		([.[] | select(.state == "active" or .state == "preempting") | .placement[] | .node as $n |
		  .gpus[] | "\($n)/\(.)"] | group_by(.) | .[] | select(length > 1) | "dup \(.[0])"),
		(.[] | select(.state == "active") | select(([.placement[].gpus | length] | add) != .gpus) | "half \(.id)"),
		(.[] | select(.state == "pending" and (.placement | length) > 0) | "pend \(.id)")' \
		"$TMP/leases.json" >"$TMP/facts"
	missing=$(awk 'FNR == NR { if ($1 == "have") have[$2] = 1; next }
		$1 == "create" && !($2 in have) { print $2 }' "$TMP/facts" "$TMP/acked")
	notrel=$(awk 'FNR == NR { if ($1 == "live") live[$2] = 1; next }
		$1 == "release" && ($2 in live) { print $2 }' "$TMP/facts" "$TMP/acked")
	dup=$(awk '$1 == "dup" { print $2 }' "$TMP/facts")
	half=$(awk '$1 == "half" { print $2 }' "$TMP/facts")
	pend=$(awk '$1 == "pend" { print $2 }' "$TMP/facts")
	if [ -n "$missing$notrel$dup$half$pend" ]; then
		violations=$((violations + 1))
		bad "cycle $cyc: state after SIGKILL" "missing=[$missing] unreleased=[$notrel] shared=[$dup] partial=[$half] pending-with-gpus=[$pend]"
	fi
	[ "$cyc" -gt "$CYCLES" ] && { stop_daemon; break; }
	before=$(cat "$TMP"/ack.* 2>/dev/null | wc -l)
	for w in $(seq 1 $WORKERS); do worker "$w" "$cyc" & done
	# Kill only once this cycle has acknowledged a few changes (however slow
	# the machine is), then at a random moment after that.
	for _ in $(seq 1 200); do
		[ "$(cat "$TMP"/ack.* 2>/dev/null | wc -l)" -ge $((before + 4)) ] && break
		sleep 0.05
	done
	sleep "$(printf '0.%02d' $((RANDOM % 15 + 3)))"
	kill -KILL "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=""
	wait
done
creates=$(cat "$TMP"/ack.* 2>/dev/null | grep -c '^create')
releases=$(cat "$TMP"/ack.* 2>/dev/null | grep -c '^release')
[ "$violations" -eq 0 ] && ok "$CYCLES SIGKILL cycles: every acknowledged change kept, no GPU in two leases"
# Enough acknowledged work that the checks above had something to find.
expect_match "acknowledged creates to check ($creates)" "$creates" '^[0-9]{3,}$'
expect_match "acknowledged releases to check ($releases)" "$releases" '^([5-9][0-9]|[0-9]{3,})$'
finish
