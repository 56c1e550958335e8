#!/usr/bin/env bash
# The device census (issue 35): the default suite, perf included, N times in
# a row on the GPU machine, each run a fresh suite process (fresh worlds),
# its results.json and run.log kept, and the machine's kernel log read
# before and after so every GPU fault line can be checked against the
# ranks' pids (cmd/p2pcensus --kmsg). Everything is packed into
# $OUT/census-<label>.tgz; p2pcensus judges it here.
# Usage: OUT=... scripts/device-census.sh N LABEL [BIN] [suite flags...]
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0   # never NVLink multicast on shared machines
n=${1:?runs}; label=${2:?label}; bin=${3:-.dev/specs.test}; shift 3 || shift $#
out=${OUT:?set OUT}
work=$(mktemp -d)
mkdir -p "$work/$label"
dmesg >"$work/$label/kmsg-before.txt" 2>&1 || true
for i in $(seq 1 "$n"); do
  d="$work/$label/run-$i"
  t0=$(date +%s.%N)
  timeout -k 10 300 "$bin" --backend=auto --out="$d" "$@" >"$work/$label/run-$i.log" 2>&1 </dev/null
  rc=$?
  t1=$(date +%s.%N)
  mkdir -p "$d"
  mv "$work/$label/run-$i.log" "$d/run.log"
  echo "$rc" >"$d/exit_status"
  rm -rf "$d/cases" "$d/heatmaps" "$d/report.html"
  printf '%s run %d: exit %d, %.1f s: %s\n' "$label" "$i" "$rc" "$(awk "BEGIN{print $t1 - $t0}")" "$(tail -n 1 "$d/run.log")" | tee -a "$work/$label/census.log"
done
dmesg >"$work/$label/kmsg-after.txt" 2>&1 || true
grep -E 'NVRM|Xid|amdgpu' "$work/$label/kmsg-after.txt" >"$work/$label/kmsg-gpu.txt" || true
tar -C "$work" -czf "$out/census-$label.tgz" "$label"
cat "$work/$label/census.log"; wc -l <"$work/$label/kmsg-gpu.txt"
