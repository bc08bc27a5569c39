# netns_lib.sh - hosts for the end-to-end tests as network namespaces: every
# host is a namespace whose eth0 is one end of a veth pair; the other end sits
# on a bridge inside a dedicated "switch" namespace, so the root namespace's
# links are never touched and cutting a host's link (ns_link_down) is a link
# state change on the switch side, as a pulled cable would be.
#
# Names are unique per test run (the shell's pid), addresses private
# (10.77.0.0/24 by default, NS_SUBNET to change). ns_cleanup (installed as the
# EXIT trap by ns_init) kills every process started with ns_spawn, every
# process left in the namespaces and every process carrying this run's tag in
# its environment (NS_TAG=<run>: ns_spawn sets it for what it starts, and the
# tests give it to their jobs with --env, so a job that outlives a SIGKILLed
# agent is found too), then deletes the namespaces, also on failure.
#
# Without permission to create namespaces (not root, no CAP_NET_ADMIN, no
# `ip`), ns_init prints one "SKIP netns: <reason>" line and the same helpers
# run every host on loopback instead: each host gets its own 127.77.0.X
# address (all of 127/8 reaches lo), ns_exec runs the command directly and
# ns_link_down stops the host's processes with SIGSTOP (a partition as the
# controller sees it: no reports arrive; the host's jobs keep running), so the
# tests still assert everything instead of passing vacuously.
#
# Sourced after lib.sh; not a test itself. Functions:
#   ns_init            decide the mode (NS_MODE=netns|loopback), make the switch
#   ns_create NAME N   a host NAME with address <subnet>.N; sets NS_ADDR[NAME]
#   ns_addr NAME       prints the host's address
#   ns_exec NAME CMD.. runs CMD in the host (foreground)
#   ns_spawn NAME LOG CMD..  starts CMD in the host in the background (output
#                      appended to LOG, NS_TAG in its environment); sets NS_LAST_PID
#   ns_forget PID      a spawned process the test stopped and reaped itself
#   ns_link_down NAME / ns_link_up NAME   cut / restore the host's link
#   ns_tagged_pids     pids of every live process carrying this run's tag
#   ns_cleanup         everything above undone (idempotent; the EXIT trap)
#
# SL_E2E_NO_NETNS=1 forces the loopback mode (to test it where netns works);
# SL_E2E_KEEP=DIR keeps the run's *.log files there.

NS_RUN="sl$$"
NS_MODE=""
NS_REASON=""
NS_SUBNET=${NS_SUBNET:-10.77.0}
NS_SWITCH=""
NS_HOSTS=()
NS_PIDS=()
NS_LAST_PID=""
NS_TAG="${NS_RUN}-$(date +%s%N)"
declare -A NS_ADDR=()
declare -A NS_NETNS=()
declare -A NS_VETH=()
declare -A NS_HOST_PIDS=()
NS_CLEANED=0

