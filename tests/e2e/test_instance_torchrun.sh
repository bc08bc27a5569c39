#!/usr/bin/env bash
# test_instance_torchrun.sh - two nodes, one instance: `instance create
# --gpus 16 --per-node 8` gives one container on each of two real agents
# (whole-node leases: host network), and the renter runs Debian's torchrun
# (python3-torch, gloo on CPU) in both over SSH, with the training
# environment the instance's sessions carry (MASTER_ADDR, MASTER_PORT,
# NNODES, NODE_RANK from the lease); each rank all-reduces a rank-dependent
# tensor and checks the sum (tests/e2e/allreduce.py), so it passes only when
# the two containers reach each other as real training needs.
# Skipped (77) where podman, sshd or root are missing.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netns_lib.sh"
. "$(dirname "$0")/agent_lib.sh"
FLEET="$SL_ROOT/tests/data/fleet/agents-small.yaml"
[ "$(id -u)" = 0 ] || { echo "SKIP containers need root"; exit 77; }
[ -x /usr/sbin/sshd ] && command -v ssh >/dev/null ||
	{ echo "SKIP openssh-server and openssh-client are not installed (scripts/deps.sh)"; exit 77; }
/usr/bin/python3 -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null ||
	{ echo "SKIP python3-torch with gloo is not installed (scripts/deps.sh)"; exit 77; }
ns_init
inst_cleanup() {
	ag_containers_cleanup
	local ids m
	ids=$(podman images --format '{{.Repository}}:{{.Tag}}' 2>/dev/null | grep -F -- "$NS_TAG")
	[ -n "$ids" ] && podman rmi -f $ids >/dev/null 2>&1
	for m in $(awk -v t="$TMP/" 'index($2, t) == 1 {print $2}' /proc/mounts); do umount -l "$m"; done
}
trap 'inst_cleanup; ns_cleanup; [ -n "${SL_E2E_KEEP:-}" ] && mkdir -p "$SL_E2E_KEEP" && cp "$TMP"/*.log "$SL_E2E_KEEP"/ 2>/dev/null; rm -rf "$TMP"' EXIT
if ! ag_image torchssh base-files bash coreutils dash findutils grep sed procps libc-bin python3 \
	python3-torch openssh-server; then
	echo "SKIP containers: $AG_IMAGE_WHY"
	exit 77
fi
ok "the torch image with sshd $AG_IMAGE (built or cached in ${AG_IMAGE_S}s)"
AG_ENGINE=podman
ns_create ctl 1 && ns_create h1 2 && ns_create h2 3 || die "hosts are created"
ag_controller "$TMP/data" "$FLEET" --heartbeat 1 --unreachable-after 30 --down-after 120 ||
	die "controller starts"
JOIN=$(ag_join_token)
ag_start e2e-h100-01 h1 "$JOIN" --port-range 31000-31499
ag_start e2e-h100-02 h2 "$JOIN" --port-range 31500-31999
wait_until 30 node_is e2e-h100-01 ready && wait_until 30 node_is e2e-h100-02 ready ||
	die "two agents ready"
sl tenant create acme >/dev/null || die "tenant"
sl topup --tenant acme --amount 100000000 >/dev/null
sl image add torch --ref "$AG_IMAGE" --default >/dev/null || die "the image is in the catalog"
ACME=$(body_of "$(api "$ADMIN" POST /v1/tokens '{"role":"tenant","tenant":"acme","user":"alice"}')" | jq -r .token)
as() { SUANLI_SERVER=$URL SUANLI_TOKEN=$ACME SUANLI_CA=$CA ns_exec ctl "$SUANLI" "$@"; }
ssh-keygen -q -t ed25519 -N '' -C alice -f "$TMP/alice"
as ssh-key add laptop --file "$TMP/alice.pub" >/dev/null || die "alice's key"
ishow() { as instance show "$1" --json 2>/dev/null | jq -r "$2"; }
istate() { [ "$(ishow "$1" .state)" = "$2" ]; }
SSHO=(-o BatchMode=yes -o ConnectTimeout=5 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
	-o LogLevel=ERROR -i "$TMP/alice")

t0=$SECONDS
out=$(as instance create --gpus 16 --per-node 8 --model h100-sxm --ssh-key laptop --json 2>&1)
ID=$(printf '%s' "$out" | jq -r .id 2>/dev/null)
expect_match "a two-node instance is created" "$ID" '^in-'
wait_until 90 istate "$ID" running || die "it runs on both nodes" "$out $(ishow "$ID" '[.state, .reason] | join(": ")')"
ok "it runs on both nodes ($((SECONDS - t0)) s)"
expect_eq "one SSH entry per node" "$(ishow "$ID" '.ssh | length')" 2
# on N CMD : ssh into the instance's container on its Nth node
on() { local n=$1; shift; ns_exec ctl ssh "${SSHO[@]}" -p "$(ishow "$ID" ".ssh[$n].port")" \
	"root@$(ishow "$ID" ".ssh[$n].host")" "$@"; }
for n in 0 1; do wait_until 20 on $n true || die "sshd answers on node $n"; done
ifname=eth0
[ "$NS_MODE" = loopback ] && ifname=lo
for n in 0 1; do
	on $n 'cat > /root/allreduce.py' <"$SL_ROOT/tests/e2e/allreduce.py" || bad "the script reaches node $n"
done
run='cd /root && GLOO_SOCKET_IFNAME='$ifname' OMP_NUM_THREADS=1 exec python3 -m torch.distributed.run \
--nnodes "$NNODES" --node_rank "$NODE_RANK" --master_addr "$MASTER_ADDR" --master_port "$MASTER_PORT" \
--nproc_per_node 1 --redirects 1 --tee 1 allreduce.py'
on 0 "$run" >"$TMP/rank0.log" 2>&1 &
r0=$!
on 1 "$run" >"$TMP/rank1.log" 2>&1 &
r1=$!
until_gone() { local p=$1 i; for i in $(seq 1 900); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.2; done; return 1; }
until_gone $r0 && until_gone $r1 || bad "torchrun ends on both nodes"
wait $r0; rc0=$?
wait $r1; rc1=$?
expect_eq "torchrun exits 0 in both containers" "$rc0 $rc1" "0 0"
for n in 0 1; do
	line=$(grep -o "OK rank=$n world=2 sum=3 master=[^ ]*" "$TMP/rank$n.log" | head -1)
	expect_match "rank $n's all-reduce across the two containers is right" "$line" "^OK rank=$n world=2 sum=3"
	[ -n "$line" ] || tail -5 "$TMP/rank$n.log"
done
as instance release "$ID" >/dev/null
gone() { [ "$(podman ps -a -q --filter "name=$NS_TAG-$ID" | wc -l)" = 0 ]; }
wait_until 60 gone && ok "release removes both containers" || bad "release removes both containers"
ag_stop e2e-h100-01 && ag_stop e2e-h100-02
expect_eq "the agents stop cleanly" "$?" 0
finish
