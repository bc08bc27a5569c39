#!/usr/bin/env bash
# test_one_leaf.sh - "one_leaf" (and `suanli lease create --one-leaf`) through
# the daemon, on the Slurm side-by-side fleet (bench/fleets/slurm-peer.yaml:
# 4 leaves of 8 nodes): a gang that no leaf can hold now waits instead of
# spanning leaves, says why, and starts in one leaf once one frees; without
# the option the same gang spans two leaves at once. A wrong type is refused.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
DATA="$TMP/data"
"$SUANLID" init --data "$DATA" >/dev/null || { bad "init"; finish; exit 1; }
A=$(cat "$DATA/admin.token")
if ! start_daemon "$TMP/log" --data "$DATA" --fleet "$SL_ROOT/bench/fleets/slurm-peer.yaml" --simulate; then
	bad "daemon starts" "$(cat "$TMP/log")"
	finish
	exit 1
fi
api "$A" POST /v1/tenants '{"name":"acme"}' >/dev/null
lease() { api "$A" POST /v1/leases "$1"; }
field() { api "$A" GET "/v1/leases/$1" | cut -d' ' -f2- | jq -r "$2"; }
leaves_of() { api "$A" GET "/v1/leases/$1" | cut -d' ' -f2- | jq -r '[.placement[].leaf] | unique | length'; }

# The NVSwitch leaves (leaf2: n017-n024, leaf3: n025-n032, model h100-sxm):
# draining 3 nodes of leaf2 and 4 of leaf3 leaves 5 and 4 usable nodes.
for n in n017 n018 n019 n025 n026 n027 n028; do
	api "$A" POST "/v1/nodes/$n/drain" '{"reason":"test: fragment the leaves"}' >/dev/null
done
SXM='"models":["h100-sxm"],"per_node":8'
r=$(lease "{\"tenant\":\"acme\",\"gpus\":40,$SXM,\"one_leaf\":true}")
F=$(body_of "$r" | jq -r .id)
expect_eq "a 5-node one-leaf gang starts at once" "$(body_of "$r" | jq -r .state)" active
expect_eq "in one leaf" "$(leaves_of "$F")" 1
expect_eq "leaf2, the one with 5" "$(field "$F" '.placement[0].leaf')" leaf2
api "$A" POST "/v1/leases/$F/release" >/dev/null

r=$(lease "{\"tenant\":\"acme\",\"gpus\":48,$SXM}")
S=$(body_of "$r" | jq -r .id)
expect_eq "without one_leaf a 6-node gang starts at once" "$(body_of "$r" | jq -r .state)" active
expect_eq "over two leaves" "$(leaves_of "$S")" 2
api "$A" POST "/v1/leases/$S/release" >/dev/null

r=$(lease "{\"tenant\":\"acme\",\"gpus\":48,$SXM,\"one_leaf\":true}")
W=$(body_of "$r" | jq -r .id)
expect_eq "a 6-node one-leaf gang waits: no leaf has 6 usable nodes" "$(body_of "$r" | jq -r .state)" pending
expect_match "and says it must sit under one leaf" "$(body_of "$r" | jq -r .queue.reason)" "one leaf"
stop_daemon || bad "daemon exits cleanly"
start_daemon "$TMP/log2" --data "$DATA" --fleet "$SL_ROOT/bench/fleets/slurm-peer.yaml" --simulate || bad "daemon restarts" "$(cat "$TMP/log2")"
expect_eq "after a restart the one-leaf gang still waits" "$(field "$W" .state)" pending
api "$A" POST /v1/nodes/n017/resume >/dev/null
expect_eq "once leaf2 has 6 usable nodes it starts" "$(field "$W" .state)" active
expect_eq "in one leaf" "$(leaves_of "$W")" 1
api "$A" POST "/v1/leases/$W/release" >/dev/null

r=$(lease '{"tenant":"acme","gpus":16,"per_node":8,"one_leaf":"yes"}')
expect_eq "one_leaf must be a boolean" "$(status_of "$r")" 400
expect_match "and the error says so" "$(body_of "$r")" "one_leaf"

# the CLI
T=$(api "$A" POST /v1/tokens '{"role":"tenant","tenant":"acme","user":"u"}' | cut -d' ' -f2- | jq -r .token)
out=$(SUANLI_SERVER=$URL SUANLI_TOKEN=$T "$SUANLI" lease create --gpus 16 --per-node 8 --one-leaf --json)
expect_eq "lease create --one-leaf sends one_leaf" "$(printf '%s' "$out" | jq -r .request.one_leaf)" true
expect_eq "and the gang is in one leaf" "$(printf '%s' "$out" | jq -r '[.placement[].leaf] | unique | length')" 1
out=$(SUANLI_SERVER=$URL SUANLI_TOKEN=$T "$SUANLI" lease show "$(printf '%s' "$out" | jq -r .id)")
expect_match "lease show says one leaf switch" "$out" "one leaf switch"

stop_daemon || bad "daemon exits cleanly"
finish
