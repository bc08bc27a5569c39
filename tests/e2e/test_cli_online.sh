#!/usr/bin/env bash
# test_cli_online.sh - the `suanli` online subcommands against a real suanlid
# (demo fleet, simulate mode, free loopback port): every subcommand in human
# and --json form, the exact forms scripts rely on (api-contract "Forms that
# must work exactly"), server/token resolution (flags, environment, config
# file), the server's errors (exit 1 with its message), usage errors (exit 2)
# and --help on every level.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
FLEET="$SL_ROOT/examples/demo-fleet.yaml"
DATA="$TMP/data"
# No config file or variables from the person running the tests.
export XDG_CONFIG_HOME="$TMP/xdg" HOME="$TMP/home"
unset SUANLI_SERVER SUANLI_TOKEN

# flat TEXT : TEXT on one line, for patterns that span lines.
flat() { printf '%s' "$1" | tr '\n' ' '; }
# cli ARGS... : runs suanli; sets RC, OUT (stdout) and ERR (stderr).
cli() {
	"$SUANLI" "$@" >"$TMP/out" 2>"$TMP/err"
	RC=$?
	OUT=$(cat "$TMP/out")
	ERR=$(cat "$TMP/err")
}

# ---- --help on every level, without a controller ----
for cmd in "nodes" "node" "node show" "node drain" "node resume" "tenant" "tenant create" \
	"tenant list" "tenant show" "token" "token create" "token list" "token revoke" \
	"lease" "lease create" "lease list" "lease show" "lease release" "lease extend" \
	"lease scale" "queue" "reservation" "reservation create" "reservation list"; do
	# shellcheck disable=SC2086
	cli $cmd --help
	if [ "$RC" = 0 ] && printf '%s' "$OUT" | grep -q "^usage: suanli $cmd"; then
		ok "$cmd --help"
	else
		bad "$cmd --help" "rc=$RC out=$OUT err=$ERR"
	fi
done
cli --help
expect_match "top-level help lists the online commands" "$OUT" 'reservation +capacity held'
for grp in node tenant token lease reservation; do
	cli "$grp"
	expect_eq "$grp without a subcommand is a usage error" "$RC" 2
done
cli lease frobnicate
expect_match "unknown subcommand named, with the list" "$ERR" "unknown subcommand 'frobnicate' \(create, list"
cli lease create --gpus 8 --duration 2x
expect_eq "bad duration unit: exit 2" "$RC" 2
expect_match "bad duration says which units" "$ERR" "unknown unit 'x'"
cli lease create --gpus 8 --duration 30m1h
expect_eq "units out of order: exit 2" "$RC" 2
cli lease create --gpus 8 --duration 90
expect_match "number without unit: exit 2 with the fix" "$RC $ERR" "^2 .*has no unit; write 90s"
cli lease create --gpus 8 --duration 0s
expect_eq "zero duration: exit 2" "$RC" 2
cli lease create --gpus 8 --plan weekly
expect_eq "unknown plan: exit 2" "$RC" 2
cli lease create --model h100-sxm
expect_match "--gpus required" "$RC $ERR" '^2 .*--gpus N is required'
cli lease create --gpus 8 --bogus
expect_match "unknown option named" "$RC $ERR" "^2 .*unknown option '--bogus'"
cli node drain fza-h100-001
expect_match "drain without a reason: exit 2" "$RC $ERR" '^2 .*--reason TEXT is required'
cli nodes --server http://127.0.0.1:1
expect_match "no controller: exit 1 with a hint" "$(flat "$RC $ERR")" '^1 .*cannot reach the controller.*hint: is suanlid running'

# ---- docs/openapi.yaml describes exactly the daemon's routes and roles ----
# Debian's python3 (where scripts/deps.sh installs python3-yaml), else PATH's.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
if "$PY" -c 'import yaml' 2>/dev/null; then
	"$SUANLID" routes --json >"$TMP/routes.json"
	diff=$("$PY" - "$SL_ROOT/docs/openapi.yaml" "$TMP/routes.json" <<'PY'
import json, sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
assert doc["openapi"].startswith("3.0"), "not OpenAPI 3.0"
have = {}
for path, item in doc["paths"].items():
    for method, op in item.items():
        if method in ("get", "put", "post", "delete", "patch"):
            roles = {r.split(" (")[0] for r in op.get("x-roles", [])} - {"none"}
            have[(method.upper(), path)] = roles
want = {(r["method"], r["path"]): set(r["roles"]) for r in json.load(open(sys.argv[2]))}
for k in sorted(set(have) | set(want)):
    if k not in have: print("undocumented route", *k)
    elif k not in want: print("documented but not served", *k)
    elif have[k] != want[k]: print("roles differ for", *k, sorted(have[k]), "vs", sorted(want[k]))
PY
)
	expect_eq "docs/openapi.yaml: every route and its roles, as suanlid serves them" "$diff" ""
