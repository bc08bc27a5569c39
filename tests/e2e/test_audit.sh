#!/usr/bin/env bash
# test_audit.sh - the tamper-evident audit log through a real suanlid and its
# real SQLite file: requests of several roles produce exactly the expected
# entries; the intact log verifies online and offline (export + public key);
# editing the stored entries or checkpoints with the sqlite3 CLI (one byte of
# one entry, an entry and its leaf hash together, a deleted entry, two swapped
# entries, a replaced checkpoint) makes `suanli audit verify` fail and name
# the right first bad seq; and a request whose entry cannot be written (a
# trigger refuses inserts) is refused as a whole, leaving no lease behind.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
DATA="$TMP/data"
DB="$DATA/suanli.db"
FLEET="$SL_ROOT/examples/demo-fleet.yaml"

command -v sqlite3 >/dev/null || skip "no sqlite3 CLI (scripts/deps.sh installs the Debian package sqlite3)"

serve() { start_daemon "$TMP/log" --data "$DATA" --fleet "$FLEET" --simulate || { bad "daemon starts" "$(cat "$TMP/log")"; finish; exit 1; }; }
# cli ARGS...: runs suanli; RC, and OUT on one line (for the patterns).
cli() { OUT=$("$SUANLI" "$@" --server "$URL" 2>&1); RC=$?; OUT=$(printf '%s' "$OUT" | tr '\n' ' '); }

"$SUANLID" init --data "$DATA" >/dev/null || { bad "init"; finish; exit 1; }
expect_eq "init creates the audit key, mode 0600" "$(stat -c %a "$DATA/audit.key")" 600
expect_eq "init writes the public key" "$(base64 -d "$DATA/audit.pub" | wc -c)" 32
serve
A=$(cat "$DATA/admin.token")
export SUANLI_TOKEN=$A

# ---- requests of several roles, and the entries they must leave ----
api "$A" POST /v1/tenants '{"name":"acme","regions":["cn-east"],"quotas":{"h100-sxm":64}}' >/dev/null
api "$A" POST /v1/tenants '{"name":"beta","regions":["cn-east"],"quotas":{"h100-sxm":64}}' >/dev/null
tok() { body_of "$(api "$A" POST /v1/tokens "$1")" | jq -r .token; }
TA=$(tok '{"role":"tenant","tenant":"acme","user":"alice"}')
TB=$(tok '{"role":"tenant","tenant":"beta"}')
AU=$(tok '{"role":"auditor"}')
r=$(api "$TA" POST /v1/leases '{"gpus":8,"duration_s":7200}')
LEASE=$(body_of "$r" | jq -r .id)
expect_eq "tenant creates a lease" "$(status_of "$r")" 201
api "$TA" GET /v1/leases >/dev/null                                   # read: no entry
expect_eq "another tenant's lease is 404" "$(status_of "$(api "$TB" GET "/v1/leases/$LEASE")")" 404
expect_eq "another tenant's release is 404" "$(status_of "$(api "$TB" POST "/v1/leases/$LEASE/release" '{}')")" 404
expect_eq "auditor may not create leases" "$(status_of "$(api "$AU" POST /v1/leases '{"gpus":1}')")" 403
expect_eq "no token: 401" "$(status_of "$(api - GET /v1/nodes)")" 401
expect_eq "unknown token: 401" "$(status_of "$(api sl_nope GET /v1/nodes)")" 401
expect_eq "invalid lease request: 400" "$(status_of "$(api "$TA" POST /v1/leases '{"bogus":1}')")" 400
api "$A" POST /v1/nodes/fza-h100-002/drain '{"reason":"maintenance"}' >/dev/null
api "$A" POST /v1/nodes/fza-h100-002/resume '{}' >/dev/null
api "$A" GET /v1/audit/log >/dev/null                                 # read: no entry
api "$A" POST "/v1/leases/$LEASE/release" '{}' >/dev/null

