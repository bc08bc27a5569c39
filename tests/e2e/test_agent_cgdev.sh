#!/usr/bin/env bash
# test_agent_cgdev.sh - GPU isolation by the cgroup v2 device filter through
# the whole path: suanlid, a lease of GPUs 4-7 on a simulated node, a job, and
# suanli-agent with the test hook SUANLI_CGDEV_TEST_DENY=1:3 (deny /dev/null).
# Where the host allows the filter (root, cgroup2, bpf) the rank runs in its
# own cgroup <mount>/suanli/<job>-rank0-<epoch>: /dev/null and GPU node
# 195:0 (mknod) are denied, GPU node 195:4 (its own) is not, its
# CUDA_VISIBLE_DEVICES is renumbered 0,1,2,3, and the cgroup is removed once
# the rank ended. Where it does not, the agent warned once with a reason and
# the rank sees the physical GPU list and opens /dev/null (SKIP is printed for
# the enforcement part).
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
: "${SUANLI_AGENT:?SUANLI_AGENT must point at the suanli-agent binary}"
FLEET="$SL_ROOT/tests/data/fleet/agents-small.yaml"
DATA="$TMP/data"
SD="$TMP/sd"
NODE=e2e-h100-01
AGENT_PID=""

cleanup() {
	[ -n "$AGENT_PID" ] && kill -TERM "$AGENT_PID" 2>/dev/null && wait "$AGENT_PID" 2>/dev/null
	ctl_cleanup
}
trap cleanup EXIT

sl() { SUANLI_SERVER=$URL SUANLI_TOKEN=$ADMIN "$SUANLI" "$@"; }
node_ready() { [ "$(sl node show "$NODE" --json 2>/dev/null | jq -r .state)" = ready ]; }
job_json() { sl job show "$1" --json 2>/dev/null; }
ended() { [ "$(job_json "$1" | jq -r .state)" = succeeded ]; }

# GPU device nodes 195:0 and 195:4 (no driver behind them: an allowed open
# fails with ENXIO, a denied one with EPERM)
NODES="$TMP/nodes"
mkdir -p "$NODES"
MKNOD=1
mknod "$NODES/nv0" c 195 0 2>/dev/null && mknod "$NODES/nv4" c 195 4 2>/dev/null || MKNOD=0

"$SUANLID" init --data "$DATA" >/dev/null || { bad "init"; finish; exit 1; }
ADMIN=$(cat "$DATA/admin.token")
start_daemon "$TMP/ctl.log" --data "$DATA" --fleet "$FLEET" --heartbeat 1 ||
	{ bad "daemon starts" "$(cat "$TMP/ctl.log")"; finish; exit 1; }
JOIN=$(sl agent-token create --json | jq -r .token)
SUANLI_CGDEV_TEST_DENY=1:3 "$SUANLI_AGENT" run --server "$URL" --node "$NODE" --simulate hgx-h100-8 \
	--state-dir "$SD" --heartbeat 1 --token "$JOIN" 2>"$TMP/agent.log" &
AGENT_PID=$!
wait_until 20 node_ready || { bad "the agent registers" "$(tail -3 "$TMP/agent.log")"; finish; exit 1; }

ON=$(grep -c 'GPU device isolation: cgroup v2 device filter per rank' "$TMP/agent.log")
OFF=$(grep -c 'cgroup v2 device control unavailable on this host; GPU isolation relies on CUDA_VISIBLE_DEVICES" reason=".\{10,\}"' "$TMP/agent.log")
expect_eq "the agent says once whether it filters devices (or why not)" "$ON$OFF" "$([ "$ON" = 1 ] && echo 10 || echo 01)"

api "$ADMIN" POST /v1/tenants '{"name":"acme","regions":["cn-east"]}' >/dev/null
r=$(api "$ADMIN" POST /v1/leases '{"tenant":"acme","gpus":4,"models":["h100-sxm"]}')
expect_eq "a first lease takes GPUs 0-3" "$(body_of "$r" | jq -r '.placement[0].gpus | map(tostring) | join(",")')" "0,1,2,3"
r=$(api "$ADMIN" POST /v1/leases '{"tenant":"acme","gpus":4,"models":["h100-sxm"]}')
L=$(body_of "$r" | jq -r .id)
PHYS=$(body_of "$r" | jq -r '.placement[0].gpus | map(tostring) | join(",")')
expect_eq "the second lease takes GPUs 4-7 of the same node" "$(body_of "$r" | jq -r '.placement[0].node') $PHYS" "$NODE 4,5,6,7"

J=$(sl job run --lease "$L" --json -- sh -c '
echo "cvd=$CUDA_VISIBLE_DEVICES"
grep "^0::" /proc/self/cgroup
if cat /dev/null; then echo null=open; else echo null=denied; fi
for m in 0 4; do
	if [ -e "'"$NODES"'/nv$m" ]; then
		if cat "'"$NODES"'/nv$m" 2>&1 | grep -q "not permitted"; then echo "nv$m=denied"; else echo "nv$m=allowed"; fi
	fi
done' | jq -r .id)
wait_until 30 ended "$J" || bad "the job ends" "$(job_json "$J" | jq -c .)"
LOG="$SD/jobs/$J/rank-0.log"
EPOCH=$(job_json "$J" | jq -r '.ranks[0].epoch // empty')

if [ "$ON" = 1 ]; then
	MOUNT=$(sed -n 's/.*GPU device isolation.* cgroup=\([^ ]*\)\/suanli.*/\1/p' "$TMP/agent.log" | head -1)
	expect_match "the rank runs in its own cgroup" "$(cat "$LOG")" "^0::/suanli/$J-rank0-[0-9]+\$"
	expect_match "the filter denies the hook's /dev/null (EPERM)" "$(cat "$LOG")" '^null=denied$'
	expect_match "with the error the rank saw" "$(cat "$LOG")" 'Operation not permitted'
	expect_match "CUDA_VISIBLE_DEVICES is renumbered from 0 (the rank sees only its GPUs)" \
		"$(cat "$LOG")" '^cvd=0,1,2,3$'
	if [ "$MKNOD" = 1 ]; then
		expect_match "another lease's GPU node (195:0) is denied" "$(cat "$LOG")" '^nv0=denied$'
		expect_match "the rank's own GPU node (195:4) is not" "$(cat "$LOG")" '^nv4=allowed$'
	else
		echo "SKIP GPU node checks: mknod not possible here"
	fi
	cg_gone() { ! ls -d "$MOUNT/suanli/$J-rank0-"* >/dev/null 2>&1; }
	if wait_until 10 cg_gone; then ok "the rank's cgroup is removed after it ended"; else
		bad "the rank's cgroup is removed after it ended" "$(ls -d "$MOUNT/suanli/$J-"*)"; fi
	[ -n "$EPOCH" ] && [ -d "$MOUNT/suanli/$J-rank0-$EPOCH" ] && bad "no cgroup left for epoch $EPOCH"
else
	echo "SKIP device filter enforcement: $(grep -o 'reason=.*' "$TMP/agent.log" | head -1)"
	expect_match "without the filter the rank opens /dev/null" "$(cat "$LOG")" '^null=open$'
	expect_match "and sees the physical GPU list" "$(cat "$LOG")" "^cvd=$PHYS\$"
fi

kill -TERM "$AGENT_PID"
wait "$AGENT_PID"
expect_eq "the agent stops cleanly" "$?" 0
AGENT_PID=""
stop_daemon
finish
