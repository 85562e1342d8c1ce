"""The running packet-level fabric (fabric-4 on OVS, driven by os-ken agents), one per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.packet_fixtures import Running, running_fabric


@pytest.fixture(scope="module")
def fabric(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """Built when the first test of a module needs it, torn down after the module's last test."""
    name = request.module.__name__.rsplit(".", 1)[-1]
    with running_fabric(tmp_path_factory.mktemp(name)) as running:
        yield running
