#!/usr/bin/env bash
# test_agent_faults.sh - node faults with real agents on hosts of their own
# (netns_lib.sh; loopback with a SKIP line where namespaces are not permitted,
# where a cut link is the agent stopped):
#  (a) two agents' links cut for longer than --down-after, then restored: the
#      nodes go unreachable, then down; the plain lease on one fails, the lease
#      on the other that asked for "replace" gets other GPUs and a new epoch,
#      and its job runs again there;
#      no GPU is ever in two active leases; the failed lease is billed up to
#      the node's last healthy heartbeat, not to the moment it was declared
#      down; the returning agents stop the work they no longer hold (its
#      processes, known by pid files the job wrote, are gone);
#  (b) an agent SIGSTOPped for less than --down-after: unreachable, then ready
#      again, its work ran on untouched;
#  (c) an agent SIGKILLed and restarted on the same state directory: its
#      running work is re-adopted (same process, not started twice, no
#      restart counted) and the rank's log continues with nothing lost or
#      repeated.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netns_lib.sh"
. "$(dirname "$0")/agent_lib.sh"
FLEET="$SL_ROOT/tests/data/fleet/agents-owned.yaml"
DOWN=8

ns_init
ns_create ctl 1 || die "controller host"
for i in 1 2 3 4; do ns_create "h$i" $((i + 1)) || die "host h$i"; done
ag_controller "$TMP/data" "$FLEET" --heartbeat 1 --unreachable-after 3 --down-after $DOWN ||
	die "controller starts"
ok "controller on $(ns_addr ctl):$PORT ($NS_MODE), down after ${DOWN}s"
JOIN=$(ag_join_token)
for i in 1 2 3 4; do ag_start "e2e-h100-0$i" "h$i" "$JOIN"; done
all_ready() { [ "$(sl nodes --json 2>/dev/null | jq '[.[] | select(.state == "ready")] | length')" = 4 ]; }
wait_until 30 all_ready || die "four agents register" "$(sl nodes --json | jq -c '[.[] | [.name, .state]]')"
ok "four agents ready"
host_of() { printf '%s' "${AG_HOST[$1]}"; }

sl tenant create acme >/dev/null || die "tenant"
sl price set --model h100-sxm --plan hourly --price 3600 >/dev/null || die "price"
sl topup --tenant acme --amount 100000000 >/dev/null || die "topup"
mkdir -p "$TMP/pids"
# A job whose every start appends its pid to PIDS/JOB.RANK.NODE and that counts.
TICKER='echo $$ >> "$PIDS/$SUANLI_JOB.$NODE_RANK.${SUANLI_STATE_DIR##*/}"; i=0; while :; do i=$((i+1)); echo "tick $i"; sleep 0.3; done'
run_ticker() { sl job run --lease "$1" --stop-grace 1 --env "PIDS=$TMP/pids" --env "NS_TAG=$NS_TAG" --json -- sh -c "$TICKER" | jq -r .id; }
pidfile() { printf '%s' "$TMP/pids/$1.0.$2"; }

# No (node, GPU) is held by two active leases: prints the duplicates.
doubles() {
	body_of "$(api "$ADMIN" GET '/v1/leases?state=active')" |
		jq -r '.[] | .placement[] | .node as $n | .gpus[] | "\($n)/\(.)"' | sort | uniq -d
}
NEVER_DOUBLE=1
check_doubles() { [ -z "$(doubles)" ] || NEVER_DOUBLE=0; }

# ---- (a) links cut past down-after ----
r=$(api "$ADMIN" POST /v1/leases '{"tenant":"acme","gpus":8,"models":["h100-sxm"]}')
F=$(body_of "$r" | jq -r .id)
r=$(api "$ADMIN" POST /v1/leases '{"tenant":"acme","gpus":8,"models":["h100-sxm"],"on_node_failure":"replace"}')
R=$(body_of "$r" | jq -r .id)
expect_eq "two 8-GPU leases are active" "$(lease_field "$F" .state) $(lease_field "$R" .state)" "active active"
X=$(lease_field "$F" '.placement[0].node')
Y=$(lease_field "$R" '.placement[0].node')
EPOCH=$(lease_field "$R" .epoch)
[ "$X" != "$Y" ] || die "the leases are on two nodes" "$X $Y"
JF=$(run_ticker "$F")
JR=$(run_ticker "$R")
started() { [ -s "$(pidfile "$JF" "$X")" ] && [ -s "$(pidfile "$JR" "$Y")" ]; }
wait_until 20 started || die "both jobs start" "$(sl job list --json | jq -c .)"
PF=$(head -1 "$(pidfile "$JF" "$X")")
PR=$(head -1 "$(pidfile "$JR" "$Y")")
started_at=$(lease_field "$F" .started_at)
ns_link_down "$(host_of "$X")"
ns_link_down "$(host_of "$Y")"
cut_at=$SECONDS
if wait_until 15 node_is "$X" unreachable; then ok "a cut node becomes unreachable"; else
	bad "a cut node becomes unreachable" "$(node_field "$X" .state)"; fi
