#!/usr/bin/env bash
# test_sim.sh - `suanli sim`: the saturation experiment and the time replay on
# the small hand-made traces in tests/data/sim/ (3 GPUs: n1 with 2 T4, n2 with
# one V100M16, and a CPU-only node that is skipped).
#
# pods.csv offers 1000, 500, 500 (T4 only), 1000 thousandths, which fill the
# fleet exactly, then 300 and a V100 GPU that no longer fit: the curve is
# exact (33.333% up to 33% demand, 50% to 50%, 66.667% to 66%, then 100%).
source "$(dirname "$0")/lib.sh"
D="$SL_ROOT/tests/data/sim"

OUT=$("$SUANLI" sim openb --nodes "$D/nodes.csv" --pods "$D/pods.csv" --json)
expect_eq "sim openb: exit 0" "$?" 0
expect_eq "sim openb: 131 curve points" "$(jq '.allocation_curve | length' <<<"$OUT")" 131
expect_eq "sim openb: curve at 0/33/34/50/66/67/100/130" \
	"$(jq -c '[.allocation_curve[0,33,34,50,66,67,100,130]]' <<<"$OUT")" \
	"[33.333,33.333,50,50,66.667,100,100,100]"
expect_eq "sim openb: curve never falls" \
	"$(jq '[.allocation_curve as $c | range(1;131) | select($c[.] < $c[.-1])] | length' <<<"$OUT")" 0
expect_eq "sim openb: failed pods" "$(jq .failed_pods <<<"$OUT")" 2
expect_eq "sim openb: pods offered" "$(jq .pods <<<"$OUT")" 6
expect_eq "sim openb: seed" "$(jq .seed <<<"$OUT")" 42
expect_eq "sim openb: fleet (CPU-only node skipped)" "$(jq -c '[.nodes, .gpus]' <<<"$OUT")" "[2,3]"
expect_eq "sim openb: workload and policy" "$(jq -r '.workload + " " + .policy + " " + .order' <<<"$OUT")" \
	"pods frag trace"
expect_eq "sim openb: published anchors beside the pod list" \
	"$(jq -c '[(.published | keys[0]), .published.Ideal[50], .published.Ideal[130]]' <<<"$OUT")" \
	'["Ideal",50,100]'

OUT=$("$SUANLI" sim openb --nodes "$D/nodes.csv" --pods "$D/pods.csv" --policy bestfit --seeds 1-3 --json)
expect_eq "sim openb --seeds: one run per seed" "$(jq -c '[.runs[].seed]' <<<"$OUT")" "[1,2,3]"
expect_eq "sim openb --seeds: range" "$(jq -c .seeds <<<"$OUT")" "[1,3]"
expect_eq "sim openb --policy bestfit" "$(jq -r .policy <<<"$OUT")" bestfit

# Sampling: inflate 2.0 needs 6000 thousandths of demand; the trace has 4300.
OUT=$("$SUANLI" sim openb --nodes "$D/nodes.csv" --pods "$D/pods.csv" --inflate 2 --seed 7 --json)
expect_match "sim openb --inflate 2: sampled pods added" "$(jq .pods <<<"$OUT")" '^([7-9]|[1-9][0-9])$'
expect_eq "sim openb --inflate 2: still 100% at the end" "$(jq '.allocation_curve[130]' <<<"$OUT")" 100

OUT=$("$SUANLI" sim openb --nodes "$D/nodes.csv" --pods "$D/pods.csv")
expect_match "sim openb: table beside the anchors" "$OUT" '130%  +100\.00 +100\.00'
expect_match "sim openb: failed pods line" "$OUT" 'failed pods: 2\.0'

ERR=$("$SUANLI" sim openb --nodes "$D/nodes.csv" --pods "$D/bad_pods.csv" 2>&1)
expect_eq "sim openb: bad row exits 1" "$?" 1
expect_match "sim openb: bad row named by line and column" "$ERR" \
	'bad_pods\.csv:3:9: memory_mib: expected an integer'
"$SUANLI" sim openb --nodes "$D/nodes.csv" --pods "$D/pods.csv" --inflate x >/dev/null 2>&1
expect_eq "sim openb: bad --inflate exits 2" "$?" 2
"$SUANLI" sim openb --pods "$D/pods.csv" --workload default >/dev/null 2>&1
expect_eq "sim openb: --pods with --workload exits 2" "$?" 2
ERR=$("$SUANLI" sim openb --nodes "$TMP/none.csv" --pods "$D/pods.csv" 2>&1)
expect_eq "sim openb: missing node list exits 1" "$?" 1
expect_match "sim openb: missing file named" "$ERR" 'none\.csv'

# Time replay of the job CSV: train-a holds n1's two T4 from 0 to 600,
# infer-b runs on n2 from 60 to 360, infer-c waits from 120 to 360, too-big
# (3 GPUs, nodes of at most 2) can never start.
OUT=$("$SUANLI" sim replay --nodes "$D/nodes.csv" --jobs "$D/jobs.csv" --plot "$TMP/r.svg" --json)
expect_eq "sim replay: exit 0" "$?" 0
expect_eq "sim replay: started/never/unplaceable" \
	"$(jq -c '[.started, .never_started, .unplaceable]' <<<"$OUT")" "[3,0,1]"
expect_eq "sim replay: queueing delay mean/median/p99/max" \
	"$(jq -c '[.queue_delay_s.mean, .queue_delay_s.median, .queue_delay_s.p99, .queue_delay_s.max]' <<<"$OUT")" \
	"[80,0,240,240]"
expect_eq "sim replay: window" "$(jq -c '[.t0, .t1]' <<<"$OUT")" "[0,360]"
expect_eq "sim replay: utilisation samples" "$(jq '.utilisation | length' <<<"$OUT")" 400
expect_match "sim replay: plot is SVG with two series" "$(grep -c '<polyline' "$TMP/r.svg")" '^2$'
OUT=$("$SUANLI" sim replay --nodes "$D/nodes.csv" --pods "$D/pods.csv" --samples 5)
expect_match "sim replay: human summary" "$OUT" 'queueing delay: mean 11 s, median 0 s, p99 55 s'
"$SUANLI" sim openb --nodes "$D/nodes.csv" --jobs "$D/jobs.csv" >/dev/null 2>&1
expect_eq "sim openb --jobs without replay exits 2" "$?" 2
expect_match "sim --help" "$("$SUANLI" sim --help)" 'usage: suanli sim openb'
finish
