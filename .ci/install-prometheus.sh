#!/usr/bin/env bash
# promtool for CI (`promtool check rules`, `promtool check metrics` in tests/deploy/): Debian's
# `prometheus` package. Only the tool is wanted: the package's server is kept from starting
# (policy-rc.d while installing) and stopped if something started it. Run as root; safe to run again.
set -euo pipefail

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root install-prometheus.sh

if ! command -v promtool >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    policy=/usr/sbin/policy-rc.d
    created_policy=0
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' > "$policy"   # 101: "action forbidden" for invoke-rc.d
        chmod 755 "$policy"
        created_policy=1
    fi
    trap '[ "$created_policy" -eq 1 ] && rm -f "$policy"' EXIT
    apt-get update -q
    apt-get install -y -q --no-install-recommends prometheus
fi

# Leave no Prometheus server behind (a system with systemd may have started the unit).
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
    systemctl stop prometheus
fi
if [ -x /etc/init.d/prometheus ] && /etc/init.d/prometheus status >/dev/null 2>&1; then
    /etc/init.d/prometheus stop
fi
echo "install-prometheus.sh: $(promtool --version 2>&1 | head -1)"
