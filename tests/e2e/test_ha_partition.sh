#!/usr/bin/env bash
# test_ha_partition.sh - the leader cut off from PostgreSQL: two suanlid and
# the database on hosts of their own (network namespaces, netns_lib.sh), then
# DROP rules in the leader's namespace for the database's address only. The
# leader cannot renew: it fences itself (answers nothing, its write never
# lands), its TCP user timeout ends the stuck call and it steps down; the
# standby, which still reaches the database, takes over once the lease runs
# out by terminating the old session. With the rules gone the old leader
# stands by. Needs namespaces and iptables (skipped otherwise: the loopback
# fallback of netns_lib.sh cannot drop one host's traffic to another).
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netns_lib.sh"
: "${SUANLID:?SUANLID must point at the suanlid binary}"
PGT="$SL_ROOT/scripts/pg-test.sh"
PGDIR=""
bash "$PGT" available || skip "no PostgreSQL server binaries (Debian: postgresql)"
ns_init
trap 'ns_cleanup; [ -n "$PGDIR" ] && bash "$PGT" stop "$PGDIR"; rm -rf "$TMP"' EXIT
[ "$NS_MODE" = netns ] || skip "network namespaces are needed for a DROP rule on one host"
ns_create db 1 && ns_create ca 2 && ns_create cb 3 && ns_create cli 4 || { bad "hosts are created"; finish; exit 1; }
ns_exec ca iptables -L OUTPUT >/dev/null 2>&1 || skip "iptables does not work in a namespace here"
DB=$(ns_addr db)
out=$(ns_exec db env PG_TEST_LISTEN="$DB" bash "$PGT" start) || { bad "PostgreSQL starts in its host"; finish; exit 1; }
PGDIR=${out%% *}
bash "$PGT" createdb "$PGDIR" ha >/dev/null
STORE="postgres://suanli@$DB:5432/ha"
# off loopback suanlid serves only HTTPS (docs/security.md): one CA and one
# server certificate naming both controllers' addresses, in the data
# directory both controllers use; clients verify against the CA
CA="https://$(ns_addr ca):7400"
CB="https://$(ns_addr cb):7400"
DATA="$TMP/data"
ns_exec ca "$SUANLID" init --data "$DATA" --store "$STORE" --tls-san "$(ns_addr ca)" --tls-san "$(ns_addr cb)" >/dev/null 2>&1
expect_eq "init over TCP from the leader's host" "$?" 0
export SUANLI_TOKEN SUANLI_CA="$DATA/tls/ca.pem"
SUANLI_TOKEN=$(cat "$DATA/admin.token")
# the standby's own data directory, as on another machine (docs/ha.md):
# the audit key and the TLS files copied from the first
mkdir -p "$TMP/b" && cp -a "$DATA/audit.key" "$DATA/tls" "$TMP/b/"
ns_spawn ca "$TMP/ca.log" "$SUANLID" serve --data "$DATA" --store "$STORE" --listen "$(ns_addr ca):7400" --advertise "$CA" \
	--simulate --lease 3 --fleet "$SL_ROOT/examples/demo-fleet.yaml"
# a controller retrying an unreachable database answers late (connect_timeout 5 s)
role() { ns_exec cli curl -s --cacert "$SUANLI_CA" --max-time 8 "$1/healthz" | jq -r '.role // empty' 2>/dev/null; }
is() { [ "$(role "$1")" = "$2" ]; }
wait_until 30 is "$CA" leader
expect_eq "the first controller leads" "$(role "$CA")" leader
ns_spawn cb "$TMP/cb.log" "$SUANLID" serve --data "$TMP/b" --store "$STORE" --listen "$(ns_addr cb):7400" --advertise "$CB" \
	--simulate --lease 3
wait_until 30 is "$CB" standby
expect_eq "the second stands by" "$(role "$CB")" standby
ns_exec cli "$SUANLI" --server "$CA,$CB" tenant create acme >/dev/null 2>&1
expect_eq "a write through the list" "$?" 0

# ---- cut the leader off from the database, and only from it ----
ns_exec ca iptables -A OUTPUT -d "$DB" -j DROP
ns_exec ca iptables -A INPUT -s "$DB" -j DROP
ok "DROP rules for $DB in the leader's namespace"
ns_exec cli curl -s --cacert "$SUANLI_CA" --max-time 40 -o /dev/null -w '%{http_code}' -X POST "$CA/v1/tenants" \
	-H "Authorization: Bearer $SUANLI_TOKEN" -H 'Content-Type: application/json' \
	--data-binary '{"name":"ghost"}' >"$TMP/ghost.code" 2>/dev/null &
gp=$!
wait_until 40 is "$CB" leader
expect_eq "the standby takes over from the cut-off leader" "$(role "$CB")" leader
ns_exec cli "$SUANLI" --server "$CA,$CB" tenant create after-cut >/dev/null 2>&1
expect_eq "clients with both URLs write to the new leader" "$?" 0
wait_until 40 is "$CA" standby
expect_eq "the cut-off leader steps down by itself" "$(role "$CA")" standby
expect_match "... and says why" "$(cat "$TMP/ca.log")" 'stepped down'
wait "$gp"
code=$(cat "$TMP/ghost.code" 2>/dev/null)
if [ "${code:-000}" -ge 200 ] && [ "${code:-000}" -lt 300 ]; then
	bad "the cut-off leader acknowledged a write" "status $code"
else
	ok "the cut-off leader did not acknowledge its write (status ${code:-none})"
fi
tenants=$(ns_exec cli "$SUANLI" --server "$CA,$CB" --json tenant list 2>/dev/null)
expect_eq "... and it did not land" "$(printf '%s' "$tenants" | jq '[.[] | select(.name == "ghost")] | length')" 0
expect_eq "the new leader's write is there" \
	"$(printf '%s' "$tenants" | jq '[.[] | select(.name == "after-cut")] | length')" 1

# Cut off, the stepped-down controller keeps trying the database (each try
# hangs up to connect_timeout, 5 s) on its worker thread: its own answers
# are not held up meanwhile.
late=0
for _ in 1 2 3 4 5 6 7 8; do
	[ "$(ns_exec cli curl -s --cacert "$SUANLI_CA" --max-time 2 "$CA/healthz" | jq -r '.role // empty' 2>/dev/null)" = standby ] ||
		late=$((late + 1))
	sleep 0.5
done
expect_eq "while it cannot reach the database it still answers /healthz at once (8 of 8)" "$late" 0

# ---- heal: the old leader stays a standby ----
ns_exec ca iptables -D OUTPUT -d "$DB" -j DROP
ns_exec ca iptables -D INPUT -s "$DB" -j DROP
sees_leader() { ns_exec cli curl -s --cacert "$SUANLI_CA" --max-time 2 "$CA/healthz" | jq -e --arg u "$CB" '.leader == $u' >/dev/null; }
wait_until 20 sees_leader
expect_eq "after healing, the old leader stands by and names the new one" \
	"$(ns_exec cli curl -s --cacert "$SUANLI_CA" "$CA/healthz" | jq -r .leader)" "$CB"
finish
