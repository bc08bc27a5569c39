#!/usr/bin/env bash
# test_audit_tenant.sh - audit completeness through a real suanlid and its
# SQLite file (issue 16, docs/audit.md "Tenant completeness"):
#  - the issue's report: stop the daemon, change the tenant and action
#    columns of one entry (its canonical bytes left alone): `audit verify`
#    names that seq ("index altered"); `audit log --tenant` and the tenant's
#    own view still show the entry (they follow the tenant chain, not the
#    index); each other stored column (time, subtree cache, checkpoint size)
#    edited alone is caught too, naming its first seq;
#  - from the tenant's side: a tenant's export with any one of its entries
#    withheld fails `suanli audit verify --tenant T` offline, naming that seq;
#    the intact export passes and says it is complete.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
DATA="$TMP/data"
DB="$DATA/suanli.db"
FLEET="$SL_ROOT/examples/demo-fleet.yaml"

command -v sqlite3 >/dev/null || skip "no sqlite3 CLI (scripts/deps.sh installs the Debian package sqlite3)"

serve() { start_daemon "$TMP/log" --data "$DATA" --fleet "$FLEET" --simulate || { bad "daemon starts" "$(cat "$TMP/log")"; finish; exit 1; }; }
cli() { OUT=$("$SUANLI" "$@" --server "$URL" 2>&1); RC=$?; OUT=$(printf '%s' "$OUT" | tr '\n' ' '); }

"$SUANLID" init --data "$DATA" >/dev/null || { bad "init"; finish; exit 1; }
serve
A=$(cat "$DATA/admin.token")
export SUANLI_TOKEN=$A
api "$A" POST /v1/tenants '{"name":"acme"}' >/dev/null
api "$A" POST /v1/tenants '{"name":"beta"}' >/dev/null
tok() { body_of "$(api "$A" POST /v1/tokens "$1")" | jq -r .token; }
TA=$(tok '{"role":"tenant","tenant":"acme"}')
TB=$(tok '{"role":"tenant","tenant":"beta"}')
for i in 1 2 3 4 5; do
	api "$TA" POST /v1/leases '{"gpus":1,"duration_s":7200}' >/dev/null
	api "$TB" POST /v1/leases '{"gpus":1,"duration_s":7200}' >/dev/null
done
api "$TA" POST /v1/leases '{"bogus":1}' >/dev/null
api "$A" POST /v1/audit/checkpoint '{}' >/dev/null
api "$TB" POST /v1/leases '{"gpus":1,"duration_s":7200}' >/dev/null # after the checkpoint

acme=$(body_of "$(api "$A" GET '/v1/audit/log?tenant=acme')" | jq -r '[.[].seq] | join(" ")')
n_acme=$(echo $acme | wc -w)
expect_eq "acme has its entries (tenant, token, 5 leases, 1 invalid)" "$n_acme" 8
cli audit verify --tenant acme --pubkey "$DATA/audit.pub"
expect_match "verify --tenant (online): complete" "$RC $OUT" \
	"^0 Tenant's audit entries intact: $n_acme proven .* Complete: the chain of links holds and ends at the checkpoint's head"
api "$TA" GET /v1/audit/export >"$TMP/raw"
body_of "$(cat "$TMP/raw")" >"$TMP/acme.jsonl"
expect_eq "the tenant's export carries its head proof" \
	"$(jq -r 'select(.type == "head") | .tenant + " " + (.seq|tostring)' "$TMP/acme.jsonl")" \
	"acme ${acme##* }"
cli audit verify --offline --export "$TMP/acme.jsonl" --pubkey "$DATA/audit.pub" --tenant acme
expect_match "the intact export verifies offline as complete" "$RC $OUT" "^0 .*Complete: the chain"
cli audit verify --offline --export "$TMP/acme.jsonl" --pubkey "$DATA/audit.pub" --tenant beta
expect_match "--tenant must match the export's tenant" "$RC $OUT" "^1 .*not tenant 'beta''s export"

