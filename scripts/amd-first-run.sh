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
#   runs/repro-hsa-fine-forced
#               hsa.fine again with HSA_FORCE_FINE_GRAIN_PCIE=1, on a GPU that
#               is not in an XGMI hive (gfx10/11/12: ROCr lists no FINE pool
#               there without it, so repro-hsa-fine skips)
#   runs/repro-pcie-p2p-atomics
#               on gfx10/11/12 (PCIe), last: hsa.coarse's P2P atomics with
#               P2PAT_AMD_PCIE_P2P_ATOMICS=1, which the suite holds back there
#   runs/contrast-hip-pinned
#               the seed's contrast in one run: non-atomic peer kernel reads
#               and writes (copy_kernel_*) beside the P2P atomics that fault,
#               on the same allocation kind, and hip.pinned.hsavmem (the same
#               f32 add launched through HIP on HSA fine-grained vmem)
#   runs/gate   the default suite gated against expectations/amd-gfx942-reported
#               (with its rocm6/skips.txt where the ranks report HIP 6.x)
#   runs/baseline-run + baseline/<stack>
#               a --update-expectations baseline of this machine, in a new folder
#   system/kfd-io-links.txt, cmdline.txt, amdgpu-params.txt, partition.txt,
#               lspci-bars.txt: the KFD io-link properties (P2P and atomics
#               flags), /proc/cmdline, amdgpu module parameters, the MI300X
#               compute/memory partition mode, BAR sizes
#   kernel-log.txt  amdgpu/kfd lines of the kernel log during the runs (or a
#               note that neither journalctl -k nor dmesg could be read)
#   summary.txt every command, its exit status and duration
# A step that fails is recorded and the script goes on: every step's output
# is worth having. The exit status is 0 once the archive is written; 2,
# before anything runs, on a machine without an AMD GPU (no /dev/kfd).
#
# Knobs (the checks run this script on the host backend with them):
#   P2PAT_SPECS=path      a built specs.test (default: build bin/specs.test)
#   P2PAT_FIRST_RUN_BACKEND=host
#                         run every step on this backend instead of the AMD
#                         ones (the repro steps then run --atomics only)
#   P2PAT_FIRST_RUN_ARGS  extra arguments for every suite step (e.g. --case=…)
#   P2PAT_FIRST_RUN_TIMEOUT  seconds per suite step (default 3600)
#   P2PAT_FIRST_RUN_ROOT  test only: a folder standing in for / when looking
#                         at /dev/kfd, /sys and /proc/cmdline (the check's
#                         fake machines)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

# hip_runtime FILE...: the HIP runtime version the ranks reported in the
# first of these results.json files that has one (environment.gpus[].runtime,
# "hip 6.4.43484": rank/hip's DeviceInfo.Runtime, the libamdhip64 the ranks
# loaded), or nothing. The gate's runtime line is keyed from it, never from
# /opt/rocm/.info/version: a distro ROCm (Debian: /usr/lib, no /opt/rocm)
# has no such file, and a host with two installs can load another release
# than the file names (issue 50, Q4).
hip_runtime() {
  local f v
  for f in "$@"; do
    [ -r "$f" ] || continue
    v=$(grep -Eo '"runtime": *"hip [0-9]+\.[0-9][0-9.]*"' "$f" | head -n 1 | sed -E 's/.*"hip ([0-9.]+)"$/\1/')
    [ -n "$v" ] && { echo "$v"; return 0; }
  done
  return 1
}

# rocm_line VERSION: the baseline's runtime line (a folder under it, from
# internal/amdreported's Row.SkipOn) for a HIP runtime version; none for
# ROCm 7 and later.
rocm_line() {
  case $1 in
  6.*) echo rocm6 ;;
  esac
}

# --runtime-line FILE...: print the runtime version and line the gate would
# use for these results.json files (scripts/check-amd-first-run.sh checks
# the keying with it), then stop.
if [ "${1:-}" = --runtime-line ]; then
  shift
  v=$(hip_runtime "$@") || { echo "none"; exit 0; }
  echo "hip $v ${v:+$(rocm_line "$v")}"
  exit 0
