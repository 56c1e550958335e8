#!/usr/bin/env bash
# Gate the host suite against the committed baseline (must pass), then plant
# two departures in a copy of the baseline and show each fails the gate:
# a case the baseline ran that no longer exists (missing), and a baseline
# failure that now passes (unexpected-pass: improvements gate until the
# baseline is updated).
set -uo pipefail
bin=${1:?usage: check-gate.sh specs.test OUTDIR}; out=${2:?}
base=expectations/host-amd64
rm -rf "$out"; mkdir -p "$out"
if ! "$bin" --backend=host --expectations=$base --out="$out/ok" >"$out/ok.log" 2>&1; then
  tail -20 "$out/ok.log"; echo "gate: the host run does not pass its own baseline"; exit 1
fi
grep '^gate: PASS' "$out/ok.log" || { echo "gate: no PASS line"; exit 1; }
planted=$out/planted; cp -r $base "$planted"
echo "host.memfd.counter.ghost_u64_relaxed_sys" >> "$planted/cases.txt"
printf '# planted: pretend this failed before\nhost.memfd.counter.add_u64_relaxed_sys,fail\n' >> "$planted/fails.txt"
"$bin" --backend=host --expectations="$planted" --out="$out/bad" >"$out/bad.log" 2>&1; rc=$?
if [ $rc != 1 ]; then tail -20 "$out/bad.log"; echo "gate: planted departures gave exit $rc, want 1"; exit 1; fi
grep -q 'missing.*ghost' "$out/bad.log" && grep -q 'host.memfd.counter.add_u64_relaxed_sys' "$out/bad.log" \
  || { grep '^gate' "$out/bad.log"; echo "gate: reasons do not name both planted cases"; exit 1; }
grep '^gate' "$out/bad.log"
echo "gate: baseline passes; planted missing case and unexpected pass fail the gate"
