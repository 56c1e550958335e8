#!/usr/bin/env bash
# The lead's device command of a session: the issue scripts one after the
# other on one NVIDIA GPU, each bounded so the command ends inside the
# device tool's 600 s, their per-run tarballs gathered into one tarball a
# script ($OUT/<script>.tgz, the tool returns at most 8 files) and one
# summary.txt. The baseline: the committed H200 one on an H200; on another
# card one recorded here first (device-speed.sh's "record"), shared by the
# scripts after it through BASE (kept outside the tree, in
# /var/tmp/p2p, so a later command on the warm machine that carries .dev
# again still finds it).
# Usage: OUT=... STEPS="speed:330 hangs:220" scripts/device-lead.sh
#   each step is <script>:<seconds>, the script scripts/device-<script>.sh;
#   SPEED_RUNS, HANGS_RUNS pass RUNS to those scripts; FORCE_RECORD=1
#   records a baseline on this card whatever it is (under LEAD_BASE_DIR).
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
out=${OUT:?set OUT}
w=$(mktemp -d)/lead
mkdir -p "$w"
card=$(timeout 10 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
base=${LEAD_BASE_DIR:-/var/tmp/p2p}/speed-base-$(printf '%s' "${card:-unknown}" | tr -c 'A-Za-z0-9\n' '-' | tr 'A-Z' 'a-z')
# The committed folder holds a perf file per card (perf.txt: H200s,
# perf-<card>.txt: others); a card it does not serve, or FORCE_RECORD,
# records into a copy of it (BASE_FROM), written beside the other cards'.
committed=expectations/nvidia-sm_90-580-x1
uuid=$(timeout 10 nvidia-smi --query-gpu=uuid --format=csv,noheader 2>/dev/null | head -n 1)
if [ -z "${FORCE_RECORD:-}" ] && grep -qsE "^# scope: (machine ${uuid:-none}|sku ${card:-none})\$" "$committed"/perf*.txt; then
  base=$committed
else
  export BASE_FROM=$committed
fi
echo "device-lead: $(date -u +%FT%TZ) ${card:-no card}; driver $(cat /sys/module/nvidia/version 2>/dev/null); base $base; steps ${STEPS:-}" | tee "$out/summary.txt"
for step in ${STEPS:?set STEPS}; do
  s=${step%%:*} lim=${step##*:}
  mkdir -p "$w/$s"
  t0=$(date +%s)
  case $s in
    speed) RUNS=${SPEED_RUNS:-} BASE=$base OUT=$w/$s timeout -k 5 "$lim" bash scripts/device-speed.sh .dev/specs.test >"$w/$s/stdout.txt" 2>&1 ;;
    hangs) RUNS=${HANGS_RUNS:-} BASE=$base OUT=$w/$s timeout -k 5 "$lim" bash scripts/device-hangs.sh .dev/specs.test >"$w/$s/stdout.txt" 2>&1 ;;
    ab) OUT=$w/$s timeout -k 5 "$lim" bash scripts/device-ab.sh .dev/specs.test >"$w/$s/stdout.txt" 2>&1 ;;
    *) echo "unknown step $s" >"$w/$s/stdout.txt" ;;
  esac
  echo "== $s (exit $?, $(( $(date +%s) - t0 )) s)" >>"$out/summary.txt"
  cat "$w/$s/summary.txt" >>"$out/summary.txt" 2>/dev/null || tail -n 5 "$w/$s/stdout.txt" >>"$out/summary.txt"
  timeout 30 tar -C "$w" -czf "$out/$s.tgz" "$s"
done
case $base in expectations/*) ;; *) [ -d "$base" ] && timeout 10 tar -C "$(dirname "$base")" -czf "$out/base.tgz" "$(basename "$base")" ;; esac
cat "$out/summary.txt"
