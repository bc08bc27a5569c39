#!/usr/bin/env bash
# test_ha_failover.sh - an active and a standby suanlid on one PostgreSQL
# (docs/ha.md), started by the test (scripts/pg-test.sh; skipped without the
# server binaries):
# - SIGKILL the leader during lease traffic, SL_HA_CYCLES times (default 3;
#   bench/failover.sh runs 100): the standby leads; every acknowledged lease
#   create is there, a retry with its Idempotency-Key answers the same lease
#   (nothing lost, nothing done twice), and no GPU is in two active leases;
#   top-ups sent beside them (each with its own key, to whichever controller
#   answers) land exactly once: every acknowledged one is in the ledger, and
#   after every key is sent once more the balance is exactly their sum; job
#   submissions likewise: every acknowledged one is there once, and its retry
#   answers the same job;
# - SIGSTOP the leader past its lease: the standby takes over; a write sent to
#   the stopped one never lands, and after SIGCONT it steps down by itself;
# - the standby answers 503 not_leader naming the leader; /healthz and
#   /metrics show the leadership;
# - PostgreSQL restarted during traffic: both controllers come back, one
#   leading, and nothing acknowledged is lost (the history check above).
# Clients get both URLs (--server A,B) and find the leader themselves.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg_lib.sh"
: "${SUANLID:?SUANLID must point at the suanlid binary}"
CYCLES=${SL_HA_CYCLES:-3}
LEASE=2 # seconds: the takeover of a stopped leader takes about this long

PIDS=("" "")
cleanup() {
	for p in "${PIDS[@]}"; do
		[ -n "$p" ] && kill -CONT "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	[ -n "$PGDIR" ] && bash "$PGT" stop "$PGDIR"
	rm -rf "$TMP"
}
trap cleanup EXIT

pg_start
STORE=$(bash "$PGT" createdb "$PGDIR" ha)

PORT=("$(free_port)" "$(free_port)")
U=("http://127.0.0.1:${PORT[0]}" "http://127.0.0.1:${PORT[1]}")
BOTH="${U[0]},${U[1]}"
DATA="$TMP/data"

"$SUANLID" init --data "$DATA" --store "$STORE" >"$TMP/init.out" 2>&1
expect_eq "init --store postgres" "$?" 0
r=$("$SUANLID" init --data "$TMP/again" --store "$STORE" 2>&1)
[ $? -ne 0 ] && ok "a second init of the same database is refused" || bad "a second init was accepted"
expect_match "... saying it is initialised" "$r" 'already holds a suanli store'
export SUANLI_TOKEN
SUANLI_TOKEN=$(cat "$DATA/admin.token")

# start_ctl I : controller I in the background (it restarts itself in place
# as a standby when it steps down, so its pid stays).
start_ctl() {
	"$SUANLID" serve --data "$DATA" --store "$STORE" --listen "127.0.0.1:${PORT[$1]}" \
		--simulate --lease "$LEASE" --fleet "$SL_ROOT/examples/demo-fleet.yaml" \
		2>>"$TMP/ctl$1.log" &
	PIDS[$1]=$!
}
role_of() { curl -s --max-time 2 "${U[$1]}/healthz" | jq -r '.role // empty' 2>/dev/null; }
epoch_of() { curl -s --max-time 2 "${U[$1]}/healthz" | jq -r '.epoch // 0' 2>/dev/null; }
is_leader() { [ "$(role_of "$1")" = leader ]; }
is_standby() { [ "$(role_of "$1")" = standby ]; }
leader() { if is_leader 0; then echo 0; elif is_leader 1; then echo 1; else echo -1; fi; }

