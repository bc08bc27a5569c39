#!/usr/bin/env bash
# test_jobs_api.sh - jobs end to end against a real suanlid: `suanli job run`
# on a 2-node lease, a fake agent driven with curl through the agent protocol
# (join token, register, work long poll, heartbeats, log shipping), the exact
# distributed environment of each rank, job states from reports (succeeded,
# cancelled), reconcile of unknown work, logs (append, 409, per-rank and
# prefixed), cancel, lease release, bad bodies, tenant scoping, restart.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
FLEET="$SL_ROOT/tests/data/fleet/agents-small.yaml"
DATA="$TMP/data"
BG_PIDS=()
cleanup_bg() { for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; }
trap 'cleanup_bg; ctl_cleanup' EXIT

cli() { OUT=$("$SUANLI" "$@" 2>"$TMP/err"); RC=$?; ERR=$(cat "$TMP/err"); }
flat() { printf '%s' "$*" | tr '\n' ' '; }

"$SUANLID" init --data "$DATA" >/dev/null || { bad "suanlid init"; finish; exit 1; }
ADMIN=$(cat "$DATA/admin.token")
if ! start_daemon "$TMP/log" --data "$DATA" --fleet "$FLEET" --simulate; then
	bad "daemon starts" "$(cat "$TMP/log")"
	finish
	exit 1
fi
export SUANLI_SERVER="$URL"

api "$ADMIN" POST /v1/tenants '{"name":"acme"}' >/dev/null
api "$ADMIN" POST /v1/tenants '{"name":"beta"}' >/dev/null
api "$ADMIN" POST /v1/tenants/acme/topups '{"amount":"100000.00"}' >/dev/null
api "$ADMIN" POST /v1/tenants/beta/topups '{"amount":"100000.00"}' >/dev/null
ACME=$(body_of "$(api "$ADMIN" POST /v1/tokens '{"role":"tenant","tenant":"acme","user":"alice"}')" | jq -r .token)
BETA=$(body_of "$(api "$ADMIN" POST /v1/tokens '{"role":"tenant","tenant":"beta","user":"bob"}')" | jq -r .token)

r=$(api "$ACME" POST /v1/leases '{"gpus":16,"per_node":8,"models":["h100-sxm"]}')
expect_eq "a 2-node lease for acme" "$(status_of "$r")" 201
LEASE=$(body_of "$r" | jq -r .id)
N0=$(body_of "$r" | jq -r '.placement[0].node')
N1=$(body_of "$r" | jq -r '.placement[1].node')
expect_eq "the lease is active on 2 nodes" "$(body_of "$r" | jq -r '.state + " " + (.placement|length|tostring)')" "active 2"

# ---- bad bodies: 400 naming the field, nothing created ----
bad_body() { # NAME BODY REGEX
	local r
	r=$(api "$ACME" POST /v1/jobs "$2")
	expect_match "$1" "$(status_of "$r") $(body_of "$r" | jq -r .error.message)" "$3"
}
bad_body "no argv: 400 naming argv" "{\"lease\":\"$LEASE\"}" "^400 .*'argv'"
bad_body "empty argv: 400" "{\"lease\":\"$LEASE\",\"argv\":[]}" "^400 .*'argv'"
bad_body "argv of numbers: 400 naming argv[1]" "{\"lease\":\"$LEASE\",\"argv\":[\"x\",1]}" "^400 .*argv\\[1\\]"
bad_body "bad env key: 400 naming it" "{\"lease\":\"$LEASE\",\"argv\":[\"x\"],\"env\":{\"1A\":\"v\"}}" "^400 .*'1A'"
bad_body "env overriding NODE_RANK: 400" "{\"lease\":\"$LEASE\",\"argv\":[\"x\"],\"env\":{\"NODE_RANK\":\"3\"}}" "^400 .*NODE_RANK"
bad_body "env value not a string: 400" "{\"lease\":\"$LEASE\",\"argv\":[\"x\"],\"env\":{\"A\":1}}" "^400 .*env.A"
bad_body "bad restart: 400 naming restart" "{\"lease\":\"$LEASE\",\"argv\":[\"x\"],\"restart\":\"sometimes\"}" "^400 .*'restart'"
bad_body "nodes beyond the lease: 400 naming nodes" "{\"lease\":\"$LEASE\",\"argv\":[\"x\"],\"nodes\":3}" "^400 .*'nodes'"
bad_body "nodes neither all nor a number: 400" "{\"lease\":\"$LEASE\",\"argv\":[\"x\"],\"nodes\":\"some\"}" "^400 .*'nodes'"
bad_body "unknown field: 400 naming it" "{\"lease\":\"$LEASE\",\"argv\":[\"x\"],\"gpus\":1}" "^400 .*'gpus'"
bad_body "stop_grace_s out of range: 400" "{\"lease\":\"$LEASE\",\"argv\":[\"x\"],\"stop_grace_s\":0}" "^400 .*stop_grace_s"
bad_body "no such lease: 404" '{"lease":"ls-999999","argv":["x"]}' "^404 "
r=$(api "$BETA" POST /v1/jobs "{\"lease\":\"$LEASE\",\"argv\":[\"x\"]}")
expect_eq "another tenant's lease: 404" "$(status_of "$r")" 404
expect_eq "no job was created by the bad requests" "$(body_of "$(api "$ADMIN" GET /v1/jobs)" | jq length)" 0

