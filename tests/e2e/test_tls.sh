#!/usr/bin/env bash
# test_tls.sh - the controller over HTTPS (issue 16, docs/security.md):
# `suanlid init` makes a CA and a server certificate with GnuTLS (keys 0600);
# plain HTTP is refused on any address but loopback; over --tls the CLI
# verifies the server against the CA it is given and refuses it without;
# TLS 1.1 and plain requests to the HTTPS port get nothing; join tokens name
# the CA; `suanlid tls renew` (and SIGHUP) rotate the certificate while the
# same daemon keeps serving, an open connection included; an operator's own
# certificate and key (`init --tls-cert/--tls-key`) are served as given.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
DATA="$TMP/data"
command -v openssl >/dev/null || skip "no openssl CLI (to read the served certificate)"

out=$("$SUANLID" init --data "$DATA" --tls-san ctl.example --tls-san 10.9.8.7)
expect_eq "init: exits 0" "$?" 0
expect_match "init names the CA and its fingerprint" "$out" "verify against $DATA/tls/ca.pem \(sha256 [0-9a-f]{64}\)"
expect_eq "private keys are 0600" "$(stat -c %a "$DATA/tls/ca.key") $(stat -c %a "$DATA/tls/server.key")" "600 600"
san=$(openssl x509 -in "$DATA/tls/server.pem" -noout -ext subjectAltName 2>/dev/null | tr -d ' \n')
expect_match "the certificate names localhost, loopback and the --tls-san names" "$san" \
	"DNS:localhost.*IPAddress:127.0.0.1.*DNS:ctl.example.*IPAddress:10.9.8.7"
expect_match "signed by the CA" "$(openssl verify -CAfile "$DATA/tls/ca.pem" "$DATA/tls/server.pem" 2>&1)" ": OK"

# ---- plain HTTP only on loopback ----
"$SUANLID" serve --data "$DATA" --listen 0.0.0.0:0 --no-tls >"$TMP/refused.log" 2>&1
expect_eq "--no-tls on 0.0.0.0 is refused" "$?" 1
expect_match "saying why" "$(cat "$TMP/refused.log")" "plain HTTP is refused on 0.0.0.0:0"
mkdir "$TMP/bare" && cp -a "$DATA" "$TMP/bare/data" && rm -r "$TMP/bare/data/tls"
"$SUANLID" serve --data "$TMP/bare/data" --listen :0 >"$TMP/refused2.log" 2>&1
expect_eq "off loopback without a certificate: refused" "$?" 1
expect_match "with the way out" "$(cat "$TMP/refused2.log")" "suanlid tls init"

# ---- HTTPS ----
start_daemon "$TMP/log" --data "$DATA" --tls || { bad "serve --tls" "$(cat "$TMP/log")"; finish; exit 1; }
PID=$DAEMON_PID
URL="https://127.0.0.1:$PORT"
A=$(cat "$DATA/admin.token")
out=$("$SUANLI" tenant list --server "$URL" --token "$A" --ca "$DATA/tls/ca.pem" 2>&1)
expect_eq "the CLI with --ca: works" "$?" 0
out=$(SUANLI_CA="$DATA/tls/ca.pem" "$SUANLI" tenant list --server "$URL" --token "$A" 2>&1)
expect_eq "... and with SUANLI_CA" "$?" 0
out=$("$SUANLI" tenant list --server "$URL" --token "$A" 2>&1)
expect_eq "without the CA the server is not trusted" "$?" 1
expect_match "and it says so" "$out" "(certificate|SSL)"
mkdir -p "$TMP/other" && "$SUANLID" init --data "$TMP/other/data" >/dev/null
out=$("$SUANLI" tenant list --server "$URL" --token "$A" --ca "$TMP/other/data/tls/ca.pem" 2>&1)
expect_eq "another CA: not trusted" "$?" 1
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$DATA/tls/ca.pem" --tls-max 1.1 "$URL/healthz")
expect_eq "TLS 1.1 is refused" "$code" 000
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/healthz")
expect_eq "plain HTTP to the HTTPS port gets no answer" "$code" 000
v=$(curl -s -o /dev/null -w '%{http_code} %{ssl_verify_result}' --cacert "$DATA/tls/ca.pem" "$URL/healthz" -v 2>&1 | grep -o 'TLSv1\.[23]' | head -1)
expect_match "TLS 1.2 or 1.3 is spoken" "$v" "TLSv1.[23]"
tok=$(curl -s --cacert "$DATA/tls/ca.pem" -H "Authorization: Bearer $A" -d '{}' "$URL/v1/agent-tokens")
ca_sha=$(openssl x509 -in "$DATA/tls/ca.pem" -outform DER | sha256sum | cut -d' ' -f1)
expect_eq "a join token names the CA (sha256 of its DER)" "$(echo "$tok" | jq -r .ca_sha256)" "$ca_sha"
expect_eq "and carries its certificate" "$(echo "$tok" | jq -r .ca_pem | openssl x509 -outform DER | sha256sum | cut -d' ' -f1)" "$ca_sha"

