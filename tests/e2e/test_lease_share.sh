#!/usr/bin/env bash
# test_lease_share.sh - leases for a share of one GPU ("gpu_milli") and for
# exact CPUs and memory ("cpu_milli", "memory_mib") through the real API and
# the CLI: two 500-thousandths leases share one GPU, a third of 600 does not
# fit there, shares go only to shareable nodes, the share is stored and
# shown, /metrics counts its part, and bad values are refused with a clear
# error and nothing stored.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
DATA="$TMP/data"
cat >"$TMP/fleet.yaml" <<'EOF'
sites:
  - name: s
    region: cn-east
    fabrics:
      - name: f
        kind: roce
        gbps: 100
        leaves:
          - name: l1
            nodes:
              - {name: whole-01, type: pcie-l40s-8}
              - {name: h100-01, type: hgx-h100-8}
              - {name: share-01, type: pcie-l40s-8, shareable: true}
EOF
"$SUANLID" init --data "$DATA" >/dev/null || { bad "init"; finish; exit 1; }
A=$(cat "$DATA/admin.token")
if ! start_daemon "$TMP/log" --data "$DATA" --fleet "$TMP/fleet.yaml" --simulate; then
	bad "daemon starts" "$(cat "$TMP/log")"
	finish
	exit 1
fi
api "$A" POST /v1/tenants '{"name":"acme"}' >/dev/null
T=$(body_of "$(api "$A" POST /v1/tokens '{"role":"tenant","tenant":"acme"}')" | jq -r .token)
nleases() { body_of "$(api "$A" GET /v1/leases)" | jq length; }
allocated() { body_of "$(api "$A" GET /metrics)" | sed -n 's/^suanli_gpu_allocated_milli //p'; }

r=$(api "$T" POST /v1/leases '{"gpu_milli":500}')
expect_eq "a 500-thousandths share is created" "$(status_of "$r")" 201
a=$(body_of "$r")
expect_eq "and active at once" "$(jq -r .state <<<"$a")" active
expect_eq "on the shareable node, one GPU, 500 of it" \
	"$(jq -c '[.placement[0].node, .placement[0].milli, (.placement[0].gpus | length)]' <<<"$a")" \
	'["share-01",500,0]'
gpu_a=$(jq -r '.placement[0].gpu' <<<"$a")
r=$(api "$T" POST /v1/leases '{"gpus":0,"gpu_milli":500}')
b=$(body_of "$r")
expect_eq "a second 500 shares the same GPU" "$(jq -c '[.placement[0].node, .placement[0].gpu]' <<<"$b")" \
	"[\"share-01\",$gpu_a]"
r=$(api "$T" POST /v1/leases '{"gpu_milli":600}')
c=$(body_of "$r")
expect_eq "a third of 600 is placed" "$(jq -r .state <<<"$c")" active
expect_eq "but not on that GPU (it has nothing left)" \
	"$(jq -r '[.placement[0].node, .placement[0].gpu] | (.[0] == "share-01" and .[1] == '"$gpu_a"')' <<<"$c")" false
expect_eq "and shares go only to shareable nodes" "$(jq -r '.placement[0].node' <<<"$c")" share-01
expect_eq "/metrics counts each share's part" "$(allocated)" 1600
n=$(body_of "$(api "$A" GET /v1/nodes/share-01)")
expect_eq "the shared GPU is wholly used, the other shows its 600" \
	"$(jq -c '[.gpu_state[] | select(.state != "free") | .used_milli // 1000] | sort' <<<"$n")" '[600,1000]'

id_a=$(jq -r .id <<<"$a")
s=$(body_of "$(api "$T" GET "/v1/leases/$id_a")")
expect_eq "lease show keeps the request's share" "$(jq -c '.request.gpu_milli' <<<"$s")" 500
expect_match "and explains it" "$(jq -r .explanation <<<"$s")" "share of GPU $gpu_a \\(500/1000\\)"

# CPUs and memory, exact: on this fleet's types (whole cores) 2500
# thousandths take 3 cores; memory in MiB as asked.
r=$(api "$T" POST /v1/leases '{"gpus":1,"cpu_milli":2500,"memory_mib":4096}')
expect_eq "whole GPU with exact CPUs and memory" \
	"$(body_of "$r" | jq -c '[.state, .placement[0].cpus, .placement[0].mem_mib]')" '["active",3,4096]'
