#!/usr/bin/env bash
# docs-numbers.sh [--check] SPECS_BINARY: the case counts the docs state
# about today's catalogue, generated from `specs.test --list` (which reads
# the catalogue and loads no driver, so the CUDA counts come out right on a
# machine without a GPU). Without --check it rewrites them in place; with
# --check it fails naming each stale number (make docs runs it in make
# test). Numbers about a committed run (its run.log, its results/ folder)
# are facts of that run and stay as they are.
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
)
declare -A n
for k in "${!sel[@]}"; do
	# shellcheck disable=SC2086
	n[$k]=$("$bin" ${sel[$k]} --list 2>/dev/null | grep -c '^[a-z]') || { echo "docs-numbers: $bin ${sel[$k]} --list failed" >&2; exit 1; }
done
# file|key|Perl regex whose one group is the number (each must match).
rules=(
	'README.md|host|p2patomics: PASS — (\d+) cases, 0 unexpected \(no baseline'
	'README.md|host-r8|`--backend=host --ranks=8`: (\d+) cases'
	'docs/GATING.md|host|`p2patomics: PASS — (\d+) cases, 0 unexpected \(no baseline'
	'docs/PERFORMANCE.md|host|the whole default host suite \((\d+) cases'
	'docs/PERFORMANCE.md|cuda|[Tt]oday.s catalogue: (\d+) CUDA cases'
	'docs/PERFORMANCE.md|cuda-r4|[Tt]oday.s catalogue: \d+ CUDA cases \(--ranks=4: (\d+)\)'
	'docs/AMD.md|hip|[Tt]oday.s catalogue: (\d+) HIP cases'
	'docs/AMD.md|hsa|[Tt]oday.s catalogue: \d+ HIP cases[^.]* and (\d+) HSA cases'
)
bad=0
for r in "${rules[@]}"; do
	IFS='|' read -r file key re <<<"$r"
	got=$(perl -ne 'if (/'"$re"'/) { print "$1\n" }' "$file")
	if [ -z "$got" ]; then
		echo "docs-numbers: $file: no line matches /$re/ (update the rule in scripts/docs-numbers.sh with the text)"; bad=1; continue
	fi
	want=${n[$key]}
	for g in $got; do
		[ "$g" = "$want" ] && continue
		if [ $check = 1 ]; then
			echo "docs-numbers: $file says $g where the catalogue has $want ($key: ${sel[$key]} --list); run bash scripts/docs-numbers.sh $bin"; bad=1
		else
			perl -i -pe 's/'"$re"'/substr($&, 0, $-[1] - $-[0]) . '"$want"' . substr($&, $+[1] - $-[0])/e' "$file"
			echo "docs-numbers: $file: $g -> $want ($key)"
		fi
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
[ $bad = 0 ] && [ $check = 1 ] && echo "docs: every generated case count matches the catalogue (host ${n[host]}, host --ranks=8 ${n[host-r8]}, cuda ${n[cuda]}, cuda --ranks=4 ${n[cuda-r4]}, hip ${n[hip]}, hsa ${n[hsa]})"
exit $bad
