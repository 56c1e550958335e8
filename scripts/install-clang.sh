#!/usr/bin/env bash
# install-clang.sh: make sure Debian's clang-19, lld-19 and llvm-19 are at the
# version the committed kernel objects were built with. Installs them when
# missing (as root; otherwise prints the apt-get line and exits 1). A different
# installed version is one line naming both versions and exit status 1: the
# objects would not reproduce byte for byte, so we refuse rather than diff.
set -euo pipefail

want='1:19.1.7-3~deb12u1'
pkgs=(clang-19 lld-19 llvm-19)

missing=()
for p in "${pkgs[@]}"; do
	have=$(dpkg-query -W -f='${db:Status-Abbrev} ${Version}' "$p" 2>/dev/null || true)
	case "$have" in
	"ii  $want") ;;
	ii*) echo "install-clang: $p ${have#ii  } is installed but the kernels are pinned to $want" >&2; exit 1 ;;
	*) missing+=("$p=$want") ;;
	esac
done
if [ ${#missing[@]} -eq 0 ]; then
	# Say so: a silent exit 0 read as "did it do anything?" (issue 49 U23).
	echo "install-clang: ${pkgs[*]} are already installed at $want: nothing to do" >&2
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	echo "install-clang: missing ${missing[*]}; run as root: apt-get update && apt-get install -y ${missing[*]}" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
