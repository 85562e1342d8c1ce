"""DeviceFleet: the clients of every device in a devices file, made on first use."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from southbound.closing import ClosesOnExit
from southbound.devices import DeviceConfig, load_devices_file
from southbound.registry import DriverRegistry, default_registry


class UnknownDevice(LookupError):
    """No device of that name (and kind) in the fleet."""


class DeviceFleet(ClosesOnExit):
    """``fleet.ocs("ocs1")`` / ``fleet.switch("b1")`` return one cached client per device."""

    def __init__(
        self, devices: Mapping[str, DeviceConfig], registry: DriverRegistry | None = None
    ) -> None:
        self.devices = dict(devices)
        self.registry = registry or default_registry()
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: str | Path, registry: DriverRegistry | None = None) -> DeviceFleet:
        return cls(load_devices_file(path), registry)

    def names(self, kind: str | None = None) -> list[str]:
        return [n for n, d in self.devices.items() if kind is None or d.kind == kind]

    def client(self, name: str, kind: str | None = None) -> Any:
        device = self.devices.get(name)
        if device is None or (kind is not None and device.kind != kind):
            what = f"{kind} device" if kind else "device"
            raise UnknownDevice(f"no {what} named {name!r} in the fleet")
        with self._lock:
            if name not in self._clients:
                self._clients[name] = self.registry.create(device)
            return self._clients[name]

    def ocs(self, name: str) -> Any:
        return self.client(name, "ocs")

    def switch(self, name: str) -> Any:
        return self.client(name, "block")

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()