else
	skip_part "docs/openapi.yaml check: no python3 yaml module (scripts/deps.sh installs the Debian package python3-yaml)"
fi

# ---- a controller ----
"$SUANLID" init --data "$DATA" >/dev/null || { bad "suanlid init"; finish; exit 1; }
ADMIN=$(cat "$DATA/admin.token")
if ! start_daemon "$TMP/log" --data "$DATA" --fleet "$FLEET" --simulate; then
	bad "daemon starts" "$(cat "$TMP/log")"
	finish
	exit 1
fi
ok "daemon listens on port $PORT"

cli nodes --server "$URL"
expect_match "no token: exit 1, server's message and where tokens come from" "$(flat "$RC $ERR")" \
	'^1 .*needs a bearer token.*no token was given'
export SUANLI_SERVER="$URL" SUANLI_TOKEN="$ADMIN"

# ---- nodes ----
cli nodes
expect_eq "nodes exits 0" "$RC" 0
expect_match "nodes table header" "$(printf '%s' "$OUT" | head -1)" '^NAME +TYPE +MODEL +SITE +REGION +STATE +FREE +REASON$'
expect_eq "one line per demo node" "$(printf '%s\n' "$OUT" | tail -n +2 | wc -l)" 76
expect_match "columns line up" "$(printf '%s\n' "$OUT" | awk '{print index($0, $6)}' | sort -u | wc -l)" '^1$'
cli nodes --json
expect_eq "nodes --json is the API's array" "$(printf '%s' "$OUT" | jq length)" 76
cli node show fza-h100-001
expect_match "node show sentence" "$OUT" 'Node fza-h100-001 is ready; 8 of 8 GPUs are free'
expect_match "node show bandwidth matrix" "$OUT" 'GB/s between GPUs'
cli node show fza-h100-001 --json
expect_eq "node show --json has gpu_state" "$(printf '%s' "$OUT" | jq '.gpu_state | length')" 8
cli node show no-such-node
expect_match "unknown node: exit 1" "$RC" '^1$'
expect_match "... whose hint is a command, not a route" "$(flat "$ERR")" "hint: 'suanli nodes' lists them"

# ---- tenants ----
cli tenant create acme --regions cn-east --quota h100-sxm=16
expect_match "tenant create (contract form)" "$RC $OUT" '^0 Created tenant acme \(regions: cn-east; quotas: h100-sxm=16\)'
cli tenant create beta --json
expect_eq "tenant create --json" "$(printf '%s' "$OUT" | jq -r .name)" beta
cli tenant create acme
expect_match "duplicate tenant: exit 1 with the server's message" "$RC $ERR" '^1 suanli: .*acme'
cli tenant create gamma --quota h100-sxm
expect_eq "--quota without =N: exit 2" "$RC" 2
cli tenant create gamma --quota h999=1
expect_match "unknown quota model: the hint names the known models" "$(flat "$RC $ERR")" \
	'^1 .*unknown GPU model .h999.*hint: known models: h100-sxm, .*l40s'
cli tenant list
expect_match "tenant list table" "$OUT" 'acme +cn-east +h100-sxm=16'
cli tenant list --json
expect_eq "tenant list --json" "$(printf '%s' "$OUT" | jq length)" 2
cli tenant show acme
expect_match "tenant show" "$OUT" 'Quotas: +h100-sxm=16'

# ---- tokens ----
cli token create --tenant acme --role tenant --user alice --json
expect_eq "token create --json exits 0" "$RC" 0
ALICE=$(printf '%s' "$OUT" | jq -r .token)
ALICE_ID=$(printf '%s' "$OUT" | jq -r .id)
expect_match "token create --json gives the secret (contract form)" "$ALICE" '^sl_[A-Za-z0-9_-]{43}$'
cli token create --tenant acme --role tenant
expect_match "token create human shows the secret once" "$(flat "$OUT")" 'shown only this once; keep it safe: sl_[A-Za-z0-9_-]{43}$'
cli token create --tenant acme --role wizard
expect_eq "unknown role: exit 2" "$RC" 2
cli token create --tenant nosuch --role tenant
expect_match "token for an unknown tenant: the hint is the command that creates it" \
	"$(flat "$RC $ERR")" "^1 suanli: no tenant called 'nosuch'.*hint: create it with 'suanli tenant create nosuch'"
