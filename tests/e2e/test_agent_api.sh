#!/usr/bin/env bash
# test_agent_api.sh - the controller's side of the agent protocol
# (docs/agent-protocol.md), driven with curl against a real suanlid with short
# lifecycle timers: join tokens and node credentials, strict registration
# (bad bodies change nothing), discovery weaker than declared -> drained,
# nodes joining by labels, heartbeats, silence -> unreachable -> down with the
# lease failed and billed only up to the last heartbeat, replacement GPUs with
# a new epoch for leases that ask, the XID policy, audit entries, and a fresh
# grace after a controller restart. Timing is never asserted: every wait
# polls for a state with a generous bound.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
command -v jq >/dev/null || { echo "jq is needed (scripts/deps.sh)"; exit 1; }
DATA="$TMP/data"
BEATS="$TMP/beats" # lines "node credential boot_id": the beater keeps them alive
BEATER=""
: >"$BEATS"

agent_cleanup() {
	[ -n "$BEATER" ] && kill "$BEATER" 2>/dev/null && wait "$BEATER" 2>/dev/null
	ctl_cleanup
}
trap agent_cleanup EXIT

cat >"$TMP/fleet.yaml" <<'EOF'
sites:
  - name: s1
    region: r1
    fabrics:
      - name: ib
        kind: infiniband
        gbps: 400
        leaves:
          - name: l1
            nodes:
              - {name: a1, type: hgx-h100-8}
              - {name: a2, type: hgx-h100-8}
          - name: l2
            nodes:
              - {name: b1, type: hgx-h100-8}
EOF

"$SUANLID" init --data "$DATA" >/dev/null
ADMIN=$(cat "$DATA/admin.token")
FLAGS=(--data "$DATA" --heartbeat 1 --unreachable-after 2 --down-after 4)
start_daemon "$TMP/log" "${FLAGS[@]}" --fleet "$TMP/fleet.yaml" || { echo "daemon did not start"; cat "$TMP/log"; exit 1; }

node_field() { api "$ADMIN" GET "/v1/nodes/$1" | sed 's/^[0-9]* //' | jq -r "$2"; }
# wait_state NODE STATE: polls (up to 15 s) until the node's state is STATE.
wait_state() {
	local s=""
	for _ in $(seq 1 150); do
		s=$(node_field "$1" .state)
		[ "$s" = "$2" ] && return 0
		sleep 0.1
	done
	echo "  node $1 stayed '$s', wanted '$2'"
	return 1
}
lease_field() { api "$ADMIN" GET "/v1/leases/$1" | sed 's/^[0-9]* //' | jq -r "$2"; }
wait_lease() {
	for _ in $(seq 1 150); do
		[ "$(lease_field "$1" "$2")" = "$3" ] && return 0
		sleep 0.1
	done
	return 1
}

# The discovery of a node, made from the type the controller declares for it:
# exactly as strong. $2 (jq) may weaken it.
MODEL=$(node_field a1 .model)
MEM=$(api "$ADMIN" GET /v1/catalog | sed 's/^[0-9]* //' | jq --arg m "$MODEL" '.gpu_models[] | select(.name == $m) | .mem_gib * 1024')
discovery() {
	api "$ADMIN" GET "/v1/nodes/a1" | sed 's/^[0-9]* //' | jq -c --arg m "$MODEL" --argjson mem "$MEM" '
	  {source: "simulate", model: $m, driver: "", clique: "",
	   gpus: [.topology.numa | to_entries[] | {index: .key, numa: .value, uuid: "", bus_id: "",
	          name: "NVIDIA H100 80GB HBM3", memory_mib: $mem}],
	   links: .topology.links, nics: .topology.nics}'"${1:+ | $1}"
}
GOOD=$(discovery)
WEAK=$(discovery '.links |= map(if .gpus == [3, 5] then .kind = "cross-socket" | .count = 0 | .gbps = 10 else . end)')
reg_body() { # NODE DISCOVERY [LABELS]
	jq -nc --arg n "$1" --argjson d "$2" --argjson l "${3:-null}" \
		'{node: $n, addr: "127.0.0.1", agent_version: "test", boot_id: ("boot-" + $n), discovery: $d}
		 + (if $l then {labels: $l} else {} end)'
}

