#!/usr/bin/env bash
# test_ctl_basic.sh - the controller end to end: init, serve the demo fleet in
# simulate mode on a free loopback port, and drive the API with curl: health,
# catalog, nodes, tenants, tokens, leases (create, idempotent retry, list,
# show, release), auth failures, bad bodies, and a restart that must keep an
# acknowledged lease with its placement.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
FLEET="$SL_ROOT/examples/demo-fleet.yaml"
DATA="$TMP/data"

# ---- init ----
out=$("$SUANLID" init --data "$DATA" 2>&1)
expect_eq "init exits 0" "$?" 0
ADMIN=$(cat "$DATA/admin.token" 2>/dev/null)
expect_match "init prints the admin token" "$out" "$ADMIN"
expect_match "admin token has the sl_ prefix and 43 chars" "$ADMIN" '^sl_[A-Za-z0-9_-]{43}$'
expect_eq "data dir is 0700" "$(stat -c %a "$DATA")" 700
expect_eq "admin.token is 0600" "$(stat -c %a "$DATA/admin.token")" 600
out=$("$SUANLID" init --data "$DATA" 2>&1)
rc=$?
expect_eq "re-init refused" "$rc" 1
expect_match "re-init says why" "$out" "already holds a suanli store"
out=$("$SUANLID" serve --data "$TMP/none" --listen 127.0.0.1:0 2>&1)
expect_match "serve on an uninitialised dir says to init" "$out" "suanlid init"

# ---- serve ----
if ! start_daemon "$TMP/log1" --data "$DATA" --fleet "$FLEET" --simulate; then
	bad "daemon starts" "$(cat "$TMP/log1")"
	finish
	exit 1
fi
ok "daemon listens on port $PORT"

r=$(api - GET /healthz)
expect_eq "healthz 200 without a token" "$(status_of "$r")" 200
expect_eq "healthz says ok" "$(body_of "$r" | jq -r .status)" ok

r=$(api "$ADMIN" GET /v1/catalog)
expect_eq "catalog 200" "$(status_of "$r")" 200
expect_match "catalog lists h100-sxm" "$(body_of "$r" | jq -r '.gpu_models[].name')" '^h100-sxm$'
expect_match "catalog lists node types" "$(body_of "$r" | jq -r '.node_types[].name')" 'hgx-h100-8'

r=$(api "$ADMIN" GET /v1/nodes)
expect_eq "nodes 200" "$(status_of "$r")" 200
expect_eq "76 demo nodes" "$(body_of "$r" | jq length)" 76
expect_eq "all nodes ready and simulated" \
	"$(body_of "$r" | jq '[.[] | select(.state == "ready" and .simulated)] | length')" 76

r=$(api "$ADMIN" GET /v1/fleet)
expect_eq "fleet summary counts 464 GPUs" "$(body_of "$r" | jq .gpus)" 464

# ---- tenants and tokens ----
r=$(api "$ADMIN" POST /v1/tenants '{"name":"acme","regions":["cn-east"],"quotas":{"h100-sxm":16}}')
expect_eq "tenant create 201" "$(status_of "$r")" 201
r=$(api "$ADMIN" POST /v1/tenants '{"name":"acme"}')
expect_eq "duplicate tenant 409" "$(status_of "$r")" 409
r=$(api "$ADMIN" POST /v1/tenants '{"name":"beta"}')
expect_eq "second tenant 201" "$(status_of "$r")" 201

r=$(api "$ADMIN" POST /v1/tokens '{"role":"tenant","tenant":"acme","user":"alice"}')
expect_eq "token create 201" "$(status_of "$r")" 201
ALICE=$(body_of "$r" | jq -r .token)
ALICE_ID=$(body_of "$r" | jq -r .id)
expect_match "token secret shown once, sl_ prefix" "$ALICE" '^sl_'
expect_match "token id is public tok_ + 12 hex" "$ALICE_ID" '^tok_[0-9a-f]{12}$'
r=$(api "$ADMIN" POST /v1/tokens '{"role":"tenant","tenant":"beta","user":"bob"}')
BOB=$(body_of "$r" | jq -r .token)
r=$(api "$ADMIN" GET /v1/tokens)
expect_eq "token list never shows secrets" "$(body_of "$r" | jq '[.[] | select(has("token") or has("sha256"))] | length')" 0

