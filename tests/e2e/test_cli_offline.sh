#!/usr/bin/env bash
# The offline commands (fleet check, topo, plan) on the example fleets, run as a
# user would, checking what they print and their exit status.
. "$(dirname "$0")/lib.sh"
EX=$SL_ROOT/examples
DEMO=$EX/demo-fleet.yaml

# run CMD...: sets OUT, ERR and RC
run() { "$@" >"$TMP/out" 2>"$TMP/err"; RC=$?; OUT=$(cat "$TMP/out"); ERR=$(cat "$TMP/err"); }
plan() { run "$SUANLI" plan --fleet "$DEMO" --json "$@"; }

# --- fleet check
run "$SUANLI" fleet check --json "$DEMO"
expect_eq "fleet check demo: exit 0" "$RC" 0
expect_eq "fleet check demo: 76 nodes" "$(jq .nodes <<<"$OUT")" 76
expect_eq "fleet check demo: 464 GPUs" "$(jq .gpus <<<"$OUT")" 464
expect_eq "fleet check demo: 3 regions" "$(jq .regions <<<"$OUT")" 3
expect_eq "fleet check demo: 72 gb200" "$(jq .gpus_by_model.gb200 <<<"$OUT")" 72
AFTER="$RC $OUT"
run "$SUANLI" --json fleet check "$DEMO"
expect_eq "suanli --json fleet check: the same as --json after the command" "$RC $OUT" "$AFTER"
run "$SUANLI" --server http://127.0.0.1:1 fleet check "$DEMO"
expect_match "--server before an offline command: exit 2, saying it works offline" "$RC $ERR" \
	"^2 suanli: 'fleet' works offline; --server does not apply to it"
run "$SUANLI" fleet check "$EX/fleet-custom-types.yaml"
expect_eq "fleet check custom types: exit 0" "$RC" 0
expect_match "fleet check human summary" "$OUT" "6 nodes, 48 GPUs"

cat >"$TMP/bad.yaml" <<'YAML'
sites:
  - name: s1
    region: r1
    fabrics:
      - name: f1
        kind: infiniband
        gbps: 400
        leaves:
          - name: l1
            nodes:
              - {name: n1, type: hgx-h100-9}
YAML
run "$SUANLI" fleet check "$TMP/bad.yaml"
expect_eq "bad fleet file: exit 1" "$RC" 1
expect_match "bad fleet file: file:line:col" "$ERR" "bad.yaml:11:[0-9]+:"
expect_match "bad fleet file: says what" "$ERR" "hgx-h100-9"

# --- topo
run "$SUANLI" topo --fleet "$DEMO" fza-h100-001
expect_eq "topo node: exit 0" "$RC" 0
expect_match "topo h100: NVSwitch links shown as NV18" "$OUT" "NV18"
expect_match "topo h100: 8 GPU rows" "$OUT" "GPU7"
run "$SUANLI" topo --type pcie-h100nvl-8
expect_match "topo h100nvl: bridged pairs NV12" "$OUT" "NV12"
run "$SUANLI" topo --fleet "$DEMO" no-such-node
expect_eq "topo unknown node: exit 1" "$RC" 1
expect_match "topo unknown node: says which" "$ERR" "no-such-node"

# --- plan, single node
plan --gpus 8 --model h100-sxm
expect_eq "plan 8xH100: exit 0" "$RC" 0
expect_eq "plan 8xH100: one whole node" "$(jq -c '[.placement[] | .gpus | length]' <<<"$OUT")" "[8]"
expect_eq "plan 8xH100: not the colocated node" "$(jq -r '.placement[0].node' <<<"$OUT")" fza-h100-001
plan --gpus 2 --model h100-nvl
expect_eq "plan 2xH100 NVL: an NVLink-bridged pair" "$(jq -c '.placement[0].gpus' <<<"$OUT")" "[0,1]"
expect_eq "plan 2xH100 NVL: 600 GB/s" "$(jq '.score.bottleneck_gbps' <<<"$OUT")" 600
plan --gpus 4 --model ascend-910
expect_match "plan 4x910: one HCCS ring" "$(jq -c '.placement[0].gpus' <<<"$OUT")" '^\[(0,1,2,3|4,5,6,7)\]$'
plan --gpus 8 --model h100-sxm --tenant acme --owned
expect_eq "plan owned: the tenant's own node" "$(jq -r '.placement[0].node' <<<"$OUT")" fza-h100-008