cli token list
expect_match "token list table" "$OUT" "$ALICE_ID +tenant +acme +alice"
cli token list --json
expect_eq "token list --json never has secrets" "$(printf '%s' "$OUT" | jq '[.[] | select(has("token"))] | length')" 0

# ---- leases ----
cli lease create --gpus 8 --model h100-sxm --per-node 8 --plan hourly --duration 2h \
	--region cn-east --min-bw 400 --token "$ALICE" --json
expect_eq "lease create --json (contract form) exits 0" "$RC" 0
L1=$(printf '%s' "$OUT" | jq -r .id)
expect_eq "lease is active" "$(printf '%s' "$OUT" | jq -r .state)" active
expect_eq "placement holds 8 GPUs" "$(printf '%s' "$OUT" | jq '[.placement[].gpus[]] | length')" 8
expect_eq "--duration 2h sent as 7200 s" "$(printf '%s' "$OUT" | jq .request.duration_s)" 7200
expect_eq "--min-bw sent" "$(printf '%s' "$OUT" | jq .request.min_bw_gbps)" 400
expect_eq "--json is indented" "$(printf '%s' "$OUT" | sed -n 2p)" '  "id": "'"$L1"'",'
cli lease create --gpus 8 --model h100-sxm --duration 1h30m --token "$ALICE"
expect_match "lease create sentence" "$OUT" '^Lease ls-[0-9]+ is active on [a-z0-9-]+ \(GPUs 0-7\)\.$'
L2=$(printf '%s' "$OUT" | sed 's/^Lease \([^ ]*\) .*/\1/')
cli lease show "$L2" --json
expect_eq "--duration 1h30m sent as 5400 s" "$(printf '%s' "$OUT" | jq .request.duration_s)" 5400
cli lease create --gpus 8 --model h100-sxm --token "$ALICE"
expect_match "quota refusal: exit 1 with the server's message and hint" "$(flat "$RC $ERR")" \
	'^1 suanli: tenant acme.s quota for h100-sxm is 16 GPUs.*hint: '
cli lease list --json --token "$ALICE"
expect_eq "lease list --json is an array" "$(printf '%s' "$OUT" | jq -r type)" array
expect_eq "tenant sees its two leases" "$(printf '%s' "$OUT" | jq length)" 2
cli lease list
expect_match "lease list header" "$(printf '%s' "$OUT" | head -1)" '^ID +TENANT +STATE +PLAN +GPUS +MODEL +NODES +AGE$'
expect_match "lease list row" "$OUT" "$L1 +acme +active +hourly +8 +h100-sxm +fza-h100-[0-9]+ +[0-9smhd]+"
cli lease list --state released --json
expect_eq "lease list --state filters" "$(printf '%s' "$OUT" | jq length)" 0
cli lease show "$L1" --json
expect_eq "lease show --json (contract form)" "$(printf '%s' "$OUT" | jq -r .id)" "$L1"
EXP1=$(printf '%s' "$OUT" | jq -r .expires_at)
cli lease show "$L1"
expect_match "lease show: sentence, request, placement and history" "$(flat "$OUT")" \
	"Lease $L1 is active on .*Request: +8 GPUs, models h100-sxm, 8 per node, at least 400 GB/s, region cn-east, for 2h\\..*Expires: .*\\(in (1h59m|2h)\\).*NODE +TYPE.*AT +STATE +REASON"
cli lease show ls-999999
expect_match "unknown lease: exit 1 with the server's message" "$RC $ERR" "^1 suanli: no lease with id 'ls-999999'"
expect_match "... and a command to list them" "$(flat "$ERR")" "hint: 'suanli lease list' lists yours"
cli lease extend "$L1" --by 1h --token "$ALICE"
expect_match "lease extend" "$RC $OUT" "^0 Lease $L1 now expires at "
cli lease show "$L1" --json
EXP2=$(printf '%s' "$OUT" | jq -r .expires_at)
expect_eq "extend moved the end by one hour" \
	$(( $(date -d "$EXP2" +%s) - $(date -d "$EXP1" +%s) )) 3600
