#!/usr/bin/env bash
# test_metrics.sh - what an operations team scrapes (docs/monitoring.md): a real
# `suanlid serve --simulate` with one real agent (a1, simulated hardware) and
# one node driven over the API (b1, reporting temperature, power, ECC, an XID
# and a link down), a tenant and a lease; its /metrics answer passes
# `promtool check metrics`, carries the per-node, per-GPU, store, audit and
# tenant series with the right labels and values, and every metric name the
# alert rules (deploy/prometheus) and the dashboard (deploy/grafana) use is in
# it. Without promtool (Debian's prometheus, scripts/deps.sh) it is skipped,
# never passed.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
command -v jq >/dev/null || { echo "jq is needed (scripts/deps.sh)"; exit 1; }
command -v promtool >/dev/null || skip "promtool is not installed (scripts/deps.sh: prometheus)"
RULES="$SL_ROOT/deploy/prometheus/suanli-rules.yml"
DASH="$SL_ROOT/deploy/grafana/suanli.json"
AGENT=""
metrics_cleanup() {
	[ -n "$AGENT" ] && kill -TERM "$AGENT" 2>/dev/null && wait "$AGENT" 2>/dev/null
	ctl_cleanup
}
trap metrics_cleanup EXIT

cat >"$TMP/fleet.yaml" <<'YAML'
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
          - name: l2
            nodes:
              - {name: b1, type: hgx-h100-8}
YAML
DATA="$TMP/data"
"$SUANLID" init --data "$DATA" >/dev/null
ADMIN=$(cat "$DATA/admin.token")
start_daemon "$TMP/log" --data "$DATA" --simulate --heartbeat 1 --fleet "$TMP/fleet.yaml" ||
	{ echo "daemon did not start"; cat "$TMP/log"; exit 1; }
JOIN=$(body_of "$(api "$ADMIN" POST /v1/agent-tokens '{}')" | jq -r .token)

# a1: the real agent on simulated hardware.
"$SUANLI_AGENT" run --server "$URL" --token "$JOIN" --node a1 --simulate hgx-h100-8 \
	--state-dir "$TMP/agent-a1" --heartbeat 1 >"$TMP/agent.log" 2>&1 &
AGENT=$!
# b1: registered and heartbeating over the API, with the figures NVML would give.
MODEL=$(body_of "$(api "$ADMIN" GET /v1/nodes/b1)" | jq -r .model)
MEM=$(body_of "$(api "$ADMIN" GET /v1/catalog)" | jq --arg m "$MODEL" '.gpu_models[] | select(.name == $m) | .mem_gib * 1024')
DISC=$(body_of "$(api "$ADMIN" GET /v1/nodes/b1)" | jq -c --arg m "$MODEL" --argjson mem "$MEM" '
  {source: "simulate", model: $m, driver: "", clique: "",
   gpus: [.topology.numa | to_entries[] | {index: .key, numa: .value, uuid: "", bus_id: "",
          name: "NVIDIA H100 80GB HBM3", memory_mib: $mem, nvlinks: 18}],
   links: .topology.links, nics: .topology.nics}')
r=$(api "$JOIN" POST /v1/agent/register "$(jq -nc --argjson d "$DISC" \
	'{node: "b1", addr: "127.0.0.1", agent_version: "test", boot_id: "boot-b1", discovery: $d}')")
expect_eq "b1 registers over the API" "$(status_of "$r")" 200
CRED=$(body_of "$r" | jq -r .credential)
r=$(api "$CRED" POST /v1/agent/heartbeat '{"boot_id":"boot-b1","work":[],"gpus":[
  {"index":0,"temp_c":71,"power_w":650,"ecc_sbe":3,"ecc_dbe":1,"nvlink_up":16,
   "xid":[{"code":79,"at":"2026-11-30T08:00:01Z"}],"healthy":true},
  {"index":1,"temp_c":40,"power_w":300,"ecc_sbe":0,"ecc_dbe":0,"nvlink_up":18,"healthy":true}]}')
expect_eq "b1's heartbeat with an XID" "$(status_of "$r")" 200
a1_ready() { [ "$(body_of "$(api "$ADMIN" GET /v1/nodes/a1)" | jq -r .agent.registered_at)" != null ]; }
wait_until 30 a1_ready || bad "the agent on a1 registers" "$(tail -5 "$TMP/agent.log")"
api "$ADMIN" POST /v1/tenants '{"name":"acme"}' >/dev/null
api "$ADMIN" POST /v1/tenants/acme/topups '{"amount":123456}' >/dev/null
api "$ADMIN" POST /v1/leases '{"tenant":"acme","gpus":1}' >/dev/null
sleep 1.5 # a heartbeat age of at least one interval
# b1 reports again (no new XID), so a slow start of a1 cannot make it unreachable.
r=$(api "$CRED" POST /v1/agent/heartbeat '{"boot_id":"boot-b1","work":[],"gpus":[
  {"index":0,"temp_c":71,"power_w":650,"ecc_sbe":3,"ecc_dbe":1,"nvlink_up":16},
  {"index":1,"temp_c":40,"power_w":300,"ecc_sbe":0,"ecc_dbe":0,"nvlink_up":18,"healthy":true}]}')