# --- plan with a usage state
plan --gpus 2 --model h100-sxm --state "$EX/state-busy.json"
expect_eq "plan with state: best fit takes the node's last pair" \
	"$(jq -c '[.placement[0].node, .placement[0].gpus]' <<<"$OUT")" '["fza-h100-001",[6,7]]'
plan --gpu-milli 250 --state "$EX/state-busy.json"
expect_eq "plan share: packs onto the half-used GPU" \
	"$(jq -c '[.placement[0].node, .placement[0].gpu]' <<<"$OUT")" '["fza-l40s-01",0]'
echo '[{"node": "ghost", "gpus": [0]}]' >"$TMP/state.json"
plan --gpus 1 --state "$TMP/state.json"
expect_eq "plan bad state: exit 1" "$RC" 1
expect_match "plan bad state: names the node" "$ERR" "ghost"

# --- plan, gangs
plan --gpus 16 --model gb200
expect_eq "plan 16xGB200: 4 trays" "$(jq '.placement | length' <<<"$OUT")" 4
expect_eq "plan 16xGB200: one NVLink domain" "$(jq -r '[.placement[].nvlink_domain] | unique | length' <<<"$OUT")" 1
plan --gpus 72 --model gb200
expect_eq "plan 72xGB200: the whole rack" "$(jq '.placement | length' <<<"$OUT")" 18
plan --gpus 32 --model h100-sxm
expect_eq "plan 32xH100: 4 nodes" "$(jq '.placement | length' <<<"$OUT")" 4
expect_eq "plan 32xH100: one leaf" "$(jq '.score.leaves' <<<"$OUT")" 1

# --- refusals and bad arguments
plan --gpus 8 --model h100-sxm --region cn-north
expect_eq "plan refused: exit 1" "$RC" 1
expect_eq "plan refused: names the constraint" "$(jq -r '.refused.constraint' <<<"$OUT")" region
run "$SUANLI" plan --fleet "$DEMO" --gpus 8 --model h100-sxm --region cn-north
expect_match "plan refused (human): explains" "$OUT" "Cannot place"
run "$SUANLI" plan --gpus 2
expect_eq "plan without --fleet: usage error" "$RC" 2
run "$SUANLI" plan --fleet "$DEMO" --gpus two
expect_match "plan --gpus two: says what is wrong" "$ERR" "--gpus expects a whole number"
plan --gpus 2 --model h1000
expect_eq "plan unknown model: exit 2" "$RC" 2
expect_match "plan unknown model: names it" "$ERR" "h1000"
run "$SUANLI" plan --help
expect_match "plan --help" "$OUT" "usage: suanli plan"