# ---- job run ----
cli job run --token "$ACME" --lease "$LEASE" --env NCCL_DEBUG=INFO --json -- sh -c 'echo $NODE_RANK'
expect_eq "job run --json exits 0" "$RC" 0
JOB=$(printf '%s' "$OUT" | jq -r .id)
expect_eq "job ids are job-NNNNNN" "$JOB" job-000001
expect_eq "one rank per node, in placement order" "$(printf '%s' "$OUT" | jq -r '[.ranks[].node] | join(",")')" "$N0,$N1"
expect_eq "the job is pending until an agent reports" "$(printf '%s' "$OUT" | jq -r .state)" pending
cli job run --token "$ACME" --lease "$LEASE" --nodes 1 --restart on-failure -- sleep 1000
expect_match "job run prints the id and how to follow it" "$(flat "$OUT")" "Job job-000002 .*suanli job logs job-000002 -f"
cli job list --token "$ACME"
expect_match "job list shows both" "$(flat "$OUT")" "job-000001 .*job-000002"
cli job list --token "$BETA" --json
expect_eq "another tenant lists none" "$(printf '%s' "$OUT" | jq length)" 0
r=$(api "$BETA" GET "/v1/jobs/$JOB")
expect_eq "another tenant's job: 404" "$(status_of "$r")" 404
r=$(api "$BETA" POST "/v1/jobs/$JOB/cancel")
expect_eq "another tenant cannot cancel it: 404" "$(status_of "$r")" 404
r=$(api "$ADMIN" GET '/v1/audit/log?limit=100000')
expect_eq "that probe is audited as denied (the caller and the job)" \
	"$(body_of "$r" | jq -r '[.[] | select(.action == "job.cancel" and .outcome == "denied")][0] | .tenant + " " + .target')" "beta $JOB"
expect_eq "job creation is audited under the lease's tenant" \
	"$(body_of "$r" | jq -r '[.[] | select(.action == "job.create" and .outcome == "ok")] | map(.tenant + ":" + .target) | join(",")')" "acme:job-000001,acme:job-000002"
r=$(api "$ACME" GET /v1/agent/work)
expect_eq "a tenant token may not poll work: 403" "$(status_of "$r")" 403

# ---- the agent side (needs registration: src/ctl/agents*.c and discover) ----
DISC=$("$SUANLI_AGENT" discover --simulate hgx-h100-8 --json 2>/dev/null)
JOIN=$(body_of "$(api "$ADMIN" POST /v1/agent-tokens '{}')" | jq -r '.token // empty' 2>/dev/null)
declare -A CRED ADDR
ADDR[$N0]=127.0.0.2
ADDR[$N1]=127.0.0.3
if [ -z "$DISC" ] || [ -z "$JOIN" ]; then
	bad "agent registration is available (join token and suanli-agent discover --json)" \
		"disc=$([ -n "$DISC" ] && echo yes || echo no) join=$([ -n "$JOIN" ] && echo yes || echo no)"
	finish
	exit 1
