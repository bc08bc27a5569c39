#!/usr/bin/env bash
# test_ctl_sched.sh - scheduling through the daemon (DESIGN.md §5) on the demo
# fleet's small pools: a gang placed whole or not at all, spot preempted by an
# hourly lease after its notice, a quota refused with a clear error, a
# reservation honoured, and a pending lease surviving a restart in order.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
DATA="$TMP/data"
"$SUANLID" init --data "$DATA" >/dev/null || { bad "init"; finish; exit 1; }
A=$(cat "$DATA/admin.token")
if ! start_daemon "$TMP/log" --data "$DATA" --fleet "$SL_ROOT/examples/demo-fleet.yaml" --simulate --preempt-notice 1; then
	bad "daemon starts" "$(cat "$TMP/log")"
	finish
	exit 1
fi
api "$A" POST /v1/tenants '{"name":"acme"}' >/dev/null
api "$A" POST /v1/tenants '{"name":"beta"}' >/dev/null
api "$A" POST /v1/tenants '{"name":"capped","quotas":{"h200-sxm":8}}' >/dev/null
free_of() { api "$A" GET /v1/nodes | cut -d' ' -f2- | jq "[.[] | select(.model == \"$1\") | .free_gpus] | add"; }
lease() { api "$A" POST /v1/leases "$1"; }
field() { api "$A" GET "/v1/leases/$1" | cut -d' ' -f2- | jq -r "$2"; }

# ---- gang: whole or nothing (b200: 2 nodes x 8) ----
r=$(lease '{"tenant":"acme","gpus":8,"models":["b200"]}')
ONE=$(body_of "$r" | jq -r .id)
r=$(lease '{"tenant":"beta","gpus":16,"per_node":8,"models":["b200"]}')
GANG=$(body_of "$r" | jq -r .id)
expect_eq "gang that does not fit waits" "$(body_of "$r" | jq -r .state)" pending
expect_eq "and takes no GPUs meanwhile" "$(free_of b200)" 8
expect_match "pending lease says why it waits" "$(body_of "$r" | jq -r .queue.reason)" '.'
api "$A" POST "/v1/leases/$ONE/release" >/dev/null
expect_eq "gang starts whole once room is made" "$(field "$GANG" .state)" active
expect_eq "gang spans two nodes" "$(field "$GANG" '.placement | length')" 2
api "$A" POST "/v1/leases/$GANG/release" >/dev/null

# ---- backfill must not delay the head ----
r=$(lease '{"tenant":"acme","gpus":8,"models":["b200"],"duration_s":3600}')
L1=$(body_of "$r" | jq -r .id)
r=$(lease '{"tenant":"beta","gpus":16,"per_node":8,"models":["b200"]}')
HEAD=$(body_of "$r" | jq -r .id)
expect_eq "gang head waits for the running lease's end" "$(body_of "$r" | jq -r .state)" pending
r=$(lease '{"tenant":"acme","gpus":8,"models":["b200"]}')
NODUR=$(body_of "$r" | jq -r .id)
expect_eq "a lease without a duration does not pass the head" "$(body_of "$r" | jq -r .state)" pending
r=$(lease '{"tenant":"acme","gpus":8,"models":["b200"],"duration_s":7200}')
LATE=$(body_of "$r" | jq -r .id)
expect_eq "a lease that would end after the head could start does not pass it (GPUs free)" "$(body_of "$r" | jq -r .state)" pending
r=$(lease '{"tenant":"acme","gpus":8,"models":["b200"],"duration_s":600}')
BF=$(body_of "$r" | jq -r .id)
expect_eq "a short declared lease backfills" "$(body_of "$r" | jq -r .state)" active
expect_eq "and says so" "$(body_of "$r" | jq -r '.history[-1].reason')" "placed (backfilled)"
for id in "$NODUR" "$LATE" "$BF" "$L1"; do api "$A" POST "/v1/leases/$id/release" >/dev/null; done
expect_eq "the head starts when its GPUs free" "$(field "$HEAD" .state)" active
api "$A" POST "/v1/leases/$HEAD/release" >/dev/null

