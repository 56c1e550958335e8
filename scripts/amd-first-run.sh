#!/usr/bin/env bash
# The first run on an AMD machine, one command: collects everything the
# project needs to learn from it into one archive to send back (docs/AMD.md,
# "The first run").
#
#   scripts/amd-first-run.sh [OUTDIR]      (or: make amd-first-run)
#
# OUTDIR defaults to out/amd-first-run-<host>-<UTC time>; the archive is
# OUTDIR.tar.gz next to it. What it holds:
#   system/     uname, os-release, rocminfo, rocm-smi (--showtopo and more),
#               installed ROCm packages and versions, which libhsa-runtime64
#               and libamdhip64 files the loader finds, limits that matter
#               (ulimit -n, vm.mmap_min_addr), the AMD environment variables
#   runs/suite  the full default suite with --trace (results.json, junit,
#               every case's evidence folder)
#   runs/repro-hip-uncached, repro-hip-pinned, repro-hsa-fine
#               the reproductions of the original report
#   runs/gate   the default suite gated against expectations/amd-gfx942-reported
#   runs/baseline-run + baseline/<stack>
#               a --update-expectations baseline of this machine, in a new folder
#   kernel-log.txt  amdgpu/kfd lines of the kernel log during the runs
#   summary.txt every command, its exit status and duration
# A step that fails is recorded and the script goes on: every step's output
# is worth having. The exit status is 0 once the archive is written.
#
# Knobs (the checks run this script on the host backend with them):
#   P2PAT_SPECS=path      a built specs.test (default: build bin/specs.test)
#   P2PAT_FIRST_RUN_BACKEND=host
#                         run every step on this backend instead of the AMD
#                         ones (the repro steps then run --atomics only)
#   P2PAT_FIRST_RUN_ARGS  extra arguments for every suite step (e.g. --case=…)
#   P2PAT_FIRST_RUN_TIMEOUT  seconds per suite step (default 3600)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root"

