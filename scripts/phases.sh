#!/usr/bin/env bash
# phases.sh PHASE...: make test's runner. Runs `make PHASE` for each phase in
# order, each under progress.sh (a line at least every 30 s), with one line
# when it starts and one with its time when it ends. The last line is
# "make test: all N checks passed in T s", or names the check that failed
# (the first failure stops the run).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# MAKE may carry arguments (make -f other.mk: scripts/check-phases.sh).
read -ra make <<<"${MAKE:-make}"
n=$#
i=0
t0=$EPOCHREALTIME
secs() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
for p in "$@"; do
	i=$((i + 1))
	echo "make test: [$i/$n] $p: start ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"
	ts=$EPOCHREALTIME
	bash "$here/progress.sh" "make test: [$i/$n] $p" "${make[@]}" --no-print-directory "$p"
	rc=$?
	if [ "$rc" != 0 ]; then
		echo "make test: [$i/$n] $p: FAILED (exit $rc) after $(secs "$ts") s"
		echo "make test: FAILED: check '$p' ($i of $n) failed after $(secs "$t0") s (make $p reruns it)"
		exit 1
	fi
	echo "make test: [$i/$n] $p: ok in $(secs "$ts") s"
done
echo "make test: all $n checks passed in $(secs "$t0") s"
