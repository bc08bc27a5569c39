#!/usr/bin/env bash
# bench/failover.sh - how long a standby suanlid takes to lead after the
# leader dies, on one PostgreSQL started for the run (scripts/pg-test.sh,
# fsync on). Two controllers, lease traffic from the CLI (--server A,B, an
# Idempotency-Key per create) running throughout:
# - CYCLES times (default 100): SIGKILL the leader, measure until the standby's
#   /healthz says "leader" (takeover) and until a client's write through the
#   URL list is acknowledged (client-visible), restart the killed one;
# - STOP_CYCLES times (default 5): SIGSTOP the leader, measure the takeover
#   (bounded below by the lease, --lease), SIGCONT it and wait until it has
#   stepped down;
# then the history is checked as in tests/e2e/test_ha_failover.sh: every
# acknowledged create is there, a retry with its key answers the same lease,
# no GPU is in two active leases; every acknowledged top-up is in the ledger
# once and, after every key is sent again, the balance is one top-up per key;
# every acknowledged job submission is there and, after every key is sent
# again, there is one job per key. Figures go to bench/results/failover.md (or
# $1); the checks are reported, never timed.
# env: SUANLID, SUANLI (binaries; default build/release), CYCLES, STOP_CYCLES, LEASE
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/bench/results/failover.md}
SUANLID=${SUANLID:-$ROOT/build/release/suanlid}
SUANLI=${SUANLI:-$ROOT/build/release/suanli}
CYCLES=${CYCLES:-100}
STOP_CYCLES=${STOP_CYCLES:-5}
LEASE=${LEASE:-6}
PGT="$ROOT/scripts/pg-test.sh"
TMP=$(mktemp -d)
PGDIR=""
PIDS=("" "")
TP=""
cleanup() {
	[ -n "$TP" ] && kill "$TP" 2>/dev/null
	for p in "${PIDS[@]}"; do
		[ -n "$p" ] && kill -CONT "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	[ -n "$PGDIR" ] && bash "$PGT" stop "$PGDIR"
	rm -rf "$TMP"
}
trap cleanup EXIT
for b in "$SUANLID" "$SUANLI"; do [ -x "$b" ] || { echo "failover: no $b (build it)" >&2; exit 1; }; done
out=$(PG_TEST_FSYNC=on bash "$PGT" start) || { echo "failover: cannot start PostgreSQL" >&2; exit 1; }
PGDIR=${out%% *}
STORE=$(bash "$PGT" createdb "$PGDIR" failover)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=("$(free_port)" "$(free_port)")
U=("http://127.0.0.1:${PORT[0]}" "http://127.0.0.1:${PORT[1]}")
BOTH="${U[0]},${U[1]}"
DATA="$TMP/data"
"$SUANLID" init --data "$DATA" --store "$STORE" >/dev/null || exit 1
export SUANLI_TOKEN
SUANLI_TOKEN=$(cat "$DATA/admin.token")

start_ctl() {
	"$SUANLID" serve --data "$DATA" --store "$STORE" --listen "127.0.0.1:${PORT[$1]}" \
		--simulate --lease "$LEASE" --log-level warn \
		--fleet "$ROOT/examples/demo-fleet.yaml" 2>>"$TMP/ctl$1.log" &
	PIDS[$1]=$!
}
role_of() { curl -s --max-time 1 "${U[$1]}/healthz" | jq -r '.role // empty' 2>/dev/null; }
wait_role() { # I ROLE SECS
	local end=$((SECONDS + $3))
	until [ "$(role_of "$1")" = "$2" ]; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.02
	done
}
leader() { if [ "$(role_of 0)" = leader ]; then echo 0; elif [ "$(role_of 1)" = leader ]; then echo 1; else echo -1; fi; }
now_ms() { date +%s%3N; }

start_ctl 0
wait_role 0 leader 30 || { echo "failover: no leader" >&2; exit 1; }
start_ctl 1
wait_role 1 standby 30 || { echo "failover: no standby" >&2; exit 1; }
"$SUANLI" --server "$BOTH" tenant create acme >/dev/null
JL=$("$SUANLI" --server "$BOTH" --json lease create --gpus 8 --tenant acme --duration 24h | jq -r .id)

