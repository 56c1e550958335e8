#!/usr/bin/env bash
# The gate, checked decision by decision on the host backend:
#  1. the host run passes its own committed baseline (expectations/host-amd64);
#  2. against expectations/host-amd64-verdicts (planted) every verdict shows
#     up where planted and the gate fails with one reason per gating case;
#  3. a baseline from another stack is refused before any case runs (one
#     line naming the folders that match, exit 2) unless --allow-stack-mismatch;
#  4. a malformed expectation file is "file:line: reason", exit 2;
#  5. --update-expectations shows what it changes and refuses to bless a
#     regression without --force, and refuses another stack's folder or a
#     backend fallback before the first case (exit 2);
#  6. a rank SIGKILLed during a case that passes on the rerun is new-flake
#     (FAIL, exit 1), and PASS with "1 known flake" once flakes.txt lists it;
#  7. SIGINT mid-run is INTERRUPTED (exit 4), unfinished cases not run;
#  8. a baseline sharing too few cases with the plan is refused before the
#     first case, --allow-stack-mismatch or not;
#  9. a printed repro line runs as printed from another directory.
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
# The run's own junit.xml is the only one in its --out: the SIGTERM canary's
# child run leaves none for a collector of out/**/junit.xml to take.
[ "$(find "$out/ok" -name junit.xml)" = "$out/ok/junit.xml" ] || fail "junit.xml files besides the run's: $(find "$out/ok" -name junit.xml)"
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
want host.memfd.canary.flaky new-flake
want host.memfd.counter.ghost_u64_relaxed_sys missing
want host.memfd.counter.add_u32_relaxed_sys expected
# unexpected-pass, regression, missing and new-flake gate; known-flake and expected-fail do not
last=$(tail -n 1 "$out/planted.log")
case $last in "p2patomics: FAIL — 4 unexpected ("*"1 new-flake"*) ;; *) fail "last line of the planted gate: $last";; esac
f=$(grep -o '<testsuites[^>]*' "$out/planted/junit.xml")
case $f in *'failures="4" errors="0"'*) ;; *) fail "junit.xml of the planted gate: $f (want 4 failures)";; esac
echo "ok:   $last"
# A gate failure's repro.sh carries its baseline (an absolute path) and so
# reproduces the verdict, run from another directory: exit 1, the
# regression (issue 38 item 5: without it the case met its spec, PASS, 0).
rs=$out/planted/cases/host.memfd.planted.racy_u64_plain_sys/repro.sh root=$PWD
grep -qF -e "--expectations=$root/expectations/host-amd64-verdicts " -e "--expectations='$root/expectations/host-amd64-verdicts' " "$rs" || fail "repro.sh lacks the gate's baseline: $(grep -- --case= "$rs")"
(cd / && P2PAT_OUT="$out/planted-repro" sh "$rs" >"$out/planted-repro.log" 2>&1); rc=$?
last=$(tail -n 1 "$out/planted-repro.log")
[ $rc = 1 ] && case $last in "p2patomics: FAIL — 1 regression: host.memfd.planted.racy_u64_plain_sys"*) true;; *) false;; esac \
  || fail "the planted regression's repro.sh: exit $rc, last line $last (want the regression, exit 1)"
echo "ok:   repro.sh of the planted regression, from /: exit 1, $last"
# --allow-new-flakes: the planted flake is reported (flake), not gating (the
# run still fails on the planted unexpected pass and missing case).
P2PAT_INTERNAL_FLAKY=1 "$bin" --backend=host --expectations=expectations/host-amd64-verdicts --allow-new-flakes \
  --out="$out/planted-allow" >"$out/planted-allow.log" 2>&1; rc=$?
last=$(tail -n 1 "$out/planted-allow.log")
[ $rc = 1 ] && grep -q '"id": "host.memfd.canary.flaky"' "$out/planted-allow/results.json" \
  && awk -F'"' '/^ *"id":/ {id=$4} /^ *"verdict":/ {print id, $4}' "$out/planted-allow/results.json" | grep -qx 'host.memfd.canary.flaky flake' \
  && case $last in "p2patomics: FAIL — "*"new-flake"*) false;; "p2patomics: FAIL — "*) true;; *) false;; esac \
  || fail "--allow-new-flakes: exit $rc, last line $last"
echo "ok:   --allow-new-flakes: flake, not gating: $last"

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

