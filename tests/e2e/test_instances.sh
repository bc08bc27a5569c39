#!/usr/bin/env bash
# test_instances.sh - the controller's side of instances (docs/instances.md)
# against a real suanlid, with the agents played by curl over the agent
# protocol (registration, work polls, heartbeats with "instances" reports,
# the migration relay): SSH keys, the image catalog's driver need refused at
# placement, create -> pulling (not billed) -> running (billed from the
# reported instant) -> stop (lease released, disks kept) -> start on the same
# node, refused with its three choices when the node is taken, --wait,
# --no-gpu, --migrate with both disks relayed and checked by SHA-256, idle
# stop from injected utilisation, a guest stop, release (says the data disk is
# deleted), balance exhausted (stopped after grace, data kept, storage still
# billed, released after the retention), tenant isolation, audit entries, and
# an oracle that recomputes every invoice line of the instances from their
# recorded instants to the fen. Real containers and sshd are the agent's
# tests (test_agent_instances.sh). No timing is asserted: waits poll states.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
command -v jq >/dev/null || { echo "jq is needed (scripts/deps.sh)"; exit 1; }
command -v python3 >/dev/null || { echo "python3 is needed (scripts/deps.sh)"; exit 1; }
command -v ssh-keygen >/dev/null || { skip "ssh-keygen is needed (openssh-client, scripts/deps.sh)"; finish; exit $SKIP_RC; }
DATA="$TMP/data"

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
EOF

"$SUANLID" init --data "$DATA" >/dev/null || { bad "init"; finish; exit 1; }
ADMIN=$(cat "$DATA/admin.token")
if ! start_daemon "$TMP/log" --data "$DATA" --fleet "$TMP/fleet.yaml" --heartbeat 1 \
	--unreachable-after 3600 --down-after 7200 --grace 2 --instance-retention 3s; then
	bad "daemon starts" "$(cat "$TMP/log")"
	finish
	exit 1
fi
ok "daemon listens on port $PORT"
sl() { local tok=$1 cmd=$2 sub=$3; shift 3; "$SUANLI" "$cmd" "$sub" --server "$URL" --token "$tok" "$@"; }
now() { date -u +%Y-%m-%dT%H:%M:%S.%3NZ; }
inst() { body_of "$(api "$ACME" GET "/v1/instances/$1")" | jq -r "$2"; }
wait_state() { # ID STATE
	local s=""
	for _ in $(seq 1 100); do
		s=$(inst "$1" .state)
		[ "$s" = "$2" ] && return 0
		sleep 0.1
	done
	echo "     $1 stayed '$s', wanted '$2'"
	return 1
}

api "$ADMIN" POST /v1/tenants '{"name":"acme","regions":["r1"]}' >/dev/null
api "$ADMIN" POST /v1/tenants '{"name":"beta","regions":["r1"]}' >/dev/null
ACME=$(body_of "$(api "$ADMIN" POST /v1/tokens '{"role":"tenant","tenant":"acme","user":"alice"}')" | jq -r .token)
BETA=$(body_of "$(api "$ADMIN" POST /v1/tokens '{"role":"tenant","tenant":"beta","user":"bob"}')" | jq -r .token)

# ---- agents played by curl: a1 has an old driver, a2 a new one ----
MODEL=$(body_of "$(api "$ADMIN" GET /v1/nodes/a1)" | jq -r .model)
disc() { # DRIVER
	body_of "$(api "$ADMIN" GET /v1/nodes/a1)" | jq -c --arg m "$MODEL" --arg drv "$1" '
	  {source: "simulate", model: $m, driver: $drv, clique: "",
	   gpus: [.topology.numa | to_entries[] | {index: .key, numa: .value}],
	   links: .topology.links, nics: .topology.nics}'
}
JOIN=$(body_of "$(api "$ADMIN" POST /v1/agent-tokens '{}')" | jq -r .token)
declare -A CRED
for n in a1 a2; do
	drv=535.104.05
	[ $n = a2 ] && drv=550.54.15
	r=$(api "$JOIN" POST /v1/agent/register "$(jq -nc --arg n $n --argjson d "$(disc $drv)" \
		'{node: $n, addr: "127.0.0.1", agent_version: "test", boot_id: ("boot-" + $n), discovery: $d}')")
	CRED[$n]=$(body_of "$r" | jq -r .credential)
