#!/usr/bin/env bash
# The AMD first-run script's logic, checked on the host backend on two fake
# machines (a gfx1201 over PCIe and a gfx942 in a hive: a fake rocminfo,
# rocm-smi, journalctl, dmesg and lspci on PATH, and a fake root with
# /dev/kfd, KFD io-links, /proc/cmdline and amdgpu parameters through
# P2PAT_FIRST_RUN_ROOT): one archive holding the machine facts, the suite
# with --trace, the reproductions (the forced fine step on gfx1201), the
# contrast step, the gate against the reported gfx942 baseline and a new
# baseline; every copy metric names its engine; a failing step (the fake
# rocm-smi exits 3) is recorded and does not stop it; the gate's runtime
# line comes from the ranks' HIP runtime, not /opt/rocm/.info/version; no /dev/kfd, a reused
# output folder and a bad knob are one line and exit 2.
set -uo pipefail
bin=${1:?usage: check-amd-first-run.sh specs.test OUTDIR}; out=${2:?}
case $bin in /*) ;; *) bin=$PWD/$bin ;; esac
rm -rf "$out"; mkdir -p "$out/fakebin"
out=$(cd "$out" && pwd)
fail() { echo "amd-first-run check FAILED: $*"; exit 1; }

cat >"$out/fakebin/rocm-smi" <<'EOS'
#!/bin/sh
echo "fake rocm-smi $*"
exit 3
EOS
# journalctl as a user outside adm/systemd-journal sees it: exit 0, no
# entries; dmesg has the line.
cat >"$out/fakebin/journalctl" <<'EOS'
#!/bin/sh
echo "-- No entries --"
exit 0
EOS
cat >"$out/fakebin/dmesg" <<'EOS'
#!/bin/sh
echo "[Tue Dec  1 10:00:00 2026] amdgpu 0000:c1:00.0: amdgpu: fake VM fault for the check"
EOS
cat >"$out/fakebin/lspci" <<'EOS'
#!/bin/sh
echo "c1:00.0 Display controller: Advanced Micro Devices, Inc. [AMD/ATI] (fake lspci)"
echo "	Region 0: Memory at 38000000000 (64-bit, prefetchable) [size=256G]"
EOS
chmod +x "$out/fakebin/"*
# The suite selection: one atomic case and one copy-engine perf case, so
# the copy metric's method (which engine ran) is in the archive.
sel='--ginkgo.focus=host\.memfd\.(counter\.add_u64_relaxed_sys|perf\.copy_ce_write\.r0r1)$'
id=host.memfd.counter.add_u64_relaxed_sys

# machine GFX PARTITION: a fake rocminfo naming GFX and a fake root with
# /dev/kfd, a KFD io-link, /proc/cmdline, amdgpu parameters and (MI300X)
# the partition mode; then the first run on it, into $out/GFX.
machine() {
  local gfx=$1 part=$2 r=$out/root-$1
  mkdir -p "$r/dev" "$r/proc" "$r/sys/module/amdgpu/parameters" "$r/sys/class/kfd/kfd/topology/nodes/2/io_links/0" "$r/sys/class/drm/card0/device"
  : >"$r/dev/kfd"
  echo "BOOT_IMAGE=/vmlinuz iommu=pt amdgpu.fake=$gfx" >"$r/proc/cmdline"
  echo 0 >"$r/sys/module/amdgpu/parameters/noretry"
  # xGMI in the hive; PCIe, enabled with neither atomics width, on the R9700.
  if [ "$gfx" = gfx942 ]; then link='type 11\nnode_from 2\nnode_to 3\nflags 1\n'; else link='type 2\nnode_from 2\nnode_to 3\nflags 13\n'; fi
  printf "$link" >"$r/sys/class/kfd/kfd/topology/nodes/2/io_links/0/properties"
  [ -n "$part" ] && echo "$part" >"$r/sys/class/drm/card0/device/current_compute_partition"
  # ROCm's version file, which must not key the gate (issue 50, Q4): none
  # on the gfx942 (Debian's ROCm lives in /usr/lib, no /opt/rocm), a stale
  # 6.x on the gfx1201 (a second install the ranks do not load). The ranks
  # here are the host stand-in's, which report no HIP runtime.
  if [ "$gfx" = gfx1201 ]; then mkdir -p "$r/opt/rocm/.info"; echo 6.4.3-120 >"$r/opt/rocm/.info/version"; fi
  mkdir -p "$out/fakebin-$gfx"
  # The gfx1201 desktop has its Ryzen iGPU (gfx1036) enabled, listed first.
  local agents=$gfx; [ "$gfx" = gfx1201 ] && agents="gfx1036 gfx1201 gfx1201"
  { printf '#!/bin/sh\necho "ROCk module is loaded"\n'
    for a in $agents; do printf 'echo "  Name:                    %s (fake rocminfo for the check)"\n' "$a"; done
  } >"$out/fakebin-$gfx/rocminfo"
  chmod +x "$out/fakebin-$gfx/rocminfo"
  env -u ROCM_PATH "PATH=$out/fakebin-$gfx:$out/fakebin:$PATH" "P2PAT_SPECS=$bin" P2PAT_FIRST_RUN_BACKEND=host "P2PAT_FIRST_RUN_ARGS=$sel" \
    "P2PAT_FIRST_RUN_ROOT=$r" bash scripts/amd-first-run.sh "$out/$gfx" >"$out/$gfx.log" 2>&1
}

for gfx in gfx1201 gfx942; do
  fr=$out/$gfx
  part=; [ $gfx = gfx942 ] && part=SPX
  machine $gfx "$part"; rc=$?
  [ $rc = 0 ] || { cat "$out/$gfx.log"; fail "$gfx: exit $rc, want 0"; }
  [ -s "$fr.tar.gz" ] || fail "$gfx: no archive $fr.tar.gz"
  grep -q "$gfx.tar.gz" "$out/$gfx.log" || fail "$gfx: the script does not say which file to send"
  tar -tzf "$fr.tar.gz" >"$out/list.txt" || fail "$gfx: the archive does not list"
  for f in summary.txt system/rocminfo.txt system/rocm-smi-showtopo.txt system/libraries.txt \
    system/kfd-io-links.txt system/cmdline.txt system/amdgpu-params.txt system/partition.txt system/lspci-bars.txt \
    kernel-log.txt runs/suite/results.json runs/repro-hip-uncached/results.json \
    runs/repro-hip-pinned/results.json runs/repro-hsa-fine/results.json runs/contrast-hip-pinned/results.json \
    runs/gate.log baseline/this-machine/cases.txt; do
    grep -qx "$gfx/$f" "$out/list.txt" || fail "$gfx: the archive lacks $f"
  done
  grep -q "fake rocminfo" "$fr/system/rocminfo.txt" || fail "$gfx: rocminfo's output is not recorded"
  grep -q 'fake rocm-smi --showtopo' "$fr/system/rocm-smi-showtopo.txt" || fail "$gfx: rocm-smi --showtopo is not recorded"
  grep -q '^ulimit -n' "$fr/system/libraries.txt" || fail "$gfx: the limits are not recorded"
  # N9: the facts and the kernel log (journalctl says nothing: dmesg's line)
  grep -q '^type ' "$fr/system/kfd-io-links.txt" && grep -q 'io_links/0/properties' "$fr/system/kfd-io-links.txt" || fail "$gfx: the KFD io-link properties are not recorded"
  # Issue 40 (P4): the flags are decoded with KFD's bits (1 = non-coherent).
  if [ $gfx = gfx942 ]; then want='# flags 1 = enabled'; else want='# flags 13 = enabled, no atomics 32, no atomics 64'; fi
  grep -qx "$want" "$fr/system/kfd-io-links.txt" || fail "$gfx: the io-link flags are not decoded as '$want': $(grep '^# flags' "$fr/system/kfd-io-links.txt")"
  grep -q "amdgpu.fake=$gfx" "$fr/system/cmdline.txt" || fail "$gfx: /proc/cmdline is not recorded"
  grep -qx 'noretry=0' "$fr/system/amdgpu-params.txt" || fail "$gfx: the amdgpu parameters are not recorded"
  grep -q 'size=256G' "$fr/system/lspci-bars.txt" || fail "$gfx: the BAR sizes are not recorded"
  grep -q 'fake VM fault for the check' "$fr/kernel-log.txt" || fail "$gfx: journalctl gave nothing and dmesg's amdgpu line is not in kernel-log.txt"
  if [ $gfx = gfx942 ]; then
    grep -q 'current_compute_partition: SPX' "$fr/system/partition.txt" || fail "gfx942: the partition mode is not recorded"
    grep -Eq '^repro-hsa-fine-forced +not run: rocminfo lists gfx942' "$fr/summary.txt" || fail "gfx942: the forced fine step is not named as skipped: $(grep forced "$fr/summary.txt")"
    ! grep -q '^gpu-selection' "$fr/summary.txt" || fail "gfx942: a GPU selection where every agent has a code object"
    grep -Eq '^repro-pcie-p2p-atomics +not run: rocminfo lists gfx942' "$fr/summary.txt" || fail "gfx942: the PCIe atomics step is not named as skipped: $(grep pcie "$fr/summary.txt")"
  else
    # N5: outside an XGMI hive the seed's fine path runs with the switch.
    grep -Eq '^repro-hsa-fine-forced +exit 0 .*env HSA_FORCE_FINE_GRAIN_PCIE=1 ' "$fr/summary.txt" || fail "gfx1201: no forced fine step with HSA_FORCE_FINE_GRAIN_PCIE=1: $(grep forced "$fr/summary.txt")"
    grep -qx "$gfx/runs/repro-hsa-fine-forced/results.json" "$out/list.txt" || fail "gfx1201: the forced fine step's results are not archived"
    # Issue 40 (P10): the iGPU listed first is left out of every step.
    grep -Eq '^gpu-selection +ROCR_VISIBLE_DEVICES=1,2 for every step: no code object for: gfx1036 \(GPU 0\)' "$fr/summary.txt" || fail "gfx1201 behind a gfx1036 iGPU: no ROCR_VISIBLE_DEVICES=1,2: $(grep gpu-selection "$fr/summary.txt")"
    grep -qx 'ROCR_VISIBLE_DEVICES=1,2' "$fr/system/libraries.txt" || fail "gfx1201: the steps' environment lacks ROCR_VISIBLE_DEVICES=1,2"
    # Issue 40 (P9): the held-back PCIe P2P atomics run once, with the switch.
    grep -Eq '^repro-pcie-p2p-atomics +exit 0 .*env P2PAT_AMD_PCIE_P2P_ATOMICS=1 ' "$fr/summary.txt" || fail "gfx1201: no PCIe P2P atomics step with P2PAT_AMD_PCIE_P2P_ATOMICS=1: $(grep pcie "$fr/summary.txt")"
  fi
  # The seed's contrast: plain peer kernel reads/writes beside the atomics.
  grep -Eq '^contrast-hip-pinned +exit 0 .*copy_kernel_\(read\|write\)' "$fr/summary.txt" || fail "$gfx: no contrast step: $(grep contrast "$fr/summary.txt")"
  # Each copy metric names the engine that ran it.
  awk '/"bw_ce_[a-z_]*": *\{/ {m=1} m && /"method":/ {print; m=0}' "$fr/runs/suite/results.json" >"$out/methods.txt"
  n=$(grep -c . "$out/methods.txt")
  bad=$(grep -Ev 'memmove|SDMA|blit kernel|copy engine' "$out/methods.txt")
  [ "$n" -ge 1 ] && [ -z "$bad" ] || fail "$gfx: copy metrics without their engine (of $n): $bad"
  if ! command -v amd-smi >/dev/null; then
    grep -q 'amd-smi-static .*not installed: amd-smi' "$fr/summary.txt" || fail "$gfx: a missing tool is not one summary line"
  fi
  grep -Eq '^suite +exit 0 ' "$fr/summary.txt" || fail "$gfx: the suite step did not pass: $(grep '^suite' "$fr/summary.txt")"
  grep -q -- '--trace' "$fr/summary.txt" || fail "$gfx: the suite step does not run with --trace"
  grep -Eq '^rocm-smi-showtopo +exit 3 ' "$fr/summary.txt" || fail "$gfx: a failing step's exit status is not recorded"
  # On the host stand-in the plan shares too few cases with the AMD baseline,
  # so the gate is refused as comparing nothing (docs/GATING.md); on AMD it gates.
  grep -q 'expectations/amd-gfx942-reported' "$fr/runs/gate.log" && grep -Eq '^p2patomics: (PASS|FAIL) — |shares [0-9]+ of this run' "$fr/runs/gate.log" \
    || fail "$gfx: the gate step did not gate against the reported baseline"
  # Issue 40 (P2b), issue 50 (Q4): ROCm 6.x skips every hip.uncached case;
  # the baseline's rocm6/skips.txt is added only where the ranks reported a
  # HIP 6 runtime (the keying itself: --runtime-line, below). The host
  # stand-in reports none: no runtime line, whatever /opt/rocm/.info says.
  grep -Eq '^gate-runtime +no rank reported a HIP runtime' "$fr/summary.txt" || fail "$gfx: the gate's runtime line is not from the ranks: $(grep '^gate-runtime' "$fr/summary.txt")"
  ! grep -q 'rocm6/skips.txt' "$fr/summary.txt" || fail "$gfx: the gate adds rocm6/skips.txt though no rank reported HIP 6 ($([ $gfx = gfx1201 ] && echo 'a stale /opt/rocm/.info/version says 6.4.3'))"
  grep -qx "$id" "$fr/baseline/this-machine/cases.txt" || fail "$gfx: the new baseline lacks $id"
  echo "ok:   $gfx: archive with machine facts (io-links, cmdline, amdgpu parameters, partition, BARs, kernel log via dmesg), suite (--trace), repros$([ $gfx = gfx1201 ] && echo ', the forced fine step'), contrast, gate (runtime line from the ranks, not /opt/rocm), new baseline; copy metrics name the engine; a failing step recorded"
done

# Issue 50 (Q4): the gate's runtime line is keyed from the HIP runtime the
# ranks reported in the steps' results.json (environment.gpus[].runtime),
# the first file that has one: HIP 6.x gives rocm6, 7.x none, no HIP
# device none.
mkdir -p "$out/rt"
printf '{\n  "environment": {\n    "gpus": [\n      {\n        "runtime": "hsa 1.1 amd-ext 1.6 rocr 1.15.0"\n      }\n    ]\n  }\n}\n' >"$out/rt/hsa.json"
printf '{"environment":{"gpus":[{"name":"AMD Instinct MI300X","runtime":"hip 6.4.43484"}]}}\n' >"$out/rt/hip6.json"
printf '{\n  "environment": {\n    "gpus": [\n      {\n        "runtime": "hip 7.2.53211"\n      }\n    ]\n  }\n}\n' >"$out/rt/hip7.json"
for c in "hsa.json hip6.json|hip 6.4.43484 rocm6" "hip7.json hip6.json|hip 7.2.53211 " "missing.json hsa.json|none"; do
  files=${c%%|*} want=${c#*|}
  args=(); for f in $files; do args+=("$out/rt/$f"); done
  got=$(bash scripts/amd-first-run.sh --runtime-line "${args[@]}" 2>&1)
  [ "$got" = "$want" ] || fail "runtime line for $files: '$got', want '$want'"
done
echo "ok:   the gate's runtime line comes from the ranks' HIP runtime (6.x: rocm6; 7.x and no HIP: none)"

# Issue 25, item 9: no AMD GPU (no /dev/kfd) stops before anything runs.
PATH=$out/fakebin-gfx942:$out/fakebin:$PATH P2PAT_SPECS=$bin P2PAT_FIRST_RUN_ROOT=$out/empty-root \
  bash scripts/amd-first-run.sh "$out/nogpu" >"$out/nogpu.out" 2>"$out/nogpu.err"; rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$out/nogpu.err")" = 1 ] && [ ! -s "$out/nogpu.out" ] && [ ! -e "$out/nogpu" ] \
  && grep -q '/dev/kfd does not exist; rocminfo lists gfx942' "$out/nogpu.err" \
  || fail "no /dev/kfd: exit $rc, stderr $(cat "$out/nogpu.err"), stdout $(head -c 300 "$out/nogpu.out")"
env -i PATH=/usr/bin:/bin HOME="$HOME" "P2PAT_SPECS=$bin" "P2PAT_FIRST_RUN_ROOT=$out/empty-root" bash scripts/amd-first-run.sh "$out/nogpu" >/dev/null 2>"$out/nogpu.err"; rc=$?
if ! command -v rocminfo >/dev/null; then
  [ $rc = 2 ] && grep -q 'rocminfo not installed' "$out/nogpu.err" || fail "no rocminfo, no /dev/kfd: exit $rc, $(cat "$out/nogpu.err")"
fi
echo "ok:   no /dev/kfd: one line naming /dev/kfd and rocminfo, exit 2, nothing run"

PATH=$out/fakebin:$PATH P2PAT_SPECS=$bin bash scripts/amd-first-run.sh "$out/gfx942" >/dev/null 2>"$out/again.err"; rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$out/again.err")" = 1 ] && grep -q 'already exists' "$out/again.err" \
  || fail "a reused output folder: exit $rc, $(cat "$out/again.err")"
P2PAT_FIRST_RUN_TIMEOUT=soon bash scripts/amd-first-run.sh "$out/fr2" >/dev/null 2>"$out/knob.err"; rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$out/knob.err")" = 1 ] || fail "a bad timeout: exit $rc, $(cat "$out/knob.err")"
echo "ok:   a reused folder and a bad knob are one line, exit 2"