start_ctl 0
wait_until 20 is_leader 0
expect_eq "first controller leads" "$(role_of 0)" leader
start_ctl 1
wait_until 20 is_standby 1
expect_eq "second controller stands by" "$(role_of 1)" standby
st=$("$SUANLI" --server "$BOTH" status)
expect_match "suanli status shows the leader" "$st" "${U[0]} +leader +epoch [0-9]+"
expect_match "... and the standby" "$st" "${U[1]} +standby .*leader ${U[0]}"
r=$(curl -s -i "${U[1]}/v1/leases" -H "Authorization: Bearer $SUANLI_TOKEN")
expect_match "a standby answers 503 not_leader" "$r" '503'
expect_match "... and names the leader" "$r" "X-Suanli-Leader: ${U[0]}"
m=$(curl -s -H "Authorization: Bearer $SUANLI_TOKEN" "${U[0]}/metrics")
expect_match "the leader's /metrics show its epoch" "$m" 'suanli_leader_epoch [0-9]+'
expect_match "... the renewal age" "$m" 'suanli_leader_renew_age_seconds [0-9.]+'
expect_match "... and the replication lag (-1: no replica)" "$m" 'suanli_store_replication_lag_seconds -1'
"$SUANLI" --server "$BOTH" tenant create acme >/dev/null 2>&1
expect_eq "a tenant through the list of controllers" "$?" 0

# A person signed in on the first leader (docs/console.md): the session is
# stored by the hash of its cookie, so the failovers below keep it.
printf 'ha-password-1\n' >"$TMP/pw_hana"
"$SUANLI" --server "$BOTH" user create --tenant acme --name hana --password-file "$TMP/pw_hana" >/dev/null 2>&1
HA_CSRF=$(curl -s -c "$TMP/jar_hana" -H 'Content-Type: application/json' \
	--data-binary '{"user":"hana","password":"ha-password-1"}' "${U[$(leader)]}/v1/sessions" |
	jq -r '.csrf // empty')
expect_match "a person signs in on the leader" "$HA_CSRF" '^[A-Za-z0-9_-]{20,}$'

# traffic FROM TO : lease creates with keys kFROM..kTO; "key id" per
# acknowledged one in $TMP/acked.
traffic() {
	local i id
	for i in $(seq "$1" "$2"); do
		id=$("$SUANLI" --server "$BOTH" --json lease create --gpus 1 --tenant acme \
			--duration 2h --idempotency-key "k$i" 2>>"$TMP/traffic.err" | jq -r '.id // empty')
		[ -n "$id" ] && echo "k$i $id" >>"$TMP/acked"
		topup "t$i" && echo "t$i" >>"$TMP/paid"
		id=$(post_any /v1/jobs "{\"lease\": \"$JL\", \"argv\": [\"true\"]}" "j$i")
		[ -n "$id" ] && echo "j$i $id" >>"$TMP/jobs"
	done
}
# post_any PATH BODY KEY : a POST with Idempotency-Key KEY, tried on each
# controller in turn; prints the answer's id once one acknowledged it.
post_any() {
	local u out
	for u in "${U[@]}"; do
		out=$(curl -s --max-time 5 -X POST "$u$1" -H "Authorization: Bearer $SUANLI_TOKEN" \
			-H 'Content-Type: application/json' -H "Idempotency-Key: $3" --data-binary "$2" 2>/dev/null |
			jq -r '.id // empty' 2>/dev/null)
		[ -n "$out" ] && { printf '%s' "$out"; return 0; }
	done
	return 1
}
# topup KEY : a top-up of 100 fen with Idempotency-Key KEY, tried on each
# controller in turn as a client with the URL list does; true once one
# acknowledged it.
topup() {
	local u code
	for u in "${U[@]}"; do
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -X POST \
			"$u/v1/tenants/acme/topups" -H "Authorization: Bearer $SUANLI_TOKEN" \
			-H 'Content-Type: application/json' -H "Idempotency-Key: $1" \
			--data-binary "{\"amount\": 100, \"reason\": \"$1\"}" 2>/dev/null)
		[ "$code" = 201 ] && return 0
	done
	return 1
}

