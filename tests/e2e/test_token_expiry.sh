#!/usr/bin/env bash
# test_token_expiry.sh - tokens with an expiry (`suanli token create
# --expires 30d`, issue 16): the answer and the listing say when; the token
# works until then and is refused (401, as an unknown token) after, also
# across a restart; malformed or out-of-range durations are refused.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
DATA="$TMP/data"
"$SUANLID" init --data "$DATA" >/dev/null || { bad "init"; finish; exit 1; }
start_daemon "$TMP/log" --data "$DATA" || { bad "serve"; finish; exit 1; }
A=$(cat "$DATA/admin.token")
cli() { OUT=$("$SUANLI" "$@" --server "$URL" --token "$A" 2>&1); RC=$?; }

cli token create --role auditor --expires 30d --json
expect_eq "--expires 30d: created" "$RC" 0
T30=$(echo "$OUT" | jq -r .token)
exp=$(echo "$OUT" | jq -r .expires_at)
created=$(echo "$OUT" | jq -r .created_at)
d=$(( $(date -d "$exp" +%s) - $(date -d "$created" +%s) ))
expect_eq "it expires 30 days after its creation" "$d" 2592000
expect_eq "and works now" "$(status_of "$(api "$T30" GET /v1/nodes)")" 200
cli token list --json
expect_eq "the listing says when it expires" "$(echo "$OUT" | jq -r --arg e "$exp" '[.[] | select(.expires_at == $e)] | length')" 1
cli token create --role auditor --expires 1s --json
T1=$(echo "$OUT" | jq -r .token)
st=""
for _ in $(seq 1 100); do
	st=$(status_of "$(api "$T1" GET /v1/nodes)")
	[ "$st" = 401 ] && break
	sleep 0.1
done
expect_eq "a token past its expiry is refused (401)" "$st" 401
cli token create --role auditor --expires 10x
expect_eq "a malformed duration is refused" "$RC" 2
cli token create --role auditor --expires 0d
expect_eq "a zero duration is refused" "$RC" 2
expect_eq "the API refuses expires_in_s out of range" \
	"$(status_of "$(api "$A" POST /v1/tokens '{"role":"auditor","expires_in_s":0}')")" 400
stop_daemon
start_daemon "$TMP/log" --data "$DATA" || { bad "serve again"; finish; exit 1; }
expect_eq "after a restart the 30-day token still works" "$(status_of "$(api "$T30" GET /v1/nodes)")" 200
expect_eq "and the expired one is still refused" "$(status_of "$(api "$T1" GET /v1/nodes)")" 401
stop_daemon
finish
