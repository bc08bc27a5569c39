#!/usr/bin/env bash
# test_billing.sh - billing end to end against a real suanlid: prices (set,
# list, history, a past instant refused), top-ups and balances, the first-hour
# balance check, an invoice line that matches the lease's own started_at and
# ended_at to the millisecond and its half-up amount, byte-identical
# regeneration (also across a restart), tenant isolation, bad input that
# changes nothing, and revenue. The time-dependent rules (a month boundary in
# the billing zone, the grace period once a balance runs out) run against a
# second daemon under Debian's faketime at 10x speed, so they take seconds.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
FLEET="$SL_ROOT/examples/demo-fleet.yaml"
DATA="$TMP/data"

ms_of() { date -u -d "$1" +%s%3N; }
cli() { "$SUANLI" --server "$URL" --token "$1" "${@:2}"; }
# cli_as TOKEN SUBCOMMAND... : the subcommand's options go after its name.
cli_as() {
	local tok=$1 cmd=$2
	shift 2
	"$SUANLI" "$cmd" --server "$URL" --token "$tok" "$@"
}
cli_sub() {
	local tok=$1 cmd=$2 sub=$3
	shift 3
	"$SUANLI" "$cmd" "$sub" --server "$URL" --token "$tok" "$@"
}

"$SUANLID" init --data "$DATA" >/dev/null || { bad "init"; finish; exit 1; }
ADMIN=$(cat "$DATA/admin.token")
if ! start_daemon "$TMP/log1" --data "$DATA" --fleet "$FLEET" --simulate; then
	bad "daemon starts" "$(cat "$TMP/log1")"
	finish
	exit 1
fi
ok "daemon listens on port $PORT"
api "$ADMIN" POST /v1/tenants '{"name":"acme","regions":["cn-east"]}' >/dev/null
api "$ADMIN" POST /v1/tenants '{"name":"beta","regions":["cn-east"]}' >/dev/null
ACME=$(body_of "$(api "$ADMIN" POST /v1/tokens '{"role":"tenant","tenant":"acme"}')" | jq -r .token)
BETA=$(body_of "$(api "$ADMIN" POST /v1/tokens '{"role":"tenant","tenant":"beta"}')" | jq -r .token)

# ---- prices ----
out=$(cli_sub "$ADMIN" price list)
expect_match "no prices at first" "$out" "No prices set"
out=$(cli_sub "$ADMIN" price set --model h100-sxm --plan hourly --price 3600 --json)
expect_eq "price set answers the entry" "$(printf '%s' "$out" | jq -c '[.model,.plan,.price,.scope]')" \
	'["h100-sxm","hourly",3600,"global"]'
out=$(cli_sub "$ADMIN" price set --model h100-sxm --plan hourly --price 1 --from 2026-01-01T00:00:00Z 2>&1)
rc=$?
expect_eq "a price from a past instant is refused" "$rc" 1
expect_match "and says it would re-price used time" "$out" "in the past.*re-price time already used"
later=$(date -u -d '+1 day' +%Y-%m-%dT%H:%M:%SZ)
cli_sub "$ADMIN" price set --model h100-sxm --plan hourly --price 4000 --from "$later" >/dev/null
expect_eq "a future price is accepted" "$?" 0
r=$(api "$ADMIN" GET /v1/prices)
expect_eq "price list: the one in force and the scheduled one" \
	"$(body_of "$r" | jq -c '[.prices[] | [.price, .in_force]]')" '[[3600,true],[4000,false]]'
