#!/usr/bin/env bash
# agents.sh - N real suanli-agent processes (--simulate) join one controller
# at once (issue 12). Measures the time from the first agent's start until
# every node is ready, and the controller's connections (peak, open, refused,
# from /metrics); writes them with the machine's facts to
# bench/results/agents.md. Figures are written, never asserted.
#
#   bench/agents.sh [N] [BUILD_DIR]     defaults: 2000, build/rel
#
# Build first: cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release &&
#              cmake --build build/rel -j2 --target suanlid suanli-agent
set -u
N=${1:-2000}
BUILD=${2:-build/rel}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
SUANLID="$BUILD/suanlid"
AGENT="$BUILD/suanli-agent"
OUT="$ROOT/bench/results/agents.md"
[ -x "$SUANLID" ] && [ -x "$AGENT" ] || { echo "build $SUANLID and $AGENT first" >&2; exit 2; }
MAXCONN=$((N + 256))
TMP=$(mktemp -d)
PIDS=()
DPID=""
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	[ -n "$DPID" ] && kill -TERM "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

# The controller needs a descriptor per connection (docs/agents.md).
need=$((MAXCONN + MAXCONN / 8 + 64 + 64))
[ "$(ulimit -Sn)" -lt "$need" ] && { ulimit -Sn "$need" 2>/dev/null || ulimit -Sn "$(ulimit -Hn)"; }
echo "ulimit -n $(ulimit -n)"

# A fleet of N nodes, 100 per leaf.
{
	echo "sites:"
	echo "  - name: bn"
	echo "    region: cn-east"
	echo "    fabrics:"
	echo "      - name: bn-ib"
	echo "        kind: infiniband"
	echo "        gbps: 400"
	echo "        leaves:"
	for ((l = 0; l * 100 < N; l++)); do
		lo=$((l * 100 + 1))
		hi=$(((l + 1) * 100 > N ? N : (l + 1) * 100))
		printf '          - name: bn-leaf-%03d\n            nodes:\n' "$l"
		printf '              - {range: "bn-[%05d-%05d]", type: hgx-h100-8}\n' "$lo" "$hi"
	done
} >"$TMP/fleet.yaml"

"$SUANLID" init --data "$TMP/data" >/dev/null || exit 1
ADMIN=$(cat "$TMP/data/admin.token")
"$SUANLID" serve --data "$TMP/data" --listen 127.0.0.1:0 --fleet "$TMP/fleet.yaml" \
	--max-connections "$MAXCONN" --log-level warn 2>"$TMP/suanlid.log" &
DPID=$!
PORT=""
for _ in $(seq 1 200); do
	PORT=$(sed -n 's/.*msg=listening .*port=\([0-9][0-9]*\).*/\1/p' "$TMP/suanlid.log" | head -1)
	[ -n "$PORT" ] && break
	# --log-level warn hides the "listening" line: find the port from the socket
	PORT=$(ss -ltnpH 2>/dev/null | grep "pid=$DPID," | sed -n 's/.*127.0.0.1:\([0-9]*\).*/\1/p' | head -1)
	[ -n "$PORT" ] && break
	sleep 0.05
done
[ -n "$PORT" ] || { echo "controller did not start" >&2; cat "$TMP/suanlid.log" >&2; exit 1; }
URL="http://127.0.0.1:$PORT"
JOIN=$(curl -s -X POST -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
	--data-binary '{}' "$URL/v1/agent-tokens" | jq -r .token)

ready_count() {
	curl -s --max-time 5 -H "Authorization: Bearer $ADMIN" "$URL/v1/nodes" |
		jq '[.[] | select(.state == "ready")] | length' 2>/dev/null || echo 0
}
metric() {
	curl -s --max-time 5 -H "Authorization: Bearer $ADMIN" "$URL/metrics" |
		sed -n "s/^$1 \\([0-9]*\\)\$/\\1/p"
}

echo "starting $N agents"
t0=$(date +%s.%N)
for i in $(seq 1 "$N"); do
	n=$(printf 'bn-%05d' "$i")
	"$AGENT" run --server "$URL" --token "$JOIN" --node "$n" --simulate hgx-h100-8 \
		--state-dir "$TMP/a/$n" --addr 127.0.0.1 --log-level warn 2>"$TMP/a-$n.log" &
	PIDS+=($!)
done
t_started=$(date +%s.%N)
ready=0
slow_ops=0
max_op=0
while :; do
	s=$(date +%s.%N)
	ready=$(ready_count)
	op=$(echo "$(date +%s.%N) - $s" | bc)
	max_op=$(echo "if ($op > $max_op) $op else $max_op" | bc)
	[ "${ready:-0}" -ge "$N" ] && break
	if [ "$(echo "$(date +%s.%N) - $t0 > 600" | bc)" = 1 ]; then
		echo "not all ready after 600 s: $ready of $N" >&2
		break
	fi
	sleep 0.5
done
t_ready=$(date +%s.%N)
all_ready=$(echo "$t_ready - $t0" | bc)
launch=$(echo "$t_started - $t0" | bc)
sleep 3 # steady state
peak=$(metric suanli_http_connections_peak)
open=$(metric suanli_http_connections)
refused=$(metric suanli_http_refused_total)
rss=$(awk '/VmHWM/ {print $2}' "/proc/$DPID/status")
refused_agents=$(grep -l 'refused (503)' "$TMP"/a-*.log 2>/dev/null | wc -l)
model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)

mkdir -p "$(dirname "$OUT")"
cat >"$OUT" <<EOF
# Agents joining one controller (bench/agents.sh)

$N real \`suanli-agent run --simulate hgx-h100-8\` processes started at once
against one \`suanlid serve --max-connections $MAXCONN\` on loopback
(fleet: $N nodes, 100 per leaf; heartbeat 5 s), built in \`$BUILD\`. Time runs from the first agent's start until \`GET /v1/nodes\`
shows every node \`ready\`.

| figure | value |
|---|---|
| agents | $N |
| ready | $ready of $N |
| time to all ready | $(printf '%.1f' "$all_ready") s |
| time to start the $N processes (part of the above) | $(printf '%.1f' "$launch") s |
| slowest \`GET /v1/nodes\` during the join | $(printf '%.2f' "$max_op") s |
| controller connections, peak | ${peak:-?} |
| controller connections, open after all ready | ${open:-?} |
| connections refused with 503 | ${refused:-?} (agents that saw one: $refused_agents) |
| controller peak RSS | $((${rss:-0} / 1024)) MiB |

Machine: $(nproc) CPUs ($model), $(free -g | awk '/^Mem:/ {print $2}') GiB memory,
\`ulimit -n\` $(ulimit -n) (soft) / $(ulimit -Hn) (hard), $(uname -sr).
Measured $(date -u +%Y-%m-%dT%H:%MZ); the machine was shared with other work.
EOF
cat "$OUT"