done
expect_match "two fake agents registered" "${CRED[a1]} ${CRED[a2]}" '^sl_.* sl_'
# hb NODE REPORTS-JSON [UTIL]: one heartbeat; UTIL: every GPU's util_pct
hb() {
	local util=${3:-100}
	api "${CRED[$1]}" POST /v1/agent/heartbeat "$(jq -nc --arg b "boot-$1" --argjson r "$2" --argjson u "$util" \
		'{boot_id: $b, work: [], instances: $r, gpus: [range(8) | {index: ., util_pct: $u}]}')"
}
work() { body_of "$(api "${CRED[$1]}" GET '/v1/agent/work?wait=0')"; }
item() { work "$1" | jq -c --arg i "$2" '[.instances[] | select(.instance == $i)][0] // null'; }
rep() { # ID EPOCH STATE [extra jq object]
	jq -nc --arg i "$1" --argjson e "$2" --arg s "$3" --argjson x "${4:-{\}}" \
		'[{instance: $i, node_rank: 0, epoch: $e, state: $s} + $x]'
}
running_rep() { # ID EPOCH
	rep "$1" "$2" running "$(jq -nc --arg t "$(now)" '{running_since: $t, ssh_port: 30022,
		ports: [{port: 8888, host_port: 30023}],
		host_keys: [{type: "ssh-ed25519", fingerprint: "SHA256:hostkeyfingerprintAAAA"}]}')"
}

# ---- money ----
sl "$ADMIN" price set --model h100-sxm --plan hourly --price 3600 >/dev/null
sl "$ADMIN" price set --plan storage --price 3000 >/dev/null
expect_eq "a storage price (per GiB-month, no model)" "$?" 0
sl "$ADMIN" price set --plan no-gpu --price 36000 >/dev/null
out=$(sl "$ADMIN" price set --plan storage --model h100-sxm --price 1 2>&1)
expect_match "a storage price naming a GPU model is refused" "$out" "not per GPU model"
"$SUANLI" topup --server "$URL" --token "$ADMIN" --tenant acme --amount 10000000 >/dev/null
"$SUANLI" topup --server "$URL" --token "$ADMIN" --tenant beta --amount 10000000 >/dev/null

# ---- SSH keys ----
ssh-keygen -q -t ed25519 -N '' -C alice@laptop -f "$TMP/alice" >/dev/null
ssh-keygen -q -t ed25519 -N '' -C bob@home -f "$TMP/bob" >/dev/null
out=$(sl "$ACME" ssh-key add laptop --file "$TMP/alice.pub")
want=$(ssh-keygen -lf "$TMP/alice.pub" | awk '{print $2}')
expect_eq "ssh-key add shows the SHA256 fingerprint ssh-keygen prints" "$out" "SSH key laptop added: ssh-ed25519 $want"
out=$(sl "$ACME" ssh-key add priv --file "$TMP/alice" 2>&1)
expect_eq "a private key is refused (exit 1)" "$?" 1
expect_match "... saying so" "$out" "private key; give the .pub file"
printf 'ssh-ed25519 AAAAnotbase64!!\n' >"$TMP/bad.pub"
out=$(sl "$ACME" ssh-key add bad --file "$TMP/bad.pub" 2>&1)
expect_match "a key whose body is not base64 is refused" "$out" "not base64"
r=$(api "$ACME" POST /v1/ssh-keys '{"name":"x","key":"ssh-foo AAAA"}')
expect_eq "API: unknown key type 400" "$(status_of "$r")" 400
expect_eq "bad keys changed nothing" "$(sl "$ACME" ssh-key list --json | jq length)" 1
sl "$BETA" ssh-key add home --file "$TMP/bob.pub" >/dev/null
expect_eq "keys are per user: alice sees only hers" "$(sl "$ACME" ssh-key list --json | jq -r '.[].name')" laptop
r=$(api "$ACME" POST /v1/instances '{"gpus":1,"ssh_key":"home"}')
expect_eq "another user's key cannot be named: 404" "$(status_of "$r")" 404

# ---- images: the driver need is checked at placement ----
sl "$ADMIN" image add cuda124 --ref localhost/suanli/demo:1 --default --description "PyTorch, CUDA 12.4" \
	--cuda 12.4 --min-driver 550.54 >/dev/null
sl "$ADMIN" image add future --ref localhost/suanli/demo:2 --cuda 13.0 --min-driver 999.1 >/dev/null
expect_eq "the catalog shows CUDA, driver need and description" \
	"$(sl "$ACME" image list --json | jq -c '[.[] | select(.name == "cuda124") | .cuda, .min_driver, .description]')" \
	'["12.4","550.54","PyTorch, CUDA 12.4"]'
r=$(api "$ACME" POST /v1/instances '{"gpus":1,"image":"future"}')
expect_eq "an image needing a newer driver than every node has: 409" "$(status_of "$r")" 409
expect_match "... with the reason (driver need, a node's driver)" "$(body_of "$r")" "needs driver >= 999.1.*has driver"
expect_eq "... and nothing was created" "$(body_of "$(api "$ACME" GET /v1/instances)" | jq length)" 0