fi
cd "$root"

host=$(hostname -s 2>/dev/null || echo host)
out=${1:-out/amd-first-run-$host-$(date -u +%Y%m%dT%H%M%SZ)}
case $out in /*) ;; *) out=$root/$out ;; esac
if [ -e "$out" ]; then
  echo "amd-first-run: $out already exists; give a new folder" >&2
  exit 2
fi
backend=${P2PAT_FIRST_RUN_BACKEND:-}
extra=${P2PAT_FIRST_RUN_ARGS:-}
limit=${P2PAT_FIRST_RUN_TIMEOUT:-3600}
case $limit in '' | *[!0-9]*) echo "amd-first-run: P2PAT_FIRST_RUN_TIMEOUT=$limit is not a number of seconds" >&2; exit 2 ;; esac
sysroot=${P2PAT_FIRST_RUN_ROOT:-}
# No AMD GPU: stop before running anything, naming what was looked at.
if [ ! -e "$sysroot/dev/kfd" ]; then
  if ! command -v rocminfo >/dev/null 2>&1; then
    ri="rocminfo not installed"
  elif gpus=$(timeout 60 rocminfo 2>/dev/null | grep -Eo 'gfx[0-9a-f]+' | sort -u | tr '\n' ' ') && [ -n "$gpus" ]; then
    ri="rocminfo lists ${gpus% }"
  else
    ri="rocminfo lists no GPU agent"
  fi
  echo "amd-first-run: no AMD GPU here ($sysroot/dev/kfd does not exist; $ri): nothing run" >&2
  exit 2
fi
mkdir -p "$out/system" "$out/runs" "$out/baseline" || { echo "amd-first-run: cannot create $out" >&2; exit 2; }
summary=$out/summary.txt

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
# Ranks go on devices 0..N-1 in ROCr's order, whatever their architecture:
# a Ryzen iGPU (gfx1036) listed before the dGPUs would take a rank, load no
# code object and skip the whole run (issue 40, review 3 P10). Where a GPU
# agent's architecture has no code object here, every step runs with
# ROCR_VISIBLE_DEVICES naming the GPUs that have one (indices among the GPU
# agents, in rocminfo's order); a mask the user set is kept and named.
gpu_arches=$(sed -nE 's/^[[:space:]]*Name:[[:space:]]+(gfx[0-9a-f]+).*/\1/p' "$out/system/rocminfo.txt" 2>/dev/null)
keep= drop= i=0
for a in $gpu_arches; do
  if [ -e "$root/kernels/obj/kernels.$a.hsaco" ]; then keep=$keep${keep:+,}$i; else drop="$drop $a (GPU $i)"; fi
  i=$((i + 1))
done
if [ -n "$drop" ] && [ -n "${ROCR_VISIBLE_DEVICES:-}" ]; then
  printf '%-28s %s\n' gpu-selection "ROCR_VISIBLE_DEVICES=$ROCR_VISIBLE_DEVICES kept as set; no code object for:$drop" >>"$summary"
elif [ -n "$drop" ] && [ -n "$keep" ]; then
  export ROCR_VISIBLE_DEVICES=$keep
  printf '%-28s %s\n' gpu-selection "ROCR_VISIBLE_DEVICES=$keep for every step: no code object for:$drop" >>"$summary"
elif [ -n "$drop" ]; then
  printf '%-28s %s\n' gpu-selection "WARNING: no GPU agent has a code object here:$drop" >>"$summary"
fi
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

