#!/usr/bin/env bash
# Every bad flag or value must give exactly one line on stderr and exit 2,
# never Go's flag usage dump. A planted "exit 0" or a two-line error fails.
set -uo pipefail
bin=${1:?usage: check-cli.sh path/to/specs.test}
fail=0
# check WANT [VAR=value...] -- args: the label names the environment and
# quotes each argument, so every check is one line however odd its value.
check() {
  local want=$1; shift
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift
  local label
  label=$( { [ ${#envs[@]} -gt 0 ] && printf '%q ' "${envs[@]}"; [ $# -gt 0 ] && printf '%q ' "$@"; } | sed 's/ $//')
  err=$(env P2PAT_OUT=/tmp/p2pat-cli-$$ "${envs[@]}" "$bin" "$@" 2>&1 >/dev/null); rc=$?
  lines=$(printf '%s' "$err" | grep -c '' || true)
  if [ "$rc" != "$want" ] || [ "$lines" != 1 ]; then
    echo "FAIL: $label -> exit $rc, $lines stderr lines: $err"; fail=1
  else
    echo "ok:   $label -> exit $rc: $err"
  fi
}
check 2 -- --backend=nope
check 2 -- --alloc=pinned --backend=host
check 2 -- --alloc=bogus
check 2 -- --ranks=1
check 2 -- --ranks=x
check 2 -- --no-such-flag
check 2 -- --case=host.memfd.counter.nope
check 2 -- --case=Bad/Id
check 2 -- --pinned --uncached
check 2 -- --repeat=0
check 2 -- --clocks=fast
check 2 -- --pairs=sometimes
check 2 -- --clocks=-1ms
check 2 P2PAT_CLOCKS=sometimes --
check 2 -- --update-expectations
check 2 -- --expectations=/nonexistent/dir
check 2 -- --backend=host --ginkgo.label-filter='nosuchlabel'
check 2 -- straydArg
check 2 P2PAT_RANKS=0 --
# Issue 18: an unusable --out before the first case, testing's own flags,
# values that would split the line or drive the terminal.
check 2 -- --backend=host --out=/dev/full
check 2 -- --backend=host --out=/etc/hostname/x
check 2 -- -test.count=2
check 2 -- -test.shuffle=on
check 2 -- --backend="$(printf 'a\nb\033[31m')"
check 2 -- --backend=host --ginkgo.label-filter='(('
check 2 P2PAT_TRACE=maybe --
# Issue 24: the driver-fault injector's switch is checked with the flags.
check 2 -- --backend=host --internal-inject=drop:no_such_kernel
check 2 -- --backend=host --internal-inject=fail:memfd_create
check 2 P2PAT_INTERNAL_INJECT=drop-every:0 -- --backend=host
check 2 -- --backend=host --internal-inject=drop-every:2 --update-expectations --expectations=/tmp/p2pat-cli-x
# An explicit backend that cannot load (no GPU here): one line with a hint,
# exit 2, before any case runs.
check 2 -- --backend=cuda
check 2 -- --backend=hip
# Issue 29: what go test and the Ginkgo CLI always pass is accepted, and
# -test.timeout stops the run (results written, exit 4: interrupted) before testing's
# own alarm would panic and lose them.
co=/tmp/p2pat-cli-gotest-$$
"$bin" -test.timeout=10m0s -test.count=1 -test.v=true -test.paniconexit0 --test.timeout=0 --backend=host \
  --case=host.memfd.counter.add_u64_relaxed_sys --out="$co" >"$co.log" 2>&1; rc=$?
if [ $rc = 0 ] && tail -n 1 "$co.log" | grep -q '^p2patomics: PASS — 1 case'; then
  echo "ok:   -test.timeout=10m0s -test.count=1 -test.v=true -test.paniconexit0 --test.timeout=0 -> exit 0, PASS"
else
  echo "FAIL: go test's flags: exit $rc, last line: $(tail -n 1 "$co.log")"; fail=1
fi
rm -rf "$co" "$co.log" "$co.prev"
# Issue 49 B9: Ginkgo's own suite timeout is the same interruption (it
# skipped the specs left: 45 "pass -> incomplete" regressions, exit 1).
# -test.timeout takes the same path (run.StopAfter); one too short to run
# is refused below (S1).
"$bin" --ginkgo.timeout=3s --backend=host --out="$co" >"$co.log" 2>&1; rc=$?
if [ $rc = 4 ] && grep -q '^p2patomics: --ginkgo.timeout=3s reached: stopping ranks, writing results' "$co.log" \
   && grep -q '"incomplete"' "$co/results.json" && ! grep -q '"regression"' "$co/results.json" \
   && tail -n 1 "$co.log" | grep -q '^p2patomics: INTERRUPTED — .*--ginkgo.timeout=3s'; then
  echo "ok:   --ginkgo.timeout=3s on the whole suite -> exit 4 (interrupted), results.json written, unfinished cases not run"
else
  echo "FAIL: --ginkgo.timeout=3s: exit $rc: $(grep -m1 -e 'timed out' -e 'reached' "$co.log"); $(tail -n 1 "$co.log")"; fail=1
fi
rm -rf "$co" "$co.log" "$co.prev"
# --list reads the catalogue: the CUDA and HIP ids list on this GPU-less
# machine, where --backend=cuda alone cannot load.
for sel in "--backend=cuda" "--backend=hip --uncached"; do
  # shellcheck disable=SC2086
  l=$("$bin" $sel --list 2>/dev/null); rc=$?
  be=${sel#--backend=}; be=${be%% *}
  if [ $rc = 0 ] && [ "$(printf '%s\n' "$l" | grep -c "^$be\.")" -gt 0 ] && ! printf '%s\n' "$l" | grep -qv "^$be\."; then
    echo "ok:   $sel --list -> $(printf '%s\n' "$l" | grep -c '') ids, no driver loaded"
  else
    echo "FAIL: $sel --list: exit $rc: $(printf '%s\n' "$l" | head -2)"; fail=1
  fi
done
# Issue 26: Ginkgo's retries, Ginkgo's parallel settings and testing's
# output files are one line, exit 2, before the first case.
check 2 -- --backend=host --ginkgo.flake-attempts=2
check 2 -- --backend=host --ginkgo.parallel.process=2
check 2 -- --backend=host --ginkgo.parallel.total=0
check 2 -- --backend=host -test.memprofile=/nonexistent/x
check 2 -- --backend=host -test.blockprofile=/dev/full
check 2 -- --backend=host -test.fuzz=X
# Issue 37 item 6: Ginkgo's report files are tried before the first case
# (Ginkgo wrote nothing and the run exited 0; a missing folder was created
# as root), and -test.run that selects no test is refused (it exited 0
# with the previous run's results.json in --out, looking current).
check 2 -- --backend=host --ginkgo.junit-report=/proc/nope/x.xml
check 2 -- --backend=host --ginkgo.json-report=/dev/full
check 2 -- --backend=host --ginkgo.teamcity-report=/proc/x
check 2 -- --backend=host -test.run=Nothing
check 2 -- --backend=host '-test.run=^$'
# A Ginkgo report that fails after the run (its folder is a file by then)
# is exit 3, one line naming it.
go3=/tmp/p2pat-cli-ginkgo-$$
err=$("$bin" --backend=host --case=host.memfd.counter.add_u64_relaxed_sys --out="$go3" --ginkgo.json-report="$go3/results.json/g.json" 2>&1 >"$go3.log"); rc=$?
# Issue 49 U16: and stdout has no testing "PASS" on this exit 3.
if [ $rc = 3 ] && [ "$(printf '%s' "$err" | grep -c '')" = 1 ] && printf '%s' "$err" | grep -q -- "--ginkgo.json-report=$go3/results.json/g.json" && ! grep -q '^PASS$' "$go3.log"; then
  echo "ok:   a Ginkgo report that cannot be written after the run -> exit 3: $err"
else
  echo "FAIL: a Ginkgo report that cannot be written after the run: exit $rc: $err"; fail=1
fi
rm -rf "$go3" "$go3.prev" "$go3.log"
# A passing run prints no --- FAIL, from the repository root and from
# anywhere else (the binary's own Go tests read the source tree; they ran
# relative to specs/ and failed in every run from the root).
babs=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
for wd in "$(dirname "$0")/.." /; do
  lo=/tmp/p2pat-cli-anywhere-$$
  (cd "$wd" && "$babs" --backend=host --case=host.memfd.counter.add_u64_relaxed_sys --out="$lo" >"$lo.log" 2>&1); rc=$?
  if [ $rc = 0 ] && ! grep -q -e '--- FAIL' -e '^FAIL' "$lo.log" && tail -n 1 "$lo.log" | grep -q '^p2patomics: PASS — 1 case'; then
    echo "ok:   a passing run from $(cd "$wd" && pwd) -> exit 0, no --- FAIL"
  else
    echo "FAIL: a run from $(cd "$wd" && pwd): exit $rc: $(grep -m2 -e '--- FAIL' -e '^p2patomics' "$lo.log" | paste -sd' ')"; fail=1
  fi
  rm -rf "$lo" "$lo.log" "$lo.prev"
done
# A failing Go test in specs/ (the planted TestPlantedFailure) fails the
# suite binary before --out is touched: exit 1, the test named.
po=/tmp/p2pat-cli-planted-$$
err=$(P2PAT_PLANT_FAILING_TEST=1 "$bin" --backend=host --case=host.memfd.counter.add_u64_relaxed_sys --out="$po" 2>&1 >/dev/null); rc=$?
if [ $rc = 1 ] && printf '%s\n' "$err" | tail -n 1 | grep -q "^p2patomics: FAIL — this suite binary's own Go tests failed (TestPlantedFailure)" && [ ! -e "$po" ]; then
  echo "ok:   a failing Go test in specs/ -> exit 1, nothing ran: $(printf '%s\n' "$err" | tail -n 1)"
else
  echo "FAIL: a failing Go test in specs/: exit $rc, --out $(ls -d "$po" 2>/dev/null || echo untouched): $(printf '%s\n' "$err" | tail -n 1)"; fail=1
fi
rm -rf "$po" "$po.prev"
# Issue 37 item 7: --out two levels under a folder another user owns is
# refused (that user could swap the parent for a link mid-run); as root.
if [ "$(id -u)" = 0 ]; then
  ev=$(mktemp -d /tmp/p2pat-cli-evil-XXXXXX); mkdir -p "$ev/evil/sub"; chown 65534:65534 "$ev/evil"
  check 2 -- --backend=host --out="$ev/evil/sub/o"
  [ -e "$ev/evil/sub/o" ] && { echo "FAIL: --out under a foreign grandparent was created"; fail=1; }
  rm -rf "$ev"
fi
# Every refusal comes before --out is touched: a good run, then two usage
# errors on its --out, leave the good run where it was (issue 25 item 6).
ko=/tmp/p2pat-cli-keep-$$
"$bin" --backend=host --case=host.memfd.counter.add_u64_relaxed_sys --out="$ko" >/dev/null 2>&1
"$bin" --backend=host --case=host.memfd.counter.add_u64_relaxed_sy --out="$ko" >/dev/null 2>&1; rc1=$?
"$bin" --backend=host --ginkgo.label-filter=nosuchlabel --out="$ko" >/dev/null 2>&1; rc2=$?
if [ $rc1 = 2 ] && [ $rc2 = 2 ] && grep -q '"id": "host.memfd.counter.add_u64_relaxed_sys"' "$ko/results.json" 2>/dev/null && [ ! -e "$ko.prev" ]; then
  echo "ok:   two usage errors after a good run -> exit 2 twice, the good run still in --out"
else
  echo "FAIL: two usage errors after a good run: exit $rc1 $rc2, --out $(ls "$ko" 2>&1 | head -3 | tr '\n' ' '), .prev $(ls -d "$ko.prev" 2>/dev/null)"; fail=1
fi
# Issue 49 B1, S1, B9, -test.list: with a suite flag, testing's and
# Ginkgo's selections that leave the suite out or cut it short are one
# line, exit 2, the good run still in --out (at 6615a8b: go's PASS, exit 0,
# the old results.json looking current; or 134 "pass -> incomplete"
# regressions and the good run rotated out; or a panic after rotating).
for a in '-test.run=TestSpecs.' -test.run=TestLabelsAreDeclared -test.skip=TestSpecs -test.skip=. '-test.list=.*' \
         -test.timeout=1ms --test.timeout=1ms --ginkgo.focus-file=nonexist.go --ginkgo.skip-file=specs; do
  err=$("$bin" --backend=host --case=host.memfd.counter.add_u64_relaxed_sys --out="$ko" "$a" 2>&1 >/dev/null); rc=$?
  if [ $rc = 2 ] && [ "$(printf '%s' "$err" | grep -c '')" = 1 ] && printf '%s' "$err" | grep -q 'nothing ran, --out untouched$' \
     && grep -q '"id": "host.memfd.counter.add_u64_relaxed_sys"' "$ko/results.json" 2>/dev/null && [ ! -e "$ko.prev" ]; then
    echo "ok:   $a -> exit 2, one line, the good run still in --out: $err"
  else
    echo "FAIL: $a after a good run: exit $rc, .prev $(ls -d "$ko.prev" 2>/dev/null): $err"; fail=1
  fi
done
rm -rf "$ko" "$ko.prev"
# Issue 49 B3: the own Go tests run whenever the suite runs, whatever
# -test.run/-test.skip say (-test.run=TestSpecs, the natural way to
# select the suite, skipped them: the planted failing test read PASS).
for a in -test.run=TestSpecs -test.skip=TestPlantedFailure; do
  err=$(P2PAT_PLANT_FAILING_TEST=1 "$bin" --backend=host --case=host.memfd.counter.add_u64_relaxed_sys --out="$ko" "$a" 2>&1 >/dev/null); rc=$?
  if [ $rc = 1 ] && printf '%s\n' "$err" | tail -n 1 | grep -q "^p2patomics: FAIL — this suite binary's own Go tests failed (TestPlantedFailure)" && [ ! -e "$ko" ]; then
    echo "ok:   $a with a failing own Go test -> exit 1, nothing ran"
  else
    echo "FAIL: $a with a failing own Go test: exit $rc: $(printf '%s\n' "$err" | tail -n 1)"; fail=1
  fi
  rm -rf "$ko" "$ko.prev"
done
# Issue 49 B11/S2: an own-tests child the machine ends (here SIGKILL, as
# the OOM killer or a thread limit would) is the environment, exit 5, not
# FAIL (1: it read "own Go tests failed") or usage (2).
err=$(P2PAT_PLANT_FAILING_TEST=signal "$bin" --backend=host --case=host.memfd.counter.add_u64_relaxed_sys --out="$ko" 2>&1 >/dev/null); rc=$?
if [ $rc = 5 ] && printf '%s\n' "$err" | tail -n 1 | grep -q "^p2patomics: ENVIRONMENT — .*(killed by SIGKILL): nothing ran, --out untouched" && [ ! -e "$ko" ]; then
  echo "ok:   an own-tests child killed by a signal -> exit 5: $(printf '%s\n' "$err" | tail -n 1)"
else
  echo "FAIL: an own-tests child killed by a signal: exit $rc: $(printf '%s\n' "$err" | tail -n 1)"; fail=1
fi
rm -rf "$ko" "$ko.prev"
# Issue 49 "Ginkgo is heard": a spec Ginkgo skips after the plan (here
# --ginkgo.fail-fast after the first case fails under corrupt-read) is not
# run with Ginkgo's reason and the run INTERRUPTED, exit 4 (it was "pass ->
# incomplete", a regression, exit 1).
gf=/tmp/p2pat-cli-failfast-$$
"$bin" --backend=host --ginkgo.focus='counter\.add_u64_relaxed_(sys|dev)$' --internal-inject=corrupt-read:0 --ginkgo.fail-fast --out="$gf" >"$gf.log" 2>&1; rc=$?
if [ $rc = 4 ] && grep -q '"detail": "not run: Ginkgo skipped its spec: --ginkgo.fail-fast after a failed spec"' "$gf/results.json" \
   && tail -n 1 "$gf.log" | grep -q '^p2patomics: INTERRUPTED — 1 of 2 cases ran.*--ginkgo.fail-fast'; then
  echo "ok:   --ginkgo.fail-fast after a failed case -> exit 4, the skipped spec not run with Ginkgo's reason"
else
  echo "FAIL: --ginkgo.fail-fast: exit $rc: $(tail -n 1 "$gf.log")"; fail=1
fi
rm -rf "$gf" "$gf.log" "$gf.prev"
# ... and a case body that panics (the planted body_panics) is that case's
# fail with the panic and where, its folder holding Ginkgo's report (it was
# "incomplete: did not run to the end", the panic only in ginkgo.log).
pn=/tmp/p2pat-cli-panic-$$
P2PAT_INTERNAL_PANIC=1 "$bin" --backend=host --case=host.memfd.canary.body_panics --out="$pn" >"$pn.log" 2>&1; rc=$?
if [ $rc = 1 ] && grep -q '"detail": "panic: planted panic in a case body (P2PAT_INTERNAL_PANIC=1) (Ginkgo: spec panicked at .*canaries.go:[0-9]*)"' "$pn/results.json" \
   && grep -q '"outcome": "fail"' "$pn/results.json" && grep -q '^panic: planted panic' "$pn/cases/host.memfd.canary.body_panics/ginkgo.txt" \
   && [ -x "$pn/cases/host.memfd.canary.body_panics/repro.sh" ] && tail -n 1 "$pn.log" | grep -q '^p2patomics: FAIL — 1 regression: host.memfd.canary.body_panics pass → fail'; then
  echo "ok:   a panicking case body -> fail with the panic and where, Ginkgo's report in its folder, exit 1"
else
  echo "FAIL: a panicking case body: exit $rc: $(grep -m1 '"detail"' "$pn/results.json" 2>/dev/null); $(tail -n 1 "$pn.log")"; fail=1
fi
rm -rf "$pn" "$pn.log" "$pn.prev"
# Issue 49 U16: testing's own lines stay off the suite's stdout: a PASS
# with an allowed new flake printed "--- FAIL: TestSpecs" and "FAIL".
fl=/tmp/p2pat-cli-flake-$$
P2PAT_INTERNAL_FLAKY=1 "$bin" --backend=host --case=host.memfd.canary.flaky --expectations="$(dirname "$0")/../expectations/host-amd64-verdicts" \
  --allow-new-flakes --out="$fl" >"$fl.log" 2>/dev/null; rc=$?
if [ $rc = 0 ] && ! grep -q -e '^--- FAIL' -e '^FAIL$' -e '^PASS$' "$fl.log" && tail -n 1 "$fl.log" | grep -q '^p2patomics: PASS — 1 case, 0 unexpected, 1 new flake allowed'; then
  echo "ok:   a PASS with an allowed new flake -> exit 0, no --- FAIL or bare FAIL/PASS on stdout"
else
  echo "FAIL: a PASS with an allowed new flake: exit $rc: $(grep -m2 -e '^--- FAIL' -e '^FAIL$' -e '^PASS$' "$fl.log" | paste -sd' '); $(tail -n 1 "$fl.log")"; fail=1
fi
rm -rf "$fl" "$fl.log" "$fl.prev"
# --help describes every flag on stdout and exits 0; --list prints ids.
help=$("$bin" --help 2>/dev/null); rc=$?
[ $rc = 0 ] && printf '%s\n' "$help" | grep -q -- '--backend=auto  *auto|host' || { echo "FAIL: --help exit $rc: $help"; fail=1; }
# Every exit status the suite gives, 4 (INTERRUPTED) included (issue 38 item 9).
printf '%s\n' "$help" | grep -q 'Exit 0 PASS, 1 FAIL, 2 usage error, 3 reports not written, 4 INTERRUPTED.*, 5 environment' || { echo "FAIL: --help does not list exits 0-5: $(printf '%s\n' "$help" | grep Exit)"; fail=1; }
ids=$("$bin" --backend=host --list 2>/dev/null); rc=$?
if [ $rc = 0 ] && printf '%s\n' "$ids" | grep -qx 'host.memfd.counter.add_u64_relaxed_sys' && ! printf '%s\n' "$ids" | grep -qv '^[a-z0-9._-]*$'; then
  echo "ok:   --list -> $(printf '%s\n' "$ids" | grep -c '') ids, one a line"
else
  echo "FAIL: --list exit $rc: $(printf '%s\n' "$ids" | head -3)"; fail=1
fi
# --ginkgo.focus narrows the plan: only the focused case is in results.json
# (no incomplete), the run passes, and the spec carries its outcome as a
# report entry in --ginkgo.json-report.
fo=/tmp/p2pat-cli-focus-$$
"$bin" --backend=host --ginkgo.focus='counter\.add_u64_relaxed_sys$' --out="$fo" --ginkgo.json-report="$fo/ginkgo.json" >"$fo.log" 2>&1; rc=$?
n=$(grep -c '^      "id":' "$fo/results.json" 2>/dev/null)
if [ $rc = 0 ] && [ "$n" = 1 ] && ! grep -q '"incomplete"' "$fo/results.json" && grep -q '"Name": "outcome"' "$fo/ginkgo.json" \
   && tail -n 1 "$fo.log" | grep -q '^p2patomics: PASS — 1 case, 0 unexpected'; then
  echo "ok:   --ginkgo.focus -> 1 case, no incomplete, outcome in the Ginkgo JSON report"
else
  echo "FAIL: --ginkgo.focus: exit $rc, $n results, last line: $(tail -n 1 "$fo.log")"; fail=1
fi
rm -rf "$fo" "$fo.log"
# The flag table in code and docs/FLAGS.md must agree.
for f in $(printf '%s\n' "$help" | grep -o -- '^  --[a-z-]*' | grep -v -- '--help'); do
  grep -q -- "\`$f\`" "$(dirname "$0")/../docs/FLAGS.md" || { echo "FAIL: $f is not in docs/FLAGS.md"; fail=1; }
done
# make run's status gets through (issue 38 item 4): make exits 2 for any
# failing recipe, so the suite's own status is stdout's last line and
# OUT/exit_status, and scripts/run exits with it.
root=$(cd "$(dirname "$0")/.." && pwd)
mo=/tmp/p2pat-cli-$$-run
for c in "0 --backend=host --case=host.memfd.counter.add_u64_relaxed_sys" "2 --backend=host --case=no.such.case"; do
  want=${c%% *} args=${c#* }
  log=$(make -s --no-print-directory -C "$root" run OUT="$mo" ARGS="$args" 2>/dev/null); mrc=$?
  st=$(cat "$mo/exit_status" 2>/dev/null)
  where="in $mo/exit_status"
  # A usage error refuses before --out is touched: make run leaves the
  # previous run's exit_status (0) as it was (issue 49 U17).
  # (scripts/run in the row before makes a fresh $mo without one: none.)
  [ "$want" = 2 ] && { where="not written to $mo: the suite refused before it touched it"; case $st in ""|0) st=2;; *) st="written: $st";; esac; }
  [ "$st" = "$want" ] && [ "$(printf '%s\n' "$log" | tail -n 1)" = "make run: the suite exited $want ($where; make itself exits 2 for any non-zero status, scripts/run passes it through)" ] \
    || { echo "FAIL: make run ARGS='$args' -> make $mrc, exit_status '$st', want $want; last line: $(printf '%s\n' "$log" | tail -n 1)"; fail=1; }
  rc=0; OUT=$mo "$root/scripts/run" $args >/dev/null 2>&1 || rc=$?
  [ $rc = "$want" ] || { echo "FAIL: scripts/run $args -> exit $rc, want $want"; fail=1; }
  [ $fail = 0 ] && echo "ok:   make run ARGS='$args' -> out/exit_status $st, make $mrc; scripts/run exit $rc"
done
rm -rf "$mo" "$mo.prev"
rm -rf /tmp/p2pat-cli-$$ /tmp/p2pat-cli-$$.prev
[ $fail = 0 ] && echo "cli: every bad input was one line and exit 2"
exit $fail
