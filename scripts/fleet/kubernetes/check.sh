#!/usr/bin/env bash
# make fleet-kube: the Kubernetes fleet recipe as far as it can be run
# without a cluster (docs/FLEET.md, "Checked in CI"). Not part of make test
# (the validator's cold build alone takes minutes on two cores): .ci/run
# runs it as a step of its own after make test.
#   1. scripts/fleet/kvalidate: job.yaml and job-emptydir.yaml (a node name
#      put in for @NODE@) through the API server's own create path (the
#      real decoding, defaulting and Job/PVC registry strategies of
#      k8s.io/kubernetes, as a library); planted mistakes must be refused.
#   2. the image built from scripts/fleet/Dockerfile, unchanged, with
#      podman; the Job's container started as a kubelet would and merged
#      from its kubectl logs form (cmd/p2pfleet TestKubeletStartsTheJob).
# No registry is reachable here, so the Dockerfile's base image
# (debian:bookworm-slim) is a stand-in made from this machine's own
# Debian bookworm files: sh, mkdir, mv, cat and the glibc the binary
# links. As root on Debian; installs podman and runc when missing, in the
# background while the validator builds (apt waits on the network and on
# dpkg, the build on the CPU: run one after the other they added up).
#
# Each step prints a start line and an end line with its time, as make
# test's phases do, and a long one runs under scripts/progress.sh (a line at
# least every 30 s), so a cold build is never mistaken for a hang.
#
#   scripts/fleet/kubernetes/check.sh BIN/specs.test WORKDIR
set -euo pipefail
cd "$(dirname "$0")/../../.."
spec=$(realpath "${1:?usage: scripts/fleet/kubernetes/check.sh SPECS_BINARY WORKDIR}")
w=${2:?usage: scripts/fleet/kubernetes/check.sh SPECS_BINARY WORKDIR}
N=5
i=0
fail() { echo "fleet-kube: FAIL: $*" >&2; exit 1; }
# step NAME: the start line of the next step; ok [NOTE]: its end line, with
# its time and the time so far (SECONDS: the shell's own clock).
step() {
  i=$((i + 1)) name=$1 ts=$SECONDS
  echo "fleet-kube: [$i/$N] $name: start ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"
}
ok() { echo "fleet-kube: [$i/$N] $name: ok in $((SECONDS - ts)) s${1:+ ($1)}; $SECONDS s so far"; }
# progress CMD...: CMD under progress.sh, its quiet lines naming the step.
progress() { bash scripts/progress.sh "fleet-kube: [$i/$N] $name" "$@"; }
[ "$(id -u)" = 0 ] || fail "needs root (podman with a private storage root)"
rm -rf "$w"
mkdir -p "$w"
w=$(realpath "$w")

# podman and runc, when missing, from apt in the background; step 3 waits
# for it. Its log and status go to files: step 3 polls it from progress.sh's
# child, which cannot `wait` for a process it did not start.
apt_pid=
if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
  echo "fleet-kube: podman or runc missing: installing them in the background (log: $w/apt.log)"
  (
    rc=0
    {
      while fuser /var/lib/dpkg/lock-frontend >/dev/null 2>&1; do sleep 5; done
      DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends podman runc
    } >"$w/apt.log" 2>&1 || rc=$?
    echo "$rc" >"$w/apt.rc"
  ) &
  apt_pid=$!
fi

# 1. The API server's create path.
step "building kvalidate (k8s.io/kubernetes v1.36.3 as a library: minutes with cold Go caches)"
progress go -C scripts/fleet/kvalidate build -o "$w/kvalidate" . || fail "building kvalidate"
ok
step "the manifests through the API server's create path"
for m in job job-emptydir; do
  sed 's/@NODE@/gpu-node-017/g' "scripts/fleet/kubernetes/$m.yaml" >"$w/$m.yaml"
  "$w/kvalidate" "$w/$m.yaml" || fail "$m.yaml refused by the API server's create path"
