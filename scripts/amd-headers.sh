#!/usr/bin/env bash
# amd-headers.sh: fetch the real ROCm -dev headers and runtime libraries from
# Debian (sid's 6.4 and experimental's 7.2) WITHOUT installing them, compile the
# ABI check programs in scripts/amdabi/ against each header set with plain gcc,
# and list the dynamic symbols of each library with readelf. The Go tests in
# rank/hsa and rank/hip compare those outputs with their Go mirrors
# (P2PAT_AMD_ABI=<out>/abi).
#
# Apt state: sid and experimental live in a PRIVATE sources file, lists folder
# and cache under the cache dir (-o Dir::Etc::SourceList=... -o
# Dir::State::Lists=... -o Dir::Cache=...); the system's sources, lists and
# dpkg database are never touched by that part, so nothing can upgrade
# bookworm. Packages are fetched with `apt-get download` and unpacked with
# `dpkg -x`: never installed (their libc is newer than bookworm's anyway).
#
# Separately, and only as root, bookworm's OWN ROCm 5.2 runtime libraries
# (libhsa-runtime64-1, libamdhip64-5) are installed from the system's normal
# sources if missing, for the library-loading tests. Set P2PAT_NO_INSTALL=1 to
# skip that (the loading tests then skip).
#
# Usage: scripts/amd-headers.sh [CACHE_DIR]   (default: .cache/amd-headers)
# Prints, last, the line to export: P2PAT_AMD_ABI=<abs path>
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cache=${1:-$root/.cache/amd-headers}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
start=$(date +%s)