api "$ADMIN" POST /v1/tenants '{"name":"quo","regions":["r1"],"quotas":{"h100-sxm":4}}' >/dev/null
QUO=$(body_of "$(api "$ADMIN" POST /v1/tokens '{"role":"tenant","tenant":"quo"}')" | jq -r .token)
"$SUANLI" topup --server "$URL" --token "$ADMIN" --tenant quo --amount 10000000 >/dev/null
r=$(api "$QUO" POST /v1/instances '{"gpus":8}')
expect_eq "an instance beyond the tenant's quota: 403" "$(status_of "$r")" 403
expect_match "... naming the quota" "$(body_of "$r")" "quota of 4 h100-sxm GPUs would be exceeded"
expect_eq "... and nothing was created" "$(body_of "$(api "$QUO" GET /v1/instances)" | jq length)" 0

# ---- create: placed on a2 (a1's driver is too old for the default image) ----
out=$(sl "$ACME" instance create --gpus 8 --model h100-sxm --volume 10 --port 8888 --ssh-key laptop --json)
ID=$(printf '%s' "$out" | jq -r .id)
expect_eq "instance create --json: id, state, lease" "$(printf '%s' "$out" | jq -r '[.id, .state, (.lease|test("^ls-"))] | join(" ")')" "in-000001 starting true"
expect_eq "placed on a2, the node whose driver the image accepts" "$(printf '%s' "$out" | jq -c .nodes)" '["a2"]'
LEASE=$(printf '%s' "$out" | jq -r .lease)
it=$(item a2 "$ID")
expect_eq "a2's work has the instance to run, with its GPUs, key, ports, disk" \
	"$(printf '%s' "$it" | jq -c '[.state, .epoch, .lease == "'"$LEASE"'", (.gpus|length), .ports, .volume_gib, (.authorized_keys[0]|startswith("ssh-ed25519")), .env.NODE_RANK, .image]')" \
	'["run",1,true,8,[8888],10,true,"0","localhost/suanli/demo:1"]'
expect_eq "... cpus and memory from its share of the node type, host network for a whole node" \
	"$(printf '%s' "$it" | jq -c '[.cpus > 0, .mem_mib > 0, .host_network]')" '[true,true,true]'
expect_eq "a1 is not told about it" "$(item a1 "$ID")" null
hb a2 "$(rep "$ID" 1 pulling '{"progress":"pulling localhost/suanli/demo:1: 3 of 7 layers"}')" >/dev/null
expect_eq "pulling: still starting, and not billed" "$(inst "$ID" '[.state, .cost.gpu_fen, .running_since] | tostring')" '["starting",0,null]'
expect_match "... the pull's progress is shown" "$(sl "$ACME" instance show "$ID")" "3 of 7 layers"
sleep 0.3
hb a2 "$(running_rep "$ID" 1)" >/dev/null
wait_state "$ID" running && ok "every node reports running: the instance runs"
expect_eq "the SSH command to paste" "$(inst "$ID" '.ssh[0].command')" "ssh -p 30022 root@127.0.0.1"
expect_eq "the renter's port" "$(inst "$ID" '.ports[0] | [.port, .host_port] | tostring')" "[8888,30023]"
expect_eq "host key fingerprints for ssh to check" "$(inst "$ID" '.host_keys[0].fingerprint')" "SHA256:hostkeyfingerprintAAAA"
expect_eq "the lease of the instance is active and not metered as a lease" \
	"$(body_of "$(api "$ACME" GET "/v1/leases/$LEASE")" | jq -r .state)" active
r=$(api "$BETA" GET "/v1/instances/$ID")
expect_eq "another tenant cannot see it: 404" "$(status_of "$r")" 404
r=$(api "$BETA" POST "/v1/instances/$ID/stop" '{}')
expect_eq "... nor stop it: 404" "$(status_of "$r")" 404
sleep 1.1

# ---- stop, start on the same node ----
out=$(sl "$ACME" instance stop "$ID")
expect_match "stop: stopping, GPUs released, disks kept" "$out" "stopping.*GPUs released, both disks kept"
expect_eq "the lease is released at the stop" "$(body_of "$(api "$ACME" GET "/v1/leases/$LEASE")" | jq -r .state)" released
expect_eq "a2 is told to stop the container (not remove it)" "$(item a2 "$ID" | jq -r .state)" stop
hb a2 "$(rep "$ID" 1 stopped "$(jq -nc --arg t "$(now)" '{stopped_at: $t, stopped_by: "agent"}')")" >/dev/null
wait_state "$ID" stopped && ok "the agent reports it stopped: stopped"
g1=$(inst "$ID" .cost.gpu_fen)
[ "$g1" -gt 0 ] && ok "GPU time was billed while it ran ($g1 fen)" || bad "GPU time billed" "$g1"
sleep 0.5
expect_eq "stopped: no more GPU billing" "$(inst "$ID" .cost.gpu_fen)" "$g1"
expect_match "stopped: the data disk still costs per day" "$(inst "$ID" .cost.storage_fen_per_day)" '^[1-9][0-9]*$'
out=$(sl "$ACME" instance start "$ID" --json)
expect_eq "start: on the same node, a new lease, a new epoch" \
	"$(printf '%s' "$out" | jq -c '[.state, .nodes, .epoch, .lease != "'"$LEASE"'"]')" '["starting",["a2"],2,true]'