# ---- before any agent ----
expect_eq "a fleet node without an agent is unreachable" "$(node_field a1 .state)" unreachable
expect_match "... and says why" "$(node_field a1 .reason)" "no agent has reported"

# ---- join tokens ----
r=$(api "$ADMIN" POST /v1/agent-tokens '{}')
expect_eq "POST /v1/agent-tokens: 201" "$(status_of "$r")" 201
JOIN=$(body_of "$r" | jq -r .token)
expect_eq "a join token is for any node" "$(body_of "$r" | jq -r '.role + " " + .node')" "agent *"
JOIN_A1=$("$SUANLI" agent-token create --node a1 --json --server "$URL" --token "$ADMIN" | jq -r .token)
expect_match "suanli agent-token create --node a1 --json" "$JOIN_A1" '^sl_'
r=$(api "$ADMIN" POST /v1/agent-tokens '{"node":"bad name"}')
expect_eq "a join token for a bad node name: 400" "$(status_of "$r")" 400
# Enough tokens that the token table grows while a request is answered (the
# caller's token must stay readable for the audit: ASan catches a stale one).
n201=0
for i in $(seq 1 40); do
	[ "$(status_of "$(api "$ADMIN" POST /v1/agent-tokens "{\"node\":\"n$i\"}")")" = 201 ] && n201=$((n201 + 1))
done
expect_eq "40 more join tokens" "$n201" 40

# ---- bad registrations change nothing ----
check_400() { # NAME BODY FIELD-REGEX
	local r
	r=$(api "$JOIN" POST /v1/agent/register "$2")
	expect_eq "$1: 400" "$(status_of "$r")" 400
	expect_match "$1: names the field" "$(body_of "$r")" "$3"
}
check_400 "empty registration" '{}' "node"
check_400 "unknown field" "$(reg_body a1 "$GOOD" | jq -c '. + {colour: "red"}')" "colour"
check_400 "no discovery" "$(reg_body a1 "$GOOD" | jq -c 'del(.discovery)')" "discovery"
check_400 "discovery without gpus" "$(reg_body a1 "$GOOD" | jq -c 'del(.discovery.gpus)')" "gpus"
check_400 "bad node name" "$(reg_body 'a 1' "$GOOD")" "node"
check_400 "addr with a space" "$(reg_body a1 "$GOOD" | jq -c '.addr = "1.2.3.4 x"')" "addr"
check_400 "unknown node without labels" "$(reg_body zz "$GOOD")" "labels.site"
check_400 "unknown leaf" "$(reg_body zz "$GOOD" '{"site":"s1","leaf":"nope"}')" "labels.leaf"
check_400 "unknown type" "$(reg_body zz "$GOOD" '{"site":"s1","leaf":"l1","type":"hgx-h100-9"}')" "labels.type"
r=$(api "$JOIN" POST /v1/agent/register "$(reg_body a1 "$GOOD" | jq -c '.boot_id = ("x" * 200)')")
expect_eq "a too long boot_id: 413" "$(status_of "$r")" 413
expect_eq "after bad registrations a1 has no agent" "$(node_field a1 '.agent // "none"')" none
expect_eq "... and zz did not join" "$(status_of "$(api "$ADMIN" GET /v1/nodes/zz)")" 404

