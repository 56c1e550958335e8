#!/usr/bin/env bash
# Build the suite binary for machines without Go (the GPU machine): a
# cgo-free test binary that is both the suite and its ranks. Not static: it
# is linked against ld.so alone (purego's dlopen of the vendor libraries
# needs the dynamic loader), so it runs on any glibc Linux of the arch.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.dev/specs.test}
mkdir -p "$(dirname "$out")"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
CGO_ENABLED=0 go test -c -o "$out" \
  -ldflags "-X p2patomics/harness/fingerprint.Commit=$commit" ./specs
echo "built $out ($commit)"
