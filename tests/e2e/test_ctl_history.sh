#!/usr/bin/env bash
# test_ctl_history.sh - ended leases and jobs move to the store's history
# tables in the transaction that ends them (issue 17): after a restart the
# live tables hold only live rows, show and list still find the ended ones
# (?state=ended, pages, suanli lease list --ended), a live lease survives,
# numbering goes on after the highest id even when every lease has ended,
# /v1/placement/history still sees ended leases, and a store of the old
# format (schema 7, ended rows in the live tables) is migrated in place.
# Billing (schema 9): ended leases' usage records move to usage_history, the
# balances, statements and invoices are the same after a restart, and a store
# without the ledger's stored accounts has them built from its postings.
# The restart part runs again on PostgreSQL (skipped without its binaries).
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
. "$(dirname "$0")/pg_lib.sh"
command -v jq >/dev/null || { echo "jq is needed (scripts/deps.sh)"; exit 1; }
command -v sqlite3 >/dev/null || { skip "the sqlite3 shell is needed to look into the store"; finish; exit $SKIP_RC; }
DATA="$TMP/data"
DB="$DATA/suanli.db"
FLEET="$SL_ROOT/bench/fleets/slurm-peer.yaml"
"$SUANLID" init --data "$DATA" >/dev/null || { bad "init"; finish; exit 1; }
A=$(cat "$DATA/admin.token")
start() {
	start_daemon "$TMP/log" --data "$DATA" --fleet "$FLEET" --simulate ||
		{ bad "daemon starts" "$(cat "$TMP/log")"; finish; exit 1; }
}
get() { api "$A" GET "$1" | cut -d' ' -f2-; }
q() { sqlite3 "$DB" "$1"; }
sl() { SUANLI_SERVER=$URL SUANLI_TOKEN=$A "$SUANLI" "$@"; }

start
api "$A" POST /v1/tenants '{"name":"acme"}' >/dev/null
api "$A" POST /v1/tenants '{"name":"beta"}' >/dev/null
for m in h100-nvl h100-sxm; do
	api "$A" POST /v1/prices '{"model":"'$m'","plan":"hourly","price":3600}' >/dev/null
done
for t in acme beta; do
	api "$A" POST "/v1/tenants/$t/topups" '{"amount":1000000}' >/dev/null
done
for t in acme acme beta acme; do
	api "$A" POST /v1/leases "{\"tenant\":\"$t\",\"gpus\":1}" >/dev/null
done
expect_eq "four leases, all active" "$(get "/v1/leases?state=active" | jq length)" 4
J=$(api "$A" POST /v1/jobs '{"lease":"ls-000004","argv":["sleep","100"]}' | cut -d' ' -f2- | jq -r .id)
api "$A" POST "/v1/jobs/$J/cancel" '{}' >/dev/null
expect_eq "the job on no agent is cancelled at once" "$(get "/v1/jobs/$J" | jq -r .state)" cancelled
J2=$(api "$A" POST /v1/jobs '{"lease":"ls-000004","argv":["sleep","100"]}' | cut -d' ' -f2- | jq -r .id)
# at 1 fen a second a lease ended within its first second costs nothing and
# posts no charge: let the leases run a little over a second first
sleep 1.5
for l in ls-000001 ls-000002 ls-000003; do
	api "$A" POST "/v1/leases/$l/release" '{}' >/dev/null
done
expect_eq "an ended lease shows before the restart" "$(get /v1/leases/ls-000002 | jq -r .state)" released
# money as it stands: posted balances, statements, the ended leases' invoice lines
money() {
	local month
	month=$(date -u +%Y-%m)
	for t in acme beta; do
		get "/v1/tenants/$t/balance" | jq -c '[.tenant, .balance + .unposted_usage, .credit_line]'
		get "/v1/tenants/$t/ledger" | jq -c .
		get "/v1/tenants/$t/invoices/$month" | jq -c --arg run "$RUNNING" '[.lines[] | select((.lease // "") | test($run) | not)]'
	done
}
RUNNING="^ls-00000[45]$" # their lines grow while they run
money_before=$(money)
expect_eq "the money compared is there (acme's balance, top-up and charges)" \
	"$(printf '%s\n' "$money_before" | sed -n '1p;2p' | jq -s -c '[.[0][1] > 0, (.[1] | length) > 2]')" "[true,true]"
stop_daemon || bad "daemon exits cleanly"
expect_eq "the ended leases' usage records are in usage_history" "$(q 'SELECT group_concat(id) FROM (SELECT id FROM usage_history ORDER BY id)')" "ls-000001,ls-000002,ls-000003"
expect_eq "the live lease's record stays in usage" "$(q 'SELECT group_concat(id) FROM usage')" ls-000004

expect_eq "the live lease table holds only the live lease" "$(q 'SELECT id FROM leases')" ls-000004
expect_eq "the ended ones are in lease_history" "$(q 'SELECT group_concat(id) FROM (SELECT id FROM lease_history ORDER BY id)')" "ls-000001,ls-000002,ls-000003"
expect_eq "no lease is in both" "$(q 'SELECT count(*) FROM leases JOIN lease_history USING (id)')" 0
expect_eq "the cancelled job is in job_history" "$(q 'SELECT id FROM job_history')" "$J"
expect_eq "the waiting job stays live" "$(q 'SELECT id FROM jobs')" "$J2"
expect_eq "the highest ended lease is in meta" "$(q "SELECT value FROM meta WHERE key='history.leases.seq'")" 3

