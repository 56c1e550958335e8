#!/usr/bin/env bash
# The driver-fault injector on a GPU machine (docs/FAULTS.md, "The
# driver-fault injector"; no Go there: give it a prebuilt specs.test).
# One command runs, each bounded by `timeout`, each into its own --out:
#   healthy      --backend=cuda
#   fail-export  --internal-inject=fail:cuMemExportToShareableHandle=801
#                (CUDA_ERROR_NOT_SUPPORTED: the VMM kinds' export)
#   noop-grant   --internal-inject=noop:cuMemSetAccess (a grant that does nothing)
# and writes each run's wall time, exit status, worlds started and verdict
# line into $OUT/summary.txt, then tars every run's results.json + run.log
# (+ summary.txt) into $OUT/device-faults.tar.gz.
# Usage: scripts/device-faults.sh path/to/specs.test [suite flags...]
#   env: OUT (default ./out-faults), T_EACH (seconds per run, default 180),
#        BASELINE (an expectation folder to gate all three against; default
#        ungated: each case's own expected outcome).
set -uo pipefail
bin=${1:?usage: device-faults.sh path/to/specs.test [suite flags...]}; shift
export NCCL_NVLS_ENABLE=0   # never NVLink multicast on shared machines
out=${OUT:-$PWD/out-faults}
each=${T_EACH:-180}
mkdir -p "$out"
sum="$out/summary.txt"
{
  echo "# $(date -u +%FT%TZ) $(uname -r) $bin $*"
  nvidia-smi -L 2>/dev/null || true
} >"$sum"
gate=()
[ -n "${BASELINE:-}" ] && gate=(--expectations="$BASELINE")
run() { # name, then the run's own flags
  local name=$1; shift
  local dir="$out/$name" log="$out/$name.log"
  rm -rf "$dir" "$dir.prev"
  local t0 t1 rc
  t0=$(date +%s.%N)
  timeout --signal=TERM --kill-after=30 "$each" "$bin" --backend=cuda --out="$dir" "${gate[@]}" "$@" >"$log" 2>&1; rc=$?
  t1=$(date +%s.%N)
  [ -d "$dir" ] && cp "$log" "$dir/run.log"
  local worlds
  worlds=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["environment"].get("worlds_started","?"))' "$dir/results.json" 2>/dev/null || echo "?")
  printf '%-12s wall %7.1f s  exit %3s  worlds %4s  %s\n' "$name" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" "$rc" "$worlds" \
    "$(tail -n 1 "$log")" | tee -a "$sum"
}
run healthy "$@"
run fail-export --internal-inject=fail:cuMemExportToShareableHandle=801 "$@"
run noop-grant --internal-inject=noop:cuMemSetAccess "$@"
files=(summary.txt)
for n in healthy fail-export noop-grant; do
  for f in results.json run.log; do [ -f "$out/$n/$f" ] && files+=("$n/$f"); done
done
tar -C "$out" -czf "$out/device-faults.tar.gz" "${files[@]}"
echo "archive: $out/device-faults.tar.gz (${#files[@]} files)"
cat "$sum"
