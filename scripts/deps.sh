#!/usr/bin/env bash
# Installs the Debian packages suanli needs to build and test, asking dpkg first so
# that a machine that already has them never touches the network. The e2e tests
# need the sqlite3 CLI (test_audit), libfaketime (test_billing) and python3-yaml
# (test_cli_online); without them those tests report skipped, not passed.
set -euo pipefail
pkgs=(build-essential binutils python3 cmake pkg-config libyaml-dev libjansson-dev libcmocka-dev jq libsqlite3-dev libmicrohttpd-dev libcurl4-openssl-dev libsodium-dev libgnutls28-dev curl sqlite3 faketime libfaketime python3-yaml wrk python3-torch iproute2 linux-libc-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}" >&2
sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq || true
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
