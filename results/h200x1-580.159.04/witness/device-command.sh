#!/bin/bash
# The witness device run: the cuda suite (traces kept for the plan), then the
# mutation sweep over the tally, sum, fill and copy kernels.
set -u
cd "$(dirname "$0")/../.."
export NCCL_NVLS_ENABLE=0
W=$PWD/.dev/witness
R=$OUT
mkdir -p "$R"
OUT=/tmp/suite P2PAT_BIN=$W/specs.test timeout 300 bash scripts/device-run.sh --backend=cuda --trace --pairs=alone >/dev/null 2>&1
echo "suite exit $(cat /tmp/suite/exit_status 2>/dev/null)" > "$R/status.txt"
cp /tmp/suite/results.json /tmp/suite/run.log /tmp/suite/summary.txt /tmp/suite/junit.xml "$R/" 2>/dev/null
tail -3 /tmp/suite/run.log >> "$R/status.txt"
( time timeout 270 "$W/p2pmutate" --specs="$W/specs.test" --out=/tmp/mut --backend=cuda --kernels='^(tally|sum|fill|copy)_' --healthy=/tmp/suite ) > "$R/sweep.txt" 2>&1
echo "sweep exit $?" >> "$R/sweep.txt"
cp /tmp/mut/mutate.json /tmp/mut/mutate.txt "$R/" 2>/dev/null
cd /tmp/mut && tar czf "$R/sweep-runs.tgz" drop-*/results.json drop-*.log 2>/dev/null
cat "$R/status.txt" "$R/sweep.txt"