# ---- register ----
r=$(api "$JOIN_A1" POST /v1/agent/register "$(reg_body a2 "$GOOD")")
expect_eq "a join token bound to a1 cannot register a2: 403" "$(status_of "$r")" 403
r=$(api "$JOIN_A1" POST /v1/agent/register "$(reg_body a1 "$GOOD")")
expect_eq "register a1: 200" "$(status_of "$r")" 200
expect_eq "a1 is ready" "$(body_of "$r" | jq -r .state)" ready
expect_eq "the answer has the heartbeat interval" "$(body_of "$r" | jq -r .heartbeat_s)" 1
C_A1=$(body_of "$r" | jq -r .credential)
expect_match "register with a join token returns a credential" "$C_A1" '^sl_'
r=$(api "$C_A1" POST /v1/agent/register "$(reg_body a1 "$GOOD")")
expect_eq "re-register with the credential: 200" "$(status_of "$r")" 200
expect_eq "... and no new credential" "$(body_of "$r" | jq -r '.credential // "none"')" none
r=$(api "$C_A1" POST /v1/agent/register "$(reg_body a2 "$GOOD")")
expect_eq "a1's credential cannot register a2: 403" "$(status_of "$r")" 403

r=$(api "$JOIN" POST /v1/agent/register "$(reg_body a2 "$WEAK")")
expect_eq "register a2 with a weaker discovery: 200" "$(status_of "$r")" 200
expect_eq "a2 is drained" "$(body_of "$r" | jq -r .state)" drained
expect_match "... with the reason" "$(body_of "$r" | jq -r .reason)" "weaker than hgx-h100-8"
C_A2=$(body_of "$r" | jq -r .credential)
expect_eq "suanli nodes --json shows a2 drained" \
	"$("$SUANLI" nodes --json --server "$URL" --token "$ADMIN" | jq -r '.[] | select(.name == "a2") | .state')" drained
expect_match "suanli node show prints the agent" \
	"$("$SUANLI" node show a2 --server "$URL" --token "$ADMIN")" "Agent test at 127.0.0.1, registered"

