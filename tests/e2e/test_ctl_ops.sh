#!/usr/bin/env bash
# test_ctl_ops.sh - the controller's operator paths end to end: config file,
# drain/resume, fleet replacement (refused while a lease runs on a node that
# would go), the wait queue and its release, expiry, extend, elastic scale,
# reservations, metrics.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
DATA="$TMP/data"
FLEET="$SL_ROOT/examples/demo-fleet.yaml"

"$SUANLID" init --data "$DATA" >/dev/null || { bad "init"; finish; exit 1; }
ADMIN=$(cat "$DATA/admin.token")
printf '# suanlid settings\ndata = %s\nfleet = %s\nsimulate = true\nlisten = 127.0.0.1:1\n' \
	"$DATA" "$FLEET" >"$TMP/suanlid.conf"
printf 'colour = red\n' >"$TMP/bad.conf"
out=$("$SUANLID" serve --config "$TMP/bad.conf" 2>&1)
expect_eq "unknown config key refused (exit 2)" "$?" 2
expect_match "config error names file and line" "$out" 'bad.conf:1: unknown key'
# The command line's --listen (port 0) wins over the file's.
if ! start_daemon "$TMP/log" --config "$TMP/suanlid.conf"; then
	bad "daemon starts from a config file" "$(cat "$TMP/log")"
	finish
	exit 1
fi
ok "daemon starts from a config file, flags winning"
api "$ADMIN" POST /v1/tenants '{"name":"acme"}' >/dev/null
api "$ADMIN" POST /v1/tenants '{"name":"beta"}' >/dev/null

# ---- drain / resume ----
r=$(api "$ADMIN" POST /v1/nodes/fza-h200-01/drain '{}')
expect_eq "drain needs a reason" "$(status_of "$r")" 400
long=$(head -c 300 /dev/zero | tr '\0' x)
r=$(api "$ADMIN" POST /v1/nodes/fza-h200-01/drain "{\"reason\":\"$long\"}")
expect_eq "drain reason over 256 bytes 413" "$(status_of "$r")" 413
for n in 01 02 03 04; do
	api "$ADMIN" POST "/v1/nodes/fza-h200-$n/drain" '{"reason":"bios update"}' >/dev/null
done
r=$(api "$ADMIN" GET /v1/nodes/fza-h200-01)
expect_eq "drained node state" "$(body_of "$r" | jq -r .state)" drained
expect_eq "drained node reason" "$(body_of "$r" | jq -r .reason)" "bios update"
r=$(api "$ADMIN" POST /v1/leases '{"tenant":"acme","gpus":8,"models":["h200-sxm"]}')
expect_eq "lease on drained model waits" "$(body_of "$r" | jq -r .state)" pending
WAIT=$(body_of "$r" | jq -r .id)
expect_eq "pending lease shows its queue position" "$(body_of "$r" | jq .queue.position)" 1
r=$(api "$ADMIN" GET /v1/queue)
expect_eq "queue lists it" "$(body_of "$r" | jq -r '.[0].lease')" "$WAIT"
expect_match "queue says why" "$(body_of "$r" | jq -r '.[0].reason')" 'service'
r=$(api "$ADMIN" POST /v1/nodes/fza-h200-03/resume)
expect_eq "resume 200" "$(status_of "$r")" 200
r=$(api "$ADMIN" GET "/v1/leases/$WAIT")
expect_eq "resume starts the waiting lease" "$(body_of "$r" | jq -r .state)" active
expect_eq "on the resumed node" "$(body_of "$r" | jq -r '.placement[0].node')" fza-h200-03
r=$(api "$ADMIN" GET /v1/nodes/fza-h200-01)
expect_eq "the others stay drained" "$(body_of "$r" | jq -r .state)" drained

# ---- the queue drains when capacity frees ----
r=$(api "$ADMIN" POST /v1/leases '{"tenant":"beta","gpus":8,"models":["h200-sxm"]}')
SECOND=$(body_of "$r" | jq -r .id)
expect_eq "second h200 lease waits (only one node in service)" "$(body_of "$r" | jq -r .state)" pending
r=$(api "$ADMIN" POST "/v1/leases/$WAIT/release")
r=$(api "$ADMIN" GET "/v1/leases/$SECOND")
expect_eq "release hands the node to the next in the queue" "$(body_of "$r" | jq -r .state)" active

