#!/usr/bin/env bash
# test_isolation.sh - two tenants share one simulated 8-GPU server (4 GPUs
# each), the controller and the agent on hosts of their own (netns_lib.sh),
# every rank in a podman container (docs/isolation.md). The first tenant's
# probe job (iso_probe.sh) must find: a host uid that is not 0 (its user
# namespace), no way to the node credential or the agent's state directory,
# none of the other tenant's files, processes (iso_holder.sh's sleep 4242) or
# GPUs (/dev shows exactly its own four stand-in nvidiaN), and no port of the
# other's container reachable either way. Then a fork bomb stops at the pids
# limit and a disk filler at its working directory's size, while the agent
# and the other tenant's job carry on; cancel removes the containers.
# Skipped (exit 77) where containers cannot run: not root, no podman.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netns_lib.sh"
. "$(dirname "$0")/agent_lib.sh"
FLEET="$SL_ROOT/tests/data/fleet/isolation.yaml"
N=iso-h100-01
PIDS_LIMIT=96

ns_init
trap 'ag_containers_cleanup; ns_cleanup; [ -n "${SL_E2E_KEEP:-}" ] && mkdir -p "$SL_E2E_KEEP" && cp "$TMP"/*.log "$SL_E2E_KEEP"/ 2>/dev/null; rm -rf "$TMP"' EXIT
if ! ag_image base base-files bash coreutils dash findutils grep sed procps libc-bin python3; then
	echo "SKIP containers: $AG_IMAGE_WHY"
	exit 77
fi
ok "the local image $AG_IMAGE (built or cached in ${AG_IMAGE_S}s)"
IMG=$AG_IMAGE
AG_IMAGE="" # the jobs' image comes from the catalog
AG_ENGINE=podman

ns_create ctl 1 && ns_create h1 2 || die "hosts are created"
ag_controller "$TMP/data" "$FLEET" --heartbeat 1 --unreachable-after 5 --down-after 60 ||
	die "controller starts"
ag_start "$N" h1 "$(ag_join_token)" --pids-limit "$PIDS_LIMIT" --log-limit-mib 8
wait_until 30 node_is "$N" ready || die "the agent is ready"
expect_match "the agent says what runs tenant work (engine and runtime)" \
	"$(grep 'tenant work runs in containers' "$TMP/agent-$N.log")" 'engine=podman runtime=(runc|crun) cgroup_manager=cgroupfs'
SD="$TMP/agents/$N"
out=$(sl image add base --ref "$IMG" --default 2>&1)
expect_match "image add puts the local image in the catalog as its default" "$out" "Image base is $IMG \(the default\)"
expect_eq "image list shows it" "$(sl image list --json | jq -r '.[] | [.name, .ref, .default] | join(" ")')" "base $IMG true"
sl tenant create acme >/dev/null && sl tenant create beta >/dev/null || die "tenants"
lease() {
	body_of "$(api "$ADMIN" POST /v1/leases "{\"tenant\":\"$1\",\"gpus\":4,\"models\":[\"h100-sxm\"]}")"
}
LA=$(lease acme)
LB=$(lease beta)
expect_eq "two 4-GPU leases share the node" \
	"$(printf '%s\n%s' "$LA" "$LB" | jq -rs '[.[] | .state, .placement[0].node] | join(" ")')" \
	"active $N active $N"
LA=$(printf '%s' "$LA" | jq -r .id)
LB=$(printf '%s' "$LB" | jq -r .id)
HA=$(ns_addr h1)
common=(--env "HOSTADDR=$HA" --env "CTL=$(ns_addr ctl):$PORT" --env "NS_TAG=$NS_TAG")

JB=$(sl job run --lease "$LB" --stop-grace 2 "${common[@]}" --json -- sh -c "$(cat "$SL_ROOT/tests/e2e/iso_holder.sh")" | jq -r .id)
holder_up() { sl job logs "$JB" --rank 0 2>/dev/null | grep -q 'holder listening'; }
wait_until 40 holder_up || die "the other tenant's job runs" "$(sl job logs "$JB" 2>&1 | tail -5; tail -5 "$TMP/agent-$N.log")"
ok "the other tenant's job listens on its port 7001"