expect_eq "b1's second heartbeat" "$(status_of "$r")" 200

M="$TMP/metrics.txt"
expect_eq "GET /metrics: 200" "$(curl -s -o "$M" -w '%{http_code}' -H "Authorization: Bearer $ADMIN" "$URL/metrics")" 200
out=$(promtool check metrics <"$M" 2>&1)
expect_eq "promtool check metrics finds nothing" "$?:$out" "0:"
has() { grep -Eq -- "$2" "$M" && ok "$1" || bad "$1" "'$2' not in /metrics"; }
has "node state with node, site, leaf" '^suanli_node_state\{node="a1",site="s1",leaf="l1",state="ready"\} 1$'
has "b1 is ready too" '^suanli_node_state\{node="b1",site="s1",leaf="l2",state="ready"\} 1$'
has "heartbeat age of a1" '^suanli_node_heartbeat_age_seconds\{node="a1",site="s1",leaf="l1"\} [0-9.]+$'
has "GPU temperature, dcgm-exporter's name" '^DCGM_FI_DEV_GPU_TEMP\{node="b1",gpu="0"\} 71$'
has "GPU power" '^DCGM_FI_DEV_POWER_USAGE\{node="b1",gpu="0"\} 650$'
has "single-bit ECC" '^DCGM_FI_DEV_ECC_SBE_VOL_TOTAL\{node="b1",gpu="0"\} 3$'
has "double-bit ECC" '^DCGM_FI_DEV_ECC_DBE_VOL_TOTAL\{node="b1",gpu="0"\} 1$'
has "the last XID" '^DCGM_FI_DEV_XID_ERRORS\{node="b1",gpu="0"\} 79$'
has "XIDs counted" '^suanli_gpu_xid_events_total\{node="b1",gpu="0"\} 1$'
has "no XID on GPU 1" '^suanli_gpu_xid_events_total\{node="b1",gpu="1"\} 0$'
has "two NVLinks down on b1 GPU 0" '^suanli_gpu_nvlinks_down\{node="b1",gpu="0"\} 2$'
has "none down on b1 GPU 1" '^suanli_gpu_nvlinks_down\{node="b1",gpu="1"\} 0$'
has "the agent's GPUs have series" '^suanli_gpu_health\{node="a1",gpu="7",state="ok"\} 1$'
has "b1 GPU 0 fails on XID 79" '^suanli_gpu_health\{node="b1",gpu="0",state="failed"\} 1$'
has "instances by state (none yet)" '^suanli_instances\{state="running"\} 0$'
has "... every state has its series" '^suanli_instances\{state="released"\} 0$'
has "store commits timed" '^suanli_store_commit_seconds_count [1-9][0-9]*$'
has "commit histogram" '^suanli_store_commit_seconds_bucket\{le="\+Inf"\} [1-9]'
has "audit entries" '^suanli_audit_entries [1-9][0-9]*$'
has "audit checkpoint age" '^suanli_audit_checkpoint_age_seconds [0-9.]+$'
has "tenant balance in yuan" '^suanli_tenant_balance\{tenant="acme",currency="CNY"\} 1234\.56$'
has "tenant credit line" '^suanli_tenant_credit_line\{tenant="acme",currency="CNY"\} 0\.00$'
has "tenant not in grace" '^suanli_tenant_in_grace\{tenant="acme"\} 0$'
has "a single controller leads" '^suanli_leader 1$'
has "leases still counted" '^suanli_leases_active 1$'

# Every metric the rules and the dashboard name is in the answer.
names() { grep -oE '\b(suanli_[a-z_]+|DCGM_FI_[A-Z_]+)' | sed -E 's/_(bucket|sum|count)$//' | sort -u; }
# Leadership on a shared store (leader.c) adds these; a controller on SQLite
# has only suanli_leader. They must at least be what leader.c writes.
HA_ONLY="suanli_leader_epoch suanli_leader_renew_age_seconds suanli_leader_lease_seconds suanli_store_replication_lag_seconds"
for n in $HA_ONLY; do
	grep -q "# TYPE $n " "$SL_ROOT/src/ctl/leader.c" || bad "leader.c writes $n"
done
{ sed -n 's/^# TYPE \([^ ]*\) .*/\1/p' "$M"; printf '%s\n' $HA_ONLY; } | sort -u >"$TMP/have"
missing() { names | comm -23 - "$TMP/have" | tr '\n' ' '; }
expect_eq "every metric the alert rules use exists" "$(grep 'expr:' "$RULES" | missing)" ""
if jq -e . "$DASH" >/dev/null 2>&1; then
	ok "the dashboard is JSON"
	expect_eq "every metric the dashboard uses exists" \
		"$(jq -r '.. | objects | select(has("expr")) | .expr' "$DASH" | missing)" ""
	expect_match "the dashboard has panels with queries" \
		"$(jq '[.panels[] | select(.targets)] | length' "$DASH")" '^[1-9]'
else
	bad "the dashboard is JSON" "$(jq . "$DASH" 2>&1 | head -3)"
fi
stop_daemon || bad "suanlid stops cleanly"
finish