cli lease extend "$L1" 1d --json
expect_eq "extend ID DURATION form, --json" "$(printf '%s' "$OUT" | jq -r .id)" "$L1"
cli lease extend "$L1" --by soon
expect_eq "extend with a bad duration: exit 2" "$RC" 2
cli lease create --tenant beta --gpus 8 --elastic 8-16 --duration 90s --json
E1=$(printf '%s' "$OUT" | jq -r .id)
expect_eq "elastic lease created" "$(printf '%s' "$OUT" | jq -c .request.elastic)" '{"min":8,"max":16}'
expect_eq "--duration 90s" "$(printf '%s' "$OUT" | jq .request.duration_s)" 90
cli lease create --tenant beta --gpus 8 --model h800-sxm --site fuzhou-a --min-mem 80 \
	--exclusive --plan spot --idempotency-key retry-1 --json
K1=$(printf '%s' "$OUT" | jq -r .id)
expect_eq "--site, --min-mem, --exclusive, --plan sent" \
	"$(printf '%s' "$OUT" | jq -c '[.request.site, .request.min_mem_gib, .request.exclusive, .plan]')" \
	'["fuzhou-a",80,true,"spot"]'
cli lease create --tenant beta --gpus 8 --model h800-sxm --site fuzhou-a --min-mem 80 \
	--exclusive --plan spot --idempotency-key retry-1 --json
expect_eq "a retry with the same --idempotency-key gets the same lease" "$(printf '%s' "$OUT" | jq -r .id)" "$K1"
cli lease scale "$E1" --gpus 16
expect_match "lease scale" "$RC $OUT" "^0 Lease $E1 is active on "
cli lease show "$E1" --json
expect_eq "scaled to 16 GPUs" "$(printf '%s' "$OUT" | jq .gpus)" 16
cli lease scale "$E1" 32
expect_match "scale beyond max: exit 1, server's words" "$RC $ERR" '^1 suanli: .*between 8 and 16'
cli lease release "$L2" --token "$ALICE"
expect_match "lease release (contract form)" "$RC $OUT" "^0 Lease $L2 is released\.$"
cli lease release "$L2" --token "$ALICE" --json
if [ "$RC" = 1 ] || [ "$(printf '%s' "$OUT" | jq -r .state)" = released ]; then
	ok "release again: refused, or the lease as it is (released)"
else
	bad "release again" "rc=$RC out=$OUT err=$ERR"
fi

# ---- drain, queue, resume ----
for n in 01 02 03 04; do cli node drain "fza-h200-$n" --reason "bios update"; done
expect_match "node drain sentence" "$OUT" '^Node fza-h200-04 is drained: bios update;'
cli nodes
expect_match "nodes shows the reason" "$OUT" 'fza-h200-01 .* drained +8/8 +bios update'
cli lease create --tenant beta --gpus 8 --model h200-sxm
expect_match "pending sentence with position and reason" "$OUT" '^Lease ls-[0-9]+ is pending: position 1 in the queue — .+\.$'
W=$(printf '%s' "$OUT" | sed 's/^Lease \([^ ]*\) .*/\1/')
cli queue
expect_match "queue table" "$(flat "$OUT")" "^POS +LEASE +TENANT +PLAN +GPUS +WAITING +REASON 1 +$W +beta +hourly +8 +[0-9smhd]+ +[a-z].*"
cli queue --json
expect_eq "queue --json" "$(printf '%s' "$OUT" | jq -r '.[0].lease')" "$W"
cli node resume fza-h200-03
expect_match "node resume" "$RC $OUT" '^0 Node fza-h200-03 is ready;'
cli lease show "$W" --json
expect_eq "waiting lease started on the resumed node" "$(printf '%s' "$OUT" | jq -r .state)" active
cli queue
expect_eq "queue empty again" "$OUT" "The queue is empty."

# ---- reservations ----
cli reservation create --tenant acme --nodes 'fza-h100-[005-006]' \
	--start 2030-01-01T00:00:00Z --end 2030-01-02T00:00:00Z
expect_match "reservation create" "$RC $OUT" '^0 Reservation rsv-[0-9]+ holds fza-h100-005, fza-h100-006 for acme'
cli reservation create --tenant acme --nodes x --start tomorrow --end later
expect_eq "reservation with bad times: exit 2" "$RC" 2
cli reservation list
expect_match "reservation list" "$OUT" 'rsv-[0-9]+ +acme +fza-h100-005,fza-h100-006 +2030-01-01'
cli reservation list --json
expect_eq "reservation list --json" "$(printf '%s' "$OUT" | jq length)" 1

