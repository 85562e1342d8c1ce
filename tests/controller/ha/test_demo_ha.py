"""``heliostat demo --ha`` end to end: 3 etcd members, 3 replicas, the leader killed mid-change."""

from __future__ import annotations

import re

import pytest

from tests.support.cli_helpers import run_cli
from tests.support.etcd_cluster import etcd_binary


@pytest.mark.slow
@pytest.mark.skipif(etcd_binary() is None, reason="etcd is not installed (.ci/install-etcd.sh installs it)")
def test_the_ha_demo_fails_over_mid_reconfiguration_without_loss() -> None:
    result = run_cli("demo", "--ha", timeout=240)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "SIGKILL the leader replica-a" in out
    failover = float(re.search(r"failover: (\d+\.\d) s", out).group(1))  # type: ignore[union-attr]
    assert failover <= 2 + 1 + 2  # lease_ttl + one cycle (te_interval 1 s) + slack
    new_leader = re.search(r"new leader: (replica-[bc]) \(epoch (\d+), was replica-a with epoch (\d+)\)", out)
    assert new_leader is not None and int(new_leader.group(2)) > int(new_leader.group(3))
    assert re.search(r"reconfiguration \d+: (done|rolled_back)", out)
    assert "traffic lost during the change (blackholed): 0 bytes" in out
