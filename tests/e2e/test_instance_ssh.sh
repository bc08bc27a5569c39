#!/usr/bin/env bash
# test_instance_ssh.sh - instances end to end (issue 14): a real controller
# and two real agents in hosts of their own (netns_lib.sh; loopback with a
# SKIP line where namespaces are not permitted), real podman containers, the
# image's real sshd and the real ssh client from the controller's host:
#   - `suanli instance create --ssh-key` -> running; the printed SSH command's
#     host and port log in with the tenant's key, the host key is the one
#     `instance show` fingerprints; /dev holds exactly the lease's GPUs;
#   - another tenant's key is refused;
#   - /data and /root written, stop, start: both still there;
#   - `job run --instance`: the job runs inside the instance's container (it
#     reads what ssh wrote to /data, ssh reads what it wrote), its output in
#     `job logs`, its exit code the rank's, the instance keeps running; a long
#     one cancelled (the later --no-gpu recreate must still remove the
#     container: podman rm is retried after `podman container cleanup`, since
#     an ended exec session can hold the shm mount busy for a moment);
#   - idle stop: utilisation injected at 0 on the node stops an instance
#     created with --auto-stop-idle, with its reason;
#   - --migrate to the other node (its own node taken by another lease): the
#     data and the system disk checked after the copy;
#   - start --no-gpu: made anew without GPUs, both disks kept;
#   - release: the node's container and disk are gone.
# Skipped (77) where podman, sshd or root are missing.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netns_lib.sh"
. "$(dirname "$0")/agent_lib.sh"
FLEET="$SL_ROOT/tests/data/fleet/agents-small.yaml"
[ "$(id -u)" = 0 ] || { echo "SKIP containers need root"; exit 77; }
[ -x /usr/sbin/sshd ] && command -v ssh >/dev/null ||
	{ echo "SKIP openssh-server and openssh-client are not installed (scripts/deps.sh)"; exit 77; }
ns_init
inst_cleanup() {
	ag_containers_cleanup
	local ids m
	ids=$(podman images --format '{{.Repository}}:{{.Tag}}' 2>/dev/null | grep -F -- "$NS_TAG")
	[ -n "$ids" ] && podman rmi -f $ids >/dev/null 2>&1
	for m in $(awk -v t="$TMP/" 'index($2, t) == 1 {print $2}' /proc/mounts); do umount -l "$m"; done
}
trap 'inst_cleanup; ns_cleanup; [ -n "${SL_E2E_KEEP:-}" ] && mkdir -p "$SL_E2E_KEEP" && cp "$TMP"/*.log "$SL_E2E_KEEP"/ 2>/dev/null; rm -rf "$TMP"' EXIT
if ! ag_image demo base-files bash coreutils dash findutils grep sed procps libc-bin python3 \
	openssh-server; then
	echo "SKIP containers: $AG_IMAGE_WHY"
	exit 77
fi
ok "the demo image $AG_IMAGE (built or cached in ${AG_IMAGE_S}s)"
AG_ENGINE=podman
ns_create ctl 1 && ns_create h1 2 && ns_create h2 3 || die "hosts are created"
ag_controller "$TMP/data" "$FLEET" --heartbeat 1 --unreachable-after 30 --down-after 120 ||
	die "controller starts"
JOIN=$(ag_join_token)
ag_start e2e-h100-01 h1 "$JOIN" --port-range 31000-31499
ag_start e2e-h100-02 h2 "$JOIN" --port-range 31500-31999
wait_until 30 node_is e2e-h100-01 ready && wait_until 30 node_is e2e-h100-02 ready ||
	die "two agents ready"
ok "two agents ready ($NS_MODE)"
sl tenant create acme >/dev/null && sl tenant create beta >/dev/null || die "tenants"
sl price set --model h100-sxm --plan hourly --price 3600 >/dev/null
sl price set --plan storage --price 3000 >/dev/null
sl topup --tenant acme --amount 100000000 >/dev/null
sl topup --tenant beta --amount 100000000 >/dev/null
sl image add demo --ref "$AG_IMAGE" --default --description "sshd and Python" >/dev/null ||
	die "the demo image is in the catalog"