# --- facts the verdicts depend on (docs/AMD.md, "The first run")
# iolink_flags N: the names of the bits set in a KFD io-link's flags.
iolink_flags() {
  local n=$1 bit names= name
  for bit in 0 1 2 3 4 5; do
    [ $(((n >> bit) & 1)) = 1 ] || continue
    case $bit in
      0) name=enabled ;; 1) name=non-coherent ;; 2) name="no atomics 32" ;; 3) name="no atomics 64" ;;
      4) name="no peer-to-peer DMA" ;; 5) name="direct link" ;;
    esac
    names=$names${names:+, }$name
  done
  echo "${names:-none}"
}
{
  # The flag bits are KFD's CRAT_IOLINK_FLAGS_* (linux kfd_crat.h; the
  # thunk's HSA_IOLINK flags): each flags line is decoded beneath it.
  echo "# KFD io-link properties: type 11 = xGMI, 2 = PCIe; flags bit 0 = enabled, 1 = non-coherent, 2 = no atomics 32, 3 = no atomics 64, 4 = no peer-to-peer DMA, 5 = direct link"
  found=
  for f in "$sysroot"/sys/class/kfd/kfd/topology/nodes/*/io_links/*/properties "$sysroot"/sys/class/kfd/kfd/topology/nodes/*/p2p_links/*/properties; do
    [ -r "$f" ] || continue
    found=1
    echo "--- ${f#"$sysroot"}"
    cat "$f"
    flags=$(sed -n 's/^flags[[:space:]]\+\([0-9]\+\)$/\1/p' "$f" | head -n 1)
    [ -n "$flags" ] && echo "# flags $flags = $(iolink_flags "$flags")"
  done
  [ -n "$found" ] || echo "(no readable io_links under $sysroot/sys/class/kfd/kfd/topology/nodes)"
} >"$out/system/kfd-io-links.txt" 2>&1
{ cat "$sysroot/proc/cmdline" 2>&1; } >"$out/system/cmdline.txt"
{
  if [ -d "$sysroot/sys/module/amdgpu/parameters" ]; then
    for f in "$sysroot"/sys/module/amdgpu/parameters/*; do
      [ -r "$f" ] && echo "$(basename "$f")=$(cat "$f" 2>/dev/null)"
    done
  else
    echo "(no $sysroot/sys/module/amdgpu/parameters: amdgpu not loaded?)"
  fi
} >"$out/system/amdgpu-params.txt" 2>&1
{
  echo "# compute and memory partition mode per GPU (MI300X: SPX/CPX, NPS1/NPS4)"
  found=
  for d in "$sysroot"/sys/class/drm/card*/device; do
    for f in current_compute_partition current_memory_partition; do
      [ -r "$d/$f" ] && { found=1; echo "${d#"$sysroot"}/$f: $(cat "$d/$f")"; }
    done
  done
  [ -n "$found" ] || echo "(no partition files: not a partitionable GPU)"
} >"$out/system/partition.txt" 2>&1
tool lspci-bars sh -c 'lspci -vv -d 1002: 2>&1 | grep -E "^[0-9a-f]|Region|BAR|Resizable"'

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
  # shellcheck disable=SC2086 # extra and suite_env are lists of words
  step "$name" "$out/runs/$name.log" timeout "$limit" ${suite_env:+env $suite_env} "$specs" "$@" --out="$out/runs/$name" $extra
}
suite_env=

b() { echo "--backend=${backend:-$1}"; }
# kind FLAG: the allocation-kind flag, dropped on the stand-in backend.
kind() { [ -z "$backend" ] && echo "$1"; }

suite suite "$(b auto)" --trace
suite repro-hip-uncached "$(b hip)" $(kind --uncached) --atomics
suite repro-hip-pinned "$(b hip)" $(kind --pinned) --atomics
suite repro-hsa-fine "$(b hsa)" $(kind --fine) --atomics
# Outside an XGMI hive (RDNA: gfx10, gfx11, gfx12) ROCr lists no FINE VRAM
# pool unless HSA_FORCE_FINE_GRAIN_PCIE=1, so repro-hsa-fine skips: run the
# seed's working path again with it set (named in the summary's command).
arches=$(grep -Eo 'gfx[0-9a-f]+' "$out/system/rocminfo.txt" 2>/dev/null | sort -u | tr '\n' ' ')
if printf '%s' "$arches" | grep -Eq 'gfx1[0-9a-f]+'; then
  suite_env=HSA_FORCE_FINE_GRAIN_PCIE=1 suite repro-hsa-fine-forced "$(b hsa)" $(kind --fine) --atomics
