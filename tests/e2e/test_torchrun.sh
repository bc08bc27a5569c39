#!/usr/bin/env bash
# test_torchrun.sh - a real distributed run: a 2-node lease on two agents in
# hosts of their own (netns_lib.sh; loopback with a SKIP line where namespaces
# are not permitted) runs Debian's torchrun (python3-torch, gloo on CPU) with
# --nnodes $NNODES --node_rank $NODE_RANK --master_addr $MASTER_ADDR
# --master_port $MASTER_PORT, exactly the variables the controller sets; each
# rank all-reduces a rank-dependent tensor and checks the sum
# (tests/e2e/allreduce.py), so the job succeeds only when the environment we
# set is what real training uses. Both ranks run in podman containers
# (docs/isolation.md); skipped (exit 77) where containers cannot run.
#
# Debian bookworm's torch 1.13 on Python 3.11 cannot parse torchrun's own
# default "--redirects 0" / "--tee 0" (Std.from_str returns None because
# Python 3.11's IntFlag no longer iterates the zero member), so the job
# passes --redirects 1 --tee 1: stdout goes through torchrun's log file and
# is teed to the rank's output, prefixed "[default0]:".
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netns_lib.sh"
. "$(dirname "$0")/agent_lib.sh"
FLEET="$SL_ROOT/tests/data/fleet/agents-small.yaml"
PY=/usr/bin/python3
TORCHRUN=/usr/bin/torchrun

if ! "$PY" -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
	# Not a pass: say what is missing (scripts/deps.sh installs it).
	bad "python3-torch with gloo is installed" "run scripts/deps.sh (Debian package python3-torch)"
	finish
	exit 1
fi
ok "python3-torch with gloo"
[ -x "$TORCHRUN" ] || TORCHRUN="-m torch.distributed.run"

ns_init
trap 'ag_containers_cleanup; ns_cleanup; [ -n "${SL_E2E_KEEP:-}" ] && mkdir -p "$SL_E2E_KEEP" && cp "$TMP"/*.log "$SL_E2E_KEEP"/ 2>/dev/null; rm -rf "$TMP"' EXIT
# Both ranks run in containers of an image made from the host's python3-torch
# (scripts/build-image.py, cached); the whole-node lease gives them the host
# network of their node, which gloo's rank-to-rank connections need.
if ! ag_image torch base-files bash coreutils dash findutils grep sed procps libc-bin python3 \
	python3-torch; then
	echo "SKIP containers: $AG_IMAGE_WHY"
	exit 77
fi
ok "the torch image $AG_IMAGE (built or cached in ${AG_IMAGE_S}s)"
AG_ENGINE=podman
ns_create ctl 1 && ns_create h1 2 && ns_create h2 3 || die "hosts are created"
ag_controller "$TMP/data" "$FLEET" --heartbeat 1 --unreachable-after 5 --down-after 60 ||
	die "controller starts"
JOIN=$(ag_join_token)
ag_start e2e-h100-01 h1 "$JOIN"
ag_start e2e-h100-02 h2 "$JOIN"
wait_until 30 node_is e2e-h100-01 ready && wait_until 30 node_is e2e-h100-02 ready ||
	die "two agents ready"
ok "two agents ready ($NS_MODE)"
sl tenant create acme >/dev/null || die "tenant"
r=$(api "$ADMIN" POST /v1/leases '{"tenant":"acme","gpus":16,"per_node":8,"models":["h100-sxm"]}')
L=$(body_of "$r" | jq -r .id)
expect_eq "a 2-node lease is active" "$(body_of "$r" | jq -r '[.state, (.placement | length)] | join(" ")')" "active 2"

# gloo binds to the interface the hosts share: eth0 in a namespace, lo on loopback
ifname=eth0
[ "$NS_MODE" = loopback ] && ifname=lo
# The script travels in the environment (the container sees none of the
# host's files) and is written to the lease's working directory /work.
J=$(sl job run --lease "$L" --stop-grace 2 --env "NS_TAG=$NS_TAG" --env "GLOO_SOCKET_IFNAME=$ifname" \
	--env OMP_NUM_THREADS=1 --env "ALLREDUCE=$(cat "$SL_ROOT/tests/e2e/allreduce.py")" --json -- \
	sh -c "test -r \"\$NCCL_TOPO_FILE\" && grep -q '<gpu ' \"\$NCCL_TOPO_FILE\" && echo \"topo ok \$NCCL_IB_HCA\" &&
printf '%s\n' \"\$ALLREDUCE\" > /work/allreduce.py &&
exec $PY $TORCHRUN --nnodes \"\$NNODES\" --node_rank \"\$NODE_RANK\" \
--master_addr \"\$MASTER_ADDR\" --master_port \"\$MASTER_PORT\" --nproc_per_node 1 \
--redirects 1 --tee 1 /work/allreduce.py" | jq -r .id)
expect_match "the torchrun job is accepted" "$J" '^job-'
ended() { case "$(job_field "$J" .state)" in succeeded | failed | cancelled) return 0 ;; esac; return 1; }
if ! wait_until 120 ended; then
	bad "the distributed job ends" "still $(job_field "$J" .state)"
	sl job cancel "$J" >/dev/null 2>&1
fi
expect_eq "the distributed job succeeded" "$(job_field "$J" .state)" succeeded
expect_eq "both ranks exited 0" "$(job_field "$J" '[.ranks[] | .exit_code] | join(",")')" "0,0"
m0=$(ns_addr "${AG_HOST[$(job_field "$J" '.ranks[] | select(.rank == 0) | .node')]}")
for rank in 0 1; do
	topo=$(sl job logs "$J" --rank "$rank" 2>/dev/null | grep '^topo ok')
	expect_match "rank $rank's container has its NCCL_TOPO_FILE and NCCL_IB_HCA" "$topo" '^topo ok =mlx5_'
	okline() { sl job logs "$J" --rank "$rank" 2>/dev/null | grep -q "OK rank=$rank world=2 sum=3 master=$m0:"; }
	if wait_until 15 okline; then
		ok "rank $rank's all-reduce is right (world 2, master $m0)"
	else
		bad "rank $rank's all-reduce is right" "$(sl job logs "$J" --rank "$rank" 2>&1 | grep -v '^ ' | tail -5)"
	fi
done
api "$ADMIN" POST "/v1/leases/$L/release" >/dev/null
ag_stop e2e-h100-01 && ag_stop e2e-h100-02
expect_eq "the agents stop cleanly" "$?" 0
kill -TERM "$CTL_PID"
wait "$CTL_PID"
expect_eq "the controller stops cleanly" "$?" 0
ns_forget "$CTL_PID"
finish