: >"$TMP/acked"
: >"$TMP/paid"
: >"$TMP/jobs"
JL=$("$SUANLI" --server "$BOTH" --json lease create --gpus 8 --tenant acme --duration 2h 2>/dev/null | jq -r '.id // empty')
expect_match "a lease for the jobs" "$JL" '^ls-'
n=0
takeover_ok=0
for c in $(seq 1 "$CYCLES"); do
	L=$(leader)
	[ "$L" -ge 0 ] || { bad "cycle $c: a leader before the kill"; break; }
	S=$((1 - L))
	e0=$(epoch_of "$L")
	traffic $((n + 1)) $((n + 12)) &
	tp=$!
	sleep 0.$((RANDOM % 8 + 2))
	kill -KILL "${PIDS[$L]}"
	wait "${PIDS[$L]}" 2>/dev/null
	if wait_until 20 is_leader "$S" && [ "$(epoch_of "$S")" -gt "$e0" ]; then
		takeover_ok=$((takeover_ok + 1))
	fi
	start_ctl "$L" # back as a standby
	wait "$tp"
	n=$((n + 12))
	wait_until 20 is_standby "$L"
done
expect_eq "after each SIGKILL the standby leads with a higher epoch" "$takeover_ok" "$CYCLES"
L=$(leader)
expect_eq "after the failovers hana's session still signs her in" \
	"$(curl -s -b "$TMP/jar_hana" "${U[$L]}/v1/session" | jq -r '.user // empty')" hana
expect_eq "... and its CSRF token still works (sign-out)" "$(curl -s -o /dev/null -w '%{http_code}' \
	-b "$TMP/jar_hana" -H "X-CSRF-Token: $HA_CSRF" -X DELETE "${U[$L]}/v1/session")" 200

# ---- PostgreSQL restarts during traffic: both controllers come back ----
traffic $((n + 1)) $((n + 12)) &
tp=$!
sleep 0.5
bash "$PGT" restart "$PGDIR"
expect_eq "PostgreSQL restarted during traffic" "$?" 0
wait "$tp"
n=$((n + 12))
one_each() { [ "$(role_of 0)$(role_of 1)" = leaderstandby ] || [ "$(role_of 0)$(role_of 1)" = standbyleader ]; }
wait_until 30 one_each
expect_match "after the restart one controller leads, the other stands by" "$(role_of 0) $(role_of 1)" \
	'^(leader standby|standby leader)$'

L=$(leader)
acked=$(wc -l <"$TMP/acked")
[ "$acked" -gt 0 ] && ok "leases acknowledged during the kills ($acked of $n)" ||
	bad "no lease was acknowledged" "$(tail -3 "$TMP/traffic.err")"
"$SUANLI" --server "$BOTH" --json lease list >"$TMP/list.json" 2>"$TMP/list.err"
lost=0
while read -r key id; do
	jq -e --arg id "$id" 'any(.[]; .id == $id)' "$TMP/list.json" >/dev/null || lost=$((lost + 1))
done <"$TMP/acked"
expect_eq "no acknowledged lease lost" "$lost" 0
dup=0
while read -r key id; do
	again=$("$SUANLI" --server "$BOTH" --json lease create --gpus 1 --tenant acme --duration 2h \
		--idempotency-key "$key" 2>/dev/null | jq -r '.id // empty')
	[ "$again" = "$id" ] || dup=$((dup + 1))
