#!/usr/bin/env bash
# run.sh - the console's browser tests (docs/console.md): a real suanlid on
# loopback with one simulated suanli-agent per node of tests/browser/fleet.yaml,
# tenants, prices, users with passwords, then console.test.mjs drives Debian's
# chromium through playwright-core in English and Chinese. SCREENSHOTS=DIR
# also writes a PNG of every screen in both languages (make screenshots).
#
# Needs node, npm (`npm ci` here installs playwright-core and @axe-core/playwright
# from package-lock.json when node_modules is missing or stale; no browser is
# ever downloaded) and /usr/bin/chromium: scripts/deps.sh installs them. Without
# them the test reports skipped (77), never passed.
set -u
: "${SUANLID:?SUANLID must point at the suanlid binary}"
: "${SUANLI:?SUANLI must point at the suanli binary}"
: "${SUANLI_AGENT:?SUANLI_AGENT must point at the suanli-agent binary}"
: "${SL_ROOT:?SL_ROOT must point at the repository}"
HERE=$SL_ROOT/tests/browser
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
skip() { printf 'SKIP %s\n0 passed, 0 failed, 1 skipped\n' "$1"; exit 77; }
command -v node >/dev/null 2>&1 || skip "node is not installed (scripts/deps.sh installs nodejs and npm)"
[ -x "$CHROMIUM" ] || skip "$CHROMIUM is not installed (scripts/deps.sh installs chromium)"
if [ ! -f "$HERE/node_modules/playwright-core/package.json" ] ||
	[ "$HERE/package-lock.json" -nt "$HERE/node_modules/.package-lock.json" ]; then
	command -v npm >/dev/null 2>&1 || skip "npm is not installed (scripts/deps.sh installs it)"
	(cd "$HERE" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error) >&2 ||
		skip "npm ci in tests/browser failed (no registry reachable?)"
fi

