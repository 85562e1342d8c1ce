"""The spine in service: a hybrid fabric's spine links that are up and not drained, and the
spine switches not under maintenance (what TE routes over and ToE plans around)."""

from __future__ import annotations

from controller.daemon.state import DaemonState
from controller.device_view import merge_ports
from controller.sensing.observe import maintenance_ports, spines_out
from controller.sensing.spine import without_drained
from optimizer.fabric import Fabric, SpineSwitch
from optimizer.spine import SpineLink, spine_in_service


class SpineService:
    """Reads the state (links up, maintenance, quarantine); writes nothing."""

    def __init__(self, fabric: Fabric, state: DaemonState) -> None:
        self.fabric = fabric
        self.state = state

    def links_in_service(self) -> frozenset[SpineLink]:
        drained = merge_ports(
            maintenance_ports(self.fabric, self.state.control.maintenance, self.state.installed),
            self.state.quarantined,
        )
        return without_drained(self.state.spine_up, drained)

    def service(self) -> tuple[SpineSwitch, ...]:
        """The spine TE may route over: links up, not drained, switches not under maintenance."""
        out = spines_out(self.state.control.maintenance)
        return spine_in_service(self.fabric, self.links_in_service(), out)

    def view(self) -> list[dict[str, object]]:
        """Per spine switch and block: links in service and cabled (``ctl topology``)."""
        service = {s.name: s for s in self.service()}
        return [
            {
                "spine": s.name,
                "block": block,
                "in_service": service[s.name].links_to(block) if s.name in service else 0,
                "cabled": count,
            }
            for s in self.fabric.spine
            for block, count in s.links
            if count > 0
        ]
