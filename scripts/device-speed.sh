#!/usr/bin/env bash
# Issue 52 on one NVIDIA GPU (H100 or H200): the default suite gated, timed,
# with its power stated on the verdict line; then the perf cases alone with
# every copy issued 1.2 times (copy-times:1.2) and with the contended atomic
# and round-trip kernels stretched twice, each gated: both must still FAIL.
# Each run's wall time is taken around the process; where its time went is
# read from its own records (scripts/bench-suite.sh --breakdown: case
# bodies by family, world starts, the rest).
#
# The baseline is expectations/nvidia-sm_90-580-x1 on an H200 (the card is
# read from nvidia-smi). Its perf.txt is scoped to H200s, so on any other
# card (an H100) a baseline is recorded first, for that card
# (.dev/speed-base-<card>: --update-expectations --perf-runs=3; run
# "record", packed with the folder under record/base for committing), and
# every gated run gates against that copy. .dev/ is kept on a warm device
# machine between commands: a later command reuses the recorded copy.
#
# Each run is packed into $OUT/<name>.tgz as soon as it ends (run.log,
# results.json, exit_status, wall_seconds, breakdown.txt, the kernel log
# read then), so a command cut short by its limit still returns the runs
# it finished; $OUT/summary.txt has one line per run. The whole is sized
# for one 540 s device command (limits 220+80+50+50+80 s; about 200 s
# expected on an H100 with the record).
#
# Usage: make device-build && OUT=... scripts/device-speed.sh [BIN]
#   RUNS  run names, in order (default: gated ct12-gated stretch2-gated
#         gated-again; "record" is put first when the baseline needs it)
#   BASE  the gate's baseline folder (default: as above)
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 # never NVLink multicast on shared machines
bin=${1:-.dev/specs.test}
out=${OUT:?set OUT}
w=$(mktemp -d)/speed
mkdir -p "$w"
timeout 10 dmesg >"$w/kmsg-before.txt" 2>&1 || true
timeout 10 nvidia-smi -L >"$w/smi.txt" 2>&1 || true
card=$(timeout 10 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
committed=expectations/nvidia-sm_90-580-x1
if [ -z "${BASE:-}" ]; then
  case $card in
    *H200*) BASE=$committed ;;
    *) BASE=.dev/speed-base-$(printf '%s' "${card:-unknown}" | tr -c 'A-Za-z0-9\n' '-' | tr 'A-Z' 'a-z') ;;
  esac
fi
base=$BASE
runs=${RUNS:-gated ct12-gated stretch2-gated gated-again}
# A folder may hold a perf file per card (perf.txt, perf-<card>.txt): record
# when none of them names this card.
if ! grep -qs "$(printf '%s' "${card#NVIDIA }" | cut -d' ' -f1)" "$base"/perf*.txt; then
  case " $runs " in *" record "*) ;; *) runs="record $runs" ;; esac
fi
sum=$w/summary.txt
echo "device-speed: $(date -u +%FT%TZ) ${card:-no nvidia-smi}; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); base $base; runs $runs" | tee -a "$sum"
run() { # name, limit in s, then the run's flags
  local name=$1 lim=$2; shift 2
  local t0 t1 rc s
  t0=$(date +%s.%N)
  timeout -k 10 "$lim" "$bin" --out="$w/$name" "$@" >"$w/$name.log" 2>&1 </dev/null; rc=$?
  t1=$(date +%s.%N)
  s=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
  mkdir -p "$w/$name"
  mv "$w/$name.log" "$w/$name/run.log"
  echo "$rc" >"$w/$name/exit_status"
  echo "$s" >"$w/$name/wall_seconds"
  if [ -f "$w/$name/results.json" ] && command -v python3 >/dev/null; then
    bash scripts/bench-suite.sh --breakdown "$w/$name" "$s" >"$w/$name/breakdown.txt" 2>&1
  fi
  rm -rf "$w/$name/heatmaps" "$w/$name/report.html"
  case $name in
    gated*) [ "$rc" = 0 ] && rm -rf "$w/$name/cases" ;;
    record) rm -rf "$w/$name/cases"; cp -r "$base" "$w/$name/base" ;;
    *) rm -rf "$w/$name/cases" ;;
  esac
  printf '%-16s exit %3s  %6.1f s  %s\n' "$name" "$rc" "$s" "$(grep -E '^p2patomics: ' "$w/$name/run.log" | tail -n 1 | cut -c1-400)" | tee -a "$sum"
  timeout 10 dmesg >"$w/$name/kmsg-after.txt" 2>&1 || true
  cp "$w/kmsg-before.txt" "$w/smi.txt" "$w/$name/" 2>/dev/null
  timeout 60 tar -C "$w" -czf "$out/$name.tgz" "$name"
  cp "$sum" "$out/summary.txt"
}
perf=(--backend=cuda --ginkgo.label-filter=perf)
for name in $runs; do
  case $name in
    record)
      # A fresh folder, as device-hangs.sh records (a copy of the H200
      # folder would gate the record against another card's cases).
      # BASE_FROM (the committed folder): the record is written beside its
      # other cards' perf files (perf-<card>.txt), never over them.
      rm -rf "$base"; mkdir -p "$(dirname "$base")"
      [ -n "${BASE_FROM:-}" ] && cp -r "$BASE_FROM" "$base"
      run record 220 --backend=auto --expectations="$base" --update-expectations --perf-runs=3 ;;
    gated*) run "$name" 80 --backend=auto --expectations="$base" ;;
    ct12-gated) run "$name" 50 "${perf[@]}" --internal-inject=copy-times:1.2 --expectations="$base" ;;
    stretch2-gated) run "$name" 50 "${perf[@]}" --internal-inject=stretch:add_u64_relaxed_sys=2,stretch:add_u64_relaxed_dev=2,stretch:pingpong_u64_acqrel_sys=2,stretch:pingpong_u64_acqrel_dev=2 --expectations="$base" ;;
    *) echo "device-speed: unknown run $name" | tee -a "$sum" ;;
  esac
done
# What must hold: gated PASS (exit 0) with power on its line, the two
# injected perf runs FAIL (exit 1).
{
  for n in gated gated-again; do
    [ -f "$w/$n/exit_status" ] || continue
    if [ "$(cat "$w/$n/exit_status")" = 0 ] && grep -q '; power: ' "$w/$n/run.log"; then echo "ok:   $n PASS with power, $(cat "$w/$n/wall_seconds") s"; else echo "BAD:  $n exit $(cat "$w/$n/exit_status") (want 0 and '; power:' on the line)"; fi
  done
  for n in ct12-gated stretch2-gated; do
    [ -f "$w/$n/exit_status" ] || continue
    if [ "$(cat "$w/$n/exit_status")" = 1 ]; then echo "ok:   $n FAIL"; else echo "BAD:  $n exit $(cat "$w/$n/exit_status") (want 1, FAIL)"; fi
  done
} | tee -a "$sum"
cp "$sum" "$out/summary.txt"
cat "$sum"
