# agent_lib.sh - a controller and node agents as separate hosts (netns_lib.sh)
# for the agent end-to-end tests: the controller in host "ctl" (.1), agents
# in hosts of their own, every CLI and API call made from inside "ctl" (the
# test's own root namespace cannot reach the test network, by design).
#
# Sourced after lib.sh and netns_lib.sh; not a test itself. Functions:
#   ag_controller DATA FLEET ARGS...  init + serve; sets URL, PORT, ADMIN, CTL_PID
#   sl ARGS...          the suanli CLI as admin against the controller
#   api TOKEN METHOD PATH [BODY]   "STATUS BODY" (curl from inside ctl)
#   ag_join_token       prints a fresh join token (suanli agent-token create)
#   ag_start NAME HOST TOKEN [ARGS...]  suanli-agent run for node NAME in HOST
#                       (AG_ENGINE=podman: in containers of AG_IMAGE; else host
#                       processes for tenant AG_HOST_TENANT, default acme)
#                       (simulated AG_TYPE), state dir $TMP/agents/NAME; AG_PID[NAME];
#                       TOKEN "-": none (the saved credential)
#   ag_stop NAME        SIGTERM the agent and reap it
#   wait_until SECS CMD...          polls CMD every 0.2 s; false when it never held
#   node_field NAME JQ  a field of the node in `suanli nodes --json`
#   job_field ID JQ     a field of `suanli job show ID --json`
#   lease_field ID JQ   a field of GET /v1/leases/ID
: "${SUANLID:?SUANLID must point at the suanlid binary}"
: "${SUANLI_AGENT:?SUANLI_AGENT must point at the suanli-agent binary}"
URL=""
CA=""
PORT=""
ADMIN=""
CTL_PID=""
AG_TYPE=${AG_TYPE:-hgx-h100-8}
AG_HEARTBEAT=${AG_HEARTBEAT:-1}
# AG_ENGINE=podman: tenant work in containers (AG_IMAGE: the default image);
# otherwise host processes for tenant AG_HOST_TENANT (the older tests' jobs)
AG_ENGINE=${AG_ENGINE:-host}
AG_IMAGE=${AG_IMAGE:-}
AG_HOST_TENANT=${AG_HOST_TENANT:-acme}
declare -A AG_PID=()
declare -A AG_HOST=()

# ag_controller DATA FLEET ARGS... : suanlid in host ctl on a free port.
ag_controller() {
	local data=$1 fleet=$2
	shift 2
	local log="$TMP/suanlid.log"
	# TLS, as between real hosts: a certificate for the controller's
	# address, HTTPS even where the namespaces fall back to loopback.
	if ! "$SUANLID" init --data "$data" --tls-san "$(ns_addr ctl)" >/dev/null; then
		echo "suanlid init failed" >>"$log"
		return 1
	fi
	ADMIN=$(cat "$data/admin.token")
	CA="$data/tls/ca.pem"
	ns_spawn ctl "$log" "$SUANLID" serve --data "$data" --listen "$(ns_addr ctl):0" --tls \
		--fleet "$fleet" "$@"
	CTL_PID=$NS_LAST_PID
	for _ in $(seq 1 200); do
		PORT=$(sed -n 's/.*msg=listening .*port=\([0-9][0-9]*\).*/\1/p' "$log" | head -1)
		[ -n "$PORT" ] && break
		kill -0 "$CTL_PID" 2>/dev/null || break
		sleep 0.05
	done
	URL="https://$(ns_addr ctl):$PORT"
	[ -n "$PORT" ]
}

sl() { SUANLI_SERVER=$URL SUANLI_TOKEN=$ADMIN SUANLI_CA=$CA ns_exec ctl "$SUANLI" "$@"; }

