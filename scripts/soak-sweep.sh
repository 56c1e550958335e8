#!/usr/bin/env bash
# The soak over many random seeds, outside make test's time line
# (make soak-sweep SEEDS=200; docs/FAULTS.md "The soak"). make test's soak
# runs fixed seeds so it gives the same answer on every run; this sweep
# looks for the seed that breaks an invariant. Each seed runs the soak's
# first pass (every scenario once) and a few random runs; a failing seed's
# folder is kept, its replay line printed; add it to SOAK_SEEDS in the
# Makefile as a regression seed once fixed.
#
#   bash scripts/soak-sweep.sh SPECS OUT SEEDS [RUNS]
#
# Exit 0 when every seed held, 1 when one did not, 2 for a usage error.
set -uo pipefail
if [ $# -lt 3 ] || ! [[ "$3" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: soak-sweep.sh SPECS OUT SEEDS [RUNS] (SEEDS: how many random seeds, >= 1)" >&2
  exit 2
fi
specs=$1 out=$2 n=$3 runs=${4:-10}
mkdir -p "$out" || exit 2
soak="$out/p2psoak"
go build -o "$soak" ./cmd/p2psoak || exit 2
failed=() t0=$SECONDS
for i in $(seq 1 "$n"); do
  # 63 random bits: the seed space p2psoak draws from by default.
  seed=$(( $(od -An -N8 -tu8 /dev/urandom) & 0x7fffffffffffffff ))
  dir="$out/$seed"
  if "$soak" --specs="$specs" --out="$dir" --seed="$seed" --runs="$runs" >"$dir.log" 2>&1; then
    echo "soak-sweep: seed $i/$n $seed held ($(tail -n 1 "$dir.log"))"
    rm -rf "$dir" "$dir.log"
  else
    echo "soak-sweep: seed $i/$n $seed FAILED: $(grep -m 3 'FAIL' "$dir.log" | tr '\n' ' ')"
    echo "  replay: $soak --specs=$specs --out=$dir --seed=$seed --runs=$runs (runs in $dir, log $dir.log)"
    failed+=("$seed")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "soak-sweep: FAIL - ${#failed[@]} of $n seeds did not hold in $((SECONDS - t0)) s: ${failed[*]}"
  exit 1
fi
echo "soak-sweep: PASS - $n seeds held in $((SECONDS - t0)) s"
