"""HA test helpers: controller configs of replicas (``ha:``) and a shared-journal reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from controller.ha.etcd_journal import EtcdJournal
from controller.ha.etcd_kv import EtcdKV
from controller.northbound import ControllerClient, ControllerClientError
from tests.support.daemon_support import controller_config, free_port

PREFIX = "/heliostat/test"


def replica_config(
    tmp: Path, fabric_file: Path, devices: Path, name: str, endpoints: list[str], lease_ttl: int = 2,
    prefix: str = PREFIX, **kwargs: Any,
) -> tuple[Path, str]:
    """A replica's config in ``tmp/name``; returns it and the replica's northbound address."""
    folder = tmp / name
    folder.mkdir(exist_ok=True)
    address = f"127.0.0.1:{free_port()}"
    path = controller_config(folder, fabric_file, devices, northbound=address, **kwargs)
    data = yaml.safe_load(path.read_text())
    data["ha"] = {"etcd": endpoints, "name": name, "lease_ttl": lease_ttl, "prefix": prefix}
    path.write_text(yaml.safe_dump(data))
    return path, address


def replica_role(address: str) -> tuple[str | None, str | None, int | None]:
    """(role, leader, epoch) from a replica's northbound status; Nones while it does not answer."""
    try:
        with ControllerClient(address, deadline_s=2.0) as client:
            details = client.status().details
    except ControllerClientError:
        return None, None, None
    return details.get("role"), details.get("leader"), details.get("epoch")


def shared_journal(endpoints: list[str], prefix: str = PREFIX) -> EtcdJournal:
    """A reader of the replicas' journal in etcd (call ``reload()`` to see new writes)."""
    return EtcdJournal(EtcdKV(endpoints), prefix)
