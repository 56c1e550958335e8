#!/usr/bin/env bash
# measure-host-suite.sh SPECS_BINARY [--write]: runs the default host suite
# once and prints one Markdown table row: cases, wall and CPU time, the
# machine (cores, CPU model) and the 1-minute load average before and after,
# the commit. With --write the row is added to docs/PERFORMANCE.md's
# measured block (between its "host-suite: measured" markers), so the
# figure there comes from this command, never typed by hand.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${1:?usage: measure-host-suite.sh path/to/specs.test [--write]}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
load0=$(cut -d' ' -f1 /proc/loadavg)
TIMEFORMAT='%R %U %S'
t=$( { time "$bin" --backend=host --out="$out/run" >"$out/log" 2>&1; } 2>&1 ); rc=$?
load1=$(cut -d' ' -f1 /proc/loadavg)
read -r wall user sys <<<"$t"
last=$(tail -n 1 "$out/log")
[ $rc = 0 ] || { echo "measure-host-suite: the suite failed (exit $rc): $last" >&2; exit 1; }
n=$(printf '%s' "$last" | grep -o '[0-9]* cases' | head -1)
cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.1f", u + s }')
model=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //; s/  */ /g')
row="| $(date -u +%F) | $(git rev-parse --short HEAD 2>/dev/null) | $n | ${wall} s | ${cpu} s | $(nproc) × $model | $load0 → $load1 |"
echo "$row"
if [ "${2:-}" = --write ]; then
	perl -i -pe 'print "'"${row//\"/\\\"}"'\n" if /^<!-- host-suite: measured end -->/' docs/PERFORMANCE.md
fi
