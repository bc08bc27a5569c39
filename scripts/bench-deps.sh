#!/usr/bin/env bash
# Installs the Debian packages the benchmarks need beyond the build's own
# (scripts/deps.sh): a real Slurm 22.05 with munge for the side-by-side run
# (bench/slurm.sh drives ../shared/peers/slurm/run.sh), wrk for bench_api,
# python3 for the harness's log replay, iproute2 (ss) and util-linux (unshare).
# Asks dpkg first, so a machine that has them never touches the network.
set -euo pipefail
pkgs=(slurm-wlm slurmctld slurmd slurm-client munge wrk python3 iproute2 util-linux procps)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "bench-deps: installing ${missing[*]}" >&2
sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq || true
# policy-rc.d: the packages' postinst must not start system-wide slurmctld,
# slurmd or munge services; the harness starts its own private daemons.
rcd=/usr/sbin/policy-rc.d; made_rcd=0
if [ ! -e $rcd ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee $rcd >/dev/null && $sudo chmod 755 $rcd && made_rcd=1
fi
rc=0
$sudo apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends "${missing[@]}" || rc=$?
[ $made_rcd = 1 ] && $sudo rm -f $rcd
exit $rc