ns_cleanup() {
	[ "$NS_CLEANED" = 1 ] && return 0
	NS_CLEANED=1
	local p
	# Stopped processes cannot act on SIGTERM: continue them first.
	for p in "${NS_PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; done
	for p in "${NS_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for _ in $(seq 1 40); do
		local alive=0
		for p in "${NS_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && break
		sleep 0.1
	done
	for p in "${NS_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${NS_PIDS[@]}"; do wait "$p" 2>/dev/null; done
	ns_kill_tagged
	local h
	if [ "$NS_MODE" = netns ]; then
		for h in "${NS_HOSTS[@]}"; do
			for p in $(ip netns pids "${NS_NETNS[$h]}" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
			ip netns del "${NS_NETNS[$h]}" 2>/dev/null
		done
		[ -n "$NS_SWITCH" ] && ip netns del "$NS_SWITCH" 2>/dev/null
	fi
	return 0
}

# Every process whose environment carries this run's tag (jobs that agents
# started in their own process groups, which outlive a SIGKILLed agent).
ns_kill_tagged() {
	local f p
	for f in /proc/[0-9]*/environ; do
		p=${f#/proc/}
		p=${p%/environ}
		[ "$p" = "$$" ] && continue
		if grep -qzx "NS_TAG=$NS_TAG" "$f" 2>/dev/null; then
			kill -KILL "$p" 2>/dev/null
		fi
	done
}

# Pids of the processes of this run's tag (for the tests' "still running" checks).
ns_tagged_pids() {
	local f p
	for f in /proc/[0-9]*/environ; do
		p=${f#/proc/}
		p=${p%/environ}
		[ "$p" = "$$" ] && continue
		grep -qzx "NS_TAG=$NS_TAG" "$f" 2>/dev/null && echo "$p"
	done
	return 0
}

ns_init() {
	# SL_E2E_KEEP=DIR keeps the run's logs (controller, agents) there.
	trap 'ns_cleanup; [ -n "${SL_E2E_KEEP:-}" ] && mkdir -p "$SL_E2E_KEEP" && cp "$TMP"/*.log "$SL_E2E_KEEP"/ 2>/dev/null; rm -rf "$TMP"' EXIT
	trap 'exit 130' INT TERM
	if [ -n "${SL_E2E_NO_NETNS:-}" ]; then
		NS_REASON="SL_E2E_NO_NETNS is set"
	elif ! command -v ip >/dev/null 2>&1; then
		NS_REASON="the ip command (iproute2) is not installed"
	else
		NS_SWITCH="${NS_RUN}-sw"
		local err
		if ! err=$(ip netns add "$NS_SWITCH" 2>&1); then
			NS_REASON="ip netns add is not permitted here (uid $(id -u): $err)"
			NS_SWITCH=""
		elif ! err=$({ ip -n "$NS_SWITCH" link add br0 type bridge &&
			ip -n "$NS_SWITCH" link set br0 up; } 2>&1); then
			NS_REASON="cannot make a bridge in a namespace ($err)"
			ip netns del "$NS_SWITCH" 2>/dev/null
			NS_SWITCH=""
		fi
	fi
	if [ -n "$NS_REASON" ]; then
		NS_MODE=loopback
		NS_SUBNET=127.77.0
		printf 'SKIP netns: %s; running the same checks over loopback (127.77.0.X)\n' "$NS_REASON"
	else
		NS_MODE=netns
	fi
}

# ns_create NAME N : host NAME at address <subnet>.N (N in 1..254).
ns_create() {
	local name=$1 n=$2
	NS_ADDR[$name]="$NS_SUBNET.$n"
	NS_HOSTS+=("$name")
	NS_HOST_PIDS[$name]=""
	[ "$NS_MODE" = netns ] || return 0
	local ns="${NS_RUN}-$name" veth="v${NS_RUN}-$n"
	veth=${veth:0:15}
	NS_NETNS[$name]=$ns
	NS_VETH[$name]=$veth
	ip netns add "$ns" || return 1
	ip -n "$NS_SWITCH" link add "$veth" type veth peer name eth0 netns "$ns" || return 1
	ip -n "$NS_SWITCH" link set "$veth" master br0 up || return 1
	ip -n "$ns" addr add "${NS_ADDR[$name]}/24" dev eth0 || return 1
	ip -n "$ns" link set eth0 up || return 1
	ip -n "$ns" link set lo up || return 1
}

# ns_create_slow NAME N MS LOSS : ns_create, but the host's link to the switch
# delays every frame by MS milliseconds and drops LOSS percent of them, each
# way (tests/e2e/delay_line.py: two TAP devices and a copier between them, for
# kernels without tc netem). Loopback mode: as ns_create (no delay).
ns_create_slow() {
	local name=$1 n=$2 ms=$3 loss=$4
	NS_ADDR[$name]="$NS_SUBNET.$n"
	NS_HOSTS+=("$name")
	NS_HOST_PIDS[$name]=""
	[ "$NS_MODE" = netns ] || return 0
	local ns="${NS_RUN}-$name" tap="t${NS_RUN}-$n" log="$TMP/delay-$name.log"
	tap=${tap:0:15}
	NS_NETNS[$name]=$ns
	NS_VETH[$name]=$tap
	ip netns add "$ns" || return 1
	ip -n "$ns" tuntap add dev eth0 mode tap || return 1
	ip -n "$NS_SWITCH" tuntap add dev "$tap" mode tap || return 1
	ip -n "$NS_SWITCH" link set "$tap" master br0 up || return 1
	ip -n "$ns" addr add "${NS_ADDR[$name]}/24" dev eth0 || return 1
	ip -n "$ns" link set eth0 up || return 1
	ip -n "$ns" link set lo up || return 1
	python3 "$SL_ROOT/tests/e2e/delay_line.py" "$ns" eth0 "$NS_SWITCH" "$tap" "$ms" "$loss" >>"$log" 2>&1 &
	NS_PIDS+=("$!")
	local i
	for i in $(seq 1 100); do
		grep -q 'attached' "$log" 2>/dev/null && return 0
		kill -0 "$!" 2>/dev/null || break
		sleep 0.05
	done
	cat "$log" >&2
	return 1
}

ns_addr() { printf '%s' "${NS_ADDR[$1]}"; }

# ns_exec NAME CMD... : CMD inside the host.
ns_exec() {
	local name=$1
	shift
	if [ "$NS_MODE" = netns ]; then
		ip netns exec "${NS_NETNS[$name]}" "$@"
	else
		"$@"
	fi
}

# ns_spawn NAME LOG CMD... : CMD in the background inside the host; NS_LAST_PID.
ns_spawn() {
	local name=$1 log=$2
	shift 2
	if [ "$NS_MODE" = netns ]; then
		ip netns exec "${NS_NETNS[$name]}" env "NS_TAG=$NS_TAG" "$@" >>"$log" 2>&1 &
	else
		env "NS_TAG=$NS_TAG" "$@" >>"$log" 2>&1 &
	fi
	NS_LAST_PID=$!
	NS_PIDS+=("$NS_LAST_PID")
	NS_HOST_PIDS[$name]="${NS_HOST_PIDS[$name]} $NS_LAST_PID"
}

# ns_forget PID : a process the test stopped and reaped itself.
ns_forget() {
	local keep=() p
	for p in "${NS_PIDS[@]}"; do [ "$p" != "$1" ] && keep+=("$p"); done
	NS_PIDS=("${keep[@]}")
}

# ns_link_down NAME / ns_link_up NAME : cut / restore the host's link (the switch
# side of its veth). On loopback: SIGSTOP / SIGCONT of the host's spawned processes.
ns_link_down() {
	if [ "$NS_MODE" = netns ]; then
		ip -n "$NS_SWITCH" link set "${NS_VETH[$1]}" down
	else
		local p
		for p in ${NS_HOST_PIDS[$1]}; do kill -STOP "$p" 2>/dev/null; done
		return 0
	fi
}
ns_link_up() {
	if [ "$NS_MODE" = netns ]; then
		ip -n "$NS_SWITCH" link set "${NS_VETH[$1]}" up
	else
		local p
		for p in ${NS_HOST_PIDS[$1]}; do kill -CONT "$p" 2>/dev/null; done
		return 0
	fi
}
