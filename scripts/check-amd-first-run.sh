#!/usr/bin/env bash
# The AMD first-run script's logic, checked on the host backend with a fake
# rocminfo and rocm-smi on PATH: one archive holding the machine facts, the
# suite with --trace, the three reproductions, the gate against the reported
# gfx942 baseline and a new baseline; a failing step (the fake rocm-smi
# exits 3) is recorded and does not stop it; a reused output folder and a
# bad knob are one line and exit 2.
set -uo pipefail
bin=${1:?usage: check-amd-first-run.sh specs.test OUTDIR}; out=${2:?}
case $bin in /*) ;; *) bin=$PWD/$bin ;; esac
rm -rf "$out"; mkdir -p "$out/fakebin"
out=$(cd "$out" && pwd)
fail() { echo "amd-first-run check FAILED: $*"; exit 1; }

cat >"$out/fakebin/rocminfo" <<'EOS'
#!/bin/sh
echo "ROCk module is loaded"
echo "  Name:                    gfx942 (fake rocminfo for the check)"
EOS
cat >"$out/fakebin/rocm-smi" <<'EOS'
#!/bin/sh
echo "fake rocm-smi $*"
exit 3
EOS
chmod +x "$out/fakebin/"*
id=host.memfd.counter.add_u64_relaxed_sys

PATH=$out/fakebin:$PATH P2PAT_SPECS=$bin P2PAT_FIRST_RUN_BACKEND=host P2PAT_FIRST_RUN_ARGS=--case=$id \
  bash scripts/amd-first-run.sh "$out/fr" >"$out/fr.log" 2>&1; rc=$?
[ $rc = 0 ] || { cat "$out/fr.log"; fail "exit $rc, want 0"; }
[ -s "$out/fr.tar.gz" ] || fail "no archive $out/fr.tar.gz"
grep -q "fr.tar.gz" "$out/fr.log" || fail "the script does not say which file to send"
tar -tzf "$out/fr.tar.gz" >"$out/list.txt" || fail "the archive does not list"
for f in fr/summary.txt fr/system/rocminfo.txt fr/system/rocm-smi-showtopo.txt fr/system/libraries.txt \
  fr/kernel-log.txt fr/runs/suite/results.json fr/runs/repro-hip-uncached/results.json \
  fr/runs/repro-hip-pinned/results.json fr/runs/repro-hsa-fine/results.json fr/runs/gate.log \
  fr/baseline/this-machine/cases.txt; do
  grep -qx "$f" "$out/list.txt" || fail "the archive lacks $f"
done
grep -q 'fake rocminfo' "$out/fr/system/rocminfo.txt" || fail "rocminfo's output is not recorded"
grep -q 'fake rocm-smi --showtopo' "$out/fr/system/rocm-smi-showtopo.txt" || fail "rocm-smi --showtopo is not recorded"
grep -q '^ulimit -n' "$out/fr/system/libraries.txt" || fail "the limits are not recorded"
if ! command -v amd-smi >/dev/null; then
  grep -q 'amd-smi-static .*not installed: amd-smi' "$out/fr/summary.txt" || fail "a missing tool is not one summary line"
fi
grep -Eq '^suite +exit 0 ' "$out/fr/summary.txt" || fail "the suite step did not pass: $(grep '^suite' "$out/fr/summary.txt")"
grep -q -- '--trace' "$out/fr/summary.txt" || fail "the suite step does not run with --trace"
grep -Eq '^rocm-smi-showtopo +exit 3 ' "$out/fr/summary.txt" || fail "a failing step's exit status is not recorded"
# On the host stand-in the plan shares no case with the AMD baseline, so the
# gate is refused as comparing nothing (docs/GATING.md); on AMD it gates.
grep -q 'expectations/amd-gfx942-reported' "$out/fr/runs/gate.log" && grep -Eq '^p2patomics: (PASS|FAIL) — |shares [0-9]+ of this run' "$out/fr/runs/gate.log" \
  || fail "the gate step did not gate against the reported baseline"
grep -qx "$id" "$out/fr/baseline/this-machine/cases.txt" || fail "the new baseline lacks $id"
echo "ok:   archive with machine facts, suite (--trace), 3 repros, gate, new baseline; a failing step recorded"

PATH=$out/fakebin:$PATH P2PAT_SPECS=$bin bash scripts/amd-first-run.sh "$out/fr" >/dev/null 2>"$out/again.err"; rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$out/again.err")" = 1 ] && grep -q 'already exists' "$out/again.err" \
  || fail "a reused output folder: exit $rc, $(cat "$out/again.err")"
P2PAT_FIRST_RUN_TIMEOUT=soon bash scripts/amd-first-run.sh "$out/fr2" >/dev/null 2>"$out/knob.err"; rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$out/knob.err")" = 1 ] || fail "a bad timeout: exit $rc, $(cat "$out/knob.err")"
echo "ok:   a reused folder and a bad knob are one line, exit 2"