fi
for n in "$N0" "$N1"; do
	r=$(api "$JOIN" POST /v1/agent/register "{\"node\":\"$n\",\"addr\":\"${ADDR[$n]}\",\"boot_id\":\"boot-$n\",\"discovery\":$DISC}")
	expect_eq "register $n" "$(status_of "$r")" 200
	CRED[$n]=$(body_of "$r" | jq -r .credential)
done
hb() { # NODE WORKJSON -> prints the answer body
	body_of "$(api "${CRED[$1]}" POST /v1/agent/heartbeat "{\"boot_id\":\"boot-$1\",\"work\":$2}")"
}

r=$(api "${CRED[$N0]}" GET '/v1/agent/work?version=0&wait=0')
expect_eq "work poll 200" "$(status_of "$r")" 200
W0=$(body_of "$r")
item='.work[] | select(.job == "job-000001")'
expect_eq "rank 0 runs on the first node" "$(printf '%s' "$W0" | jq -r "$item | .rank, .state" | tr '\n' ' ')" "0 run "
expect_eq "argv as given" "$(printf '%s' "$W0" | jq -c "$item | .argv")" '["sh","-c","echo $NODE_RANK"]'
envq() { printf '%s' "$1" | jq -r "$item | .env.$2"; }
expect_eq "CUDA_VISIBLE_DEVICES: the lease's GPUs" "$(envq "$W0" CUDA_VISIBLE_DEVICES)" "$(body_of "$(api "$ACME" GET "/v1/leases/$LEASE")" | jq -r '.placement[0].gpus | map(tostring) | join(",")')"
expect_eq "NNODES 2" "$(envq "$W0" NNODES)" 2
expect_eq "NODE_RANK 0" "$(envq "$W0" NODE_RANK)" 0
expect_eq "NPROC_PER_NODE: GPUs on the node" "$(envq "$W0" NPROC_PER_NODE)" 8
expect_eq "MASTER_ADDR: rank 0's agent address" "$(envq "$W0" MASTER_ADDR)" 127.0.0.2
expect_eq "MASTER_PORT: 20000 + job number" "$(envq "$W0" MASTER_PORT)" 20001
expect_eq "SUANLI_LEASE, SUANLI_JOB" "$(envq "$W0" SUANLI_LEASE) $(envq "$W0" SUANLI_JOB)" "$LEASE job-000001"
expect_eq "SUANLI_NODE_LIST" "$(envq "$W0" SUANLI_NODE_LIST)" "$N0,$N1"
expect_eq "NCCL_IB_HCA: the rails of the chosen GPUs" "$(envq "$W0" NCCL_IB_HCA)" "=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7"
expect_eq "the user's env" "$(envq "$W0" NCCL_DEBUG)" INFO
expect_eq "nics array" "$(printf '%s' "$W0" | jq -c "$item | .nics | length")" 8
EPOCH=$(printf '%s' "$W0" | jq -r "$item | .epoch")
expect_eq "the item carries the lease's epoch" "$EPOCH" "$(body_of "$(api "$ACME" GET "/v1/leases/$LEASE")" | jq -r .epoch)"
W1=$(body_of "$(api "${CRED[$N1]}" GET '/v1/agent/work?version=0&wait=0')")
expect_eq "rank 1 on the second node: NODE_RANK 1, same master" "$(envq "$W1" NODE_RANK) $(envq "$W1" MASTER_ADDR)" "1 127.0.0.2"
expect_eq "the --nodes 1 job is not on the second node" "$(printf '%s' "$W1" | jq '[.work[] | select(.job == "job-000002")] | length')" 0
V1=$(printf '%s' "$W1" | jq -r .version)

# A long poll at the current version waits, and a change answers it.
curl -s -m 30 -H "Authorization: Bearer ${CRED[$N1]}" "$URL/v1/agent/work?version=$V1&wait=60" >"$TMP/poll" &
BG_PIDS+=($!)
POLL=$!
sleep 0.5
kill -0 "$POLL" 2>/dev/null && ok "a poll at the current version waits" || bad "a poll at the current version waits"
cli job run --token "$ACME" --lease "$LEASE" --restart always -- sleep 1000
JOB3=$(printf '%s' "$OUT" | sed -n 's/^Job \(job-[0-9]*\) .*/\1/p')
wait "$POLL"
expect_eq "the new job wakes the waiting poll with a newer version" \
	"$(jq -r --arg j "$JOB3" '[(.version > '"$V1"'), ([.work[] | select(.job == $j)] | length)] | map(tostring) | join(" ")' "$TMP/poll")" "true 1"