# ---- rotation without downtime ----
served() { openssl s_client -connect "127.0.0.1:$PORT" -CAfile "$DATA/tls/ca.pem" </dev/null 2>/dev/null |
	openssl x509 -noout -fingerprint -sha256 2>/dev/null | cut -d= -f2; }
f1=$(served)
expect_match "the served certificate is server.pem" "$f1" "^[0-9A-F:]{95}$"
# a connection opened before the rotation is answered after it
{ sleep 1.5; printf 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'; sleep 1; } |
	openssl s_client -connect "127.0.0.1:$PORT" -CAfile "$DATA/tls/ca.pem" -quiet >"$TMP/open.out" 2>/dev/null &
OPEN=$!
sleep 0.5
"$SUANLID" tls renew --data "$DATA" >/dev/null
expect_eq "tls renew: exits 0" "$?" 0
f2=""
for _ in $(seq 1 50); do
	curl -s -o /dev/null --cacert "$DATA/tls/ca.pem" "$URL/healthz"
	f2=$(served)
	[ -n "$f2" ] && [ "$f2" != "$f1" ] && break
	sleep 0.1
done
expect_eq "a renewed certificate is served without a restart (file watch)" "$([ "$f2" != "$f1" ] && [ -n "$f2" ] && echo new)" new
expect_eq "by the same process" "$(kill -0 "$PID" && echo alive)" alive
wait "$OPEN"
expect_match "a connection opened before the rotation is still answered" "$(cat "$TMP/open.out")" '"status":"ok"'
expect_match "it logs the new one" "$(cat "$TMP/log")" "TLS certificate loaded"
# SIGHUP reloads too; a broken certificate is refused and the old one kept
cp "$DATA/tls/server.pem" "$TMP/good.pem"
echo garbage >"$DATA/tls/server.pem"
kill -HUP "$PID"
sleep 0.3
expect_eq "a broken certificate: still serving the good one" "$(served)" "$f2"
expect_match "saying so" "$(cat "$TMP/log")" "refused; still serving the old one"
cp "$TMP/good.pem" "$DATA/tls/server.pem"
out=$(curl -s --cacert "$DATA/tls/ca.pem" "$URL/healthz" "$URL/healthz" -w '%{num_connects}\n')
expect_match "the daemon still answers" "$out" "status"
stop_daemon

# ---- the operator's own certificate ----
mkdir -p "$TMP/own"
"$SUANLID" init --data "$TMP/own/data" --tls-cert "$TMP/other/data/tls/server.pem" \
	--tls-key "$TMP/other/data/tls/server.key" --tls-ca "$TMP/other/data/tls/ca.pem" >/dev/null
expect_eq "init --tls-cert/--tls-key: exits 0" "$?" 0
expect_eq "no CA key is kept for an operator's certificate" "$([ -e "$TMP/own/data/tls/ca.key" ] && echo yes || echo no)" no
start_daemon "$TMP/log2" --data "$TMP/own/data" --tls || { bad "serve with the operator's certificate" "$(cat "$TMP/log2")"; finish; exit 1; }
out=$("$SUANLI" tenant list --server "https://localhost:$PORT" --token "$(cat "$TMP/own/data/admin.token")" \
	--ca "$TMP/other/data/tls/ca.pem" 2>&1)
expect_eq "is served and verifies against the operator's CA" "$?" 0
stop_daemon
"$SUANLID" init --data "$TMP/mismatch" --tls-cert "$TMP/other/data/tls/server.pem" \
	--tls-key "$DATA/tls/server.key" >"$TMP/mm.log" 2>&1
expect_eq "a key that is not the certificate's is refused" "$?" 1
finish