start
expect_eq "balances, statements and invoices are the same after the restart" "$(money)" "$money_before"
expect_eq "a live lease survives the restart" "$(get /v1/leases/ls-000004 | jq -r .state)" active
expect_eq "an ended lease shows after it, from history" "$(get /v1/leases/ls-000001 | jq -r '.state + " " + .tenant')" "released acme"
expect_eq "the whole list still has every lease" "$(get /v1/leases | jq -r '[.[].id] | join(",")')" "ls-000001,ls-000002,ls-000003,ls-000004"
expect_eq "?state=ended lists history" "$(get "/v1/leases?state=ended" | jq -r '[.[].id] | join(",")')" "ls-000001,ls-000002,ls-000003"
expect_eq "?state=released too" "$(get "/v1/leases?state=released" | jq length)" 3
p=$(get "/v1/leases?limit=2")
expect_eq "a page of two, live and history merged by id" "$(echo "$p" | jq -r '(.items | map(.id) | join(",")) + " " + (.next|tostring)')" "ls-000001,ls-000002 ls-000002"
p=$(get "/v1/leases?limit=2&after=ls-000002")
expect_eq "the next page ends the list" "$(echo "$p" | jq -r '(.items | map(.id) | join(",")) + " " + (.next|tostring)')" "ls-000003,ls-000004 null"
expect_eq "a page of ended leases of one tenant" "$(get "/v1/leases?state=ended&tenant=acme&limit=1" | jq -r '.items[0].id + " " + .next')" "ls-000001 ls-000001"
expect_eq "... and the next one" "$(get "/v1/leases?state=ended&tenant=acme&limit=1&after=ls-000001" | jq -r '(.items | map(.id) | join(",")) + " " + (.next|tostring)')" "ls-000002 null"
B=$(api "$A" POST /v1/tokens '{"role":"tenant","tenant":"beta"}' | cut -d' ' -f2- | jq -r .token)
expect_eq "a tenant's page holds only its own ended leases" "$(api "$B" GET "/v1/leases?state=ended&limit=10" | cut -d' ' -f2- | jq -r '[.items[].id] | join(",")')" ls-000003
expect_eq "another tenant's ended lease is 404" "$(status_of "$(api "$B" GET /v1/leases/ls-000001)")" 404
r=$(api "$A" GET "/v1/leases?state=gone")
expect_eq "an unknown state is refused" "$(status_of "$r")" 400
out=$(sl lease list --ended)
expect_eq "suanli lease list --ended (header + 3)" "$(echo "$out" | wc -l | tr -d ' ')" 4
expect_eq "suanli lease list --json follows the pages" "$(sl lease list --json | jq length)" 4
expect_eq "the cancelled job shows from history" "$(get "/v1/jobs/$J" | jq -r .state)" cancelled
expect_eq "the job list has both jobs" "$(get /v1/jobs | jq -r '[.[].id] | join(",")')" "$J,$J2"
expect_eq "?state=cancelled finds the job in history" "$(get "/v1/jobs?state=cancelled" | jq -r '.[0].id')" "$J"
expect_eq "placement history sees the ended leases" "$(get /v1/placement/history | jq -r '[.leases[].id] | join(",")')" "ls-000001,ls-000002,ls-000003,ls-000004"
api "$A" POST /v1/leases/ls-000004/release '{}' >/dev/null
stop_daemon || bad "daemon exits cleanly"
expect_eq "with every lease ended the live table is empty" "$(q 'SELECT count(*) FROM leases')" 0

start
L=$(api "$A" POST /v1/leases '{"tenant":"acme","gpus":1}' | cut -d' ' -f2- | jq -r .id)
expect_eq "numbering goes on after the history" "$L" ls-000005
money_before=$(money)
stop_daemon || bad "daemon exits cleanly"

# An old store: schema 7, ended rows in the live tables, no history tables,
# no stored ledger accounts (postings' updated_ns a time, here in reverse).
q "INSERT INTO leases SELECT * FROM lease_history; DELETE FROM lease_history;
   INSERT INTO jobs SELECT * FROM job_history;
   DROP TABLE lease_history; DROP TABLE job_history; DROP TABLE instance_history;
   INSERT INTO usage SELECT * FROM usage_history; DROP TABLE usage_history;
   DROP TABLE ledger_accounts; DROP INDEX postings_tenant_seq;
   UPDATE postings SET updated_ns = 1796000000000000000 - json_extract(body, '\$.seq');
   UPDATE usage SET body = json_remove(body, '\$.charged', '\$.last_post_ms');
   DELETE FROM meta WHERE key LIKE 'history.%' OR key LIKE 'billing.%' AND key != 'billing.currency';
   PRAGMA user_version = 7;"