done <"$TMP/acked"
expect_eq "a retry of each acknowledged create answers the same lease" "$dup" 0
"$SUANLI" --server "$BOTH" --json lease list >"$TMP/list.json" 2>/dev/null
twice=$(jq -r '[.[] | select(.state == "active") | .placement[] | .node as $n | .gpus[] | "\($n)/\(.)"]
	| group_by(.) | map(select(length > 1)) | length' "$TMP/list.json")
expect_eq "no GPU in two active leases" "$twice" 0
expect_eq "acknowledged creates are all distinct leases" \
	"$(cut -d' ' -f2 "$TMP/acked" | sort | uniq -d | wc -l)" 0

"$SUANLI" --server "$BOTH" --json ledger --tenant acme --type topup >"$TMP/ledger.json" 2>/dev/null
paid=$(wc -l <"$TMP/paid")
[ "$paid" -gt 0 ] && ok "top-ups acknowledged during the kills ($paid of $n)" || bad "no top-up was acknowledged"
missing=0
while read -r key; do
	jq -e --arg k "$key" 'any(.[]; .reason == $k)' "$TMP/ledger.json" >/dev/null || missing=$((missing + 1))
done <"$TMP/paid"
expect_eq "every acknowledged top-up is in the ledger" "$missing" 0
expect_eq "... each once" "$(jq -r '.[].reason' "$TMP/ledger.json" | sort | uniq -d | wc -l)" 0
again=0
for i in $(seq 1 "$n"); do topup "t$i" || again=$((again + 1)); done
expect_eq "every top-up key sent once more is acknowledged" "$again" 0
bal=$("$SUANLI" --server "$BOTH" --json balance --tenant acme 2>/dev/null | jq -r .balance)
expect_eq "... and the balance is exactly one top-up per key (fen)" "$bal" "$((n * 100))"

"$SUANLI" --server "$BOTH" --json job list >"$TMP/jobs.json" 2>/dev/null
jn=$(wc -l <"$TMP/jobs")
[ "$jn" -gt 0 ] && ok "jobs acknowledged during the kills ($jn of $n)" || bad "no job was acknowledged"
lost=0
while read -r key id; do
	jq -e --arg id "$id" 'any(.[]; .id == $id)' "$TMP/jobs.json" >/dev/null || lost=$((lost + 1))
done <"$TMP/jobs"
expect_eq "no acknowledged job lost" "$lost" 0
dup=0
while read -r key id; do
	[ "$(post_any /v1/jobs "{\"lease\": \"$JL\", \"argv\": [\"true\"]}" "$key")" = "$id" ] || dup=$((dup + 1))
done <"$TMP/jobs"
expect_eq "a retry of each acknowledged job answers the same job" "$dup" 0
for i in $(seq 1 "$n"); do post_any /v1/jobs "{\"lease\": \"$JL\", \"argv\": [\"true\"]}" "j$i" >/dev/null; done
"$SUANLI" --server "$BOTH" --json job list >"$TMP/jobs.json" 2>/dev/null
expect_eq "after every job key is sent once more, exactly one job per key" \
	"$(jq --arg l "$JL" '[.[] | select(.lease == $l)] | length' "$TMP/jobs.json")" "$n"

# ---- SIGSTOP past the lease ----
L=$(leader)
S=$((1 - L))
e0=$(epoch_of "$L")
kill -STOP "${PIDS[$L]}"
# a write that reaches the stopped leader: it is read only after SIGCONT
curl -s --max-time 30 -o "$TMP/ghost.body" -w '%{http_code}' -X POST "${U[$L]}/v1/tenants" \
	-H "Authorization: Bearer $SUANLI_TOKEN" -H 'Content-Type: application/json' \
	--data-binary '{"name":"ghost"}' >"$TMP/ghost.code" 2>/dev/null &
gp=$!
wait_until 30 is_leader "$S"
expect_eq "the standby takes over from a stopped leader" "$(role_of "$S")" leader
e1=$(epoch_of "$S")
[ "$e1" -gt "$e0" ] && ok "with a higher epoch ($e0 -> $e1)" || bad "epoch $e0 -> $e1"
"$SUANLI" --server "$BOTH" tenant create during-stop >/dev/null 2>&1
expect_eq "writes go to the new leader meanwhile" "$?" 0
kill -CONT "${PIDS[$L]}"
wait "$gp"
wait_until 20 is_standby "$L"
expect_eq "the old leader steps down by itself" "$(role_of "$L")" standby
expect_match "... and says why" "$(cat "$TMP/ctl$L.log")" 'stepped down'
code=$(cat "$TMP/ghost.code" 2>/dev/null)
tenants=$("$SUANLI" --server "$BOTH" --json tenant list 2>/dev/null)
if [ "${code:-000}" -ge 200 ] && [ "${code:-000}" -lt 300 ]; then
	bad "the stopped leader acknowledged a write after losing its lease" "code $code"
else
	ok "the stopped leader did not acknowledge its write (status ${code:-none})"
fi
expect_eq "... and the write did not land" \
	"$(printf '%s' "$tenants" | jq '[.[] | select(.name == "ghost")] | length')" 0
expect_eq "the new leader's write is there" \
	"$(printf '%s' "$tenants" | jq '[.[] | select(.name == "during-stop")] | length')" 1

finish