# ---- fair share between two tenants (a100: 4 nodes x 8) ----
BLOCK=()
for _ in 1 2 3 4; do
	r=$(lease '{"tenant":"acme","gpus":8,"models":["a100-sxm"]}')
	BLOCK+=("$(body_of "$r" | jq -r .id)")
done
A1=$(lease '{"tenant":"acme","gpus":8,"models":["a100-sxm"]}' | cut -d' ' -f2- | jq -r .id)
A2=$(lease '{"tenant":"acme","gpus":8,"models":["a100-sxm"]}' | cut -d' ' -f2- | jq -r .id)
B1=$(lease '{"tenant":"beta","gpus":8,"models":["a100-sxm"]}' | cut -d' ' -f2- | jq -r .id)
B2=$(lease '{"tenant":"beta","gpus":8,"models":["a100-sxm"]}' | cut -d' ' -f2- | jq -r .id)
api "$A" POST "/v1/leases/${BLOCK[0]}/release" >/dev/null
api "$A" POST "/v1/leases/${BLOCK[1]}/release" >/dev/null
expect_eq "fair share: the tenant running less goes first" \
	"$(field "$B1" .state) $(field "$B2" .state) $(field "$A1" .state) $(field "$A2" .state)" \
	"active active pending pending"
api "$A" POST "/v1/leases/${BLOCK[2]}/release" >/dev/null
api "$A" POST "/v1/leases/${BLOCK[3]}/release" >/dev/null
expect_eq "then the other tenant's, in submission order" "$(field "$A1" .state) $(field "$A2" .state)" "active active"
for id in "$A1" "$A2" "$B1" "$B2"; do api "$A" POST "/v1/leases/$id/release" >/dev/null; done

# ---- spot preempted by hourly, with notice ----
r=$(lease '{"tenant":"acme","gpus":16,"per_node":8,"models":["b200"],"plan":"spot"}')
SPOT=$(body_of "$r" | jq -r .id)
expect_eq "spot lease runs" "$(body_of "$r" | jq -r .state)" active
r=$(lease '{"tenant":"beta","gpus":8,"models":["b200"],"plan":"hourly"}')
HOUR=$(body_of "$r" | jq -r .id)
expect_eq "hourly lease waits for the spot's notice" "$(body_of "$r" | jq -r .state)" pending
expect_eq "spot lease gets a preemption notice" "$(field "$SPOT" .state)" preempting
expect_match "with a deadline" "$(field "$SPOT" .preempt_deadline)" '^20'
sleep 1.5
expect_eq "spot lease preempted after the notice" "$(field "$SPOT" .state)" preempted
expect_eq "hourly lease runs" "$(field "$HOUR" .state)" active
api "$A" POST "/v1/leases/$HOUR/release" >/dev/null

# ---- quota ----
r=$(lease '{"tenant":"capped","gpus":8,"models":["h200-sxm"]}')
expect_eq "within quota 201" "$(status_of "$r")" 201
r=$(lease '{"tenant":"capped","gpus":8,"models":["h200-sxm"]}')
expect_eq "over quota 403" "$(status_of "$r")" 403
expect_eq "quota error code" "$(body_of "$r" | jq -r .error.code)" quota
expect_match "quota error says which" "$(body_of "$r" | jq -r .error.message)" 'h200-sxm'

