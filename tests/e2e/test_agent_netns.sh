#!/usr/bin/env bash
# test_agent_netns.sh - the controller and two node agents on hosts of their
# own (network namespaces joined by a switch, netns_lib.sh; loopback with a
# SKIP line where namespaces are not permitted): agents join with a join
# token and get node credentials, report ready with heartbeats; a 2-node lease
# is placed on them only; a job prints its environment on both ranks (the
# distributed variables must be what a rank needs), its logs come back per
# rank and prefixed, exit codes per rank decide the job's state; a long job
# that ignores SIGTERM is cancelled with SIGTERM then SIGKILL after its grace.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netns_lib.sh"
. "$(dirname "$0")/agent_lib.sh"
FLEET="$SL_ROOT/tests/data/fleet/agents-owned.yaml"

ns_init
ns_create ctl 1 && ns_create h1 2 && ns_create h2 3 || die "hosts are created"
ag_controller "$TMP/data" "$FLEET" --heartbeat 1 --unreachable-after 4 --down-after 30 ||
	die "controller starts in its host"
ok "controller listens on $(ns_addr ctl):$PORT ($NS_MODE)"

# ---- before any agent: nodes are not ready, and say why ----
expect_eq "a fleet node without an agent is unreachable" "$(node_field e2e-h100-01 .state)" unreachable
r=$(api - POST /v1/agent/register '{"node":"e2e-h100-01"}')
expect_eq "registering without a token is 401" "$(status_of "$r")" 401
r=$(api "$ADMIN" POST /v1/agent/heartbeat '{"boot_id":"x","gpus":[],"work":[]}')
expect_eq "an admin token is no node credential (heartbeat 403)" "$(status_of "$r")" 403

# ---- join ----
JOIN=$(ag_join_token)
expect_match "agent-token create --json gives a token" "$JOIN" '^sl_'
ag_start e2e-h100-01 h1 "$JOIN"
ag_start e2e-h100-02 h2 "$JOIN"
wait_until 20 node_is e2e-h100-01 ready && wait_until 20 node_is e2e-h100-02 ready ||
	die "both agents register and their nodes become ready" "$(sl nodes --json | jq -c '[.[] | [.name, .state, .reason]]')"
ok "both agents register and their nodes become ready"
expect_eq "the node's agent address is its host's" "$(sl node show e2e-h100-02 --json | jq -r .agent.addr)" "$(ns_addr h2)"
expect_eq "the node says whose work runs as host processes on it" "$(node_field e2e-h100-01 .host_processes)" acme
expect_match "nodes shows it" "$(sl nodes | grep '^e2e-h100-01 ')" 'host processes for acme$'
out=$(ns_exec h1 timeout 20 "$SUANLI_AGENT" run --server "$URL" --ca "$CA" --token "$JOIN" --node e2e-h100-03 \
	--simulate hgx-h100-8 --state-dir "$TMP/agents/refused" --host-processes beta 2>&1)
expect_match "host processes for a tenant that does not own the node are refused" "$out" \
	'node e2e-h100-03 is owned by acme; host processes \(--host-processes beta\) are only for a server that tenant owns'
expect_eq "nodes without agents stay unreachable" "$(node_field e2e-h100-03 .state)" unreachable
cred="$TMP/agents/e2e-h100-01/credential"
expect_eq "the node credential is saved, mode 0600" "$(stat -c %a "$cred" 2>/dev/null)" 600
if [ -s "$cred" ] && ! grep -q "$JOIN" "$cred"; then ok "the credential is not the join token"; else bad "the credential is not the join token"; fi
r=$(api "$(cat "$cred" 2>/dev/null)" GET /v1/tenants)
expect_eq "a node credential is no admin (GET /v1/tenants 403)" "$(status_of "$r")" 403
hb1=$(sl node show e2e-h100-01 --json | jq -r .agent.last_heartbeat)
hb_moved() { [ "$(sl node show e2e-h100-01 --json | jq -r .agent.last_heartbeat)" != "$hb1" ]; }
if wait_until 10 hb_moved; then ok "heartbeats arrive (last_heartbeat moves on)"; else bad "heartbeats arrive" "stuck at $hb1"; fi