# ---- leases ----
req='{"gpus":8,"models":["h100-sxm"],"plan":"hourly","duration_s":7200}'
r=$(api "$ALICE" POST /v1/leases "$req" -H 'Idempotency-Key: create-1')
expect_eq "lease create 201" "$(status_of "$r")" 201
first=$(body_of "$r")
LEASE=$(printf '%s' "$first" | jq -r .id)
expect_eq "lease active at once (simulate)" "$(printf '%s' "$first" | jq -r .state)" active
expect_eq "placement holds 8 GPUs on one node" \
	"$(printf '%s' "$first" | jq -c '[.placement[] | .gpus | length]')" "[8]"
expect_eq "lease belongs to acme/alice" "$(printf '%s' "$first" | jq -r '.tenant + "/" + .user')" acme/alice
expect_match "times are RFC 3339 with ms" "$(printf '%s' "$first" | jq -r .created_at)" \
	'^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$'
expect_match "expires_at set from duration" "$(printf '%s' "$first" | jq -r .expires_at)" '^20'
PLACEMENT=$(printf '%s' "$first" | jq -c '[.placement[] | {node, gpus}]')

r=$(api "$ALICE" POST /v1/leases "$req" -H 'Idempotency-Key: create-1')
expect_eq "idempotent retry answers the same status" "$(status_of "$r")" 201
expect_eq "idempotent retry answers the same bytes" "$(body_of "$r")" "$first"
r=$(api "$ALICE" GET /v1/leases)
expect_eq "retry made no second lease" "$(body_of "$r" | jq length)" 1

# A secret is shown once: the saved copy of a token answer does not keep it.
r=$(api "$ADMIN" POST /v1/tokens '{"role":"auditor"}' -H 'Idempotency-Key: tok-1')
secret=$(body_of "$r" | jq -r .token)
expect_match "token create shows the secret once" "$secret" '^sl_'
r=$(api "$ADMIN" POST /v1/tokens '{"role":"auditor"}' -H 'Idempotency-Key: tok-1')
expect_eq "its replay names the same token" "$(body_of "$r" | jq -r .id)" "$(body_of "$(api "$ADMIN" GET /v1/tokens)" | jq -r '[.[] | select(.role == "auditor")] | .[-1].id')"
expect_eq "... without the secret, saying why" "$(body_of "$r" | jq -r '(.token | tostring) + " " + (.secret_redacted != null | tostring)')" "null true"
expect_eq "the secret is nowhere in the store" "$(grep -c "$secret" "$DATA"/suanli.db* 2>/dev/null | awk -F: '{s += $NF} END {print s + 0}')" 0

r=$(api "$ALICE" POST /v1/leases '{"gpus":16,"models":["h100-sxm"]}')
expect_eq "over quota 403" "$(status_of "$r")" 403
expect_eq "over quota code" "$(body_of "$r" | jq -r .error.code)" quota
r=$(api "$ALICE" POST /v1/leases '{"gpus":8,"region":"cn-north"}')
expect_eq "region not allowed 403" "$(status_of "$r")" 403

r=$(api "$ALICE" GET "/v1/leases/$LEASE")
expect_eq "lease show 200" "$(status_of "$r")" 200
expect_eq "lease show has history" "$(body_of "$r" | jq -r '.history[-1].state')" active
expect_match "lease show explains the placement" "$(body_of "$r" | jq -r .explanation)" '^8 GPUs of h100-sxm on 1 node'
r=$(api "$ALICE" GET "/v1/leases?state=active")
expect_eq "lease list filters by state" "$(body_of "$r" | jq -r '.[0].id')" "$LEASE"

