#!/usr/bin/env bash
# test_ctl_paging.sh - GET /v1/nodes and GET /v1/jobs in pages (?limit,
# ?after) and filtered (state, model, site, leaf, tenant; jobs: state, lease,
# tenant, node), and the CLI following the pages (issue 17).
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
DATA="$TMP/data"
FLEET="$SL_ROOT/bench/fleets/slurm-peer.yaml"
"$SUANLID" init --data "$DATA" >/dev/null || { bad "init"; finish; exit 1; }
A=$(cat "$DATA/admin.token")
if ! start_daemon "$TMP/log" --data "$DATA" --fleet "$FLEET" --simulate; then
	bad "daemon starts" "$(cat "$TMP/log")"
	finish
	exit 1
fi
get() { api "$A" GET "$1" | cut -d' ' -f2-; }
expect_eq "without ?limit the list stays an array" "$(get /v1/nodes | jq -r 'type + " " + (length|tostring)')" "array 32"
p1=$(get "/v1/nodes?limit=10")
expect_eq "a page of 10" "$(echo "$p1" | jq '.items | length')" 10
N=$(echo "$p1" | jq -r .next)
expect_eq "next names the page's last node" "$N" "$(echo "$p1" | jq -r '.items[9].name')"
names=$(echo "$p1" | jq -r '.items[].name')
while [ "$N" != null ]; do
	p=$(get "/v1/nodes?limit=10&after=$N")
	names="$names
$(echo "$p" | jq -r '.items[].name')"
	N=$(echo "$p" | jq -r .next)
done
expect_eq "following the pages gives every node once" "$(echo "$names" | sort -u | wc -l | tr -d ' ')" 32
expect_eq "in the fleet's order" "$(echo "$names" | tr '\n' ' ')" "$(get /v1/nodes | jq -r '.[].name' | tr '\n' ' ')"
expect_eq "the last page says there is no next" "$(get "/v1/nodes?limit=32" | jq -r .next)" null
expect_eq "?leaf filters" "$(get "/v1/nodes?leaf=leaf2" | jq length)" 8
expect_eq "?model filters" "$(get "/v1/nodes?model=h100-nvl" | jq length)" 16
expect_eq "filters combine with pages" "$(get "/v1/nodes?model=h100-sxm&leaf=leaf3&limit=5" | jq '.items | length')" 5
api "$A" POST /v1/nodes/n017/drain '{"reason":"test"}' >/dev/null
expect_eq "?state filters" "$(get "/v1/nodes?state=drained" | jq -r '.[].name')" n017
r=$(api "$A" GET "/v1/nodes?limit=0")
expect_eq "a limit of 0 is refused" "$(status_of "$r")" 400
r=$(api "$A" GET "/v1/nodes?limit=5&after=nope")
expect_eq "an unknown cursor is refused" "$(status_of "$r")" 400
out=$(SUANLI_SERVER=$URL SUANLI_TOKEN=$A "$SUANLI" nodes --leaf leaf1)
expect_eq "suanli nodes --leaf lists that leaf (header + 8)" "$(echo "$out" | wc -l | tr -d ' ')" 9
out=$(SUANLI_SERVER=$URL SUANLI_TOKEN=$A "$SUANLI" nodes --json)
expect_eq "suanli nodes --json follows every page into one array" "$(echo "$out" | jq length)" 32
out=$(SUANLI_SERVER=$URL SUANLI_TOKEN=$A "$SUANLI" nodes --site nowhere)
expect_eq "no match says so" "$out" "No nodes match."

# jobs
api "$A" POST /v1/tenants '{"name":"acme"}' >/dev/null
L=$(api "$A" POST /v1/leases '{"tenant":"acme","gpus":1}' | cut -d' ' -f2- | jq -r .id)
for i in 1 2 3 4 5; do
	api "$A" POST /v1/jobs "{\"lease\":\"$L\",\"argv\":[\"sleep\",\"1\"]}" >/dev/null
done
all=$(get /v1/jobs | jq length)
if [ "$all" -ge 5 ]; then
	p=$(get "/v1/jobs?limit=2")
	expect_eq "jobs come in pages too" "$(echo "$p" | jq '.items | length')" 2
	N=$(echo "$p" | jq -r .next)
	p2=$(get "/v1/jobs?limit=2&after=$N")
	expect_eq "the next page starts after the cursor" "$(echo "$p2" | jq -r '.items[0].id')" \
		"$(get /v1/jobs | jq -r '.[2].id')"
	expect_eq "?tenant filters jobs" "$(get "/v1/jobs?tenant=acme" | jq length)" "$all"
	expect_eq "?tenant with no jobs" "$(get "/v1/jobs?tenant=other" | jq length)" 0
	out=$(SUANLI_SERVER=$URL SUANLI_TOKEN=$A "$SUANLI" job list --json)
	expect_eq "suanli job list follows the pages" "$(echo "$out" | jq length)" "$all"
else
	bad "jobs could be created for the paging checks" "$(get /v1/jobs)"
fi
stop_daemon || bad "daemon exits cleanly"
finish