api() {
	local tok=$1 method=$2 path=$3 body=${4-}
	local args=(-s -m 20 --cacert "$CA" -o "$TMP/api.body" -w '%{http_code}' -X "$method")
	[ "$tok" != "-" ] && args+=(-H "Authorization: Bearer $tok")
	[ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
	local code
	code=$(ns_exec ctl curl "${args[@]}" "$URL$path")
	printf '%s %s' "$code" "$(cat "$TMP/api.body" 2>/dev/null)"
}
status_of() { printf '%s' "${1%% *}"; }
body_of() { printf '%s' "${1#* }"; }

ag_join_token() { sl agent-token create --json | jq -r .token; }

# ag_start NAME HOST TOKEN [ARGS...] : the agent of node NAME on host HOST.
ag_start() {
	local name=$1 host=$2 tok=$3
	shift 3
	AG_HOST[$name]=$host
	mkdir -p "$TMP/agents"
	local targs=()
	[ "$tok" != "-" ] && targs=(--token "$tok")
	# On loopback every host shares lo: the agent is told its own address.
	[ "$NS_MODE" = loopback ] && targs+=(--addr "$(ns_addr "$host")")
	if [ "$AG_ENGINE" = podman ]; then
		# containers: a CDI and container name unique on this host (tests run
		# side by side)
		targs+=(--cdi-name "$name-$NS_TAG")
		[ -n "$AG_IMAGE" ] && targs+=(--image "$AG_IMAGE")
	else
		# the tests' jobs as host processes, for the one tenant they use
		targs+=(--host-processes "$AG_HOST_TENANT")
	fi
	local cmd=("$SUANLI_AGENT" run --server "$URL" --ca "$CA" "${targs[@]}" --node "$name" \
		--simulate "$AG_TYPE" --state-dir "$TMP/agents/$name" --heartbeat "$AG_HEARTBEAT" "$@")
	if [ "$AG_ENGINE" = podman ] && [ "$NS_MODE" = netns ]; then
		# only the host's network namespace: `ip netns exec` would also give
		# it a fresh /sys without the cgroup mounts podman and runc need
		nsenter --net="/var/run/netns/${NS_NETNS[$host]}" env "NS_TAG=$NS_TAG" "${cmd[@]}" \
			>>"$TMP/agent-$name.log" 2>&1 &
		NS_LAST_PID=$!
		NS_PIDS+=("$NS_LAST_PID")
	else
		ns_spawn "$host" "$TMP/agent-$name.log" "${cmd[@]}"
	fi
	AG_PID[$name]=$NS_LAST_PID
}

# ag_stop NAME : SIGTERM, reap; returns the agent's exit status (0: clean, and
# no leak under LeakSanitizer).
ag_stop() {
	local p=${AG_PID[$1]} rc=0
	kill -CONT "$p" 2>/dev/null
	kill -TERM "$p" 2>/dev/null
	wait "$p" 2>/dev/null || rc=$?
	ns_forget "$p"
	AG_PID[$1]=""
	return $rc
}


node_field() { sl nodes --json 2>/dev/null | jq -r --arg n "$1" ".[] | select(.name == \$n) | $2"; }
node_is() { [ "$(node_field "$1" .state)" = "$2" ]; }
job_field() { sl job show "$1" --json 2>/dev/null | jq -r "$2"; }
job_is() { [ "$(job_field "$1" .state)" = "$2" ]; }
lease_field() { body_of "$(api "$ADMIN" GET "/v1/leases/$1")" | jq -r "$2"; }
lease_is() { [ "$(lease_field "$1" .state)" = "$2" ]; }
# file_has FILE REGEX
file_has() { grep -Eq -- "$2" "$1" 2>/dev/null; }
# A zombie (killed, not yet reaped by whoever inherited it) is not alive.
pid_alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }

# A fatal precondition: report, dump the logs that say why, stop.
die() {
	bad "$1" "${2:-}"
	local f
	for f in "$TMP"/suanlid.log "$TMP"/agent-*.log; do
		[ -f "$f" ] && { echo "---- $(basename "$f") (tail)"; tail -n 15 "$f"; }
	done
	finish
	exit 1
}

# ag_containers_cleanup : removes every container and CDI spec of this run's
# agents (AG_ENGINE=podman), whatever state they were left in.
ag_containers_cleanup() {
	command -v podman >/dev/null 2>&1 || return 0
	local ids
	ids=$(podman ps -a -q --filter "name=$NS_TAG" 2>/dev/null)
	[ -n "$ids" ] && podman rm -f -t 0 $ids >/dev/null 2>&1
	rm -f /var/run/cdi/suanli-*"$NS_TAG".json
	# the leases' networks and id ranges (named after the agents' CDI names)
	local nets
	nets=$(podman network ls --format '{{.Name}}' 2>/dev/null | grep -F -- "$NS_TAG")
	[ -n "$nets" ] && podman network rm -f $nets >/dev/null 2>&1
	grep -lF -- "$NS_TAG" /run/suanli/uid-ranges/* 2>/dev/null | xargs -r rm -f
	# lease working directories (tmpfs) an agent left mounted
	local m
	for m in $(awk -v t="$TMP/" 'index($2, t) == 1 {print $2}' /proc/mounts); do umount -l "$m"; done
	return 0
}

# ag_image NAME PKG... : the cached local image (scripts/build-image.py) into
# AG_IMAGE; false, with the reason in AG_IMAGE_WHY, where it cannot be built.
ag_image() {
	AG_IMAGE_WHY=""
	if [ "$(id -u)" != 0 ]; then AG_IMAGE_WHY="containers need root here (uid $(id -u))"; return 1; fi
	if ! command -v podman >/dev/null 2>&1; then AG_IMAGE_WHY="podman is not installed (scripts/deps.sh)"; return 1; fi
	local t0=$SECONDS
	if ! AG_IMAGE=$("$SL_ROOT/scripts/build-image.py" "$@" 2>"$TMP/build-image.log"); then
		AG_IMAGE_WHY="the image build failed: $(tail -2 "$TMP/build-image.log")"
		return 1
	fi
	AG_IMAGE_S=$((SECONDS - t0))
	return 0
}
