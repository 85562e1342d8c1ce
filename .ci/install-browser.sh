#!/usr/bin/env bash
# Browser-test prerequisites for CI: Debian's chromium, which the status page's test
# (pytest -m browser) runs headless. Run as root on Debian; safe to run again.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
    echo "install-browser.sh: must run as root" >&2
    exit 1
fi

packages=(chromium fonts-dejavu-core)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
echo "install-browser.sh: $(chromium --version 2>/dev/null || echo 'chromium installed')"
