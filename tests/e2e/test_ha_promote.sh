#!/usr/bin/env bash
# test_ha_promote.sh - two suanlid on a PostgreSQL primary with a synchronous
# streaming replica (scripts/pg-test.sh replica); the store URL names both
# hosts with target_session_attrs=read-write. During lease traffic the
# primary is killed (immediate stop, as a crash) and the replica promoted:
# the controllers follow it without reconfiguration, one leads, and every
# acknowledged lease create is there with the same answer to a retry.
# Skipped without the server binaries.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg_lib.sh"
: "${SUANLID:?SUANLID must point at the suanlid binary}"
RDIR=""
PIDS=("" "")
cleanup() {
	for p in "${PIDS[@]}"; do [ -n "$p" ] && kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "$RDIR" ] && bash "$PGT" stop "$RDIR"
	[ -n "$PGDIR" ] && bash "$PGT" stop "$PGDIR"
	rm -rf "$TMP"
}
trap cleanup EXIT
pg_start
bash "$PGT" createdb "$PGDIR" ha >/dev/null
RDIR=$(bash "$PGT" replica "$PGDIR")
expect_eq "a synchronous streaming replica" "$?" 0
STORE="postgres:///ha?host=$PGDIR,$RDIR&user=suanli&target_session_attrs=read-write"

PORT=("$(free_port)" "$(free_port)")
U=("http://127.0.0.1:${PORT[0]}" "http://127.0.0.1:${PORT[1]}")
BOTH="${U[0]},${U[1]}"
DATA="$TMP/data"
"$SUANLID" init --data "$DATA" --store "$STORE" >/dev/null 2>&1
expect_eq "init on the primary" "$?" 0
export SUANLI_TOKEN
SUANLI_TOKEN=$(cat "$DATA/admin.token")
for i in 0 1; do
	"$SUANLID" serve --data "$DATA" --store "$STORE" --listen "127.0.0.1:${PORT[$i]}" \
		--simulate --lease 2 --fleet "$SL_ROOT/examples/demo-fleet.yaml" 2>>"$TMP/ctl$i.log" &
	PIDS[$i]=$!
done
role_of() { curl -s --max-time 2 "${U[$1]}/healthz" | jq -r '.role // empty' 2>/dev/null; }
one_each() { case "$(role_of 0) $(role_of 1)" in "leader standby" | "standby leader") return 0 ;; esac; return 1; }
wait_until 30 one_each
expect_match "one leads, one stands by" "$(role_of 0) $(role_of 1)" '^(leader standby|standby leader)$'
"$SUANLI" --server "$BOTH" tenant create acme >/dev/null 2>&1
expect_eq "a tenant" "$?" 0
PSQL="$(pg_config --bindir)/psql"
sync_state() { "$PSQL" -h "$PGDIR" -U suanli -d postgres -qAt -c 'SELECT sync_state FROM pg_stat_replication'; }
is_sync() { [ "$(sync_state)" = sync ]; }
wait_until 20 is_sync
expect_eq "the replica is synchronous (commits wait for it)" "$(sync_state)" sync
lag_known() {
	local i
	for i in 0 1; do
		curl -s -H "Authorization: Bearer $SUANLI_TOKEN" "${U[$i]}/metrics" |
			grep -Eq '^suanli_store_replication_lag_seconds [0-9]' && return 0
	done
	return 1
}
wait_until 20 lag_known
lag_known && ok "the leader's /metrics show the replica's lag" || bad "no replication lag in /metrics"

: >"$TMP/acked"
traffic() {
	local i id
	for i in $(seq "$1" "$2"); do
		id=$("$SUANLI" --server "$BOTH" --json lease create --gpus 1 --tenant acme \
			--duration 2h --idempotency-key "k$i" 2>>"$TMP/traffic.err" | jq -r '.id // empty')
		[ -n "$id" ] && echo "k$i $id" >>"$TMP/acked"
	done
}
traffic 1 8
traffic 9 30 &
tp=$!
sleep 0.5
bash "$PGT" kill "$PGDIR"
bash "$PGT" promote "$RDIR"
expect_eq "the replica is promoted after the primary dies" "$?" 0
wait "$tp"
wait_until 30 one_each
expect_match "the controllers follow the promoted replica" "$(role_of 0) $(role_of 1)" \
	'^(leader standby|standby leader)$'
traffic 31 34
acked=$(wc -l <"$TMP/acked")
[ "$acked" -ge 12 ] && ok "leases acknowledged across the promotion ($acked of 34)" ||
	bad "too few leases acknowledged ($acked of 34)" "$(tail -3 "$TMP/traffic.err")"
"$SUANLI" --server "$BOTH" --json lease list >"$TMP/list.json" 2>/dev/null
lost=0
dup=0
while read -r key id; do
	jq -e --arg id "$id" 'any(.[]; .id == $id)' "$TMP/list.json" >/dev/null || lost=$((lost + 1))
	again=$("$SUANLI" --server "$BOTH" --json lease create --gpus 1 --tenant acme --duration 2h \
		--idempotency-key "$key" 2>/dev/null | jq -r '.id // empty')
	[ "$again" = "$id" ] || dup=$((dup + 1))
done <"$TMP/acked"
expect_eq "no acknowledged lease lost with the primary" "$lost" 0
expect_eq "a retry of each answers the same lease" "$dup" 0
finish
