#!/usr/bin/env bash
# A canary crash must leave a case folder with the trace of every rank, and
# its repro line must re-run only that case and classify it the same way.
set -uo pipefail
bin=${1:?usage: check-evidence.sh specs.test OUTDIR-of-a-host-run}; out=${2:?}
id=host.memfd.canary.purego_segv
dir=$out/cases/$id
fail() { echo "evidence check FAILED: $*"; exit 1; }
for f in rank-0.trace rank-1.trace rank-1.stderr repro.sh kernel.log environment.json result.json; do
  [ -s "$dir/$f" ] || [ "$f" = kernel.log ] || fail "$dir/$f missing or empty"
done
grep -q "request.canary" "$dir/rank-1.trace" || fail "rank-1.trace lacks the in-flight canary request"
grep -q 'SIGSEGV' "$dir/rank-1.stderr" || fail "rank-1.stderr lacks the fault dump"
# The binary by absolute path, single-quoted by the shell-quoting of a
# path that may hold a space (a checkout in "p2p atomics").
grep -Eq "^('/[^']*specs\.test'|/[^ ]*specs\.test) --backend=" "$dir/repro.sh" || fail "repro.sh does not name the binary by absolute path: $(cat "$dir/repro.sh")"
grep -q '^# no API call failed' "$out/cases/host.memfd.planted.racy_u64_plain_sys/rank-0.trace" \
  && ! grep -q 'FAILED' "$out/cases/host.memfd.planted.racy_u64_plain_sys/rank-0.trace" \
  || fail "a data-check failure marks an API call FAILED or does not say no call failed"
grep -q '^#' "$dir/kernel.log" || [ -s "$dir/kernel.log" ] || fail "kernel.log is empty without saying why"
d=$(awk -F': ' '/"duration_s"/ {gsub(/,/,"",$2); print $2; exit}' "$dir/result.json")
[ "$d" != 0 ] || fail "case folder result.json has duration_s 0"
re=$(mktemp -d)
# repro.sh runs from any directory: run it from the temporary one. --out is
# a fresh folder of $re: the suite refuses one holding files that are not a
# run (the log).
rp=$(realpath "$dir/repro.sh")
(cd "$re" && sh "$rp" --out="$re/o" >"$re/log" 2>&1); rc=$?
cmd=$(grep -m1 '^/.*specs\.test --backend=' "$dir/repro.sh")
n=$(grep -c '"id":' "$re/o/results.json")
got=$(awk -F'"' '/^ *"outcome":/ {print $4; exit}' "$re/o/results.json")
want=$(awk -F'"' '/^ *"outcome":/ {print $4; exit}' "$dir/result.json")
[ "$rc" = 0 ] && [ "$n" = 1 ] && [ "$got" = "$want" ] || fail "repro: exit $rc, $n cases, outcome $got (was $want)"
# Run from its own folder with no --out, it writes nothing there (it once
# made out/ inside the evidence, or moved the checkout's out/ aside).
before=$(ls -A "$dir" | sort | paste -sd' ')
(cd "$dir" && TMPDIR="$re" sh ./repro.sh >"$re/log2" 2>&1); rc=$?
after=$(ls -A "$dir" | sort | paste -sd' ')
[ "$rc" = 0 ] && [ "$before" = "$after" ] && [ -s "$re/p2patomics-repro-$id/results.json" ] \
  || fail "repro.sh from its folder: exit $rc, folder now: $after, reports in $re: $(ls "$re")"
echo "evidence: $dir has every rank's trace; '$cmd' re-ran 1 case: $got again"
rm -rf "$re"