# --- hostile input: each a clear message on stderr and a non-zero exit
plan --gpus 100000
expect_eq "plan --gpus 100000 (the bound): refused, exit 1" "$RC" 1
expect_eq "plan --gpus 100000: a gang larger than the fleet" "$(jq -r '.refused.constraint' <<<"$OUT")" gang
run "$SUANLI" plan --fleet "$DEMO" --gpus 100001
expect_eq "plan --gpus past the bound: exit 2" "$RC" 2
expect_match "plan --gpus past the bound: says the range" "$ERR" "from 1 to 100000"
run "$SUANLI" plan --fleet "$DEMO" --gpus 99999999999999999999999
expect_eq "plan --gpus beyond long: exit 2" "$RC" 2
run "$SUANLI" plan --fleet "$DEMO" --gpus " 8"
expect_eq "plan --gpus with a leading space: exit 2" "$RC" 2
run "$SUANLI" plan --fleet "$DEMO" --gpus 8 --model a,b,c,d,e,f,g,h,i
expect_eq "plan 9 models: exit 2" "$RC" 2
expect_match "plan 9 models: says the bound" "$ERR" "at most 8 models"
run "$SUANLI" plan --fleet "$DEMO" --gpus 8 --model h100-sxm,,l40s
expect_eq "plan empty model name: exit 2 (not 'any model')" "$RC" 2
expect_match "plan empty model name: says so" "$ERR" "empty model name"
run "$SUANLI" plan --fleet "$DEMO" --gpus 8 --owned
expect_eq "plan --owned without --tenant: exit 2" "$RC" 2
run "$SUANLI" plan --fleet "$TMP/no-such.yaml" --gpus 1
expect_eq "plan missing fleet file: exit 1" "$RC" 1
expect_match "plan missing fleet file: says why" "$ERR" "no-such.yaml: cannot open: No such file"
run "$SUANLI" fleet check /dev/zero
expect_eq "fleet check an endless file: exit 1" "$RC" 1
expect_match "fleet check an endless file: says the bound" "$ERR" "larger than 67108864 bytes"
run "$SUANLI" fleet check "$TMP"
expect_eq "fleet check a directory: exit 1" "$RC" 1
expect_match "fleet check a directory: says so" "$ERR" "Is a directory"
: >"$TMP/empty.yaml"
run "$SUANLI" fleet check "$TMP/empty.yaml"
expect_eq "fleet check empty file: exit 1" "$RC" 1
expect_match "fleet check empty file: says so at 1:1" "$ERR" "empty.yaml:1:1: the fleet file is empty"
printf 'sites:\n  - name: s\xff1\n    region: r\n' >"$TMP/latin1.yaml"
run "$SUANLI" fleet check "$TMP/latin1.yaml"
expect_eq "fleet check non-UTF-8: exit 1" "$RC" 1
expect_match "fleet check non-UTF-8: position and what was expected" "$ERR" \
	"latin1.yaml:2:[0-9]+: .*expected UTF-8"
: >"$TMP/empty.json"
plan --gpus 1 --state "$TMP/empty.json"
expect_eq "plan empty state: exit 1" "$RC" 1
expect_match "plan empty state: says so" "$ERR" "state is empty"
printf '[{"node": "fza-h100-001", "gpus": [0]}, {"node": "\xff"}]' >"$TMP/latin1.json"
plan --gpus 1 --state "$TMP/latin1.json"
expect_eq "plan non-UTF-8 state: exit 1" "$RC" 1
expect_match "plan non-UTF-8 state: position" "$ERR" "latin1.json:1:[0-9]+: state is not valid JSON"
printf '%.0s[' $(seq 40) >"$TMP/deep.json"
plan --gpus 1 --state "$TMP/deep.json"
expect_eq "plan deeply nested state: exit 1" "$RC" 1
expect_match "plan deeply nested state: refused before parsing" "$ERR" "deeper than 32 levels"
# 1,000,001 entries: one past PLACE_STATE_MAX_ENTRIES.
{ printf '['; yes '1,' | head -n 1000000 | tr -d '\n'; printf '1]'; } >"$TMP/huge.json"
plan --gpus 1 --state "$TMP/huge.json"
expect_eq "plan state past the entry bound: exit 1" "$RC" 1
expect_match "plan state past the entry bound: says the bound" "$ERR" "1000001 entries; at most 1000000"

# --- times are checked by core's one RFC 3339 parser before any request
for t in 2030-02-31T00:00:00Z 2030-03-01T00:00:60Z 2030-03-01T00:00:00.1234567891Z; do
	run "$SUANLI" reservation create --tenant acme --nodes n1 --start "$t" --end 2030-04-01T00:00:00Z
	expect_eq "reservation create --start $t: usage error" "$RC" 2
	expect_match "reservation create --start $t: says why" "$ERR" "RFC 3339"
done

finish