# Pinned versions: <suite> <package> <version>. If a pin has left the archive
# the script says so in one line and uses the version that suite has now.
pins=(
  "experimental libhsa-runtime-dev 7.2.4+dfsg-1~exp1"
  "experimental libhsa-runtime64-1 7.2.4+dfsg-1~exp1"
  "experimental libamdhip64-dev    7.2.4-1~exp2"
  "experimental libamdhip64-7      7.2.4-1~exp2"
  "sid          libhsa-runtime-dev 6.4.3+dfsg-5"
  "sid          libhsa-runtime64-1 6.4.3+dfsg-5"
  "sid          libamdhip64-dev    6.4.3-5"
  "sid          libamdhip64-6      6.4.3-5"
)
mirror=${P2PAT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

need() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }
missing=()
need gcc gcc; need readelf binutils; need apt-get apt; need dpkg dpkg
[[ -r $keyring ]] || missing+=(debian-archive-keyring)
if ((${#missing[@]})); then
  if [[ $(id -u) == 0 ]]; then
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "amd-headers: missing tools; run: apt-get install -y ${missing[*]}" >&2; exit 1
  fi
fi

# --- bookworm's own ROCm 5.2 libraries (system apt, loading tests only) -----
if [[ $(id -u) == 0 && -z ${P2PAT_NO_INSTALL:-} ]]; then
  want=()
  dpkg -s libhsa-runtime64-1 >/dev/null 2>&1 || want+=(libhsa-runtime64-1)
  dpkg -s libamdhip64-5 >/dev/null 2>&1 || want+=(libamdhip64-5)
  if ((${#want[@]})); then
    echo "amd-headers: installing bookworm's ${want[*]} (library-loading tests)"
    if ! DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${want[@]}" >"$cache/apt-install.log" 2>&1; then
      apt-get -o DPkg::Lock::Timeout=600 update -q >>"$cache/apt-install.log" 2>&1 || true
      DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${want[@]}" >>"$cache/apt-install.log" 2>&1 \
        || echo "amd-headers: could not install ${want[*]} (see $cache/apt-install.log); loading tests will skip" >&2
    fi
  fi
elif ! dpkg -s libhsa-runtime64-1 libamdhip64-5 >/dev/null 2>&1; then
  echo "amd-headers: for the loading tests run: apt-get install -y libhsa-runtime64-1 libamdhip64-5" >&2
fi

# --- private apt state for sid + experimental -------------------------------
apt="$cache/apt"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs"
cat >"$apt/sources.list" <<SRC
deb [signed-by=$keyring] $mirror sid main
deb [signed-by=$keyring] $mirror experimental main
SRC
aptopts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/none.d"
  -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
  -o "Acquire::Languages=none" -o "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false"
  -o "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false"
  -o "Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false"
  -o "Acquire::IndexTargets::deb::CNF::DefaultEnabled=false"
  -o "APT::Sandbox::User=root" -q)
mkdir -p "$apt/none.d"
if [[ -z ${P2PAT_AMD_OFFLINE:-} ]] || [[ ! -d $apt/lists ]]; then
  apt-get "${aptopts[@]}" update >"$apt/update.log" 2>&1 || { cat "$apt/update.log" >&2; exit 1; }
fi

# suite_version SUITE PKG: the version SUITE has now ("" if none).
suite_version() {
  apt-cache "${aptopts[@]}" madison "$2" 2>/dev/null |
    awk -F'|' -v s="/debian $1/" 'index($3, s) { gsub(/ /, "", $2); print $2; exit }'
}

declare -A chosen  # "suite pkg" -> version
for p in "${pins[@]}"; do
  read -r suite pkg ver <<<"$p"
  have=$(apt-cache "${aptopts[@]}" madison "$pkg" 2>/dev/null | awk -F'|' -v v="$ver" '{gsub(/ /,"",$2)} $2==v {print $2; exit}')
  if [[ -z $have ]]; then
    now=$(suite_version "$suite" "$pkg")
    if [[ -z $now ]]; then echo "amd-headers: $pkg: pinned $ver has left $suite and $suite has no $pkg now" >&2; exit 1; fi
    echo "amd-headers: $pkg: pinned $ver has left $suite; using $now"
    ver=$now
  fi
  chosen["$suite $pkg"]=$ver
done

# --- download and unpack -----------------------------------------------------
abi="$cache/abi"
rm -rf "$abi"; mkdir -p "$abi"
for suite in experimental sid; do
  hsadev=${chosen["$suite libhsa-runtime-dev"]}
  hipdev=${chosen["$suite libamdhip64-dev"]}
  # The ROCm version is the upstream part of the dev package version.
  rv=${hsadev%%[+-]*}
  dest="$cache/rocm-$rv"
  stamp="$dest/.stamp"
  want="$hsadev $hipdev ${!chosen[*]}"
  if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
    rm -rf "$dest"; mkdir -p "$dest"
    args=()
    for k in "${!chosen[@]}"; do [[ $k == "$suite "* ]] && args+=("${k#* }=${chosen[$k]}"); done
    (cd "$apt/debs" && apt-get "${aptopts[@]}" download "${args[@]}" >"$apt/download-$suite.log" 2>&1) \
      || { cat "$apt/download-$suite.log" >&2; exit 1; }
    for a in "${args[@]}"; do
      n=${a%%=*}; v=${a#*=}
      deb=$(ls "$apt/debs/${n}_${v//:/%3a}_"*.deb 2>/dev/null | head -1)
      [[ -n $deb ]] || { echo "amd-headers: downloaded $a not found in $apt/debs" >&2; exit 1; }
      dpkg -x "$deb" "$dest"
    done
    echo "$want" >"$stamp"
  fi
  inc="$dest/usr/include"
  lib="$dest/usr/lib/x86_64-linux-gnu"
  for prog in hsa hip; do
    src="$here/amdabi/${prog}_abi.c"
    # Identifiers guarded by "#ifdef HAVE_<name>" are optional: define HAVE_x
    # when the header set declares x, so one program serves 6.4 and 7.2.
    defs=()
    for id in $(grep -o 'HAVE_[A-Za-z0-9_]*' "$src" | sort -u | sed 's/^HAVE_//'); do
      grep -rqw -- "$id" "$inc/hsa" "$inc/hip" && defs+=("-DHAVE_$id")
    done
    gcc -std=gnu11 -Wall -Werror -D__HIP_PLATFORM_AMD__ "${defs[@]}" -I"$inc" "$src" -o "$cache/${prog}_abi-$rv"
    {
      echo "# rocm $rv ($prog headers from Debian $suite: libhsa-runtime-dev $hsadev, libamdhip64-dev $hipdev)"
      "$cache/${prog}_abi-$rv"
    } >"$abi/$prog-$rv.txt"
  done
  # Exported symbols (read, never loaded: these need a newer libc).
  readelf --dyn-syms -W "$lib/libhsa-runtime64.so.1" | awk '$7 != "UND" && $5 == "GLOBAL" {sub(/@.*/, "", $8); print $8}' | sort -u >"$abi/syms-hsa-$rv.txt"
  hiplib=$(ls "$lib"/libamdhip64.so.[0-9] | head -1)
  readelf --dyn-syms -W "$hiplib" | awk '$7 != "UND" && $5 == "GLOBAL" {sub(/@.*/, "", $8); print $8}' | sort -u >"$abi/syms-hip-$rv.txt"
  echo "amd-headers: rocm $rv ($suite): $(wc -l <"$abi/hsa-$rv.txt") hsa + $(wc -l <"$abi/hip-$rv.txt") hip ABI lines, $(wc -l <"$abi/syms-hsa-$rv.txt") + $(wc -l <"$abi/syms-hip-$rv.txt") symbols"
done
echo "amd-headers: done in $(( $(date +%s) - start ))s"
echo "P2PAT_AMD_ABI=$abi"
