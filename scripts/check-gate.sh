#!/usr/bin/env bash
# The gate, checked decision by decision on the host backend:
#  1. the host run passes its own committed baseline (expectations/host-amd64);
#  2. against expectations/host-amd64-verdicts (planted) every verdict shows
#     up where planted and the gate fails with one reason per gating case;
#  3. a baseline from another stack is refused before any case runs (one
#     line naming the folders that match, exit 2) unless --allow-stack-mismatch;
#  4. a malformed expectation file is "file:line: reason", exit 2;
#  5. --update-expectations shows what it changes and refuses to bless a
#     regression without --force.
# Every verdict is told the same way: exit status, last line, junit.xml.
set -uo pipefail
bin=${1:?usage: check-gate.sh specs.test OUTDIR}; out=${2:?}
rm -rf "$out"; mkdir -p "$out"
fail() { echo "gate check FAILED: $*"; exit 1; }

"$bin" --backend=host --expectations=expectations/host-amd64 --out="$out/ok" >"$out/ok.log" 2>&1 \
  || { tail -20 "$out/ok.log"; fail "the host run does not pass its own baseline"; }
last=$(tail -n 1 "$out/ok.log")
case $last in "p2patomics: PASS — "*" 0 unexpected"*"(gate expectations/host-amd64)") ;; *) fail "last line of a passing gated run: $last";; esac
grep -q '<testsuites name="p2patomics" tests="[0-9]*" failures="0" errors="0"' "$out/ok/junit.xml" || fail "junit.xml of a passing gate has failures"
echo "ok:   $last"

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
# unexpected-pass, regression, missing gate; flake, known-flake and expected-fail do not
last=$(tail -n 1 "$out/planted.log")
case $last in "p2patomics: FAIL — 3 unexpected ("*) ;; *) fail "last line of the planted gate: $last";; esac
f=$(grep -o '<testsuites[^>]*' "$out/planted/junit.xml")
case $f in *'failures="3" errors="0"'*) ;; *) fail "junit.xml of the planted gate: $f (want 3 failures)";; esac
echo "ok:   $last"

"$bin" --backend=host --case=host.memfd.counter.add_u64_relaxed_sys --expectations=expectations/host-riscv64-mismatch \
  --out="$out/mismatch" >/dev/null 2>"$out/mismatch.err"; rc=$?
[ $rc = 2 ] && [ "$(grep -c '' "$out/mismatch.err")" = 1 ] && grep -q riscv64 "$out/mismatch.err" \
  && grep -q 'match this machine: expectations/host-amd64' "$out/mismatch.err" \
  || fail "stack mismatch: exit $rc, stderr: $(cat "$out/mismatch.err")"
# Before the first case: the first results.json (written at start) holds no
# result and no case folder exists.
! grep -q '"id":' "$out/mismatch/results.json" 2>/dev/null && [ ! -e "$out/mismatch/cases" ] \
  || fail "stack mismatch found only after cases ran"
echo "ok:   stack mismatch -> exit 2: $(cat "$out/mismatch.err")"
"$bin" --backend=host --case=host.memfd.counter.add_u64_relaxed_sys --expectations=expectations/host-riscv64-mismatch \
  --allow-stack-mismatch --out="$out/mismatch2" >/dev/null 2>&1 || fail "--allow-stack-mismatch did not gate"
echo "ok:   --allow-stack-mismatch gates anyway"

mkdir -p "$out/bad"; printf '# stack: vendor=host arch=amd64\nhost.memfd.counter.add_u64_relaxed_sys,pass\nhost.memfd.counter.add_u64_relaxed_sys,crash\n' >"$out/bad/fails.txt"
"$bin" --backend=host --expectations="$out/bad" --out="$out/badrun" >/dev/null 2>"$out/bad.err"; rc=$?
[ $rc = 2 ] && grep -q 'fails.txt:3:' "$out/bad.err" || fail "malformed file: exit $rc, stderr: $(cat "$out/bad.err")"
echo "ok:   malformed expectations -> exit 2: $(cat "$out/bad.err")"
# A baseline that says the planted racy counter passes: this run's fail is
# a regression against it, which --update-expectations must not bless.
mkdir -p "$out/upd"; printf '# stack: vendor=host arch=amd64\nhost.memfd.planted.racy_u64_plain_sys,pass\n' >"$out/upd/fails.txt"
cp "$out/upd/fails.txt" "$out/upd.orig"
"$bin" --backend=host --case=host.memfd.planted.racy_u64_plain_sys --expectations="$out/upd" --update-expectations \
  --out="$out/updrun" >"$out/upd.log" 2>"$out/upd.err"; rc=$?
[ $rc = 1 ] && grep -q 'refuses to bless 1 regression' "$out/upd.err" && cmp -s "$out/upd/fails.txt" "$out/upd.orig" \
  && grep -q 'host.memfd.planted.racy_u64_plain_sys: pass → fail (regression)' "$out/upd.log" \
  || fail "--update-expectations over a regression: exit $rc, $(cat "$out/upd.err")"
echo "ok:   --update-expectations refuses a regression: $(cat "$out/upd.err")"
"$bin" --backend=host --case=host.memfd.planted.racy_u64_plain_sys --expectations="$out/upd" --update-expectations --force \
  --out="$out/updrun2" >/dev/null 2>&1 || fail "--update-expectations --force did not write"
! grep -q 'racy_u64_plain_sys,pass' "$out/upd/fails.txt" || fail "--force left the old entry"
echo "ok:   --force records it"
echo "gate: every decision checked"
