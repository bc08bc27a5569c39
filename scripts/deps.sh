#!/usr/bin/env bash
# Installs the Debian packages suanli needs to build and test, asking dpkg first so
# that a machine that already has them never touches the network. The e2e tests
# need the sqlite3 CLI (test_audit), libfaketime (test_billing) and python3-yaml
# (test_cli_online), the PostgreSQL server binaries (the postgres store
# tests, which start their own servers) and promtool from prometheus (the alert
# rules and the /metrics format: test_prom_rules, test_metrics); without them those tests report
# skipped, not passed. podman (with runc for hybrid and v1 cgroup hosts, crun for
# cgroup v2, catatonit for --init) runs every tenant container; the image is built
# from installed packages (scripts/build-image.py), so no registry is ever asked.
# Instances (issue 14) run the image's sshd (openssh-server, copied into the image
# from the host), the agent makes their host keys with ssh-keygen and their data
# disks with mkfs.ext4 (e2fsprogs); the tests log in with the real ssh client.
# The console's browser tests (tests/browser) drive Debian's chromium with node
# (npm ci installs playwright-core there; it never downloads a browser);
# fonts-noto-cjk draws the Chinese screens.
set -euo pipefail
pkgs=(
  build-essential binutils python3 cmake pkg-config                  # build
  libyaml-dev libjansson-dev libcmocka-dev libsqlite3-dev libmicrohttpd-dev
  libcurl4-openssl-dev libsodium-dev libpq-dev libgnutls28-dev linux-libc-dev zlib1g-dev # libraries
  jq curl sqlite3 faketime libfaketime python3-yaml wrk python3-torch # tests
  iproute2 iptables                                                  # netns hosts; --lease-net (ip, iptables-restore)
  postgresql                                                         # HA store tests
  prometheus                                                         # promtool: rules, /metrics
  podman runc crun catatonit                                         # containers
  openssh-server openssh-client e2fsprogs                           # instances: sshd, ssh, data disks
  nodejs npm chromium fonts-noto-cjk                                 # console browser tests
)
missing=()
for p in "${pkgs[@]}"; do
  # a nodejs from elsewhere (NodeSource) bundles npm and conflicts with Debian's
  [ "$p" = npm ] && command -v npm >/dev/null 2>&1 && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}" >&2
sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq || true
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
