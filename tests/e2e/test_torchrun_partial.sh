#!/usr/bin/env bash
# test_torchrun_partial.sh - a multi-node job on partial-node leases: one
# lease of 8 GPUs, 4 on each of two simulated 8-GPU nodes (hosts of their own,
# netns_lib.sh), every rank in a podman container with a routable fabric
# address (a macvlan on the host's eth0 from the agent's --lease-net pool,
# docs/isolation.md "Networking"). Debian's torchrun runs the gloo all-reduce
# (allreduce.py) across the two containers and must get the right sum with
# MASTER_ADDR = rank 0's fabric address. Then the isolation: another tenant's
# 2-node job on the other halves of the same nodes (its own fabric
# addresses) cannot connect to the first lease's ranks, nor can another host,
# while the lease's own ranks reach each other and the other tenant's ranks
# reach theirs. Skipped (exit 77) without network namespaces, macvlan or
# podman.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netns_lib.sh"
. "$(dirname "$0")/agent_lib.sh"
FLEET="$SL_ROOT/tests/data/fleet/agents-small.yaml"
PY=/usr/bin/python3
TORCHRUN=/usr/bin/torchrun
POOL1=10.77.0.128/27 # 8 blocks of 4 addresses on e2e-h100-01
POOL2=10.77.0.160/27 # and on e2e-h100-02

ns_init
trap 'ag_containers_cleanup; ns_cleanup; [ -n "${SL_E2E_KEEP:-}" ] && mkdir -p "$SL_E2E_KEEP" && cp "$TMP"/*.log "$SL_E2E_KEEP"/ 2>/dev/null; rm -rf "$TMP"' EXIT
[ "$NS_MODE" = netns ] || skip "fabric addresses need network namespaces ($NS_REASON)"
if ! ag_image torch base-files bash coreutils dash findutils grep sed procps libc-bin python3 \
	python3-torch; then
	skip "containers: $AG_IMAGE_WHY"
fi
ok "the torch image $AG_IMAGE (built or cached in ${AG_IMAGE_S}s)"
for t in iptables-restore nsenter; do
	command -v "$t" >/dev/null 2>&1 || skip "$t is not installed (scripts/deps.sh)"
done
AG_ENGINE=podman
ns_create ctl 1 && ns_create h1 2 && ns_create h2 3 || die "hosts are created"
if ! err=$(ip -n "${NS_NETNS[h1]}" link add slprobe link eth0 type macvlan mode bridge 2>&1); then
	skip "no macvlan interfaces here ($err)"
fi
ip -n "${NS_NETNS[h1]}" link del slprobe
ag_controller "$TMP/data" "$FLEET" --heartbeat 1 --unreachable-after 5 --down-after 60 ||
	die "controller starts"
JOIN=$(ag_join_token)
badnet() {
	nsenter --net="/var/run/netns/${NS_NETNS[h1]}" "$SUANLI_AGENT" run --server "$URL" --node x --addr 10.77.0.2 \
		--lease-net "$1" --token t --simulate hgx-h100-8 --state-dir "$TMP/agents/bad" --cdi-dir "$TMP/cdi" 2>&1
}
expect_match "an agent refuses a --lease-net interface it does not have" \
	"$(badnet macvlan:nosuch0:$POOL1)" 'interface nosuch0 does not exist'
expect_match "or a pool outside the interface's subnet" \
	"$(badnet macvlan:eth0:10.78.0.0/27)" "pool 10.78.0.0/27 is not inside eth0's subnet 10.77.0.2/24"
ag_start e2e-h100-01 h1 "$JOIN" --lease-net "macvlan:eth0:$POOL1"
ag_start e2e-h100-02 h2 "$JOIN" --lease-net "macvlan:eth0:$POOL2"
wait_until 30 node_is e2e-h100-01 ready && wait_until 30 node_is e2e-h100-02 ready ||
	die "two agents ready"
expect_eq "the nodes show their pools" \
	"$(sl node show e2e-h100-01 --json | jq -r .agent.lease_net) $(sl node show e2e-h100-02 --json | jq -r .agent.lease_net)" \
	"$POOL1 $POOL2"
sl tenant create acme >/dev/null && sl tenant create beta >/dev/null || die "tenants"
lease() {
	body_of "$(api "$ADMIN" POST /v1/leases "{\"tenant\":\"$1\",\"gpus\":8,\"per_node\":4,\"models\":[\"h100-sxm\"]}")"
}
LA=$(lease acme)
LB=$(lease beta)
expect_eq "two 2-node leases of 4+4 GPUs share the two nodes" \
	"$(printf '%s\n%s' "$LA" "$LB" | jq -rs '[.[] | .state, ([.placement[] | "\(.node):\(.gpus | length)"] | sort | join(","))] | join(" ")')" \
	"active e2e-h100-01:4,e2e-h100-02:4 active e2e-h100-01:4,e2e-h100-02:4"