else
  printf '%-28s %s\n' repro-hsa-fine-forced "not run: rocminfo lists ${arches:-no gfx agent} (an XGMI-hive part lists the FINE pool without HSA_FORCE_FINE_GRAIN_PCIE)" >>"$summary"
fi
# The seed's contrast in one step: plain peer kernel reads and writes (the
# copy_kernel perf cases check every byte) beside the P2P atomics that
# fault, on the same allocation kind, in one run; and the same f32 add
# launched through HIP on HSA fine-grained vmem (hip.pinned.hsavmem.*: the
# seed's working path), so one step holds both memories under one dispatch.
suite contrast-hip-pinned "$(b hip)" $(kind --pinned) --ginkgo.focus='\.contrast\.|perf\.copy_kernel_(read|write)\.|\.counter\.|\.hsavmem\.'
# The reported baseline is gfx942's: on another GPU the stacks differ, and
# the comparison is still what the project wants to see.
# On ROCm 6.x hipMemCreate rejects the Uncached type, so every hip.uncached
# case skips: the gate adds the baseline's rocm6/skips.txt (generated from
# internal/amdreported) there, and only there, so a skip on ROCm 7 stays a
# finding. The version is the HIP runtime the ranks reported in the steps
# before (hip_runtime); where no rank opened HIP, the gate goes without.
gate_exp=$root/expectations/amd-gfx942-reported
if hip_ver=$(hip_runtime "$out"/runs/{suite,repro-hip-pinned,repro-hip-uncached,contrast-hip-pinned}/results.json); then
  line=$(rocm_line "$hip_ver")
  [ -n "$line" ] && gate_exp=$gate_exp,$gate_exp/$line/skips.txt
  printf '%-28s %s\n' gate-runtime "hip $hip_ver (the ranks' results.json): gated ${line:+with $line/skips.txt}${line:-without a runtime line}" >>"$summary"
else
  printf '%-28s %s\n' gate-runtime "no rank reported a HIP runtime (no hip device in the steps' results.json): gated without a runtime line" >>"$summary"
fi
suite gate "$(b auto)" --expectations="$gate_exp" --allow-stack-mismatch
suite baseline-run "$(b auto)" --expectations="$out/baseline/this-machine" --update-expectations
# On PCIe (gfx10/11/12) KFD's atomics bits speak of each GPU's root port,
# not of peer-to-peer routing, so the backends hold P2P atomics back there
# (a skip naming P2PAT_AMD_PCIE_P2P_ATOMICS). Run them once with it set, last
# (a P2P AtomicOp the root complex does not route can hang the GPU), so what
# they do is recorded apart from the gated verdicts.
if printf '%s' "$arches" | grep -Eq 'gfx1[0-9a-f]+'; then
  suite_env=P2PAT_AMD_PCIE_P2P_ATOMICS=1 suite repro-pcie-p2p-atomics "$(b hsa)" $(kind --coarse) --atomics
else
  printf '%-28s %s\n' repro-pcie-p2p-atomics "not run: rocminfo lists ${arches:-no gfx agent} (an XGMI hive's atomics bits are the link's own)" >>"$summary"
fi

# --- kernel log: the amdgpu/kfd lines since the runs began
{
  echo "# kernel log lines since $klog_start (amdgpu, kfd, drm, iommu, xgmi, gpu reset, page faults)"
  # journalctl exits 0 with no entries (and only a hint on stderr) for a
  # user outside the adm/systemd-journal groups: an empty answer falls
  # through to dmesg, and an unreadable log leaves a note.
  : >"$out/kernel-log.raw"
  journalctl -k --since "$klog_start" --no-pager 2>/dev/null | grep -v -- '-- No entries --' >"$out/kernel-log.raw"
  if [ ! -s "$out/kernel-log.raw" ]; then
    echo "# journalctl -k gave nothing; dmesg -T instead"
    dmesg -T >"$out/kernel-log.raw" 2>/dev/null || : >"$out/kernel-log.raw"
  fi
  if [ ! -s "$out/kernel-log.raw" ]; then
    echo "# the kernel log was unreadable: neither journalctl -k nor dmesg gave anything (run as root, or: sudo dmesg > kernel-log.txt and send it too)"
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