# ---- reservation honoured ----
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
later=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
r=$(api "$A" POST /v1/reservations "{\"tenant\":\"beta\",\"nodes\":\"qyc-b300-[01-02]\",\"start\":\"$now\",\"end\":\"$later\"}")
expect_eq "reservation 201" "$(status_of "$r")" 201
r=$(api "$A" GET /v1/nodes/qyc-b300-01)
expect_eq "an open window lends the node to its tenant" "$(body_of "$r" | jq -r .reserved_for)" beta
r=$(lease '{"tenant":"acme","gpus":8,"models":["b300"]}')
OUTSIDER=$(body_of "$r" | jq -r .id)
expect_eq "another tenant cannot use reserved nodes" "$(body_of "$r" | jq -r .state)" pending
r=$(lease '{"tenant":"beta","gpus":8,"models":["b300"],"duration_s":600}')
expect_eq "the reserving tenant can (declared duration: backfills past the head)" "$(body_of "$r" | jq -r .state)" active

# ---- restart keeps the queue ----
r=$(api "$A" GET /v1/queue)
before=$(body_of "$r" | jq -c '[.[] | .lease]')
expect_match "queue holds the waiting lease" "$before" "$OUTSIDER"
stop_daemon
start_daemon "$TMP/log2" --data "$DATA" --simulate --preempt-notice 1 ||
	{ bad "restart" "$(cat "$TMP/log2")"; finish; exit 1; }
r=$(api "$A" GET /v1/queue)
expect_eq "queue order survives a restart" "$(body_of "$r" | jq -c '[.[] | .lease]')" "$before"
expect_eq "reservation still honoured after restart" "$(field "$OUTSIDER" .state)" pending

# ---- withdrawing a waiting lease ----
# (The waiting b300 lease would be the queue's head, which nothing without a
# declared duration may pass: withdraw it first.)
r=$(api "$A" POST "/v1/leases/$OUTSIDER/release")
expect_eq "a waiting lease can be withdrawn" "$(body_of "$r" | jq -r .state)" released

# ---- a lease running across a restart is the scheduler's again ----
r=$(lease '{"tenant":"acme","gpus":8,"models":["h200-sxm"],"plan":"spot"}')
SPOT3=$(body_of "$r" | jq -r .id)
place3=$(field "$SPOT3" '.placement[0].node')
stop_daemon
start_daemon "$TMP/log2b" --data "$DATA" --simulate --preempt-notice 1 ||
	{ bad "restart" "$(cat "$TMP/log2b")"; finish; exit 1; }
expect_match "running leases go back to the scheduler" "$(cat "$TMP/log2b")" 'running leases restored.*scheduled=[1-9]'
expect_eq "with the same placement" "$(field "$SPOT3" '.placement[0].node')" "$place3"
for _ in 1 2; do lease '{"tenant":"beta","gpus":8,"models":["h200-sxm"],"duration_s":60}' >/dev/null; done
r=$(lease '{"tenant":"beta","gpus":8,"models":["h200-sxm"],"duration_s":60}')
H3=$(body_of "$r" | jq -r .id)
expect_eq "so a restored spot lease can still be preempted" "$(field "$SPOT3" .state)" preempting
sleep 1.3
expect_eq "and its GPUs go to the waiting lease" "$(field "$H3" .state)" active

# ---- a preemption notice survives a restart ----
r=$(lease '{"tenant":"acme","gpus":16,"per_node":8,"models":["h100-nvl"],"plan":"spot"}')
SPOT2=$(body_of "$r" | jq -r .id)
r=$(lease '{"tenant":"beta","gpus":8,"models":["h100-nvl"]}')
HOUR2=$(body_of "$r" | jq -r .id)
expect_eq "second spot lease gets its notice" "$(field "$SPOT2" .state)" preempting
stop_daemon
start_daemon "$TMP/log3" --data "$DATA" --simulate --preempt-notice 1 ||
	{ bad "restart" "$(cat "$TMP/log3")"; finish; exit 1; }
sleep 1.2
expect_eq "the notice still ends the spot lease after a restart" "$(field "$SPOT2" .state)" preempted
expect_eq "and the waiting lease gets its GPUs" "$(field "$HOUR2" .state)" active
stop_daemon
expect_eq "daemon stops cleanly" "$?" 0
finish