r=$(api "$ACME" GET '/v1/prices?history=true')
expect_eq "tenants may read prices (history: 2 entries)" "$(body_of "$r" | jq '.prices | length')" 2
out=$(cli_sub "$ADMIN" price history)
expect_match "price history prints a table" "$out" "SCOPE.*MODEL.*PLAN"
r=$(api "$ACME" POST /v1/prices '{"model":"h100-sxm","plan":"hourly","price":1}')
expect_eq "tenants may not set prices" "$(status_of "$r")" 403
r=$(api "$ADMIN" POST /v1/prices '{"model":"h100-sxm","plan":"hourly","price":100,"currency":"XYZ"}')
expect_match "unknown currency refused" "$r" '^400 .*unknown currency'
r=$(api "$ADMIN" POST /v1/prices '{"model":"h100-sxm","plan":"hourly","price":100,"currency":"USD"}')
expect_match "another currency than the controller's refused" "$r" '^400 .*bills in CNY'
r=$(api "$ADMIN" POST /v1/prices '{"model":"h100-sxm","plan":"hourly","price":-1}')
expect_eq "negative price refused" "$(status_of "$r")" 400
r=$(api "$ADMIN" POST /v1/prices '{"model":"h100-sxm","plan":"hourly","price":1.5}')
expect_eq "fractional price refused" "$(status_of "$r")" 400
r=$(api "$ADMIN" GET '/v1/prices?history=true')
expect_eq "refused prices changed nothing" "$(body_of "$r" | jq '.prices | length')" 2

# ---- balance check at lease start ----
out=$(cli_sub "$ACME" lease create --gpus 8 --model h100-sxm --json 2>&1)
rc=$?
expect_eq "a lease without funds is refused" "$rc" 1
expect_match "with the amounts and a hint" "$out" "balance 0.00 CNY.*first hour.*288.00 CNY"
r=$(api "$ACME" POST /v1/leases '{"gpus":8,"models":["h100-sxm"]}')
expect_match "API: 402 insufficient_funds" "$r" '^402 .*"insufficient_funds"'
r=$(api "$ADMIN" GET /v1/leases)
expect_eq "the refusal created no lease" "$(body_of "$r" | jq length)" 0

# ---- top-ups and bad amounts ----
out=$(cli_as "$ADMIN" topup --tenant acme --amount -5 2>&1)
expect_eq "negative top-up refused by the CLI (usage)" "$?" 2
out=$(cli_as "$ADMIN" topup --tenant acme --amount 1.5 2>&1)
expect_eq "fractional top-up refused by the CLI (usage)" "$?" 2
r=$(api "$ADMIN" POST /v1/tenants/acme/topups '{"amount":-5}')
expect_eq "API: negative top-up 400" "$(status_of "$r")" 400
r=$(api "$ADMIN" POST /v1/tenants/acme/topups '{"amount":12.5}')
expect_eq "API: fractional top-up 400" "$(status_of "$r")" 400
r=$(api "$ADMIN" POST /v1/tenants/acme/topups '{"amount":"100"}')
expect_eq "API: amount as a string 400" "$(status_of "$r")" 400
r=$(api "$ACME" POST /v1/tenants/acme/topups '{"amount":100}')
expect_eq "tenants may not top up" "$(status_of "$r")" 403
out=$(cli_as "$ADMIN" balance --tenant acme --json)
expect_eq "bad top-ups changed nothing" "$(printf '%s' "$out" | jq .balance)" 0
out=$(cli_as "$ADMIN" topup --tenant acme --amount 100000 --reason "bank transfer 42")
expect_match "topup says what it posted" "$out" "Posted topup 1000.00 CNY"
out=$(cli_as "$ACME" balance --tenant acme --json)
expect_eq "balance --json after the top-up" "$(printf '%s' "$out" | jq -c '[.balance,.currency,.state]')" \
	'[100000,"CNY","ok"]'
r=$(api "$BETA" GET /v1/tenants/acme/balance)
expect_eq "another tenant's balance is 404" "$(status_of "$r")" 404
out=$(cli_as "$ACME" ledger --tenant acme --json)
expect_eq "the ledger lists the top-up with its reason" \
	"$(printf '%s' "$out" | jq -c '[.[] | [.type, .amount, .reason]]')" '[["topup",100000,"bank transfer 42"]]'
out=$(cli_as "$ACME" ledger --tenant acme --type charge --json)
expect_eq "... --type keeps one kind" "$(printf '%s' "$out" | jq length)" 0
out=$(cli_as "$ACME" ledger --tenant acme --type cash 2>&1)
expect_match "... an unknown type is refused with the list" "$out" "no posting type 'cash'"
expect_match "... and a hint naming the types" "$out" 'hint: use topup, charge'
r=$(api "$BETA" GET /v1/tenants/acme/ledger)
expect_eq "another tenant's ledger is 404" "$(status_of "$r")" 404

