#!/usr/bin/env bash
# Issue 48 on one NVIDIA GPU: healthy gated runs and a gated run whose 50th
# stream synchronize of every rank process never returns, each timed, so
# the wedged driver's time to verdict reads as a ratio of the healthy gated
# time of the same command on the same machine (target: at most 1.5x; the
# healthy runs must all PASS).
#
# Each run is packed into $OUT/<name>.tgz as soon as it ends (run.log,
# results.json, exit_status, wall time, the kernel log read then), so a
# command cut short by its time limit still returns the runs it finished;
# $OUT/summary.txt has one line per run and the ratios.
#
# Usage: OUT=... scripts/device-hangs.sh [BIN]
#   RUNS   run names, in order (default: healthy-1 healthy-2 hang-gated)
#   COUNT  when RUNS is unset, how many healthy runs (default 2)
#   BASE   the gate's baseline (default expectations/nvidia-sm_90-580-x1 on
#          an H200, else .dev/hang-base). A BASE without durations.txt is
#          recorded first on this GPU (run "record": --update-expectations
#          --perf-runs=3 into that folder, about 95 s; packed as record.tgz,
#          the folder under record/base for committing). .dev/ is kept on a
#          warm device machine between commands: later commands reuse it.
#   LIMIT  seconds per run (default 150; the record gets 300)
# A healthy gated run takes about 60 s on one H100 or H200; split a batch
# across device commands of 600 s (RUNS="healthy-1 … healthy-5", then
# RUNS="hang-gated healthy-6 …"): each command writes its own summary.txt,
# so keep the tgz files of every command.
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 # never NVLink multicast on shared machines
bin=${1:-.dev/specs.test}
out=${OUT:?set OUT}
lim=${LIMIT:-150}
w=$(mktemp -d)/hangs
mkdir -p "$w"
timeout 10 dmesg >"$w/kmsg-before.txt" 2>&1 || true
timeout 10 nvidia-smi -L >"$w/smi.txt" 2>&1 || true
if [ -z "${BASE:-}" ]; then
  case $(head -n 1 "$w/smi.txt") in
    *H200*) BASE=expectations/nvidia-sm_90-580-x1 ;;
    *) BASE=.dev/hang-base ;; # the committed one is scoped to H200s
  esac
fi
base=$BASE
if [ -z "${RUNS:-}" ]; then
  RUNS=""
  for i in $(seq "${COUNT:-2}"); do RUNS="$RUNS healthy-$i"; done
  RUNS="$RUNS hang-gated"
fi
[ -f "$base/durations.txt" ] || RUNS="record $RUNS"
sum=$w/summary.txt
echo "device-hangs: $(date -u +%FT%TZ) $(head -n 1 "$w/smi.txt"); load $(cut -d' ' -f1-3 /proc/loadavg); base $base" | tee -a "$sum"
healthy=()
run() { # name, then the run's flags
  local name=$1; shift
  local t0 t1 rc s l=$lim
  [ "$name" = record ] && l=300
  t0=$(date +%s.%N)
  timeout -k 10 "$l" "$bin" --out="$w/$name" "$@" >"$w/$name.log" 2>&1 </dev/null; rc=$?
  t1=$(date +%s.%N)
  s=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
  mkdir -p "$w/$name"
  mv "$w/$name.log" "$w/$name/run.log"
  echo "$rc" >"$w/$name/exit_status"
  echo "$s" >"$w/$name/wall_seconds"
  rm -rf "$w/$name/heatmaps" "$w/$name/report.html"
  case $name in
    healthy*) [ "$rc" = 0 ] && rm -rf "$w/$name/cases"; healthy+=("$s") ;;
    record) rm -rf "$w/$name/cases"; cp -r "$base" "$w/$name/base" ;;
  esac
  printf '%-12s exit %3s  %6.1f s  %s\n' "$name" "$rc" "$s" "$(grep -E '^p2patomics: ' "$w/$name/run.log" | tail -n 1 | cut -c1-200)" | tee -a "$sum"
  timeout 10 dmesg >"$w/$name/kmsg-after.txt" 2>&1 || true
  cp "$w/kmsg-before.txt" "$w/smi.txt" "$w/$name/" 2>/dev/null
  timeout 60 tar -C "$w" -czf "$out/$name.tgz" "$name"
  cp "$sum" "$out/summary.txt"
}
for name in $RUNS; do
  case $name in
    record) mkdir -p "$(dirname "$base")"; [ -n "${BASE_FROM:-}" ] && { rm -rf "$base"; cp -r "$BASE_FROM" "$base"; }; run record --backend=auto --expectations="$base" --update-expectations --perf-runs=3 ;;
    healthy*) run "$name" --backend=auto --expectations="$base" ;;
    hang-gated*) run "$name" --backend=auto --expectations="$base" --internal-inject=hang-at:cuStreamSynchronize=50 ;;
    *) echo "unknown run $name (record, healthy-N or hang-gated)" | tee -a "$sum" ;;
  esac
done
if [ ${#healthy[@]} -gt 0 ]; then
  med=$(printf '%s\n' "${healthy[@]}" | sort -n | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
  echo "healthy gated median: $med s over ${#healthy[@]} runs in this command" | tee -a "$sum"
  for f in "$w"/hang-gated*/wall_seconds; do
    [ -f "$f" ] || continue
    awk -v a="$(cat "$f")" -v m="$med" -v n="$(basename "$(dirname "$f")")" 'BEGIN{printf "%s: %.1f s = %.2fx the healthy gated median\n", n, a, a/m}' | tee -a "$sum"
  done
fi
cp "$sum" "$out/summary.txt"
