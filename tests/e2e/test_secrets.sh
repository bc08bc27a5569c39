#!/usr/bin/env bash
# test_secrets.sh - no secret is ever written where it should not be (issue
# 16): after a full run - a TLS controller, two agents joining with a join
# token and running a job, tenants, people's tokens (one with an expiry), a
# revoked token, leases, a denied request, an audit export - every log (the
# daemon's, the agents', the job's) and every table of the store are grepped
# for every token secret, node credential, password-like value, private key
# (PEM markers and the key files' bytes) and the audit signing seed. None may
# appear, except where each belongs: the credential file of its own agent and
# the key files themselves.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netns_lib.sh"
. "$(dirname "$0")/agent_lib.sh"
command -v sqlite3 >/dev/null || skip "no sqlite3 CLI (scripts/deps.sh)"
# the jobs run as host processes (agent_lib.sh), which only the owner's
# servers may do: a fleet whose nodes acme owns
FLEET="$SL_ROOT/tests/data/fleet/agents-owned.yaml"
DATA="$TMP/data"

ns_init
ns_create ctl 1 && ns_create h1 2 && ns_create h2 3 || die "hosts are created"
ag_controller "$DATA" "$FLEET" --heartbeat 1 || die "controller starts"
SECRETS=("$ADMIN")
JOIN=$(ag_join_token)
SECRETS+=("$JOIN")
ag_start e2e-h100-01 h1 "$JOIN"
ag_start e2e-h100-02 h2 "$JOIN"
wait_until 20 node_is e2e-h100-01 ready && wait_until 20 node_is e2e-h100-02 ready ||
	die "agents join"
ok "two agents joined over TLS"
for n in e2e-h100-01 e2e-h100-02; do SECRETS+=("$(cat "$TMP/agents/$n/credential")"); done

sl tenant create acme >/dev/null
T1=$(sl token create --role tenant --tenant acme --user alice --json | jq -r .token)
T2=$(sl token create --role tenant-admin --tenant acme --expires 30d --json | jq -r .token)
T3=$(sl token create --role auditor --json | jq -r .token)
SECRETS+=("$T1" "$T2" "$T3")
sl token revoke "$(sl token list --json | jq -r '.[] | select(.role == "auditor") | .id')" >/dev/null
L=$(SUANLI_TOKEN=$T1 SUANLI_SERVER=$URL SUANLI_CA=$CA ns_exec ctl "$SUANLI" lease create --gpus 8 --json | jq -r .id)
expect_match "a lease" "$L" '^ls-'
J=$(sl job run --lease "$L" --env "SECRET_LOOKING=not-a-secret" --json -- sh -c 'echo hello' | jq -r .id)
job_done() { [ "$(sl job show "$J" --json | jq -r .state)" = succeeded ]; }
wait_until 30 job_done || bad "the job runs" "$(sl job show "$J" 2>&1 | tail -3)"
api "$T3" GET /v1/nodes >/dev/null                              # revoked: denied, audited
api "sl_forged_$RANDOM$RANDOM" POST /v1/leases '{"gpus":1}' >/dev/null # unknown: denied, audited
api "$T1" POST /v1/leases "{\"gpus\":1,\"note\":\"$T1\"}" >/dev/null  # a secret in a bad body
sl audit checkpoint >/dev/null
sl audit export --output "$TMP/export.jsonl" >/dev/null
sl lease release "$L" >/dev/null
kill "$CTL_PID" 2>/dev/null
for _ in $(seq 1 100); do kill -0 "$CTL_PID" 2>/dev/null || break; sleep 0.1; done

# What must be searched: every log, and every stored table dumped.
sqlite3 "$DATA/suanli.db" .dump >"$TMP/store.sql" || bad "the store can be dumped"
expect_match "the dump holds the audit log and the tokens" "$(grep -c 'INSERT INTO' "$TMP/store.sql")" '^[0-9]{2,}$'
LOGS=("$TMP/suanlid.log" "$TMP"/agent-*.log "$TMP/store.sql" "$TMP/export.jsonl")
while IFS= read -r f; do LOGS+=("$f"); done < <(find "$TMP/agents" -type f ! -name credential 2>/dev/null)
# The key material: PEM markers, the keys' base64 bodies, the audit seed.
KEYS=("$(cat "$DATA/audit.key")")
for k in "$DATA"/tls/*.key; do KEYS+=("$(sed -n 2p "$k")"); done
found=""
for s in "${SECRETS[@]}"; do
	[ -n "$s" ] || continue
	hit=$(grep -lF -- "$s" "${LOGS[@]}" 2>/dev/null | head -3)
	[ -n "$hit" ] && found+="secret ${s:0:6}... in $hit; "
done
for s in "${KEYS[@]}"; do
	[ ${#s} -ge 16 ] || continue
	hit=$(grep -lF -- "$s" "${LOGS[@]}" 2>/dev/null | head -3)
	[ -n "$hit" ] && found+="key material in $hit; "
done
hit=$(grep -lE -- "PRIVATE KEY|password" "${LOGS[@]}" 2>/dev/null | head -3)
[ -n "$hit" ] && found+="PRIVATE KEY/password in $hit; "
expect_eq "no token, credential, password or private key in any log or table (${#SECRETS[@]} secrets, ${#KEYS[@]} keys, ${#LOGS[@]} files)" "$found" ""
expect_match "yet the log did record the denied requests" "$(grep -c '"outcome":"denied"' "$TMP/export.jsonl")" '^[1-9]'
finish