# ---- fleet replacement ----
grep -v 'fza-h200' "$FLEET" >"$TMP/smaller.yaml"
r=$(api "$ADMIN" PUT /v1/fleet "@$TMP/smaller.yaml" -H 'Content-Type: application/yaml')
expect_eq "fleet without a running lease's node 409" "$(status_of "$r")" 409
expect_match "409 names the node" "$(body_of "$r" | jq -r .error.message)" 'fza-h200-03'
r=$(api "$ADMIN" PUT /v1/fleet "@$FLEET" -H 'Content-Type: application/yaml')
expect_eq "same fleet again 200" "$(status_of "$r")" 200
expect_eq "fleet version counts" "$(body_of "$r" | jq .version)" 2
printf 'sites: [\n' >"$TMP/broken.yaml"
r=$(api "$ADMIN" PUT /v1/fleet "@$TMP/broken.yaml")
expect_eq "broken fleet file 400" "$(status_of "$r")" 400
r=$(api "$ADMIN" GET "/v1/leases/$SECOND")
expect_eq "running lease kept through replacement" "$(body_of "$r" | jq -r .state)" active

# ---- expiry and extend ----
r=$(api "$ADMIN" POST /v1/leases '{"tenant":"acme","gpus":1,"models":["l40s"],"duration_s":1}')
SHORT=$(body_of "$r" | jq -r .id)
r=$(api "$ADMIN" POST /v1/leases '{"tenant":"acme","gpus":1,"models":["l40s"],"duration_s":1}')
LONGER=$(body_of "$r" | jq -r .id)
r=$(api "$ADMIN" POST "/v1/leases/$LONGER/extend" '{"by_s":3600}')
expect_eq "extend 200" "$(status_of "$r")" 200
expect_eq "extend adds to the duration" "$(body_of "$r" | jq .request.duration_s)" 3601
r=$(api "$ADMIN" POST "/v1/leases/$LONGER/extend" '{"by_s":0}')
expect_eq "extend by 0 is 400" "$(status_of "$r")" 400
sleep 1.3
r=$(api "$ADMIN" GET "/v1/leases/$SHORT")
expect_eq "a lease expires when its duration ends" "$(body_of "$r" | jq -r .state)" expired
r=$(api "$ADMIN" GET "/v1/leases/$LONGER")
expect_eq "the extended one runs on" "$(body_of "$r" | jq -r .state)" active

# ---- elastic scale ----
r=$(api "$ADMIN" POST /v1/leases '{"tenant":"acme","gpus":8,"models":["b200"],"elastic":{"min":4,"max":16}}')
EL=$(body_of "$r" | jq -r .id)
r=$(api "$ADMIN" POST "/v1/leases/$EL/scale" '{"gpus":16}')
expect_eq "scale up 200" "$(status_of "$r")" 200
expect_eq "scaled to 16 GPUs" "$(body_of "$r" | jq '[.placement[].gpus | length] | add')" 16
r=$(api "$ADMIN" POST "/v1/leases/$EL/scale" '{"gpus":4}')
expect_eq "scaled down to 4 GPUs" "$(body_of "$r" | jq '[.placement[].gpus | length] | add')" 4
expect_eq "epoch moves with each change" "$(body_of "$r" | jq .epoch)" 3
r=$(api "$ADMIN" POST "/v1/leases/$EL/scale" '{"gpus":32}')
expect_eq "scale beyond max 400" "$(status_of "$r")" 400
r=$(api "$ADMIN" POST "/v1/leases/$SECOND/scale" '{"gpus":4}')
expect_eq "scale of a non-elastic lease 409" "$(status_of "$r")" 409
r=$(api "$ADMIN" GET /v1/nodes)
expect_eq "b200 GPUs given back on shrink" \
	"$(body_of "$r" | jq '[.[] | select(.model == "b200") | .free_gpus] | add')" 12

