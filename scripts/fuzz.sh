#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] - make fuzz: builds the libFuzzer harnesses
# (tests/fuzz, clang, build/fuzz) and runs each for SECONDS (default 600: ten
# CPU-minutes), one after another on one core each, starting from its
# committed corpus (copied: new inputs stay in build/fuzz/corpus). Writes
# bench/results/fuzz.md: executions, coverage, corpus and crashes per
# harness. Exit 1 when a harness crashed or leaked (its reproducer is in
# build/fuzz/artifacts/NAME/); exit 77 when clang or libFuzzer is missing.
set -u
cd "$(dirname "$0")/.."
SECS=${1:-${FUZZ_SECONDS:-600}}
B=${FUZZ_BUILD:-build/fuzz}
OUT=${FUZZ_RESULTS:-bench/results/fuzz.md}
command -v clang >/dev/null || { echo "fuzz: SKIP: no clang (scripts/fuzz-deps.sh installs it)"; exit 77; }
t=$(mktemp -d)
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){(void)d;(void)n;return 0;}\n' >"$t/f.c"
if ! clang -fsanitize=fuzzer "$t/f.c" -o "$t/f" 2>/dev/null; then
	rm -rf "$t"
	echo "fuzz: SKIP: clang has no libFuzzer (scripts/fuzz-deps.sh)"
	exit 77
fi
rm -rf "$t"
CC=clang cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSL_FUZZ=ON >/dev/null || exit 1
cmake --build "$B" -j "${JOBS:-$(nproc)}" --target fuzz_all >/dev/null || exit 1
rows="" rc=0 total=0
for src in tests/fuzz/fuzz_*.c; do
	name=$(basename "$src" .c)
	c=${name#fuzz_}
	mkdir -p "$B/corpus/$c" "$B/artifacts/$c"
	cp -n tests/fuzz/corpus/"$c"/* "$B/corpus/$c/" 2>/dev/null
	seeds=$(ls tests/fuzz/corpus/"$c" | wc -l)
	log="$B/$name.log"
	echo "fuzz: $name for ${SECS}s..."
	start=$(date +%s)
	ASAN_OPTIONS=detect_leaks=1 "$B/$name" -max_total_time="$SECS" -print_final_stats=1 \
		-artifact_prefix="$B/artifacts/$c/" -rss_limit_mb=2048 -timeout=10 \
		"$B/corpus/$c" >"$log" 2>&1
	st=$?
	took=$(( $(date +%s) - start ))
	total=$((total + took))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	last=$(grep -E '^#[0-9]+' "$log" | tail -1)
	cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	corp=$(echo "$last" | sed -n 's/.* corp: \([0-9]*\).*/\1/p')
	crashes=$(ls "$B/artifacts/$c" | wc -l)
	leaks=$(grep -c 'LeakSanitizer: detected' "$log")
	[ "$st" -ne 0 ] || [ "$crashes" -ne 0 ] && rc=1
	rows+="| $name | ${took} s | ${execs:-?} | ${speed:-?} | ${cov:-?} | ${ft:-?} | $seeds → ${corp:-?} | $crashes | $leaks |"$'\n'
done
{
	echo "# Fuzzing (make fuzz, scripts/fuzz.sh)"
	echo
	echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "- machine: $(uname -srm), $(nproc) online cores; load average when written: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- compiler: $(clang --version | head -1); libFuzzer with ASan + UBSan, everything instrumented (-fsanitize=fuzzer-no-link)"
	echo "- time per harness: ${SECS} s of one core (goal: 600 s = 10 CPU-minutes each); total ${total} s"
	echo
	echo "| harness | time | executions | exec/s | coverage (edges) | features | corpus (seeds → after) | crashes | leaks |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	printf '%s' "$rows"
	echo
	echo "Harnesses and what they cover: tests/fuzz/README.md. A crash's reproducer is in"
	echo "build/fuzz/artifacts/NAME/; it becomes a file of tests/fuzz/corpus/NAME/ (a regression"
	echo "input make check replays) once fixed."
} >"$OUT"
cat "$OUT"
exit $rc