TMP=$(mktemp -d)
CTL_PID=""
AG_PIDS=()
TAG="browser-$$"
cleanup() {
	local p
	for p in "${AG_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${AG_PIDS[@]}"; do wait "$p" 2>/dev/null; done
	if [ -n "${IMAGE:-}" ]; then
		local ids
		ids=$(podman ps -a -q --filter "name=$TAG" 2>/dev/null)
		[ -n "$ids" ] && podman rm -f -t 0 $ids >/dev/null 2>&1
		ids=$(podman network ls --format '{{.Name}}' 2>/dev/null | grep -F -- "$TAG")
		[ -n "$ids" ] && podman network rm -f $ids >/dev/null 2>&1
		rm -f /var/run/cdi/suanli-*"$TAG".json
		grep -lF -- "$TAG" /run/suanli/uid-ranges/* 2>/dev/null | xargs -r rm -f
		local m
		for m in $(awk -v t="$TMP/" 'index($2, t) == 1 {print $2}' /proc/mounts); do umount -l "$m"; done
	fi
	if [ -n "$CTL_PID" ]; then kill -TERM "$CTL_PID" 2>/dev/null; wait "$CTL_PID" 2>/dev/null; fi
	if [ "${KEEP_TMP:-}" = 1 ]; then echo "kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
die() {
	printf 'FAIL %s\n' "$1"
	for f in "$TMP"/suanlid.log "$TMP"/agent-*.log; do [ -f "$f" ] && { echo "---- $(basename "$f")"; tail -n 12 "$f"; }; done
	printf '0 passed, 1 failed\n'
	exit 1
}

"$SUANLID" init --data "$TMP/data" >/dev/null || die "suanlid init"
ADMIN=$(cat "$TMP/data/admin.token")
"$SUANLID" serve --data "$TMP/data" --listen 127.0.0.1:0 --fleet "$HERE/fleet.yaml" \
	--billing-zone Asia/Shanghai --heartbeat 1 --console "$SL_ROOT/console" 2>"$TMP/suanlid.log" &
CTL_PID=$!
PORT=""
for _ in $(seq 1 200); do
	PORT=$(sed -n 's/.*msg=listening .*port=\([0-9][0-9]*\).*/\1/p' "$TMP/suanlid.log" | head -1)
	[ -n "$PORT" ] && break
	kill -0 "$CTL_PID" 2>/dev/null || break
	sleep 0.05
done
[ -n "$PORT" ] || die "suanlid did not start"
URL="http://127.0.0.1:$PORT"
sl() { SUANLI_SERVER=$URL SUANLI_TOKEN=$ADMIN "$SUANLI" "$@"; }

# One agent per node, as make run: tenant containers from a local image when
# podman runs here (root), else host processes.
AGARGS=()
IMAGE=""
if [ "$(id -u)" = 0 ] && command -v podman >/dev/null 2>&1; then
	# make run's demo image: sshd for instances, Python
	IMAGE=$("$SL_ROOT/scripts/build-image.py" demo base-files bash coreutils dash findutils grep \
		sed procps libc-bin python3 openssh-server 2>"$TMP/build-image.log") || IMAGE=""
fi
# Agents that run instances (contracts/instances.md: they take --port-range)
AGENT_INSTANCES=0
[ -n "$IMAGE" ] && "$SUANLI_AGENT" run --help 2>&1 | grep -q -- '--port-range' && AGENT_INSTANCES=1
# alice's key, added through the launch screen
SSH_PUBKEY=""
if command -v ssh-keygen >/dev/null 2>&1 && ssh-keygen -q -t ed25519 -N '' -C alice@browser-test -f "$TMP/alice_key" >/dev/null 2>&1; then
	SSH_PUBKEY=$(cat "$TMP/alice_key.pub")
fi
JOIN=$(sl agent-token create --json | jq -r .token) || die "agent-token create"
mapfile -t NODES < <(sl nodes --json | jq -r '.[] | "\(.name) \(.type)"')
for line in "${NODES[@]}"; do
	read -r node type <<<"$line"
	args=()
	if [ -n "$IMAGE" ]; then args=(--image "$IMAGE" --cdi-name "$node-$TAG"); else args=(--host-processes acme); fi
	"$SUANLI_AGENT" run --server "$URL" --token "$JOIN" --node "$node" --simulate "$type" \
		--addr 127.0.0.1 --state-dir "$TMP/agents/$node" --heartbeat 1 "${args[@]}" \
		>>"$TMP/agent-$node.log" 2>&1 &
	AG_PIDS+=($!)
done
for _ in $(seq 1 150); do
	ready=$(sl nodes --json | jq '[.[] | select(.state == "ready")] | length')
	[ "$ready" -ge "${#NODES[@]}" ] && break
	sleep 0.2
done
[ "$ready" -ge "${#NODES[@]}" ] || die "agents did not register ($ready of ${#NODES[@]} ready)"

# Tenants, prices, money, and the people who sign in.
sl tenant create acme --regions cn-east,cn-north --quota h100-sxm=16 >/dev/null || die "tenant acme"
sl tenant create globex --quota h100-sxm=8 >/dev/null || die "tenant globex"
for m in h100-sxm:2500 l40s:600 a100-sxm:1200 ascend-910b:800; do
	sl price set --model "${m%%:*}" --plan hourly --price "${m##*:}" >/dev/null 2>&1
done
sl price set --model h100-sxm --plan spot --price 1200 >/dev/null
sl price set --model h100-sxm --plan monthly --price 1500000 >/dev/null
sl price set --model h100-sxm --plan hourly --price 2300 --from "$(date -u -d '+3 days' +%Y-%m-%dT%H:00:00Z)" >/dev/null
sl topup --tenant acme --amount 5000000 --reason "bank transfer 42" >/dev/null || die "topup acme"
sl credit-line --tenant acme --amount 100000 >/dev/null
sl topup --tenant globex --amount 100000 >/dev/null
# globex holds two GPUs (so the fleet map shows leased ones, and revenue grows)
sl lease create --tenant globex --gpus 2 --model h100-sxm >/dev/null || die "lease globex"
# the operator's catalog: the demo image, the default of instances and jobs
[ -n "$IMAGE" ] && { sl image add demo --ref "$IMAGE" --default >/dev/null || die "image add"; }
sl audit checkpoint >/dev/null

PEOPLE="$TMP/people.json"
people=()
for spec in alice:acme:tenant bob:globex:tenant oscar::operator audrey::auditor; do
	IFS=: read -r name tenant role <<<"$spec"
	pw="pw-$name-$RANDOM$RANDOM"
	printf '%s\n' "$pw" >"$TMP/pw-$name"
	targs=()
	[ -n "$tenant" ] && targs=(--tenant "$tenant")
	sl user create "${targs[@]}" --name "$name" --role "$role" --password-file "$TMP/pw-$name" \
		>/dev/null || die "user create $name"
	people+=("$(jq -nc --arg u "$name" --arg t "$tenant" --arg r "$role" --arg p "$pw" \
		'{user: $u, tenant: $t, role: $r, password: $p}')")
done
printf '%s\n' "${people[@]}" | jq -s 'map({(.user): .}) | add' >"$PEOPLE"

CONSOLE_URL=$URL PEOPLE=$PEOPLE ADMIN_TOKEN=$ADMIN CHROMIUM=$CHROMIUM \
	AGENT_INSTANCES=$AGENT_INSTANCES SSH_PUBKEY=$SSH_PUBKEY IMAGE_WHY="$([ -z "$IMAGE" ] && tail -1 "$TMP/build-image.log" 2>/dev/null)" \
	node "$HERE/console.test.mjs"
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
	for f in "$TMP"/suanlid.log "$TMP"/agent-fza-h100-01.log; do echo "---- $(basename "$f") (tail)"; tail -n 15 "$f"; done
fi
exit $rc
