#!/usr/bin/env bash
# make run: the controller on its embedded SQLite store serving the demo fleet,
# and one simulated node agent per demo node (suanli-agent run --simulate TYPE,
# each with its own state directory under var/agents/NODE), joined with a join
# token from `suanli agent-token create`. Ctrl-C (or the controller stopping)
# stops every agent and the jobs they started.
#
#   SUANLI_AGENTS=all   one agent per fleet node (default; 76 for the demo fleet)
#   SUANLI_AGENTS=N     agents for the first N nodes only; the others are
#                       unreachable (on a data directory where an earlier run
#                       registered them: after --unreachable-after, 15 s, since
#                       a restarted controller gives every node a fresh grace)
#   SUANLI_AGENTS=0     no agents: the controller simulates every node (--simulate)
#   SUANLI_DATA, SUANLI_LISTEN, SUANLI_AGENTS_DIR  where things go
set -euo pipefail
B=${1:-build/release}
DATA=${SUANLI_DATA:-var/data}
LISTEN=${SUANLI_LISTEN:-127.0.0.1:7400}
AGDIR=${SUANLI_AGENTS_DIR:-var/agents}
AGENTS=${SUANLI_AGENTS:-all}
FLEET=examples/demo-fleet.yaml
URL="http://$LISTEN"
case "$AGENTS" in
all | [0-9] | [0-9][0-9] | [0-9][0-9][0-9]) ;;
*)
	echo "run.sh: SUANLI_AGENTS must be all or a number, not '$AGENTS'" >&2
	exit 2
	;;
esac
if [ ! -f "$DATA/suanli.db" ]; then
	mkdir -p "$(dirname "$DATA")"
	"$B/suanlid" init --data "$DATA" >/dev/null
fi
ADMIN=$(cat "$DATA/admin.token")

if [ "$AGENTS" = 0 ]; then
	echo "suanlid: $URL (data in $DATA, fleet $FLEET, simulated nodes, no agents)"
	exec "$B/suanlid" serve --data "$DATA" --listen "$LISTEN" \
		--fleet "$FLEET" --simulate --billing-zone Asia/Shanghai
fi