# ---- a metered lease and its invoice line ----
out=$(cli_sub "$ACME" lease create --gpus 8 --model h100-sxm --json)
LID=$(printf '%s' "$out" | jq -r .id)
expect_eq "the lease starts once funded" "$(printf '%s' "$out" | jq -r .state)" active
sleep 1.3
cli_sub "$ACME" lease release "$LID" >/dev/null
show=$(cli_sub "$ACME" lease show "$LID" --json)
st=$(printf '%s' "$show" | jq -r .started_at)
en=$(printf '%s' "$show" | jq -r .ended_at)
expect_match "started_at and ended_at carry milliseconds" "$st $en" '^[0-9T:-]+\.[0-9]{3}Z [0-9T:-]+\.[0-9]{3}Z$'
want_ms=$(( ($(ms_of "$en") - $(ms_of "$st")) * 8 ))
month=$(date -u +%Y-%m)
inv=$(cli_as "$ACME" invoice --tenant acme --month "$month" --json)
line=$(printf '%s' "$inv" | jq -c --arg l "$LID" '[.lines[] | select(.lease == $l)]')
expect_eq "one invoice line for the lease" "$(printf '%s' "$line" | jq length)" 1
gms=$(printf '%s' "$line" | jq '.[0].gpu_ms')
expect_eq "gpu_ms = (ended_at - started_at) x 8 GPUs" "$gms" "$want_ms"
want_amt=$(( (gms * 3600 + 1800000) / 3600000 ))
expect_eq "amount = round_half_up(gpu_ms x 3600 / 3,600,000)" "$(printf '%s' "$line" | jq '.[0].amount')" "$want_amt"
expect_eq "unit price on the line" "$(printf '%s' "$line" | jq '.[0].unit_price')" 3600
expect_eq "total = the line" "$(printf '%s' "$inv" | jq .total)" "$want_amt"
# The month is still running: only as_of moves (complete months are compared
# byte for byte below, under faketime).
a1=$(curl -s -H "Authorization: Bearer $ACME" "$URL/v1/tenants/acme/invoices/$month" | jq -c 'del(.as_of)')
a2=$(curl -s -H "Authorization: Bearer $ACME" "$URL/v1/tenants/acme/invoices/$month" | jq -c 'del(.as_of)')
expect_eq "a regenerated invoice is the same (JSON, as_of aside)" "$a1" "$a2"
c1=$(cli_as "$ACME" invoice --tenant acme --month "$month" --csv)
c2=$(cli_as "$ACME" invoice --tenant acme --month "$month" --csv)
expect_eq "a regenerated invoice is byte-identical (CSV)" "$c1" "$c2"
expect_match "CSV has the lease line" "$c1" "usage,$LID,,hourly,h100-sxm,.*,$gms,"
expect_match "CSV ends with the total row" "$(printf '%s' "$c1" | tail -1)" "^total,+$want_amt,"
out=$(cli_as "$ACME" balance --tenant acme --json)
expect_eq "the charge was posted: balance = top-up - amount" "$(printf '%s' "$out" | jq .balance)" \
	$((100000 - want_amt))
r=$(api "$BETA" GET "/v1/tenants/acme/invoices/$month")
expect_eq "a tenant cannot see another tenant's invoice (404)" "$(status_of "$r")" 404
r=$(api "$BETA" GET "/v1/tenants/beta/invoices/$month")
expect_eq "beta's own invoice is empty" "$(body_of "$r" | jq '.lines | length')" 0
out=$(cli_as "$ADMIN" invoice --tenant acme --month 2999-01 2>&1)
rc=$?
expect_eq "an invoice for a future month is refused" "$rc" 1
expect_match "saying it is in the future" "$out" "future"
r=$(api "$ADMIN" GET /v1/tenants/acme/invoices/2026-13)
expect_eq "a malformed month is 400" "$(status_of "$r")" 400
out=$(cli_as "$ADMIN" revenue --month "$month" --json)
expect_eq "revenue adds up to the invoices" "$(printf '%s' "$out" | jq .total)" "$want_amt"
expect_eq "revenue by region, model and plan" "$(printf '%s' "$out" | jq -c '.rows[0] | [.region,.model,.plan]')" \
	'["cn-east","h100-sxm","hourly"]'
