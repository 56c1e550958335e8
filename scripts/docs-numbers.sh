#!/usr/bin/env bash
# docs-numbers.sh [--check] SPECS_BINARY: the case counts the docs state
# about today's catalogue, generated from `specs.test --list` (which reads
# the catalogue and loads no driver, so the CUDA counts come out right on a
# machine without a GPU), and the suite's exit statuses the docs' tables
# and examples state, read from the Go constants that define them
# (harness/report/summary.go, harness/suite/lifecycle.go). Without --check
# it rewrites them in place; with --check it fails naming each stale number
# (make docs runs it in make test). Numbers about a committed run (its
# run.log, its results/ folder, a trial dated by its commit) are facts of
# that run and stay as they are.
set -uo pipefail
cd "$(dirname "$0")/.."
check=0
[ "${1:-}" = --check ] && { check=1; shift; }
bin=${1:?usage: docs-numbers.sh [--check] path/to/specs.test}
declare -A sel=(
	[host]="--backend=host"
	[host-r8]="--backend=host --ranks=8"
	[cuda]="--backend=cuda"
	[cuda-r4]="--backend=cuda --ranks=4"
	[hip]="--backend=hip"
	[hsa]="--backend=hsa"
	[host-atomics-r2]="--backend=host --atomics --ranks=2"
)
declare -A n
for k in "${!sel[@]}"; do
	# shellcheck disable=SC2086
	n[$k]=$("$bin" ${sel[$k]} --list 2>/dev/null | grep -c '^[a-z]') || { echo "docs-numbers: $bin ${sel[$k]} --list failed" >&2; exit 1; }
done
# The exit statuses, from their one definition each: a doc that says
# "INTERRUPTED, exit 4" must change when the constant does (docs/FLEET.md
# kept an exit 1 for a timeout after INTERRUPTED became exit 4).
declare -A ex
while read -r name val; do ex[$name]=$val; done < <(perl -ne 'print "$1 $2\n" if /^\s*(Exit\w+)\s*=\s*(\d+)\b/' harness/report/summary.go harness/suite/lifecycle.go)
for k in ExitPass ExitFail ExitUsage ExitNoReport ExitNoResult ExitInterrupted; do
	[ -n "${ex[$k]:-}" ] || { echo "docs-numbers: no '$k = N' in harness/report/summary.go or harness/suite/lifecycle.go (moved? update scripts/docs-numbers.sh)" >&2; exit 1; }