host=$(hostname -s 2>/dev/null || echo host)
out=${1:-out/amd-first-run-$host-$(date -u +%Y%m%dT%H%M%SZ)}
case $out in /*) ;; *) out=$root/$out ;; esac
if [ -e "$out" ]; then
  echo "amd-first-run: $out already exists; give a new folder" >&2
  exit 2
fi
mkdir -p "$out/system" "$out/runs" "$out/baseline" || { echo "amd-first-run: cannot create $out" >&2; exit 2; }
summary=$out/summary.txt
backend=${P2PAT_FIRST_RUN_BACKEND:-}
extra=${P2PAT_FIRST_RUN_ARGS:-}
limit=${P2PAT_FIRST_RUN_TIMEOUT:-3600}
case $limit in '' | *[!0-9]*) echo "amd-first-run: P2PAT_FIRST_RUN_TIMEOUT=$limit is not a number of seconds" >&2; exit 2 ;; esac

# step NAME FILE CMD...: runs CMD, output to FILE, one summary line.
step() {
  local name=$1 file=$2; shift 2
  local t0=$SECONDS rc
  { echo "\$ $*"; "$@"; } >"$file" 2>&1
  rc=$?
  printf '%-28s exit %-3s %5ss  %s\n' "$name" "$rc" "$((SECONDS - t0))" "$*" >>"$summary"
  return $rc
}

# tool NAME ARGS...: like step, but a tool that is not installed is one line.
tool() {
  local name=$1; shift
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "$1: not installed (not on PATH)" >"$out/system/$name.txt"
    printf '%-28s %s\n' "$name" "not installed: $1" >>"$summary"
    return 0
  fi
  step "$name" "$out/system/$name.txt" timeout 120 "$@"
}

echo "# p2patomics AMD first run, $(date -u +%FT%TZ) on $host" >"$summary"
echo "# commit $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)" >>"$summary"

# --- the machine
tool uname uname -a
tool os-release cat /etc/os-release
tool rocminfo rocminfo
tool rocm-smi-showtopo rocm-smi --showtopo
tool rocm-smi-product rocm-smi --showproductname --showdriverversion --showfwinfo --showmeminfo vram
tool amd-smi-static amd-smi static
tool lspci-amd sh -c 'lspci -nn | grep -Ei "amd|ati|1002:"'
tool dpkg-rocm sh -c 'dpkg -l | grep -Ei "rocm|hsa|hip|amdgpu|hsakmt"'
tool rpm-rocm sh -c 'rpm -qa | grep -Ei "rocm|hsa|hip|amdgpu|hsakmt"'
{
  echo "ROCM_PATH=${ROCM_PATH:-}"
  for f in /opt/rocm/.info/version /sys/module/amdgpu/version; do
    [ -r "$f" ] && echo "$f: $(cat "$f")"
  done
  echo "--- ldconfig -p"
  ldconfig -p 2>/dev/null | grep -E 'libhsa-runtime64|libamdhip64|libhsakmt' || echo "(none in the loader cache)"
  echo "--- files the AMD backends may load (\$ROCM_PATH/lib, /opt/rocm/lib)"
  for d in ${ROCM_PATH:+$ROCM_PATH/lib} /opt/rocm/lib; do
    for l in "$d"/libhsa-runtime64.so.1 "$d"/libamdhip64.so.*; do
      [ -e "$l" ] && echo "$l -> $(readlink -f "$l")"
    done
  done
  echo "--- limits"
  echo "ulimit -n: $(ulimit -n) (hard $(ulimit -Hn))"
  echo "vm.mmap_min_addr: $(cat /proc/sys/vm/mmap_min_addr 2>/dev/null)"
  echo "--- AMD environment"
  env | grep -E '^(HSA_|HIP_|ROCR_|ROCM_|AMD_|GPU_|HSAKMT_|LOADER_ENABLE_LOGGING)' | sort
  echo "--- groups (render/video are needed for /dev/kfd)"
  id
  ls -l /dev/kfd /dev/dri 2>&1
} >"$out/system/libraries.txt" 2>&1

# --- the suite
specs=${P2PAT_SPECS:-}
if [ -z "$specs" ]; then
  specs=$root/bin/specs.test
  mkdir -p "$root/bin"
  if ! step build "$out/build.log" env CGO_ENABLED=0 go test -c -o "$specs" ./specs; then
    echo "amd-first-run: building the suite failed (see $out/build.log); archiving what there is" >&2
    specs=
  fi
fi

klog_start=$(date '+%Y-%m-%d %H:%M:%S')

# suite NAME ARGS...: one suite run into runs/NAME.
suite() {
  local name=$1; shift
  if [ -z "$specs" ]; then
    printf '%-28s %s\n' "$name" "not run: no suite binary" >>"$summary"
    return 0
  fi
  # shellcheck disable=SC2086 # extra is a list of arguments
  step "$name" "$out/runs/$name.log" timeout "$limit" "$specs" "$@" --out="$out/runs/$name" $extra
}

b() { echo "--backend=${backend:-$1}"; }
# kind FLAG: the allocation-kind flag, dropped on the stand-in backend.
kind() { [ -z "$backend" ] && echo "$1"; }

suite suite "$(b auto)" --trace
suite repro-hip-uncached "$(b hip)" $(kind --uncached) --atomics
suite repro-hip-pinned "$(b hip)" $(kind --pinned) --atomics
suite repro-hsa-fine "$(b hsa)" $(kind --fine) --atomics
# The reported baseline is gfx942's: on another GPU the stacks differ, and
# the comparison is still what the project wants to see.
suite gate "$(b auto)" --expectations="$root/expectations/amd-gfx942-reported" --allow-stack-mismatch
suite baseline-run "$(b auto)" --expectations="$out/baseline/this-machine" --update-expectations

# --- kernel log: the amdgpu/kfd lines since the runs began
{
  echo "# kernel log lines since $klog_start (amdgpu, kfd, drm, iommu, xgmi, gpu reset, page faults)"
  if journalctl -k --since "$klog_start" --no-pager >"$out/kernel-log.raw" 2>/dev/null; then
    :
  elif ! dmesg -T >"$out/kernel-log.raw" 2>/dev/null; then
    echo "# neither journalctl -k nor dmesg was readable (run as root, or: sudo dmesg > kernel-log.txt)"
  fi
  grep -Ei 'amdgpu|kfd|drm|iommu|xgmi|gpu reset|page fault|ras' "$out/kernel-log.raw" 2>/dev/null | tail -n 5000
} >"$out/kernel-log.txt"
rm -f "$out/kernel-log.raw"

# --- the archive
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")" || { echo "amd-first-run: tar failed" >&2; exit 1; }
echo "amd-first-run: done. Send back this one file:"
echo "  $out.tar.gz ($(du -h "$out.tar.gz" | cut -f1))"
echo "Summary (each step and its exit status):"
sed 's/^/  /' "$summary"