# A rank SIGKILLed during a case whose rerun passes: new-flake, FAIL, exit 1,
# listed with both attempts; with the case in flakes.txt: PASS, "1 known
# flake" on the verdict line. The sleep case (P2PAT_INTERNAL_SLEEP_CASE)
# keeps rank 1 in the case for 30 s; rank 1 is killed once it is in it.
cp -r expectations/host-amd64 "$out/base-sleep"; echo host.memfd.canary.sleep >>"$out/base-sleep/cases.txt"
cp -r "$out/base-sleep" "$out/base-known"; printf '# the sleep case, planted as a known flake\nhost\.memfd\.canary\.sleep\n' >"$out/base-known/flakes.txt"
killrun() { # BASE OUT: run the sleep case gated against BASE, SIGKILL rank 1 mid-case
  P2PAT_INTERNAL_SLEEP_CASE=1 "$bin" --backend=host --case=host.memfd.canary.sleep --expectations="$1" \
    --out="$2" >"$2.log" 2>&1 & local pid=$! k="" i
  # Rank 1 names its sleeping thread p2pat-sleep once the case is under way.
  for i in $(seq 1 1200); do
    for c in $(cat /proc/$pid/task/*/children 2>/dev/null); do
      grep -qx p2pat-sleep /proc/$c/task/*/comm 2>/dev/null && k=$c
    done
    [ -n "$k" ] && break; sleep 0.05
  done
  [ -n "$k" ] || { kill $pid; wait $pid; echo "no rank reached the sleep" >>"$2.log"; return 99; }
  kill -KILL "$k"; wait $pid
}
killrun "$out/base-sleep" "$out/kill-new" & p1=$!
killrun "$out/base-known" "$out/kill-known" & p2=$!
wait $p1; rc1=$?; wait $p2; rc2=$?
last=$(tail -n 1 "$out/kill-new.log")
[ $rc1 = 1 ] && case $last in "p2patomics: FAIL — 1 new-flake: host.memfd.canary.sleep pass → crash, rerun pass"*) true;; *) false;; esac \
  && grep -q '"rerun": {' "$out/kill-new/results.json" \
  || { tail -5 "$out/kill-new.log"; fail "SIGKILL of a rank, rerun passing: exit $rc1, last line: $last (want FAIL — 1 new-flake, exit 1)"; }
echo "ok:   $last"
last=$(tail -n 1 "$out/kill-known.log")
[ $rc2 = 0 ] && case $last in "p2patomics: PASS — 1 case, 0 unexpected, 1 known flake ("*) true;; *) false;; esac \
  || { tail -5 "$out/kill-known.log"; fail "SIGKILL of a known-flaky case: exit $rc2, last line: $last (want PASS with 1 known flake)"; }
echo "ok:   $last"

# SIGINT mid-run: INTERRUPTED, exit 4; the cases it did not finish are not
# run (junit <skipped>), not regressions; the run itself is junit's one
# <error> (p2patomics.run: a CI page must not read an interrupted run green).
P2PAT_INTERNAL_SLEEP_CASE=1 "$bin" --backend=host --expectations="$out/base-sleep" --out="$out/int" >"$out/int.log" 2>&1 & pid=$!
for i in $(seq 1 600); do grep -q '^\[ *5/' "$out/int.log" && break; sleep 0.05; done
kill -INT $pid; wait $pid; rc=$?
last=$(tail -n 1 "$out/int.log")
f=$(grep -o '<testsuites[^>]*' "$out/int/junit.xml")
[ $rc = 4 ] && case $last in "p2patomics: INTERRUPTED — "*" of "*" cases ran, 0 unexpected so far (SIGINT"*) true;; *) false;; esac \
  && case $f in *'failures="0" errors="1"'*) true;; *) false;; esac \
  && grep -q '<error message="interrupted: exit 4" type="interrupted">' "$out/int/junit.xml" \
  && grep -q '"not_run": \[' "$out/int/results.json" && ! grep -q '"verdict": "regression"' "$out/int/results.json" \
  || { tail -5 "$out/int.log"; fail "SIGINT mid-run: exit $rc, last line: $last, junit $f"; }
echo "ok:   $last"

# A baseline that shares (almost) no case with the plan: refused before the
# first case, even with --allow-stack-mismatch.
"$bin" --backend=host --expectations=expectations/nvidia-sm_90-580 --allow-stack-mismatch \
  --out="$out/noshare" >/dev/null 2>"$out/noshare.err"; rc=$?
