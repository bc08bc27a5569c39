#!/usr/bin/env bash
# make run, until the controller exists: the offline planner on the demo fleet.
set -euo pipefail
B=${1:-build/release}
F=examples/demo-fleet.yaml
say() { printf '\n$ %s\n' "$*"; "$@"; }
say "$B/suanli" fleet check "$F"
say "$B/suanli" topo --fleet "$F" fza-h100nvl-01
say "$B/suanli" plan --fleet "$F" --gpus 16 --model gb200
say "$B/suanli" plan --fleet "$F" --gpus 2 --model h100-sxm --state examples/state-busy.json
printf '\nThe controller (suanlid) is not built yet; these commands work offline.\n'
