#!/usr/bin/env bash
# test_instance_agent.sh - the agent's side of instances (issue 14) with real
# podman, real sshd in the container and the real ssh client over loopback,
# against a small fake of the controller's agent protocol
# (tests/e2e/fake_ctl.py: the test writes the desired "instances" and reads
# the heartbeats), so it shows the agent alone:
#   - a run item: the container is created and started, sshd answers on the
#     reported host port with the reported host key; the tenant's key logs in,
#     another key is refused; /dev holds exactly the item's GPUs; the lease's
#     environment is in the session (visible devices renumbered from 0);
#   - the data disk at /data is a file system of volume_gib; a renter port is
#     published on its reported host port;
#   - stop and start (a new epoch): /data and /root kept, same port and key;
#   - a stop from inside the guest is reported stopped_by "guest" and not undone;
#   - jobs inside the instance (work items with "instance"): podman exec in
#     its container, so a job reads and writes /data as ssh sees it, runs in
#     /root with the item's env, its output is shipped as the rank's log, its
#     exit code is the rank's, its end leaves the instance running; a stop
#     reaches the command inside (SIGTERM, then SIGKILL after the grace) and
#     the instance and ssh keep working; a rank of an instance that does not
#     run here fails at start with the reason;
#   - an agent restart re-adopts the running container;
#   - utilisation: 100 in simulate mode, "* 0" in inject/util gives 0;
#   - remove: container, data disk and host keys gone, reported "removed".
# Skipped (77) where podman, sshd or root are missing.
set -u
. "$(dirname "$0")/lib.sh"
: "${SUANLI_AGENT:?SUANLI_AGENT must point at the suanli-agent binary}"
[ "$(id -u)" = 0 ] || skip "containers need root here"
command -v podman >/dev/null || skip "podman is not installed (scripts/deps.sh)"
[ -x /usr/sbin/sshd ] && command -v ssh >/dev/null ||
	skip "openssh-server and openssh-client are not installed (scripts/deps.sh)"
