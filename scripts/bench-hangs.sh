#!/usr/bin/env bash
# Time to verdict under each hang rule of the driver-fault injector, against
# the healthy gated time measured in the same invocation (issue 48 item 3).
# A benchmark, not a test: it prints the numbers and their ratios, and
# checks nothing itself (docs/PERFORMANCE.md, "A wedged call", records them).
#
#   healthy-N   the healthy gated run, RUNS times (their median is the
#               denominator of every ratio)
#   paused      a healthy gated run whose suite process is stopped 3 times
#               for 5 s (kill -STOP / -CONT) from 5 s in (PAUSE=1 only)
#   <rule>      one gated run per hang rule: every call, or the N-th call
#               of each rank process, of a host call never returns
#
# The host backend's calls behind the injector are memfd_create, ftruncate,
# dup, fstat, mmap, mprotect, munmap, memcpy_htod (a write's copy) and
# synchronize (a launch's wait); the rules below cover the launch's wait
# (synchronize), the allocation (mmap), the access grant (mprotect) and the
# write (memcpy_htod). scripts/device-hangs.sh is the GPU counterpart.
#
# Usage: scripts/bench-hangs.sh [BIN]
#   BIN        the suite binary (default .dev/specs.test; built when absent)
#   BASE       the gate's expectations folder with durations.txt (default:
#              one recorded here from a healthy run, with p2pbaseline)
#   RUNS       healthy gated runs (default 3)
#   PAUSE=1    add the paused run
#   RULES      the hang rules (default below)
#   LIMIT      seconds each run may take (default 600)
#   OUT        where the runs and summary.txt go (default a temp folder)
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
bin=${1:-.dev/specs.test}
if [ ! -x "$bin" ]; then
  timeout 900 bash scripts/build-specs.sh "$bin" || exit 2
fi
out=${OUT:-$(mktemp -d /tmp/bench-hangs.XXXXXX)}
mkdir -p "$out"
lim=${LIMIT:-600}
runs=${RUNS:-3}
rules=${RULES:-hang-at:synchronize=5 hang:synchronize hang:mmap hang-at:mmap=50 hang:mprotect hang:memcpy_htod}
sum=$out/summary.txt
: >"$sum"
say() { echo "$*" | tee -a "$sum"; }
say "bench-hangs: $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null) on $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

# elapsed NAME FLAGS...: one gated run, its wall time in $out/NAME.secs.
elapsed() {
  local name=$1; shift
  local t0 t1 rc
  rm -rf "$out/$name"
  t0=$(date +%s.%N)
  timeout -k 10 "$lim" "$bin" --backend=host --out="$out/$name" "$@" >"$out/$name.log" 2>&1 </dev/null &
  local pid=$!
  if [ "$name" = paused ]; then
    # The suite is timeout's child: stop it, never timeout itself.
    sleep 5
    local suite
    suite=$(pgrep -P "$pid" | head -n 1)
    for _ in 1 2 3; do
      [ -n "$suite" ] && kill -STOP "$suite" 2>/dev/null
      sleep 5
      [ -n "$suite" ] && kill -CONT "$suite" 2>/dev/null
      sleep 2
    done
  fi
  wait "$pid"; rc=$?
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f\n", b-a}' >"$out/$name.secs"
  echo "$rc" >"$out/$name.rc"
}

base=${BASE:-}
if [ -z "$base" ]; then
  base=$out/baseline
  rm -rf "$base"
  cp -r expectations/host-amd64 "$base"
  say "recording a baseline with durations in $base"
  timeout -k 10 "$lim" "$bin" --backend=host --out="$out/record" >"$out/record.log" 2>&1 </dev/null
  timeout 600 go run ./cmd/p2pbaseline "$base" "$out/record/results.json" >>"$out/record.log" 2>&1 || { say "p2pbaseline failed: $out/record.log"; exit 2; }
fi
[ -f "$base/durations.txt" ] || say "warning: $base has no durations.txt: every case waits its own Timeout"

row() { # name: one line of the table
  local name=$1 s rc v
  s=$(cat "$out/$name.secs"); rc=$(cat "$out/$name.rc")
  v=$(grep -E '^p2patomics: ' "$out/$name.log" | tail -n 1 | cut -c1-150)
  printf '%-26s exit %3s %7.1f s  %6s  %s\n' "$name" "$rc" "$s" "${2:-}" "$v" | tee -a "$sum"
}

healthy=()
for i in $(seq "$runs"); do
  elapsed "healthy-$i" --expectations="$base"
  healthy+=("$(cat "$out/healthy-$i.secs")")
  row "healthy-$i"
done
med=$(printf '%s\n' "${healthy[@]}" | sort -n | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
say "healthy gated median: $med s over $runs runs"
ratio() { awk -v a="$(cat "$out/$1.secs")" -v m="$med" 'BEGIN{printf "%.2fx", a/m}'; }
if [ "${PAUSE:-0}" = 1 ]; then
  elapsed paused --expectations="$base"
  row paused "$(ratio paused)"
fi
for r in $rules; do
  name=$(echo "$r" | tr ':=' '__')
  elapsed "$name" --expectations="$base" --internal-inject="$r"
  row "$name" "$(ratio "$name")"
done
say "load after: $(cut -d' ' -f1-3 /proc/loadavg); runs in $out"