expect_eq "the old-format store has every lease and job live" "$(q "SELECT (SELECT count(*) FROM leases) || ' ' || (SELECT count(*) FROM jobs)")" "5 2"
start
expect_eq "after the migration: the same balances, statements (in posting order) and invoices" "$(money)" "$money_before"
expect_eq "an old ended lease shows after the migration" "$(get /v1/leases/ls-000002 | jq -r .state)" released
expect_eq "the live one still runs" "$(get /v1/leases/ls-000005 | jq -r .state)" active
expect_eq "the old cancelled job shows" "$(get "/v1/jobs/$J" | jq -r .state)" cancelled
stop_daemon || bad "daemon exits cleanly"
expect_eq "migrated: live table" "$(q 'SELECT group_concat(id) FROM leases')" ls-000005
expect_eq "migrated: history" "$(q 'SELECT count(*) FROM lease_history')" 4
expect_eq "migrated: jobs (both ended with their lease)" "$(q "SELECT (SELECT count(*) FROM jobs) || ' ' || (SELECT group_concat(id) FROM (SELECT id FROM job_history ORDER BY id))")" "0 $J,$J2"
expect_eq "schema version 9" "$(q 'PRAGMA user_version')" 9
expect_eq "migrated: ended usage records in usage_history" "$(q "SELECT (SELECT count(*) FROM usage_history) || ' ' || (SELECT group_concat(id) FROM usage)")" "4 ls-000005"
expect_eq "migrated: the ledger's accounts built, balanced" "$(q "SELECT count(*) > 0 AND sum(json_extract(body, '\$.debits')) = sum(json_extract(body, '\$.credits')) FROM ledger_accounts")" 1
expect_eq "migrated: post_seq kept" "$(q "SELECT value = (SELECT max(json_extract(body, '\$.seq')) FROM postings) FROM meta WHERE key = 'billing.post_seq'")" 1
expect_eq "the highest ended seq was recorded" "$(q "SELECT value FROM meta WHERE key='history.leases.seq'")" 4

# The same on PostgreSQL: the history tables are part of its schema.
if bash "$PGT" available >/dev/null 2>&1; then
	pg_start
	trap 'ctl_cleanup; bash "$PGT" stop "$PGDIR"' EXIT
	STORE=$(bash "$PGT" createdb "$PGDIR" hist)
	DATA="$TMP/pgdata"
	"$SUANLID" init --data "$DATA" --store "$STORE" >/dev/null || bad "init on PostgreSQL"
	A=$(cat "$DATA/admin.token")
	pgstart() {
		start_daemon "$TMP/pglog" --data "$DATA" --store "$STORE" --fleet "$FLEET" --simulate ||
			{ bad "daemon starts on PostgreSQL" "$(cat "$TMP/pglog")"; finish; exit 1; }
		wait_until 20 sh -c "curl -s '$URL/healthz' | grep -q '\"leader\"'"
	}
	pgstart
	api "$A" POST /v1/tenants '{"name":"acme"}' >/dev/null
	api "$A" POST /v1/tenants '{"name":"beta"}' >/dev/null
	for m in h100-nvl h100-sxm; do
		api "$A" POST /v1/prices '{"model":"'$m'","plan":"hourly","price":3600}' >/dev/null
	done
	api "$A" POST /v1/tenants/acme/topups '{"amount":1000000}' >/dev/null
	api "$A" POST /v1/tenants/beta/credits '{"amount":300,"reason":"goodwill"}' >/dev/null
	for i in 1 2 3; do api "$A" POST /v1/leases '{"tenant":"acme","gpus":1}' >/dev/null; done
	sleep 0.2
	api "$A" POST /v1/leases/ls-000001/release '{}' >/dev/null
	api "$A" POST /v1/leases/ls-000002/release '{}' >/dev/null
	RUNNING="^ls-000003$"
	money_before=$(money)
	stop_daemon || bad "daemon exits cleanly (PostgreSQL)"
	pgstart
	expect_eq "PostgreSQL: balances, statements and invoices are the same after a restart" "$(money)" "$money_before"
	expect_eq "PostgreSQL: an ended lease's invoice line is there" \
		"$(get "/v1/tenants/acme/invoices/$(date -u +%Y-%m)" | jq '[.lines[] | select(.lease == "ls-000001")] | length')" 1
	expect_eq "PostgreSQL: the live lease survives" "$(get /v1/leases/ls-000003 | jq -r .state)" active
	expect_eq "PostgreSQL: an ended lease shows from history" "$(get /v1/leases/ls-000001 | jq -r .state)" released
	expect_eq "PostgreSQL: ?state=ended pages through history" "$(get "/v1/leases?state=ended&limit=1&after=ls-000001" | jq -r '(.items | map(.id) | join(",")) + " " + (.next|tostring)')" "ls-000002 null"
	L=$(api "$A" POST /v1/leases '{"tenant":"acme","gpus":1}' | cut -d' ' -f2- | jq -r .id)
	expect_eq "PostgreSQL: numbering goes on" "$L" ls-000004
	stop_daemon || bad "daemon exits cleanly (PostgreSQL)"
else
	skip_part "the PostgreSQL part (no server binaries)"
fi
finish