hb a2 "$(rep "$ID" 1 running '{"running_since":"2020-01-01T00:00:00.000Z"}')" >/dev/null
expect_eq "a report of the earlier epoch is ignored" "$(inst "$ID" .state)" starting
hb a2 "$(running_rep "$ID" 2)" >/dev/null
wait_state "$ID" running && ok "running again on a2"
sleep 0.5
sl "$ACME" instance stop "$ID" >/dev/null
hb a2 "$(rep "$ID" 2 stopped)" >/dev/null
wait_state "$ID" stopped

# ---- the home node taken: start refuses and names its choices ----
r=$(api "$BETA" POST /v1/leases '{"gpus":16}')
BLOCK=$(body_of "$r" | jq -r .id)
expect_eq "beta takes both nodes" "$(body_of "$r" | jq -r .state)" active
out=$(sl "$ACME" instance start "$ID" 2>&1)
expect_eq "start with the home node taken fails (exit 1)" "$?" 1
expect_match "... and names --wait, --no-gpu and --migrate" "$out" "--wait.*--no-gpu.*--migrate"
expect_match "... saying the home node's GPUs are taken" "$out" "home node a2 are taken"
expect_eq "... and changed nothing" "$(inst "$ID" .state)" stopped
r=$(api "$ACME" POST "/v1/instances/$ID/start" '{"wait":true}')
expect_eq "start --wait: 202, waiting" "$(status_of "$r") $(body_of "$r" | jq -r .state)" "202 waiting"
api "$BETA" POST "/v1/leases/$BLOCK/release" '{}' >/dev/null
wait_state "$ID" starting && ok "the home node's GPUs came back: the waiting start is placed"
expect_match "... and says why" "$(inst "$ID" .reason)" "free again"
hb a2 "$(running_rep "$ID" 3)" >/dev/null
wait_state "$ID" running
sleep 0.3
sl "$ACME" instance stop "$ID" >/dev/null
hb a2 "$(rep "$ID" 3 stopped)" >/dev/null
wait_state "$ID" stopped

# ---- --no-gpu ----
BLOCK=$(body_of "$(api "$BETA" POST /v1/leases '{"gpus":16}')" | jq -r .id)
out=$(sl "$ACME" instance start "$ID" --no-gpu --json)
expect_eq "start --no-gpu: no lease, no GPUs" "$(printf '%s' "$out" | jq -c '[.state, .mode, .lease]')" '["starting","no-gpu",null]'
it=$(item a2 "$ID")
expect_eq "... the agent runs it without GPUs" "$(printf '%s' "$it" | jq -c '[.state, .lease, .gpus, .host_network]')" '["run","",[],false]'
hb a2 "$(running_rep "$ID" 4)" >/dev/null
wait_state "$ID" running
sleep 1.1
sl "$ACME" instance stop "$ID" >/dev/null
hb a2 "$(rep "$ID" 4 stopped)" >/dev/null
wait_state "$ID" stopped
n1=$(inst "$ID" .cost.no_gpu_fen)
expect_match "no-GPU time billed at its own price" "$n1" '^[1-9][0-9]*$'
api "$BETA" POST "/v1/leases/$BLOCK/release" '{}' >/dev/null

# ---- --migrate: a2 taken, a1 free; both disks relayed and checked ----
# A1's driver is too old for the image: let the image accept it for the move.
sl "$ADMIN" image add cuda124 --ref localhost/suanli/demo:1 --min-driver 535 >/dev/null
BLOCK=$(body_of "$(api "$BETA" POST /v1/leases '{"gpus":8}')" | jq -r .id)
bnode=$(body_of "$(api "$BETA" GET "/v1/leases/$BLOCK")" | jq -r '.placement[0].node')
if [ "$bnode" != a2 ]; then
	B2=$(body_of "$(api "$BETA" POST /v1/leases '{"gpus":8}')" | jq -r .id)
	api "$BETA" POST "/v1/leases/$BLOCK/release" '{}' >/dev/null
	BLOCK=$B2
fi
expect_eq "beta holds a2 only" "$(body_of "$(api "$BETA" GET "/v1/leases/$BLOCK")" | jq -r '.placement[0].node')" a2
out=$(sl "$ACME" instance start "$ID" --migrate --json)
expect_eq "start --migrate: to a1" "$(printf '%s' "$out" | jq -c '[.state, .nodes]')" '["starting",["a1"]]'
expect_eq "the old node exports" "$(item a2 "$ID" | jq -r .state)" export
expect_eq "the new node is told nothing until both disks are here" "$(item a1 "$ID")" null
head -c 2500000 /dev/urandom >"$TMP/system.tar"
head -c 300000 /dev/urandom >"$TMP/data.tar"
upload() { # PART FILE: pieces of 1 MiB
	local part=$1 f=$2 size off=0
	size=$(stat -c %s "$f")
	while [ $off -lt "$size" ]; do
		tail -c +$((off + 1)) "$f" | head -c 1048576 >"$TMP/piece"
		r=$(curl -s -o "$TMP/body" -w '%{http_code}' -H "Authorization: Bearer ${CRED[a2]}" \
			-H 'Content-Type: application/octet-stream' --data-binary @"$TMP/piece" \
			"$URL/v1/agent/migrations/$ID/$part?offset=$off")
		[ "$r" = 200 ] || { echo "     upload $part at $off: $r $(cat "$TMP/body")"; return 1; }
		off=$(jq .size "$TMP/body")
	done
}
upload system "$TMP/system.tar" && ok "the old node uploads the system disk in 1 MiB pieces"
r=$(curl -s -o "$TMP/body" -w '%{http_code}' -H "Authorization: Bearer ${CRED[a2]}" --data-binary x \
	"$URL/v1/agent/migrations/$ID/data?offset=99")