LA=$(printf '%s' "$LA" | jq -r .id)
LB=$(printf '%s' "$LB" | jq -r .id)
ended() { case "$(job_field "$1" .state)" in succeeded | failed | cancelled) return 0 ;; esac; return 1; }
logs() { sl job logs "$1" --rank "$2" 2>/dev/null; }

# ---- the all-reduce, collectives over the fabric addresses ----
J=$(sl job run --lease "$LA" --stop-grace 2 --env "NS_TAG=$NS_TAG" --env OMP_NUM_THREADS=1 \
	--env "ALLREDUCE=$(cat "$SL_ROOT/tests/e2e/allreduce.py")" --json -- \
	sh -c "printf '%s\n' \"\$ALLREDUCE\" > /work/allreduce.py && echo \"ifname=\$GLOO_SOCKET_IFNAME,\$NCCL_SOCKET_IFNAME\" &&
exec $PY $TORCHRUN --nnodes \"\$NNODES\" --node_rank \"\$NODE_RANK\" \
--master_addr \"\$MASTER_ADDR\" --master_port \"\$MASTER_PORT\" --nproc_per_node 1 \
--redirects 1 --tee 1 /work/allreduce.py" | jq -r .id)
expect_match "the torchrun job is accepted" "$J" '^job-'
# generous, as test_torchrun.sh: torch starts slowly in containers on a loaded 2-core machine
if ! wait_until 180 ended "$J"; then
	bad "the distributed job ends" "still $(job_field "$J" .state)"
	sl job cancel "$J" >/dev/null 2>&1
fi
expect_eq "the distributed job succeeded" "$(job_field "$J" .state)" succeeded
expect_eq "both ranks exited 0" "$(job_field "$J" '[.ranks[] | .exit_code] | join(",")')" "0,0"
for rank in 0 1; do
	expect_eq "rank $rank's collectives use the fabric interface" "$(logs "$J" "$rank" | grep -m1 '^ifname=')" "ifname=eth0,eth0"
	okline() { logs "$J" "$rank" | grep -q "OK rank=$rank world=2 sum=3 master=10\.77\.0\.1[2-9][0-9]:"; }
	if wait_until 15 okline; then
		ok "rank $rank's all-reduce is right (world 2, $(logs "$J" "$rank" | grep -o 'master=[0-9.:]*' | head -1), a fabric address)"
	else
		bad "rank $rank's all-reduce is right" "$(logs "$J" "$rank" | grep -v '^ ' | tail -5)"
	fi
done

# ---- isolation: only the lease's own ranks get in ----
PROBE=$(cat "$SL_ROOT/tests/e2e/fabric_probe.py")
JH=$(sl job run --lease "$LA" --stop-grace 2 --env "NS_TAG=$NS_TAG" --env "PROBE=$PROBE" --json -- \
	sh -c 'printf "%s\n" "$PROBE" > /work/p.py && exec python3 -u /work/p.py hold' | jq -r .id)
