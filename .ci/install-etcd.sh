#!/usr/bin/env bash
# etcd for the HA tests (issue 14): Debian's etcd-server (the `etcd` binary the tests start
# on free loopback ports, 1 or 3 members each) and etcd-client (etcdctl, for operators). The
# packaged systemd unit is not started: every test starts and tears down its own members.
# Run as root on Debian; safe to run again.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
    echo "install-etcd.sh: must run as root" >&2
    exit 1
fi

packages=(etcd-server etcd-client)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

command -v etcd >/dev/null
echo "install-etcd.sh: $(etcd --version | head -1)"