want='fleet.load ok - FLEET
tenant.create ok acme acme
tenant.create ok beta beta
token.create ok acme -
token.create ok beta -
token.create ok - -
lease.create ok acme LEASE
lease.show denied beta LEASE
lease.release denied beta LEASE
lease.create denied - -
node.list denied - -
node.list denied - -
lease.create invalid acme -
node.drain ok - fza-h100-002
node.resume ok - fza-h100-002
lease.release ok acme LEASE'
want=${want//LEASE/$LEASE}
want=${want//FLEET/$FLEET}
got=$(body_of "$(api "$A" GET /v1/audit/log)" |
	jq -r '.[] | [.action, .outcome, (if .tenant == "" then "-" else .tenant end),
		(if .target == "" or (.action == "token.create") then "-" else .target end)] | join(" ")')
if [ "$got" = "$want" ]; then ok "every change and every denial left one entry, in order (16)"
else bad "every change and every denial left one entry" "$(diff <(echo "$want") <(echo "$got"))"; fi
log=$(body_of "$(api "$A" GET /v1/audit/log)")
expect_eq "actors are token ids and roles, never secrets" \
	"$(echo "$log" | jq -r '.[6] | .actor[0:4] + " " + .role')" "tok_ tenant"
TAID=$(echo "$log" | jq -r '.[6].actor') # the tenant token's id
expect_eq "unauthenticated requests are anonymous" "$(echo "$log" | jq -r '.[10].actor')" anonymous
expect_eq "the request body's digest is recorded" "$(echo "$log" | jq -r '.[6].request_digest')" \
	"$(printf '%s' '{"gpus":8,"duration_s":7200}' | sha256sum | cut -d' ' -f1)"
expect_eq "a tenant sees only its tenant's entries" \
	"$(body_of "$(api "$TA" GET /v1/audit/log)" | jq -r '[.[].tenant] | unique | join(",")')" acme
expect_eq "a tenant may not ask for another's" "$(status_of "$(api "$TA" GET '/v1/audit/log?tenant=beta')")" 403
expect_eq "filters: tenant and action" \
	"$(body_of "$(api "$AU" GET '/v1/audit/log?tenant=acme&action=lease.create')" | jq -r 'map(.outcome) | join(",")')" ok,invalid
expect_eq "filters: since and limit" \
	"$(body_of "$(api "$AU" GET '/v1/audit/log?since=10&limit=2')" | jq -r 'map(.seq) | join(",")')" 11,12

# ---- checkpoints, proofs, online and offline verification ----
cli audit checkpoint
# 17 entries: the 16 above and the tenant's refused look at beta's.
expect_match "checkpoint on demand" "$RC $OUT" '^0 Checkpoint of suanli/[0-9a-f]+ at size 17'
for i in 1 2 3 4; do api "$TA" POST /v1/leases '{"gpus":1,"duration_s":60}' >/dev/null; done
cli audit checkpoint
expect_match "a second checkpoint" "$RC $OUT" '^0 .* at size 22'
cli audit proof --seq 8
expect_match "inclusion proof checked by the CLI" "$RC $OUT" '^0 Entry 8 \(lease.show .*inclusion proof of [0-9]+ hashes verified'
cli audit consistency --from 17
expect_match "consistency proof checked by the CLI" "$RC $OUT" '^0 The log of 17 entries .* consistency proof of [0-9]+ hashes verified'
expect_eq "a tenant cannot fetch a proof of another tenant's entry" \
	"$(status_of "$(api "$TA" GET '/v1/audit/proof?seq=8')")" 404
cli audit verify
expect_match "intact log verifies online" "$RC $OUT" '^0 Audit log intact: 23 entries, 2 checkpoint'
cli audit export --output "$TMP/export.jsonl"
expect_eq "export: entries, checkpoints, key" "$RC $(jq -r .type "$TMP/export.jsonl" | uniq -c | awk '{print $2 $1}' | tr '\n' ' ')" \
	"0 entry23 checkpoint2 key1 "
if grep -q "$TA\|$A" "$TMP/export.jsonl"; then bad "no token secret in the export"; else ok "no token secret in the export"; fi
cli audit verify --offline --export "$TMP/export.jsonl" --pubkey "$DATA/audit.pub"
expect_match "intact export verifies offline" "$RC $OUT" '^0 Audit log intact: 23 entries, 2 checkpoint'
# Entries cut from the end together with the checkpoints covering them leave
# a shorter but consistent log; a checkpoint kept from earlier reveals them.
body_of "$(api "$AU" GET /v1/audit/checkpoint)" | jq -j .note >"$TMP/kept.note"
jq -c 'select((.type == "entry" and .seq > 21) or (.type == "checkpoint" and .size == 22) | not)' \
	"$TMP/export.jsonl" >"$TMP/cut.jsonl"
cli audit verify --offline --export "$TMP/cut.jsonl" --pubkey "$DATA/audit.pub"
expect_match "a cut export alone looks intact" "$RC $OUT" '^0 Audit log intact: 21 entries, 1 checkpoint'
cli audit verify --offline --export "$TMP/cut.jsonl" --pubkey "$DATA/audit.pub" --checkpoint "$TMP/kept.note"
expect_match "with a kept checkpoint the cut is found" "$RC $OUT" '^1 .*first bad entry: 22 fault: entry missing'
# An edited export is caught offline too (entry 6 given entry 7's bytes).
c7=$(jq -r 'select(.seq == 7) | .canonical' "$TMP/export.jsonl")
jq -c --arg c "$c7" 'if .seq == 6 then .canonical = $c else . end' "$TMP/export.jsonl" >"$TMP/edited.jsonl"
cli audit verify --offline --export "$TMP/edited.jsonl" --pubkey "$(cat "$DATA/audit.pub")"
expect_match "an edited export fails offline at seq 6" "$RC $OUT" '^1 .*first bad entry: 6.*entry altered'
other=$(head -c 32 /dev/urandom | base64)
cli audit verify --offline --export "$TMP/export.jsonl" --pubkey "$other"
expect_match "another key: the checkpoints do not verify" "$RC $OUT" '^1 .*first bad entry: 1 .*checkpoint signature invalid'
# A tenant's export: its own entries, each with a proof in the signed checkpoint.
cli audit export --token "$TA" --output "$TMP/tenant.jsonl"
n_acme=$(body_of "$(api "$AU" GET '/v1/audit/log?tenant=acme')" | jq length)
expect_eq "a tenant's export holds only its entries, with proofs" \
	"$RC $(jq -r 'select(.type == "entry") | .tenant + (if .proof then "+proof" else "" end)' "$TMP/tenant.jsonl" | sort | uniq -c | awk '{print $1, $2}')" \
	"0 $n_acme acme+proof"
cli audit verify --offline --export "$TMP/tenant.jsonl" --pubkey "$DATA/audit.pub"
expect_match "a tenant's export verifies offline" "$RC $OUT" "^0 Tenant's audit entries intact: $n_acme proven"
first=$(jq -r 'select(.type == "entry") | .seq' "$TMP/tenant.jsonl" | head -1)
c3=$(jq -r 'select(.type == "entry") | .canonical' "$TMP/tenant.jsonl" | sed -n 3p)
jq -c --arg c "$c3" --argjson s "$first" 'if .seq == $s then .canonical = $c else . end' "$TMP/tenant.jsonl" >"$TMP/tenant-edited.jsonl"
cli audit verify --offline --export "$TMP/tenant-edited.jsonl" --pubkey "$DATA/audit.pub"
expect_match "an edited tenant export fails at that entry" "$RC $OUT" "^1 .*first bad entry: $first fault: entry altered"
stop_daemon
cp "$DB" "$TMP/pristine.db"

# ---- tampering with the SQLite file ----
# tamper NAME SQL WANT_SEQ WANT_FAULT: edits a copy of the intact store, then
# checks `suanli audit verify` online.
tamper() {
	cp "$TMP/pristine.db" "$DB"
	local n
	n=$(sqlite3 "$DB" "$2; SELECT total_changes();") || { bad "$1: sqlite3 edit"; return; }
	[ "$n" -gt 0 ] || { bad "$1: the edit changed nothing"; return; }
	serve
	cli audit verify
	expect_match "$1: verify exits 1, first bad entry $3 ($4)" "$RC $OUT" \
		"^1 .*first bad entry: $3 fault: $4"
	stop_daemon
}
# flip SEQ: the entry's canonical bytes (hex) with one bit of byte 30 (inside
# the actor) flipped; leaf HEX: the RFC 6962 leaf hash of those bytes.
flip() {
	local h
	h=$(sqlite3 "$TMP/pristine.db" "SELECT hex(canonical) FROM audit_entries WHERE seq = $1")
	echo "${h:0:60}$(printf '%02X' $((0x${h:60:2} ^ 1)))${h:62}"
}
leaf() { printf "$(echo "00$1" | sed 's/../\\x&/g')" | sha256sum | cut -d' ' -f1; }
f8=$(flip 8) f18=$(flip 18)
tamper "one byte of entry 8" "UPDATE audit_entries SET canonical = X'$f8' WHERE seq = 8" 8 "entry altered"
# With the leaf hash recomputed too, the next entry of the same tenant links
# to the old hash (tenant chain), which names entry 8; where the tenant has no
# later entry, the first checkpoint covering it names the first seq no earlier
# checkpoint vouched for.
tamper "entry 8 and its leaf hash" \
	"UPDATE audit_entries SET canonical = X'$f8', leaf_hash = X'$(leaf "$f8")' WHERE seq = 8" 8 "entry altered"
tamper "entry 18 and its leaf hash" \
	"UPDATE audit_entries SET canonical = X'$f18', leaf_hash = X'$(leaf "$f18")' WHERE seq = 18" 18 "checkpoint inconsistent"
tamper "a deleted entry" "DELETE FROM audit_entries WHERE seq = 9" 9 "entry missing"
tamper "two swapped entries" "UPDATE audit_entries SET seq = 1000 WHERE seq = 4;
	UPDATE audit_entries SET seq = 4 WHERE seq = 5; UPDATE audit_entries SET seq = 5 WHERE seq = 1000" 4 "reordered"
tamper "a replaced checkpoint" \
	"UPDATE audit_checkpoints SET note = (SELECT note FROM audit_checkpoints WHERE size = 22) WHERE size = 17" \
	1 "checkpoint signature invalid"
cp "$TMP/pristine.db" "$DB"

# ---- fail closed: no entry, no change ----
sqlite3 "$DB" "CREATE TRIGGER no_audit BEFORE INSERT ON audit_entries BEGIN SELECT RAISE(ABORT, 'audit refused'); END;"
serve
before=$(body_of "$(api "$A" GET /v1/leases)" | jq length)
r=$(api "$TA" POST /v1/leases '{"gpus":8,"duration_s":600}')
if [[ $(status_of "$r") == 2* ]]; then bad "a lease whose entry cannot be written is refused" "$r"; else ok "a lease whose entry cannot be written is refused ($(status_of "$r"))"; fi
wait "$DAEMON_PID"
rc=$?
DAEMON_PID=""
expect_eq "the daemon stops (store failed)" "$([ "$rc" -ne 0 ] && echo stopped)" stopped
expect_match "it says why" "$(cat "$TMP/log")" 'audit entry not written'
sqlite3 "$DB" "DROP TRIGGER no_audit"
serve
expect_eq "after a restart: no lease was made" "$(body_of "$(api "$A" GET /v1/leases)" | jq length)" "$before"
cli audit verify
expect_match "and the log is intact" "$RC $OUT" '^0 Audit log intact: 23 entries'

# ---- replays and the scheduler's own changes ----
for _ in 1 2; do api "$TA" POST /v1/leases '{"gpus":8,"duration_s":1}' -H 'Idempotency-Key: k-1' >/dev/null; done
for _ in $(seq 1 40); do
	last=$(body_of "$(api "$A" GET '/v1/audit/log?since=23')" | jq -r '.[] | [.actor, .action, .outcome] | join(" ")')
	[[ $last == *expired* ]] && break
	sleep 0.1
done
expect_eq "a replayed POST is recorded as such; an expiry is a system entry" "$(echo $last)" \
	"$TAID lease.create ok $TAID lease.create replayed system lease.expired ok"

# ---- a preemption: notice, preemption and the waiting lease's start are system entries ----
stop_daemon
start_daemon "$TMP/log" --data "$DATA" --simulate --preempt-notice 1 || { bad "daemon restarts"; finish; exit 1; }
since=$(body_of "$(api "$A" GET '/v1/audit/log?limit=100000')" | jq '.[-1].seq')
api "$A" POST /v1/tenants '{"name":"gamma"}' >/dev/null
SPOT=$(body_of "$(api "$A" POST /v1/leases '{"tenant":"gamma","gpus":16,"per_node":8,"models":["b200"],"plan":"spot"}')" | jq -r .id)
HOUR=$(body_of "$(api "$A" POST /v1/leases '{"tenant":"gamma","gpus":8,"models":["b200"],"plan":"hourly"}')" | jq -r .id)
for _ in $(seq 1 40); do
	[ "$(body_of "$(api "$A" GET "/v1/leases/$HOUR")" | jq -r .state)" = active ] && break
	sleep 0.1
done
got=$(body_of "$(api "$A" GET "/v1/audit/log?since=$since")" |
	jq -r '.[] | [(if .actor == "system" then "system" else "user" end), .action, .target] | join(" ")' | sort)
want=$(printf '%s\n' "user tenant.create gamma" "user lease.create $SPOT" "user lease.create $HOUR" \
	"system lease.preempting $SPOT" "system lease.preempted $SPOT" "system lease.active $HOUR" | sort)
expect_eq "preemption notice, preemption and the start it allows are system entries" "$got" "$want"
stop_daemon
expect_eq "daemon stops cleanly" "$?" 0
finish
