#!/usr/bin/env bash
# etcd for the HA tests (issue 14): Debian's etcd-server (the `etcd` binary the tests start
# on free loopback ports, 1 or 3 members each) and etcd-client (etcdctl, for operators). The
# packaged systemd unit is not started: every test starts and tears down its own members.
# Run as root on Debian; safe to run again.
set -euo pipefail

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root install-etcd.sh

apt_install_missing etcd-server etcd-client

command -v etcd >/dev/null
echo "install-etcd.sh: $(etcd --version | head -1)"
