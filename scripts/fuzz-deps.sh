#!/usr/bin/env bash
# scripts/fuzz-deps.sh - what make fuzz needs beyond scripts/deps.sh: Debian's
# clang (libFuzzer ships in its compiler-rt).
set -eu
command -v clang >/dev/null && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
$sudo apt-get install -y clang