r=$(api "$T" POST /v1/leases '{"cpu_milli":1000,"memory_mib":1024}')
expect_eq "CPUs and memory without GPUs" \
	"$(body_of "$r" | jq -c '[.state, (.placement[0].gpus | length), .placement[0].cpus]')" '["active",0,1]'

before=$(nleases)
bad_req() { # NAME BODY PATTERN
	local r
	r=$(api "$T" POST /v1/leases "$2")
	expect_match "$1: 400 naming it" "$(status_of "$r") $(body_of "$r" | jq -r '.error.message')" "^400 .*$3"
}
bad_req "a share with whole GPUs" '{"gpus":1,"gpu_milli":500}' "gpu_milli.*cannot be combined with 'gpus' 1"
bad_req "a share of 1000" '{"gpu_milli":1000}' "gpu_milli.*1..999"
bad_req "a share of 0" '{"gpu_milli":0}' "gpu_milli.*1..999"
bad_req "a share that is not a number" '{"gpu_milli":"half"}' "gpu_milli.*integer"
bad_req "a share as a gang" '{"gpu_milli":500,"per_node":1}' "per_node.*whole GPUs"
bad_req "an exclusive share" '{"gpu_milli":500,"exclusive":true}' "exclusive.*whole GPUs"
bad_req "an elastic share" '{"gpu_milli":500,"elastic":{"min":1,"max":2}}' "elastic.*whole GPUs"
bad_req "nothing asked for" '{"gpus":0}' "nothing else is asked for"
bad_req "negative CPUs" '{"gpus":1,"cpu_milli":-1}' "cpu_milli"
r=$(api "$T" POST /v1/leases '{"gpu_milli":500,"models":["h100-sxm"]}')
expect_match "a share of a model no shareable node has: refused, saying so" \
	"$(status_of "$r") $(body_of "$r" | jq -r '.error.message')" "^409 no shareable node has a GPU model among \[h100-sxm\]"
expect_eq "and nothing was stored" "$(nleases)" "$before"
expect_eq "nor allocated" "$(allocated)" 2600

# The CLI's form.
export SUANLI_SERVER="$URL" SUANLI_TOKEN="$T"
out=$("$SUANLI" lease create --gpu-milli 250 --json 2>&1)
expect_eq "suanli lease create --gpu-milli 250" "$(jq -r '.request.gpu_milli' <<<"$out" 2>/dev/null)" 250
id=$(jq -r .id <<<"$out" 2>/dev/null)
expect_match "suanli lease show says it is a share" "$("$SUANLI" lease show "$id" 2>&1)" \
	"a share of one GPU \\(250/1000\\)"
"$SUANLI" lease create --gpus 1 --gpu-milli 500 >/dev/null 2>"$TMP/err"
expect_eq "--gpus with --gpu-milli is a usage error" "$?" 2
expect_match "saying why" "$(cat "$TMP/err")" "exclude each other"

# Billing: a share is billed as the one GPU it runs on (its container sees
# all of it); a lease without GPUs is not metered (docs/billing.md).
api "$A" POST /v1/prices '{"model":"l40s","plan":"hourly","price":1000}' >/dev/null
api "$A" POST /v1/tenants/acme/topups '{"amount":100000}' >/dev/null
sid=$(body_of "$(api "$T" POST /v1/leases '{"gpu_milli":300}')" | jq -r .id)
cid=$(body_of "$(api "$T" POST /v1/leases '{"cpu_milli":500}')" | jq -r .id)
u=$(body_of "$(api "$A" GET /v1/usage)")
expect_eq "a priced share is metered as one GPU" \
	"$(jq -c --arg s "$sid" '[.tenants[].running[] | select(.lease == $s) | .gpus]' <<<"$u")" '[1]'
expect_eq "a lease without GPUs is not metered" \
	"$(jq -c --arg s "$cid" '[.tenants[].running[] | select(.lease == $s)] | length' <<<"$u")" 0
api "$T" POST "/v1/leases/$sid/release" '{}' >/dev/null
api "$T" POST "/v1/leases/$cid/release" '{}' >/dev/null

# Releasing one share gives its part back.
api "$T" POST "/v1/leases/$id_a/release" '{}' >/dev/null
expect_eq "a released share frees its part" "$(allocated)" 2350
stop_daemon || bad "daemon exits cleanly"
finish
