#!/usr/bin/env bash
# test_prom_rules.sh - the shipped alert rules and dashboard are valid:
# `promtool check rules` on deploy/prometheus/suanli-rules.yml, `promtool test
# rules` on suanli-rules.test.yml (one case per alert, checked here too), and
# the Grafana dashboard (deploy/grafana/suanli.json) parses with jq. That the
# metric names they use exist is test_metrics.sh's part. Without promtool
# (Debian's prometheus, scripts/deps.sh) it is skipped, never passed.
set -u
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { echo "jq is needed (scripts/deps.sh)"; exit 1; }
P="$SL_ROOT/deploy/prometheus"
if jq -e '.panels | length > 0' "$SL_ROOT/deploy/grafana/suanli.json" >/dev/null; then
	ok "the dashboard is JSON with panels"
else
	bad "the dashboard is JSON with panels"
fi
command -v promtool >/dev/null || skip "promtool is not installed (scripts/deps.sh: prometheus)"
out=$(promtool check rules "$P/suanli-rules.yml" 2>&1)
expect_match "promtool check rules" "$out" 'SUCCESS'
out=$(cd "$P" && promtool test rules suanli-rules.test.yml 2>&1)
rc=$?
expect_eq "promtool test rules" "$rc" 0
[ $rc -eq 0 ] || printf '%s\n' "$out" | head -40
alerts=$(sed -n 's/^ *- alert: *//p' "$P/suanli-rules.yml" | sort -u)
tested=$(sed -n 's/^ *alertname: *//p' "$P/suanli-rules.test.yml" | sort -u)
expect_eq "every alert has a test case" "$(comm -23 <(printf '%s\n' "$alerts") <(printf '%s\n' "$tested") | tr '\n' ' ')" ""
expect_match "ten alerts" "$(printf '%s\n' "$alerts" | wc -l)" '^10$'
finish