expect_eq "a piece at a wrong offset: 409 with the size" "$r $(jq .size "$TMP/body")" "409 0"
r=$(curl -s -o "$TMP/body" -w '%{http_code}' -H "Authorization: Bearer ${CRED[a1]}" --data-binary x \
	"$URL/v1/agent/migrations/$ID/data?offset=0")
expect_eq "the new node may not upload: 403" "$r" 403
upload data "$TMP/data.tar"
sha() { sha256sum "$1" | cut -d' ' -f1; }
r=$(api "${CRED[a2]}" POST "/v1/agent/migrations/$ID/data/done" \
	"{\"size\":300000,\"sha256\":\"$(printf '0%.0s' $(seq 64))\"}")
expect_eq "a wrong checksum: 409" "$(status_of "$r")" 409
expect_eq "... and the new node is still told nothing" "$(item a1 "$ID")" null
upload data "$TMP/data.tar"
r=$(api "${CRED[a2]}" POST "/v1/agent/migrations/$ID/system/done" "{\"size\":2500000,\"sha256\":\"$(sha "$TMP/system.tar")\"}")
expect_eq "system disk done, checksum checked: 200" "$(status_of "$r")" 200
r=$(api "${CRED[a2]}" POST "/v1/agent/migrations/$ID/data/done" "{\"size\":300000,\"sha256\":\"$(sha "$TMP/data.tar")\"}")
expect_eq "data disk done: 200" "$(status_of "$r")" 200
hb a2 "$(rep "$ID" 5 exported)" >/dev/null
it=$(item a1 "$ID")
expect_eq "now the new node runs it, importing from the old" "$(printf '%s' "$it" | jq -c '[.state, .migrate_from]')" '["run","a2"]'
download() { # PART OUT
	local off=0 size=1
	: >"$2"
	while [ $off -lt $size ]; do
		curl -s -D "$TMP/h" -H "Authorization: Bearer ${CRED[a1]}" \
			"$URL/v1/agent/migrations/$ID/$1?offset=$off&len=1048576" >>"$2"
		size=$(sed -n 's/^X-Suanli-Size: *\([0-9]*\).*/\1/ip' "$TMP/h")
		off=$(stat -c %s "$2")
		[ -n "$size" ] || return 1
	done
	sed -n 's/^X-Suanli-Sha256: *\([0-9a-f]*\).*/\1/ip' "$TMP/h"
}
s1=$(download system "$TMP/system.got")
expect_eq "the new node downloads the system disk: same bytes, the header's checksum" \
	"$(sha "$TMP/system.got") $s1" "$(sha "$TMP/system.tar") $(sha "$TMP/system.tar")"
s2=$(download data "$TMP/data.got")
expect_eq "... and the data disk" "$(sha "$TMP/data.got")" "$(sha "$TMP/data.tar")"
r=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer ${CRED[a2]}" "$URL/v1/agent/migrations/$ID/data?offset=0")
expect_eq "the old node may not download: 403" "$r" 403
hb a1 "$(rep "$ID" 5 importing)" >/dev/null
expect_eq "importing: still starting" "$(inst "$ID" .state)" starting
hb a1 "$(running_rep "$ID" 5)" >/dev/null
wait_state "$ID" running && ok "the new node runs it: running on a1"
# ---- a job inside the instance; suanli instance ssh ----
out=$("$SUANLI" job run --server "$URL" --token "$ACME" --instance "$ID" --json -- nvidia-smi -L)
expect_eq "job run --instance: on the instance's lease" "$(printf '%s' "$out" | jq -r '.instance + " " + .lease')" \
	"$ID $(inst "$ID" .lease)"
JOB=$(printf '%s' "$out" | jq -r .id)
expect_eq "... the agent runs it inside the instance's container" \
	"$(work a1 | jq -c --arg j "$JOB" '[.work[] | select(.job == $j) | .instance][0]')" "\"$ID\""
