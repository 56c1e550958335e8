#!/usr/bin/env bash
# The gate against a lying driver (docs/FAULTS.md, "The driver-fault
# injector"): on the host backend, each kind of injected fault, gated
# against the committed host baseline, must end the run FAIL (exit 1) —
# never PASS, never a usage error — with the rule named on the verdict
# line, in results.json's environment and summary and on every case:
#   drop:tally_u32_relaxed_dev  a dropped check kernel (the litmus tally)
#   fail:dup=95                 the export fails always (EOPNOTSUPP); the
#                               fast verdict: a handful of worlds, the kind's
#                               cases judged from the first failure
#   fail-every:mmap=5/3         every third map fails (EIO): its reruns must
#                               not forgive it (not PASS, whatever the word)
#   noop:mprotect               the access grant does nothing: the host maps
#                               an import PROT_NONE and grants with mprotect,
#                               so every rule kind is exercised here too
#   noop:munmap                 the unmap does nothing: the leak check
#                               counts mappings from /proc/<pid>/maps
#   drop:racy_u64_plain_sys     only negative controls launch it: a control
#                               whose kernel was dropped is control lost
# Each rule must have fired (environment.inject_fired); a rule that cannot
# fire must be named "never fired", and an unknown symbol is exit 2.
#   hang-at:synchronize=40      the 40th kernel synchronize of every rank
#                               process never returns: each such case is a
#                               timeout, and every one is the rank watchdog's
#                               (a wait whose work is done), never a deadline's
#   corrupt-read:0              every device-to-host read comes back with bit 0
#                               of its first byte flipped: every read is
#                               verified, so the three case families a flip
#                               once left passing (litmus sb and iriw.r3,
#                               lifetime.owner_frees) must not pass
# On CUDA the same kinds are shown by scripts/device-faults.sh. Last, a
# planted failing Go test in specs/ must fail go test ./specs.
set -uo pipefail
bin=${1:?usage: gate-selftest.sh specs.test OUTDIR}; out=${2:?}
base=${P2PAT_SELFTEST_BASELINE:-expectations/host-amd64}
rm -rf "$out"; mkdir -p "$out"
fail=0
for rule in drop:tally_u32_relaxed_dev fail:dup=95 fail-every:mmap=5/3 noop:mprotect noop:munmap drop:racy_u64_plain_sys hang-at:synchronize=40 corrupt-read:0; do
  name=$(printf '%s' "$rule" | tr ':=/' '___')
  t0=$(date +%s.%N)
  "$bin" --backend=host --expectations="$base" --internal-inject="$rule" --out="$out/$name" >"$out/$name.log" 2>&1; rc=$?
  t1=$(date +%s.%N)
  last=$(tail -n 1 "$out/$name.log")
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
  why=""
  [ "$rc" = 1 ] || why="exit $rc, want 1 (FAIL)"
  case $last in "p2patomics: FAIL — "*"[driver faults injected: $rule]") ;; *) why="${why:+$why; }verdict line does not say FAIL and name the rule";; esac
  chk=$(python3 - "$out/$name/results.json" "$rule" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); rule = sys.argv[2]
bad = []
if r["environment"].get("inject") != [rule]: bad.append("environment.inject %r" % r["environment"].get("inject"))
if r["summary"].get("inject") != [rule]: bad.append("summary.inject %r" % r["summary"].get("inject"))
ran = [x for x in r["results"] if x["outcome"] not in ("incomplete", "abort") and x.get("verdict") != "missing"]
without = [x["id"] for x in ran if x.get("inject") != [rule]]
if without: bad.append("%d case(s) without the rule, e.g. %s" % (len(without), without[0]))
worlds = r["environment"].get("worlds_started", -1)
# The rule fired (counted across every rank of the run), else its FAIL
# is not the fault's.
fired = (r["environment"].get("inject_fired") or {}).get(rule, 0)
if fired < 1: bad.append("environment.inject_fired[%s] = %r: the rule never fired" % (rule, fired))
if rule.startswith("fail:dup"):
    judged = [x for x in r["results"] if x["detail"].startswith("not run: judged from ")]
    # canaries kill ranks on purpose (a world each); everything else shares one.
    if worlds > 12: bad.append("%d worlds started for an export that always fails (want at most 12)" % worlds)
    if len(judged) < 50: bad.append("only %d cases judged from the first failure" % len(judged))
