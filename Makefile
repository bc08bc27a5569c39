# The front door. `make check` and `make run` install what is missing first.
BUILD      ?= build/release
CHECKBUILD ?= build/check
JOBS       ?= $(shell nproc)

.PHONY: all deps build check run screenshots bench fuzz clean

all: build

deps:
	@scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# Every test, under AddressSanitizer + UndefinedBehaviorSanitizer; the optimised
# build comes first so that warnings only -O3 finds (and `make run`) stay clean.
check: build
	@cmake -S . -B $(CHECKBUILD) -DCMAKE_BUILD_TYPE=Debug -DSL_SANITIZE=ON >/dev/null
	@cmake --build $(CHECKBUILD) -j $(JOBS)
	@cd $(CHECKBUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --output-on-failure -j $(JOBS)

# The controller on the demo fleet with one simulated agent per node (scripts/run.sh).
run: build
	@scripts/run.sh $(BUILD)

# A PNG of every console screen in English and Chinese into docs/console/, taken
# by the browser tests (tests/browser/run.sh; 77: some checks could not run here).
screenshots: build
	@SUANLID=$(BUILD)/suanlid SUANLI=$(BUILD)/suanli SUANLI_AGENT=$(BUILD)/suanli-agent \
		SL_ROOT=$(CURDIR) SCREENSHOTS=$(CURDIR)/docs/console tests/browser/run.sh; \
		rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 77 ]

# Every benchmark; each prints its figures and writes bench/results/<name>.md.
# bench_api also runs Debian's wrk when installed; bench_crash exits 1 if a
# SIGKILL lost or duplicated anything (never on timings).
# scripts/bench-deps.sh installs Slurm, munge and wrk first; bench/slurm.sh
# runs Slurm (../shared/peers/slurm) and suanli side by side (slurm.md).
# The whole run's time is printed at the end.
bench: build
	@start=$$(date +%s) && scripts/bench-deps.sh && \
	$(BUILD)/bench_place && \
	$(BUILD)/bench_api && \
	$(BUILD)/bench_crash && \
	$(BUILD)/bench_memory && \
	$(BUILD)/bench_audit && \
	{ [ ! -x bench/openb.sh ] || bench/openb.sh $(BUILD); } && \
	$(BUILD)/bench_openb_live && \
	bench/slurm.sh $(BUILD) && \
	echo "make bench: every benchmark in $$(( $$(date +%s) - start )) s (after the build)"

# Every libFuzzer harness (tests/fuzz) for FUZZ_CPU_SECONDS of CPU time each
# (default 600);
# writes bench/results/fuzz.md. Needs clang (scripts/fuzz-deps.sh).
FUZZ_CPU_SECONDS ?= 600
fuzz: deps
	@scripts/fuzz-deps.sh
	@scripts/fuzz.sh $(FUZZ_CPU_SECONDS)

clean:
	rm -rf build
