"""A spine switch realised by an OpenFlow bridge: a block bridge with no hosts.

The pipeline is the block's (:mod:`emulation.openflow.block`): every port faces a block, so
everything arriving goes to the transit table, whose per-destination flow sends
10.<d>.0.0/16 to select group TRANSIT_GROUP_BASE + d over the spine's installed, undrained
ports toward block d (or counts it as a no-route drop when none is left). Probes name the
spine switch and its port, so the blocks learn it as their peer and can name it as a next
hop. The device semantics are :class:`emulation.spine_device.SpineDevice`'s: transit groups
only, destination counters count what it forwarded toward each block.
"""

from __future__ import annotations

from collections.abc import Mapping

from emulation.openflow.block import TABLE_TRANSIT, OpenFlowBlockSwitch
from emulation.openflow.pipeline import TRANSIT_GROUP_BASE
from emulation.spine_device import check_spine_table
from emulation.switch_device import Table


class OpenFlowSpineSwitch(OpenFlowBlockSwitch):
    role = "spine"
    EGRESS_TABLE, EGRESS_GROUP_BASE = TABLE_TRANSIT, TRANSIT_GROUP_BASE

    def _validated(self, table: Mapping[str, Mapping[str, int]], transit_table: bool) -> Table:
        check_spine_table(table, transit_table)
        return super()._validated(table, transit_table)
