#!/usr/bin/env bash
# Packet-level fabric prerequisites for CI: Open vSwitch (userspace datapath), Mininet and
# the tools the tests use, then a running OVS. Run as root on Debian; safe to run again.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
    echo "install-packet.sh: must run as root" >&2
    exit 1
fi

packages=(openvswitch-switch mininet iputils-ping ethtool)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# No kernel module is needed: the bridges use the userspace datapath (datapath_type=netdev).
if ! ovs-vsctl -t 2 show >/dev/null 2>&1; then
    /usr/share/openvswitch/scripts/ovs-ctl start --system-id=random
fi
ovs-vsctl -t 5 show >/dev/null
echo "install-packet.sh: Open vSwitch $(ovs-vsctl --version | head -1 | awk '{print $NF}') running"
