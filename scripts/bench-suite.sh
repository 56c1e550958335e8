#!/usr/bin/env bash
# bench-suite.sh [BIN [BASE]]: times the default host suite (BIN, default
# bin/specs.test) against the binary of commit BASE (default 6615a8b, the
# head issue 52 was measured at), paired: A B A B ... RUNS pairs (default
# 5), each pair's ratio taken on its own so a machine whose speed drifts
# keeps the ratio meaningful. Prints each pair, the median wall of each and
# the median ratio, the machine (cores, CPU model) and its 1-minute load
# before and after, then where the median A run's time went, from the run's
# own records (results.json: timing.suite_wall_s, timing.worlds, each
# case's duration_s by family, and by kind within it; the perf metrics by
# timed samples taken and the litmus instances, the sizes issue 52 derives
# from power) - the breakdown issue 52 quotes for the GPU.
# BASE's binary is built once into .cache/bench-suite/ from a git worktree.
# The same breakdown of one existing run folder (a GPU run's, say):
#   scripts/bench-suite.sh --breakdown OUT_DIR [PROCESS_WALL_S]
# A benchmark (minutes on two cores), not part of make test.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

breakdown() { # results.json [external wall s]
  python3 - "$1" "${2:-}" <<'EOF'
import json, sys, collections
rep = json.load(open(sys.argv[1]))
ext = float(sys.argv[2]) if sys.argv[2] else None
t = rep.get("timing") or {}
wall = t.get("suite_wall_s") or 0.0
worlds = [w.get("seconds", 0.0) for w in t.get("worlds") or []]
fam, n = collections.defaultdict(float), collections.Counter()
bykind = collections.defaultdict(lambda: collections.defaultdict(float))
hangs = 0.0
cases = 0.0
samples = collections.Counter()  # perf metrics by timed samples taken
strong, mutants = [], 0.0        # litmus: the strong kernels' instances, every mutant's
for r in rep["results"]:
    parts = r["id"].split(".")
    f = parts[2] if len(parts) > 2 else "?"
    d = r.get("duration_s") or 0.0
    if r.get("outcome") == "timeout" and r.get("expected") == "timeout":
        f = "planted hangs"
        hangs += d
    fam[f] += d
    n[f] += 1
    bykind[f][parts[1] if len(parts) > 1 else "?"] += d
    cases += d
    ms = r.get("metrics") or {}
    if f == "perf":
        for m in ms.values():
            k = len(m.get("samples") or [])
            if k >= 3:
                samples[k] += 1
    if f == "litmus" and "planted" not in (r.get("labels") or []):
        if "instances" in ms:
            strong.append(ms["instances"].get("median") or 0)
        mutants += sum((m.get("median") or 0) for k, m in ms.items() if k.startswith("mutant.") and k.endswith(".instances"))
print(f"  {len(rep['results'])} cases; suite wall {wall:.2f} s" + (f", process wall {ext:.2f} s" if ext else ""))
print(f"  case bodies (world starts a case needed included) {cases:.2f} s:")
for f, v in sorted(fam.items(), key=lambda a: -a[1]):
    kinds = ", ".join(f"{k} {s:.2f}" for k, s in sorted(bykind[f].items(), key=lambda a: -a[1]))
    print(f"    {f:<16} {n[f]:4d} cases {v:7.2f} s   ({kinds})")
if samples:
    print("  perf metrics by timed samples: " + ", ".join(f"{k}: {samples[k]}" for k in sorted(samples)))
if strong:
    print(f"  litmus: strong kernels {sum(strong):,.0f} instances in {len(strong)} cases (fewest {min(strong):,.0f}), mutants {mutants:,.0f}")
print(f"  world starts: {len(worlds)}, {sum(worlds):.2f} s (a start a case waited for is inside its duration; a standby's ran beside the case before it)")
print(f"  suite wall outside case bodies (own tests, plan, checkpoint, Ginkgo, judging): {wall - cases:.2f} s")
if ext:
    print(f"  process wall outside the suite wall (start-up, reports): {ext - wall:.2f} s")
EOF
}

if [ "${1:-}" = --breakdown ]; then
  breakdown "${2:?usage: bench-suite.sh --breakdown OUT_DIR [WALL_S]}/results.json" "${3:-}"
  exit $?
fi

bin=${1:-bin/specs.test}
base=${2:-6615a8b}
runs=${RUNS:-5}
[ -x "$bin" ] || { echo "bench-suite: $bin is not built (make build)" >&2; exit 2; }
cache=$root/.cache/bench-suite
basebin=$cache/$base.test
if [ ! -x "$basebin" ]; then
  mkdir -p "$cache"
  wt=$cache/wt-$base
  [ -d "$wt" ] || git worktree add -q --detach "$wt" "$base" || { echo "bench-suite: no worktree of $base" >&2; exit 2; }
  (cd "$wt" && CGO_ENABLED=0 go test -c -o "$basebin" ./specs) || { echo "bench-suite: building $base failed" >&2; exit 2; }
fi
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
load0=$(cut -d' ' -f1 /proc/loadavg)
one() { # binary, out: prints the wall seconds, or FAIL
  local t0 t1 rc
  t0=$(date +%s.%N)
  "$1" --backend=host --out="$2" >"$2.log" 2>&1 </dev/null; rc=$?
  t1=$(date +%s.%N)
  [ $rc = 0 ] || { echo "bench-suite: $1 exited $rc: $(tail -n 1 "$2.log")" >&2; echo FAIL; return; }
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}
as=() bs=() rs=()
for i in $(seq "$runs"); do
  a=$(one "$bin" "$w/a$i"); b=$(one "$basebin" "$w/b$i")
  [ "$a" = FAIL ] || [ "$b" = FAIL ] && exit 1
  r=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / b }')
  as+=("$a") bs+=("$b") rs+=("$r")
  printf 'pair %d: HEAD %6.2f s  %s %6.2f s  ratio %s\n' "$i" "$a" "$base" "$b" "$r"
  rm -rf "$w/b$i"
done
load1=$(cut -d' ' -f1 /proc/loadavg)
med() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ma=$(med "${as[@]}") mb=$(med "${bs[@]}") mr=$(med "${rs[@]}")
model=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //; s/  */ /g')
echo "median of $runs pairs: HEAD ($(git rev-parse --short HEAD)) $ma s, $base $mb s, ratio $mr; $(nproc) × $model, load $load0 → $load1"
# The breakdown of the HEAD run whose wall is nearest the median.
best=1
for i in $(seq "$runs"); do
  if awk -v x="${as[$((i - 1))]}" -v y="${as[$((best - 1))]}" -v m="$ma" 'BEGIN { exit !((x - m) ^ 2 < (y - m) ^ 2) }'; then best=$i; fi
done
echo "where the HEAD run nearest the median went (pair $best):"
breakdown "$w/a$best/results.json" "${as[$((best - 1))]}"
