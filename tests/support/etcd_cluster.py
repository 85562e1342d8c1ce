"""Real etcd members for the HA tests (controller/ha/local_etcd.py starts them): 1 or 3 ``etcd``
processes on free loopback ports in the test's temp dir, torn down on exit. Where the binary
is missing the test skips saying so; CI installs it (.ci/install-etcd.sh), so they run there.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from controller.ha.local_etcd import MISSING, EtcdCluster, etcd_binary, free_ports, local_etcd

__all__ = ["EtcdCluster", "etcd_binary", "etcd_cluster", "free_ports", "require_etcd"]


def require_etcd() -> str:
    """The etcd binary's path, or skip the test saying why (CI installs it)."""
    path = etcd_binary()
    if path is None:
        pytest.skip(MISSING)
    return path


@contextmanager
def etcd_cluster(tmp: Path, size: int = 1) -> Iterator[EtcdCluster]:
    """``size`` (1 or 3) etcd members for one test; skips where etcd is not installed."""
    require_etcd()
    with local_etcd(tmp, size) as cluster:
        yield cluster
