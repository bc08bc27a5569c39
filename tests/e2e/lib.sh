# lib.sh - helpers for the end-to-end tests: each check prints one line and the
# script ends with "N passed, N failed" and a non-zero status on any failure.
# Sourced by the tests; not a test itself (CMake only registers tests/e2e/test_*.sh).
set -u
PASS=0
FAIL=0
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

finish() {
	printf '%d passed, %d failed\n' "$PASS" "$FAIL"
	[ "$FAIL" -eq 0 ]
}