expect_eq "its lease is kept while unreachable" "$(lease_field "$F" .state)" active
check_doubles
# every poll also checks that no GPU is in two active leases
down_checked() { check_doubles; node_is "$X" down; }
if wait_until 30 down_checked; then ok "and down after --down-after"; else
	bad "and down after --down-after" "$(node_field "$X" .state)"; fi
[ $((SECONDS - cut_at)) -ge 3 ] || bad "down came no sooner than unreachable-after" "$((SECONDS - cut_at)) s"
wait_until 10 lease_is "$F" failed
expect_eq "the plain lease on the down node failed" "$(lease_field "$F" .state)" failed
wait_until 10 lease_is "$R" active
expect_eq "the lease that asked for replace is active" "$(lease_field "$R" .state)" active
Z=$(lease_field "$R" '.placement[0].node')
if [ "$Z" != "$X" ] && [ "$Z" != "$Y" ] && [ -n "$Z" ]; then ok "on another node ($Z)"; else
	bad "replaced on another node" "$X $Y -> $Z"; fi
expect_eq "with a new epoch" "$(lease_field "$R" .epoch)" $((EPOCH + 1))
check_doubles
wait_until 10 job_is "$JF" cancelled
expect_match "the failed lease's job ended" "$(job_field "$JF" .state)" '^(cancelled|failed)$'
if pid_alive "$PF"; then ok "the cut-off node's work keeps running meanwhile (no controller, no kill)"; else
	bad "the cut-off node's work keeps running meanwhile"; fi

# billing of the failed lease stops at the node's last healthy heartbeat
last_hb=$(sl node show "$X" --json | jq -r .agent.last_heartbeat)
ms_of() { date -u -d "$1" +%s%3N; }
month=$(date -u +%Y-%m)
gms=$(body_of "$(api "$ADMIN" GET "/v1/tenants/acme/invoices/$month")" |
	jq --arg l "$F" '[.lines[] | select(.lease == $l) | .gpu_ms] | add // 0')
if [ -n "$last_hb" ] && [ "$last_hb" != null ] && [ "$gms" -gt 0 ] 2>/dev/null; then
	billed_end=$(( $(ms_of "$started_at") + gms / 8 ))
	hb_ms=$(ms_of "$last_hb")
	expect_eq "billed up to the last healthy heartbeat (ms; lease ended $(lease_field "$F" .ended_at))" \
		"$billed_end" "$hb_ms"
else
	bad "the failed lease is billed" "gpu_ms '$gms', last heartbeat '$last_hb'"
fi

# the cut nodes come back and stop the work they no longer hold
ns_link_up "$(host_of "$X")"
ns_link_up "$(host_of "$Y")"
ready_checked() { check_doubles; node_is "$1" ready; }
if wait_until 40 ready_checked "$X" && wait_until 20 ready_checked "$Y"; then
	ok "the returning nodes are ready again"; else
	bad "the returning nodes are ready again" "$X $(node_field "$X" .state), $Y $(node_field "$Y" .state)"; fi
gone() { ! pid_alive "$PF" && ! pid_alive "$PR"; }
if wait_until 20 gone; then ok "returning agents stop the stale work (failed lease, replaced rank)"; else
	bad "returning agents stop the stale work" "alive: $(pid_alive "$PF" && echo "$PF ($X)") $(pid_alive "$PR" && echo "$PR ($Y)")"; fi
check_doubles
[ "$NEVER_DOUBLE" = 1 ] && ok "no GPU was in two active leases at any check" ||
	bad "no GPU in two active leases" "$(doubles)"
expect_eq "the replaced lease kept its GPUs on $Z" "$(lease_field "$R" '.placement[0].node')" "$Z"

moved() { [ -s "$(pidfile "$JR" "$Z")" ] && pid_alive "$(head -1 "$(pidfile "$JR" "$Z")")"; }
if wait_until 20 moved; then ok "the replaced lease's job runs again on $Z"; else
	bad "the replaced lease's job runs again on $Z" "$(job_field "$JR" '.ranks' | jq -c .)"; fi
expect_eq "its rank is on $Z and running" "$(job_field "$JR" '[.state, .ranks[0].node, .ranks[0].state] | join(" ")')" \
	"running $Z running"
