#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] [HARNESS...] - make fuzz: builds the libFuzzer
# harnesses (tests/fuzz, clang, build/fuzz) and runs each until it has used
# SECONDS of CPU time (default FUZZ_CPU_SECONDS, else FUZZ_SECONDS, else
# 600: ten CPU-minutes), starting from its committed corpus (copied: new
# inputs stay in build/fuzz/corpus). CPU time, not wall time: on a shared
# machine a wall-clock budget says little, so each fuzzer's utime+stime
# (/proc/PID/stat, all its threads) is watched and it is told to stop
# (SIGUSR1: libFuzzer prints its final stats and exits) once it reaches the
# target. Runs niced (FUZZ_NICE, default 19) and FUZZ_JOBS at once (default
# 1). HARNESS: names like fuzz_http or http (default: all of tests/fuzz).
#
# Afterwards the grown corpus is replayed once (-runs=0) so that
# LeakSanitizer's check at a normal exit runs too; its leaks count.
# Each harness's figures go to build/fuzz/rows/NAME; bench/results/fuzz.md
# is written from the rows of every harness of tests/fuzz that has one, so
# harnesses can be run in several calls (FUZZ_REPORT_ONLY=1 just writes it;
# FUZZ_NO_BUILD=1 skips the build). Exit 1 when a harness crashed or
# leaked (its reproducer is in build/fuzz/artifacts/NAME/); exit 77 when
# clang or libFuzzer is missing.
set -u
cd "$(dirname "$0")/.."
CPU=${1:-${FUZZ_CPU_SECONDS:-${FUZZ_SECONDS:-600}}}
[ $# -gt 0 ] && shift
B=${FUZZ_BUILD:-build/fuzz}
OUT=${FUZZ_RESULTS:-bench/results/fuzz.md}
NICE=${FUZZ_NICE:-19}
JOBS=${FUZZ_JOBS:-1}
# Wall-clock backstop per harness (a starved fuzzer still ends).
WALL_MAX=${FUZZ_WALL_MAX:-$((CPU * 30 + 600))}
HZ=$(getconf CLK_TCK)
command -v clang >/dev/null || { echo "fuzz: SKIP: no clang (scripts/fuzz-deps.sh installs it)"; exit 77; }
t=$(mktemp -d)
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){(void)d;(void)n;return 0;}\n' >"$t/f.c"
if ! clang -fsanitize=fuzzer "$t/f.c" -o "$t/f" 2>/dev/null; then
	rm -rf "$t"
	echo "fuzz: SKIP: clang has no libFuzzer (scripts/fuzz-deps.sh)"
	exit 77
fi
rm -rf "$t"
if [ -z "${FUZZ_NO_BUILD:-}${FUZZ_REPORT_ONLY:-}" ]; then
	CC=clang nice -n "$NICE" cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSL_FUZZ=ON >/dev/null || exit 1
	nice -n "$NICE" cmake --build "$B" -j "$(nproc)" --target fuzz_all >/dev/null || exit 1
fi

