#!/usr/bin/env bash
# test_city_cutoff.sh - a city cut off for 2 minutes and rejoined (issue 18):
# the controller in one host, a node agent in another "city" (network
# namespaces, netns_lib.sh; on loopback the cut is the agent stopped). A priced
# 8-GPU lease runs a job there; the city's link is cut for SL_CUT_S seconds
# (default 120), longer than --unreachable-after and shorter than
# --down-after: the node is unreachable meanwhile and its lease stays active; when the link comes back the agent reports the
# same process still running (kept, not restarted), the node is ready again,
# and once the lease is released its one invoice line bills exactly
# (ended_at - started_at) x 8 GPUs: no GPU-second of the cut billed twice
# or lost.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netns_lib.sh"
. "$(dirname "$0")/agent_lib.sh"
FLEET="$SL_ROOT/tests/data/fleet/agents-owned.yaml"
CUT_S=${SL_CUT_S:-120}
NODE=e2e-h100-01
ms_of() { date -u -d "$1" +%s%3N; }

ns_init
ns_create ctl 1 && ns_create far 2 || die "hosts are created"
ag_controller "$TMP/data" "$FLEET" --heartbeat 1 --unreachable-after 4 --down-after $((CUT_S + 120)) ||
	die "controller starts in its host"
sl tenant create acme >/dev/null || die "tenant create"
sl price set --model h100-sxm --plan hourly --price 3600 >/dev/null || die "price set"
sl topup --tenant acme --amount 100000000 >/dev/null || die "topup"
ag_start "$NODE" far "$(ag_join_token)"
wait_until 20 node_is "$NODE" ready || die "the far city's node is ready"

r=$(api "$ADMIN" POST /v1/leases '{"tenant":"acme","gpus":8,"models":["h100-sxm"]}')
L=$(body_of "$r" | jq -r .id)
expect_eq "an 8-GPU lease is active" "$(lease_field "$L" .state)" active
expect_eq "... on the far city's node (the only one with an agent)" "$(lease_field "$L" '.placement[0].node')" "$NODE"
mkdir -p "$TMP/pids"
J=$(sl job run --lease "$L" --env "PIDS=$TMP/pids" --env "NS_TAG=$NS_TAG" --json -- \
	sh -c 'echo $$ > "$PIDS/rank0"; while :; do sleep 0.5; done' | jq -r .id)
wait_until 30 job_is "$J" running || die "the job runs" "$(job_field "$J" .state)"
P=$(cat "$TMP/pids/rank0" 2>/dev/null)
pid_alive "$P" && ok "its rank runs (pid $P)" || bad "its rank runs" "pid '$P'"

now_ms() { date -u +%s%3N; }
ns_link_down far
cut_ms=$(now_ms)
wait_until 15 node_is "$NODE" unreachable
expect_eq "cut off, the node becomes unreachable" "$(node_field "$NODE" .state)" unreachable
left_ms=$(( cut_ms + CUT_S * 1000 - $(now_ms) ))
[ "$left_ms" -gt 0 ] && sleep "$(( left_ms / 1000 )).$(printf '%03d' $(( left_ms % 1000 )))"
expect_eq "after ${CUT_S} s cut off its lease is still active" "$(lease_field "$L" .state)" active
expect_eq "... and its job still running" "$(job_field "$J" .state)" running
ns_link_up far
up_ms=$(now_ms)
wait_until 30 node_is "$NODE" ready
expect_eq "rejoined, the node is ready again" "$(node_field "$NODE" .state)" ready
pid_alive "$P" && ok "the rank's process was kept through the cut" || bad "the rank's process was kept" "pid $P gone"
expect_eq "... the job is running, its rank not restarted" \
	"$(job_field "$J" '[.state, (.ranks[0].restarts // 0), .ranks[0].state] | join(",")')" "running,0,running"
expect_eq "the lease kept its GPUs" "$(lease_field "$L" '[.placement[] | .node, (.gpus | length)] | join(",")')" "$NODE,8"

sl lease release "$L" >/dev/null
wait_until 20 job_is "$J" cancelled || true
gone() { ! pid_alive "$P"; }
wait_until 20 gone && ok "the lease's release ends the rank" || bad "the lease's release ends the rank" "pid $P"
st=$(lease_field "$L" .started_at)
en=$(lease_field "$L" .ended_at)
want=$(( ($(ms_of "$en") - $(ms_of "$st")) * 8 ))
# Across the cut: started before the link went down, ended after it came back
# (CUT_S s later; both read on this clock, as the controller's, in ms).
[ "$(ms_of "$st")" -le "$cut_ms" ] && [ "$(ms_of "$en")" -ge "$up_ms" ] &&
	[ $(( up_ms - cut_ms )) -ge $((CUT_S * 1000)) ] && ok "the lease ran across the cut" ||
	bad "the lease ran across the cut" "lease $st .. $en, cut $cut_ms .. $up_ms ms"
inv=$(sl invoice --tenant acme --month "$(date -u +%Y-%m)" --json)
lines=$(printf '%s' "$inv" | jq -c --arg l "$L" '[.lines[] | select(.lease == $l)]')
expect_eq "one invoice line for the lease" "$(printf '%s' "$lines" | jq length)" 1
expect_eq "it bills (ended_at - started_at) x 8 GPUs exactly: nothing twice, nothing lost" \
	"$(printf '%s' "$lines" | jq '.[0].gpu_ms')" "$want"

ag_stop "$NODE"
expect_eq "the agent stops cleanly" "$?" 0
[ "$FAIL" -gt 0 ] && tail -20 "$TMP/suanlid.log"
kill -TERM "$CTL_PID"
wait "$CTL_PID"
expect_eq "the controller stops cleanly" "$?" 0
ns_forget "$CTL_PID"
finish
