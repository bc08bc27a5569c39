#!/usr/bin/env bash
# test_ha_cities.sh - an agent in another city keeps working through a
# failover: the database and two suanlid in one "city", the agent's host in
# another, the cities joined by links with tc netem (30 ms one way, 1% loss,
# on both directions of the agent host's link; network namespaces,
# netns_lib.sh). The agent joins over the slow link, runs a lease; the leader
# is SIGKILLed; the agent follows the new leader by itself, its node stays
# ready there and its lease keeps its GPUs. Skipped without namespaces or the
# PostgreSQL server binaries. Without tc netem (sch_netem) in the kernel the
# link is a user-space delay line with the same delay and loss
# (delay_line.py).
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netns_lib.sh"
: "${SUANLID:?SUANLID must point at the suanlid binary}"
: "${SUANLI_AGENT:?SUANLI_AGENT must point at the suanli-agent binary}"
PGT="$SL_ROOT/scripts/pg-test.sh"
FLEET="$SL_ROOT/tests/data/fleet/agents-small.yaml"
NODE=e2e-h100-01
PGDIR=""
bash "$PGT" available || skip "no PostgreSQL server binaries (Debian: postgresql)"
ns_init
trap 'ns_cleanup; [ -n "$PGDIR" ] && bash "$PGT" stop "$PGDIR"; rm -rf "$TMP"' EXIT
[ "$NS_MODE" = netns ] || skip "network namespaces are needed for links with netem"
ns_create db 1 && ns_create ca 2 && ns_create cb 3 && ns_create cli 5 ||
	{ bad "hosts are created"; finish; exit 1; }
# The far city: tc netem where the kernel has it, else the same delay and
# loss from a user-space delay line (delay_line.py; our CI kernel has no
# sch_netem).
if ip netns exec "$NS_SWITCH" tc qdisc add dev br0 root netem delay 1ms 2>"$TMP/tc.err"; then
	ip netns exec "$NS_SWITCH" tc qdisc del dev br0 root
	ns_create far 4 &&
		ip netns exec "$NS_SWITCH" tc qdisc add dev "${NS_VETH[far]}" root netem delay 30ms loss 1% &&
		ns_exec far tc qdisc add dev eth0 root netem delay 30ms loss 1% ||
		{ bad "the far city's link (tc netem)"; finish; exit 1; }
	ok "the agent's city is 30 ms away each way, with 1% loss (tc netem)"
else
	ns_create_slow far 4 30 1 || { bad "the far city's link (delay line)"; finish; exit 1; }
	ok "the agent's city is 30 ms away each way, with 1% loss (a user-space delay line: no tc netem here, $(head -1 "$TMP/tc.err"))"
fi
DB=$(ns_addr db)
out=$(ns_exec db env PG_TEST_LISTEN="$DB" bash "$PGT" start) || { bad "PostgreSQL starts"; finish; exit 1; }
PGDIR=${out%% *}
bash "$PGT" createdb "$PGDIR" ha >/dev/null
STORE="postgres://suanli@$DB:5432/ha"
# off loopback suanlid serves only HTTPS (docs/security.md): one CA and one
# server certificate naming both controllers' addresses, in the data
# directory both controllers use; clients verify against the CA
CA="https://$(ns_addr ca):7400"
CB="https://$(ns_addr cb):7400"
BOTH="$CA,$CB"
DATA="$TMP/data"
ns_exec ca "$SUANLID" init --data "$DATA" --store "$STORE" --tls-san "$(ns_addr ca)" --tls-san "$(ns_addr cb)" >/dev/null 2>&1
expect_eq "init" "$?" 0
export SUANLI_TOKEN SUANLI_CA="$DATA/tls/ca.pem"
SUANLI_TOKEN=$(cat "$DATA/admin.token")
# the standby's own data directory, as on another machine (docs/ha.md):
# the audit key and the TLS files copied from the first
mkdir -p "$TMP/b" && cp -a "$DATA/audit.key" "$DATA/tls" "$TMP/b/"
ns_spawn ca "$TMP/ca.log" "$SUANLID" serve --data "$DATA" --store "$STORE" --listen "$(ns_addr ca):7400" --advertise "$CA" \
	--lease 2 --heartbeat 1 --fleet "$FLEET"
CA_PID=$NS_LAST_PID
role() { ns_exec cli curl -s --cacert "$SUANLI_CA" --max-time 8 "$1/healthz" | jq -r '.role // empty' 2>/dev/null; }
is() { [ "$(role "$1")" = "$2" ]; }
wait_until 30 is "$CA" leader
ns_spawn cb "$TMP/cb.log" "$SUANLID" serve --data "$TMP/b" --store "$STORE" --listen "$(ns_addr cb):7400" --advertise "$CB" \
	--lease 2 --heartbeat 1
wait_until 30 is "$CB" standby
rtt=$(ns_exec far curl -s -o /dev/null --cacert "$SUANLI_CA" -w '%{time_connect}' "$CA/healthz")
[ "$(awk -v r="$rtt" 'BEGIN{print (r >= 0.058)}')" = 1 ] &&
	ok "a TCP handshake from the far city takes a round trip of 60 ms (${rtt} s)" ||
	bad "the far city's link has its delay" "connect took ${rtt} s"
expect_eq "one leads, one stands by" "$(role "$CA") $(role "$CB")" "leader standby"
sl() { ns_exec cli "$SUANLI" --server "$BOTH" "$@"; }
node_state() { sl nodes --json 2>/dev/null | jq -r --arg n "$NODE" '.[] | select(.name == $n) | .state'; }
node_ready() { [ "$(node_state)" = ready ]; }
JOIN=$(sl agent-token create --node "$NODE" --json 2>/dev/null | jq -r .token)
ns_spawn far "$TMP/agent.log" "$SUANLI_AGENT" run --server "$BOTH" --ca "$SUANLI_CA" --token "$JOIN" --node "$NODE" \
	--simulate hgx-h100-8 --state-dir "$TMP/agent" --heartbeat 1
wait_until 40 node_ready
expect_eq "the far agent joins and its node is ready" "$(node_state)" ready
sl tenant create acme >/dev/null 2>&1
lease=$(sl --json lease create --gpus 2 --tenant acme --duration 2h 2>/dev/null)
id=$(printf '%s' "$lease" | jq -r '.id // empty')
gpus=$(printf '%s' "$lease" | jq -c '[.placement[] | .node, .gpus]')
expect_match "a lease on the far node" "$gpus" "$NODE"

kill -KILL "$CA_PID"
ns_forget "$CA_PID"
wait_until 30 is "$CB" leader
expect_eq "the standby leads" "$(role "$CB")" leader
follows() { grep -q 'following a new leader' "$TMP/agent.log"; }
wait_until 40 follows
follows && ok "the far agent follows the new leader by itself" ||
	bad "the far agent did not follow" "$(tail -5 "$TMP/agent.log")"
wait_until 40 node_ready
expect_eq "its node is ready on the new leader" "$(node_state)" ready
after=$(sl --json lease show "$id" 2>/dev/null)
expect_eq "its lease is still active" "$(printf '%s' "$after" | jq -r .state)" active
expect_eq "... on the same GPUs" "$(printf '%s' "$after" | jq -c '[.placement[] | .node, .gpus]')" "$gpus"
finish