mkdir -p "$TMP/bin"
printf '#!/bin/sh\necho "ssh $*"\n' >"$TMP/bin/ssh"
chmod +x "$TMP/bin/ssh"
expect_eq "instance ssh runs ssh with the instance's port and host" \
	"$(PATH="$TMP/bin:$PATH" sl "$ACME" instance ssh "$ID" -- hostname)" "ssh -p 30022 root@127.0.0.1 hostname"
expect_eq "the old node removes its copy now" "$(item a2 "$ID" | jq -r .state)" remove
hb a2 "$(rep "$ID" 5 removed)" >/dev/null
sleep 0.3
expect_eq "... once removed it is told nothing more" "$(item a2 "$ID")" null
[ ! -e "$DATA/migrations/$ID" ] && ok "the staged disks are deleted" || bad "staged disks deleted" "$(ls "$DATA/migrations/$ID")"
api "$BETA" POST "/v1/leases/$BLOCK/release" '{}' >/dev/null
sleep 0.3
sl "$ACME" instance stop "$ID" >/dev/null
hb a1 "$(rep "$ID" 5 stopped)" >/dev/null
wait_state "$ID" stopped && ok "stopped on its new home a1"
expect_eq "its job was cancelled with its lease" "$(body_of "$(api "$ACME" GET "/v1/jobs/$JOB")" | jq -r .state)" cancelled
r=$(api "$ACME" POST /v1/jobs "{\"instance\":\"$ID\",\"argv\":[\"true\"]}")
expect_eq "a job inside a stopped instance: 409" "$(status_of "$r")" 409
# A migration whose new node cannot import: failed, back home, nothing lost.
BLOCK=$(body_of "$(api "$BETA" POST /v1/leases '{"gpus":8}')" | jq -r .id)
if [ "$(body_of "$(api "$BETA" GET "/v1/leases/$BLOCK")" | jq -r '.placement[0].node')" != a1 ]; then
	B2=$(body_of "$(api "$BETA" POST /v1/leases '{"gpus":8}')" | jq -r .id)
	api "$BETA" POST "/v1/leases/$BLOCK/release" '{}' >/dev/null
	BLOCK=$B2
fi
out=$(sl "$ACME" instance start "$ID" --migrate --json)
expect_eq "a second migration: a1 to a2" "$(printf '%s' "$out" | jq -c '[.state, .nodes]')" '["starting",["a2"]]'
upload_from() { # NODE PART FILE
	curl -s -o /dev/null -H "Authorization: Bearer ${CRED[$1]}" --data-binary @"$3" "$URL/v1/agent/migrations/$ID/$2?offset=0"
	api "${CRED[$1]}" POST "/v1/agent/migrations/$ID/$2/done" "{\"size\":$(stat -c %s "$3"),\"sha256\":\"$(sha "$3")\"}" >/dev/null
}
head -c 1000 /dev/urandom >"$TMP/small.tar"
upload_from a1 system "$TMP/small.tar"
upload_from a1 data "$TMP/small.tar"
hb a1 "$(rep "$ID" 6 exported)" >/dev/null
expect_eq "the new node is told to import" "$(item a2 "$ID" | jq -r .migrate_from)" a1
hb a2 "$(rep "$ID" 6 failed '{"error":"sha256 mismatch for system"}')" >/dev/null
wait_state "$ID" failed && ok "the new node could not import: failed"
expect_eq "... back on its old home a1, whose copy stays" "$(inst "$ID" '.nodes|tostring')" '["a1"]'
expect_match "... the reason names the error and the abandoned migration" "$(inst "$ID" .reason)" "sha256 mismatch.*migration abandoned, the disks stay on a1"
expect_eq "... a1 is told to keep it stopped, a2 nothing more" "$(item a1 "$ID" | jq -r .state) $(item a2 "$ID")" "stop null"
[ ! -e "$DATA/migrations/$ID" ] && ok "... the staged copies are deleted" || bad "staged copies deleted"
api "$BETA" POST "/v1/leases/$BLOCK/release" '{}' >/dev/null

# ---- idle stop from injected utilisation; a guest stop ----
out=$(sl "$ACME" instance create --gpus 8 --auto-stop-idle 10s --json)
ID2=$(printf '%s' "$out" | jq -r .id)
N2=$(printf '%s' "$out" | jq -r '.nodes[0]')
hb "$N2" "$(running_rep "$ID2" 1)" 0 >/dev/null
wait_state "$ID2" running
hb "$N2" "$(running_rep "$ID2" 1)" 50 >/dev/null
hb "$N2" "$(running_rep "$ID2" 1)" 0 >/dev/null
idle_stopped() { hb "$N2" "$(running_rep "$ID2" 1)" 0 >/dev/null; [ "$(inst "$ID2" .state)" != running ]; }
wait_until 40 idle_stopped
expect_match "all GPUs below 1% for the set time: stopped, with the reason" "$(inst "$ID2" .reason)" "^idle: every GPU below 1% utilisation for 10s"
expect_match "instance show says so" "$(sl "$ACME" instance show "$ID2")" "idle: every GPU below 1%"
hb "$N2" "$(rep "$ID2" 1 stopped)" >/dev/null
wait_state "$ID2" stopped
out=$(sl "$ACME" instance start "$ID2" --json)
hb "$N2" "$(running_rep "$ID2" 2)" >/dev/null
wait_state "$ID2" running
sleep 0.2
hb "$N2" "$(rep "$ID2" 2 stopped "$(jq -nc --arg t "$(now)" '{stopped_at: $t, stopped_by: "guest"}')")" >/dev/null
wait_state "$ID2" stopped && ok "the container ended by itself (guest): stopped"
expect_match "... the history says the guest ended it" "$(inst "$ID2" '.history | map(.reason) | join(";")')" "stopped from inside"
expect_eq "... and its lease is released" "$(inst "$ID2" .lease)" null