r=$(api "$JOIN" POST /v1/agent/register "$(reg_body c9 "$GOOD" '{"site":"s1","leaf":"l2"}')")
expect_eq "an unknown node joins by labels: 200" "$(status_of "$r")" 200
C_C9=$(body_of "$r" | jq -r .credential)
expect_eq "c9 is in the fleet under l2" "$(node_field c9 '.leaf + " " + .type')" "l2 hgx-h100-8"
r=$(api "$JOIN" POST /v1/agent/register "$(reg_body b1 "$GOOD")")
C_B1=$(body_of "$r" | jq -r .credential)
HALF=$(printf '%s' "$GOOD" | jq -c '.gpus |= .[:4] | .links |= map(select(.gpus[1] < 4))
	| .nics |= map(.gpus |= map(select(. < 4)) | select(.gpus | length > 0))')
r=$(api "$JOIN" POST /v1/agent/register "$(reg_body c8 "$HALF" '{"site":"s1","leaf":"l2"}')")
C_C8=$(body_of "$r" | jq -r .credential)
expect_eq "a node no built-in type matches joins with a type made from its discovery" \
	"$(node_field c8 '.type + " " + (.gpus | tostring)')" "discovered-c8 4"

# ---- heartbeats ----
hb() { # CRED NODE [GPUS-JSON]
	api "$1" POST /v1/agent/heartbeat "$(jq -nc --arg b "boot-$2" --argjson g "${3:-[]}" '{boot_id: $b, gpus: $g, work: []}')"
}
r=$(hb "$C_A1" a1)
expect_eq "heartbeat: 200" "$(status_of "$r")" 200
expect_eq "... state ready" "$(body_of "$r" | jq -r '.state + " " + (.stop | length | tostring)')" "ready 0"
r=$(hb "$JOIN" a1)
expect_eq "heartbeat with a join token: 403" "$(status_of "$r")" 403
r=$(api "$C_A1" POST /v1/agent/heartbeat '{"boot_id":"other"}')
expect_eq "heartbeat from a restarted agent (other boot_id): 409" "$(status_of "$r")" 409
r=$(hb "$C_A1" a1 '[{"index":9}]')
expect_eq "heartbeat naming GPU 9 of 8: 400" "$(status_of "$r")" 400
r=$(hb "$C_A1" a1 '[{"index":0,"xid":[{"code":0}]}]')
expect_eq "heartbeat with XID code 0: 400" "$(status_of "$r")" 400
expect_eq "... and GPU 0 stays ok" "$(node_field a1 '.gpu_health[0].state')" ok
# The controller keeps the last report as compact text, not a tree: what the
# node shows must still be the agent's object, field for field and in order.
FIGS='[{"index":1,"xid":[],"healthy":true,"temp_c":41,"power_w":88,"ecc_sbe":0,"ecc_dbe":0,"nvlink_up":17,"util_pct":5,"uuid":"GPU-0b1c"},{"util_pct":0,"index":2}]'
r=$(hb "$C_A1" a1 "$FIGS")
expect_eq "heartbeat with GPU figures: 200" "$(status_of "$r")" 200
expect_eq "the node shows each GPU's last report as the agent sent it" \
	"$(node_field a1 '[.gpu_health[1].last_report, .gpu_health[2].last_report, .gpu_health[3].last_report]' | jq -c .)" \
	"$(printf '%s' "$FIGS" | jq -c '. + [null]')"
r=$(api "$ADMIN" POST /v1/nodes/a1/drain '{"reason":"maintenance"}')
r=$(api "$C_A1" POST /v1/agent/register "$(reg_body a1 "$WEAK")")
expect_eq "a weaker discovery leaves an operator's drain and its reason alone" \
	"$(body_of "$r" | jq -r '.state + " " + .reason')" "drained maintenance"
r=$(api "$ADMIN" POST /v1/nodes/a1/resume '{}')
r=$(api "$C_A1" POST /v1/agent/register "$(reg_body a1 "$GOOD")")
expect_eq "resumed and registered again, a1 is ready" "$(body_of "$r" | jq -r .state)" ready
r=$(api "$C_A2" POST /v1/agent/register "$(reg_body a2 "$GOOD")")
expect_eq "a good discovery lifts the drain a weaker one made" "$(body_of "$r" | jq -r .state)" ready
r=$(api "$C_A2" POST /v1/agent/register "$(reg_body a2 "$WEAK")")
expect_eq "... and a weaker one drains again" "$(body_of "$r" | jq -r .state)" drained

# The beater: one heartbeat per listed node every 0.3 s.
(
	while :; do
		while read -r n c; do
			[ -n "$n" ] && curl -s -o /dev/null -H "Authorization: Bearer $c" -H 'Content-Type: application/json' \
				--data-binary "{\"boot_id\":\"boot-$n\"}" "$URL/v1/agent/heartbeat"
		done <"$BEATS"
		sleep 0.3
	done
) &
BEATER=$!
beat() { echo "$1 $2" >>"$BEATS"; }
unbeat() { grep -v "^$1 " "$BEATS" >"$BEATS.new"; mv "$BEATS.new" "$BEATS"; }
beat a1 "$C_A1"
beat b1 "$C_B1"
beat c9 "$C_C9"
sleep 2.5 # past --unreachable-after: the beaten nodes stay ready
expect_eq "heartbeats keep a1 ready" "$(node_field a1 .state)" ready
expect_eq "... and c9" "$(node_field c9 .state)" ready

# ---- silence: unreachable, down, lease failed, billing stops ----
r=$(api "$ADMIN" POST /v1/tenants '{"name":"acme"}')
r=$(api "$ADMIN" POST /v1/prices '{"model":"'"$MODEL"'","plan":"hourly","price":3600}')
expect_eq "a price for the billing check" "$(status_of "$r")" 201
r=$(api "$ADMIN" POST /v1/tenants/acme/topups '{"amount":1000000}')
r=$(api "$ADMIN" POST /v1/leases '{"tenant":"acme","gpus":8}')
L1=$(body_of "$r" | jq -r .id)
[ "$L1" != null ] || { bad "lease create" "$r"; finish; exit 1; }
N1=$(body_of "$r" | jq -r '.placement[0].node')
expect_eq "lease L1 is active" "$(body_of "$r" | jq -r .state)" active
unbeat "$N1"
sleep 0.7 # the beater's round in flight is over
cred_of() { case $1 in a1) echo "$C_A1" ;; b1) echo "$C_B1" ;; c9) echo "$C_C9" ;; esac; }
r=$(hb "$(cred_of "$N1")" "$N1") # the last heartbeat, after the lease started
LAST=$(node_field "$N1" .agent.last_heartbeat)
wait_state "$N1" unreachable && ok "a silent node becomes unreachable" || bad "a silent node becomes unreachable"
expect_eq "... while its lease keeps running" "$(lease_field "$L1" .state)" active
wait_state "$N1" down && ok "... then down" || bad "... then down"
wait_lease "$L1" .state failed && ok "the lease on a down node failed" || bad "the lease on a down node failed"
expect_eq "it ended at the node's last heartbeat" "$(lease_field "$L1" .ended_at)" "$LAST"
expect_match "... with the reason" "$(lease_field "$L1" '.history[-1].reason')" "is down"
# Billed GPU time: 8 GPUs from its start to that heartbeat, not to the failure.
ms() { jq -rn --arg t "$1" '$t | capture("T(?<h>..):(?<m>..):(?<s>..)\\.(?<f>...)") | ((.h|tonumber)*3600000 + (.m|tonumber)*60000 + (.s|tonumber)*1000 + (.f|tonumber))'; }
WANT=$(( 8 * ($(ms "$LAST") - $(ms "$(lease_field "$L1" .started_at)")) ))
GOT=$(api "$ADMIN" GET "/v1/usage?tenant=acme" | sed 's/^[0-9]* //' | jq -r '.tenants[0].month_to_date.gpu_ms')
expect_eq "billed GPU time stops at the last heartbeat (8 x its ms)" "$GOT" "$WANT"