r=$(api "$ACME" GET "/v1/revenue/$month")
expect_eq "tenants may not see revenue" "$(status_of "$r")" 403
r=$(api "$ACME" GET /v1/usage)
expect_eq "usage for a tenant shows its own tenant only" "$(body_of "$r" | jq -c '[.tenants[].tenant]')" '["acme"]'
r=$(api "$ACME" GET '/v1/usage?tenant=beta')
expect_eq "usage of another tenant is 404" "$(status_of "$r")" 404

# ---- elastic scaling counts from its instant on ----
r=$(api "$ACME" POST /v1/leases '{"gpus":8,"models":["h100-sxm"],"elastic":{"min":8,"max":16}}')
EL=$(body_of "$r" | jq -r .id)
sleep 0.4
api "$ACME" POST "/v1/leases/$EL/scale" '{"gpus":16}' >/dev/null
sleep 0.4
l=$(body_of "$(api "$ACME" POST "/v1/leases/$EL/release")")
t0=$(ms_of "$(printf '%s' "$l" | jq -r .started_at)")
t1=$(ms_of "$(printf '%s' "$l" | jq -r '[.history[] | select(.reason | startswith("scaled"))][0].at')")
t2=$(ms_of "$(printf '%s' "$l" | jq -r .ended_at)")
inv=$(cli_as "$ACME" invoice --tenant acme --month "$month" --json)
expect_eq "an elastic lease: 8 GPUs until the scale instant, 16 after" \
	"$(printf '%s' "$inv" | jq --arg l "$EL" '[.lines[] | select(.lease == $l) | .gpu_ms] | add')" \
	$(( (t1 - t0) * 8 + (t2 - t1) * 16 ))
want_amt=$(printf '%s' "$inv" | jq '[.lines[] | select(.kind == "usage") | .amount] | add')

# ---- a retried top-up (same Idempotency-Key) is posted once ----
bal0=$(body_of "$(api "$ADMIN" GET /v1/tenants/acme/balance)" | jq .balance)
api "$ADMIN" POST /v1/tenants/acme/topups '{"amount":700}' -H 'Idempotency-Key: pay-7' >/dev/null
api "$ADMIN" POST /v1/tenants/acme/topups '{"amount":700}' -H 'Idempotency-Key: pay-7' >/dev/null
expect_eq "a retried top-up is posted once" \
	"$(body_of "$(api "$ADMIN" GET /v1/tenants/acme/balance)" | jq .balance)" $((bal0 + 700))

# ---- credits and credit lines ----
out=$(cli_as "$ADMIN" credit --tenant acme --amount 500 2>&1)
expect_eq "a credit needs a reason" "$?" 2
cli_as "$ADMIN" credit --tenant acme --amount 500 --reason "SLA: node down 10 min" >/dev/null
inv=$(cli_as "$ACME" invoice --tenant acme --month "$month" --json)
expect_eq "the credit is a negative invoice line" \
	"$(printf '%s' "$inv" | jq -c '[.lines[] | select(.kind == "credit") | .amount]')" '[-500]'
expect_eq "the total includes it" "$(printf '%s' "$inv" | jq .total)" $((want_amt - 500))
cli_as "$ADMIN" credit-line --tenant beta --amount 30000 >/dev/null
out=$(cli_as "$ADMIN" balance --tenant beta --json)
expect_eq "credit line shows as available" "$(printf '%s' "$out" | jq -c '[.balance,.credit_line,.available]')" \
	'[0,30000,30000]'
r=$(api "$BETA" POST /v1/leases '{"gpus":1,"models":["h100-sxm"]}')
expect_eq "a credit line covers the first hour" "$(status_of "$r")" 201
BL=$(body_of "$r" | jq -r .id)
api "$BETA" POST "/v1/leases/$BL/release" >/dev/null

