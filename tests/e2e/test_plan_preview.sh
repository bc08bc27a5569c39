#!/usr/bin/env bash
# test_plan_preview.sh - POST /v1/plan (the console's placement preview):
# where a lease request would go now, with each node's GPUs and NVLink
# bottleneck, or why it would not be placed; it changes nothing, follows
# drains, and a tenant previews only as itself.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
DATA="$TMP/data"
"$SUANLID" init --data "$DATA" >/dev/null || { bad "init"; finish; exit 1; }
A=$(cat "$DATA/admin.token")
if ! start_daemon "$TMP/log" --data "$DATA" --fleet "$SL_ROOT/examples/demo-fleet.yaml" --simulate; then
	bad "daemon starts" "$(cat "$TMP/log")"
	finish
	exit 1
fi
api "$A" POST /v1/tenants '{"name":"acme","regions":["cn-east"]}' >/dev/null
api "$A" POST /v1/tenants '{"name":"beta"}' >/dev/null
T=$(body_of "$(api "$A" POST /v1/tokens '{"role":"tenant","tenant":"acme"}')" | jq -r .token)
audit_size() { body_of "$(api "$A" GET '/v1/audit/log?limit=100000')" | jq length; }
free_h100() { body_of "$(api "$A" GET '/v1/nodes?model=h100-sxm')" | jq '[.[].free_gpus] | add'; }
before_audit=$(audit_size)
before_free=$(free_h100)

r=$(api "$T" POST /v1/plan '{"gpus":8,"models":["h100-sxm"]}')
expect_eq "a tenant's preview answers 200" "$(status_of "$r")" 200
p=$(body_of "$r")
node=$(jq -r '.placement[0].node' <<<"$p")
expect_eq "one node with 8 GPUs" "$(jq -c '[(.placement | length), (.placement[0].gpus | length)]' <<<"$p")" "[1,8]"
expect_eq "with its NVLink bottleneck (NVSwitch: 900 GB/s)" "$(jq -r '.placement[0].quality.bottleneck_gbps' <<<"$p")" 900
expect_eq "in the tenant's only region" "$(body_of "$(api "$A" GET "/v1/nodes/$node")" | jq -r .region)" cn-east
expect_eq "the score's bottleneck" "$(jq -r .score.bottleneck_gbps <<<"$p")" 900
expect_eq "nothing was placed" "$(free_h100)" "$before_free"
expect_eq "no lease exists" "$(body_of "$(api "$A" GET /v1/leases)" | jq length)" 0
expect_eq "and the audit log did not grow" "$(audit_size)" "$before_audit"

r=$(api "$T" POST /v1/leases '{"gpus":8,"models":["h100-sxm"]}')
expect_eq "the lease then lands where the preview said" "$(body_of "$r" | jq -r '.placement[0].node')" "$node"
r=$(api "$T" POST /v1/plan '{"gpus":8,"models":["h100-sxm"]}')
other=$(body_of "$r" | jq -r '.placement[0].node')
[ "$other" != "$node" ] && ok "the next preview avoids the GPUs now taken ($other)" || bad "the next preview avoids the GPUs now taken" "$other"
api "$A" POST "/v1/nodes/$other/drain" '{"reason":"test"}' >/dev/null
r=$(api "$T" POST /v1/plan '{"gpus":8,"models":["h100-sxm"]}')
third=$(body_of "$r" | jq -r '.placement[0].node')
[ "$third" != "$other" ] && [ "$third" != "$node" ] && ok "and a drained node ($third)" || bad "and a drained node" "$third"

r=$(api "$T" POST /v1/plan '{"gpus":4096,"models":["h100-sxm"]}')
expect_eq "too big: 200 with the refusal" "$(status_of "$r")" 200
expect_eq "and no placement" "$(body_of "$r" | jq -c .placement)" "[]"
expect_match "naming the constraint and why" "$(body_of "$r" | jq -r '.refused.constraint + ": " + .refused.why')" '^[a-z-]+: .+'
r=$(api "$T" POST /v1/plan '{"gpus":1,"tenant":"beta"}')
expect_eq "a tenant previews only as itself" "$(status_of "$r")" 403
r=$(api "$T" POST /v1/plan '{"gpus":1,"bogus":true}')
expect_match "an unknown field is a 400 naming it" "$(status_of "$r") $(body_of "$r")" "^400 .*bogus"
r=$(api "$A" POST /v1/plan '{"gpus":1,"tenant":"nobody"}')
expect_eq "an unknown tenant is a 404" "$(status_of "$r")" 404
r=$(api "$A" POST /v1/plan '{"gpus":2,"models":["gb200"]}')
expect_eq "a provider previews for nobody in particular" "$(body_of "$r" | jq -r '.placement[0].type')" gb200-nvl72-tray
stop_daemon || bad "daemon exits cleanly"
finish
