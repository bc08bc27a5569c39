#!/usr/bin/env bash
# test_store_copy.sh - `suanlid store copy`: an installation on SQLite with
# tenants, leases and an audit log with a signed checkpoint is moved into
# PostgreSQL (scripts/pg-test.sh; skipped without it), verified by the copy
# itself; served from there it has the same leases and tenants, its audit log
# verifies and proves consistency with the old checkpoint. A second copy into
# the same database, and a copy while a controller leads it, are refused.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg_lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
pg_start
trap 'ctl_cleanup; bash "$PGT" stop "$PGDIR"' EXIT
STORE=$(bash "$PGT" createdb "$PGDIR" copy)
DATA="$TMP/data"
"$SUANLID" init --data "$DATA" >/dev/null
export SUANLI_TOKEN
SUANLI_TOKEN=$(cat "$DATA/admin.token")
start_daemon "$TMP/sqlite.log" --data "$DATA" --simulate --fleet "$SL_ROOT/examples/demo-fleet.yaml"
sl() { "$SUANLI" --server "$URL" "$@"; }
sl tenant create acme >/dev/null && sl tenant create zeta >/dev/null
for i in 1 2 3; do sl lease create --gpus 2 --tenant acme --duration 2h >/dev/null; done
sl lease release ls-000002 >/dev/null
sl audit checkpoint >/dev/null
before_leases=$(sl --json lease list | jq -c '[.[] | {id, state, placement: [.placement[] | {node, gpus}]}]')
before_tenants=$(sl --json tenant list | jq -c '[.[] | .name] | sort')
cp_before=$(sl --json audit checkpoint --latest | jq -r '.size // .tree_size // empty')
stop_daemon
expect_eq "the SQLite controller stopped cleanly" "$?" 0

res=$("$SUANLID" store copy --from "$DATA" --to "$STORE" 2>&1)
expect_eq "store copy succeeds" "$?" 0
expect_match "... and says it verified" "$res" 'Copied and verified: [0-9]+ rows'
expect_match "... with the audit log" "$res" '[1-9][0-9]* audit entries'
res=$("$SUANLID" store copy --from "$DATA" --to "$STORE" 2>&1)
[ $? -ne 0 ] && ok "a second copy into the same database is refused" || bad "a second copy was accepted"
expect_match "... because it is not empty" "$res" 'not empty'

start_daemon "$TMP/pg.log" --data "$DATA" --store "$STORE" --simulate
wait_until 20 sh -c "curl -s '$URL/healthz' | grep -q '\"leader\"'"
expect_eq "served from PostgreSQL, the leases are the same" \
	"$(sl --json lease list | jq -c '[.[] | {id, state, placement: [.placement[] | {node, gpus}]}]')" "$before_leases"
expect_eq "... and the tenants" "$(sl --json tenant list | jq -c '[.[] | .name] | sort')" "$before_tenants"
v=$(sl audit verify 2>&1)
expect_eq "the copied audit log verifies" "$?" 0
[ -n "$cp_before" ] && {
	c=$(sl audit consistency --from "$cp_before" 2>&1)
	expect_eq "... and is consistent with the checkpoint signed on SQLite" "$?" 0
}
res=$("$SUANLID" store copy --from "$DATA" --to "$(bash "$PGT" createdb "$PGDIR" other | sed 's/other/copy/')" 2>&1)
[ $? -ne 0 ] && ok "a copy into a database a controller leads is refused" || bad "a copy beside a leader was accepted"
expect_match "... because it leads" "$res" 'leads the target'
sl lease create --gpus 1 --tenant zeta --duration 1h >/dev/null
expect_eq "the PostgreSQL controller takes new leases" "$?" 0
finish