pr_z=$(head -1 "$(pidfile "$JR" "$Z")" 2>/dev/null)
sl job cancel "$JR" >/dev/null
wait_until 15 eval '! pid_alive "$pr_z"' || bad "the moved rank stops on cancel" "$pr_z"

# ---- (b) SIGSTOP for less than down-after ----
JB=$(run_ticker "$R")
wait_until 20 test -s "$(pidfile "$JB" "$Z")" || die "a job runs on $Z"
PB=$(head -1 "$(pidfile "$JB" "$Z")")
kill -STOP "${AG_PID[$Z]}"
stop_at=$SECONDS
wait_until $((DOWN - 2)) node_is "$Z" unreachable && unr=1 || unr=0
kill -CONT "${AG_PID[$Z]}"
expect_eq "a stopped agent's node becomes unreachable" "$unr" 1
[ $((SECONDS - stop_at)) -lt $DOWN ] || bad "the agent was stopped for less than --down-after" "$((SECONDS - stop_at)) s"
if wait_until 20 node_is "$Z" ready; then ok "and ready again once it continues"; else
	bad "and ready again once it continues" "$(node_field "$Z" .state)"; fi
expect_eq "the lease stayed active, same epoch" "$(lease_field "$R" .state) $(lease_field "$R" .epoch)" \
	"active $((EPOCH + 1))"
if pid_alive "$PB"; then ok "the work ran on through the stop"; else bad "the work ran on through the stop"; fi
expect_eq "started once" "$(wc -l <"$(pidfile "$JB" "$Z")")" 1
expect_eq "its job is running" "$(job_field "$JB" .state)" running

# ---- (c) SIGKILL and restart on the same state directory ----
kill -KILL "${AG_PID[$Z]}"
wait "${AG_PID[$Z]}" 2>/dev/null
ns_forget "${AG_PID[$Z]}"
if pid_alive "$PB"; then ok "the work outlives a SIGKILLed agent"; else bad "the work outlives a SIGKILLed agent"; fi
ticks_shipped() { sl job logs "$JB" --rank 0 2>/dev/null | grep -c '^tick '; }
before=$(ticks_shipped)
ag_start "$Z" "$(host_of "$Z")" "$JOIN"
wait_until 20 node_is "$Z" ready || bad "the restarted agent's node is ready" "$(node_field "$Z" .state)"
more() { [ "$(ticks_shipped)" -gt $((before + 5)) ]; }
if wait_until 20 more; then ok "the log continues after the restart ($before lines before)"; else
	bad "the log continues after the restart" "$before -> $(ticks_shipped)"; fi
seq_ok=$(sl job logs "$JB" --rank 0 | awk '/^tick /{ n++; if ($2 != n) { print "tick " $2 " at line " n; exit } } END { if (n) print "ok" }' | tail -1)
expect_eq "the shipped log has every tick once, in order" "$seq_ok" ok
if pid_alive "$PB"; then ok "the same process still runs (re-adopted)"; else bad "the same process still runs"; fi
expect_eq "not started a second time" "$(wc -l <"$(pidfile "$JB" "$Z")")" 1
running_copies=$(for p in $(ns_tagged_pids); do
	[ "$(cat "/proc/$p/comm" 2>/dev/null)" = sh ] && grep -qzx "SUANLI_JOB=$JB" "/proc/$p/environ" 2>/dev/null && echo "$p"
done | wc -l)
expect_eq "one process of the job on the machine" "$running_copies" 1
expect_eq "the rank counts no restart" "$(job_field "$JB" '.ranks[0].restarts')" 0
expect_eq "the job is still running" "$(job_field "$JB" .state)" running
sl job cancel "$JB" >/dev/null
if wait_until 15 eval '! pid_alive "$PB"'; then ok "a re-adopted process is stopped by cancel"; else
	bad "a re-adopted process is stopped by cancel"; fi
wait_until 10 job_is "$JB" cancelled
expect_eq "and its job is cancelled" "$(job_field "$JB" .state)" cancelled
check_doubles
[ "$NEVER_DOUBLE" = 1 ] || bad "no GPU in two active leases (end)" "$(doubles)"

rcs=""
for n in "${!AG_PID[@]}"; do [ -n "${AG_PID[$n]}" ] && { ag_stop "$n"; rcs="$rcs$?"; }; done
expect_eq "the agents stop cleanly (the restarted one too)" "$rcs" 0000
kill -TERM "$CTL_PID"
wait "$CTL_PID"
expect_eq "the controller stops cleanly" "$?" 0
ns_forget "$CTL_PID"
finish
