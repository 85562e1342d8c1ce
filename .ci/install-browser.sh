#!/usr/bin/env bash
# Browser-test prerequisites for CI: Debian's chromium, which the status page's test
# (pytest -m browser) runs headless. Run as root on Debian; safe to run again.
set -euo pipefail

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root install-browser.sh

apt_install_missing chromium fonts-dejavu-core
echo "install-browser.sh: $(chromium --version 2>/dev/null || echo 'chromium installed')"
