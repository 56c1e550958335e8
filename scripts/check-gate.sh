#!/usr/bin/env bash
# The gate, checked decision by decision on the host backend:
#  1. the host run passes its own committed baseline (expectations/host-amd64);
#  2. against expectations/host-amd64-verdicts (planted) every verdict shows
#     up where planted and the gate fails with one reason per gating case;
#  3. a baseline from another stack is refused (one line, exit 2) unless
#     --allow-stack-mismatch;
#  4. a malformed expectation file is "file:line: reason", exit 2.
set -uo pipefail
bin=${1:?usage: check-gate.sh specs.test OUTDIR}; out=${2:?}
rm -rf "$out"; mkdir -p "$out"
fail() { echo "gate check FAILED: $*"; exit 1; }

"$bin" --backend=host --expectations=expectations/host-amd64 --out="$out/ok" >"$out/ok.log" 2>&1 \
  || { tail -20 "$out/ok.log"; fail "the host run does not pass its own baseline"; }
grep -q '^gate: PASS' "$out/ok.log" || fail "no 'gate: PASS' line"

P2PAT_INTERNAL_FLAKY=1 "$bin" --backend=host --expectations=expectations/host-amd64-verdicts \
  --out="$out/planted" >"$out/planted.log" 2>&1; rc=$?
[ $rc = 1 ] || { tail -20 "$out/planted.log"; fail "planted baseline gave exit $rc, want 1"; }
# id -> verdict, straight from results.json
awk -F'"' '/^ *"id":/ {id=$4} /^ *"verdict":/ {print id, $4}' "$out/planted/results.json" >"$out/verdicts.txt"
want() {
  grep -qx "$1 $2" "$out/verdicts.txt" || fail "$1: verdict $(grep "^$1 " "$out/verdicts.txt" | cut -d' ' -f2), want $2"
  echo "ok:   $1 -> $2"
}
want host.memfd.canary.panic expected-fail
want host.memfd.counter.add_u64_relaxed_sys unexpected-pass
want host.memfd.planted.racy_u64_plain_sys regression
want host.memfd.counter.sub_u64_relaxed_sys known-flake
want host.memfd.canary.flaky flake
want host.memfd.counter.ghost_u64_relaxed_sys missing
want host.memfd.counter.add_u32_relaxed_sys expected
n=$(grep -c '^gate: ' "$out/planted.log")
# unexpected-pass, regression, missing gate; flake, known-flake and expected-fail do not
[ "$n" = 4 ] || { grep '^gate' "$out/planted.log"; fail "want 3 reasons + FAIL, got $n gate lines"; }
grep '^gate' "$out/planted.log"

"$bin" --backend=host --case=host.memfd.counter.add_u64_relaxed_sys --expectations=expectations/host-riscv64-mismatch \
  --out="$out/mismatch" >/dev/null 2>"$out/mismatch.err"; rc=$?
[ $rc = 2 ] && [ "$(grep -c '' "$out/mismatch.err")" = 1 ] && grep -q riscv64 "$out/mismatch.err" \
  || fail "stack mismatch: exit $rc, stderr: $(cat "$out/mismatch.err")"
echo "ok:   stack mismatch -> exit 2: $(cat "$out/mismatch.err")"
"$bin" --backend=host --case=host.memfd.counter.add_u64_relaxed_sys --expectations=expectations/host-riscv64-mismatch \
  --allow-stack-mismatch --out="$out/mismatch2" >/dev/null 2>&1 || fail "--allow-stack-mismatch did not gate"
echo "ok:   --allow-stack-mismatch gates anyway"

mkdir -p "$out/bad"; printf '# stack: vendor=host arch=amd64\nhost.memfd.counter.add_u64_relaxed_sys,pass\nhost.memfd.counter.add_u64_relaxed_sys,crash\n' >"$out/bad/fails.txt"
"$bin" --backend=host --expectations="$out/bad" --out="$out/badrun" >/dev/null 2>"$out/bad.err"; rc=$?
[ $rc = 2 ] && grep -q 'fails.txt:3:' "$out/bad.err" || fail "malformed file: exit $rc, stderr: $(cat "$out/bad.err")"
echo "ok:   malformed expectations -> exit 2: $(cat "$out/bad.err")"
echo "gate: every decision checked"
