#!/usr/bin/env bash
# test_agent_run.sh - suanli-agent run itself, on loopback against a real
# suanlid: its command line (help, usage errors, no token and no credential);
# joining with a join token and restarting with the saved credential and no
# token, a second agent on the same state directory refused; the test hooks (an injected XID drains the GPU, inject/unhealthy
# keeps it drained, removing it re-qualifies it); a restart policy carried
# out by the agent (on-failure restarts, counted, the log keeps every try);
# SIGTERM leaves work running and the next agent adopts it (same process, not
# started twice), learns its exit code when it ends, and can still stop it; a revoked credential is fatal with a
# message that says what to do.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
: "${SUANLI_AGENT:?SUANLI_AGENT must point at the suanli-agent binary}"
FLEET="$SL_ROOT/tests/data/fleet/agents-owned.yaml"
DATA="$TMP/data"
SD="$TMP/sd"
NODE=e2e-h100-01
AGENT_PID=""
JOBPIDS=""

cleanup() {
	[ -n "$AGENT_PID" ] && kill -TERM "$AGENT_PID" 2>/dev/null && wait "$AGENT_PID" 2>/dev/null
	local p g
	for p in $JOBPIDS; do
		g=$(cut -d' ' -f5 "/proc/$p/stat" 2>/dev/null) && [ "${g:-0}" -gt 1 ] && kill -KILL -- "-$g" 2>/dev/null
	done
	ctl_cleanup
}
trap cleanup EXIT

sl() { SUANLI_SERVER=$URL SUANLI_TOKEN=$ADMIN "$SUANLI" "$@"; }
# agent_start LOG ARGS... : the agent of $NODE in the background.
agent_start() {
	local log=$1
	shift
	# host processes for acme: this test watches the processes themselves
	"$SUANLI_AGENT" run --server "$URL" --node "$NODE" --simulate hgx-h100-8 --state-dir "$SD" \
		--heartbeat 1 --host-processes acme "$@" 2>"$log" &
	AGENT_PID=$!
}
agent_stop() {
	kill -TERM "$AGENT_PID"
	wait_pid 30 "$AGENT_PID"
	local rc=$?
	AGENT_PID=""
	return $rc
}
node_json() { sl node show "$NODE" --json 2>/dev/null; }
node_ready() { [ "$(node_json | jq -r .state)" = ready ]; }
gpu3() { node_json | jq -r "$1" 2>/dev/null; }
job_json() { sl job show "$1" --json 2>/dev/null; }

