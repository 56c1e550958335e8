#!/usr/bin/env bash
# make test's own machinery, on a scratch Makefile: scripts/phases.sh prints
# a start and a timed end line per phase, a progress line while a phase is
# silent, and a last line that says "all N checks passed" or names the check
# that failed (and stops there); and bin/specs.test is up to date after a
# build (check-go, a phony prerequisite, once relinked it on every make run).
set -uo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
printf 'ok:\n\t@echo fine\nquiet:\n\t@sleep 4\nbad:\n\t@echo broken; exit 3\nnever:\n\t@echo ran-after-failure\n' >"$tmp/mk"
P2PAT_QUIET_S=2 MAKE="make -f $tmp/mk" bash scripts/phases.sh ok quiet >"$tmp/pass.log" 2>&1; rc=$?
if [ $rc = 0 ] && grep -q '^make test: \[1/2\] ok: start' "$tmp/pass.log" && grep -q '^make test: \[1/2\] ok: ok in [0-9.]* s$' "$tmp/pass.log" \
   && grep -q '^make test: \[2/2\] quiet: still running, [0-9]* s$' "$tmp/pass.log" \
   && [ "$(tail -n 1 "$tmp/pass.log" | sed 's/in [0-9.]* s$/in T s/')" = "make test: all 2 checks passed in T s" ]; then
	echo "ok:   phases: start and timed end lines, a progress line in a silent phase, closing line"
else
	echo "FAIL: phases (exit $rc):"; sed 's/^/      /' "$tmp/pass.log"; fail=1
fi
MAKE="make -f $tmp/mk" bash scripts/phases.sh ok bad never >"$tmp/fail.log" 2>&1; rc=$?
if [ $rc != 0 ] && ! grep -q ran-after-failure "$tmp/fail.log" \
   && tail -n 1 "$tmp/fail.log" | grep -q "^make test: FAILED: check 'bad' (2 of 3) failed after"; then
	echo "ok:   phases: a failing check stops the run and the last line names it: $(tail -n 1 "$tmp/fail.log")"
else
	echo "FAIL: phases with a failing check (exit $rc):"; sed 's/^/      /' "$tmp/fail.log"; fail=1
fi
make --no-print-directory build >/dev/null 2>&1 || { echo "FAIL: make build"; exit 1; }
if ! make -n bin/specs.test 2>/dev/null | grep -q 'test -c'; then
	echo "ok:   bin/specs.test is up to date after its build (no relink when nothing changed)"
else
	echo "FAIL: make -n bin/specs.test would relink right after make build (a phony prerequisite?)"; fail=1
fi
[ $fail = 0 ] && echo "runner: make test's phase lines and the no-relink build hold"
exit $fail