tok() { body_of "$(api "$ADMIN" POST /v1/tokens "{\"role\":\"tenant\",\"tenant\":\"$1\",\"user\":\"$2\"}")" | jq -r .token; }
ACME=$(tok acme alice)
BETA=$(tok beta bob)
as() { local t=$1; shift; SUANLI_SERVER=$URL SUANLI_TOKEN=$t SUANLI_CA=$CA ns_exec ctl "$SUANLI" "$@"; }
ssh-keygen -q -t ed25519 -N '' -C alice@laptop -f "$TMP/alice"
ssh-keygen -q -t ed25519 -N '' -C bob@home -f "$TMP/bob"
as "$ACME" ssh-key add laptop --file "$TMP/alice.pub" >/dev/null || die "alice's key"
as "$BETA" ssh-key add home --file "$TMP/bob.pub" >/dev/null || die "bob's key"
ishow() { as "$ACME" instance show "$1" --json 2>/dev/null | jq -r "$2"; }
istate() { [ "$(ishow "$1" .state)" = "$2" ]; }
SSHO=(-o BatchMode=yes -o ConnectTimeout=5 -o StrictHostKeyChecking=yes
	-o UserKnownHostsFile="$TMP/known_hosts" -o LogLevel=ERROR)
# on ID KEY CMD... : ssh into the instance's first node from the controller's host
on() {
	local id=$1 key=$2
	shift 2
	ns_exec ctl ssh "${SSHO[@]}" -i "$TMP/$key" -p "$(ishow "$id" '.ssh[0].port')" \
		"root@$(ishow "$id" '.ssh[0].host')" "$@"
}
# known_hosts: the key whose fingerprint `instance show` gives, fetched from
# the agent's state directory (what the renter would compare by eye)
known() {
	local id=$1 node host port fp pub
	node=$(ishow "$id" '.ssh[0].node')
	host=$(ishow "$id" '.ssh[0].host')
	port=$(ishow "$id" '.ssh[0].port')
	pub="$TMP/agents/$node/instances/$id/ssh/ssh_host_ed25519_key.pub"
	fp=$(ssh-keygen -lf "$pub" | awk '{print $2}')
	expect_eq "instance show's host key fingerprint is the node's key for $id" \
		"$(ishow "$id" "[.host_keys[] | select(.node == \"$node\") | .fingerprint][0]")" "$fp"
	echo "[$host]:$port $(cut -d' ' -f1,2 "$pub")" >>"$TMP/known_hosts"
}

t0=$SECONDS
out=$(as "$ACME" instance create --gpus 2 --model h100-sxm --ssh-key laptop --volume 1 \
	--port 8888 --json)
ID=$(printf '%s' "$out" | jq -r .id)
expect_match "instance create answers an id" "$ID" '^in-[0-9]{6}$'
wait_until 90 istate "$ID" running || die "the instance runs" "$(ishow "$ID" '[.state, .reason] | join(": ")')"
ok "the instance runs ($((SECONDS - t0)) s after create)"
expect_match "the SSH command names the node's address and a port of the range" \
	"$(ishow "$ID" '.ssh[0].command')" "^ssh -p 31[0-9]{3} root@($(ns_addr h1)|$(ns_addr h2))$"
known "$ID"
wait_until 20 on "$ID" alice true || die "alice logs in" "$(on "$ID" alice true 2>&1)"
ok "alice logs in with her key ($((SECONDS - t0)) s from create to a login)"
L=$(ishow "$ID" .lease)
want=$(body_of "$(api "$ADMIN" GET "/v1/leases/$L")" | jq -r '[.placement[0].gpus[] | "nvidia\(.)"] + ["nvidiactl"] | join(" ")')
expect_eq "/dev holds exactly the lease's GPUs" "$(on "$ID" alice 'ls /dev | grep nvidia | tr "\n" " "' | sed 's/ $//')" "$want"
out=$(on "$ID" bob true 2>&1)
expect_eq "bob (another tenant) is refused" "$? $(printf '%s' "$out" | grep -c 'Permission denied')" "255 1"
on "$ID" alice 'echo data-ok > /data/f && echo root-ok > /root/g && dd if=/dev/urandom of=/data/blob bs=1M count=2 2>/dev/null && sha256sum /data/blob > /root/sum' ||
	bad "alice writes /data and /root"

as "$ACME" instance stop "$ID" >/dev/null
wait_until 30 istate "$ID" stopped || bad "stop stops it" "$(ishow "$ID" .state)"
as "$ACME" instance start "$ID" >/dev/null
wait_until 60 istate "$ID" running || bad "start runs it again" "$(ishow "$ID" '[.state, .reason] | join(": ")')"
wait_until 20 on "$ID" alice true
expect_eq "/data and /root are still there after stop and start" \
	"$(on "$ID" alice 'cat /data/f /root/g' | tr '\n' ' ')" "data-ok root-ok "

# jobs inside the instance (podman exec in its container on its node)
jshow() { as "$ACME" job show "$1" --json 2>/dev/null | jq -r "$2"; }
jstate() { [ "$(jshow "$1" .state)" = "$2" ]; }
out=$(as "$ACME" job run --instance "$ID" --json -- sh -c 'cat /data/f; echo from-job > /data/j; exit 3' 2>&1)
J1=$(printf '%s' "$out" | jq -r .id 2>/dev/null)
wait_until 60 jstate "$J1" failed || bad "a job in the instance runs and fails" "$out $(jshow "$J1" '[.state, .reason] | join(": ")')"
expect_eq "the command's exit code is the rank's" "$(jshow "$J1" '.ranks[0].exit_code')" 3
jlog() { as "$ACME" job logs "$J1" 2>/dev/null | grep -q data-ok; }
wait_until 30 jlog && ok "job logs shows its output: /data as ssh wrote it" ||
	bad "job logs shows its output" "$(as "$ACME" job logs "$J1" 2>&1)"
expect_eq "ssh reads what the job wrote to /data" "$(on "$ID" alice cat /data/j)" from-job
expect_eq "the instance keeps running after the job" "$(ishow "$ID" .state) $(on "$ID" alice echo ssh-ok)" \
	"running ssh-ok"
J9=$(as "$ACME" job run --instance "$ID" --stop-grace 2 --json -- sh -c 'sleep 300' 2>&1 | jq -r .id)
wait_until 60 jstate "$J9" running
as "$ACME" job cancel "$J9" >/dev/null
wait_until 30 jstate "$J9" cancelled
expect_eq "a cancelled job in the instance" "$(jshow "$J9" .state)" cancelled
# idle stop: every GPU of its node at 0%
out=$(as "$ACME" instance create --gpus 1 --model h100-sxm --ssh-key laptop --auto-stop-idle 10s --json 2>&1)
ID2=$(printf '%s' "$out" | jq -r .id 2>/dev/null)
wait_until 90 istate "$ID2" running || bad "the idle test's instance runs" "$out $(ishow "$ID2" .state)"
N2=$(ishow "$ID2" '.nodes[0]')
echo "* 0" >"$TMP/agents/$N2/inject/util"
idle() { ! istate "$ID2" running; }
wait_until 60 idle && wait_until 30 istate "$ID2" stopped
expect_match "utilisation at 0: stopped after the set time, with the reason" "$(ishow "$ID2" .reason)" "idle"
rm -f "$TMP/agents/$N2/inject/util"

# --migrate: its node taken by another lease
as "$ACME" instance stop "$ID" >/dev/null
wait_until 30 istate "$ID" stopped || bad "stopped before the move" "$(ishow "$ID" .state)"
home=$(ishow "$ID" '.nodes[0]')
for _ in 1 2; do
	B=$(body_of "$(api "$BETA" POST /v1/leases '{"gpus":8,"models":["h100-sxm"]}')" | jq -r .id)
	[ "$(body_of "$(api "$BETA" GET "/v1/leases/$B")" | jq -r '.placement[0].node')" = "$home" ] && break
done
out=$(as "$ACME" instance start "$ID" 2>&1)
expect_match "a start on a taken node names its choices" "$out" "--migrate"
t1=$SECONDS
out=$(as "$ACME" instance start "$ID" --migrate --json 2>&1)
expect_match "start --migrate moves it to the other node" "$(printf '%s' "$out" | jq -r '.nodes[0]' 2>&1)" "e2e-h100-0[12]"
wait_until 120 istate "$ID" running || bad "the moved instance runs" "$(ishow "$ID" '[.state, .reason] | join(": ")')"
new=$(ishow "$ID" '.nodes[0]')
[ "$new" != "$home" ] && ok "it runs on the other node $new ($((SECONDS - t1)) s for the move)" ||
	bad "it runs on the other node" "$new"
known "$ID"
wait_until 20 on "$ID" alice true || bad "alice logs in on the new node"
expect_eq "the data and the system disk came along, checked" \
	"$(on "$ID" alice 'cat /data/f /root/g; sha256sum -c /root/sum' | tr '\n' ' ')" "data-ok root-ok /data/blob: OK "
gone() { [ "$(podman ps -a -q --filter "name=sl-$home-$NS_TAG-$ID" | wc -l)" = 0 ] &&
	[ ! -e "$TMP/agents/$home/volumes/$ID.img" ]; }
wait_until 60 gone && ok "the old node's copy is removed once the new one runs" ||
	bad "the old node's copy is removed"

# --no-gpu: the same container made anew without GPUs (a new config), the
# system disk kept through a commit of it, the data disk there
as "$ACME" instance stop "$ID" >/dev/null
wait_until 30 istate "$ID" stopped || bad "stopped before --no-gpu" "$(ishow "$ID" .state)"
as "$ACME" instance start "$ID" --no-gpu >/dev/null
wait_until 60 istate "$ID" running || bad "start --no-gpu runs it" "$(ishow "$ID" '[.state, .reason] | join(": ")')"
expect_eq "--no-gpu: no GPU device, /data and /root kept" \
	"$(on "$ID" alice 'ls /dev | grep -c nvidia; cat /data/f /root/g' | tr '\n' ' ')" "0 data-ok root-ok "

as "$ACME" instance release "$ID" >/dev/null
gone2() { [ "$(podman ps -a -q --filter "name=sl-$new-$NS_TAG-$ID" | wc -l)" = 0 ] &&
	[ ! -e "$TMP/agents/$new/volumes/$ID.img" ]; }
wait_until 60 gone2 && ok "release removes the container and the data disk" ||
	bad "release removes the container and the data disk"
as "$ACME" instance release "$ID2" >/dev/null
ag_stop e2e-h100-01 && ag_stop e2e-h100-02
expect_eq "the agents stop cleanly" "$?" 0
finish
