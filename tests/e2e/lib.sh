# lib.sh - helpers for the end-to-end tests: each check prints one line and the
# script ends with "N passed, N failed" and a non-zero status on any failure.
# A test that cannot run here (a tool missing that scripts/deps.sh installs)
# says why with skip or skip_part and ends with SKIP_RC (77), which CMake sets
# as ctest's SKIP_RETURN_CODE: ctest reports it as skipped, never as passed.
# Sourced by the tests; not a test itself (CMake only registers tests/e2e/test_*.sh).
set -u
PASS=0
FAIL=0
SKIPPED=0
SKIP_RC=77
: "${SUANLI:?SUANLI must point at the suanli binary}"
: "${SL_ROOT:?SL_ROOT must point at the repository}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

ok() { PASS=$((PASS + 1)); printf 'ok   %s\n' "$1"; }
bad() { FAIL=$((FAIL + 1)); printf 'FAIL %s\n' "$1"; [ -n "${2:-}" ] && printf '     %s\n' "$2"; }

# expect_eq NAME GOT WANT
expect_eq() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1" "got '$2', want '$3'"; fi; }
# expect_match NAME TEXT REGEX
expect_match() { if printf '%s' "$2" | grep -Eq -- "$3"; then ok "$1"; else bad "$1" "'$3' not in: $2"; fi; }

# wait_until SECS CMD... : true as soon as CMD succeeds, false after SECS
# (states are waited for, never timed).
wait_until() {
	local secs=$1
	shift
	local end=$((SECONDS + secs))
	while :; do
		"$@" && return 0
		[ $SECONDS -ge $end ] && return 1
		sleep 0.2
	done
}

# wait_pid SECS PID : the exit status of background child PID, waiting at most
# SECS for it; past that it is killed and the status is 124, so that a test
# whose daemon died never hangs on a child waiting for it.
wait_pid() {
	local end=$((SECONDS + $1))
	while kill -0 "$2" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.2; done
	if kill -0 "$2" 2>/dev/null; then
		kill -KILL "$2" 2>/dev/null
		wait "$2" 2>/dev/null
		return 124
	fi
	wait "$2"
}

# skip_part REASON : some checks cannot run here; the rest go on, and finish
# ends with SKIP_RC unless a check failed.
skip_part() { SKIPPED=$((SKIPPED + 1)); printf 'SKIP %s\n' "$1"; }
# skip REASON : the rest of the test cannot run here; ends the script now,
# with SKIP_RC, or 1 if a check before it failed.
skip() {
	skip_part "$1"
	finish
	exit $?
}

# finish : the summary; status 0 when everything ran and passed, 1 on any
# failure, SKIP_RC when nothing failed but some checks were skipped.
finish() {
	if [ "$SKIPPED" -gt 0 ]; then
		printf '%d passed, %d failed, %d skipped\n' "$PASS" "$FAIL" "$SKIPPED"
	else
		printf '%d passed, %d failed\n' "$PASS" "$FAIL"
	fi
	[ "$FAIL" -eq 0 ] || return 1
	[ "$SKIPPED" -eq 0 ] || return "$SKIP_RC"
}
