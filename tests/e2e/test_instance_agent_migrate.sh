#!/usr/bin/env bash
# test_instance_agent_migrate.sh - an instance's two disks moved from one
# node's agent to another's through the controller's migration endpoints
# (contract instances.md; tests/e2e/fake_ctl.py stores the parts and checks
# size and sha256 on "done" as the controller does), with real podman and
# sshd. The two agents share this host but not their id ranges, so the copy
# must also give every file to the new node's container root:
#   - n1 runs the instance; the renter writes /data and /root; stop, export:
#     n1 uploads, reports "exported";
#   - a copy whose sha256 does not match (the fake lies about it) fails n2's
#     start with "checksum mismatch", and the old copy stays on n1;
#   - the next epoch on n2 downloads, checks, imports and runs it: the files
#     are there, owned by the container's root, writable;
#   - n1 is then told "remove": its container and disk go.
# Skipped (77) where podman, sshd or root are missing.
set -u
. "$(dirname "$0")/lib.sh"
: "${SUANLI_AGENT:?SUANLI_AGENT must point at the suanli-agent binary}"
[ "$(id -u)" = 0 ] || skip "containers need root here"
command -v podman >/dev/null || skip "podman is not installed (scripts/deps.sh)"
[ -x /usr/sbin/sshd ] && command -v ssh >/dev/null ||
	skip "openssh-server and openssh-client are not installed (scripts/deps.sh)"