# Measured on the demo fleet (76 agents, 2 cores): about 1.5 MiB proportional
# memory (PSS) per agent, 115 MiB together, and 0.6% of one core for all of
# them at the default 5 s heartbeat; so every node gets its agent by default.
#
# Every process started from here carries this tag, jobs included (agents pass
# their environment on), so that stopping finds them all.
RUN_TAG="make-run-$$"
export SUANLI_RUN_TAG=$RUN_TAG
CTL_PID=""
AGENT_PIDS=()
stop_all() {
	trap - EXIT INT TERM
	local p
	for p in "${AGENT_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${AGENT_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	# Jobs outlive their agent by design (a restarted agent re-adopts them);
	# the demo ends them with it.
	local f
	for f in /proc/[0-9]*/environ; do
		p=${f#/proc/}
		p=${p%/environ}
		[ "$p" = $$ ] && continue
		grep -qzx "SUANLI_RUN_TAG=$RUN_TAG" "$f" 2>/dev/null && [ "$p" != "$CTL_PID" ] &&
			kill -KILL "$p" 2>/dev/null || true
	done
	if [ -n "${IMAGE:-}" ]; then
		local ids m
		ids=$(podman ps -a -q --filter "name=$RUN_TAG-" 2>/dev/null || true)
		[ -n "$ids" ] && podman rm -f -t 0 $ids >/dev/null 2>&1 || true
		# the leases' networks and user-namespace id ranges (named after --cdi-name)
		# instances' system images (their data disks are unmounted below, kept in AGDIR)
		ids=$(podman images --format '{{.Repository}}:{{.Tag}}' 2>/dev/null |
			grep -F -- "-$RUN_TAG-" || true)
		[ -n "$ids" ] && podman rmi -f $ids >/dev/null 2>&1 || true
		ids=$(podman network ls --format '{{.Name}}' 2>/dev/null | grep -F -- "-$RUN_TAG-" || true)
		[ -n "$ids" ] && podman network rm -f $ids >/dev/null 2>&1 || true
		grep -lF -- "-$RUN_TAG " /run/suanli/uid-ranges/* 2>/dev/null | xargs -r rm -f || true
		# the leases' working directories (tmpfs) the agents mounted
		for m in $(awk -v d="$(cd "$AGDIR" && pwd)/" 'index($2, d) == 1 {print $2}' /proc/mounts); do
			umount -l "$m" 2>/dev/null || true
		done
	fi
	if [ -n "$CTL_PID" ]; then
		kill -TERM "$CTL_PID" 2>/dev/null || true
		wait "$CTL_PID" 2>/dev/null || true
	fi
	echo "run.sh: stopped the controller and ${#AGENT_PIDS[@]} agents; state stays in $DATA and $AGDIR"
}
trap stop_all EXIT
trap 'exit 130' INT TERM

"$B/suanlid" serve --data "$DATA" --listen "$LISTEN" --fleet "$FLEET" \
	--billing-zone Asia/Shanghai &
CTL_PID=$!
for _ in $(seq 1 100); do
	curl -s -o /dev/null "$URL/v1/catalog" && break
	kill -0 "$CTL_PID" 2>/dev/null || exit 1
	sleep 0.1
done
cli() { "$B/suanli" "$@" --server "$URL" --token "$ADMIN"; }
JOIN=$(cli agent-token create --json | jq -r .token)
mapfile -t NODES < <(cli nodes --json | jq -r '.[] | "\(.name) \(.type)"')
n=${#NODES[@]}
[ "$AGENTS" != all ] && [ "$AGENTS" -lt "$n" ] && n=$AGENTS
mkdir -p "$AGDIR"
# Tenant work runs in containers of a small image built here from the host's
# Debian packages (scripts/build-image.py, cached; with openssh-server, whose
# sshd each instance runs); SUANLI_HOST_TENANT=T runs
# tenant T's work as host processes instead (a server T owns) and refuses others'.
AGARGS=()
if [ -n "${SUANLI_HOST_TENANT:-}" ]; then
	AGARGS=(--host-processes "$SUANLI_HOST_TENANT")
elif command -v podman >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	# one small demo image for jobs and instances: sshd (instances' SSH) and Python
	IMAGE=$(scripts/build-image.py demo base-files bash coreutils dash findutils grep sed procps \
		libc-bin python3 openssh-server)
	AGARGS=(--image "$IMAGE")
else
	echo "run.sh: no podman (or not root): jobs will not start; scripts/deps.sh installs podman" >&2
fi
for ((i = 0; i < n; i++)); do
	read -r node type <<<"${NODES[$i]}"
	cdi=()
	[ -n "${IMAGE:-}" ] && cdi=(--cdi-name "$node-$RUN_TAG")
	"$B/suanli-agent" run --server "$URL" --token "$JOIN" --node "$node" --simulate "$type" \
		--state-dir "$AGDIR/$node" "${AGARGS[@]}" "${cdi[@]}" >>"$AGDIR/$node.log" 2>&1 &
	AGENT_PIDS+=($!)
done
# The banner comes once the agents have registered, after the controller's log lines.
ready=0
for _ in $(seq 1 60); do
	ready=$(cli nodes --json | jq '[.[] | select(.state == "ready")] | length')
	[ "$ready" -ge "$n" ] && break
	sleep 0.5
done

cat <<MSG

suanlid: $URL   (data in $DATA, fleet $FLEET)
console: $URL/   (sign in as a user: $B/suanli user create --name olga --role operator --password-file FILE)
agents:  $n of ${#NODES[@]} nodes, one simulated suanli-agent each ($ready nodes ready)
         (state and logs in $AGDIR/NODE/ and $AGDIR/NODE.log)
admin token: $ADMIN

Try, in another shell:
  export SUANLI_SERVER=$URL SUANLI_TOKEN=\$(cat $DATA/admin.token)
  $B/suanli nodes
  $B/suanli tenant create acme --regions cn-east --quota gb200=72
  $B/suanli price set --model gb200 --plan hourly --price 3500
  $B/suanli topup --tenant acme --amount 10000000
  $B/suanli lease create --tenant acme --gpus 16 --model gb200 --plan hourly
  $B/suanli job run --lease LEASE -- sh -c 'echo rank \$NODE_RANK of \$NNODES on \$CUDA_VISIBLE_DEVICES'
  $B/suanli job logs JOB
  $B/suanli invoice --tenant acme --month \$(TZ=Asia/Shanghai date +%Y-%m)

An instance (a machine with SSH, a data disk and ports; image ${IMAGE:-none}):
  $B/suanli ssh-key add laptop --file ~/.ssh/id_ed25519.pub
  $B/suanli instance create --tenant acme --gpus 1 --model l40s --ssh-key laptop --volume 10 --port 8888 --json
  $B/suanli instance ssh INSTANCE      # or the "command" it printed: ssh -p PORT root@HOST
  $B/suanli instance stop INSTANCE; $B/suanli instance start INSTANCE; $B/suanli instance release INSTANCE

Ctrl-C stops the controller and the agents; state stays in $DATA and $AGDIR.
SUANLI_AGENTS=N starts agents for the first N nodes only, SUANLI_AGENTS=0 none
(the controller then simulates every node).

MSG
wait "$CTL_PID" || true
CTL_PID=""