# ---- restart: usage and postings survive ----
RL=$(body_of "$(api "$ACME" POST /v1/leases '{"gpus":2,"models":["h100-sxm"]}')" | jq -r .id)
inv_before=$(curl -s -H "Authorization: Bearer $ACME" "$URL/v1/tenants/acme/invoices/$month" | jq -c 'del(.as_of)')
post_before=$(body_of "$(api "$ADMIN" GET /v1/tenants/acme/balance)" | jq '.balance + .unposted_usage')
beta_before=$(body_of "$(api "$ADMIN" GET /v1/tenants/beta/balance)" | jq -c '[.balance,.credit_line]')
stmt_before=$(body_of "$(api "$ADMIN" GET /v1/tenants/acme/ledger)" | jq -c .)
beta_stmt_before=$(body_of "$(api "$ADMIN" GET /v1/tenants/beta/ledger)" | jq -c .)
stop_daemon
expect_eq "the ended elastic lease's usage moved to usage_history" \
	"$(sqlite3 "$DATA/suanli.db" "SELECT (SELECT count(*) FROM usage_history WHERE id = '$EL') || ' ' || (SELECT count(*) FROM usage WHERE id = '$EL')")" "1 0"
if ! start_daemon "$TMP/log2" --data "$DATA" --fleet "$FLEET" --simulate; then
	bad "daemon restarts" "$(cat "$TMP/log2")"
	finish
	exit 1
fi
inv_after=$(curl -s -H "Authorization: Bearer $ACME" "$URL/v1/tenants/acme/invoices/$month" | jq -c 'del(.as_of)')
expect_eq "the posted balance is the same after a restart" \
	"$(body_of "$(api "$ADMIN" GET /v1/tenants/acme/balance)" | jq '.balance + .unposted_usage')" "$post_before"
expect_eq "the invoice is the same after a restart (the running lease aside)" \
	"$(printf '%s' "$inv_after" | jq -c --arg l "$RL" 'del(.lines[] | select(.lease == $l)) | del(.subtotals, .total, .total_text)')" \
	"$(printf '%s' "$inv_before" | jq -c --arg l "$RL" 'del(.lines[] | select(.lease == $l)) | del(.subtotals, .total, .total_text)')"
expect_eq "an ended lease's invoice line is still there after a restart" \
	"$(printf '%s' "$inv_after" | jq --arg l "$EL" '[.lines[] | select(.lease == $l)] | length > 0')" true
expect_eq "the other tenant's balance and credit line are the same after a restart" \
	"$(body_of "$(api "$ADMIN" GET /v1/tenants/beta/balance)" | jq -c '[.balance,.credit_line]')" "$beta_before"
expect_eq "the statement is the same after a restart" \
	"$(body_of "$(api "$ADMIN" GET /v1/tenants/acme/ledger)" | jq -c .)" "$stmt_before"
expect_eq "and the other tenant's" "$(body_of "$(api "$ADMIN" GET /v1/tenants/beta/ledger)" | jq -c .)" "$beta_stmt_before"
p1=$(body_of "$(api "$ADMIN" GET '/v1/tenants/acme/ledger?limit=2')")
p2=$(body_of "$(api "$ADMIN" GET "/v1/tenants/acme/ledger?limit=2&after=$(printf '%s' "$p1" | jq -r .next)")")
expect_eq "the statement pages in posting order after a restart" \
	"$(printf '%s\n%s' "$p1" "$p2" | jq -s -c '[.[].items[].id]')" "$(printf '%s' "$stmt_before" | jq -c '[.[0:4][].id]')"
l=$(body_of "$(api "$ACME" POST "/v1/leases/$RL/release")")
gms=$(body_of "$(api "$ACME" GET "/v1/tenants/acme/invoices/$month")" | jq --arg l "$RL" '[.lines[] | select(.lease == $l) | .gpu_ms] | add')
expect_eq "a lease running across a restart is billed from started_at to ended_at" "$gms" \
	$(( ($(ms_of "$(printf '%s' "$l" | jq -r .ended_at)") - $(ms_of "$(printf '%s' "$l" | jq -r .started_at)")) * 2 ))
inv=$(body_of "$(api "$ACME" GET "/v1/tenants/acme/invoices/$month")")
expect_eq "its charges across the restart add up to its invoice amount (charged once)" \
	"$(body_of "$(api "$ADMIN" GET '/v1/tenants/acme/ledger?type=charge')" | jq --arg l "$RL" '[.[] | select(.id | startswith("chg.\($l).")) | .amount] | add')" \
	"$(printf '%s' "$inv" | jq --arg l "$RL" '[.lines[] | select(.lease == $l) | .amount] | add')"
