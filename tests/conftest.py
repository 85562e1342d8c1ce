"""Fixtures shared across the test folders: the shipped fabrics, loaded once per session."""

from __future__ import annotations

import pytest

from optimizer.fabric import Fabric
from tests.support import shipped_fabric


@pytest.fixture(scope="session")
def fabric4() -> Fabric:
    """``configs/fabric-4.yaml``: 4 blocks, 2 OCSes."""
    return shipped_fabric("fabric-4")


@pytest.fixture(scope="session")
def fabric8() -> Fabric:
    """``configs/fabric-8.yaml``: 8 blocks, 4 OCSes in 2 failure domains."""
    return shipped_fabric("fabric-8")


@pytest.fixture(scope="session")
def hybrid8() -> Fabric:
    """``configs/fabric-hybrid-8.yaml``: 8 blocks of mixed speeds beside a spine."""
    return shipped_fabric("fabric-hybrid-8")
