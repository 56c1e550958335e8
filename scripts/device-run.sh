#!/usr/bin/env bash
# Run a prebuilt specs.test on the GPU machine (no Go there) and leave
# results.json, junit.xml and run.log under $OUT (or ./out-device).
# Usage: scripts/device-run.sh [suite flags...]   e.g. --backend=cuda
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0   # never NVLink multicast on shared machines
out=${OUT:-$PWD/out-device}
mkdir -p "$out"
bin=${P2PAT_BIN:-.dev/specs.test}
{
  echo "# $(date -u +%FT%TZ) $(uname -r)"
  nvidia-smi -L 2>/dev/null || true
  nvidia-smi topo -m 2>/dev/null || true
  echo "# $bin --out=$out $*"
  "$bin" --out="$out" "$@"
  echo "# exit status $?"
} 2>&1 | tee "$out/run.log"