# ---- release ----
out=$(sl "$ACME" instance release "$ID2")
expect_match "release says the data disk is deleted (none here)" "$out" "containers removed \(no data disk\)"
expect_eq "the node is told to remove it" "$(item "$N2" "$ID2" | jq -r .state)" remove
hb "$N2" "$(rep "$ID2" 2 removed)" >/dev/null
wait_state "$ID2" released && ok "removed on the node: released"
r=$(api "$ACME" POST "/v1/instances/$ID2/start" '{}')
expect_eq "a released instance does not start: 409" "$(status_of "$r")" 409

# ---- balance exhausted: stopped after grace, data kept, then released after the retention ----
api "$ADMIN" POST /v1/tenants '{"name":"poor","regions":["r1"]}' >/dev/null
POOR=$(body_of "$(api "$ADMIN" POST /v1/tokens '{"role":"tenant","tenant":"poor","user":"pat"}')" | jq -r .token)
"$SUANLI" topup --server "$URL" --token "$ADMIN" --tenant poor --amount 30000 >/dev/null
r=$(api "$POOR" POST /v1/instances '{"gpus":8,"volume_gib":5}')
ID3=$(body_of "$r" | jq -r .id)
N3=$(body_of "$r" | jq -r '.nodes[0]')
expect_eq "poor's instance is placed" "$(status_of "$r")" 201
hb "$N3" "$(running_rep "$ID3" 1)" >/dev/null
pinst() { body_of "$(api "$POOR" GET "/v1/instances/$ID3")" | jq -r "$1"; }
wait_until 10 eval '[ "$(pinst .state)" = running ]'
# A price rise from now on drains poor's balance in seconds.
sl "$ADMIN" price set --model h100-sxm --plan hourly --price 360000000 >/dev/null
stopped_for_balance() { hb "$N3" "$(running_rep "$ID3" 1)" >/dev/null; [ "$(pinst .state)" = stopping ]; }
wait_until 30 stopped_for_balance && ok "balance exhausted: the instance stops after the grace period"
expect_match "... the reason says so and that the disks are kept" "$(pinst .reason)" "balance exhausted.*disks kept"
expect_eq "... stopped, never deleted: no remove for the node" "$(item "$N3" "$ID3" | jq -r .state)" stop
hb "$N3" "$(rep "$ID3" 1 stopped)" >/dev/null
wait_until 10 eval '[ "$(pinst .state)" = stopped ]'
expect_match "the renter is told when it will be released" "$(pinst .notice)" "released \(containers and the data disk deleted\) at"
b=$("$SUANLI" balance --server "$URL" --token "$POOR" --tenant poor --json)
expect_match "balance shows what the stopped instance still costs per day" \
	"$(printf '%s' "$b" | jq -c '[.instances[0].id, .instances[0].state, .instances_fen_per_day > 0]')" "\\[\"$ID3\",\"stopped\",true\\]"
expect_match "... and the notice" "$(printf '%s' "$b" | jq -r .instances_notice)" "released"
s1=$(pinst .cost.storage_fen)
wait_until 20 eval '[ "$(pinst .state)" = releasing ]' && ok "still below zero after the retention: released"
expect_match "... with the reason" "$(pinst .reason)" "retention"
expect_eq "the node removes it now" "$(item "$N3" "$ID3" | jq -r .state)" remove
sl "$ADMIN" price set --model h100-sxm --plan hourly --price 3600 >/dev/null

# ---- audit: every instance operation recorded ----
acts=$(body_of "$(api "$ADMIN" GET '/v1/audit/log?limit=1000')" | jq -r '[.[] | select(.target | startswith("in-")) | .action] | unique | join(" ")')
for a in instance.create instance.stop instance.start instance.release instance.running instance.idle_stop; do
	expect_match "audit has $a" "$acts" "(^| )$a( |$)"
done