done
# file|key|Perl regex whose one group is the number. key is a --list
# selection above (a case count) or an Exit* constant (an exit status).
# A named file's rule must match at least once (a reworded line is a
# stale rule, named); file * is every doc (README.md, docs/*.md) and may
# match nowhere: it catches the same phrase in a doc written later.
# No | in a regex (the separator): \x7c is a table's bar.
rules=(
	'README.md|host|p2patomics: PASS — (\d+) cases, 0 unexpected \(no baseline'
	'README.md|host-r8|`--backend=host --ranks=8`: (\d+) cases'
	'docs/GATING.md|host|`p2patomics: PASS — (\d+) cases, 0 unexpected \(no baseline'
	'docs/PERFORMANCE.md|host|the whole default host suite \((\d+) cases'
	'docs/PERFORMANCE.md|cuda|[Tt]oday.s catalogue: (\d+) CUDA cases'
	'docs/PERFORMANCE.md|cuda-r4|[Tt]oday.s catalogue: \d+ CUDA cases \(--ranks=4: (\d+)\)'
	'docs/AMD.md|hip|[Tt]oday.s catalogue: (\d+) HIP cases'
	'docs/AMD.md|hsa|[Tt]oday.s catalogue: \d+ HIP cases[^.]* and (\d+) HSA cases'
	# The verdict lines' examples: the host suite's whole plan.
	'README.md|host|INTERRUPTED — \d+ of (\d+) cases ran'
	'docs/GATING.md|host|INTERRUPTED — \d+ of (\d+) cases ran'
	'docs/FAULTS.md|host|INTERRUPTED — \d+ of (\d+) cases ran'
	'docs/GATING.md|host|PASS — (\d+) cases, 0 unexpected, 1 known flake'
	'docs/GATING.md|host|FAIL — (\d+) cases, 0 unexpected; run health'
	'*|host|p2patomics: [A-Z ]+ — (?:\d+ of )?(\d+) cases[^`]*gate expectations\/host-amd64\)'
	'docs/FLEET.md|host-atomics-r2|`P2PAT_FLEET_ARGS=--atomics`: (\d+) cases at `--ranks=2`'
	# Exit statuses: GATING's two verdict tables, README's list, the
	# Makefile's run target, then the phrases any doc may use.
	'docs/GATING.md|ExitPass|^\x7c exit status \x7c (\d+) \x7c'
	'docs/GATING.md|ExitFail|^\x7c exit status \x7c \d+ \x7c (\d+) \x7c'
	'docs/GATING.md|ExitPass|^\x7c `PASS` \x7c (\d+) \x7c'
	'docs/GATING.md|ExitFail|^\x7c `FAIL` \x7c (\d+) \x7c'
	'docs/GATING.md|ExitUsage|^\x7c \(usage\) \x7c (\d+) \x7c'
	'docs/GATING.md|host|`\[ *\d+\x2f(\d+)\] ok '
	'docs/GATING.md|ExitNoReport|^\x7c \(reports\) \x7c (\d+) \x7c'
	'docs/GATING.md|ExitNoResult|^\x7c `NO RESULT` \x7c (\d+) \x7c'
	'docs/GATING.md|ExitInterrupted|^\x7c `INTERRUPTED` \x7c (\d+) \x7c'
	'README.md|ExitPass|^Exit status: (\d+) PASS'
	'README.md|ExitFail|passed — (\d+) FAIL, \d+ a usage error'
	'README.md|ExitUsage|FAIL, (\d+) a usage error'
	'README.md|ExitNoReport|(\d+) reports not written, \d+ INTERRUPTED'
	'README.md|ExitInterrupted|reports not written, (\d+) INTERRUPTED'
	'Makefile|ExitPass|the suite.s own status \((\d+) PASS,'
	'Makefile|ExitFail|(\d+) FAIL, \d+ usage, \d+ reports not written'
	'Makefile|ExitUsage|FAIL, (\d+) usage, \d+ reports not written'
	'Makefile|ExitNoReport|usage, (\d+) reports not written, \d+ INTERRUPTED'
	'Makefile|ExitInterrupted|reports not written, (\d+) INTERRUPTED'
	'docs/FLEET.md|ExitInterrupted|`INTERRUPTED`, exit (\d+)'
	'*|ExitInterrupted|INTERRUPTED`?, exit (\d+)'
	'*|ExitInterrupted|exit (\d+), verdict `?INTERRUPTED'
	'*|ExitNoResult|`NO RESULT`, exit (\d+)'
	'*|ExitNoReport|REPORTS NOT WRITTEN \(exit (\d+):'
	'*|ExitUsage|is a usage error \(exit (\d+)\)'
)
bad=0
checked=0
# file:line:key already judged: a line matched by a file's rule and by a *
# rule is checked and reported once.
declare -A seen
for r in "${rules[@]}"; do
	IFS='|' read -r rfile key re <<<"$r"
	if [[ $key == Exit* ]]; then
		want=${ex[$key]}; src="the code has $want ($key)"
	else
		want=${n[$key]}; src="the catalogue has $want ($key: ${sel[$key]} --list)"
	fi
	files=("$rfile")
	[ "$rfile" = '*' ] && files=(README.md docs/*.md)
	for file in "${files[@]}"; do
		# file:line:number for each line that matches.
		got=$(perl -ne 'if (/'"$re"'/) { print "$.:$1\n" }' "$file")
		if [ -z "$got" ]; then
			[ "$rfile" = '*' ] && continue
			echo "docs-numbers: $file: no line matches /$re/ (update the rule in scripts/docs-numbers.sh with the text)"; bad=1; continue
		fi
		for lg in $got; do
			line=${lg%%:*} g=${lg#*:}
			[ -n "${seen[$file:$line:$key]:-}" ] && continue
			seen[$file:$line:$key]=1
			checked=$((checked + 1))
			[ "$g" = "$want" ] && continue
			if [ $check = 1 ]; then
				echo "docs-numbers: $file:$line says $g where $src; run bash scripts/docs-numbers.sh $bin"; bad=1
			else
				perl -i -pe 's/'"$re"'/substr($&, 0, $-[1] - $-[0]) . '"$want"' . substr($&, $+[1] - $-[0])/e' "$file"
				echo "docs-numbers: $file:$line: $g -> $want ($key)"
			fi
		done
	done
done
# The reported AMD baseline says it holds "every HIP and HSA case id the
# suite has": its cases.txt is generated from the same --list (its fails.txt
# then follows from internal/amdreported's table: P2PAT_UPDATE=1 go test
# ./internal/amdreported), so a case added to the catalogue cannot be
# missing from the baseline an AMD first run is gated against.
cases=expectations/amd-gfx942-reported/cases.txt
ids=$( { "$bin" --backend=hip --list; "$bin" --backend=hsa --list; } 2>/dev/null | grep '^[a-z]' | awk '{print $1}' | LC_ALL=C sort)
have=$(grep -v '^#' "$cases" | grep . | LC_ALL=C sort)
if [ "$ids" != "$have" ]; then
	if [ $check = 1 ]; then
		echo "docs-numbers: $cases differs from the catalogue's HIP and HSA ids ($(comm -23 <(echo "$ids") <(echo "$have") | wc -l) missing, $(comm -13 <(echo "$ids") <(echo "$have") | wc -l) gone); run bash scripts/docs-numbers.sh $bin"; bad=1
	else
		{ grep '^#' "$cases"; echo "$ids"; } > "$cases.new" && mv "$cases.new" "$cases"
		echo "docs-numbers: $cases regenerated from --list (then: P2PAT_UPDATE=1 go test ./internal/amdreported)"
	fi
fi
[ $bad = 0 ] && [ $check = 1 ] && echo "docs: every generated number ($checked places) matches: case counts (host ${n[host]}, host --ranks=8 ${n[host-r8]}, host --atomics --ranks=2 ${n[host-atomics-r2]}, cuda ${n[cuda]}, cuda --ranks=4 ${n[cuda-r4]}, hip ${n[hip]}, hsa ${n[hsa]}) and exit statuses (PASS ${ex[ExitPass]}, FAIL ${ex[ExitFail]}, usage ${ex[ExitUsage]}, reports not written ${ex[ExitNoReport]}, NO RESULT ${ex[ExitNoResult]}, INTERRUPTED ${ex[ExitInterrupted]})"
exit $bad
