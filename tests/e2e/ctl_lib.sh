# ctl_lib.sh - helpers for the controller's end-to-end tests: start and stop a
# real suanlid on a free loopback port and call its API with curl. Sourced
# after lib.sh; not a test itself.
: "${SUANLID:?SUANLID must point at the suanlid binary}"
DAEMON_PID=""
PORT=""
URL=""

ctl_cleanup() {
	if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
		kill -TERM "$DAEMON_PID" 2>/dev/null
		wait "$DAEMON_PID" 2>/dev/null
	fi
	rm -rf "$TMP"
}
trap ctl_cleanup EXIT

# start_daemon LOG ARGS... : serves on a free port, sets DAEMON_PID, PORT, URL.
start_daemon() {
	local log=$1
	shift
	: >"$log"
	"$SUANLID" serve --listen 127.0.0.1:0 "$@" 2>"$log" &
	DAEMON_PID=$!
	for _ in $(seq 1 100); do
		PORT=$(sed -n 's/.*msg=listening .*port=\([0-9][0-9]*\).*/\1/p' "$log" | head -1)
		[ -n "$PORT" ] && break
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.05
	done
	URL="http://127.0.0.1:$PORT"
	[ -n "$PORT" ]
}

# stop_daemon : SIGTERM and wait; returns the daemon's exit status.
stop_daemon() {
	local rc=0
	kill -TERM "$DAEMON_PID" 2>/dev/null
	wait "$DAEMON_PID" || rc=$?
	DAEMON_PID=""
	return $rc
}

# api TOKEN METHOD PATH [BODY] [extra curl args...] : prints "STATUS BODY".
# TOKEN "-" sends no Authorization header.
api() {
	local tok=$1 method=$2 path=$3 body=${4-}
	shift 3
	[ $# -gt 0 ] && shift
	local args=(-s -o "$TMP/body" -w '%{http_code}' -X "$method")
	[ "$tok" != "-" ] && args+=(-H "Authorization: Bearer $tok")
	[ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
	local code
	code=$(curl "${args[@]}" "$@" "$URL$path")
	printf '%s %s' "$code" "$(cat "$TMP/body")"
}
# Status and body of the last api call, split.
status_of() { printf '%s' "${1%% *}"; }
body_of() { printf '%s' "${1#* }"; }
