#!/usr/bin/env bash
# test_e2e_lib.sh - lib.sh's own contract, which every other e2e test leans on:
# a test that could not run some checks (a tool missing) ends with SKIP_RC (77,
# ctest's SKIP_RETURN_CODE), never 0; a failure still wins over a skip; and a
# test whose checks all ran and passed ends with 0.
set -u
. "$(dirname "$0")/lib.sh"
LIB="$(dirname "$0")/lib.sh"

# run_lib BODY : runs BODY in a fresh bash that sourced lib.sh; prints its
# status and, on the next lines, its output.
run_lib() {
	local out rc
	out=$(bash -c ". '$LIB'; $1" 2>&1)
	rc=$?
	printf '%s\n%s' "$rc" "$out"
}
first() { printf '%s' "${1%%$'\n'*}"; }

r=$(run_lib 'ok a; finish')
expect_eq "all checks ran and passed: 0" "$(first "$r")" 0
r=$(run_lib 'ok a; bad b; finish')
expect_eq "a failed check: 1" "$(first "$r")" 1
r=$(run_lib 'ok a; skip "no frobnicator (scripts/deps.sh installs it)"; ok never')
expect_eq "skip ends the test with 77, not 0" "$(first "$r")" 77
expect_match "skip says why" "$r" 'SKIP no frobnicator \(scripts/deps.sh installs it\)'
expect_match "and counts the skip in the summary" "$r" '1 passed, 0 failed, 1 skipped'
if printf '%s' "$r" | grep -q 'ok   never'; then bad "skip stops the test"; else ok "skip stops the test"; fi
r=$(run_lib 'bad a; skip "no frobnicator"')
expect_eq "a failure before a skip still fails (1)" "$(first "$r")" 1
r=$(run_lib 'skip_part "part one: no frobnicator"; ok b; finish')
expect_eq "skip_part: the rest runs, then 77" "$(first "$r")" 77
expect_match "after the other checks" "$r" 'ok   b'
r=$(run_lib 'skip_part "part one"; bad b; finish')
expect_eq "skip_part then a failure: 1" "$(first "$r")" 1
finish
