#!/usr/bin/env bash
# test_console_api.sh - the web console's backend (docs/console.md) with curl
# against a real suanlid: users and who may create them, signing in, the
# cookie's flags, CSRF, signing out, expiry, a restart keeping sessions, the
# sign-in rate limits and their audit entries, tenant isolation through the
# cookie, the live-update long poll and its tenant filter, and the console's
# static files (types, CSP, traversal, symbolic links).
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
DATA="$TMP/data"
WEB="$TMP/web"
FLEET="$SL_ROOT/examples/demo-fleet.yaml"

# A console directory of our own, with a link out of it and a directory.
mkdir -p "$WEB/sub" "$TMP/outside"
printf '<!doctype html><title>t</title><script src="/console/app.js"></script>\n' >"$WEB/index.html"
printf 'console.log("app");\n' >"$WEB/app.js"
printf 'export const x = 1;\n' >"$WEB/mod.mjs"
printf 'body { color: black; }\n' >"$WEB/style.css"
printf '<svg xmlns="http://www.w3.org/2000/svg"/>\n' >"$WEB/logo.svg"
printf '{"hello": "world"}\n' >"$WEB/strings.json"
printf 'wOF2' >"$WEB/font.woff2"
printf '\x89PNG\r\n' >"$WEB/icon.png"
printf 'inside the sub directory\n' >"$WEB/sub/page.html"
printf 'SECRET-OUTSIDE\n' >"$TMP/outside/secret.txt"
ln -s "$TMP/outside/secret.txt" "$WEB/leak.txt"
ln -s "$TMP/outside" "$WEB/outdir"

"$SUANLID" init --data "$DATA" >/dev/null || { bad "init"; finish; exit 1; }
ADMIN=$(cat "$DATA/admin.token")
serve() {
	start_daemon "$TMP/log" --data "$DATA" --fleet "$FLEET" --simulate --console "$WEB" "$@" &&
		export SUANLI_SERVER="$URL"
}
if ! serve; then
	bad "daemon starts" "$(cat "$TMP/log")"
	finish
	exit 1
fi
export SUANLI_SERVER="$URL" SUANLI_TOKEN="$ADMIN"

# ---- users ----
"$SUANLI" tenant create acme >/dev/null && "$SUANLI" tenant create beta >/dev/null
printf 'alice-password-1\n' >"$TMP/pw_alice"
printf 'bob-password-22\n' >"$TMP/pw_bob"
printf 'tadmin-password-333\n' >"$TMP/pw_tadmin"
out=$("$SUANLI" user create --tenant acme --name alice --password-file "$TMP/pw_alice" 2>&1)
expect_match "user create (tenant role by default)" "$out" "Created user alice \(role tenant, tenant acme\)"
"$SUANLI" user create --tenant beta --name bob --password-file "$TMP/pw_bob" >/dev/null
"$SUANLI" user create --tenant acme --name tadmin --role tenant-admin \
	--password-file "$TMP/pw_tadmin" >/dev/null
