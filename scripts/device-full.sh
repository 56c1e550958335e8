#!/usr/bin/env bash
# The committed device run: the full default suite on the GPU machine, the
# standalone CUDA reference program in the same session (when nvcc exists),
# GPU clocks and throttle reasons sampled throughout, and the case folders
# and heatmaps packed into one archive, report.html beside results.json.
# Everything lands in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
out=${OUT:?set OUT}
work=$(mktemp -d)
smi=""
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active \
    --format=csv -lms 500 >"$out/clocks.csv" 2>&1 &
  smi=$!
fi
OUT=$work bash scripts/device-run.sh "$@" >/dev/null 2>&1
[ -n "$smi" ] && kill "$smi" 2>/dev/null
for f in results.json junit.xml summary.txt results.csv failures.csv report.html run.log exit_status; do
  cp "$work/$f" "$out/" 2>/dev/null
done
tar -C "$work" -czf "$out/evidence.tgz" cases heatmaps 2>/dev/null
if [ -z "${P2PAT_NO_REF:-}" ] && { command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; }; then
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  { "$nvcc" -O3 -std=c++17 -arch=sm_90 -o "$work/p2pref" scripts/ref/p2pref.cu -lcuda && "$work/p2pref"; } >"$out/ref.log" 2>&1
fi
tail -n 3 "$out/run.log"; cat "$out/ref.log" 2>/dev/null
