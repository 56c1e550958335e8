#!/usr/bin/env bash
# Issue 53's device test of the A/B run (--ab, docs/GATING.md "A/B: the
# upgrade side by side") on one GPU, with only the CUDA driver installed:
#   aa  --ab=<the very libcuda.so.1 stack A loads>   the A/A control: expected
#       PASS, 0 outcome differences, every paired metric inside its noise
#       ("B: no difference from A").
#   ab  --ab=<the stand-in driver's folder>           scripts/ab-shim/shim.c built
#       here with cc: the real driver with every device-to-device copy issued
#       twice. Expected FAIL naming side B on the copy-engine cases only: their
#       bw_ce_* metrics perf regressions (about -50 %), and the cases
#       themselves B's regressions where the halved median falls under the
#       physics floor (half the ceiling: harness/ceiling.go, as device-final's
#       ct2-ungated run showed); every other case the same outcome on both
#       sides, every other metric inside its noise.
# Both runs are the perf cases and the controls (--ginkgo.label-filter='perf
# || control', about 90 cases, 3 blocks: each case 3 times on each side),
# not the full suite: the full suite on both stacks three times would not
# fit the command's 400 s. Each run is timed, packed into $OUT/<name>.tgz
# as soon as it ends (with the built shim and its real-libcuda.path), and
# gets one line in $OUT/summary.txt (exit status, seconds, the verdict line).
# Usage: OUT=... scripts/device-ab.sh [BIN]    (BIN default .dev/specs.test)
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0   # never NVLink multicast on shared machines
bin=${1:-.dev/specs.test}
out=${OUT:?set OUT}
blocks=${AB_BLOCKS:-3}
filter=${AB_FILTER:-perf || control}
w=$(mktemp -d)/ab
mkdir -p "$w"
t00=$(date +%s)

# The libcuda.so.1 stack A loads: the loader's answer for the soname.
real=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')
if [ -z "$real" ]; then
  for p in /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1 /lib/x86_64-linux-gnu/libcuda.so.1; do
    [ -e "$p" ] && { real=$p; break; }
  done
fi
if [ -z "$real" ]; then
  echo "device-ab: no libcuda.so.1 in the loader cache or the usual places" | tee "$out/summary.txt"
  exit 1
fi
echo "device-ab: stack A's libcuda.so.1 is $real ($(readlink -f "$real"))" | tee "$w/summary.txt"
nvidia-smi -L >"$w/smi.txt" 2>&1 || true
cat /proc/driver/nvidia/version >"$w/nvidia-version.txt" 2>&1 || true

# Stack B: the stand-in, built here.
shim=$w/shim
mkdir -p "$shim"
if ! cc -shared -fPIC -o "$shim/libcuda.so.1" scripts/ab-shim/shim.c -ldl 2>"$w/shim-build.log"; then
  echo "device-ab: the shim did not build: $(head -n 3 "$w/shim-build.log")" | tee -a "$w/summary.txt"
  cp "$w/summary.txt" "$out/summary.txt"
  exit 1
fi
readlink -f "$real" >"$shim/real-libcuda.path"
echo "device-ab: shim built in $(( $(date +%s) - t00 )) s: $shim/libcuda.so.1 -> $(cat "$shim/real-libcuda.path")" | tee -a "$w/summary.txt"

run() { # name, limit in s, the run's flags
  local name=$1 lim=$2; shift 2
  local t0 t1 rc
  t0=$(date +%s.%N)
  timeout -k 10 "$lim" "$bin" --out="$w/$name" "$@" >"$w/$name.log" 2>&1 </dev/null; rc=$?
  t1=$(date +%s.%N)
  mkdir -p "$w/$name"
  mv "$w/$name.log" "$w/$name/run.log"
  echo "$rc" >"$w/$name/exit_status"
  rm -rf "$w/$name/heatmaps"
  cp "$w/smi.txt" "$w/nvidia-version.txt" "$w/$name/" 2>/dev/null
  cp -r "$shim" "$w/$name/shim"
  printf '%-4s exit %3s  %6.1f s  %s\n' "$name" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" \
    "$(grep -E '^p2patomics: (PASS|FAIL|INTERRUPTED|NO RESULT)' "$w/$name/run.log" | tail -n 1)" | tee -a "$w/summary.txt"
  # The A/B section in one line: what differed, by case and metric.
  python3 - "$w/$name/results.json" <<'PY' 2>/dev/null | tee -a "$w/summary.txt"
import json, sys
a = json.load(open(sys.argv[1])).get("ab") or {}
ms = [m for p in a.get("pairs", []) for m in p.get("metrics", [])]
bad = ["%s %s %+.0f%%" % (p["id"], m["name"], 100 * m["change"]) for p in a.get("pairs", []) for m in p.get("metrics", []) if m["verdict"] == "perf-regression"]
print("     ab: %d pairs, %d paired metrics, %d regressions, %d improvements, %d perf regressions, %d perf improvements; B: %s"
      % (len(a.get("pairs", [])), len(ms), a.get("regressions", 0), a.get("improvements", 0), a.get("perf_regressions", 0), a.get("perf_improvements", 0), a.get("b", {}).get("library", "")))
for b in bad[:40]:
    print("       " + b)
# The paired noise of the copy-engine metrics (for docs/PERFORMANCE.md): how
# far B/A strayed from 1 and how wide the 95 % intervals were, in %.
ce = [m for m in ms if m["name"].startswith("bw_ce_") and m["verdict"] != "unjudged"]
if ce:
    ch = sorted(abs(m["change"]) * 100 for m in ce)
    hw = sorted((m["ci_high"] - m["ci_low"]) * 50 for m in ce)
    print("     bw_ce_* paired: %d metrics, |change| median %.2f%% max %.2f%%, interval half-width median %.2f%% max %.2f%%"
          % (len(ce), ch[len(ch) // 2], ch[-1], hw[len(hw) // 2], hw[-1]))
PY
  tar -C "$w" -czf "$out/$name.tgz" "$name"
  cp "$w/summary.txt" "$out/summary.txt"
}
ab=(--backend=cuda "--ginkgo.label-filter=$filter" --ab-blocks="$blocks")
run aa 180 "${ab[@]}" --ab="$real"
run ab 180 "${ab[@]}" --ab="$shim"
echo "device-ab: total $(( $(date +%s) - t00 )) s" | tee -a "$w/summary.txt"
cp "$w/summary.txt" "$out/summary.txt"