out=$("$SUANLI" user create --name olga --role operator --password-file "$TMP/pw_alice" 2>&1)
expect_match "an operator user takes no tenant" "$out" "role operator"
printf 'short\n' >"$TMP/pw_short"
"$SUANLI" user create --tenant acme --name shorty --password-file "$TMP/pw_short" >/dev/null 2>&1
expect_eq "a password under 8 bytes is refused" "$?" 1
"$SUANLI" user create --tenant acme --name alice --password-file "$TMP/pw_alice" >/dev/null 2>&1
expect_eq "a second alice is refused" "$?" 1
r=$(api "$ADMIN" POST /v1/users '{"name":"root2","role":"admin","password":"xxxxxxxxxx"}')
expect_eq "no user has the admin role" "$(status_of "$r")" 400
TA_TOK=$(api "$ADMIN" POST /v1/tokens '{"role":"tenant-admin","tenant":"acme"}' | sed 's/^[0-9]* //' | jq -r .token)
r=$(api "$TA_TOK" POST /v1/users '{"name":"carol","password":"carol-password"}')
expect_eq "a tenant-admin creates a user of its own tenant" "$(status_of "$r") $(body_of "$r" | jq -r .tenant)" "201 acme"
r=$(api "$TA_TOK" POST /v1/users '{"name":"mallory","tenant":"beta","password":"mallory-password"}')
expect_eq "... not of another tenant" "$(status_of "$r")" 403
r=$(api "$TA_TOK" POST /v1/users '{"name":"mallory","role":"operator","password":"mallory-password"}')
expect_eq "... nor an operator" "$(status_of "$r")" 403
r=$(api "$TA_TOK" GET /v1/users)
expect_eq "a tenant-admin lists its own tenant's users" "$(body_of "$r" | jq -r '[.[].name] | sort | join(",")')" "alice,carol,tadmin"
r=$(api "$TA_TOK" DELETE /v1/users/bob)
expect_eq "... and cannot remove another tenant's (404)" "$(status_of "$r")" 404
r=$(api "$ADMIN" GET /v1/users)
expect_eq "no password hash is listed" "$(body_of "$r" | grep -c argon2)" 0

