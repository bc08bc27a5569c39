#!/usr/bin/env bash
# bench/slurm.sh - Slurm and suanli side by side, in one run on one machine.
#
# 1. Runs the Slurm peer harness (../shared/peers/slurm/run.sh, as it is) on
#    32 fake nodes: 4 leaves of 8, 16 pair-bridged + 16 NVSwitch, 8 GPUs each;
#    its figures come from its summary.jsonl and run.log of this run.
# 2. Runs bench_slurm_side (bench/slurm_side/) on the same fleet
#    (bench/fleets/slurm-peer.yaml) with the same job streams: 2,000 one-GPU
#    5-second jobs against a backlog, the harness's mixed 1/2/4-GPU stream
#    (regenerated here with its bash RANDOM seed), its multi-node stream with
#    and without one leaf (Slurm: --switches=1@2:00; suanli: "one_leaf").
# 3. Writes bench/results/slurm.md side by side (figures, commands, machine,
#    date). Nothing is asserted: the figures are reported, goals beside them.
#
# Usage: bench/slurm.sh [BUILD_DIR] [RESULTS_MD]   (default build/release,
#        bench/results/slurm.md)
# env:   SLURM_PEER (the harness; default ../shared/peers/slurm/run.sh beside
#        the repository), SLURM_PEER_DIR (its work dir, default
#        /tmp/suanli-slurm-peer), NJOBS=2000 NMIX=400 NSW=40 PAR=4
#        JOB_SLEEP=5 (as the harness), PHASES (as the harness: S, P, T; both
#        sides), CLI_JOBS (CLI submissions in S, default NJOBS), CTLD_PORT and
#        NODE_PORT0 (the harness's ports), SKIP_SLURM=1 (suanli side only, the
#        Slurm column from the last run's files when present), T_RELEASE=resume
#        (suanli's phase T backlog released by resuming nodes one by one, as
#        before 2026-12-05, instead of all at once as Slurm's partition UP).
set -uo pipefail
export LC_ALL=C
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build/release}
out=${2:-$root/bench/results/slurm.md}
case $build in /*) ;; *) build=$root/$build ;; esac
harness=${SLURM_PEER:-$root/../shared/peers/slurm/run.sh}
export SLURM_PEER_DIR=${SLURM_PEER_DIR:-/tmp/suanli-slurm-peer}
export NJOBS=${NJOBS:-2000} NMIX=${NMIX:-400} NSW=${NSW:-40} PAR=${PAR:-4} JOB_SLEEP=${JOB_SLEEP:-5}
export LEAVES=4 NPL=8 RUN_TAG=bench
res=$SLURM_PEER_DIR/results/$RUN_TAG
work=$(mktemp -d "${TMPDIR:-/tmp}/suanli-slurmbench-XXXXXX")
trap 'rm -rf "$work"' EXIT
for b in bench_slurm_side suanlid suanli; do
  [ -x "$build/$b" ] || { echo "slurm.sh: no $build/$b (make build first)" >&2; exit 1; }
done
command -v python3 >/dev/null || { echo "slurm.sh: needs python3 (scripts/bench-deps.sh)" >&2; exit 1; }

# The harness's streams, with its seeds and arithmetic (bash's RANDOM).
gen_mix() { local i r k s; RANDOM=42
  for ((i=0;i<NMIX;i++)); do
    r=$((RANDOM%10)); if [ $r -lt 3 ]; then k=1; elif [ $r -lt 7 ]; then k=2; else k=4; fi
    s=$((2+RANDOM%9)); echo "$k $s"
  done; }
gen_sw() { local i nr gp s nreq=(1 2 2 3 4 4 6 8); RANDOM=7
  for ((i=0;i<NSW;i++)); do
    nr=${nreq[$((RANDOM%8))]}; [ $nr -gt $NPL ] && nr=$NPL
    gp=$(( RANDOM%2 ? 8 : 4 )); s=$((5+RANDOM%11)); echo "$nr $gp $s"
  done; }
gen_mix > "$work/mix.txt"
gen_sw > "$work/sw.txt"

t_start=$(date +%s)
slurm_ok=0
if [ "${SKIP_SLURM:-0}" = 1 ]; then
  [ -s "$res/summary.jsonl" ] && slurm_ok=1
elif [ ! -x "$harness" ]; then
  echo "slurm.sh: no Slurm harness at $harness: suanli side only" >&2
elif ! command -v slurmctld >/dev/null; then
  echo "slurm.sh: Slurm is not installed (scripts/bench-deps.sh): suanli side only" >&2
else
  echo "slurm.sh: Slurm (harness $harness, work dir $SLURM_PEER_DIR)..." >&2
  ts=$(date +%s)
  "$harness" all > "$work/harness.out" 2>&1
  rc=$?
  echo "slurm.sh: harness exited $rc after $(( $(date +%s) - ts ))s (log: $res/run.log)" >&2
  [ -s "$res/summary.jsonl" ] && slurm_ok=1
  [ $rc = 0 ] || tail -20 "$work/harness.out" >&2
fi
t_slurm=$(( $(date +%s) - t_start ))

echo "slurm.sh: suanli..." >&2
ts=$(date +%s)
SUANLID=$build/suanlid SUANLI=$build/suanli \
  "$build/bench_slurm_side" "$root/bench/fleets/slurm-peer.yaml" "$work/mix.txt" "$work/sw.txt" \
  "$work/suanli.jsonl" || { echo "slurm.sh: bench_slurm_side failed" >&2; exit 1; }
t_suanli=$(( $(date +%s) - ts ))

slurm_version=$(dpkg-query -W -f='slurmctld ${Version}' slurmctld 2>/dev/null || echo "not installed")
rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
mkdir -p "$(dirname "$out")"
SLURM_OK=$slurm_ok RES=$res WORK=$work SLURM_VERSION=$slurm_version REV=$rev \
T_SLURM=$t_slurm T_SUANLI=$t_suanli HARNESS=$harness CMDLINE="bench/slurm.sh $*" \
  python3 "$root/bench/slurm_report.py" > "$out" || exit 1
echo "slurm.sh: wrote $out" >&2
sed -n '/^## Summary/,/^## /p' "$out" | sed '$d'