# ---- reservations ----
r=$(api "$ADMIN" POST /v1/reservations '{"tenant":"acme","nodes":"fza-h100-[001-002]","start":"2030-01-01T00:00:00Z","end":"2030-02-01T00:00:00Z"}')
expect_eq "reservation 201" "$(status_of "$r")" 201
expect_eq "reservation expands the range" "$(body_of "$r" | jq -c .nodes)" '["fza-h100-001","fza-h100-002"]'
r=$(api "$ADMIN" POST /v1/reservations '{"tenant":"beta","nodes":"fza-h100-002","start":"2030-01-15T00:00:00Z","end":"2030-03-01T00:00:00Z"}')
expect_eq "overlapping reservation 409" "$(status_of "$r")" 409
r=$(api "$ADMIN" POST /v1/reservations '{"tenant":"beta","nodes":"nosuch-[1-2]","start":"2030-01-15T00:00:00Z","end":"2030-03-01T00:00:00Z"}')
expect_eq "reservation on unknown nodes 400" "$(status_of "$r")" 400
r=$(api "$ADMIN" POST /v1/reservations '{"tenant":"beta","nodes":"fza-h100-003","start":"2030-03-01T00:00:00Z","end":"2030-01-01T00:00:00Z"}')
expect_eq "reservation ending before it starts 400" "$(status_of "$r")" 400
# Times that do not exist are refused, not normalised (31 February was taken
# as 3 March, second 60 as the next minute, a tenth fraction digit dropped).
for t in 2030-02-31T00:00:00Z 2030-03-01T00:00:60Z 2030-03-01T00:00:00.1234567891Z; do
	r=$(api "$ADMIN" POST /v1/reservations '{"tenant":"beta","nodes":"fza-h100-003","start":"'$t'","end":"2030-04-01T00:00:00Z"}')
	expect_eq "reservation starting $t 400" "$(status_of "$r")" 400
	expect_match "reservation starting $t: says why" "$(body_of "$r" | jq -r .error.message)" "RFC 3339"
done
r=$(api "$ADMIN" POST /v1/tokens '{"role":"tenant","tenant":"beta"}')
BETA=$(body_of "$r" | jq -r .token)
r=$(api "$BETA" GET /v1/reservations)
expect_eq "a tenant sees only its reservations" "$(body_of "$r" | jq length)" 0

# ---- metrics ----
r=$(api "$ADMIN" GET /metrics)
m=$(body_of "$r")
expect_match "metrics: GPUs by state and model" "$m" 'suanli_gpus\{state="leased",model="h200-sxm"\} 8'
expect_match "metrics: queue depth" "$m" '^suanli_queue_depth 0$'
expect_match "metrics: placement histogram" "$m" 'suanli_placement_seconds_bucket\{le="\+Inf"\} [1-9]'
expect_match "metrics: requests by route and status" "$m" 'suanli_http_requests_total\{route="lease_create",status="201"\} [1-9]'

stop_daemon
expect_eq "daemon stops cleanly" "$?" 0
expect_match "state changes are logged one per line" "$(grep -c 'msg="lease state"' "$TMP/log")" '^[1-9]'

# ---- after a restart: leases that were running are scaled and released by
# the controller itself, and what they give back reaches the queue ----
# (--keep-ended 1: ended leases beyond the last one live only in the store.)
start_daemon "$TMP/log2" --data "$DATA" --simulate --keep-ended 1 || { bad "restart" "$(cat "$TMP/log2")"; finish; exit 1; }
r=$(api "$ADMIN" GET "/v1/leases/$WAIT")
expect_eq "an ended lease read back from the store" "$(body_of "$r" | jq -r .state)" released
expect_eq "with where it ran" "$(body_of "$r" | jq -r '.placement[0].node')" fza-h200-03
r=$(api "$ADMIN" GET "/v1/leases/$SHORT")
expect_eq "another one, expired" "$(body_of "$r" | jq -r .state)" expired
r=$(api "$ADMIN" POST "/v1/leases/$SHORT/extend" '{"by_s":60}')
expect_eq "an evicted ended lease cannot be extended (409)" "$(status_of "$r")" 409
r=$(api "$ADMIN" GET /v1/leases)
expect_eq "lease list includes evicted leases, in id order" \
	"$(body_of "$r" | jq -c '[.[].id] == ([.[].id] | sort) and length == 5')" true
expect_eq "and their states" "$(body_of "$r" | jq -r "[.[] | select(.id == \"$WAIT\")][0].state")" released
r=$(api "$ADMIN" POST "/v1/leases/$EL/scale" '{"gpus":12}')
expect_eq "scale up after a restart" "$(body_of "$r" | jq '[.placement[].gpus | length] | add')" 12
r=$(api "$ADMIN" POST "/v1/leases/$EL/scale" '{"gpus":6}')
expect_eq "scale down after a restart" "$(body_of "$r" | jq '[.placement[].gpus | length] | add')" 6
r=$(api "$ADMIN" POST /v1/leases '{"tenant":"beta","gpus":8,"models":["h200-sxm"]}')
NEXT=$(body_of "$r" | jq -r .id)
expect_eq "h200 lease waits (one node in service, taken)" "$(body_of "$r" | jq -r .state)" pending
api "$ADMIN" POST "/v1/leases/$SECOND/release" >/dev/null
expect_eq "a release after a restart starts the waiting lease" "$(api "$ADMIN" GET "/v1/leases/$NEXT" | cut -d' ' -f2- | jq -r .state)" active
stop_daemon
expect_eq "daemon stops cleanly after the restart" "$?" 0
finish