done
planted=(
  's/nvidia.com\/gpu: 8/nvidia.com\/gpu: 8.5/|must be an integer'
  's/fieldPath: spec.nodeName/fieldPath: spec.node/|fieldPath'
  's/activeDeadlineSeconds: 3600/activeDeadlineSeconds: -1/|activeDeadlineSeconds'
  's/backoffLimit: 0/backoffLimit: -1/|backoffLimit'
  's/memory: 4Gi/memory: 4Gx/|quantities must match'
  's/p2patomics-gpu-node-017/p2patomics_gpu_node_017/|name'
)
for p in "${planted[@]}"; do
  expr=${p%%|*} want=${p#*|}
  sed "$expr" "$w/job.yaml" >"$w/planted.yaml"
  cmp -s "$w/job.yaml" "$w/planted.yaml" && fail "planted '$expr' changed nothing"
  rc=0
  "$w/kvalidate" "$w/planted.yaml" >"$w/planted.out" 2>&1 || rc=$?
  [ $rc = 1 ] && grep -q -- "$want" "$w/planted.out" || { cat "$w/planted.out"; fail "planted '$expr': exit $rc, want 1 naming '$want'"; }
  echo "ok:   planted '$expr' refused: $(grep -o -- "$want[^,]*" "$w/planted.out" | head -1)"
done
ok "2 manifests valid, ${#planted[@]} planted mistakes refused"

# 2. The image and the kubelet-like start.
step "podman and runc"
if [ -n "$apt_pid" ]; then
  progress bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done' _ "$apt_pid"
  wait "$apt_pid" || true
  [ "$(cat "$w/apt.rc" 2>/dev/null)" = 0 ] || { cat "$w/apt.log"; fail "installing podman and runc"; }
  ok "installed: $(podman --version), $(runc --version | head -1)"
else
  ok "already installed: $(podman --version), $(runc --version | head -1)"
fi
# This VM's root lacks CAP_SYS_RESOURCE (hard nofile 20000), below podman's
# default rlimits; crun refuses cgroup v1 hybrid mode, runc does not.
cat >"$w/containers.conf" <<'CONF'
[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]
CONF
export CONTAINERS_CONF=$w/containers.conf
# podman's storage lives in a space-free directory of its own: the command
# line travels as one word-split string (here and in P2PAT_PODMAN, which the
# test splits on blanks), and a clone may sit under a path with a space.
ps=$(mktemp -d /tmp/p2pat-podman.XXXXXX)
P="podman --root $ps/storage --runroot $ps/run --storage-driver=vfs --runtime=runc"
cleanup() {
  $P rm -af >/dev/null 2>&1 || true; $P rmi -af >/dev/null 2>&1 || true
  rm -rf "$ps" 2>/dev/null || true
}
trap cleanup EXIT
step "the image from scripts/fleet/Dockerfile, on a stand-in debian:bookworm-slim"
mkdir -p "$w/rootfs"/{bin,etc,tmp,proc,sys,dev,results}
for b in /bin/sh /bin/mkdir /bin/mv /bin/cat; do cp -L "$b" "$w/rootfs/bin/"; done
for l in $(ldd /bin/sh /bin/mkdir /bin/mv /bin/cat "$spec" | grep -o '/[^ ]*\.so[^ ]*' | sort -u); do
  mkdir -p "$w/rootfs$(dirname "$l")"
  cp -L "$l" "$w/rootfs$l"
done
cp /etc/os-release "$w/rootfs/etc/"
tar -C "$w/rootfs" -c . | $P import - docker.io/library/debian:bookworm-slim >/dev/null
mkdir -p "$w/ctx/bin"
cp "$spec" "$w/ctx/bin/specs.test"
progress $P build -q --pull=never -f scripts/fleet/Dockerfile -t registry.example.com/p2patomics:0.1.0 "$w/ctx" >"$w/image.id" ||
  fail "podman build"
ok "image $(cut -c1-12 "$w/image.id")"
# The test's own lines as they come (one per pod, the subtests' results);
# all its output goes to kubelet.out, shown when it fails.
step "TestKubeletStartsTheJob: 4 pods for each of the 2 manifests, merged by p2pfleet"
P2PAT_PODMAN=$P P2PAT_PODMAN_IMAGE=registry.example.com/p2patomics:0.1.0 \
  progress bash -c 'go test -count=1 -run "^TestKubeletStartsTheJob\$" -v ./cmd/p2pfleet 2>&1 | tee "$1" |
    grep --line-buffered -E "^(=== RUN|--- |    --- |ok |FAIL)|kubelet_test.go:[0-9]+: node-"' _ "$w/kubelet.out" ||
  { cat "$w/kubelet.out"; fail "TestKubeletStartsTheJob"; }
grep -q -- '--- SKIP' "$w/kubelet.out" && fail "TestKubeletStartsTheJob was skipped"
grep -q '^--- PASS: TestKubeletStartsTheJob ' "$w/kubelet.out" || fail "TestKubeletStartsTheJob did not report PASS"
ok
echo "fleet-kube: PASS in $SECONDS s"
