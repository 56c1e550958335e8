#!/usr/bin/env bash
# The driver-fault injector on a GPU machine (docs/FAULTS.md, "The
# driver-fault injector"; no Go there: give it a prebuilt specs.test).
# One command runs, each bounded by `timeout`, each into its own --out:
#   healthy      --backend=cuda
#   fail-export  --internal-inject=fail:cuMemExportToShareableHandle=801
#                (CUDA_ERROR_NOT_SUPPORTED: the VMM kinds' export)
#   noop-grant   --internal-inject=noop:cuMemSetAccess (a grant that does nothing)
# and the speed rules (issue 36; the perf gate and the physics floor must
# fail them, docs/GATING.md):
#   ct2-gated    --internal-inject=copy-times:2 (every device copy twice), gated
#   ct2-ungated  the same without BASELINE: the physics floor fails the copies
#   ct12-gated   --internal-inject=copy-times:1.2, gated
#   stretch2-gated --internal-inject=stretch:spread_u64_relaxed_{sys,dev}=2
#                (the spread atomic kernels take twice as long), gated
# (the "gated" runs are ungated when BASELINE is unset, and say so)
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
run() { # name, then the run's own flags (UNGATED=1: without BASELINE)
  local name=$1; shift
  local gate=("${gate[@]}")
  [ -n "${UNGATED:-}" ] && gate=()
  local dir="$out/$name" log="$out/$name.log"
  rm -rf "$dir" "$dir.prev"
  local t0 t1 rc
  t0=$(date +%s.%N)
  timeout --signal=TERM --kill-after=30 "$each" "$bin" --backend=cuda --out="$dir" "${gate[@]}" "$@" >"$log" 2>&1; rc=$?
  t1=$(date +%s.%N)
  [ -d "$dir" ] && cp "$log" "$dir/run.log"
  local worlds
  worlds=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["environment"].get("worlds_started","?"))' "$dir/results.json" 2>/dev/null || echo "?")
  printf '%-14s wall %7.1f s  exit %3s  worlds %4s  %s\n' "$name" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" "$rc" "$worlds" \
    "$(tail -n 1 "$log")" | tee -a "$sum"
}
run healthy "$@"
run fail-export --internal-inject=fail:cuMemExportToShareableHandle=801 "$@"
run noop-grant --internal-inject=noop:cuMemSetAccess "$@"
[ -z "${BASELINE:-}" ] && echo "# no BASELINE: the *-gated speed runs below run ungated" | tee -a "$sum"
run ct2-gated --internal-inject=copy-times:2 "$@"
UNGATED=1 run ct2-ungated --internal-inject=copy-times:2 "$@"
run ct12-gated --internal-inject=copy-times:1.2 "$@"
run stretch2-gated --internal-inject=stretch:spread_u64_relaxed_sys=2,stretch:spread_u64_relaxed_dev=2 "$@"
files=(summary.txt)
for n in healthy fail-export noop-grant ct2-gated ct2-ungated ct12-gated stretch2-gated; do
  for f in results.json run.log; do [ -f "$out/$n/$f" ] && files+=("$n/$f"); done
done
tar -C "$out" -czf "$out/device-faults.tar.gz" "${files[@]}"
echo "archive: $out/device-faults.tar.gz (${#files[@]} files)"
cat "$sum"
