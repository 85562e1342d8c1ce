"""The one interface of the fabric emulators, so that a test, the demo or a benchmark can
run on either: the flow-level :class:`~emulation.fabric.EmulatedFabric` (devices in this
process, traffic moved by the flow-level data plane on an emulated clock) or the
packet-level :class:`~emulation.mininet.fabric.PacketFabric` (Open vSwitch bridges under
Mininet, driven by an OpenFlow agent; needs root).

Both serve every device over the southbound API and write a devices file for the
controller; both can cut a link and bring it back, stop and restart the device agents (the
devices keep forwarding: fail static), and report a switch's counters as the device API
does. What only one of them can do (emulated traffic and time, OCS power loss; real hosts
and packets) stays on its own class.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Protocol, Self

from optimizer.fabric import Fabric
from southbound.types import SwitchCounters


class FabricBackend(Protocol):
    fabric: Fabric

    def start(self) -> None:
        """Bring every device up and write the devices file."""
        ...

    def stop(self) -> None:
        """Tear down everything this backend started."""
        ...

    @property
    def devices_file(self) -> Path:
        """The devices file (:mod:`southbound.devices` format) naming every device's endpoint."""
        ...

    def fail_link(self, device: str, port: int) -> None:
        """Cut the link at ``port`` of block or spine switch ``device``."""
        ...

    def restore_link(self, device: str, port: int) -> None:
        """Bring that link back."""
        ...

    def kill_agents(self) -> None:
        """Stop serving the device API; the devices keep their state and forwarding."""
        ...

    def restart_agents(self) -> None:
        """Serve the device API again, on the same addresses."""
        ...

    def counters(self, device: str) -> SwitchCounters:
        """Block or spine switch ``device``'s counters, as its device API reports them."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...