# ---- replacement ----
r=$("$SUANLI" lease create --tenant acme --gpus 8 --on-node-failure replace --json --server "$URL" --token "$ADMIN")
L2=$(printf '%s' "$r" | jq -r .id)
N2=$(printf '%s' "$r" | jq -r '.placement[0].node')
E2=$(printf '%s' "$r" | jq -r .epoch)
expect_eq "suanli lease create --on-node-failure replace" "$(printf '%s' "$r" | jq -r .request.on_node_failure)" replace
"$SUANLI" lease create --tenant acme --gpus 8 --on-node-failure maybe --server "$URL" --token "$ADMIN" 2>/dev/null
expect_eq "... and refuses other values (usage error)" "$?" 2
r=$(api "$ADMIN" POST /v1/leases '{"tenant":"acme","gpus":8,"on_node_failure":"sometimes"}')
expect_eq "on_node_failure must be fail or replace: 400" "$(status_of "$r")" 400
unbeat "$N2"
wait_state "$N2" down && ok "the replace lease's node went down" || bad "the replace lease's node went down"
wait_lease "$L2" .epoch $((E2 + 1)) && ok "the lease got a new epoch" || bad "the lease got a new epoch"
expect_eq "... and stays active" "$(lease_field "$L2" .state)" active
N3=$(lease_field "$L2" '.placement[0].node')
[ "$N3" != "$N2" ] && [ "$N3" != "$N1" ] && ok "... on another node ($N3)" || bad "... on another node" "$N2 -> $N3"
expect_match "... history says why" "$(lease_field "$L2" '.history[-1].reason')" "went down: replaced on $N3"
LAST2=$(node_field "$N2" .agent.last_heartbeat)
REPLACED2=$(lease_field "$L2" '.history[-1].at')
expect_eq "$N3's GPUs belong to the lease" "$(node_field "$N3" '[.gpu_state[] | select(.lease == "'"$L2"'")] | length')" 8
expect_eq "no GPU of $N2 is leased" "$(node_field "$N2" '[.gpu_state[] | select(.lease)] | length')" 0
beat "$N1" "$(cred_of "$N1")"
wait_state "$N1" ready && ok "a returning node is ready again" || bad "a returning node is ready again"

