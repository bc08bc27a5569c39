#!/usr/bin/env bash
# test_make_run.sh - scripts/run.sh (make run) as a user runs it: the
# controller without --simulate plus one simulated agent per node (here the
# first 3, SUANLI_AGENTS=3), each with its own state directory, joined with a
# join token; the agents' nodes become ready and take a lease and a job; when
# run.sh is told to stop, the agents, their jobs and the controller all stop.
# Runs in a network namespace of its own (netns_lib.sh), so the script's
# default address 127.0.0.1:7400 is free; on loopback (SKIP line) a free port.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netns_lib.sh"
: "${SUANLID:?}" "${SUANLI_AGENT:?}"
B=$(dirname "$SUANLI")
[ -x "$B/suanlid" ] && [ -x "$B/suanli-agent" ] || { bad "suanlid and suanli-agent beside suanli in $B"; finish; exit 1; }

out=$(cd "$SL_ROOT" && SUANLI_AGENTS=some scripts/run.sh "$B" 2>&1)
expect_eq "a bad SUANLI_AGENTS is refused" "$?" 2
expect_match "saying what it takes" "$out" "SUANLI_AGENTS must be all or a number"

ns_init
trap 'ids=$(podman ps -a -q --filter "name=make-run-$RUN_PID-" 2>/dev/null); [ -n "$ids" ] && podman rm -f -t 0 $ids >/dev/null 2>&1; ns_cleanup; rm -rf "$TMP"' EXIT
RUN_PID=none
if [ "$(id -u)" != 0 ] || ! command -v podman >/dev/null 2>&1; then
	echo "SKIP containers: make run's jobs run in podman containers (root and scripts/deps.sh)"
	exit 77
fi
ns_create ctl 1 || { bad "host"; finish; exit 1; }
LISTEN=127.0.0.1:7400
if [ "$NS_MODE" = loopback ]; then
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % 20000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || break
	done
	LISTEN="127.0.0.1:$p"
fi
V="$TMP/var"
LOG="$TMP/run.log"
run=(env SUANLI_DATA="$V/data" SUANLI_AGENTS_DIR="$V/agents" SUANLI_AGENTS=3 \
	SUANLI_LISTEN="$LISTEN" bash -c 'cd "$1" && exec scripts/run.sh "$2"' run "$SL_ROOT" "$B")
if [ "$NS_MODE" = netns ]; then
	# the network namespace only: podman needs the host's /sys (cgroups),
	# which `ip netns exec` replaces
	nsenter --net="/var/run/netns/${NS_NETNS[ctl]}" env "NS_TAG=$NS_TAG" "${run[@]}" >>"$LOG" 2>&1 &
	NS_LAST_PID=$!
	NS_PIDS+=("$NS_LAST_PID")
else
	ns_spawn ctl "$LOG" "${run[@]}"
fi
RUN_PID=$NS_LAST_PID
# run.sh names its agents' containers after its own pid (the same process here)
CTR="make-run-$RUN_PID-"
banner() { grep -q '^agents: ' "$LOG"; }
if ! wait_until 40 banner; then
	bad "run.sh prints what it started" "$(tail -5 "$LOG")"
	finish
	exit 1
fi
expect_match "run.sh prints what it started" "$(grep '^agents: ' "$LOG")" '^agents: +3 of 76 nodes, one simulated suanli-agent each \(3 nodes ready\)'
expect_match "and where the controller listens" "$(grep '^suanlid: ' "$LOG")" "^suanlid: http://$LISTEN "
ADMIN=$(cat "$V/data/admin.token")
sl() { SUANLI_SERVER="http://$LISTEN" SUANLI_TOKEN=$ADMIN ns_exec ctl "$SUANLI" "$@"; }
page=$(ns_exec ctl curl -s -o /dev/null -w '%{http_code} %{content_type}' "http://$LISTEN/")
expect_eq "make run serves the console at / (the source tree's console/)" "$page" "200 text/html; charset=utf-8"
nodes=$(sl nodes --json)
ready=$(printf '%s' "$nodes" | jq -r '[.[] | select(.state == "ready") | .name] | join(",")')
expect_eq "the three nodes with agents are ready" "$ready" "$(printf '%s' "$nodes" | jq -r '[.[0:3][] | .name] | join(",")')"
expect_eq "the others are unreachable (no --simulate)" \
	"$(printf '%s' "$nodes" | jq '[.[] | select(.state == "unreachable")] | length')" 73
n1=$(printf '%s' "$nodes" | jq -r '.[0].name')
expect_eq "each agent has its own state directory with its credential" \
	"$(ls "$V"/agents/*/credential 2>/dev/null | wc -l)" 3
model=$(printf '%s' "$nodes" | jq -r '.[0].model')
sl tenant create acme --regions "$(printf '%s' "$nodes" | jq -r '.[0].region // "cn-east"')" >/dev/null
L=$(sl lease create --tenant acme --gpus 8 --model "$model" --json | jq -r .id)
expect_eq "a lease on a node with an agent is active" "$(sl lease show "$L" --json | jq -r .state)" active
J=$(sl job run --lease "$L" --json -- sh -c 'echo hello from rank $NODE_RANK; exec sleep 300' | jq -r .id)
hello() { sl job logs "$J" 2>/dev/null | grep -q '^\[0\] hello from rank 0$'; }
if wait_until 30 hello; then ok "a job runs on the agent and its log comes back"; else
	bad "a job runs on the agent and its log comes back" "$(sl job show "$J" 2>&1 | tail -3)"; fi
ctrs() { podman ps -a --format '{{.Names}}' 2>/dev/null | grep -c -- "$CTR"; }
expect_eq "the job runs in a container of run.sh's agents" "$(ctrs)" 1

kill -TERM "$RUN_PID"
wait "$RUN_PID" 2>/dev/null
ns_forget "$RUN_PID"
expect_match "run.sh says it stopped everything" "$(tail -1 "$LOG")" '^run.sh: stopped the controller and 3 agents'
left=$(ns_tagged_pids)
if [ -z "$left" ]; then ok "no agent, job or controller is left running"; else
	bad "no agent, job or controller is left running" "$(for p in $left; do tr '\0' ' ' <"/proc/$p/cmdline"; echo; done)"; fi
none_left() { [ "$(ctrs)" = 0 ]; }
if wait_until 10 none_left; then ok "the job's container is gone"; else
	bad "the job's container is gone" "$(podman ps -a --format '{{.Names}} {{.Status}}' | grep -- "$CTR")"; fi
expect_eq "the controller stopped cleanly (no sanitizer report)" \
	"$(grep -c 'ERROR: \(Address\|Leak\)Sanitizer\|runtime error' "$LOG" "$V"/agents/*.log | awk -F: '{s+=$NF} END {print s+0}')" 0
finish