# post_any PATH BODY KEY : a POST with Idempotency-Key KEY to each controller
# in turn, as a client with the URL list does; prints the answer's id (or
# "ok" for an answer without one) once one acknowledged it.
post_any() {
	local u out
	for u in "${U[@]}"; do
		out=$(curl -s --max-time 5 -X POST "$u$1" -H "Authorization: Bearer $SUANLI_TOKEN" \
			-H 'Content-Type: application/json' -H "Idempotency-Key: $3" --data-binary "$2" 2>/dev/null |
			jq -r 'if .error then empty else (.id // .posting.id // "ok") end' 2>/dev/null)
		[ -n "$out" ] && { printf '%s' "$out"; return 0; }
	done
	return 1
}
topup() { post_any /v1/tenants/acme/topups "{\"amount\": 100, \"reason\": \"$1\"}" "$1" >/dev/null; }
# job KEY : submits a job with that key and cancels it (a lease holds at
# most 64 jobs not yet ended; in --simulate no agent ends them); prints its id.
job() {
	local id
	id=$(post_any /v1/jobs "{\"lease\": \"$JL\", \"argv\": [\"true\"]}" "$1") || return 1
	post_any "/v1/jobs/$id/cancel" '{}' "c$1" >/dev/null
	printf '%s' "$id"
}

# Background traffic: creates (and releases of every second one) until told to stop.
traffic() {
	local i=0 id
	while [ ! -e "$TMP/stop" ]; do
		i=$((i + 1))
		id=$("$SUANLI" --server "$BOTH" --json lease create --gpus 1 --tenant acme \
			--duration 2h --idempotency-key "k$i" 2>/dev/null | jq -r '.id // empty')
		[ -n "$id" ] && echo "k$i $id" >>"$TMP/acked"
		if [ -n "$id" ] && [ $((i % 2)) -eq 0 ]; then
			"$SUANLI" --server "$BOTH" lease release "$id" >/dev/null 2>&1 &&
				echo "$id" >>"$TMP/released"
		fi
		topup "t$i" && echo "t$i" >>"$TMP/paid"
		id=$(job "j$i") && echo "j$i $id" >>"$TMP/jobs"
		echo "$i" >"$TMP/sent"
	done
}
: >"$TMP/paid"
: >"$TMP/jobs"
: >"$TMP/acked"
: >"$TMP/released"
traffic &
TP=$!

: >"$TMP/kill.ms"
: >"$TMP/client.ms"
for c in $(seq 1 "$CYCLES"); do
	L=$(leader)
	[ "$L" -ge 0 ] || { sleep 0.5; L=$(leader); }
	[ "$L" -ge 0 ] || { echo "failover: cycle $c: no leader" >&2; break; }
	S=$((1 - L))
	sleep 0.$((RANDOM % 5 + 1))
	t0=$(now_ms)
	kill -KILL "${PIDS[$L]}"
	"$SUANLI" --server "$BOTH" tenant create "t$c" >/dev/null 2>&1 && echo $(($(now_ms) - t0)) >>"$TMP/client.ms" &
	cp=$!
	wait_role "$S" leader 30 && echo $(($(now_ms) - t0)) >>"$TMP/kill.ms"
	wait "${PIDS[$L]}" 2>/dev/null
	wait "$cp"
	start_ctl "$L"
	wait_role "$L" standby 30
	printf '\rfailover: SIGKILL cycle %d/%d' "$c" "$CYCLES" >&2
done
echo >&2
: >"$TMP/stop.ms"
: >"$TMP/stepdown.ms"
for c in $(seq 1 "$STOP_CYCLES"); do
	L=$(leader)
	[ "$L" -ge 0 ] || break
	S=$((1 - L))
	t0=$(now_ms)
	kill -STOP "${PIDS[$L]}"
	wait_role "$S" leader 60 && echo $(($(now_ms) - t0)) >>"$TMP/stop.ms"
	t1=$(now_ms)
	kill -CONT "${PIDS[$L]}"
	wait_role "$L" standby 60 && echo $(($(now_ms) - t1)) >>"$TMP/stepdown.ms"
	printf '\rfailover: SIGSTOP cycle %d/%d' "$c" "$STOP_CYCLES" >&2
done
echo >&2
touch "$TMP/stop"
wait "$TP"
TP=""

# The history.
"$SUANLI" --server "$BOTH" --json lease list >"$TMP/list.json"
acked=$(wc -l <"$TMP/acked")
lost=0
dup=0
while read -r key id; do
	jq -e --arg id "$id" 'any(.[]; .id == $id)' "$TMP/list.json" >/dev/null || lost=$((lost + 1))
	again=$("$SUANLI" --server "$BOTH" --json lease create --gpus 1 --tenant acme --duration 2h \
		--idempotency-key "$key" 2>/dev/null | jq -r '.id // empty')
	[ "$again" = "$id" ] || dup=$((dup + 1))
