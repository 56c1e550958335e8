#!/usr/bin/env bash
# The closing device batch of issues 35 and 36, sized for what is left of a
# session's device time: the default suite gated against the committed
# baseline (correctness and perf.txt), then the perf cases alone under each
# planted slowdown: every device-to-device copy issued twice (gated and
# ungated: the physics floor must fail it with no baseline) and 1.2 times
# (gated), and the contended atomic and round-trip kernels stretched twice
# (gated). The kernel log is read before and after so p2pcensus can check
# every GPU fault line against the ranks' pids. Each run is packed into
# $OUT/<name>.tgz as soon as it ends (with the kernel log read then), so a
# command cut short by its time limit still returns the runs it finished;
# $OUT/summary.txt has one line per run.
# RUNS (a space-separated list of run names, default all) picks the runs, so
# a batch too long for one device command is split across two. The issue 37
# runs: every device-to-host read with bit 0 flipped (corrupt-read:0) and the
# 50th stream synchronize of each rank process never returning
# (hang-at:cuStreamSynchronize=50), each ungated and gated; gated-again is
# the healthy gated run once more, last.
# When the gated run is not PASS and a second binary is given (FALLBACK, an
# earlier head), that one runs gated too, so one lease tells a broken head
# from a broken machine.
# Usage: OUT=... scripts/device-final.sh [BIN [FALLBACK]]
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0   # never NVLink multicast on shared machines
bin=${1:-.dev/specs.test}
fallback=${2:-}
out=${OUT:?set OUT}
base=expectations/nvidia-sm_90-580-x1
w=$(mktemp -d)/final
mkdir -p "$w"
dmesg >"$w/kmsg-before.txt" 2>&1 || true
nvidia-smi -L >"$w/smi.txt" 2>&1 || true
runs=${RUNS:-gated ct2-ungated ct2-gated ct12-gated stretch2-gated cr-ungated cr-gated hang-ungated hang-gated}
run() { # name, limit in s, the run's flags
  local name=$1 lim=$2; shift 2
  case " $runs " in *" $name "*) ;; *) return 0;; esac
  local t0 t1 rc
  t0=$(date +%s.%N)
  timeout -k 10 "$lim" "${B:-$bin}" --out="$w/$name" "$@" >"$w/$name.log" 2>&1 </dev/null; rc=$?
  t1=$(date +%s.%N)
  mkdir -p "$w/$name"
  mv "$w/$name.log" "$w/$name/run.log"
  echo "$rc" >"$w/$name/exit_status"
  case $name in gated*) ;; *) rm -rf "$w/$name/cases" "$w/$name/heatmaps" "$w/$name/report.html";; esac
  printf '%-16s exit %3s  %6.1f s  %s\n' "$name" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" "$(tail -n 1 "$w/$name/run.log")" | tee -a "$w/summary.txt"
  dmesg >"$w/$name/kmsg-after.txt" 2>&1 || true
  cp "$w/kmsg-before.txt" "$w/smi.txt" "$w/$name/" 2>/dev/null
  tar -C "$w" -czf "$out/$name.tgz" "$name"
  cp "$w/summary.txt" "$out/summary.txt"
}
run gated 120 --backend=auto --expectations="$base"
if [ -n "$fallback" ] && [ -f "$w/gated/exit_status" ] && [ "$(cat "$w/gated/exit_status")" != 0 ]; then
  B=$fallback run gated-fallback 120 --backend=auto --expectations="$base"
fi
perf=(--backend=cuda --ginkgo.label-filter=perf)
run ct2-ungated 45 "${perf[@]}" --internal-inject=copy-times:2
run ct2-gated 75 "${perf[@]}" --internal-inject=copy-times:2 --expectations="$base"
run ct12-gated 75 "${perf[@]}" --internal-inject=copy-times:1.2 --expectations="$base"
run stretch2-gated 75 "${perf[@]}" --internal-inject=stretch:add_u64_relaxed_sys=2,stretch:add_u64_relaxed_dev=2,stretch:pingpong_u64_acqrel_sys=2,stretch:pingpong_u64_acqrel_dev=2 --expectations="$base"
run cr-ungated 120 --backend=auto --internal-inject=corrupt-read:0
run cr-gated 120 --backend=auto --internal-inject=corrupt-read:0 --expectations="$base"
run hang-gated 200 --backend=auto --internal-inject=hang-at:cuStreamSynchronize=50 --expectations="$base"
run hang-ungated 200 --backend=auto --internal-inject=hang-at:cuStreamSynchronize=50
# The healthy gated run once more, after the faulted ones: the watchdog
# must never end a healthy wait.
run gated-again 120 --backend=auto --expectations="$base"
cat "$w/summary.txt"