out=$(sl job run --lease "$LA" --image nope -- true 2>&1)
expect_match "a job naming an image the catalog lacks is refused" "$out" "no image called 'nope'"
JA=$(sl job run --lease "$LA" --image base --stop-grace 2 "${common[@]}" --env "CRED=$SD/credential" --env "STATE=$SD" \
	--env "OTHER_WORK=$SD/leases/$LB" --json -- sh -c "$(cat "$SL_ROOT/tests/e2e/iso_probe.sh")" | jq -r .id)
ended() { case "$(job_field "$1" .state)" in succeeded | failed | cancelled) return 0 ;; esac; return 1; }
probe_up() { sl job logs "$JA" --rank 0 2>/dev/null | grep -q 'probe listening'; }
wait_until 40 probe_up || bad "the probe listens" "$(sl job logs "$JA" 2>&1 | tail -3)"
P=$(sl job logs "$JA" --rank 0 2>/dev/null)
MP=$(printf '%s\n' "$P" | sed -n 's/^master_port=//p')
PIP=$(printf '%s\n' "$P" | sed -n 's/^ip=//p')
# another host (as a rank of the lease on another node would) reaches rank 0's
# published rendezvous port on the node's address
try_conn='import socket,sys
c=socket.socket(); c.settimeout(2)
try:
    c.connect((sys.argv[1], int(sys.argv[2]))); print("REACHED")
except OSError as e:
    print("no(%s)" % (e.strerror or e))'
expect_eq "another host reaches the probe's published rendezvous port $HA:$MP" \
	"$(ns_exec ctl python3 -c "$try_conn" "$HA" "$MP")" REACHED