# A poller that hangs up is forgotten: the next change must not answer it.
V1=$(jq -r .version "$TMP/poll")
curl -s -m 1 -H "Authorization: Bearer ${CRED[$N1]}" "$URL/v1/agent/work?version=$V1&wait=60" >/dev/null
cli job run --token "$ACME" --lease "$LEASE" -- true
r=$(api "${CRED[$N1]}" GET "/v1/agent/work?version=$V1&wait=0")
expect_eq "after a poller hung up, the daemon serves the next poll" "$(status_of "$r") $(body_of "$r" | jq '.version > '"$V1")" "200 true"
api "$ADMIN" POST /v1/jobs/job-000004/cancel >/dev/null
expect_eq "an operator's cancel is audited under the job's tenant" \
	"$(body_of "$(api "$ADMIN" GET '/v1/audit/log?limit=100000')" | jq -r '[.[] | select(.action == "job.cancel" and .outcome == "ok")][0] | .tenant + " " + .target')" "acme job-000004"

# ---- heartbeats drive the job state ----
a=$(hb "$N0" "[{\"job\":\"$JOB\",\"rank\":0,\"epoch\":$EPOCH,\"pid\":100,\"state\":\"running\",\"restarts\":0}]")
expect_eq "heartbeat answer has no stop for assigned work" "$(printf '%s' "$a" | jq -c .stop)" "[]"
expect_eq "a running report makes the job running" "$(body_of "$(api "$ACME" GET "/v1/jobs/$JOB")" | jq -r '.state + " " + .ranks[0].state')" "running running"
a=$(hb "$N0" "[{\"job\":\"job-999999\",\"rank\":0,\"epoch\":1,\"pid\":7,\"state\":\"running\"}]")
expect_eq "reconcile: unknown running work is told to stop" "$(printf '%s' "$a" | jq -c .stop)" '[{"job":"job-999999","rank":0}]'
hb "$N0" "[{\"job\":\"$JOB\",\"rank\":0,\"epoch\":0,\"pid\":1,\"state\":\"exited\",\"exit_code\":3}]" >/dev/null
expect_eq "a report with a stale epoch changes nothing" "$(body_of "$(api "$ACME" GET "/v1/jobs/$JOB")" | jq -r .state)" running

# ---- logs ----
lp() { # NODE RANK OFFSET DATA
	api "${CRED[$1]}" POST "/v1/agent/logs?job=$JOB&rank=$2&offset=$3" "" --data-binary "$4" -H 'Content-Type: application/octet-stream'
}
r=$(lp "$N0" 0 0 $'hello\nwor')
expect_eq "log append 200 with the size" "$(status_of "$r") $(body_of "$r" | jq -r .size)" "200 9"
r=$(lp "$N0" 0 0 $'hello\nwor')
expect_eq "a resend at a stale offset: 409 with the size" "$(status_of "$r") $(body_of "$r" | jq -r .size)" "409 9"
r=$(lp "$N0" 0 9 $'ld\n')
expect_eq "append at the size" "$(body_of "$r" | jq -r .size)" 12
r=$(lp "$N1" 0 12 'x')
expect_eq "another node may not post rank 0's output: 403" "$(status_of "$r")" 403
lp "$N1" 1 0 $'bye\n' >/dev/null
r=$(api "$ACME" GET "/v1/jobs/$JOB/logs")
expect_eq "all ranks, each line prefixed" "$(body_of "$r")" "$(printf '[0] hello\n[0] world\n[1] bye')"
curl -s -D "$TMP/hdr" -o "$TMP/part" -H "Authorization: Bearer $ACME" "$URL/v1/jobs/$JOB/logs?rank=0&offset=6"
expect_eq "one rank from an offset" "$(cat "$TMP/part")" world
expect_match "X-Log-Size header" "$(tr -d '\r' <"$TMP/hdr")" '^X-Log-Size: 12$'
r=$(api "$BETA" GET "/v1/jobs/$JOB/logs")
expect_eq "another tenant's logs: 404" "$(status_of "$r")" 404

