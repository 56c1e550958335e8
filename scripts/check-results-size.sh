#!/usr/bin/env bash
# check-results-size.sh: the tracked results/ stays under its budget
# (issue 51: a repository heavy to clone and to copy to a GPU machine).
# It sums the bytes of every file git tracks under results/ (staged ones
# too) and fails, naming the largest files, when they pass
# P2PAT_RESULTS_MAX bytes (default 10000000, 10 MB). A run's text over
# 40 KB is kept gzipped (summary.txt.gz, run.log.gz), its results.json as
# results.json.gz; regenerable reports (report.html, junit.xml, heat maps)
# are not committed (README.md, "What has run on real hardware").
set -uo pipefail
cd "$(dirname "$0")/.."
max=${P2PAT_RESULTS_MAX:-10000000}
[[ $max =~ ^[0-9]+$ ]] || { echo "check-results-size: P2PAT_RESULTS_MAX=$max is not a number of bytes" >&2; exit 2; }
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	echo "check-results-size: not a git checkout: nothing tracked to measure (skipped)"
	exit 0
fi
sizes=$(git ls-files -z results | xargs -0 -r stat -c '%s %n' 2>/dev/null)
total=$(awk '{s += $1} END {print s + 0}' <<<"$sizes")
if [ "$total" -gt "$max" ]; then
	echo "check-results-size: tracked results/ is $total bytes, over its $max (gzip text over 40 KB, drop what p2preport re-renders); the largest:" >&2
	sort -rn <<<"$sizes" | head -n 10 | sed 's/^/  /' >&2
	exit 1
fi
echo "check-results-size: tracked results/ is $total bytes (at most $max)"
