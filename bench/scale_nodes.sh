#!/usr/bin/env bash
# scale_nodes.sh - the controller's node listing and start-up against fleet
# size (issue 17): for 1,000, 3,000 and 10,000 nodes (8 x H100 each, leaves of
# 32 under 8 spines), a Slurm site is written, imported with `suanli fleet
# import-slurm`, and a `suanlid serve --simulate` on it is timed: start until
# /healthz answers, GET /v1/nodes whole, a page of 500 and 100, one leaf
# filtered, and `suanli nodes --json` gathering every page. Medians of 5.
# Prints a Markdown table; figures are written, never asserted.
#
#   bench/scale_nodes.sh [BUILD_DIR]      default build/release
set -u
BUILD=${1:-build/release}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
SUANLI="$BUILD/suanli"
SUANLID="$BUILD/suanlid"
[ -x "$SUANLI" ] && [ -x "$SUANLID" ] || { echo "build $SUANLI and $SUANLID first" >&2; exit 2; }
TMP=$(mktemp -d)
DPID=""
cleanup() { [ -n "$DPID" ] && kill -TERM "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "| nodes | import-slurm s | start to /healthz s | GET /v1/nodes ms | page of 500 ms | page of 100 ms | ?leaf= ms | suanli nodes --json s |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
for N in 1000 3000 10000; do
	D="$TMP/$N"
	mkdir -p "$D"
	python3 - "$N" "$D" <<'PY'
import sys
n, d = int(sys.argv[1]), sys.argv[2]
open(d + "/slurm.conf", "w").write(
    "ClusterName=big\nGresTypes=gpu\nNodeName=n[%05d-%05d] Gres=gpu:h100:8 CPUs=112 "
    "RealMemory=2097152\n" % (1, n))
leaves = (n + 31) // 32
with open(d + "/topology.conf", "w") as f:
    for l in range(leaves):
        f.write("SwitchName=leaf%03d Nodes=n[%05d-%05d]\n" % (l, l * 32 + 1, min((l + 1) * 32, n)))
    per = (leaves + 7) // 8
    for s in range(8):
        if s * per < leaves:
            f.write("SwitchName=spine%d Switches=leaf[%03d-%03d]\n" % (s, s * per, min(s * per + per, leaves) - 1))
PY
	t0=$(now)
	"$SUANLI" fleet import-slurm --slurm-conf "$D/slurm.conf" --topology-conf "$D/topology.conf" \
		-o "$D/fleet.yaml" 2>/dev/null || { echo "import failed" >&2; exit 1; }
	imp=$(echo "$(now) - $t0" | bc)
	"$SUANLID" init --data "$D/data" >/dev/null
	T=$(cat "$D/data/admin.token")
	PORT=$((7700 + N % 97))
	t0=$(now)
	"$SUANLID" serve --data "$D/data" --listen 127.0.0.1:$PORT --fleet "$D/fleet.yaml" --simulate \
		>"$D/log" 2>&1 &
	DPID=$!
	until curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz"; do sleep 0.02; done
	up=$(echo "$(now) - $t0" | bc)
	q() { for i in 1 2 3 4 5; do curl -s -o /dev/null -w "%{time_total}\n" -H "Authorization: Bearer $T" \
		"http://127.0.0.1:$PORT/v1/nodes$1"; done | median | awk '{printf "%.2f", $1 * 1000}'; }
	full=$(q "")
	p500=$(q "?limit=500")
	p100=$(q "?limit=100")
	leaf=$(q "?leaf=leaf010")
	t0=$(now)
	SUANLI_SERVER=http://127.0.0.1:$PORT SUANLI_TOKEN=$T "$SUANLI" nodes --json >/dev/null
	cli=$(echo "$(now) - $t0" | bc)
	kill -TERM "$DPID"
	wait "$DPID" 2>/dev/null
	DPID=""
	printf '| %d | %.2f | %.2f | %s | %s | %s | %s | %.2f |\n' "$N" "$imp" "$up" "$full" "$p500" "$p100" "$leaf" "$cli"
done