# exit 0 on both ranks -> succeeded; logs -f ends with every line
hb "$N0" "[{\"job\":\"$JOB\",\"rank\":0,\"epoch\":$EPOCH,\"pid\":100,\"state\":\"exited\",\"exit_code\":0}]" >/dev/null
expect_eq "one rank done: still running" "$(body_of "$(api "$ACME" GET "/v1/jobs/$JOB")" | jq -r .state)" running
hb "$N1" "[{\"job\":\"$JOB\",\"rank\":1,\"epoch\":$EPOCH,\"pid\":101,\"state\":\"exited\",\"exit_code\":0}]" >/dev/null
expect_eq "every rank exited 0: succeeded" "$(body_of "$(api "$ACME" GET "/v1/jobs/$JOB")" | jq -r .state)" succeeded
cli job logs --token "$ACME" "$JOB" -f
expect_eq "job logs -f prints everything and ends" "$RC $(flat "$OUT")" "0 [0] hello [0] world [1] bye"
cli job logs --token "$ACME" "$JOB" --rank 1
expect_eq "job logs --rank prints that rank as it is" "$OUT" bye
cli job show --token "$ACME" "$JOB"
expect_match "job show: state and a ranks table" "$(flat "$OUT")" "is succeeded.*RANK +NODE +GPUS +STATE +EXIT +RESTARTS.*0 +$N0 +0-7 +exited +0 +0"
W0=$(body_of "$(api "${CRED[$N0]}" GET '/v1/agent/work?version=0&wait=0')")
expect_eq "a finished rank is no longer in the work" "$(printf '%s' "$W0" | jq '[.work[] | select(.job == "job-000001")] | length')" 0

# ---- the per-rank bound: only the newest 64 MiB stay ----
head -c 1048576 /dev/zero | tr '\0' 'x' >"$TMP/mib"
off=0
for _ in $(seq 1 65); do
	r=$(api "${CRED[$N0]}" POST "/v1/agent/logs?job=job-000002&rank=0&offset=$off" "" \
		--data-binary @"$TMP/mib" -H 'Content-Type: application/octet-stream')
	off=$(body_of "$r" | jq -r .size)
done
expect_eq "65 MiB shipped in 1 MiB posts" "$off" 68157440
expect_eq "the rank shows all it wrote and where the kept part starts" \
	"$(body_of "$(api "$ACME" GET /v1/jobs/job-000002)" | jq -r '.ranks[0] | "\(.log_size) \(.log_start)"')" "68157440 33554432"
curl -s -D "$TMP/hdr" -o "$TMP/part" -H "Authorization: Bearer $ACME" "$URL/v1/jobs/job-000002/logs?rank=0&offset=0"
expect_match "an offset before the kept part starts at X-Log-Start" "$(tr -d '\r' <"$TMP/hdr")" '^X-Log-Start: 33554432$'
expect_eq "one answer holds at most 4 MiB" "$(stat -c %s "$TMP/part")" 4194304
kept=$(du -sb "$DATA/logs/job-000002" | cut -f1)
[ "$kept" -le $((65 * 1048576)) ] && ok "at most 64 MiB (+ one post) kept on disk" || bad "at most 64 MiB kept on disk" "$kept bytes"
expect_match "all ranks' view says what is not shown" "$(body_of "$(api "$ACME" GET /v1/jobs/job-000002/logs)" | head -c 200)" \
	'^\[0\] \(the first [0-9]+ bytes are not shown'

# ---- cancel: running rank -> stop item, cancelling, then cancelled ----
hb "$N0" "[{\"job\":\"job-000002\",\"rank\":0,\"epoch\":$EPOCH,\"pid\":200,\"state\":\"running\"}]" >/dev/null
cli job cancel --token "$ACME" job-000002
expect_match "cancel of a running job: cancelling" "$(flat "$OUT")" "job-000002 is cancelling"
W0=$(body_of "$(api "${CRED[$N0]}" GET '/v1/agent/work?version=0&wait=0')")
expect_eq "its rank is a stop item now" "$(printf '%s' "$W0" | jq -r '.work[] | select(.job == "job-000002") | .state + " " + (.stop_grace_s|tostring)')" "stop 10"
a=$(hb "$N0" "[{\"job\":\"job-000002\",\"rank\":0,\"epoch\":$EPOCH,\"pid\":200,\"state\":\"running\"}]")
expect_eq "while it still runs, the heartbeat says stop" "$(printf '%s' "$a" | jq -c .stop)" '[{"job":"job-000002","rank":0}]'
hb "$N0" "[{\"job\":\"job-000002\",\"rank\":0,\"epoch\":$EPOCH,\"pid\":200,\"state\":\"stopped\",\"signal\":15}]" >/dev/null
expect_eq "reported stopped: cancelled" "$(body_of "$(api "$ACME" GET /v1/jobs/job-000002)" | jq -r '.state + " " + .ranks[0].state')" "cancelled stopped"
r=$(api "$ACME" POST /v1/jobs/job-000002/cancel)
expect_eq "cancelling an ended job: 409" "$(status_of "$r")" 409