TAG="ti$$"
CDI="inst-$TAG"
AG="$TMP/agent"
FAKE="$TMP/fake"
mkdir -p "$FAKE"
CTL_PID=""
AG_PID=""
cleanup() {
	[ -n "$AG_PID" ] && kill -TERM "$AG_PID" 2>/dev/null && wait "$AG_PID" 2>/dev/null
	[ -n "$CTL_PID" ] && kill "$CTL_PID" 2>/dev/null && wait "$CTL_PID" 2>/dev/null
	local ids m
	ids=$(podman ps -a -q --filter "name=sl-$CDI-" 2>/dev/null)
	[ -n "$ids" ] && podman rm -f -t 0 $ids >/dev/null 2>&1
	podman rmi -f "localhost/suanli-instance/$CDI-in-000001:system" >/dev/null 2>&1
	ids=$(podman network ls --format '{{.Name}}' 2>/dev/null | grep -F -- "sl-$CDI-")
	[ -n "$ids" ] && podman network rm -f $ids >/dev/null 2>&1
	grep -lF -- "$CDI " /run/suanli/uid-ranges/* 2>/dev/null | xargs -r rm -f
	rm -f "/var/run/cdi/suanli-$CDI.json"
	for m in $(awk -v t="$TMP/" 'index($2, t) == 1 {print $2}' /proc/mounts); do umount -l "$m"; done
	[ -n "${SL_E2E_KEEP:-}" ] && mkdir -p "$SL_E2E_KEEP" && cp "$TMP"/*.log "$SL_E2E_KEEP"/ 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

t0=$SECONDS
IMG=$("$SL_ROOT/scripts/build-image.py" inst base-files bash coreutils dash findutils grep sed \
	procps libc-bin python3 openssh-server 2>"$TMP/build-image.log") ||
	skip "the instance image cannot be built: $(tail -2 "$TMP/build-image.log")"
ok "the instance image $IMG (built or cached in $((SECONDS - t0)) s)"

ssh-keygen -q -t ed25519 -N '' -C alice@laptop -f "$TMP/alice"
ssh-keygen -q -t ed25519 -N '' -C mallory -f "$TMP/mallory"
python3 "$SL_ROOT/tests/e2e/fake_ctl.py" "$FAKE" >"$TMP/fake.log" 2>&1 &
CTL_PID=$!
wait_until 10 grep -q '^port=' "$TMP/fake.log" || skip "the fake controller does not start"
PORT=$(sed -n 's/^port=//p' "$TMP/fake.log")

start_agent() {
	"$SUANLI_AGENT" run --server "http://127.0.0.1:$PORT" --token sl_join --node n1 \
		--simulate hgx-h100-8 --state-dir "$AG" --cdi-name "$CDI" --heartbeat 1 \
		--port-range 31000-31999 --image "$IMG" >>"$TMP/agent.log" 2>&1 &
	AG_PID=$!
}
# want STATE EPOCH : the desired state of in-000001
want() {
	local keys
	keys=$(jq -Rs 'split("\n") | map(select(length > 0))' "$TMP/alice.pub")
	jq -n --arg st "$1" --argjson ep "$2" --arg img "$IMG" --argjson keys "$keys" \
		'[{instance: "in-000001", node_rank: 0, epoch: $ep, lease: "ls-000042", state: $st,
		   tenant: "acme", image: $img, gpus: [2, 5], nics: [],
		   env: {CUDA_VISIBLE_DEVICES: "2,5", MASTER_ADDR: "127.0.0.1", NODE_RANK: "0",
			 SPACED: "a b \"c\""},
		   cpus: 2, mem_mib: 1024, host_network: false, authorized_keys: $keys,
		   ports: [8888], volume_gib: 1, stop_grace_s: 2}]' >"$FAKE/instances.json.new"
	mv "$FAKE/instances.json.new" "$FAKE/instances.json"
}
hb() { jq -r "$1" "$FAKE/heartbeat.json" 2>/dev/null; }
inst() { hb ".instances[]? | select(.instance == \"in-000001\") | $1"; }
state_is() { [ "$(inst .state)" = "$1" ] && [ "$(inst .epoch)" = "${2:-$(inst .epoch)}" ]; }
SSHO=(-o BatchMode=yes -o ConnectTimeout=5 -o StrictHostKeyChecking=yes
	-o UserKnownHostsFile="$TMP/known_hosts" -o LogLevel=ERROR)
on() { ssh "${SSHO[@]}" -i "$TMP/alice" -p "$SSH_PORT" root@127.0.0.1 "$@"; }

want run 1
start_agent
t1=$SECONDS
wait_until 90 state_is running 1 || {
	bad "the instance runs" "state $(inst .state): $(inst .error) $(tail -5 "$TMP/agent.log")"
	tail -20 "$AG/instances/in-000001/op.log" 2>/dev/null
	finish
	exit 1
}
ok "the instance runs ($((SECONDS - t1)) s from the run item)"
SSH_PORT=$(inst .ssh_port)
expect_match "sshd's host port is in the range" "$SSH_PORT" '^31[0-9]{3}$'
HP=$(inst '.ports[0].host_port')
expect_match "the renter port 8888 has a host port" "$(inst '.ports[0].port') $HP" '^8888 31[0-9]{3}$'
FP=$(inst '.host_keys[0].fingerprint')
want_fp=$(ssh-keygen -lf "$AG/instances/in-000001/ssh/ssh_host_ed25519_key.pub" | awk '{print $2}')
expect_eq "the reported host key fingerprint is the key's" "$FP" "$want_fp"
# known_hosts from the key whose fingerprint was reported: ssh checks it
echo "[127.0.0.1]:$SSH_PORT $(cat "$AG/instances/in-000001/ssh/ssh_host_ed25519_key.pub")" \
	>"$TMP/known_hosts"
wait_until 20 on true || bad "sshd answers" "$(ssh "${SSHO[@]}" -i "$TMP/alice" -p "$SSH_PORT" root@127.0.0.1 true 2>&1)"
ok "the tenant's key logs in ($((SECONDS - t1)) s from the run item to a login)"
expect_eq "/dev holds exactly the item's GPUs" "$(on 'ls /dev | grep nvidia | tr "\n" " "')" \
	"nvidia2 nvidia5 nvidiactl "
expect_eq "the session has the lease's environment, devices renumbered" \
	"$(on 'echo "$CUDA_VISIBLE_DEVICES|$MASTER_ADDR|$NODE_RANK|$SPACED"')" '0,1|127.0.0.1|0|a b "c"'
expect_eq "the session is root of the container" "$(on id -u)" 0
out=$(ssh "${SSHO[@]}" -i "$TMP/mallory" -p "$SSH_PORT" root@127.0.0.1 true 2>&1)
rc=$?
expect_eq "another key is refused" "$rc $(printf '%s' "$out" | grep -c 'Permission denied')" "255 1"
size=$(on "df -P -k /data | awk 'NR == 2 {print \$2}'")
if [ -n "$size" ] && [ "$size" -gt 900000 ] && [ "$size" -lt 1100000 ]; then
	ok "/data is a file system of volume_gib (1 GiB: $size KiB)"
else
	bad "/data is a file system of volume_gib" "df says '$size' KiB"
fi
on 'echo data-ok > /data/f && echo root-ok > /root/g && mkdir -p /srv && echo port-ok > /srv/index.html' ||
	bad "the renter writes /data and /root"
on 'cd /srv && nohup python3 -m http.server 8888 >/dev/null 2>&1 </dev/null &'
got() { [ "$(curl -s -m 2 "http://127.0.0.1:$HP/index.html")" = port-ok ]; }
if wait_until 20 got; then ok "the renter port reaches the container on its host port"; else
	bad "the renter port reaches the container on its host port"; fi
expect_eq "utilisation in simulate mode is 100 without an inject file" \
	"$(hb '[.gpus[] | .util_pct] | unique | join(",")')" 100
echo "* 0" >"$AG/inject/util"
zero() { [ "$(hb '[.gpus[] | .util_pct] | unique | join(",")')" = 0 ]; }
wait_until 10 zero && ok "inject/util \"* 0\" reports 0 for every GPU" ||
	bad "inject/util \"* 0\" reports 0" "$(hb '[.gpus[] | .util_pct]')"
rm -f "$AG/inject/util"

# jobs inside the instance (podman exec in its container)
# jobs 'ITEM-JSON ...': the desired work items (fake_ctl.py's work.json)
setjobs() { printf '%s\n' "$@" | jq -s . >"$FAKE/work.json.new" && mv "$FAKE/work.json.new" "$FAKE/work.json"; }
# jitem JOB STATE GRACE INSTANCE ARGV...
jitem() {
	local job=$1 st=$2 grace=$3 ins=$4
	shift 4
	jq -cn --arg job "$job" --arg st "$st" --argjson g "$grace" --arg ins "$ins" \
		'{job: $job, rank: 0, lease: "ls-000042", tenant: "acme", epoch: 1, state: $st,
		  argv: $ARGS.positional, env: {CUDA_VISIBLE_DEVICES: "2,5", JOBVAR: "x y \"z\""},
		  gpus: [2, 5], nics: [], restart: "never", stop_grace_s: $g, instance: $ins}' \
		--args -- "$@"
}
job() { hb ".work[]? | select(.job == \"$1\") | $2"; }
job_is() { [ "$(job "$1" .state)" = "$2" ]; }
J1=$(jitem job-1 run 5 in-000001 sh -c 'cat /data/f; echo job-wrote > /data/from-job; pwd; echo "$CUDA_VISIBLE_DEVICES|$JOBVAR"; exit 3')
setjobs "$J1"
wait_until 60 job_is job-1 exited || bad "a job in the instance runs and ends" "$(job job-1 '.')"
expect_eq "its exit code is the job's" "$(job job-1 .exit_code)" 3
got_log() { grep -q 'x y "z"' "$FAKE/logs/job-1.0" 2>/dev/null; }
wait_until 20 got_log
expect_eq "its output is shipped as the rank's log: /data as ssh wrote it, in /root, its env" \
	"$(cat "$FAKE/logs/job-1.0" 2>/dev/null | tr '\n' ' ')" 'data-ok /root 0,1|x y "z" '
expect_eq "ssh sees what the job wrote to /data" "$(on cat /data/from-job)" job-wrote
expect_eq "the job's end leaves the instance running" \
	"$(podman inspect --format '{{.State.Status}}' "sl-$CDI-in-000001") $(inst .state)" "running running"
# a long job, cancelled: SIGTERM reaches the command inside
J2=$(jitem job-2 run 30 in-000001 sh -c 'echo $$ > /data/pid2; trap "echo got-term > /data/term; exit 0" TERM; echo up; while :; do sleep 1; done')
setjobs "$J1" "$J2"
up2() { job_is job-2 running && [ -n "$(on 'cat /data/pid2 2>/dev/null')" ]; }
wait_until 60 up2 || bad "a long job in the instance runs" "$(job job-2 '.')"
P2=$(on cat /data/pid2)
expect_eq "its process runs inside the instance" "$(on "kill -0 $P2 && echo alive")" alive
setjobs "$J1" "$(jitem job-2 stop 30 in-000001 sh -c x)"
wait_until 60 job_is job-2 stopped || bad "the cancel stops it" "$(job job-2 '.')"
expect_eq "the command inside got SIGTERM" "$(on cat /data/term)" got-term
gone2() { ! on "kill -0 $P2" 2>/dev/null; }
wait_until 10 gone2 && ok "its process inside has ended" || bad "its process inside has ended" "$(on ps -ef)"
# one that ignores SIGTERM: SIGKILL inside after its grace
J3=$(jitem job-3 run 1 in-000001 sh -c 'echo $$ > /data/pid3; trap "" TERM; while :; do sleep 1; done')
setjobs "$J3"
up3() { job_is job-3 running && [ -n "$(on 'cat /data/pid3 2>/dev/null')" ]; }
wait_until 60 up3 || bad "a job ignoring SIGTERM runs" "$(job job-3 '.')"
P3=$(on cat /data/pid3)
setjobs "$(jitem job-3 stop 1 in-000001 sh -c x)"
wait_until 60 job_is job-3 stopped || bad "the cancel stops it" "$(job job-3 '.')"
gone3() { ! on "kill -0 $P3" 2>/dev/null; }
wait_until 20 gone3 && ok "a command ignoring SIGTERM is killed inside after its grace" ||
	bad "a command ignoring SIGTERM is killed inside" "$(on ps -ef)"
expect_eq "after the cancels the instance runs and ssh works" \
	"$(podman inspect --format '{{.State.Status}}' "sl-$CDI-in-000001") $(inst .state) $(on echo ssh-ok)" \
	"running running ssh-ok"
# an instance that does not run here: the rank fails at start, saying so
setjobs "$(jitem job-4 run 1 in-000009 true)"
wait_until 30 job_is job-4 exited || bad "a job of an absent instance ends" "$(job job-4 '.')"
expect_eq "a job of an instance not running here fails at start with the reason" \
	"$(job job-4 '(.exit_code | tostring) + " " + .error')" \
	"127 cannot start: instance in-000009 is not running on this node; start it first"
setjobs
no_jobs() { [ -z "$(hb '.work[]?.job')" ]; }
wait_until 20 no_jobs || bad "the jobs are forgotten" "$(hb '.work')"

# stop and start: both disks kept, the same port and host key
want stop 1
wait_until 30 state_is stopped 1 || bad "the stop item stops it" "state $(inst .state)"
expect_eq "stopped by the agent, with a time" "$(inst '.stopped_by + " " + (.stopped_at | length | tostring)')" "agent 20"
expect_eq "the container is kept" "$(podman inspect --format '{{.State.Status}}' "sl-$CDI-in-000001" 2>&1)" exited
if on true 2>/dev/null; then bad "no login while stopped"; else ok "no login while stopped"; fi
want run 2
wait_until 60 state_is running 2 || bad "a start (epoch 2) runs it again" "state $(inst .state) $(inst .error)"
expect_eq "the same sshd port after a start" "$(inst .ssh_port)" "$SSH_PORT"
wait_until 20 on true
expect_eq "/data and /root are kept across stop and start (same host key)" \
	"$(on 'cat /data/f /root/g' | tr '\n' ' ')" "data-ok root-ok "

# the guest stops itself: reported, and not undone by the agent
on 'kill -TERM 1' >/dev/null 2>&1
wait_until 30 state_is stopped 2 || bad "a stop from inside is noticed" "state $(inst .state)"
expect_eq "stopped_by guest" "$(inst .stopped_by)" guest
sleep 3
expect_eq "the agent does not start it again by itself" "$(inst .state)" stopped

# an agent restart re-adopts the running container
want run 3
wait_until 60 state_is running 3 || bad "a start (epoch 3) runs it again" "$(inst .state) $(inst .error)"
kill -TERM "$AG_PID" && wait "$AG_PID"
expect_eq "the agent stops cleanly, the instance keeps running" "$? $(podman inspect --format '{{.State.Status}}' "sl-$CDI-in-000001")" "0 running"
rm -f "$FAKE/heartbeat.json"
start_agent
wait_until 30 state_is running 3 && ok "a restarted agent re-adopts the running instance" ||
	bad "a restarted agent re-adopts the running instance" "$(inst .state)"
grep -q 'msg="instance adopted" instance=in-000001 phase=running' "$TMP/agent.log" &&
	ok "the agent's log says it adopted it" || bad "the agent's log says it adopted it"
expect_eq "still the same port and files" "$(inst .ssh_port) $(on cat /data/f)" "$SSH_PORT data-ok"

# remove: container, data disk and host keys gone
want remove 3
wait_until 60 state_is removed 3 || bad "remove removes it" "$(inst .state) $(inst .error)"
expect_eq "the container is gone" "$(podman ps -a -q --filter "name=sl-$CDI-in-000001" | wc -l)" 0
expect_eq "the data disk and the host keys are gone" \
	"$(ls "$AG/volumes" 2>/dev/null | wc -l) $(ls "$AG/instances/in-000001/ssh" 2>/dev/null | wc -l)" "0 0"
echo '[]' >"$FAKE/instances.json"
forgotten() { [ -z "$(inst .state)" ] && [ ! -d "$AG/instances/in-000001" ]; }
wait_until 20 forgotten && ok "a removed instance the controller no longer lists is forgotten" ||
	bad "a removed instance is forgotten" "$(inst .state)"
kill -TERM "$AG_PID" && wait "$AG_PID"
expect_eq "the agent stops cleanly" "$?" 0
AG_PID=""
finish
