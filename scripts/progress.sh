#!/usr/bin/env bash
# progress.sh LABEL CMD...: runs CMD, passing its output through (stderr
# folded into stdout), and says "LABEL: still running, N s" whenever CMD has
# printed nothing for 25 s (P2PAT_QUIET_S), so a long silent step (a cold
# build, an instrumented fuzz build, a package download) is never mistaken
# for a hang: a line at least every 30 s. One process of builtins (read -t,
# SECONDS): a loop that forked date/stat drifted to 38 s at load 25.
# Exit status: CMD's.
set -uo pipefail
label=${1:?usage: progress.sh LABEL CMD...}; shift
quiet=${P2PAT_QUIET_S:-25}
# A progress.sh inside CMD (a make recipe's own, under make test's) says
# its more specific line 5 s sooner, which resets this one's clock: one
# line per quiet spell, not one from each.
if ((quiet > 10)); then export P2PAT_QUIET_S=$((quiet - 5)); fi
rcf=$(mktemp)
trap 'rm -f "$rcf"' EXIT
exec 3< <("$@" 2>&1; echo $? >"$rcf")
t0=$SECONDS last=$SECONDS buf=
while :; do
	st=0
	IFS= read -r -t 2 line <&3 || st=$?
	if [ "$st" = 0 ]; then
		printf '%s\n' "$buf$line"
		buf= last=$SECONDS
		continue
	fi
	if [ "$st" -gt 128 ]; then
		buf+=$line # a partial line so far; read -t keeps it in line
		if ((SECONDS - last >= quiet)); then
			echo "$label: still running, $((SECONDS - t0)) s"
			last=$SECONDS
		fi
		continue
	fi
	[ -n "$buf$line" ] && printf '%s\n' "$buf$line"
	break
done
exec 3<&-
wait $! 2>/dev/null
rc=$(cat "$rcf" 2>/dev/null)
exit "${rc:-1}"
