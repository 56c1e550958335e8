#!/usr/bin/env bash
# The latency comparison on the GPU machine: the suite's latency cases (a
# fresh world each time) and the reference program, alternated N times in
# one command, so both see the same machine and moment. Appends to
# $OUT/extra.log. Usage: OUT=... bash scripts/device-latency.sh [N]
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
out=${OUT:?set OUT}
n=${1:-2}
bin=${P2PAT_BIN:-.dev/specs.test}
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
ref=$(mktemp -d)/p2pref
"$nvcc" -O3 -std=c++17 -arch=sm_90 -o "$ref" scripts/ref/p2pref.cu -lcuda >>"$out/extra.log" 2>&1 || ref=""
for i in $(seq "$n"); do
  {
    echo "# latency round $i: suite"
    timeout 120 "$bin" --backend=cuda --ginkgo.label-filter=latency --out="$(mktemp -d)" 2>&1 | grep -E 'rtt_|exit|suite wall'
    if [ -n "$ref" ]; then
      echo "# latency round $i: reference"
      timeout 120 "$ref" 2>&1 | grep -E 'rtt|placement'
    fi
  } >>"$out/extra.log"
done