if rule.startswith("hang-at"):
    tmo = [x for x in ran if x["outcome"] == "timeout"]
    if not tmo: bad.append("no case timed out under a wedged synchronize")
    # The planted wedge must be the watchdog's; the cases that expect a
    # timeout (a kernel spinning on a flag nobody sets: its threads still
    # run, so the watchdog rightly stays silent) keep their deadline.
    wedged = [x for x in tmo if "injected " + rule in x["detail"]]
    if not wedged: bad.append("no timeout names the planted rule")
    slow = [x["id"] for x in wedged if "its watchdog found synchronize wedged" not in x["detail"]]
    if slow: bad.append("%d wedged synchronize(s) ended by a deadline, not the watchdog, e.g. %s" % (len(slow), slow[0]))
    other = [x["id"] for x in tmo if x not in wedged and x.get("expected") != "timeout"]
    if other: bad.append("%d timeout(s) neither planted nor expected, e.g. %s" % (len(other), other[0]))
if rule.startswith("corrupt-read"):
    fam = ("litmus.sb_u32_seqcst_sys", "litmus.iriw_u32_seqcst_sys.r3", "lifetime.owner_frees")
    seen = [x for x in r["results"] if x["id"].endswith(fam)]
    if len(seen) != 3: bad.append("%d of the 3 litmus/lifetime cases a flip once passed ran" % len(seen))
    for x in seen:
        if x["outcome"] == "pass" or not x["detail"].startswith("read-back integrity: "):
            bad.append("%s %s under a corrupted read: %s" % (x["id"], x["outcome"], x["detail"][:80]))
print("; ".join(bad) if bad else "ok worlds=%d" % worlds)
PY
)
  case $chk in ok*) ;; *) why="${why:+$why; }$chk";; esac
  if [ -n "$why" ]; then
    echo "FAIL: $rule ($secs s): $why"; echo "      $last"; fail=1
  else
    echo "ok:   $rule -> exit 1 in $secs s, $chk: ${last:0:140}…"
  fi
done
# A rule that cannot fire (its N is beyond any run's mmaps) must be
# reported as never fired: on the verdict line and in results.json, so it
# never reads as a fault the gate passed; and a symbol no backend binds is
# a usage error (exit 2) naming it.
rule=fail-every:mmap=5/4000000000
"$bin" --backend=host --expectations="$base" --internal-inject="$rule" --out="$out/neverfires" >"$out/neverfires.log" 2>&1; rc=$?
last=$(tail -n 1 "$out/neverfires.log")
nf=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["summary"].get("inject_never_fired"), r["environment"].get("inject_fired"))' "$out/neverfires/results.json" 2>&1)
case $last in *"; rule $rule never fired") ok=1;; *) ok=0;; esac
if [ $ok = 1 ] && [ "$nf" = "['$rule'] {'$rule': 0}" ]; then
  echo "ok:   $rule -> exit $rc, reported never fired: ${last:0:140}…"
else
  echo "FAIL: $rule: a rule that never fired is not reported (exit $rc; $nf): $last"; fail=1
fi
"$bin" --backend=host --expectations="$base" --internal-inject=fail:nosuch=5 --out="$out/nosuch" >"$out/nosuch.log" 2>&1; rc=$?
if [ $rc = 2 ] && grep -q 'fail:nosuch=5: backend host binds no call named nosuch' "$out/nosuch.log"; then
  echo "ok:   fail:nosuch=5 -> exit 2: $(tail -n 1 "$out/nosuch.log")"
else
  echo "FAIL: fail:nosuch=5: exit $rc, want 2 naming the symbol: $(tail -n 1 "$out/nosuch.log")"; fail=1
fi
# A planted always-failing Go test in specs/ (TestPlantedFailure, armed by
# P2PAT_PLANT_FAILING_TEST=1) must turn go test ./specs red before the
# suite runs (--out not created); unarmed, the same test passes, so the red
# is the plant's. TestMain once dropped m.Run's status: such a test read ok.
go=${GO:-go}
P2PAT_PLANT_FAILING_TEST=1 P2PAT_OUT="$out/gotest" $go test -count=1 ./specs >"$out/gotest.log" 2>&1; rc=$?
$go test -count=1 -run '^TestPlantedFailure$' ./specs >"$out/gotest-unarmed.log" 2>&1; rc0=$?
if [ $rc != 0 ] && grep -q -- '--- FAIL: TestPlantedFailure' "$out/gotest.log" && grep -q '^FAIL[[:space:]]p2patomics/specs' "$out/gotest.log" \
   && [ ! -e "$out/gotest" ] && [ $rc0 = 0 ]; then
  echo "ok:   a planted failing Go test in specs/ -> go test ./specs exit $rc: $(grep -m1 '^p2patomics: FAIL' "$out/gotest.log")"
else
  echo "FAIL: a planted failing Go test in specs/: go test ./specs exit $rc (unarmed $rc0), --out $(ls -d "$out/gotest" 2>/dev/null || echo untouched): $(tail -n 2 "$out/gotest.log" | paste -sd' ')"; fail=1
fi
[ $fail = 0 ] && echo "gate-selftest: every injected fault fails the gate" || echo "gate-selftest: FAILED"
exit $fail
