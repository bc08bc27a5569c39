#!/usr/bin/env bash
# bench/faults.sh - storage faults under the real daemon at every I/O point
# (issue 16): runs tests/e2e/test_ctl_faults.sh with FAULTS_STEP=1, so the
# Nth write/sync of the store's files fails for every N the scripted workload
# (6 leases, 6 top-ups, their audit entries) reaches, with EIO, ENOSPC, and a
# torn write that kills the process there. make check runs the same script on
# a tenth of the points; this is the full sweep, too slow for make check
# (one test process per fault kind, side by side: about half an hour on a
# busy 2-core machine).
#
# Each run: the daemon must stop by itself at a failed commit (or refuse to
# start), answer nothing it did not store, and restart consistent: every
# acknowledged lease there, at most one more; the balance and the ledger's
# top-ups equal the acknowledged top-ups (at most the one in flight besides);
# `suanli audit verify` intact.
#
# Usage: bench/faults.sh [BUILD_DIR] [RESULTS_MD]  (default build/release,
#        bench/results/faults.md: its section "## Every I/O point under the
#        real daemon" is replaced, or appended when missing)
# env:   FAULTS_MODES (default "eio enospc torn"), FAULTS_FROM_LOG (render a
#        finished sweep's lines, FAULTS_T0/FAULTS_T1 its start and end)
set -uo pipefail
export LC_ALL=C
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build/release}
out=${2:-$root/bench/results/faults.md}
case $build in /*) ;; *) build=$root/$build ;; esac
for b in suanlid suanli libfaultfs.so; do
	[ -e "$build/$b" ] || { echo "faults.sh: no $build/$b (cmake --build $build --target suanlid suanli faultfs)" >&2; exit 1; }
done
log=$(mktemp "${TMPDIR:-/tmp}/suanli-faults-XXXXXX")
trap 'rm -f "$log"' EXIT
t0=${FAULTS_T0:-$(date +%s)}
load0=${FAULTS_LOAD0:-$(cut -d' ' -f1-3 /proc/loadavg)}
# one test process per fault kind, side by side (each has its own data dir
# and port): the sweep is mostly waiting on processes and fsyncs.
# FAULTS_FROM_LOG=FILE: no sweep, the table from an earlier sweep's lines.
if [ -n "${FAULTS_FROM_LOG:-}" ]; then
	cp "$FAULTS_FROM_LOG" "$log"
	: >"$log.out"
	rc=${FAULTS_RC:-0}
else
pids=()
for mode in ${FAULTS_MODES:-eio enospc torn}; do
	SUANLID=$build/suanlid SUANLI=$build/suanli SL_ROOT=$root SL_FAULTFS=$build/libfaultfs.so \
		FAULTS_STEP=1 FAULTS_MODES=$mode FAULTS_LOG=$log.$mode \
		nice -n 5 bash "$root/tests/e2e/test_ctl_faults.sh" >"$log.out.$mode" 2>&1 &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
cat "$log".eio "$log".enospc "$log".torn >"$log" 2>/dev/null
cat "$log".out.* >"$log.out"
rm -f "$log".eio "$log".enospc "$log".torn "$log".out.*
fi
t1=${FAULTS_T1:-$(date +%s)}
total=$(awk '{print $2}' "$log" | sort -n | tail -1)
section=$log.md
{
	echo "## Every I/O point under the real daemon (bench/faults.sh)"
	echo
	echo "- date: $(date -u -d @"$t0" +%Y-%m-%dT%H:%MZ) to $(date -u -d @"$t1" +%H:%MZ); machine: $(uname -srm); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) online cores"
	echo "- load average at start / end (other work on the machine; it slows the sweep, it changes no outcome): $load0 / $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- command: \`bench/faults.sh ${1:-build/release}\` (build: $(basename "$build"), suanli ${FAULTS_REV:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null)}); tests/e2e/test_ctl_faults.sh with FAULTS_STEP=1; $((t1 - t0)) s; the test's own checks: exit $rc"
	echo "- workload: 6 x (POST /v1/leases, POST /v1/tenants/acme/topups of 100 x i), each with its audit entry, stopping at the first request not acknowledged; it reaches $total write/sync/truncate calls on the store's files (dry run)"
	echo
	echo "| fault | I/O points tried | fault during start-up (refused to start) | stopped by itself mid-workload | served the whole workload (the fault fell on a later write: the shutdown's) | restarted consistent | acknowledged requests lost | balance or ledger off | audit log not intact |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	for mode in ${FAULTS_MODES:-eio enospc torn}; do
		awk -v m="$mode" '$1 == m {
			n++; if ($3 == "no") st++; else if ($6 == "running") run++; else stop++
			if ($7 == "yes") ok++
			if ($0 ~ /lease-lost/) lost++
			if ($0 ~ /balance|ledger/) bal++
			if ($0 ~ /audit/) aud++
		} END {
			name = m == "eio" ? "EIO" : m == "enospc" ? "ENOSPC" : "torn write + crash"
			printf "| %s | %d | %d | %d | %d | %d | %d | %d | %d |\n", name, n, st, stop, run, ok, lost, bal, aud
		}' "$log"
	done
	echo
	echo "Points where the whole workload was served before the fault, by mode: $(awk '$6 == "running" {a[$1] = a[$1] " " $2} END {for (m in a) printf "%s at%s; ", m, a[m]}' "$log")"
	bad=$(awk '$7 != "yes"' "$log")
	if [ -n "$bad" ]; then
		echo
		echo "Runs that were not consistent (mode, point, started, acknowledged leases, paid, exit, -, what):"
		echo
		echo '```'
		echo "$bad"
		echo '```'
	fi
} >"$section"
# the section in place of the old one (up to the next "## " heading)
mkdir -p "$(dirname "$out")"
touch "$out"
awk -v sec="$section" '
	/^## Every I\/O point under the real daemon/ { skip = 1; while ((getline l < sec) > 0) print l; done = 1; next }
	skip && /^## / { skip = 0 }
	!skip { print }
	END { if (!done) { print ""; while ((getline l < sec) > 0) print l } }' "$out" >"$out.new" && mv "$out.new" "$out"
cat "$section"
rm -f "$section"
tail -5 "$log.out" >&2
rm -f "$log.out"
exit $rc
