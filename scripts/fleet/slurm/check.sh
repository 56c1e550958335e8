#!/usr/bin/env bash
# make fleet-slurm: the Slurm fleet recipe on a live single-host Slurm
# cluster (docs/FLEET.md, "Checked in CI"). As root on Debian: installs
# slurm-wlm and munge when missing, starts munged, slurmctld and three
# slurmd (n1..n3, one per node name, all on 127.0.0.1), submits
# scripts/fleet/slurm/p2patomics.sbatch once per node on the host backend
# (an --atomics selection, 2 stand-in GPUs per node, so --ranks=2), waits,
# and checks:
#   1. a clean fleet: every job COMPLETED 0:0 in sacct, p2pfleet --gate exit 0, and a
#      P2PAT_CASE in the submitter's environment did not reach the suite;
#   2. a planted failing node (a baseline that lists a passing case as
#      failing): its job FAILED 1:0 in sacct, "srun: error: n3: task 0: Exited with
#      exit code 1", p2pfleet --gate exit 1, --drain names n3 alone;
#   3. a planted broken node (exit 2 with zero cases: --case=no.such.case):
#      FAILED 2:0; a usage error writes no results.json (it is refused before
#      --out is touched), so p2pfleet says "no result" and "suite exit status 2", exit 1;
#   4. a node without the binary (exit 127, no results.json): "no result".
# Every daemon is stopped by its pid on exit. Only 127.0.0.1 is used, on
# ports found free at the start (two runs on one machine do not collide).
# munged runs as the munge user, which cannot reach a checkout under a
# private (0700) folder such as root's home: its files live in a mktemp
# folder under /tmp owned by munge, removed on exit. The Slurm daemons and
# jobs run as root and keep theirs under WORKDIR.
#
#   scripts/fleet/slurm/check.sh BIN/specs.test WORKDIR
set -euo pipefail
cd "$(dirname "$0")/../../.."
root=$PWD
spec=$(realpath "${1:?usage: scripts/fleet/slurm/check.sh SPECS_BINARY WORKDIR}")
w=${2:?usage: scripts/fleet/slurm/check.sh SPECS_BINARY WORKDIR}
t0=$(date +%s)
step() { echo "fleet-slurm: $* ($(($(date +%s) - t0)) s)"; }
fail() { echo "fleet-slurm: FAIL: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "needs root (it starts slurmctld, slurmd and munged)"
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null || ! command -v sbatch >/dev/null; then
  step "installing slurm-wlm and munge"
  # Other package installs may hold the dpkg lock: wait for it.
  while fuser /var/lib/dpkg/lock-frontend >/dev/null 2>&1; do sleep 5; done
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
fi
step "slurm $(slurmctld -V 2>&1 | head -1), $(munged -V 2>&1 | head -1)"

rm -rf "$w"
mkdir -p "$w"
w=$(realpath "$w")
pids=()
mg=
sw=
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ -n "$mg" ] && [ -s "$mg/munged.pid" ]; then kill "$(cat "$mg/munged.pid")" 2>/dev/null || true; fi
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
  done
  # munged's log is the first thing to read when it did not start: keep a
  # copy in the work folder, then remove its /tmp folder.
  if [ -n "$mg" ]; then
    cp "$mg/munged.log" "$w/munged.log" 2>/dev/null || true
    rm -rf "$mg"
  fi
  if [ -n "$sw" ]; then rm -f "$sw"; fi
}
trap cleanup EXIT

# munge: its own key, socket and files, run as the munge user (munged
# refuses root-owned keys it cannot trust), in a folder that user can reach
# wherever the checkout is (/tmp, not WORKDIR: issue 38 item 1).
mg=$(mktemp -d /tmp/p2pat-munge.XXXXXX)
dd if=/dev/urandom of="$mg/munge.key" bs=1024 count=1 status=none
chown -R munge:munge "$mg"
chmod 0755 "$mg"
chmod 0400 "$mg/munge.key"
runuser -u munge -- munged --key-file="$mg/munge.key" --socket="$mg/sock" \
  --pid-file="$mg/munged.pid" --log-file="$mg/munged.log" --seed-file="$mg/seed"
for _ in $(seq 100); do [ -S "$mg/sock" ] && break; sleep 0.1; done
[ -S "$mg/sock" ] || fail "munged did not start: $(tail -3 "$mg/munged.log" 2>/dev/null)"