# ---- refusals ----
r=$(api - GET /v1/leases)
expect_eq "no token 401" "$(status_of "$r")" 401
expect_eq "401 is a JSON error" "$(body_of "$r" | jq -r .error.code)" unauthorized
r=$(api sl_notarealtoken GET /v1/leases)
expect_eq "bad token 401" "$(status_of "$r")" 401
r=$(api "$ALICE" GET /v1/tenants)
expect_eq "tenant listing tenants 403" "$(status_of "$r")" 403
r=$(api "$ALICE" PUT /v1/fleet)
expect_eq "tenant replacing the fleet 403" "$(status_of "$r")" 403
r=$(api "$BOB" GET "/v1/leases/$LEASE")
expect_eq "other tenant's lease 404" "$(status_of "$r")" 404
r=$(api "$BOB" POST "/v1/leases/$LEASE/release")
expect_eq "other tenant cannot release (404)" "$(status_of "$r")" 404
r=$(api "$BOB" GET /v1/tenants/acme)
expect_eq "other tenant's record 404" "$(status_of "$r")" 404
r=$(api "$BOB" GET /v1/leases)
expect_eq "other tenant sees no leases" "$(body_of "$r" | jq length)" 0
r=$(api "$ADMIN" GET /v1/nope)
expect_eq "unknown path 404" "$(status_of "$r")" 404
r=$(api "$ADMIN" DELETE /v1/leases)
expect_eq "wrong method 405" "$(status_of "$r")" 405

r=$(api "$ALICE" POST /v1/leases '{"gpus": 8,')
expect_eq "malformed JSON 400" "$(status_of "$r")" 400
expect_eq "malformed JSON has error.code" "$(body_of "$r" | jq -r .error.code)" parse_error
r=$(api "$ALICE" POST /v1/leases '{"gpus":8,"colour":"red"}')
expect_eq "unknown field 400" "$(status_of "$r")" 400
expect_match "unknown field named" "$(body_of "$r" | jq -r .error.message)" "colour"
r=$(api "$ALICE" POST /v1/leases '{"gpus":"8"}')
expect_eq "wrong type 400" "$(status_of "$r")" 400
expect_match "wrong type says the expected type" "$(body_of "$r" | jq -r .error.message)" "integer"
r=$(api "$ALICE" POST /v1/leases '[1,2]')
expect_eq "non-object body 400" "$(status_of "$r")" 400
deep=$(printf '%.0s[' $(seq 1 40))
r=$(api "$ALICE" POST /v1/leases "$deep")
expect_eq "too deep JSON 413" "$(status_of "$r")" 413
head -c $((1024 * 1024 + 10)) /dev/zero | tr '\0' ' ' >"$TMP/big"
r=$(api "$ALICE" POST /v1/leases "@$TMP/big")
expect_eq "oversized body 413" "$(status_of "$r")" 413
expect_match "oversized body is a JSON error" "$(body_of "$r")" '"code"'
r=$(api - GET /healthz)
expect_eq "daemon still up after bad input" "$(status_of "$r")" 200

# ---- restart keeps acknowledged state ----
stop_daemon
expect_eq "SIGTERM stops cleanly (exit 0)" "$?" 0
expect_match "stop is logged" "$(cat "$TMP/log1")" 'msg=stopped'
if ! start_daemon "$TMP/log2" --data "$DATA" --simulate; then
	bad "daemon restarts" "$(cat "$TMP/log2")"
	finish
	exit 1
fi
r=$(api "$ALICE" GET "/v1/leases/$LEASE")
expect_eq "lease survives restart" "$(body_of "$r" | jq -r .state)" active
expect_eq "same placement after restart" "$(body_of "$r" | jq -c '[.placement[] | {node, gpus}]')" "$PLACEMENT"
r=$(api "$ALICE" POST /v1/leases "$req" -H 'Idempotency-Key: create-1')
expect_eq "idempotency key survives restart" "$(body_of "$r" | jq -r .id)" "$LEASE"
node=$(printf '%s' "$PLACEMENT" | jq -r '.[0].node')
r=$(api "$ADMIN" GET "/v1/nodes/$node")
expect_eq "node shows the lease's GPUs after restart" "$(body_of "$r" | jq .free_gpus)" 0

r=$(api "$ALICE" POST "/v1/leases/$LEASE/release")
expect_eq "release 200" "$(status_of "$r")" 200
expect_eq "released" "$(body_of "$r" | jq -r .state)" released
expect_match "ended_at set" "$(body_of "$r" | jq -r .ended_at)" '^20'
r=$(api "$ADMIN" GET "/v1/nodes/$node")
expect_eq "GPUs free again" "$(body_of "$r" | jq .free_gpus)" 8

r=$(api "$ADMIN" DELETE "/v1/tokens/$ALICE_ID")
expect_eq "revoke 200" "$(status_of "$r")" 200
r=$(api "$ALICE" GET /v1/leases)
expect_eq "revoked token 401" "$(status_of "$r")" 401

stop_daemon
expect_eq "second stop clean" "$?" 0
finish
