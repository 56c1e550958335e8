#!/usr/bin/env bash
# build-kernels.sh [--check]: build kernels/src/kernels.cu into kernels/obj/
#   kernels.sm_70.ptx kernels.sm_90.ptx   NVIDIA PTX text (Go appends the NUL at load)
#   kernels.<gfx>.hsaco                   one plain AMDGPU ELF code object per target
# with Debian's clang-19 pinned by scripts/install-clang.sh. --check builds into
# a temporary folder and fails, listing the files, if any committed object
# differs (or is missing, or is not built any more). See docs/KERNELS.md.
# For kernels/objects_test.go (planted-bug rebuild) three variables override
# the defaults: KERNELS_SRC (folder with kernels.cu), KERNELS_OUT (output
# folder) and KERNELS_TARGETS (a space-separated subset, e.g. "sm_90 gfx942").
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
check=0
case "${1:-}" in
"") ;;
--check) check=1 ;;
*) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

"$root/scripts/install-clang.sh"

CLANG=${CLANG:-clang-19}
PTX_ARCHS=(sm_70 sm_90)
GFX_ARCHS=(gfx90a gfx942 gfx1030 gfx1100 gfx1101 gfx1200 gfx1201)
# The same flags are in kernels/objects_test.go (planted-bug rebuild).
PTX_FLAGS=(-x cuda --cuda-device-only -nocudainc -nocudalib -O2 -S)
# clang-19's defaults for atomics (no unsafe fp atomics). Note both vendors'
# compilers aggregate a wave's/warp's atomics on one address: LLVM's AMDGPU
# atomic optimizer here, ptxas (REDUX + one RED) at JIT time on NVIDIA.
# -fuse-cuid=none: otherwise the __hip_cuid_<hash> symbol hashes the temporary
# object path and the ELF differs on every build.
GFX_FLAGS=(-x hip --offload-device-only --no-gpu-bundle-output -nogpulib -nogpuinc
	-mcode-object-version=5 -O3 -fuse-cuid=none)

if [ -n "${KERNELS_TARGETS:-}" ]; then
	want=" $KERNELS_TARGETS "
	sel=()
	for a in "${PTX_ARCHS[@]}"; do [[ $want == *" $a "* ]] && sel+=("$a"); done
	PTX_ARCHS=("${sel[@]}")
	sel=()
	for a in "${GFX_ARCHS[@]}"; do [[ $want == *" $a "* ]] && sel+=("$a"); done
	GFX_ARCHS=("${sel[@]}")
fi

out=${KERNELS_OUT:-$root/kernels/obj}
if [ $check = 1 ]; then
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"

# Relative source path and a fixed working directory keep the outputs free of
# absolute paths; TMPDIR only holds clang's intermediates.
cd "${KERNELS_SRC:-$root/kernels/src}"
export LC_ALL=C SOURCE_DATE_EPOCH=0
pids=()
for a in ${PTX_ARCHS[@]+"${PTX_ARCHS[@]}"}; do
	"$CLANG" "${PTX_FLAGS[@]}" --cuda-gpu-arch="$a" kernels.cu -o "$out/kernels.$a.ptx" &
	pids+=($!)
done
for a in ${GFX_ARCHS[@]+"${GFX_ARCHS[@]}"}; do
	"$CLANG" "${GFX_FLAGS[@]}" --offload-arch="$a" kernels.cu -o "$out/kernels.$a.hsaco" &
	pids+=($!)
done
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
[ $fail = 0 ] || { echo "build-kernels: clang failed" >&2; exit 1; }
chmod 0644 "$out"/*   # lld marks the code objects executable; keep git modes stable

[ $check = 1 ] || exit 0

bad=()
for f in "$out"/*; do
	n=$(basename "$f")
	cmp -s "$f" "$root/kernels/obj/$n" || bad+=("kernels/obj/$n")
done
for f in "$root"/kernels/obj/*; do
	n=$(basename "$f")
	[ -e "$out/$n" ] || bad+=("kernels/obj/$n (not built by this script)")
done
if [ ${#bad[@]} -gt 0 ]; then
	echo "build-kernels --check: committed objects differ from what kernels/src builds to (run make kernels):" >&2
	printf '  %s\n' "${bad[@]}" >&2
	exit 1
fi
echo "build-kernels --check: ${#PTX_ARCHS[@]} PTX and ${#GFX_ARCHS[@]} ELF objects match kernels/src"