# free_ports N: N TCP ports on 127.0.0.1 that nothing listens on, from a
# random start (a second make fleet-slurm on this machine picks others).
free_ports() {
  local want=$1 p=$((20000 + RANDOM % 30000)) got=()
  while [ ${#got[@]} -lt "$want" ] && [ $p -lt 65000 ]; do
    # A connect that succeeds: something listens there.
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then got+=("$p"); fi
    p=$((p + 1))
  done
  [ ${#got[@]} = "$want" ] || fail "no $want free ports on 127.0.0.1"
  echo "${got[*]}"
}
read -r ctld_port n1_port n2_port n3_port < <(free_ports 4)

# Two stand-in GPU device files per node: a gres.conf line without File=
# registers 0 GPUs and the node goes INVAL.
mkdir -p "$w/dev" "$w/state" "$w/spool"
for i in 0 1; do mknod "$w/dev/gpu$i" c 1 3; done
# Slurm's config splits a value at a space: a checkout under "p2p atomics"
# reaches the work folder through a space-free link under /tmp.
sw=$(mktemp -u /tmp/p2pat-slurm.XXXXXX)
ln -s "$w" "$sw"
export SLURM_CONF=$sw/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=p2pci
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
AuthType=auth/munge
AuthInfo=socket=$mg/sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$sw/state
SlurmdSpoolDir=$sw/spool/%n
SlurmctldPidFile=$sw/slurmctld.pid
SlurmdPidFile=$sw/slurmd.%n.pid
SlurmctldLogFile=$sw/slurmctld.log
SlurmdLogFile=$sw/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/filetxt
JobCompLoc=$sw/jobcomp.txt
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=600
KillWait=10
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$n1_port CPUs=2 Gres=gpu:2 State=UNKNOWN
NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$n2_port CPUs=2 Gres=gpu:2 State=UNKNOWN
NodeName=n3 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$n3_port CPUs=2 Gres=gpu:2 State=UNKNOWN
PartitionName=ci Nodes=n1,n2,n3 Default=YES MaxTime=10 State=UP
EOF
cat >"$w/gres.conf" <<EOF
NodeName=n[1-3] Name=gpu File=$sw/dev/gpu[0-1]
EOF
slurmctld -D -i -f "$SLURM_CONF" >"$w/slurmctld.out" 2>&1 &
pids+=($!)
for n in n1 n2 n3; do
  mkdir -p "$w/spool/$n"
  slurmd -D -N "$n" -f "$SLURM_CONF" >"$w/slurmd.$n.out" 2>&1 &
  pids+=($!)
done
for _ in $(seq 300); do
  idle=$(sinfo -h -N -o '%N %T' 2>/dev/null | awk '$2 == "idle"' | wc -l)
  [ "$idle" = 3 ] && break
  sleep 0.2
done
[ "$idle" = 3 ] || { sinfo -N 2>&1; tail -5 "$w"/slurmctld.log "$w"/slurmd.*.log 2>&1; fail "three idle nodes did not come up"; }
step "slurmctld (port $ctld_port) and 3 slurmd (ports $n1_port $n2_port $n3_port) up: $(sinfo -h -N -o '%N:%T' | paste -sd' ')"

# bin/ as the recipe's P2PAT_BIN; a planted baseline (the committed host
# baseline with one passing case listed as failing).
mkdir -p "$w/bin"
cp "$spec" "$w/bin/specs.test"
cp -r expectations/host-amd64 "$w/planted"
sed -i "s/arch=amd64/arch=$(uname -m | sed 's/x86_64/amd64/;s/aarch64/arm64/')/" "$w/planted/cases.txt" "$w/planted/fails.txt"
printf '# planted by make fleet-slurm: a case that passes, listed as failing\nhost.memfd.counter.add_u64_relaxed_sys,fail\n' >>"$w/planted/fails.txt"

# submit SHARED NODE [EXTRA FLAGS] [BIN]: one job on NODE, its id on stdout.
submit() {
  P2PAT_SHARED=$1 P2PAT_BIN=${4:-$w/bin} P2PAT_FLEET_BACKEND=host P2PAT_FLEET_ARGS="--atomics ${3:-}" \
    sbatch --parsable -D "$w" -w "$2" --gres=gpu:2 --time=5 \
    --output="$w/job-%j.out" scripts/fleet/slurm/p2patomics.sbatch
}
# await JOB...: wait for the jobs to leave the queue (a deadline, never a
# wall-clock assert: a loaded machine just takes longer).
await() {
  local left
  for _ in $(seq 1200); do
    left=$(squeue -h -j "$(IFS=,; echo "$*")" 2>/dev/null | wc -l)
    [ "$left" = 0 ] && return 0
    sleep 0.5
  done
  squeue; fail "jobs $* still queued after 10 min"
}
# state JOB: "STATE EXIT:SIGNAL" as sacct reads the job's completion record
# (jobcomp/filetxt: sacct -c; there is no slurmdbd here).
state() { sacct -c -j "$1" -n -X -o State,ExitCode | awk 'NR == 1 {print $1, $2}'; }
want_state() {
  local got ctl
  got=$(state "$1")
  [ "$got" = "$2" ] || { cat "$w/job-$1.out"; fail "job $1 ($3): sacct says '$got', want '$2'"; }
  # slurmctld's own record agrees.
  ctl=$(scontrol show job "$1" | grep -o -e 'JobState=[A-Z_]*' -e ' ExitCode=[0-9:]*' | cut -d= -f2 | paste -sd' ')
  [ "$ctl" = "$2" ] || fail "job $1: scontrol says '$ctl', sacct '$got'"
  echo "ok:   job $1 ($3): sacct $got"
}
go build -o "$w/p2pfleet" ./cmd/p2pfleet
fleet() { "$w/p2pfleet" "$@"; }

# 1. A clean fleet, one job per node. The submitter's environment holds a
# P2PAT_CASE that would make every suite exit 2 if it leaked to the step.
export P2PAT_CASE=no.such.case
clean=$w/clean
ids=()
for n in n1 n2 n3; do ids+=("$(submit "$clean" "$n")"); done
unset P2PAT_CASE
await "${ids[@]}"
step "clean fleet ran: jobs ${ids[*]}"
for i in 0 1 2; do want_state "${ids[$i]}" "COMPLETED 0:0" "clean n$((i + 1))"; done
for n in n1 n2 n3; do
  [ -s "$clean/$n/results.json" ] && [ "$(cat "$clean/$n/exit_status")" = 0 ] && [ -s "$clean/$n/run.log" ] \
    || fail "clean $n: want results.json, exit_status 0 and run.log in its folder: $(ls "$clean/$n" 2>&1)"
done
[ ! -e "$clean/n1.run.log" ] || fail "the shared log was not moved into the node's folder"
grep -q '"flags_env"' "$clean/n1/results.json" && fail "a P2PAT_* variable reached the suite through --export=NONE: $(grep -A3 flags_env "$clean/n1/results.json")"
fleet --gate --drain "$clean"/*/ >"$w/clean.txt" || { cat "$w/clean.txt"; fail "the clean fleet fails p2pfleet --gate"; }
grep -q '^fleet: PASS' "$w/clean.txt" && ! grep -q '^scontrol' "$w/clean.txt" || { cat "$w/clean.txt"; fail "the clean fleet's report"; }
echo "ok:   clean fleet: p2pfleet --gate exit 0, $(grep -c '^n[0-9] ' "$w/clean.txt") nodes, no drain line"

# 2-4. n3 planted failing, broken, without its binary; n1 and n2 are the
# clean fleet's (copied: their results do not change).
planted() {
  local dir=$w/$1
  mkdir -p "$dir"
  cp -r "$clean/n1" "$clean/n2" "$dir/"
}
planted failing; planted broken; planted nobin
jf=$(submit "$w/failing" n3 "--expectations=$sw/planted")
jb=$(submit "$w/broken" n3 "--case=no.such.case")
jn=$(submit "$w/nobin" n3 "" "$w/no-such-bin")
await "$jf" "$jb" "$jn"
step "planted nodes ran: jobs $jf $jb $jn"
want_state "$jf" "FAILED 1:0" "n3 planted failing"
want_state "$jb" "FAILED 2:0" "n3 planted broken"
want_state "$jn" "FAILED 127:0" "n3 without the binary"
grep -q 'srun: error: n3: task 0: Exited with exit code 1' "$w/job-$jf.out" || { cat "$w/job-$jf.out"; fail "no 'srun: error: n3: task 0: Exited with exit code 1' line"; }
echo "ok:   srun names the failing node: $(grep 'srun: error' "$w/job-$jf.out")"
for c in failing:"1 case of" broken:"suite exit status 2" nobin:"no result: no results.json"; do
  name=${c%%:*} want=${c#*:}
  rc=0
  fleet --gate --drain "$w/$name"/*/ >"$w/$name.txt" || rc=$?
  [ $rc = 1 ] || { cat "$w/$name.txt"; fail "$name: p2pfleet --gate exit $rc, want 1"; }
  grep -q "^  node n3: .*$want" "$w/$name.txt" || { cat "$w/$name.txt"; fail "$name: the report does not name n3 with '$want'"; }
  d=$(grep '^scontrol update' "$w/$name.txt")
  [ "$(echo "$d" | wc -l)" = 1 ] && [[ $d == 'scontrol update nodename=n3 state=drain reason="p2patomics: '* ]] \
    || { cat "$w/$name.txt"; fail "$name: --drain should print one line for n3, got: $d"; }
  echo "ok:   $name n3: p2pfleet --gate exit 1; $d"
done
# The drain line is one Slurm takes.
scontrol update nodename=n3 state=drain reason="p2patomics: make fleet-slurm"
sinfo -h -n n3 -o '%T' | grep -q drain || fail "n3 did not drain"
echo "ok:   scontrol drained n3: $(sinfo -h -n n3 -o '%T %E')"
step "PASS"
