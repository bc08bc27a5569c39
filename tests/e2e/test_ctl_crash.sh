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
	local mine=()
	while :; do
		i=$((i + 1))
		if [ ${#mine[@]} -gt 2 ] && [ $((i % 3)) -eq 0 ]; then
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
				id=$(printf '%s' "${out% *}" | jq -r .id)
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
	if ! start_daemon "$TMP/log.$cyc" --data "$DATA" --simulate; then
		bad "cycle $cyc: daemon restarts" "$(tail -3 "$TMP/log.$cyc")"
		violations=$((violations + 1))
		break
	fi
	# Check what the previous cycles acknowledged.
	curl -s -H "Authorization: Bearer $ADMIN" "$URL/v1/leases" >"$TMP/leases.json"
	cat "$TMP"/ack.* 2>/dev/null | sort -u >"$TMP/acked"
	missing=$(jq -r '.[] | .id' "$TMP/leases.json" | sort >"$TMP/have"
		awk '$1 == "create" {print $2}' "$TMP/acked" | sort -u | comm -23 - "$TMP/have")
	notrel=$(awk '$1 == "release" {print $2}' "$TMP/acked" | sort -u |
		comm -12 - <(jq -r '.[] | select(.state != "released") | .id' "$TMP/leases.json" | sort))
	dup=$(jq -r '.[] | select(.state == "active") | .placement[] | .node as $n | .gpus[] | "\($n)/\(.)"' \
		"$TMP/leases.json" | sort | uniq -d)
	half=$(jq -r '.[] | select(.state == "active") | select(([.placement[].gpus | length] | add) != .gpus) | .id' \
		"$TMP/leases.json")
	pend=$(jq -r '.[] | select(.state == "pending" and (.placement | length) > 0) | .id' "$TMP/leases.json")
	if [ -n "$missing$notrel$dup$half$pend" ]; then
		violations=$((violations + 1))
		bad "cycle $cyc: state after SIGKILL" "missing=[$missing] unreleased=[$notrel] shared=[$dup] partial=[$half] pending-with-gpus=[$pend]"
	fi
	[ "$cyc" -gt "$CYCLES" ] && { stop_daemon; break; }
	for w in $(seq 1 $WORKERS); do worker "$w" "$cyc" & done
	sleep "0.$((RANDOM % 30 + 5))"
	kill -KILL "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=""
	wait
done
total=$(cat "$TMP"/ack.* 2>/dev/null | wc -l)
[ "$violations" -eq 0 ] && ok "$CYCLES SIGKILL cycles: every acknowledged change kept, no GPU in two leases"
expect_match "clients got acknowledgements to check ($total)" "$total" '^[0-9]{3,}$'
finish
