#!/bin/bash
# The round schedule gives the same verdicts as one pair at a time: run the
# per-pair cases (label pairs) of an 8-rank host world both ways and merge
# the two runs with p2pfleet --gate, which fails on any case whose outcome
# differs between them or that missed its expected outcome (the planted
# racy pair in a round must be caught in both).
#   scripts/check-rounds.sh ./bin/specs.test OUTDIR
set -euo pipefail
bin=${1:?usage: check-rounds.sh SPECS_TEST OUTDIR}
out=${2:?usage: check-rounds.sh SPECS_TEST OUTDIR}
rm -rf "$out"
for mode in rounds alone; do
	"$bin" --backend=host --ranks=8 --pairs=$mode --ginkgo.label-filter=pairs --out="$out/$mode" >"$out.$mode.log" 2>&1 || {
		echo "check-rounds: the --pairs=$mode run failed (log: $out.$mode.log)" >&2
		exit 1
	}
done
${GO:-go} run ./cmd/p2pfleet --gate "$out/rounds" "$out/alone" >"$out/fleet.txt" || {
	cat "$out/fleet.txt" >&2
	echo "check-rounds: rounds and one pair at a time disagree" >&2
	exit 1
}
n=$(grep -c '"id"' "$out/rounds/results.json")
grep -q 'planted racy pair r[0-9]*r[0-9]* caught' "$out/rounds/results.json" || { echo "check-rounds: the planted racy pair was not caught" >&2; exit 1; }
echo "check-rounds: $n cases, same verdicts in rounds and one pair at a time; planted racy pair caught"