# the other tenant's container reaches it neither through the node's address
# nor through the bridge (the probe's own address $PIP)
JX=$(sl job run --lease "$LB" --json -- python3 -c "$try_conn
import sys
for a in sys.argv[3:]:
    c=socket.socket(); c.settimeout(2)
    try:
        c.connect((a, int(sys.argv[2]))); print(a, \"REACHED\")
    except OSError as e:
        print(a, \"no\")" "$HA" "$MP" "$PIP" | jq -r .id)
wait_until 30 ended "$JX" || bad "the other tenant's try ends" "$(job_field "$JX" .state)"
XL=$(sl job logs "$JX" --rank 0 2>/dev/null)
expect_match "the other tenant's container tried both ways" "$XL" "$PIP no"
expect_eq "it reached the probe's ports neither on $HA:$MP nor at $PIP" "$(printf '%s\n' "$XL" | grep -c REACHED)" 0
wait_until 60 ended "$JA" || bad "the probe ends" "$(job_field "$JA" .state)"
expect_eq "the probe succeeded" "$(job_field "$JA" .state)" succeeded
expect_eq "the job keeps the image it ran in" "$(job_field "$JA" '[.image, .image_ref] | join(" ")')" "base $IMG"
P=$(sl job logs "$JA" --rank 0 2>/dev/null)
fact() { printf '%s\n' "$P" | sed -n "s/^$1=//p" | head -1; }
echo "---- probe: $(printf '%s' "$P" | tr '\n' ';')"
umap=$(fact uid_map)
expect_match "container root is an unprivileged host uid (uid_map $umap)" "$umap" '^0:[1-9][0-9]*:65536$'
expect_eq "the node credential is unreadable" "$(fact cred)" unreadable
expect_eq "the agent's state directory is invisible" "$(fact state)" invisible
expect_eq "the other tenant's files are invisible" "$(fact other_files)" invisible
expect_eq "the other tenant's processes are invisible" "$(fact other_procs)" 0
expect_eq "/dev shows exactly its own 4 GPUs" "$(fact gpus)" "nvidia0 nvidia1 nvidia2 nvidia3 "
expect_eq "CUDA_VISIBLE_DEVICES is renumbered from 0" "$(fact cuda_visible)" 0,1,2,3
expect_eq "the image is read-only" "$(fact rootfs)" readonly
expect_eq "its working directory is writable" "$(fact work)" mine
expect_eq "it may bind a port in its own network namespace" "$(fact bind)" ok
expect_match "it cannot reach the other tenant's port on loopback" "$(fact reach_other_lo)" '^no'
expect_match "nor on the node's address" "$(fact reach_other_host)" '^no'
expect_eq "it reaches the controller as any outside client would (its bridge is NATed)" "$(fact reach_ctl)" REACHED
expect_eq "it reaches its own published rendezvous port on the node's address (as torchrun's rank 0 does)" "$(fact reach_own_published)" REACHED
HB=$(sl job logs "$JB" --rank 0 2>/dev/null)
expect_eq "the other tenant never reached the probe's port" "$(printf '%s' "$HB" | grep -c REACHED)" 0
sp=$(pgrep -f '^sleep 4242' | head -1)
hu=$(stat -c %u "/proc/$sp" 2>/dev/null)
expect_match "seen from the host, the other tenant's process runs as uid $hu" "${hu:-0}" '^[1-9][0-9]*$'
nb=$(ns_exec h1 sh -c "ls $TMP/agents/$N/sim-dev" | tr '\n' ' ')
expect_eq "the agent made its stand-in GPU nodes" "$nb" "nvidia0 nvidia1 nvidia2 nvidia3 nvidia4 nvidia5 nvidia6 nvidia7 nvidiactl "

# ---- an image the node lacks: podman tries to pull it (--pull=missing), nothing
# outside is reachable, the job fails and its state says which image and how to fix it ----
sl image add ghost --ref localhost/suanli/ghost:none >/dev/null
JG=$(sl job run --lease "$LA" --image ghost --json -- true | jq -r .id)
wait_until 60 ended "$JG"
expect_eq "a job whose image the node lacks and cannot pull fails" "$(job_field "$JG" .state)" failed
expect_match "its state names the image, says how to fix it and carries podman's error" "$(job_field "$JG" .reason)" \
	"^rank 0 on $N: image localhost/suanli/ghost:none is not on this node and cannot be pulled; add a ref it has \(suanli image add\) or build one \(scripts/build-image.py\); podman: .+"
ghost_log() { sl job logs "$JG" --rank 0 2>/dev/null | grep -q 'pulling image localhost/suanli/ghost:none'; }
if wait_until 10 ghost_log; then ok "and its log says the agent pulled it"; else bad "its log says it pulled" "$(sl job logs "$JG" 2>&1 | tail -2)"; fi
pulls=$(sl job logs "$JA" --rank 0 2>/dev/null | grep -c 'pulling image')
expect_eq "a job whose image is on the node pulls nothing" "$pulls" 0

ticks() { sl job logs "$JB" --rank 0 2>/dev/null | grep -c '^tick'; }
# ---- a fork bomb stops at the pids limit ----
t0=$(ticks)
JF=$(sl job run --lease "$LA" --stop-grace 2 "${common[@]}" --json -- \
	sh -c 'i=0; while :; do sleep 300 & i=$((i+1)); echo "forked $i"; done' | jq -r .id)
wait_until 60 ended "$JF" || { bad "the fork bomb ends"; sl job cancel "$JF" >/dev/null 2>&1; }
bomb_log() { sl job logs "$JF" --rank 0 2>/dev/null | grep -Eq '[Cc]annot fork|Resource temporarily unavailable'; }
wait_until 10 bomb_log
F=$(sl job logs "$JF" --rank 0 2>/dev/null)
nf=$(printf '%s\n' "$F" | grep -c '^forked')
expect_match "the fork bomb hit the limit ($nf forks; job $(job_field "$JF" '[.state, .ranks[0].exit_code] | join(" ")'))" \
	"$(printf '%s' "$F" | tail -3)" '[Cc]annot fork|Resource temporarily unavailable'
if [ "$nf" -gt 0 ] && [ "$nf" -lt "$PIDS_LIMIT" ]; then ok "fewer forks than --pids-limit $PIDS_LIMIT"; else bad "fewer forks than the limit" "$nf"; fi
t1=$(ticks)
wait_until 10 sh -c "[ \$(sl job logs $JB --rank 0 2>/dev/null | grep -c '^tick') -gt $t1 ]" 2>/dev/null
more() { [ "$(ticks)" -gt "$t1" ]; }
if wait_until 10 more; then ok "the other tenant's job carries on ($t0 -> $(ticks) ticks)"; else bad "the other tenant's job carries on"; fi

# ---- a disk filler stops at its working directory's size ----
before=$(df -m --output=avail "$TMP" | tail -1)
JD=$(sl job run --lease "$LA" --stop-grace 2 "${common[@]}" --json -- sh -c \
	'dd if=/dev/zero of=/work/fill bs=1M 2>&1 | grep -o "No space left on device" | head -1; echo "work_mib=$(du -m /work/fill | cut -f1)"; dd if=/dev/zero of=/tmp/fill bs=1M 2>&1 | grep -o "No space left on device" | head -1; echo "tmp_mib=$(du -m /tmp/fill | cut -f1)"' | jq -r .id)
wait_until 90 ended "$JD" || { bad "the disk filler ends"; sl job cancel "$JD" >/dev/null 2>&1; }
filled() { sl job logs "$JD" --rank 0 2>/dev/null | grep -q '^tmp_mib='; }
wait_until 10 filled
D=$(sl job logs "$JD" --rank 0 2>/dev/null)
echo "---- filler: $(printf '%s' "$D" | tr '\n' ';')"
expect_eq "the filler got 'No space left' twice" "$(printf '%s\n' "$D" | grep -c 'No space left on device')" 2
expect_match "/work stopped at its size" "$(printf '%s' "$D" | sed -n 's/^work_mib=//p')" '^10[0-9][0-9]$'
expect_match "/tmp stopped at its size" "$(printf '%s' "$D" | sed -n 's/^tmp_mib=//p')" '^2[0-9][0-9]$'
after=$(df -m --output=avail "$TMP" | tail -1)
if [ $((before - after)) -lt 200 ]; then ok "the agent's disk did not fill (${before} -> ${after} MiB free)"; else bad "the agent's disk did not fill" "$before -> $after"; fi
t2=$(ticks)
more2() { [ "$(ticks)" -gt "$t2" ]; }
if wait_until 10 more2; then ok "the other tenant's job still carries on"; else bad "the other tenant's job still carries on"; fi
expect_eq "the node stays ready" "$(node_field "$N" .state)" ready

# ---- a rank that prints without end is killed at the node's log limit ----
JL=$(sl job run --lease "$LA" --restart always "${common[@]}" --json -- \
	sh -c 'l=$(printf "%0256d" 0); while :; do echo "$l"; done' | jq -r .id)
wait_until 60 ended "$JL" || { bad "the flooder ends"; sl job cancel "$JL" >/dev/null 2>&1; }
expect_eq "the flooder is killed at the log limit, not restarted" "$(job_field "$JL" '[.state, .ranks[0].restarts] | join(" ")')" "failed 0"
expect_match "its state says why" "$(job_field "$JL" .reason)" "^rank 0 on $N: its output passed the node's log limit of 8 MiB; killed$"
lsz=$(stat -c %s "$SD/jobs/$JL/rank-0.log" 2>/dev/null || echo 0)
if [ "$lsz" -gt $((8 << 20)) ] && [ "$lsz" -lt $((256 << 20)) ]; then ok "its log on the node stopped near the limit ($((lsz >> 20)) MiB)"; else bad "its log stopped near the limit" "$lsz bytes"; fi
t3=$(ticks)
more3() { [ "$(ticks)" -gt "$t3" ]; }
if wait_until 10 more3; then ok "the other tenant's job carries on after the flood"; else bad "the other tenant's job carries on after the flood"; fi

# ---- cancel stops and removes the container ----
sl job cancel "$JB" >/dev/null
wait_until 30 job_is "$JB" cancelled || bad "the holder is cancelled" "$(job_field "$JB" .state)"
gone() { [ -z "$(podman ps -a -q --filter "name=$NS_TAG")" ]; }
if wait_until 20 gone; then ok "no container of this run is left"; else bad "no container is left" "$(podman ps -a --filter "name=$NS_TAG" --format '{{.Names}} {{.Status}}')"; fi
ag_stop "$N"
expect_eq "the agent stops cleanly" "$?" 0
kill -TERM "$CTL_PID"
wait "$CTL_PID"
ns_forget "$CTL_PID"
finish
