#!/usr/bin/env bash
# Packet-level fabric prerequisites for CI: Open vSwitch (userspace datapath), Mininet and
# the tools the tests use, then a running OVS. Run as root on Debian; safe to run again.
set -euo pipefail

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root install-packet.sh

apt_install_missing openvswitch-switch mininet iputils-ping ethtool

# No kernel module is needed: the bridges use the userspace datapath (datapath_type=netdev).
if ! ovs-vsctl -t 2 show >/dev/null 2>&1; then
    /usr/share/openvswitch/scripts/ovs-ctl start --system-id=random
fi
ovs-vsctl -t 5 show >/dev/null
echo "install-packet.sh: Open vSwitch $(ovs-vsctl --version | head -1 | awk '{print $NF}') running"
