#!/usr/bin/env bash
# install-chromium.sh: make sure a headless Chromium is on PATH for the
# report's browser test (harness/htmlreport TestBrowser). Installs Debian's
# chromium package when missing (as root; otherwise prints the apt-get line
# and exits 0: the browser test skips with its reason, nothing else needs
# it). --no-install-recommends keeps it to the browser and its libraries;
# on Debian bookworm that took about 21 s with the package lists fresh.
set -euo pipefail

for b in chromium chromium-browser google-chrome; do
	command -v "$b" >/dev/null 2>&1 && exit 0
done
if [ "$(id -u)" != 0 ]; then
	echo "install-chromium: no chromium on PATH (the report's browser test will skip); run as root: apt-get update && apt-get install -y --no-install-recommends chromium" >&2
	exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends chromium >/dev/null 2>&1; then
	apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
	apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends chromium >/dev/null
fi