names=()
if [ $# -gt 0 ]; then
	for a in "$@"; do names+=("fuzz_${a#fuzz_}"); done
else
	for src in tests/fuzz/fuzz_*.c; do names+=("$(basename "$src" .c)"); done
fi
mkdir -p "$B/rows"

# CPU seconds (utime + stime of all threads) of process $1, or empty.
cpu_of() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return
	s=${s##*) } # fields after the command name (which may hold spaces)
	set -- $s
	# utime and stime are fields 14 and 15 of stat; 12 and 13 after "pid (comm)".
	echo $(( (${12} + ${13}) / HZ ))
}

# Runs harness $1 to the CPU target; writes its row to $B/rows/$1.
run_one() {
	local name=$1 c=${1#fuzz_}
	local log="$B/$name.log"
	mkdir -p "$B/corpus/$c" "$B/artifacts/$c"
	cp -n tests/fuzz/corpus/"$c"/* "$B/corpus/$c/" 2>/dev/null
	local seeds load0 start
	seeds=$(ls tests/fuzz/corpus/"$c" | wc -l)
	load0=$(cut -d' ' -f1 /proc/loadavg)
	# A harness may add libFuzzer flags in a comment line "fuzz-flags: ..."
	# (later flags win over the defaults here).
	local flags
	flags=$(sed -n 's/^ \* fuzz-flags: *//p' "tests/fuzz/$name.c" | head -1)
	echo "fuzz: $name to ${CPU} CPU-seconds (nice $NICE) ${flags}..."
	start=$(date +%s)
	# shellcheck disable=SC2086
	ASAN_OPTIONS=detect_leaks=1 nice -n "$NICE" "$B/$name" -max_total_time="$WALL_MAX" \
		-print_final_stats=1 -artifact_prefix="$B/artifacts/$c/" -rss_limit_mb=2048 \
		-timeout=10 $flags "$B/corpus/$c" >"$log" 2>&1 &
	local pid=$! used=0 u
	while kill -0 "$pid" 2>/dev/null; do
		u=$(cpu_of "$pid")
		[ -n "$u" ] && used=$u
		if [ "$used" -ge "$CPU" ]; then
			kill -USR1 "$pid" 2>/dev/null
			break
		fi
		sleep 2
	done
	wait "$pid"
	local st=$?
	local took=$(( $(date +%s) - start ))
	# Leaks at exit: the grown corpus replayed once, ending normally (a
	# stopped fuzzer exits without LeakSanitizer's final check, and a harness
	# with a long-lived server checks its leaks only there).
	local rlog="$B/$name.replay.log" rst
	# shellcheck disable=SC2086
	ASAN_OPTIONS=detect_leaks=1 nice -n "$NICE" "$B/$name" -runs=0 $flags \
		-artifact_prefix="$B/artifacts/$c/" "$B/corpus/$c" >"$rlog" 2>&1
	rst=$?
	local execs speed last cov ft corp crashes leaks load1
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	last=$(grep -E '^#[0-9]+' "$log" | tail -1)
	cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	corp=$(echo "$last" | sed -n 's/.* corp: \([0-9]*\).*/\1/p')
	crashes=$(ls "$B/artifacts/$c" | wc -l)
	leaks=$(cat "$log" "$rlog" | grep -c 'LeakSanitizer: detected')
	load1=$(cut -d' ' -f1 /proc/loadavg)
	# exec/s per CPU-second: libFuzzer's own figure is per wall second.
	local cpus=""
	[ "$used" -gt 0 ] && [ -n "$execs" ] && cpus=$((execs / used))
	echo "| $name | $used s | $took s | $load0 → $load1 | ${execs:-?} | ${cpus:-?} | ${cov:-?} | ${ft:-?} | $seeds → ${corp:-?} | $crashes | $leaks | $(date -u +%H:%MZ) |" >"$B/rows/$name"
	echo "fuzz: $name: exit $st (replay $rst), $used CPU-s in $took s, ${execs:-?} runs, cov ${cov:-?}, $crashes crashes, $leaks leaks"
	[ "$st" -eq 0 ] && [ "$rst" -eq 0 ] && [ "$crashes" -eq 0 ] && [ "$leaks" -eq 0 ]
}

rc=0
pids=()
# FUZZ_REPORT_ONLY=1: runs nothing, writes fuzz.md from the rows there are.
[ -n "${FUZZ_REPORT_ONLY:-}" ] && names=()
for name in "${names[@]}"; do
	[ -x "$B/$name" ] || { echo "fuzz: $B/$name is not built"; rc=1; continue; }
	rm -f "$B/rows/$name"
	run_one "$name" &
	pids+=($!)
	while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
done
for p in "${pids[@]}"; do wait "$p" || rc=1; done

rows=""
for src in tests/fuzz/fuzz_*.c; do
	name=$(basename "$src" .c)
	[ -f "$B/rows/$name" ] && rows+=$(cat "$B/rows/$name")$'\n'
done
{
	echo "# Fuzzing (make fuzz, scripts/fuzz.sh)"
	echo
	echo "- written: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "- machine: $(uname -srm), $(nproc) online cores, shared with other work; load average when written: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- compiler: $(clang --version | head -1); libFuzzer with ASan + UBSan (leak checks on, and a replay of the grown corpus with LeakSanitizer at exit), everything instrumented (-fsanitize=fuzzer-no-link)"
	echo "- target per harness: ${CPU} CPU-seconds (goal: 600 = 10 CPU-minutes each), measured as the fuzzer's utime + stime, all threads; run under nice $NICE, $JOBS at a time"
	echo
	echo "| harness | CPU time | wall time | load (start → end) | executions | exec per CPU-s | coverage (edges) | features | corpus (seeds → after) | crashes | leaks | ended |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	printf '%s' "$rows"
	echo
	echo "Harnesses and what they cover: tests/fuzz/README.md. A crash's reproducer is in"
	echo "build/fuzz/artifacts/NAME/; it becomes a file of tests/fuzz/corpus/NAME/ (a regression"
	echo "input make check replays) once fixed."
} >"$OUT"
cat "$OUT"
exit $rc