# ---- GPU health (driven by hand: the beater leaves $N3 alone) ----
unbeat "$N3"
C3=$(cred_of "$N3")
hb "$C3" "$N3" '[{"index":3,"xid":[{"code":13,"at":"2026-11-30T08:00:01Z"}],"temp_c":40}]' >/dev/null
expect_eq "a transient XID drains the GPU" "$(node_field "$N3" '.gpu_health[3].state')" draining
expect_match "... which the node's reason names (suanli nodes)" "$(node_field "$N3" '.state + ": " + .reason')" "^ready: GPU 3 draining: XID 13"
expect_eq "... and is kept in gpu_events" "$(node_field "$N3" '.gpu_events[-1].gpu, .gpu_events[-1].code' | tr '\n' ' ')" "3 13 "
hb "$C3" "$N3" '[{"index":3,"temp_c":41}]' >/dev/null
expect_eq "a report without a verdict leaves it drained" "$(node_field "$N3" '.gpu_health[3].state')" draining
hb "$C3" "$N3" '[{"index":3,"healthy":false}]' >/dev/null
expect_eq "an unhealthy report keeps it drained" "$(node_field "$N3" '.gpu_health[3].state')" draining
hb "$C3" "$N3" '[{"index":3,"healthy":true}]' >/dev/null
expect_eq "a healthy report re-qualifies it" "$(node_field "$N3" '.gpu_health[3].state')" ok
hb "$C3" "$N3" '[{"index":5,"xid":[{"code":79}]}]' >/dev/null
expect_eq "a non-transient XID fails the GPU" "$(node_field "$N3" '.gpu_health[5].state')" failed
hb "$C3" "$N3" '[{"index":5,"healthy":true}]' >/dev/null
expect_eq "... which a health check does not undo" "$(node_field "$N3" '.gpu_health[5].state')" failed
for code in 13 31 43; do
	hb "$C3" "$N3" '[{"index":2,"xid":[{"code":'$code'}]}]' >/dev/null
	hb "$C3" "$N3" '[{"index":2,"healthy":true}]' >/dev/null
done
expect_eq "3 transient XIDs within 24 h fail the GPU" "$(node_field "$N3" '.gpu_health[2].state')" failed
expect_eq "the lease keeps its GPUs meanwhile" "$(lease_field "$L2" .state)" active
r=$(api "$ADMIN" POST "/v1/nodes/$N3/resume" '{}')
expect_eq "an operator's resume returns failed GPUs" "$(node_field "$N3" '[.gpu_health[].state] | unique | join(",")')" ok
beat "$N3" "$C3"
# A failed GPU takes no new lease: the only free node ($N1) lost GPU 0.
r=$(hb "$(cred_of "$N1")" "$N1" '[{"index":0,"xid":[{"code":48}]}]')
expect_eq "a double-bit ECC XID fails GPU 0 of $N1" "$(node_field "$N1" '.gpu_health[0].state')" failed
r=$(api "$ADMIN" POST /v1/leases '{"tenant":"acme","gpus":8}')
L3=$(body_of "$r" | jq -r .id)
expect_eq "an 8-GPU lease does not get a node with a failed GPU (it waits)" "$(body_of "$r" | jq -r .state)" pending
r=$(api "$ADMIN" POST "/v1/nodes/$N1/resume" '{}')
wait_lease "$L3" .state active && ok "resuming the node returns the GPU and the lease starts" || bad "resuming the node returns the GPU and the lease starts"
expect_eq "... on $N1" "$(lease_field "$L3" '.placement[0].node')" "$N1"
r=$(api "$ADMIN" POST "/v1/leases/$L3/release" '{}')

# ---- audit ----
A=$(api "$ADMIN" GET "/v1/audit/log?limit=100000" | sed 's/^[0-9]* //')
for act in node.unreachable node.down node.restored node.drain node.join lease.replace gpu.drain gpu.fail gpu.requalified agent.register; do
	expect_match "audited: $act" "$(printf '%s' "$A" | jq -r '.. | .action? // empty' | sort -u | tr '\n' ' ')" "(^| )$act( |$)"
