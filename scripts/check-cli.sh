#!/usr/bin/env bash
# Every bad flag or value must give exactly one line on stderr and exit 2,
# never Go's flag usage dump. A planted "exit 0" or a two-line error fails.
set -uo pipefail
bin=${1:?usage: check-cli.sh path/to/specs.test}
fail=0
check() {
  local want=$1; shift
  err=$(P2PAT_OUT=/tmp/p2pat-cli-$$ "$bin" "$@" 2>&1 >/dev/null); rc=$?
  lines=$(printf '%s' "$err" | grep -c '' || true)
  if [ "$rc" != "$want" ] || [ "$lines" != 1 ]; then
    echo "FAIL: $* -> exit $rc, $lines stderr lines: $err"; fail=1
  else
    echo "ok:   $* -> exit $rc: $err"
  fi
}
check 2 --backend=nope
check 2 --alloc=pinned --backend=host
check 2 --alloc=bogus
check 2 --ranks=1
check 2 --ranks=x
check 2 --no-such-flag
check 2 --case=host.memfd.counter.nope
check 2 --case=Bad/Id
check 2 --pinned --uncached
check 2 --repeat=0
check 2 --clocks=fast
check 2 --pairs=sometimes
check 2 --clocks=-1ms
P2PAT_CLOCKS=sometimes check 2
check 2 --update-expectations
check 2 --expectations=/nonexistent/dir
check 2 --backend=host --ginkgo.label-filter='nosuchlabel'
check 2 straydArg
P2PAT_RANKS=0 check 2
# Issue 18: an unusable --out before the first case, testing's own flags,
# values that would split the line or drive the terminal.
check 2 --backend=host --out=/dev/full
check 2 --backend=host --out=/etc/hostname/x
check 2 -test.timeout=1ms
check 2 -test.count=2
check 2 --backend="$(printf 'a\nb\033[31m')"
check 2 --backend=host --ginkgo.label-filter='(('
P2PAT_TRACE=maybe check 2
# The flag table in code and docs/FLAGS.md must agree.
for f in $("$bin" --help 2>&1 | grep -o -- '--[a-z-]*' | grep -v -- '--help'); do
  grep -q -- "\`$f\`" "$(dirname "$0")/../docs/FLAGS.md" || { echo "FAIL: $f is not in docs/FLAGS.md"; fail=1; }
done
rm -rf /tmp/p2pat-cli-$$ /tmp/p2pat-cli-$$.prev
[ $fail = 0 ] && echo "cli: every bad input was one line and exit 2"
exit $fail