# ---- a restart keeps the jobs ----
stop_daemon
expect_eq "the daemon stops cleanly (status 0; no leak under ASan)" "$?" 0
start_daemon "$TMP/log2" --data "$DATA" --fleet "$FLEET" --simulate || bad "restart" "$(cat "$TMP/log2")"
export SUANLI_SERVER="$URL"
r=$(api "$ACME" GET /v1/jobs)
expect_eq "after a restart: every job with its state" "$(body_of "$r" | jq -r '[.[].state] | join(",")')" "succeeded,cancelled,pending,cancelled"
expect_eq "and its logs" "$(body_of "$(api "$ACME" GET "/v1/jobs/$JOB/logs?rank=0")")" "$(printf 'hello\nworld')"

# ---- lease release cancels its jobs ----
r=$(api "$ACME" POST "/v1/leases/$LEASE/release")
expect_eq "release the lease" "$(status_of "$r")" 200
expect_match "its running job is cancelled, naming the lease" "$(body_of "$(api "$ACME" GET "/v1/jobs/$JOB3")" | jq -r '.state + " " + .reason')" "^cancelled lease $LEASE ended"
r=$(api "$ACME" POST /v1/jobs "{\"lease\":\"$LEASE\",\"argv\":[\"x\"]}")
expect_eq "no job on an ended lease: 409" "$(status_of "$r")" 409

# ---- a lease that changes epoch (scaled) moves its ranks ----
r=$(api "$ACME" POST /v1/leases '{"gpus":8,"per_node":8,"elastic":{"min":8,"max":16}}')
EL=$(body_of "$r" | jq -r .id)
E1=$(body_of "$r" | jq -r .epoch)
EJ=$(body_of "$(api "$ACME" POST /v1/jobs "{\"lease\":\"$EL\",\"argv\":[\"sleep\",\"9\"]}")" | jq -r .id)
r=$(api "$ACME" POST "/v1/leases/$EL/scale" '{"gpus":16}')
E2=$(body_of "$r" | jq -r .epoch)
EN1=$(body_of "$r" | jq -r '.placement[1].node')
j=$(body_of "$(api "$ACME" GET "/v1/jobs/$EJ")")
expect_eq "scaled to 2 nodes: the job follows with the new epoch" "$(printf '%s' "$j" | jq -r '(.epoch|tostring) + " " + (.ranks|length|tostring)')" "$E2 2"
[ "$E2" -gt "$E1" ] && ok "the epoch grew" || bad "the epoch grew" "$E1 -> $E2"
if [ -n "${CRED[$EN1]:-}" ]; then
	w=$(body_of "$(api "${CRED[$EN1]}" GET '/v1/agent/work?version=0&wait=0')")
	expect_eq "the new node's item: rank 1 of 2 at the new epoch" \
		"$(printf '%s' "$w" | jq -r --arg j "$EJ" '.work[] | select(.job == $j) | "\(.rank) \(.env.NNODES) \(.epoch)"')" "1 2 $E2"
fi

cli job show --token "$ACME" job-000009
expect_match "job show of a missing job: exit 1 with the server's message" "$(flat "$RC $ERR")" "^1 .*no job with id"
# A work poll left waiting when the daemon stops is answered, not leaked.
curl -s -m 30 -H "Authorization: Bearer ${CRED[$N0]}" "$URL/v1/agent/work?version=$(body_of "$(api "${CRED[$N0]}" GET '/v1/agent/work?wait=0')" | jq -r .version)&wait=60" >/dev/null &
BG_PIDS+=($!)
sleep 0.3
stop_daemon
expect_eq "with a poll waiting, the daemon still stops cleanly" "$?" 0
finish