binv=$(body_of "$(api "$ADMIN" GET "/v1/tenants/beta/invoices/$month")")
expect_eq "revenue after a restart adds up to the invoices (ended leases read from the history)" \
	"$(body_of "$(api "$ADMIN" GET "/v1/revenue/$month")" | jq .total)" \
	"$(printf '%s\n%s' "$inv" "$binv" | jq -s '[.[].lines[] | select(.kind == "usage") | .amount] | add')"

stop_daemon
expect_eq "daemon stops cleanly" "$?" 0
expect_eq "the ledger's stored accounts balance (debits = credits)" \
	"$(sqlite3 "$DATA/suanli.db" "SELECT sum(json_extract(body, '\$.debits')) = sum(json_extract(body, '\$.credits')) FROM ledger_accounts")" 1
out=$(timeout 10 "$SUANLID" serve --data "$DATA" --listen 127.0.0.1:0 --currency USD 2>&1)
expect_eq "serving the store in another currency is refused" "$?" 1
expect_match "saying which one it bills in" "$out" "bills in CNY, not USD"

# ---- a stored row a start reads that is not valid is refused ----
# A start reads live usage rows and the ledger's accounts (not the history
# or the postings). corrupt SQL: a copy of the store with SQL applied; it
# prints the id of the row it spoiled.
corrupt() {
	rm -rf "$TMP/corrupt" && cp -r "$DATA" "$TMP/corrupt"
	sqlite3 "$TMP/corrupt/suanli.db" "$1"
}
if ! command -v sqlite3 >/dev/null; then
	bad "corrupt row checks need the sqlite3 CLI (scripts/deps.sh installs it)"
else
	# An ended record put back as a running one whose plan is "weekly".
	row=$(corrupt "INSERT INTO usage SELECT id, tenant, json_set(body, '\$.plan', 'weekly', '\$.ended', json('false')), updated_ns FROM usage_history WHERE id = (SELECT min(id) FROM usage_history); SELECT min(id) FROM usage")
	out=$(timeout 10 "$SUANLID" serve --data "$TMP/corrupt" --listen 127.0.0.1:0 2>&1)
	expect_eq "a usage row with an unknown plan: the daemon refuses to start" "$?" 1
	expect_match "and names the row and the plan" "$out" "stored usage unreadable.*id=$row .*unknown plan 'weekly'"
	row=$(corrupt "UPDATE ledger_accounts SET body = json_set(body, '\$.kind', 'weekly') WHERE id = (SELECT min(id) FROM ledger_accounts); SELECT min(id) FROM ledger_accounts")
	out=$(timeout 10 "$SUANLID" serve --data "$TMP/corrupt" --listen 127.0.0.1:0 2>&1)
	expect_eq "a ledger account of no kind: the daemon refuses to start" "$?" 1
	expect_match "and names the row" "$out" "stored ledger account unreadable.*id=$row .*unknown kind"
	row=$(corrupt "UPDATE ledger_accounts SET body = json_set(body, '\$.credits', json_extract(body, '\$.credits') + 1) WHERE id LIKE 'tenant:%'; SELECT 'x'")
	out=$(timeout 10 "$SUANLID" serve --data "$TMP/corrupt" --listen 127.0.0.1:0 2>&1)
	expect_eq "ledger accounts that do not balance: the daemon refuses to start" "$?" 1
	expect_match "and says so" "$out" "do not balance"
fi

# ---- controlled clock: month boundary in Asia/Shanghai and the grace period ----
# libfaketime is preloaded directly (not through the faketime wrapper, whose
# child would outlive a SIGTERM to the wrapper), so DAEMON_PID is the daemon.
FAKELIB=""
for f in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
	[ -e "$f" ] && FAKELIB=$f && break