done <"$TMP/acked"
"$SUANLI" --server "$BOTH" --json lease list >"$TMP/list.json"
twice=$(jq -r '[.[] | select(.state == "active") | .placement[] | .node as $n | .gpus[] | "\($n)/\(.)"]
	| group_by(.) | map(select(length > 1)) | length' "$TMP/list.json")
sent=$(cat "$TMP/sent")
"$SUANLI" --server "$BOTH" --json ledger --tenant acme --type topup >"$TMP/ledger.json"
paid=$(wc -l <"$TMP/paid")
paylost=0
while read -r key; do
	jq -e --arg k "$key" 'any(.[]; .reason == $k)' "$TMP/ledger.json" >/dev/null || paylost=$((paylost + 1))
done <"$TMP/paid"
paytwice=$(jq -r '.[].reason' "$TMP/ledger.json" | sort | uniq -d | wc -l)
for i in $(seq 1 "$sent"); do topup "t$i"; done
balance=$("$SUANLI" --server "$BOTH" --json balance --tenant acme | jq -r .balance)
"$SUANLI" --server "$BOTH" --json job list >"$TMP/jobs.json"
jobs=$(wc -l <"$TMP/jobs")
joblost=0
jobdiff=0
while read -r key id; do
	jq -e --arg id "$id" 'any(.[]; .id == $id)' "$TMP/jobs.json" >/dev/null || joblost=$((joblost + 1))
	[ "$(job "$key")" = "$id" ] || jobdiff=$((jobdiff + 1))
done <"$TMP/jobs"
for i in $(seq 1 "$sent"); do job "j$i" >/dev/null; done
"$SUANLI" --server "$BOTH" --json job list >"$TMP/jobs.json"
njobs=$(jq --arg l "$JL" '[.[] | select(.lease == $l)] | length' "$TMP/jobs.json")
notreleased=0
while read -r id; do
	st=$(jq -r --arg id "$id" '.[] | select(.id == $id) | .state' "$TMP/list.json")
	[ "$st" = active ] && notreleased=$((notreleased + 1))
done <"$TMP/released"

# pct FILE P : the P-th percentile (nearest rank) of the numbers in FILE.
pct() { sort -n "$1" | awk -v p="$2" '{a[NR]=$1} END {if (!NR) {print "-"; exit} r=int((p/100)*NR+0.999999); if (r<1) r=1; if (r>NR) r=NR; print a[r]}'; }
row() { printf '| %s | %d | %s | %s | %s |\n' "$1" "$(wc -l <"$2")" "$(pct "$2" 50)" "$(pct "$2" 99)" "$(pct "$2" 100)"; }
{
	echo "# Failover benchmark (bench/failover.sh)"
	echo
	echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "- machine: $(uname -srm), $(nproc) online cores"
	echo "- load average when written (other work on the machine skews figures): $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- two suanlid (Release) on one PostgreSQL $("$(pg_config --bindir)/postgres" --version | awk '{print $3}') (scripts/pg-test.sh, unix socket, fsync=on), --lease $LEASE s, \`--simulate\` demo fleet"
	echo "- traffic throughout: lease creates from the CLI (\`--server A,B\`, an Idempotency-Key per create, every second lease released), and with each a top-up of 100 fen and a job submission (curl, an Idempotency-Key each, to whichever controller answers)"
	echo
	echo "| event | cycles | p50 ms | p99 ms | max ms |"
	echo "|---|---:|---:|---:|---:|"
	row "SIGKILL leader -> standby leads (/healthz)" "$TMP/kill.ms"
	row "SIGKILL leader -> first write acknowledged via the URL list" "$TMP/client.ms"
	row "SIGSTOP leader -> standby leads (bounded below by the lease)" "$TMP/stop.ms"
	row "SIGCONT -> the old leader has stepped down (standby)" "$TMP/stepdown.ms"
	echo
	echo "History over the whole run: $acked lease creates acknowledged, $lost lost, $dup answered differently on a retry with their key, $twice GPUs in two active leases, $notreleased acknowledged releases undone. Top-ups: $paid of $sent acknowledged, $paylost lost, $paytwice in the ledger twice; after every key was sent again the balance is $balance fen (one top-up per key: $((sent * 100))). Jobs: $jobs of $sent acknowledged, $joblost lost, $jobdiff answered differently on a retry; after every key was sent again $njobs jobs (one per key: $sent)."
	echo
	echo "A killed leader's session ends with its process, PostgreSQL drops its advisory lock at once and the standby, polling every 250 ms, takes over without waiting for the lease; it then loads the state from the database. A stopped leader keeps its session, so the standby waits for the lease to run out and then terminates that session (aborting its open transaction). Goal: standby leads within 10 s each time (not asserted)."
} >"$OUT"
cat "$OUT"