done
# Heartbeats are telemetry: accepted ones leave no entry, refused ones do.
acts=$(printf '%s' "$A" | jq -r '.. | objects | select(has("action")) | .action + " " + (.outcome // "")')
expect_eq "accepted heartbeats are not audited" "$(printf '%s\n' "$acts" | grep -c '^agent.heartbeat ok')" 0
expect_match "refused heartbeats are" "$(printf '%s\n' "$acts" | grep -c '^agent.heartbeat denied')" '^[1-9]'

# ---- restart: registrations kept, a fresh grace ----
kill "$BEATER" 2>/dev/null; wait "$BEATER" 2>/dev/null; BEATER=""
stop_daemon && ok "the daemon stops cleanly (no sanitizer report)" || { bad "the daemon stops cleanly"; cat "$TMP/log" | tail -30; }
start_daemon "$TMP/log2" "${FLAGS[@]}" || { bad "restart"; finish; exit 1; }
expect_eq "after a restart the joined node is still in the fleet" "$(node_field c9 .leaf)" l2
expect_eq "... and the one with a discovered type" "$(node_field c8 '.type + " " + .leaf')" "discovered-c8 l2"
expect_eq "... which is still the type its discovery made (4 GPUs)" "$(node_field c8 '.gpus | tostring')" 4
expect_eq "... registered nodes get a fresh grace (ready)" "$(node_field "$N2" .state)" ready
expect_eq "... the registration is kept" "$(node_field "$N3" .agent.addr)" 127.0.0.1
expect_eq "... a2 is still drained by its discovery" "$(node_field a2 .state)" drained
expect_eq "... the replaced lease is still active" "$(lease_field "$L2" .state)" active
r=$(hb "$C3" "$N3")
expect_eq "... the credential still works" "$(status_of "$r")" 200
# The replaced lease is billed for its 8 GPUs except while they were on the
# silent node: from its start to N2's last heartbeat, then from the
# replacement to its release.
r=$(api "$ADMIN" POST "/v1/leases/$L2/release" '{}')
S2=$(ms "$(lease_field "$L2" .started_at)") H2=$(ms "$LAST2")
[ "$H2" -lt "$S2" ] && H2=$S2 # its node's last report came just before it started
WANT2=$(( 8 * (H2 - S2) + 8 * ($(ms "$(lease_field "$L2" .ended_at)") - $(ms "$REPLACED2")) ))
GOT=$(api "$ADMIN" GET "/v1/usage?tenant=acme" | sed 's/^[0-9]* //' | jq -r '.tenants[0].month_to_date.gpu_ms')
WANT3=$(( 8 * ($(ms "$(lease_field "$L3" .ended_at)") - $(ms "$(lease_field "$L3" .started_at)")) ))
expect_eq "a replaced lease is not billed for the outage (8 x ms outside it)" "$GOT" "$((WANT + WANT2 + WANT3))"
# The discovery is kept deflated, not as a tree: a record written after the
# restart (a GPU's health changed) still stores it as it was registered.
r=$(api "$C_C8" POST /v1/agent/heartbeat '{"boot_id":"boot-c8","gpus":[{"index":3,"healthy":false}]}')
expect_eq "c8 reports GPU 3 unhealthy after the restart" "$(node_field c8 '.gpu_health[3].state')" draining
stop_daemon && ok "the restarted daemon stops cleanly" || { bad "the restarted daemon stops cleanly"; tail -30 "$TMP/log2"; }
if command -v sqlite3 >/dev/null; then
	expect_eq "c8's stored record (written after the restart) keeps the discovery it registered" \
		"$(sqlite3 "$DATA/suanli.db" "SELECT body FROM agents WHERE id = 'c8'" | jq -c '[.discovery, .gpu_health[3].state]')" \
		"$(printf '%s' "$HALF" | jq -c '[., "draining"]')"
else
	bad "the stored discovery check needs the sqlite3 CLI (scripts/deps.sh installs it)"
fi
finish
