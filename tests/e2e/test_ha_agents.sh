#!/usr/bin/env bash
# test_ha_agents.sh - a node agent across a failover: two suanlid on one
# PostgreSQL (scripts/pg-test.sh; skipped without it), an agent given both
# URLs (--server A,B). It joins through whichever leads, its node is ready
# and a lease runs on it; the leader is SIGKILLed: the agent follows the new
# leader (a higher epoch) by itself, its node is ready there, and the lease it
# runs is still active, on the same GPUs. The agent keeps the new epoch in its
# state directory: restarted and pointed at a controller that answers with an
# older epoch (a deposed leader, played by a small HTTP server that tells it to
# stop its work), it refuses that controller's answers.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg_lib.sh"
: "${SUANLID:?SUANLID must point at the suanlid binary}"
: "${SUANLI_AGENT:?SUANLI_AGENT must point at the suanli-agent binary}"
FLEET="$SL_ROOT/tests/data/fleet/agents-small.yaml"
NODE=e2e-h100-01
PIDS=("" "")
AGENT=""
FAKE=""
cleanup() {
	[ -n "$AGENT" ] && kill -TERM "$AGENT" 2>/dev/null
	[ -n "$FAKE" ] && kill -TERM "$FAKE" 2>/dev/null
	for p in "${PIDS[@]}"; do [ -n "$p" ] && kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "$PGDIR" ] && bash "$PGT" stop "$PGDIR"
	rm -rf "$TMP"
}
trap cleanup EXIT
pg_start
STORE=$(bash "$PGT" createdb "$PGDIR" ha)
PORT=("$(free_port)" "$(free_port)")
U=("http://127.0.0.1:${PORT[0]}" "http://127.0.0.1:${PORT[1]}")
BOTH="${U[0]},${U[1]}"
DATA="$TMP/data"
"$SUANLID" init --data "$DATA" --store "$STORE" >/dev/null 2>&1
expect_eq "init --store" "$?" 0
export SUANLI_TOKEN
SUANLI_TOKEN=$(cat "$DATA/admin.token")
start_ctl() {
	"$SUANLID" serve --data "$DATA" --store "$STORE" --listen "127.0.0.1:${PORT[$1]}" \
		--lease 2 --heartbeat 1 --fleet "$FLEET" 2>>"$TMP/ctl$1.log" &
	PIDS[$1]=$!
}
role_of() { curl -s --max-time 2 "${U[$1]}/healthz" | jq -r '.role // empty' 2>/dev/null; }
is_leader() { [ "$(role_of "$1")" = leader ]; }
sl() { "$SUANLI" --server "$BOTH" "$@"; }
node_state() { sl nodes --json 2>/dev/null | jq -r --arg n "$NODE" '.[] | select(.name == $n) | .state'; }
node_ready() { [ "$(node_state)" = ready ]; }

start_ctl 0
wait_until 20 is_leader 0
start_ctl 1
JOIN=$(sl agent-token create --node "$NODE" --json 2>/dev/null | jq -r .token)
expect_match "a join token through the list" "$JOIN" '^sl_'
"$SUANLI_AGENT" run --server "$BOTH" --token "$JOIN" --node "$NODE" --addr 127.0.0.1 \
	--simulate hgx-h100-8 --state-dir "$TMP/agent" --heartbeat 1 2>>"$TMP/agent.log" &
AGENT=$!
wait_until 30 node_ready
expect_eq "the agent joins and its node is ready" "$(node_state)" ready
sl tenant create acme >/dev/null 2>&1
lease=$(sl --json lease create --gpus 2 --tenant acme --duration 2h 2>/dev/null)
id=$(printf '%s' "$lease" | jq -r '.id // empty')
gpus=$(printf '%s' "$lease" | jq -c '[.placement[] | .node, .gpus]')
expect_match "a lease on the agent's node" "$gpus" "$NODE"

kill -KILL "${PIDS[0]}"
wait "${PIDS[0]}" 2>/dev/null
PIDS[0]=""
wait_until 20 is_leader 1
expect_eq "the standby leads" "$(role_of 1)" leader
follows() { grep -q 'following a new leader' "$TMP/agent.log"; }
wait_until 30 follows
follows && ok "the agent follows the new leader's epoch by itself" ||
	bad "the agent did not follow the new leader" "$(tail -5 "$TMP/agent.log")"
wait_until 30 node_ready
expect_eq "its node is ready on the new leader" "$(node_state)" ready
after=$(sl --json lease show "$id" 2>/dev/null)
expect_eq "the lease is still active" "$(printf '%s' "$after" | jq -r .state)" active
expect_eq "... on the same GPUs" "$(printf '%s' "$after" | jq -c '[.placement[] | .node, .gpus]')" "$gpus"

epoch=$(curl -s --max-time 2 "${U[1]}/healthz" | jq -r '.epoch // empty')
saved=$(tr -d '\n' <"$TMP/agent/controller-epoch" 2>/dev/null)
expect_match "the new leader stamps an epoch" "$epoch" '^[0-9]+$'
expect_eq "the agent keeps the leader's epoch in its state directory" "$saved" "$epoch"

# A deposed leader: every answer stamped with an epoch below the saved one,
# its heartbeat answer telling the agent to stop everything.
kill -TERM "$AGENT"
wait_pid 20 "$AGENT"
AGENT=""
FPORT=$(free_port)
python3 - "$FPORT" "$NODE" "$((epoch - 1))" >"$TMP/fake.log" 2>&1 <<'PY' &
import http.server, json, sys
port, node, epoch = int(sys.argv[1]), sys.argv[2], sys.argv[3]
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        body = json.dumps({"node": node, "state": "ready", "heartbeat_s": 1, "work_version": 1,
                           "version": 1, "work": [], "stop": [{"job": "job-000001", "rank": 0}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Suanli-Epoch", epoch)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = answer
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
PY
FAKE=$!
: >"$TMP/agent2.log"
"$SUANLI_AGENT" run --server "http://127.0.0.1:$FPORT" --node "$NODE" --addr 127.0.0.1 \
	--simulate hgx-h100-8 --state-dir "$TMP/agent" --heartbeat 1 2>>"$TMP/agent2.log" &
AGENT=$!
refuses() { grep -q 'ignoring an answer of a deposed controller' "$TMP/agent2.log"; }
wait_until 20 refuses
refuses && ok "restarted, the agent refuses a controller of an older epoch" ||
	bad "the restarted agent obeyed a deposed controller" "$(tail -5 "$TMP/agent2.log")"
expect_eq "... and keeps the newest epoch" "$(tr -d '\n' <"$TMP/agent/controller-epoch")" "$epoch"
finish