# ---- the oracle: invoice lines recomputed from the instances' own instants ----
month=$(date -u +%Y-%m)
inv=$(curl -s -H "Authorization: Bearer $ACME" "$URL/v1/tenants/acme/invoices/$month")
insts=$(body_of "$(api "$ACME" GET /v1/instances)")
prices=$(body_of "$(api "$ADMIN" GET '/v1/prices?history=true')")
res=$(python3 - "$inv" "$insts" <<'PY'
import json, sys, calendar, datetime
inv, insts = json.loads(sys.argv[1]), json.loads(sys.argv[2])
def ms(t):
    if not t:
        return None
    d = datetime.datetime.fromisoformat(t.replace("Z", "+00:00"))
    return (d - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)) // datetime.timedelta(milliseconds=1)
def half_up(n, d):
    return (2 * n + d) // (2 * d)
now = datetime.datetime.now(datetime.timezone.utc)
month_ms = calendar.monthrange(now.year, now.month)[1] * 86400000
lines = {}
for l in inv["lines"]:  # one line per price and month: summed per meter
    s = lines.setdefault(l["lease"], {"quantity": 0, "amount": 0, "kind": l["kind"]})
    s["quantity"] += l["quantity"]
    s["amount"] += l["amount"]
errs, n = [], 0
for i in insts:
    for kind, key, unit, price, div in (("gpu", "gpu", "gpus", 3600, 3600000), ("nogpu", "no_gpu", "units", 36000, 3600000)):
        q = 0
        for s in i["billing"][key]:
            # a run still open counts up to the invoice's as_of
            q += ((ms(s["to"]) if s["to"] else ms(inv["as_of"])) - ms(s["from"])) * s[unit]
        lid = i["id"] + "." + kind
        if q == 0:
            if lid in lines: errs.append("%s: a line for nothing" % lid)
            continue
        l = lines.get(lid)
        n += 1
        if not l: errs.append("%s: no line" % lid); continue
        if l["quantity"] != q: errs.append("%s: quantity %d, instants say %d" % (lid, l["quantity"], q))
        if l["amount"] != half_up(q * price, div): errs.append("%s: amount %d, oracle %d" % (lid, l["amount"], half_up(q * price, div)))
    st = i["billing"]["storage"]
    if i["volume_gib"]:
        lid = i["id"] + ".disk"
        l = lines.get(lid)
        n += 1
        if not l: errs.append("%s: no line" % lid); continue
        to = ms(st["to"]) if st["to"] else ms(inv["as_of"])
        q = (to - ms(st["from"])) * st["gib"]
        if l["quantity"] != q: errs.append("%s: quantity %d, instants say %d" % (lid, l["quantity"], q))
        if l["amount"] != half_up(q * 3000, month_ms): errs.append("%s: amount %d, oracle %d" % (lid, l["amount"], half_up(q * 3000, month_ms)))
        if l["kind"] != "storage": errs.append("%s: kind %s" % (lid, l["kind"]))
print("%d lines checked; %s" % (n, "; ".join(errs) if errs else "all equal"))
PY
)
expect_match "oracle: every instance invoice line equals its recomputation from the instants" "$res" "^[1-9][0-9]* lines checked; all equal$"
expect_eq "invoice lines of their own kinds" \
	"$(printf '%s' "$inv" | jq -c '[.lines[] | select(.lease | startswith("in-")) | .kind] | unique')" '["no-gpu","storage","usage"]'
expect_eq "no lease line for the instances' leases (their GPU time is the instances')" \
	"$(printf '%s' "$inv" | jq '[.lines[] | select(.lease | startswith("ls-"))] | length')" 0

# ---- a restart keeps everything ----
before=$(body_of "$(api "$ACME" GET "/v1/instances/$ID")" | jq -c 'del(.cost, .notice)')
stop_daemon
start_daemon "$TMP/log2" --data "$DATA" --heartbeat 1 --unreachable-after 3600 --down-after 7200 \
	--grace 2 --instance-retention 3s || bad "daemon restarts" "$(cat "$TMP/log2")"
after=$(body_of "$(api "$ACME" GET "/v1/instances/$ID")" | jq -c 'del(.cost, .notice)')
expect_eq "after a restart the instance is the same" "$after" "$before"
expect_eq "... and its node is still told to keep it stopped" "$(item a1 "$ID" | jq -r .state)" stop
expect_eq "a released instance shows after the restart (from the history)" "$(inst "$ID2" .state)" released
expect_match "... and the instance list still has it" "$(body_of "$(api "$ACME" GET /v1/instances)" | jq -r '[.[].id] | join(" ")')" "$ID2"
stop_daemon || bad "daemon exits cleanly"
if command -v sqlite3 >/dev/null; then
	expect_eq "the released instance's row moved to instance_history" \
		"$(sqlite3 "$DATA/suanli.db" "SELECT (SELECT count(*) FROM instance_history WHERE id = '$ID2') || ' ' || (SELECT count(*) FROM instances WHERE id = '$ID2')")" "1 0"
fi
grep -q "ERROR\|AddressSanitizer" "$TMP/log" "$TMP/log2" && bad "no errors in the daemon's log" "$(grep "ERROR\|AddressSanitizer" "$TMP/log" "$TMP/log2" | head -3)"
finish