TAG="tm$$"
FAKE="$TMP/fake"
mkdir -p "$FAKE"
CTL_PID=""
declare -A AGP=()
cleanup() {
	local p ids m
	for p in "${AGP[@]}"; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	[ -n "$CTL_PID" ] && kill "$CTL_PID" 2>/dev/null && wait "$CTL_PID" 2>/dev/null
	ids=$(podman ps -a -q --filter "name=sl-m-$TAG-" 2>/dev/null)
	[ -n "$ids" ] && podman rm -f -t 0 $ids >/dev/null 2>&1
	for m in n1 n2; do podman rmi -f "localhost/suanli-instance/m-$TAG-$m-in-000007:system" >/dev/null 2>&1; done
	ids=$(podman network ls --format '{{.Name}}' 2>/dev/null | grep -F -- "sl-m-$TAG-")
	[ -n "$ids" ] && podman network rm -f $ids >/dev/null 2>&1
	grep -lF -- "m-$TAG-" /run/suanli/uid-ranges/* 2>/dev/null | xargs -r rm -f
	rm -f /var/run/cdi/suanli-m-"$TAG"-*.json
	for m in $(awk -v t="$TMP/" 'index($2, t) == 1 {print $2}' /proc/mounts); do umount -l "$m"; done
	[ -n "${SL_E2E_KEEP:-}" ] && mkdir -p "$SL_E2E_KEEP" && cp "$TMP"/*.log "$SL_E2E_KEEP"/ 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

IMG=$("$SL_ROOT/scripts/build-image.py" inst base-files bash coreutils dash findutils grep sed \
	procps libc-bin python3 openssh-server 2>"$TMP/build-image.log") ||
	skip "the instance image cannot be built: $(tail -2 "$TMP/build-image.log")"
ok "the instance image $IMG"
ssh-keygen -q -t ed25519 -N '' -C alice -f "$TMP/alice"
python3 "$SL_ROOT/tests/e2e/fake_ctl.py" "$FAKE" >"$TMP/fake.log" 2>&1 &
CTL_PID=$!
wait_until 10 grep -q '^port=' "$TMP/fake.log" || skip "the fake controller does not start"
PORT=$(sed -n 's/^port=//p' "$TMP/fake.log")
echo '[]' >"$FAKE/instances.json"

# agent NODE PORTS
agent() {
	"$SUANLI_AGENT" run --server "http://127.0.0.1:$PORT" --token sl_join --node "$1" \
		--simulate hgx-h100-8 --state-dir "$TMP/$1" --cdi-name "m-$TAG-$1" --heartbeat 1 \
		--port-range "$2" --image "$IMG" >>"$TMP/agent-$1.log" 2>&1 &
	AGP[$1]=$!
}
# want NODE STATE EPOCH [MIGRATE_FROM]
want() {
	local keys
	keys=$(jq -Rs 'split("\n") | map(select(length > 0))' "$TMP/alice.pub")
	jq -n --arg st "$2" --argjson ep "$3" --arg img "$IMG" --argjson keys "$keys" \
		--arg from "${4:-}" \
		'[{instance: "in-000007", node_rank: 0, epoch: $ep, lease: "ls-000070", state: $st,
		   tenant: "acme", image: $img, gpus: [0], env: {}, cpus: 1, mem_mib: 512,
		   authorized_keys: $keys, ports: [], volume_gib: 1, stop_grace_s: 1}
		  | if $from != "" then . + {migrate_from: $from} else . end]' \
		>"$FAKE/instances-$1.json.new"
	mv "$FAKE/instances-$1.json.new" "$FAKE/instances-$1.json"
}
inst() { jq -r ".instances[]? | select(.instance == \"in-000007\") | $2" "$FAKE/heartbeat-$1.json" 2>/dev/null; }
state_is() { [ "$(inst "$1" .state) $(inst "$1" .epoch)" = "$2 $3" ]; }
SSHO=(-o BatchMode=yes -o ConnectTimeout=5 -o StrictHostKeyChecking=no
	-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -i "$TMP/alice")
on() { local p=$1; shift; ssh "${SSHO[@]}" -p "$p" root@127.0.0.1 "$@"; }

echo '[]' >"$FAKE/instances-n2.json"
want n1 run 1
agent n1 31000-31499
agent n2 31500-31999
wait_until 90 state_is n1 running 1 || die_msg=$(inst n1 .error)
if ! state_is n1 running 1; then
	bad "n1 runs the instance" "$(inst n1 .state) ${die_msg:-} $(tail -5 "$TMP/n1/instances/in-000007/op.log" 2>/dev/null)"
	finish
	exit 1
fi
P1=$(inst n1 .ssh_port)
wait_until 20 on "$P1" true || bad "sshd on n1 answers"
on "$P1" 'echo data-ok > /data/f && echo root-ok > /root/g && dd if=/dev/urandom of=/data/blob bs=1M count=3 2>/dev/null && sha256sum /data/blob > /root/blob.sum && chown 1000:1000 /data/f' ||
	bad "the renter writes /data and /root"
ok "n1 runs it; the renter wrote /data and /root"

want n1 stop 1
wait_until 30 state_is n1 stopped 1 || bad "n1 stops it" "$(inst n1 .state)"
t0=$SECONDS
want n1 export 2
wait_until 90 state_is n1 exported 2 || bad "n1 exports both disks" "$(inst n1 .state) $(inst n1 .error)"
ok "n1 exported both disks in $((SECONDS - t0)) s"
expect_eq "the controller holds both parts, checked" \
	"$(ls "$FAKE/migrations/in-000007" | tr '\n' ' ')" "data data.sha256 system system.sha256 "

# a copy whose checksum does not match: the start fails, nothing is used
touch "$FAKE/corrupt-data"
want n2 run 3 n1
wait_until 90 state_is n2 failed 3 || bad "a corrupt copy fails the start" "$(inst n2 .state)"
expect_match "the reason names the checksum" "$(inst n2 .error)" 'checksum mismatch for the data disk'
expect_eq "the old node keeps its disks" "$(ls "$TMP/n1/volumes" | tr '\n' ' ')" "in-000007 in-000007.img "
rm -f "$FAKE/corrupt-data"

t0=$SECONDS
want n2 run 4 n1
wait_until 120 state_is n2 running 4 || bad "n2 imports and runs it" "$(inst n2 .state) $(inst n2 .error)"
ok "n2 imported and started it in $((SECONDS - t0)) s"
P2=$(inst n2 .ssh_port)
wait_until 20 on "$P2" true || bad "sshd on n2 answers"
expect_eq "/data and /root came along" "$(on "$P2" 'cat /data/f /root/g' | tr '\n' ' ')" "data-ok root-ok "
expect_eq "the data's checksum holds after the copy" "$(on "$P2" 'sha256sum -c /root/blob.sum' 2>&1)" "/data/blob: OK"
expect_eq "owners are the container's own on the new node" "$(on "$P2" 'stat -c %u /data/f /root/g /data' | tr '\n' ' ')" "1000 0 0 "
on "$P2" 'echo more >> /data/f && echo more >> /root/g' && ok "the renter can write both on n2" ||
	bad "the renter can write both on n2"
b1=$(jq -r .uid_base "$TMP/n1/instances/in-000007/state.json")
b2=$(jq -r .uid_base "$TMP/n2/instances/in-000007/state.json")
[ "$b1" != "$b2" ] && ok "the two nodes gave it different id ranges ($b1, $b2)" ||
	skip_part "both nodes gave it the same id range"

want n1 remove 5
wait_until 60 state_is n1 removed 5 || bad "n1 removes its copy" "$(inst n1 .state) $(inst n1 .error)"
expect_eq "n1's container and disk are gone" \
	"$(podman ps -a -q --filter "name=sl-m-$TAG-n1-" | wc -l) $(ls "$TMP/n1/volumes" | wc -l)" "0 0"
expect_eq "n2 still runs it" "$(inst n2 .state)" running
for n in n1 n2; do
	kill -TERM "${AGP[$n]}" && wait "${AGP[$n]}"
	expect_eq "agent $n stops cleanly" "$?" 0
	unset "AGP[$n]"
done
finish