done
[ -n "$FAKELIB" ] || skip "faketime checks: no libfaketime (scripts/deps.sh installs the Debian package libfaketime)"
D2="$TMP/data2"
"$SUANLID" init --data "$D2" >/dev/null
A2=$(cat "$D2/admin.token")
# Shanghai's December starts at 2026-11-30T16:00:00Z; the daemon starts 10 s
# before it and its clock runs 10x (a fake second is 0.1 s).
: >"$TMP/log3"
# ASan (the Debug build) wants to be first in the library list; libfaketime is
# preloaded before it, which is harmless here.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 TZ=UTC LD_PRELOAD="$FAKELIB" \
	FAKETIME='@2026-11-30 15:59:50 x10' "$SUANLID" serve --listen 127.0.0.1:0 --data "$D2" \
	--fleet "$FLEET" --simulate --billing-zone Asia/Shanghai --grace 20 2>"$TMP/log3" &
DAEMON_PID=$!
PORT=""
for _ in $(seq 1 100); do
	PORT=$(sed -n 's/.*msg=listening .*port=\([0-9][0-9]*\).*/\1/p' "$TMP/log3" | head -1)
	[ -n "$PORT" ] && break
	sleep 0.05
done
URL="http://127.0.0.1:$PORT"
if [ -z "$PORT" ]; then
	bad "daemon starts under faketime" "$(cat "$TMP/log3")"
	finish
	exit 1
fi
ok "daemon runs under faketime"
api "$A2" POST /v1/tenants '{"name":"acme","regions":["cn-east"]}' >/dev/null
api "$A2" POST /v1/prices '{"model":"h100-sxm","plan":"hourly","price":3600}' >/dev/null
api "$A2" POST /v1/tenants/acme/topups '{"amount":10000000}' >/dev/null
r=$(api "$A2" POST /v1/leases '{"tenant":"acme","gpus":8,"models":["h100-sxm"]}')
L2=$(body_of "$r" | jq -r .id)
st=$(body_of "$r" | jq -r .started_at)
expect_match "the lease starts before the Shanghai month ends" "$st" '^2026-11-30T15:59:5'
# wait (real time) until the fake clock passed the boundary
for _ in $(seq 1 60); do
	now=$(body_of "$(api "$A2" GET /v1/usage)" | jq -r .month)
	[ "$now" = 2026-12 ] && break
	sleep 0.1
done
expect_eq "the billing month turned to 2026-12 in Asia/Shanghai" "$now" 2026-12
sleep 0.3
r=$(api "$A2" POST "/v1/leases/$L2/release")
en=$(body_of "$r" | jq -r .ended_at)
nov=$(body_of "$(api "$A2" GET /v1/tenants/acme/invoices/2026-11)")
dec=$(body_of "$(api "$A2" GET /v1/tenants/acme/invoices/2026-12)")
boundary=$(ms_of 2026-11-30T16:00:00Z)
expect_eq "November's line ends at the Shanghai boundary" "$(printf '%s' "$nov" | jq -r '.lines[0].to')" \
	"2026-12-01T00:00:00.000+08:00"
expect_eq "November's gpu_ms: started_at to the boundary x 8" "$(printf '%s' "$nov" | jq '.lines[0].gpu_ms')" \
	$(( (boundary - $(ms_of "$st")) * 8 ))
expect_eq "December's gpu_ms: the boundary to ended_at x 8" "$(printf '%s' "$dec" | jq '.lines[0].gpu_ms')" \
	$(( ($(ms_of "$en") - boundary) * 8 ))
expect_eq "November is complete, December is not" \
	"$(printf '%s' "$nov" | jq .complete) $(printf '%s' "$dec" | jq .complete)" "true false"
n1=$(curl -s -H "Authorization: Bearer $A2" "$URL/v1/tenants/acme/invoices/2026-11" | sha256sum)
n2=$(curl -s -H "Authorization: Bearer $A2" "$URL/v1/tenants/acme/invoices/2026-11" | sha256sum)
expect_eq "a complete month's invoice regenerates byte for byte" "$n1" "$n2"

