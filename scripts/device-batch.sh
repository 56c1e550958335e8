#!/usr/bin/env bash
# One device command: the CUDA binding tests on the GPUs (prebuilt
# .dev/cuda.test), then the full default suite through device-full.sh
# with the given flags. Everything lands in $OUT (at most 8 files come back).
# Usage: OUT=... bash scripts/device-batch.sh [suite flags...]
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
out=${OUT:?set OUT}
if [ -x .dev/cuda.test ]; then
  (cd rank/cuda && timeout 120 ../../.dev/cuda.test -test.v -test.run 'Device' -test.count=1) >"$out/cuda-device-test.log" 2>&1
  echo "# cuda.test exit $?" >>"$out/cuda-device-test.log"
fi
bash scripts/device-full.sh "$@"