# ---- signing in ----
# signin USER PASSWORD JAR : prints "STATUS BODY", headers in $TMP/hdr.
signin() {
	local code
	code=$(curl -s -D "$TMP/hdr" -o "$TMP/body" -w '%{http_code}' -c "$3" \
		-H 'Content-Type: application/json' \
		--data-binary "{\"user\":\"$1\",\"password\":\"$2\"}" "$URL/v1/sessions")
	printf '%s %s' "$code" "$(cat "$TMP/body")"
}
# capi JAR CSRF METHOD PATH [BODY] : a call with the cookie (CSRF "-": none).
capi() {
	local jar=$1 csrf=$2 method=$3 path=$4 body=${5-}
	local args=(-s -o "$TMP/body" -w '%{http_code}' -X "$method" -b "$jar" -D "$TMP/hdr")
	[ "$csrf" != "-" ] && args+=(-H "X-CSRF-Token: $csrf")
	[ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
	local code
	code=$(curl "${args[@]}" "$URL$path")
	printf '%s %s' "$code" "$(cat "$TMP/body")"
}
r=$(signin alice alice-password-1 "$TMP/jar_a")
expect_eq "alice signs in" "$(status_of "$r")" 201
A_CSRF=$(body_of "$r" | jq -r .csrf)
expect_eq "the answer names user, tenant and role" \
	"$(body_of "$r" | jq -r '[.user, .tenant, .role] | join(" ")')" "alice acme tenant"
cookie=$(grep -i '^set-cookie:' "$TMP/hdr" | tr -d '\r')
expect_match "the cookie is HttpOnly" "$cookie" "; HttpOnly"
expect_match "the cookie is SameSite=Strict" "$cookie" "; SameSite=Strict"
expect_match "the cookie's path is /" "$cookie" "; Path=/"
expect_eq "no Secure flag over plain HTTP" "$(printf '%s' "$cookie" | grep -c Secure)" 0
A_COOKIE=$(printf '%s' "$cookie" | sed 's/.*suanli_session=\([^;]*\).*/\1/')
expect_match "the cookie is a fresh secret" "$A_COOKIE" "^ss_[A-Za-z0-9_-]{43}$"
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: text/plain' \
	--data-binary '{"user":"alice","password":"alice-password-1"}' "$URL/v1/sessions")
expect_eq "a sign-in that is not JSON (a cross-site form) is refused" "$code" 400
r=$(capi "$TMP/jar_a" - GET /v1/session)
expect_eq "GET /v1/session says who is signed in" "$(status_of "$r") $(body_of "$r" | jq -r .user)" "200 alice"
expect_eq "... and gives the CSRF token again (after a reload)" "$(body_of "$r" | jq -r .csrf)" "$A_CSRF"
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/v1/session")
expect_eq "GET /v1/session without a cookie is 401" "$code" 401

# ---- CSRF ----
r=$(capi "$TMP/jar_a" - POST /v1/leases '{"gpus":1}')
expect_eq "a POST with the cookie and no X-CSRF-Token is 403" "$(status_of "$r")" 403
expect_eq "... with code csrf" "$(body_of "$r" | jq -r .error.code)" csrf
r=$(capi "$TMP/jar_a" "${A_CSRF}x" POST /v1/leases '{"gpus":1}')
expect_eq "a wrong X-CSRF-Token is 403 csrf" "$(status_of "$r") $(body_of "$r" | jq -r .error.code)" "403 csrf"
r=$(api "$ADMIN" GET /v1/leases)
expect_eq "the refused POSTs made no lease" "$(body_of "$r" | jq length)" 0
r=$(capi "$TMP/jar_a" "$A_CSRF" POST /v1/leases '{"gpus":1}')
expect_eq "with the token the POST is served" "$(status_of "$r")" 201
LEASE_A=$(body_of "$r" | jq -r .id)
expect_eq "the lease is alice's tenant's" "$(body_of "$r" | jq -r .tenant)" acme
r=$(api "$ADMIN" POST /v1/leases '{"gpus":1,"tenant":"beta"}')
LEASE_B=$(body_of "$r" | jq -r .id)
expect_eq "a bearer token needs no CSRF token" "$(status_of "$r")" 201
r=$(api "$ADMIN" GET '/v1/audit/log?action=lease.create')
expect_eq "the CSRF refusals are audit entries (denied, actor the session)" \
	"$(body_of "$r" | jq '[.[] | select(.outcome == "denied" and (.actor | startswith("ses_")))] | length')" 2

# ---- tenant isolation through the cookie ----
r=$(signin bob bob-password-22 "$TMP/jar_b")
B_CSRF=$(body_of "$r" | jq -r .csrf)
r=$(capi "$TMP/jar_b" - GET "/v1/leases/$LEASE_A")
expect_eq "bob (beta) cannot read alice's lease by its URL" "$(status_of "$r")" 404
r=$(capi "$TMP/jar_b" - GET /v1/leases)
expect_eq "bob's list holds only beta's lease" "$(body_of "$r" | jq -r '[.[].id] | join(",")')" "$LEASE_B"
r=$(capi "$TMP/jar_b" - GET "/v1/leases?tenant=acme")
expect_eq "... even asking for acme's" "$(body_of "$r" | jq -r '[.[] | select(.tenant == "acme")] | length')" 0
r=$(capi "$TMP/jar_b" - GET /v1/tenants/acme/balance)
expect_match "bob cannot read acme's balance" "$(status_of "$r")" "^40[34]$"
r=$(capi "$TMP/jar_b" "$B_CSRF" POST "/v1/leases/$LEASE_A/release" '{}')
expect_eq "bob cannot release alice's lease" "$(status_of "$r")" 404
r=$(capi "$TMP/jar_b" "$B_CSRF" POST /v1/tokens '{"role":"tenant","tenant":"beta"}')
expect_eq "a tenant user's session has the tenant role's limits" "$(status_of "$r")" 403

# ---- live updates ----
r=$(capi "$TMP/jar_a" - GET '/v1/events?since=0')
SEQ=$(body_of "$r" | jq -r .seq)
expect_match "since=0 answers at once with the current seq" "$SEQ" "^[0-9]+$"
# A poll that waits: alice's and bob's, both from SEQ, in the background.
curl -s -b "$TMP/jar_a" "$URL/v1/events?since=$SEQ&wait=30" >"$TMP/ev_a" &
EV_A=$!
curl -s -b "$TMP/jar_b" "$URL/v1/events?since=$SEQ&wait=3" >"$TMP/ev_b" &
EV_B=$!
# (no race: a poll from SEQ that arrives after the release answers at once)
r=$(capi "$TMP/jar_a" "$A_CSRF" POST "/v1/leases/$LEASE_A/release" '{}')
expect_eq "alice releases her lease" "$(status_of "$r")" 200
wait "$EV_A"
expect_eq "alice's waiting poll gets the release" \
	"$(jq -r --arg l "$LEASE_A" '[.events[] | select(.kind == "lease" and .id == $l) | .state] | join(",")' "$TMP/ev_a")" released
expect_eq "... with its tenant" "$(jq -r '.events[0].tenant' "$TMP/ev_a")" acme
wait "$EV_B"
expect_eq "bob's poll never sees acme's lease" "$(jq '[.events[] | select(.tenant == "acme")] | length' "$TMP/ev_b")" 0
r=$(api "$ADMIN" POST /v1/nodes/fza-h100-001/drain '{"reason":"console test"}')
r=$(api "$ADMIN" GET "/v1/events?since=$SEQ&wait=0")
expect_eq "the operator sees both tenants' leases and the drained node" \
	"$(body_of "$r" | jq -r '[.events[] | .kind + ":" + .state] | unique | join(",")')" "lease:released,node:drain"
r=$(api "$ADMIN" POST /v1/nodes/fza-h100-001/resume '{}')
r=$(api "$ADMIN" GET "/v1/events?since=1&wait=0")
expect_eq "a since from before this run says reset" "$(body_of "$r" | jq -r .reset)" true
S2=$(api "$ADMIN" GET '/v1/events?since=0' | sed 's/^[0-9]* //' | jq -r .seq)
r=$(capi "$TMP/jar_a" "$A_CSRF" POST /v1/instances '{"gpus":1}')
expect_eq "alice creates an instance with her cookie" "$(status_of "$r")" 201
INST_A=$(body_of "$r" | jq -r .id)
r=$(capi "$TMP/jar_a" - GET "/v1/events?since=$S2&wait=0")
expect_match "instances are events too" \
	"$(body_of "$r" | jq -r --arg i "$INST_A" '[.events[] | select(.kind == "instance" and .id == $i) | .state] | join(",")')" "starting"
r=$(capi "$TMP/jar_b" - GET "/v1/events?since=$S2&wait=0")
expect_eq "... which bob never sees" "$(body_of "$r" | jq '[.events[] | select(.tenant == "acme")] | length')" 0
r=$(capi "$TMP/jar_a" - GET '/v1/events?since=0&wait=99')
expect_eq "wait is bounded (400 past 60)" "$(status_of "$r")" 400

# ---- the CLI's --watch ----
: >"$TMP/watch"
: >"$TMP/watch_n"
"$SUANLI" lease list --watch >"$TMP/watch" 2>&1 &
WATCH=$!
"$SUANLI" nodes --watch --state drained >"$TMP/watch_n" 2>&1 &
WATCH_N=$!
wait_until 20 grep -q "$LEASE_B" "$TMP/watch" || bad "lease list --watch prints the list" "$(cat "$TMP/watch")"
wait_until 20 grep -q "No nodes match" "$TMP/watch_n" || bad "nodes --watch prints the list" "$(cat "$TMP/watch_n")"
r=$(api "$ADMIN" POST /v1/leases '{"gpus":2,"tenant":"beta"}')
LEASE_W=$(body_of "$r" | jq -r .id)
if wait_until 20 grep -q "$LEASE_W" "$TMP/watch"; then
	ok "lease list --watch prints again when a lease changes"
else
	bad "lease list --watch prints again when a lease changes" "$(cat "$TMP/watch")"
fi
expect_eq "... after a time line" "$(grep -c '^--- [0-9:]* ---$' "$TMP/watch")" 1
api "$ADMIN" POST /v1/nodes/fza-h100-002/drain '{"reason":"watch test"}' >/dev/null
if wait_until 20 grep -q "fza-h100-002" "$TMP/watch_n"; then
	ok "nodes --watch prints again when a node is drained"
else
	bad "nodes --watch prints again when a node is drained" "$(cat "$TMP/watch_n")"
fi
kill "$WATCH" "$WATCH_N" 2>/dev/null
wait "$WATCH" "$WATCH_N" 2>/dev/null
api "$ADMIN" POST /v1/nodes/fza-h100-002/resume '{}' >/dev/null

# ---- signing out ----
r=$(signin alice alice-password-1 "$TMP/jar_a2")
A2_CSRF=$(body_of "$r" | jq -r .csrf)
r=$(capi "$TMP/jar_a2" - DELETE /v1/session)
expect_eq "signing out needs the CSRF token too" "$(status_of "$r") $(body_of "$r" | jq -r .error.code)" "403 csrf"
r=$(capi "$TMP/jar_a2" "$A2_CSRF" DELETE /v1/session)
expect_eq "signing out ends the session" "$(status_of "$r") $(body_of "$r" | jq -r .ended)" "200 true"
expect_match "... and clears the cookie" "$(grep -i '^set-cookie:' "$TMP/hdr" | tr -d '\r')" "suanli_session=; Path=/; Max-Age=0"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Cookie: suanli_session=$(awk '$6 == "suanli_session" {print $7}' "$TMP/jar_a2")" "$URL/v1/session")
expect_eq "the ended cookie, replayed by hand, is refused" "$code" 401
r=$(capi "$TMP/jar_a" - GET /v1/session)
expect_eq "alice's other session is still signed in" "$(status_of "$r")" 200

# ---- the store holds no secret ----
sqlite3 "$DATA/suanli.db" 'PRAGMA wal_checkpoint;' >/dev/null 2>&1 || true
found=$(cat "$DATA"/suanli.db* | grep -a -c -e "$A_COOKIE" -e alice-password-1 -e "$A_CSRF" || true)
expect_eq "neither cookie, CSRF token nor password is in the store's files" "$found" 0
expect_eq "the store holds an Argon2id hash" "$(cat "$DATA"/suanli.db* | grep -a -c 'argon2id' | awk '{print ($1 > 0)}')" 1

# ---- a restart keeps people signed in ----
stop_daemon
serve --signin-fails 3 --signin-fails-source 6 || bad "daemon restarts" "$(cat "$TMP/log")"
r=$(capi "$TMP/jar_a" - GET /v1/session)
expect_eq "after a restart alice's session still works" "$(status_of "$r") $(body_of "$r" | jq -r .user)" "200 alice"
r=$(capi "$TMP/jar_a" "$A_CSRF" POST /v1/leases '{"gpus":1}')
expect_eq "... and so does its CSRF token" "$(status_of "$r")" 201

# ---- the rate limit (--signin-fails 3 per user, 6 per source) ----
codes=""
for _ in 1 2 3; do codes="$codes$(signin alice wrong-password "$TMP/jar_x" | cut -c1-3) "; done
expect_eq "wrong passwords are 401" "$codes" "401 401 401 "
r=$(signin alice alice-password-1 "$TMP/jar_x")
expect_eq "past the limit even the right password is 429" "$(status_of "$r") $(body_of "$r" | jq -r .error.code)" "429 rate_limited"
expect_match "... with Retry-After" "$(grep -i '^retry-after:' "$TMP/hdr" | tr -d '\r')" "^[Rr]etry-[Aa]fter: [0-9]+$"
r=$(signin tadmin tadmin-password-333 "$TMP/jar_t")
expect_eq "another user from the same address still signs in" "$(status_of "$r")" 201
for u in nobody1 nobody2; do signin "$u" whatever-pass "$TMP/jar_x" >/dev/null; done
r=$(signin nobody3 whatever-pass "$TMP/jar_x")
expect_eq "an unknown user gets the same 401" "$(status_of "$r") $(body_of "$r" | jq -r .error.message)" "401 unknown user or wrong password"
r=$(signin bob bob-password-22 "$TMP/jar_x")
expect_eq "past the source's limit every user from it is 429" "$(status_of "$r")" 429
expect_match "... saying why" "$(body_of "$r" | jq -r .error.message)" "from this address"
r=$(api "$ADMIN" GET '/v1/audit/log?action=session.fail')
expect_eq "each verified failure is a session.fail entry" "$(body_of "$r" | jq length)" 6
expect_eq "... naming the name tried and the source address" \
	"$(body_of "$r" | jq -r '[.[] | select(.target == "alice" and .actor == "127.0.0.1")] | length')" 3
expect_eq "... with alice's tenant" "$(body_of "$r" | jq -r '[.[] | select(.target == "alice") | .tenant] | unique | join(",")')" acme
r=$(api "$ADMIN" GET '/v1/audit/log?action=session.locked')
expect_eq "each limit reached is one session.locked entry" "$(body_of "$r" | jq length)" 2
r=$(api "$ADMIN" GET '/v1/audit/log?action=session.create')
expect_eq "successful sign-ins are session.create entries" "$(body_of "$r" | jq -r '[.[] | .actor] | join(",")')" "alice,bob,alice,tadmin"
r=$(api "$ADMIN" GET '/v1/audit/export')
expect_eq "no password is in the audit log" "$(body_of "$r" | grep -c -e wrong-password -e alice-password -e whatever-pass)" 0
r=$(api "$ADMIN" GET '/v1/audit/log?tenant=acme&action=session.fail')
expect_eq "acme's own log shows the failures on its users" "$(body_of "$r" | jq length)" 3

# ---- passwords and removal end sessions ----
printf 'alice-password-NEW\n' >"$TMP/pw_new"
out=$("$SUANLI" user passwd --name alice --password-file "$TMP/pw_new" 2>&1)
expect_match "user passwd" "$out" "Set a new password for alice"
r=$(capi "$TMP/jar_a" - GET /v1/session)
expect_eq "a new password ends alice's sessions" "$(status_of "$r")" 401
r=$(capi "$TMP/jar_t" - GET /v1/session)
expect_eq "tadmin's session is untouched" "$(status_of "$r")" 200
out=$("$SUANLI" user remove tadmin 2>&1)
expect_match "user remove" "$out" "Removed user tadmin"
r=$(capi "$TMP/jar_t" - GET /v1/session)
expect_eq "a removed user's session ends" "$(status_of "$r")" 401

# ---- the console's files ----
hdrs() { curl -s -o "$TMP/file" -D - --path-as-is "$@" | tr -d '\r'; }
h=$(hdrs "$URL/")
expect_match "GET / is the console's index.html" "$h" "^HTTP/1.1 200"
expect_eq "... its text" "$(cat "$TMP/file")" "$(cat "$WEB/index.html")"
expect_match "... as HTML" "$h" "Content-Type: text/html; charset=utf-8"
expect_match "... nosniff" "$h" "X-Content-Type-Options: nosniff"
expect_match "... a strict CSP" "$h" "Content-Security-Policy: default-src 'self'; script-src 'self';"
expect_eq "... no inline script or eval allowed" "$(printf '%s' "$h" | grep -c -e unsafe-inline -e unsafe-eval)" 0
expect_match "... Cache-Control" "$h" "Cache-Control: no-cache"
for f in app.js:text/javascript mod.mjs:text/javascript style.css:text/css logo.svg:image/svg.xml \
	icon.png:image/png strings.json:application/json font.woff2:font/woff2 sub/page.html:text/html; do
	h=$(hdrs "$URL/console/${f%%:*}")
	expect_match "/console/${f%%:*} is ${f#*:}" "$h" "Content-Type: ${f#*:}"
done
etag=$(hdrs "$URL/console/app.js" | sed -n 's/^ETag: //p')
code=$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $etag" "$URL/console/app.js")
expect_eq "an unchanged file is a 304" "$code" 304
for p in "/console/../CMakeLists.txt" "/console/%2e%2e/CMakeLists.txt" "/console/%2E%2E%2Fsuanli.db" \
	"/console/sub/../../data/suanli.db" "/console/.%2e/data/admin.token" "/console/leak.txt" \
	"/console/outdir/secret.txt" "/console/sub/" "/console/./app.js" "/console//app.js" \
	"/console/%00.js" "/console/sub%5c..%5c..%5cdata" "/console/nothere.js"; do
	code=$(curl -s -o "$TMP/file" -w '%{http_code}' --path-as-is "$URL$p")
	expect_eq "$p is refused (404)" "$code" 404
	grep -q -e SECRET-OUTSIDE -e sl_ "$TMP/file" && bad "$p leaked a file"
done
h=$(hdrs "$URL/console/sub")
expect_eq "a directory is never listed (a deep link gets index.html)" "$(cat "$TMP/file")" "$(cat "$WEB/index.html")"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$URL/")
expect_eq "only GET and HEAD on the console (405)" "$code" 405
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/v1/nothere")
expect_eq "the API's own 404 is untouched" "$code" 404

# ---- expiry (--session-idle 3) ----
stop_daemon
serve --session-idle 3 || bad "daemon restarts with --session-idle 3" "$(cat "$TMP/log")"
r=$(signin carol carol-password "$TMP/jar_c")
expect_eq "carol signs in" "$(status_of "$r")" 201
sleep 4
r=$(capi "$TMP/jar_c" - GET /v1/session)
expect_eq "a session unused past --session-idle is over (401)" "$(status_of "$r")" 401
expect_eq "... saying so" "$(body_of "$r" | jq -r .error.message)" "the session has ended or expired"
signin carol carol-password "$TMP/jar_c2" >/dev/null
for _ in 1 2 3 4 5; do sleep 1; capi "$TMP/jar_c2" - GET /v1/leases >/dev/null; done
r=$(capi "$TMP/jar_c2" - GET /v1/session)
expect_eq "a session in use outlives --session-idle" "$(status_of "$r")" 200
for _ in 1 2 3 4; do
	sleep 1
	capi "$TMP/jar_c2" - GET '/v1/events?since=0' >/dev/null
	curl -s -o /dev/null -b "$TMP/jar_c2" -H 'X-Suanli-Background: 1' "$URL/v1/leases"
done
r=$(capi "$TMP/jar_c2" - GET /v1/session)
expect_eq "event polls and background refreshes do not keep it alive" "$(status_of "$r")" 401
BURST=()
# Ten wrong passwords at once (checked off the loop, in parallel with the
# loop): the limit (5, the default) counts the ones in flight too.
for i in $(seq 10); do
	curl -s -o /dev/null -w '%{http_code}\n' -H 'Content-Type: application/json' \
		--data-binary '{"user":"carol","password":"wrong-password"}' "$URL/v1/sessions" >"$TMP/burst.$i" &
	BURST+=($!)
done
wait "${BURST[@]}"
expect_eq "a burst of 10 wrong passwords: 5 are checked (401), 5 refused (429)" \
	"$(cat "$TMP"/burst.* | sort | uniq -c | awk '{print $2 "x" $1}' | paste -sd, -)" "401x5,429x5"

stop_daemon
expect_eq "daemon stops cleanly" "$?" 0
# Without --console the source tree's console/ is served (make run).
if [ -f "$SL_ROOT/console/index.html" ]; then
	start_daemon "$TMP/log2" --data "$DATA" --simulate
	code=$(curl -s -o "$TMP/file" -w '%{http_code}' "$URL/")
	expect_eq "without --console, / is the repository's console/index.html" \
		"$code $(cmp -s "$TMP/file" "$SL_ROOT/console/index.html" && echo same)" "200 same"
	stop_daemon
else
	skip_part "the repository has no console/index.html"
fi
# Over HTTPS the cookie is Secure too.
if start_daemon "$TMP/log3" --data "$DATA" --simulate --tls; then
	code=$(curl -s -D "$TMP/hdr" -o /dev/null -w '%{http_code}' --cacert "$DATA/tls/ca.pem" \
		-H 'Content-Type: application/json' --data-binary '{"user":"bob","password":"bob-password-22"}' \
		"https://127.0.0.1:$PORT/v1/sessions")
	expect_eq "bob signs in over HTTPS" "$code" 201
	expect_match "... and the cookie is Secure" "$(grep -i '^set-cookie:' "$TMP/hdr" | tr -d '\r')" \
		"HttpOnly; SameSite=Strict; Secure$"
	stop_daemon
else
	bad "daemon starts with --tls" "$(cat "$TMP/log3")"
fi
finish