# ---- a hidden entry, seen from the tenant's side ----
for s in $acme; do
	jq -c --argjson s "$s" 'select(.type != "entry" or .seq != $s)' "$TMP/acme.jsonl" >"$TMP/hidden.jsonl"
	cli audit verify --offline --export "$TMP/hidden.jsonl" --pubkey "$DATA/audit.pub" --tenant acme
	expect_match "acme's entry $s withheld: verify --tenant names it" "$RC $OUT" \
		"^1 .*first bad entry: $s fault: entry missing"
done
stop_daemon
cp "$DB" "$TMP/pristine.db"

# ---- the stored columns the hashes do not cover ----
tamper() {
	cp "$TMP/pristine.db" "$DB"
	local n
	n=$(sqlite3 "$DB" "$2; SELECT total_changes();") || { bad "$1: sqlite3 edit"; return; }
	[ "$n" -gt 0 ] || { bad "$1: the edit changed nothing"; return; }
	serve
	cli audit verify
	expect_match "$1: verify exits 1, first bad entry $3 ($4)" "$RC $OUT" \
		"^1 .*first bad entry: $3 fault: $4"
}
S=$(echo $acme | cut -d' ' -f3) # acme's first lease
tamper "the issue's edit: tenant and action of entry $S" \
	"UPDATE audit_entries SET tenant = 'beta', action = 'lease.release' WHERE seq = $S" "$S" "index altered"
got=$(body_of "$(api "$A" GET '/v1/audit/log?tenant=acme')" | jq -r '[.[].seq] | join(" ")')
expect_eq "audit log --tenant acme still lists entry $S (read through the chain)" "$got" "$acme"
got=$(body_of "$(api "$TA" GET '/v1/audit/log')" | jq -r '[.[].seq] | join(" ")')
expect_eq "and so does the tenant's own view" "$got" "$acme"
got=$(body_of "$(api "$A" GET '/v1/audit/log?tenant=beta')" | jq -r "[.[] | select(.seq == $S)] | length")
expect_eq "beta's view does not get acme's entry" "$got" 0
expect_eq "beta's token gets no proof of acme's entry" "$(status_of "$(api "$TB" GET "/v1/audit/proof?seq=$S")")" 404
expect_eq "acme's token still gets its proof" "$(status_of "$(api "$TA" GET "/v1/audit/proof?seq=$S")")" 200
got=$(body_of "$(api "$A" GET '/v1/audit/log?action=lease.release')" | jq -r "[.[] | select(.seq == $S)] | length")
expect_eq "an action query checks the entry, not the index" "$got" 0
cli audit verify --tenant acme
expect_match "the tenant still sees all its entries" "$RC $OUT" "^0 .*Complete: the chain"
expect_match "the daemon logs the disagreement" "$(cat "$TMP/log")" "index disagrees"
stop_daemon
tamper "time of entry 5" "UPDATE audit_entries SET time_ns = time_ns + 1 WHERE seq = 5" 5 "index altered"
stop_daemon
tamper "tenant of entry 1 (none) set" "UPDATE audit_entries SET tenant = 'acme' WHERE seq = 1" 1 "index altered"
stop_daemon
tamper "action of entry 7" "UPDATE audit_entries SET action = 'x.y' WHERE seq = 7" 7 "index altered"
stop_daemon
tamper "one byte of a cached subtree" \
	"UPDATE audit_subtrees SET hash = X'00' || substr(hash, 2) WHERE level = 4 AND idx = 0" 1 "subtree altered"
stop_daemon
tamper "an invented subtree row" "INSERT INTO audit_subtrees VALUES (8, 5, zeroblob(32))" 1281 "subtree altered"
stop_daemon
tamper "a checkpoint filed under another size" \
	"UPDATE audit_checkpoints SET size = size - 1 WHERE size = (SELECT max(size) FROM audit_checkpoints)" \
	1 "checkpoint signature invalid"
stop_daemon
# A deleted entry of acme: the full log names it; the tenant's export, read
# through the chain, cannot include it and the tenant sees the gap.
cp "$TMP/pristine.db" "$DB"
sqlite3 "$DB" "DELETE FROM audit_entries WHERE seq = $S"
serve
cli audit verify --tenant acme
expect_match "a deleted entry of acme: verify --tenant names it" "$RC $OUT" \
	"^1 .*first bad entry: $S fault: entry missing"
stop_daemon
finish
