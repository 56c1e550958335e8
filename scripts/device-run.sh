#!/usr/bin/env bash
# Run a prebuilt specs.test on the GPU machine (no Go there) and leave
# its reports and run.log under $OUT (or ./out-device). run.log ends with the
# suite's verdict line; the exit status goes to $OUT/exit_status.
# Usage: scripts/device-run.sh [suite flags...]   e.g. --backend=cuda
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0   # never NVLink multicast on shared machines
out=${OUT:-$PWD/out-device}
mkdir -p "$out"
bin=${P2PAT_BIN:-.dev/specs.test}
# The log is kept beside --out until the suite ends: the suite owns --out
# (it refuses a folder holding files that are not a run, and moves a
# previous run aside to $out.prev).
log=$(mktemp)
{
  echo "# $(date -u +%FT%TZ) $(uname -r)"
  nvidia-smi -L 2>/dev/null || true
  nvidia-smi topo -m 2>/dev/null || true
  echo "# $bin --out=$out $*"
  "$bin" --out="$out" "$@"
  echo $? >"$log.rc"
} 2>&1 | tee "$log"
mv "$log" "$out/run.log"
rc=$(cat "$log.rc" 2>/dev/null || echo 1); rm -f "$log.rc"
echo "$rc" >"$out/exit_status"
exit "$rc"