held() { logs "$JH" 1 | grep -q '^peer ' && logs "$JH" 0 | grep -q '^listening'; }
wait_until 60 held || bad "the lease's holder runs on both ranks" "$(logs "$JH" 0 | tail -3; logs "$JH" 1 | tail -3)"
A0=$(logs "$JH" 0 | sed -n 's/^ip=\([0-9.]*\) .*/\1/p' | head -1)
A1=$(logs "$JH" 1 | sed -n 's/^ip=\([0-9.]*\) .*/\1/p' | head -1)
expect_match "its ranks have fabric addresses from their nodes' pools ($A0, $A1)" "$A0 $A1" '^10\.77\.0\.(1[3-5][0-9]) 10\.77\.0\.(1[6-9][0-9])$'
expect_eq "the lease's rank 1 reaches rank 0 on its fabric address" "$(logs "$JH" 1 | grep -m1 '^peer ')" "peer REACHED"
expect_eq "neither has an IPv6 address" "$(logs "$JH" 0 | grep -o 'inet6=[0-9]*' | head -1) $(logs "$JH" 1 | grep -o 'inet6=[0-9]*' | head -1)" "inet6=0 inet6=0"
# the firewall in rank 0's namespace, as the agent installed it: the lease's
# two blocks (/30: 4 addresses per GPU of a /27) and nothing else gets in
blk() { printf '%s.%d/30' "${1%.*}" $((${1##*.} & ~3)); }
cid=$(podman ps -q --filter "name=-$JH-r0-")
cpid=$(podman inspect --format '{{.State.Pid}}' "$cid" 2>/dev/null)
fw=$(nsenter --net="/proc/$cpid/ns/net" iptables -S INPUT 2>&1)
expect_match "rank 0's input policy is DROP" "$fw" '^-P INPUT DROP'
expect_eq "and it accepts new connections only from the lease's blocks" \
	"$(printf '%s\n' "$fw" | sed -n 's/^-A INPUT -s \([0-9./]*\) -i eth0 -j ACCEPT$/\1/p' | tr '\n' ' ')" "$(blk "$A0") $(blk "$A1") "
JX=$(sl job run --lease "$LB" --stop-grace 2 --env "NS_TAG=$NS_TAG" --env "PROBE=$PROBE" \
	--env "TARGETS=$A0,$A1" --json -- \
	sh -c 'printf "%s\n" "$PROBE" > /work/p.py && exec python3 -u /work/p.py try' | jq -r .id)
wait_until 90 ended "$JX" || bad "the other tenant's try ends" "$(job_field "$JX" .state)"
X0=$(logs "$JX" 0)
X1=$(logs "$JX" 1)
B0=$(printf '%s\n' "$X0" | sed -n 's/^ip=\([0-9.]*\) .*/\1/p' | head -1)
expect_match "the other tenant's ranks have fabric addresses too ($B0)" "$B0" '^10\.77\.0\.1[2-9][0-9]$'
expect_match "the other tenant's rank on the same node tried both ranks" "$X0" "$A0 no"
expect_match "its log holds only what the job printed (no podman ids)" "$(printf '%s\n' "$X0" | head -1)" '^ip=' 
expect_eq "and reached neither" "$(printf '%s\n' "$X0" | grep -c 'REACHED')" 0
expect_match "its rank on the other node could not either" "$X1" "$A1 no"
expect_eq "none of its attempts got in" "$(printf '%s\n' "$X1" | grep -Ec "^($A0|$A1) REACHED")" 0
expect_eq "while its own ranks reach each other" "$(printf '%s\n' "$X1" | grep -m1 '^own ')" "own REACHED"
expect_match "another host of the fabric cannot connect either" \
	"$(ns_exec ctl python3 -c 'import socket,sys
c=socket.socket(); c.settimeout(2)
try:
    c.connect((sys.argv[1], 7100)); print("REACHED")
except OSError as e:
    print("no", e)' "$A0")" '^no'
acc=$(logs "$JH" 0 | sed -n 's/^accepted from //p' | sort -u | tr '\n' ' ')
expect_eq "the lease's rank 0 accepted only its own rank 1" "$acc" "$A1 "
# a job of the same lease whose number agrees with the holder's modulo the
# block size (4) would get the holder's addresses: its ranks fail at start
n=$((10#${JH#job-}))
for _ in 1 2 3 4; do
	JN=$(sl job run --lease "$LB" --json -- true | jq -r .id)
	[ $((10#${JN#job-} % 4)) = $(((n + 3) % 4)) ] && break
done
JC=$(sl job run --lease "$LA" --json -- true | jq -r .id)
wait_until 30 ended "$JC" || bad "the clashing job ends" "$(job_field "$JC" .state)"
expect_match "a job of the lease that would reuse a running rank's address fails, saying so" \
	"$(job_field "$JC" '[.state, .reason] | join(" ")')" "^failed rank [01] on e2e-h100-0[12]: cannot start: fabric address ($A0|$A1) is in use by job $JH rank [01] of the same lease"
sl job cancel "$JH" >/dev/null
wait_until 30 job_is "$JH" cancelled || bad "the holder is cancelled" "$(job_field "$JH" .state)"
gone() { [ -z "$(podman ps -a -q --filter "name=$NS_TAG")" ]; }
if wait_until 20 gone; then ok "no container of this run is left"; else bad "no container is left" "$(podman ps -a --filter "name=$NS_TAG" --format '{{.Names}} {{.Status}}')"; fi
left=$(ip -n "${NS_NETNS[h1]}" -o link show type macvlan 2>/dev/null | wc -l)
expect_eq "no macvlan interface is left on the node" "$left" 0
api "$ADMIN" POST "/v1/leases/$LA/release" >/dev/null
api "$ADMIN" POST "/v1/leases/$LB/release" >/dev/null
ag_stop e2e-h100-01 && ag_stop e2e-h100-02
expect_eq "the agents stop cleanly" "$?" 0
kill -TERM "$CTL_PID"
wait "$CTL_PID"
expect_eq "the controller stops cleanly" "$?" 0
ns_forget "$CTL_PID"
finish