[ $rc = 2 ] && [ "$(grep -c '' "$out/noshare.err")" = 1 ] && grep -q 'shares 0 of' "$out/noshare.err" \
  && ! grep -q '"id":' "$out/noshare/results.json" 2>/dev/null \
  || fail "baseline sharing no case: exit $rc, stderr: $(cat "$out/noshare.err")"
echo "ok:   no shared case -> exit 2: $(cat "$out/noshare.err")"

# Updating another stack's baseline, or after a backend fallback: refused
# before the first case (exit 2, folder untouched) unless the folder is
# new or --force.
cp -r expectations/nvidia-sm_90-580 "$out/nv"; cp -r "$out/nv" "$out/nv.orig"
"$bin" --backend=host --case=host.memfd.counter.add_u64_relaxed_sys --expectations="$out/nv" --update-expectations \
  --out="$out/upd-nv" >/dev/null 2>"$out/upd-nv.err"; rc=$?
[ $rc = 2 ] && [ "$(grep -c '' "$out/upd-nv.err")" = 1 ] && grep -q "stack is not this run's" "$out/upd-nv.err" \
  && diff -r "$out/nv" "$out/nv.orig" >/dev/null && [ ! -e "$out/upd-nv/cases" ] \
  || fail "--update-expectations into another stack's folder: exit $rc, $(cat "$out/upd-nv.err")"
echo "ok:   another stack's baseline -> exit 2: $(cat "$out/upd-nv.err")"
"$bin" --backend=host --case=host.memfd.counter.add_u64_relaxed_sys --expectations="$out/nv-new" --update-expectations \
  --out="$out/upd-new" >/dev/null 2>&1 && grep -q 'vendor=host' "$out/nv-new/cases.txt" || fail "--update-expectations into a new folder did not write"
echo "ok:   a new folder is written"
if ! ls /dev/nvidia[0-9]* /dev/kfd >/dev/null 2>&1; then
  cp -r expectations/host-amd64 "$out/fb"; cp -r "$out/fb" "$out/fb.orig"
  "$bin" --backend=auto --case=host.memfd.counter.add_u64_relaxed_sys --expectations="$out/fb" --update-expectations \
    --out="$out/upd-fb" >/dev/null 2>"$out/upd-fb.err"; rc=$?
  [ $rc = 2 ] && grep -q 'fell back to the host backend' "$out/upd-fb.err" && diff -r "$out/fb" "$out/fb.orig" >/dev/null \
    || fail "--update-expectations after a fallback to host: exit $rc, $(cat "$out/upd-fb.err")"
  echo "ok:   backend fallback -> exit 2: $(cat "$out/upd-fb.err")"
  "$bin" --backend=auto --case=host.memfd.counter.add_u64_relaxed_sys --expectations="$out/fb" --update-expectations --force \
    --out="$out/upd-fb2" >/dev/null 2>&1 || fail "--update-expectations --force after a fallback did not write"
  echo "ok:   --force records it"
fi

# A printed repro runs as printed from another directory: the line in
# results.json (absolute binary path) and stdout's "repro: sh …/repro.sh".
repro=$(awk -F'"' '/^ *"id": "host.memfd.planted.racy_u64_plain_sys"/ {f=1} f && /^ *"repro":/ {print $4; exit}' "$out/planted/results.json")
case $repro in /*|"'/"*) ;; *) fail "repro in results.json is not absolute: $repro";; esac
(cd / && eval "$repro --out=$(printf %q "$out/repro1")") >"$out/repro1.log" 2>&1
grep -q '"id": "host.memfd.planted.racy_u64_plain_sys"' "$out/repro1/results.json" || fail "the repro line did not run from /: $repro"
sh_line=$(grep -m1 -o "repro: sh '\?/.*/repro\.sh'\?" "$out/kill-new.log" | sed 's/^repro: //')
[ -n "$sh_line" ] || fail "no absolute 'repro: sh …/repro.sh' line on stdout"
(cd / && eval "P2PAT_INTERNAL_SLEEP_CASE=1 timeout 120 $sh_line --out=$(printf %q "$out/repro2")") >"$out/repro2.log" 2>&1
grep -q '"id": "host.memfd.canary.sleep"' "$out/repro2/results.json" || fail "'$sh_line' did not run from /"
echo "ok:   repro lines run from /: $repro; $sh_line"
echo "gate: every decision checked"