# ---- a 2-node lease goes to the two nodes with agents ----
sl tenant create acme >/dev/null || die "tenant create"
r=$(api "$ADMIN" POST /v1/leases '{"tenant":"acme","gpus":16,"per_node":8,"models":["h100-sxm"]}')
L=$(body_of "$r" | jq -r .id)
expect_eq "a 2-node lease is active" "$(body_of "$r" | jq -r .state)" active
expect_eq "on the two nodes whose agents report" \
	"$(body_of "$r" | jq -r '[.placement[].node] | sort | join(",")')" "e2e-h100-01,e2e-h100-02"

# ---- a job that prints its environment; rank 1 exits 3 ----
# A failed rank fails the job and stops the other ranks, so rank 1 waits for
# rank 0 to finish (a file both hosts see) before it fails.
mkdir -p "$TMP/sync"
out=$(sl job run --lease "$L" --env GREETING=hello --env "NS_TAG=$NS_TAG" --env "SYNC=$TMP/sync" --json -- \
	sh -c 'env | sort; echo "rank $NODE_RANK done"
		if [ "$NODE_RANK" = 1 ]; then i=0; while [ ! -e "$SYNC/0" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done; exit 3; fi
		touch "$SYNC/$NODE_RANK"')
J=$(printf '%s' "$out" | jq -r .id)
expect_match "job run --json gives an id" "$J" '^job-'
wait_until 30 job_is "$J" failed || bad "the job ends" "state $(job_field "$J" .state)"
expect_eq "a rank that exits 3 fails the job" "$(job_field "$J" .state)" failed
both_exited() { [ "$(job_field "$J" '[.ranks[] | select(.exit_code != null)] | length')" = 2 ]; }
wait_until 20 both_exited || true
expect_eq "exit codes per rank" "$(job_field "$J" '[.ranks[] | .exit_code] | join(",")')" "0,3"
expect_match "the job says which rank failed" "$(job_field "$J" '.reason // .state_reason // empty')$(sl job show "$J")" 'rank 1.*exited with code 3'
n0=$(job_field "$J" '.ranks[] | select(.rank == 0) | .node')
n1=$(job_field "$J" '.ranks[] | select(.rank == 1) | .node')
expect_eq "one rank per node" "$(printf '%s\n%s\n' "$n0" "$n1" | sort | paste -sd,)" "e2e-h100-01,e2e-h100-02"
logs_done() { [ "$(sl job logs "$J" 2>/dev/null | grep -Ec '^\[[01]\] rank [01] done$')" = 2 ]; }
wait_until 20 logs_done || bad "both ranks' logs are shipped" "$(sl job logs "$J" 2>&1 | tail -3)"
all=$(sl job logs "$J")
r0=$(sl job logs "$J" --rank 0)
r1=$(sl job logs "$J" --rank 1)
expect_match "all ranks' logs, each line prefixed by its rank" "$all" '^\[0\] '
expect_eq "no line without a rank prefix" "$(printf '%s\n' "$all" | grep -cv '^\[[01]\] ')" 0
expect_match "--rank 1 prints rank 1's output, unprefixed" "$r1" '^rank 1 done'
expect_eq "rank 0 says rank 0" "$(printf '%s\n' "$r0" | grep -c '^rank 0 done$')" 1
m0=$(ns_addr "${AG_HOST[$n0]}")
expect_match "MASTER_ADDR is rank 0's host, on every rank" \
	"$(printf '%s\n' "$r0" "$r1" | grep -c "^MASTER_ADDR=$m0\$")" '^2$'
p0=$(printf '%s\n' "$r0" | sed -n 's/^MASTER_PORT=//p')
p1=$(printf '%s\n' "$r1" | sed -n 's/^MASTER_PORT=//p')
expect_match "MASTER_PORT is a port" "$p0" '^[0-9]+$'
expect_eq "the same MASTER_PORT on both ranks" "$p1" "$p0"
expect_match "NNODES=2" "$r1" '^NNODES=2$'
expect_match "NODE_RANK per rank" "$(printf '%s\n' "$r0" | grep ^NODE_RANK=)$(printf '%s\n' "$r1" | grep ^NODE_RANK=)" '^NODE_RANK=0NODE_RANK=1$'
expect_match "NPROC_PER_NODE is the node's GPU count" "$r0" '^NPROC_PER_NODE=8$'
expect_match "the lease's GPUs only (CUDA_VISIBLE_DEVICES)" "$r0" '^CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7$'
expect_match "SUANLI_LEASE" "$r0" "^SUANLI_LEASE=$L\$"
expect_match "SUANLI_JOB" "$r1" "^SUANLI_JOB=$J\$"
expect_match "SUANLI_NODE_LIST names both nodes" "$(printf '%s\n' "$r0" | grep ^SUANLI_NODE_LIST=)" \
	'e2e-h100-0[12].*e2e-h100-0[12]'
expect_match "the user's --env" "$r1" '^GREETING=hello$'
topo=$(printf '%s\n' "$r0" | sed -n 's/^NCCL_TOPO_FILE=//p')
if [ -n "$topo" ] && grep -q '<system' "$topo" 2>/dev/null; then
	ok "NCCL_TOPO_FILE names a generated topology"
else
	bad "NCCL_TOPO_FILE names a generated topology" "'$topo'"
fi
expect_match "SUANLI_STATE_DIR is the agent's" "$r0" "SUANLI_STATE_DIR=$TMP/agents/e2e-h100-0[12]"

# ---- a job that succeeds ----
J2=$(sl job run --lease "$L" --env "NS_TAG=$NS_TAG" --json -- true | jq -r .id)
if wait_until 30 job_is "$J2" succeeded; then ok "a job whose ranks exit 0 succeeds"; else
	bad "a job whose ranks exit 0 succeeds" "$(sl job show "$J2" --json | jq -c .)"; fi
expect_eq "both ranks exited 0" "$(job_field "$J2" '[.ranks[] | .exit_code] | join(",")')" "0,0"

# ---- cancel: SIGTERM, then SIGKILL after the grace ----
mkdir -p "$TMP/pids"
J3=$(sl job run --lease "$L" --stop-grace 2 --env "PIDS=$TMP/pids" --env "NS_TAG=$NS_TAG" --json -- \
	sh -c 'echo $$ > "$PIDS/$SUANLI_JOB.$NODE_RANK"; trap "echo got TERM" TERM; echo started; while :; do sleep 0.2; done' |
	jq -r .id)
both_started() { [ -s "$TMP/pids/$J3.0" ] && [ -s "$TMP/pids/$J3.1" ]; }
wait_until 20 both_started || bad "the long job starts on both ranks"
wait_until 20 job_is "$J3" running || bad "the long job is running" "$(job_field "$J3" .state)"
expect_eq "a running job's ranks are running" "$(job_field "$J3" '[.ranks[] | .state] | join(",")')" "running,running"
P0=$(cat "$TMP/pids/$J3.0" 2>/dev/null)
P1=$(cat "$TMP/pids/$J3.1" 2>/dev/null)
if pid_alive "$P0" && pid_alive "$P1"; then ok "its processes run"; else bad "its processes run" "$P0 $P1"; fi
out=$(sl job cancel "$J3" 2>&1)
expect_eq "job cancel succeeds" "$?" 0
gone() { ! pid_alive "$P0" && ! pid_alive "$P1"; }
if wait_until 20 gone; then ok "cancel ends both ranks' processes"; else bad "cancel ends both ranks' processes" "$P0 $P1"; fi
wait_until 20 job_is "$J3" cancelled || true
expect_eq "the job is cancelled" "$(job_field "$J3" .state)" cancelled
term_seen() { sl job logs "$J3" 2>/dev/null | grep -c 'got TERM' | grep -q '^2$'; }
if wait_until 15 term_seen; then ok "both ranks got SIGTERM first"; else
	bad "both ranks got SIGTERM first" "$(sl job logs "$J3" 2>&1 | tail -4)"; fi
expect_eq "then SIGKILL (signal 9) after the grace" "$(job_field "$J3" '[.ranks[] | .signal] | join(",")')" "9,9"
expect_match "job list shows the three jobs" "$(sl job list --json | jq -r '[.[].id] | join(" ")')" "$J.*$J2.*$J3|$J3.*$J2.*$J"
show=$(sl job show "$J")
expect_match "job show (text) names the job and its state" "$show" "$J"
expect_match "and the ranks' nodes" "$show" "e2e-h100-0[12]"

# ---- agents stop cleanly; the controller too ----
ag_stop e2e-h100-01
expect_eq "an agent stops cleanly on SIGTERM" "$?" 0
ag_stop e2e-h100-02
expect_eq "the other too" "$?" 0
if pid_alive "$P0" || [ -n "$(ns_tagged_pids | grep -vx "$CTL_PID")" ]; then
	bad "no job process is left once the jobs ended" "$(ns_tagged_pids | tr '\n' ' ')"
else ok "no job process is left once the jobs ended"; fi
kill -TERM "$CTL_PID"
wait "$CTL_PID"
expect_eq "the controller stops cleanly" "$?" 0
ns_forget "$CTL_PID"
finish