# ---- the command line ----
out=$("$SUANLI_AGENT" --help)
expect_eq "--help exits 0" "$?" 0
expect_match "--help shows the usage of run" "$out" 'suanli-agent run .*--server URL'
"$SUANLI_AGENT" frobnicate 2>/dev/null
expect_eq "an unknown command exits 2" "$?" 2
out=$("$SUANLI_AGENT" run --server http://127.0.0.1:1 2>&1)
expect_eq "run without --node exits 2" "$?" 2
expect_match "and says what is missing" "$out" '--node NAME is required'
out=$("$SUANLI_AGENT" run --server http://127.0.0.1:1 --node n --heartbeat 0 2>&1)
expect_eq "a heartbeat of 0 s exits 2" "$?" 2
out=$("$SUANLI_AGENT" run --server http://127.0.0.1:1 --node n --simulate hgx-h100-8 \
	--state-dir "$TMP/empty" 2>&1)
expect_eq "no token and no credential: exit 1" "$?" 1
expect_match "saying so" "$out" 'no --token and no saved credential'
expect_match "with a hint to pass a join token" "$out" 'hint: pass a join token'
out=$("$SUANLI_AGENT" run --server http://127.0.0.1:1 --node n --simulate no-such-type \
	--state-dir "$TMP/empty" --token x 2>&1)
expect_eq "an unknown --simulate type: exit 1" "$?" 1

# ---- join, then restart with the saved credential ----
"$SUANLID" init --data "$DATA" >/dev/null || { bad "init"; finish; exit 1; }
ADMIN=$(cat "$DATA/admin.token")
start_daemon "$TMP/ctl.log" --data "$DATA" --fleet "$FLEET" --heartbeat 1 --unreachable-after 5 \
	--down-after 60 || { bad "daemon starts" "$(cat "$TMP/ctl.log")"; finish; exit 1; }
JOIN=$(sl agent-token create --json | jq -r .token)
agent_start "$TMP/agent1.log" --token "$JOIN"
wait_until 20 node_ready || bad "the agent registers" "$(tail -3 "$TMP/agent1.log")"
expect_eq "the credential is saved (0600)" "$(stat -c %a "$SD/credential" 2>/dev/null)" 600
expect_match "the agent says once that tenant work runs as host processes, for its owner only" \
	"$(grep -c 'tenant work runs as host processes on this server, for its owner only.*tenant=acme' "$TMP/agent1.log")" '^1$'
agent_stop
expect_eq "SIGTERM: the agent exits 0" "$?" 0
agent_start "$TMP/agent2.log"
hb_after_restart() { grep -q 'msg=registered' "$TMP/agent2.log" && node_ready; }
if wait_until 20 hb_after_restart; then ok "restarted without --token, it registers with the credential"; else
	bad "restarted without --token, it registers with the credential" "$(tail -3 "$TMP/agent2.log")"; fi

out=$(timeout 20 "$SUANLI_AGENT" run --server "$URL" --node "$NODE" --simulate hgx-h100-8 --state-dir "$SD" 2>&1)
expect_eq "a second agent on the same state directory refuses to start" "$?" 1
expect_match "naming the first one" "$out" "another suanli-agent \\(pid $AGENT_PID\\) uses the state directory"

# ---- test hooks: XID and the health check ----
echo "3 13" >"$SD/inject/xid"
echo 3 >"$SD/inject/unhealthy"
drained() { [ "$(gpu3 '.gpu_health[3].state')" = draining ]; }
if wait_until 10 drained; then ok "an injected transient XID drains GPU 3"; else
	bad "an injected XID drains GPU 3" "$(gpu3 '.gpu_health[3]')"; fi
expect_eq "the XID file is consumed" "$(ls "$SD/inject")" unhealthy
expect_eq "the XID is in the node's history" "$(gpu3 '[.gpu_events[] | select(.gpu == 3) | .code] | join(",")')" 13
sleep 2.5 # two heartbeats
expect_eq "listed in inject/unhealthy, it fails the health check and stays drained" \
	"$(gpu3 '.gpu_health[3].state') $(gpu3 '.gpu_health[3].last_report.healthy')" "draining false"
rm -f "$SD/inject/unhealthy"
back() { [ "$(gpu3 '.gpu_health[3].state')" = ok ]; }
if wait_until 10 back; then ok "unlisted, it passes the check and returns"; else
	bad "unlisted, it passes the check and returns" "$(gpu3 '.gpu_health[3]')"; fi

# ---- a lease and a restart policy carried out by the agent ----
api "$ADMIN" POST /v1/tenants '{"name":"acme","regions":["cn-east"]}' >/dev/null
r=$(api "$ADMIN" POST /v1/leases '{"tenant":"acme","gpus":8,"models":["h100-sxm"]}')
L=$(body_of "$r" | jq -r .id)
expect_eq "a lease on the agent's node" "$(body_of "$r" | jq -r '.placement[0].node')" "$NODE"
JF=$(sl job run --lease "$L" --restart on-failure --json -- sh -c 'echo try; exit 1' | jq -r .id)
restarted() { [ "$(job_json "$JF" | jq -r '.ranks[0].restarts')" -ge 2 ] 2>/dev/null; }
if wait_until 20 restarted; then ok "on-failure: the agent restarts the rank and counts it"; else
	bad "on-failure restarts" "$(job_json "$JF" | jq -c .ranks)"; fi
# A restart is counted when the process starts; its output follows.
tries() { [ "$(grep -c '^try$' "$SD/jobs/$JF/rank-0.log")" -ge 3 ]; }
wait_until 10 tries
expect_match "every try is in the rank's log" "$(grep -c '^try$' "$SD/jobs/$JF/rank-0.log")" '^[3-9]$'
sl job cancel "$JF" >/dev/null
cancelled() { [ "$(job_json "$1" | jq -r .state)" = cancelled ]; }
wait_until 20 cancelled "$JF" || bad "the restarting job is cancelled" "$(job_json "$JF" | jq -c .)"

# ---- SIGTERM leaves work running; the next agent adopts it ----
J=$(sl job run --lease "$L" --json -- sh -c 'echo $$ >> "$SUANLI_STATE_DIR/pid"; echo up; exec sleep 600' | jq -r .id)
# and one that ends by itself, with 7, once told to (file "go")
JG=$(sl job run --lease "$L" --json -- \
	sh -c 'echo $$ >> "$SUANLI_STATE_DIR/pid-go"; while [ ! -e "$SUANLI_STATE_DIR/go" ]; do sleep 0.1; done; exit 7' |
	jq -r .id)
up() { [ -s "$SD/pid" ] && [ -s "$SD/pid-go" ]; }
wait_until 20 up || bad "the long jobs start"
P=$(head -1 "$SD/pid" 2>/dev/null)
PG=$(head -1 "$SD/pid-go" 2>/dev/null)
JOBPIDS="$P $PG"
agent_stop
if kill -0 "$P" 2>/dev/null; then ok "the work keeps running when the agent stops"; else
	bad "the work keeps running when the agent stops"; fi
agent_start "$TMP/agent3.log"
adopted() { grep -q "msg=\"work adopted\" job=$J rank=0 " "$TMP/agent3.log" && kill -0 "$P" 2>/dev/null; }
if wait_until 10 adopted; then ok "the next agent adopts it (the same process runs)"; else
	bad "the next agent adopts it" "$(head -5 "$TMP/agent3.log")"; fi
wait_until 10 node_ready
sleep 2
expect_eq "not started twice" "$(cat "$SD/pid" "$SD/pid-go" | wc -l)" 2
expect_eq "the job is running, no restart counted" \
	"$(job_json "$J" | jq -r '[.state, .ranks[0].restarts] | join(",")')" "running,0"
touch "$SD/go"
failed_7() { [ "$(job_json "$JG" | jq -r '[.state, .ranks[0].exit_code] | join(",")')" = "failed,7" ]; }
if wait_until 20 failed_7; then ok "an adopted rank that ends by itself reports its own exit code (7)"; else
	bad "an adopted rank reports its own exit code" "$(job_json "$JG" | jq -c .ranks)"; fi
sl job cancel "$J" >/dev/null
gone() { ! kill -0 "$P" 2>/dev/null; }
if wait_until 20 gone; then ok "cancel stops the adopted process"; else bad "cancel stops the adopted process"; fi
wait_until 20 cancelled "$J" || bad "the job is cancelled" "$(job_json "$J" | jq -c .)"

# ---- a revoked credential is fatal ----
TID=$(body_of "$(api "$ADMIN" GET /v1/tokens)" |
	jq -r --arg n "$NODE" '[(.tokens? // .)[] | select(.credential == true and .node == $n)][0].id')
r=$(api "$ADMIN" DELETE "/v1/tokens/$TID")
expect_match "the node credential is revoked" "$(status_of "$r")" '^20[04]$'
wait_pid 30 "$AGENT_PID"
rc=$?
AGENT_PID=""
expect_eq "the agent exits 1" "$rc" 1
expect_match "saying the credential was refused" "$(cat "$TMP/agent3.log")" "refused this node's credential"
expect_match "and what to do" "$(cat "$TMP/agent3.log")" \
	"hint: .*delete that file and start the agent with a new join token"
stop_daemon
expect_eq "the controller stops cleanly" "$?" 0
finish
