#!/usr/bin/env bash
# test_ctl_placement.sh - the controller's placement policy (issue 17):
# --placement frag (default) and bestfit; the workload learned from the
# controller's own requests, kept across a restart; explanations that say
# what the fragmentation term chose; GET /v1/placement/history and
# `suanli sim replay --from-controller` / `--history FILE` on it.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
DATA="$TMP/data"
FLEET="$SL_ROOT/bench/fleets/slurm-peer.yaml"
"$SUANLID" init --data "$DATA" >/dev/null || { bad "init"; finish; exit 1; }
A=$(cat "$DATA/admin.token")

"$SUANLID" serve --data "$DATA" --placement nope >"$TMP/bad.log" 2>&1
expect_eq "an unknown policy is a usage error" "$?" 2
expect_match "naming the choices" "$(cat "$TMP/bad.log")" "frag or bestfit"

if ! start_daemon "$TMP/log" --data "$DATA" --fleet "$FLEET" --simulate; then
	bad "daemon starts" "$(cat "$TMP/log")"
	finish
	exit 1
fi
expect_match "frag is the default" "$(cat "$TMP/log")" "placement=frag"
api "$A" POST /v1/tenants '{"name":"acme"}' >/dev/null
hist() { api "$A" GET /v1/placement/history | cut -d' ' -f2-; }
expect_eq "a fresh controller has learned nothing yet" "$(hist | jq -r '.placement.seen')" 0
expect_eq "and places by the cold-start prior" "$(hist | jq -r '[.placement.classes[].gpus] | join(",")')" "1,2,4,8"

IDS=()
for i in $(seq 1 70); do
	g=$(( i % 3 == 0 ? 2 : 1 ))
	r=$(api "$A" POST /v1/leases "{\"tenant\":\"acme\",\"gpus\":$g}")
	IDS+=("$(body_of "$r" | jq -r .id)")
done
expect_eq "70 requests counted" "$(hist | jq -r '.placement.seen')" 70
expect_eq "1-GPU requests are the largest class" \
	"$(hist | jq -r '.placement.classes | max_by(.share) | .gpus')" 1
L=$(api "$A" GET "/v1/leases/${IDS[69]}" | cut -d' ' -f2-)
expect_eq "a lease's score says frag chose it" "$(echo "$L" | jq -r .score.fragmentation.policy)" frag
expect_match "with its fragmentation growth" "$(echo "$L" | jq -r '.score.fragmentation | keys | join(",")')" \
	"bestfit_delta_milli,bestfit_same,delta_milli"
expect_match "its explanation says what the fragmentation term chose" \
	"$(echo "$L" | jq -r .explanation)" "fragmentation-aware: "
for i in $(seq 0 2 39); do
	api "$A" POST "/v1/leases/${IDS[$i]}/release" >/dev/null
done
hist >"$TMP/history.json"
expect_eq "the history holds every lease" "$(jq '.leases | length' "$TMP/history.json")" 70
expect_eq "ended ones with their end" "$(jq '[.leases[] | select(.end_s != null)] | length' "$TMP/history.json")" 20
expect_match "and the fleet file" "$(jq -r .fleet "$TMP/history.json")" "sites:"

out=$(SUANLI_SERVER=$URL SUANLI_TOKEN=$A "$SUANLI" sim replay --from-controller --json)
expect_eq "sim replay --from-controller replays the 70 leases" "$(echo "$out" | jq .pods)" 70
expect_eq "all of them start on the same fleet" "$(echo "$out" | jq .started)" 70
out=$("$SUANLI" sim replay --history "$TMP/history.json" --policy bestfit --json --plot "$TMP/r.svg")
expect_eq "--history FILE replays an export, with another policy" "$(echo "$out" | jq -r .policy)" bestfit
expect_match "and plots it" "$(head -c 300 "$TMP/r.svg")" "<svg"
"$SUANLI" sim replay --history "$TMP/history.json" --pods x.csv >/dev/null 2>"$TMP/err"
expect_eq "--history with --pods is a usage error" "$?" 2

stop_daemon || bad "daemon exits cleanly"
start_daemon "$TMP/log2" --data "$DATA" --fleet "$FLEET" --simulate || bad "daemon restarts" "$(cat "$TMP/log2")"
expect_eq "the learned window survives a restart" "$(hist | jq -r '.placement.seen')" 70
expect_match "and says so" "$(cat "$TMP/log2")" "placement workload restored"
stop_daemon || bad "daemon exits cleanly"

start_daemon "$TMP/log3" --data "$DATA" --fleet "$FLEET" --simulate --placement bestfit ||
	bad "daemon starts with bestfit" "$(cat "$TMP/log3")"
expect_eq "bestfit reports its policy" "$(hist | jq -r .placement.policy)" bestfit
r=$(api "$A" POST /v1/leases '{"tenant":"acme","gpus":1}')
expect_eq "and its placements carry no fragmentation term" \
	"$(body_of "$r" | jq -r '.score.fragmentation // "none"')" none
stop_daemon || bad "daemon exits cleanly"
finish