# Hosting: acme's colocated server (fza-h100-008 in the demo fleet) pays a
# monthly fee from the instant a hosting price applies, to the millisecond.
r=$(api "$A2" POST /v1/prices '{"plan":"hosting","price":267840000}')
expect_eq "a hosting fee is set (per server-month)" "$(status_of "$r")" 201
sleep 0.5
h=$(body_of "$(api "$A2" GET /v1/tenants/acme/invoices/2026-12)" | jq -c '[.lines[] | select(.kind == "hosting")]')
expect_eq "acme's invoice has a hosting line for its server" "$(printf '%s' "$h" | jq -r '.[0].lease')" \
	host.fza-h100-008
hq=$(printf '%s' "$h" | jq '.[0].quantity')
# December has 31 days: 2,678,400,000 ms, so the fee is 0.1 fen per server-ms.
expect_eq "hosting amount = round_half_up(server-ms x fee / ms in the month)" \
	"$(printf '%s' "$h" | jq '.[0].amount')" $(( (hq * 267840000 + 1339200000) / 2678400000 ))
expect_match "and it is metered (server-ms > 0)" "$hq" '^[1-9][0-9]*$'

# Grace: a price 1000x higher from 10 fake seconds on empties the balance fast.
api "$A2" POST /v1/tenants '{"name":"poor","regions":["cn-east"]}' >/dev/null
api "$A2" POST /v1/tenants/poor/topups '{"amount":30000}' >/dev/null
r=$(api "$A2" POST /v1/leases '{"tenant":"poor","gpus":8,"models":["h100-sxm"]}')
L3=$(body_of "$r" | jq -r .id)
expect_eq "poor's lease starts (first hour covered)" "$(body_of "$r" | jq -r .state)" active
# From 10 fake seconds after the daemon's own now (as_of), so a slow machine
# cannot make it a past instant; retried should it still be.
for _ in 1 2 3; do
	dnow=$(body_of "$(api "$A2" GET /v1/usage)" | jq -r .as_of)
	from=$(date -u -d "$dnow + 10 seconds" +%Y-%m-%dT%H:%M:%S.%3NZ)
	r=$(api "$A2" POST /v1/prices "{\"model\":\"h100-sxm\",\"plan\":\"hourly\",\"price\":3600000,\"from\":\"$from\"}")
	[ "$(status_of "$r")" = 201 ] && break
done
expect_eq "a price rise is scheduled" "$(status_of "$r")" 201
state=""
for _ in $(seq 1 200); do
	b=$(body_of "$(api "$A2" GET /v1/tenants/poor/balance)")
	[ "$(printf '%s' "$b" | jq -r .state)" = grace ] && state=grace && break
	sleep 0.05
done
expect_eq "at zero the tenant enters the grace period (balance answer)" "$state" grace
expect_match "the balance answer says until when" "$(printf '%s' "$b" | jq -r .grace_until)" '^2026-'
for _ in $(seq 1 100); do
	l=$(body_of "$(api "$A2" GET "/v1/leases/$L3")")
	[ "$(printf '%s' "$l" | jq -r .state)" = released ] && break
	sleep 0.1
done
expect_eq "after the grace period the lease stops" "$(printf '%s' "$l" | jq -r .state)" released
hist=$(printf '%s' "$l" | jq -r '.history[].reason')
expect_match "its history says the balance ran out" "$hist" "balance exhausted: the lease stops at"
expect_match "and why it stopped" "$hist" "stopped: balance exhausted and the grace period ended"
g_at=$(printf '%s' "$l" | jq -r '[.history[] | select(.reason | startswith("balance exhausted"))][0].at')
stop_ms=$(( $(ms_of "$(printf '%s' "$l" | jq -r .ended_at)") - $(ms_of "$g_at") ))
expect_eq "it ran the whole grace period (20 s), stopped within 5 s (ticks)" \
	"$([ "$stop_ms" -ge 20000 ] && [ "$stop_ms" -le 25000 ] && echo yes || echo "no ($stop_ms ms)")" yes
b=$(body_of "$(api "$A2" GET /v1/tenants/poor/balance)")
expect_eq "the grace state is cleared once stopped" "$(printf '%s' "$b" | jq -r .state)" ok
expect_match "and the stop is on the balance answer" "$(printf '%s' "$b" | jq -r .last_stopped)" '^2026-'
stop_daemon
expect_eq "faketime daemon stops cleanly" "$?" 0
finish
