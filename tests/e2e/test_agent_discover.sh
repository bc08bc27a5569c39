#!/usr/bin/env bash
# test_agent_discover.sh - `suanli-agent discover` end to end: every source
# (--simulate, a real published nvidia-smi output, NVML through the fake
# libnvidia-ml.so.1, a fake nvidia-smi program) and the error without any.
# Contacts nobody; starts no long-lived process.
. "$(dirname "$0")/lib.sh"
: "${SUANLI_AGENT:?SUANLI_AGENT must point at the suanli-agent binary}"
A=$SUANLI_AGENT
DATA=$SL_ROOT/tests/data/topo
# No real driver may leak into the test.
export SUANLI_NVML_LIB=$TMP/none/libnvidia-ml.so.1
export SUANLI_NVIDIA_SMI=$TMP/none/nvidia-smi
export SUANLI_SYSFS_ROOT=$TMP/none/sys

out=$("$A" discover --simulate hgx-h100-8 --json)
expect_eq "simulate: 28 nvswitch pairs" "$(printf '%s' "$out" | grep -c '"kind": "nvswitch"')" 28
expect_match "simulate: model" "$out" '"model": "h100-sxm"'

out=$("$A" discover --nvidia-smi-topo "$DATA/hgx-h100-nv18.txt" --model h100-sxm)
expect_match "real H100 output: NVSwitch server" "$out" 'matches built-in type hgx-h100-8'
expect_match "real H100 output: rails" "$out" 'mlx5_7 +0 +7'

out=$("$A" discover --nvidia-smi-topo "$DATA/pcie-8gpu-pix-phb-sys.txt" --json)
expect_match "PCIe output: unknown model" "$out" '"model": "unknown"'
expect_eq "PCIe output: 4 pcie-switch pairs" \
	"$(printf '%s' "$out" | grep -c '"kind": "pcie-switch"')" 4
expect_eq "PCIe output: 16 cross-socket pairs" \
	"$(printf '%s' "$out" | grep -c '"kind": "cross-socket"')" 16

if [ -n "${SL_FAKE_NVML:-}" ]; then
	out=$(SUANLI_NVML_LIB=$SL_FAKE_NVML FAKE_NVML_MODE=pairbridge "$A" discover)
	expect_match "NVML pairbridge: matches pcie-h100nvl-8" "$out" \
		'matches built-in type pcie-h100nvl-8'
	expect_match "NVML pairbridge: NV12 pairs" "$out" 'GPU0 +X +NV12 +PHB'
	out=$(SUANLI_NVML_LIB=$SL_FAKE_NVML FAKE_NVML_MODE=nvswitch "$A" discover --json)
	expect_match "NVML nvswitch: source" "$out" '"source": "nvml"'
	expect_match "NVML nvswitch: bus id" "$out" '"bus_id": "00000000:DB:00.0"'
else
	bad "SL_FAKE_NVML is not set (run through ctest)"
fi

# The nvidia-smi program, when NVML is missing.
mkdir -p "$TMP/bin"
cat >"$TMP/bin/nvidia-smi" <<EOF
#!/bin/sh
case "\$1" in
  topo) cat '$DATA/dgx-a100-nv12.txt' ;;
  --query-gpu=name) echo 'NVIDIA A100-SXM4-80GB' ;;
  *) exit 3 ;;
esac
EOF
chmod +x "$TMP/bin/nvidia-smi"
out=$(SUANLI_NVIDIA_SMI=$TMP/bin/nvidia-smi "$A" discover)
expect_match "nvidia-smi program: model from the GPU name" "$out" 'model: a100-sxm'
expect_match "nvidia-smi program: matches hgx-a100-8" "$out" 'matches built-in type hgx-a100-8'

# Nothing at all: a clear error and status 1.
err=$("$A" discover 2>&1 >/dev/null)
expect_eq "no driver: status" "$?" 1
expect_match "no driver: message" "$err" \
	'no NVIDIA driver found; use --simulate TYPE or --nvidia-smi-topo FILE'
err=$("$A" discover --nvidia-smi-topo "$DATA/SOURCES.md" 2>&1 >/dev/null)
expect_match "not a matrix: file and line" "$err" 'SOURCES.md:1:1: no matrix header'
"$A" discover --frobnicate >/dev/null 2>&1
expect_eq "unknown option: status 2" "$?" 2
out=$("$A" discover --help)
expect_match "help" "$out" 'usage: suanli-agent discover'
finish