# ---- roles, revocation, bad tokens ----
cli tenant list --token "$ALICE"
expect_match "a tenant may not list tenants: exit 1" "$RC" '^1$'
cli token revoke "$ALICE_ID"
expect_match "token revoke" "$RC $OUT" "^0 Revoked token $ALICE_ID \(user alice\)"
cli lease list --token "$ALICE"
expect_match "revoked token: exit 1 with the server's message" "$(flat "$RC $ERR")" '^1 suanli: .*unknown or revoked.*the token came from --token'
cli lease list --token sl_bogus
expect_match "bad token: exit 1" "$RC $ERR" '^1 suanli: .*unknown or revoked'
SUANLI_TOKEN=sl_bogus cli lease list
expect_match "bad token from the environment says so" "$ERR" 'came from SUANLI_TOKEN'

# ---- config file ----
unset SUANLI_SERVER SUANLI_TOKEN

# ---- global options before the command (as git and kubectl take them) ----
# (no environment and no config file here: only the options say where to go)
cli tenant list --json --server "$URL" --token "$ADMIN"
AFTER="$RC $OUT"
cli --server "$URL" --token "$ADMIN" tenant list --json
expect_eq "--server and --token before the command: the same answer as after it" "$RC $OUT" "$AFTER"
cli --server="$URL" --token="$ADMIN" --json tenant list
expect_eq "--server=URL --token=T --json before the command: the same too" "$RC $OUT" "$AFTER"
cli queue --server "$URL" --token "$ADMIN"
AFTER="$RC $OUT $ERR"
cli --server "$URL" --token "$ADMIN" queue
expect_eq "human form, options before and after: the same" "$RC $OUT $ERR" "$AFTER"
cli --server http://127.0.0.1:1 --token "$ADMIN" queue --server "$URL"
expect_eq "the option after the command wins over the one before" "$RC $OUT" "0 The queue is empty."
cli --server "$URL" --token "$ALICE" lease list
expect_match "a bad token given before the command says it came from --token" "$(flat "$RC $ERR")" \
	'^1 suanli: .*unknown or revoked.*the token came from --token'
cli --bogus queue
expect_match "an unknown option before the command: exit 2, named, with the global ones" \
	"$(flat "$RC $ERR")" "^2 suanli: unknown option '--bogus' before the command.*hint: before the command suanli takes --server URL, --token TOKEN and --json"
cli --server
expect_match "--server before the command without a value: exit 2" "$(flat "$RC $ERR")" "^2 suanli: option '--server' needs a value"
cli --help
expect_match "suanli --help shows the global options" "$(flat "$OUT")" \
	'^usage: suanli \[--server URL\] \[--token TOKEN\] \[--json\] COMMAND .*Global options, before the command or after it'
mkdir -p "$XDG_CONFIG_HOME/suanli"
CONF="$XDG_CONFIG_HOME/suanli/config"
printf '# suanli\nserver = %s\ntoken = %s\n' "$URL" "$ADMIN" >"$CONF"
chmod 600 "$CONF"
cli queue
expect_eq "server and token from the config file, no warning" "$RC $OUT $ERR" '0 The queue is empty. '
chmod 644 "$CONF"
cli queue
expect_match "config readable by others: works, with a warning" "$(flat "$RC $ERR")" '^0 suanli: warning: .*holds a token and others can read it.*chmod 600'
SUANLI_SERVER=http://127.0.0.1:1 cli queue
expect_eq "the environment wins over the config file" "$RC" 1
printf 'server = %s\ncolour = red\n' "$URL" >"$CONF"
cli queue
expect_match "unknown config key: exit 1 naming file and line" "$RC $ERR" "^1 suanli: .*config:2: unknown key 'colour'"
rm -f "$CONF"
mkdir -p "$HOME/.config/suanli"
printf 'server = %s\ntoken = %s\n' "$URL" "$ADMIN" >"$HOME/.config/suanli/config"
chmod 600 "$HOME/.config/suanli/config"
XDG_CONFIG_HOME= cli queue
expect_eq "~/.config/suanli/config without XDG_CONFIG_HOME" "$RC $OUT" "0 The queue is empty."

stop_daemon || bad "daemon exits cleanly on SIGTERM"
finish
