"""A spine switch realised by an OpenFlow bridge: a block bridge with no hosts.

The pipeline is the block's (:mod:`emulation.openflow.block`): every port faces a block, so
everything arriving goes to the transit table, whose per-destination flow sends
10.<d>.0.0/16 to select group TRANSIT_GROUP_BASE + d over the spine's installed, undrained
ports toward block d (or counts it as a no-route drop when none is left). Probes name the
spine switch and its port, so the blocks learn it as their peer and can name it as a next
hop. The device semantics are the model's, an :class:`emulation.spine_device.SpineDevice`:
transit groups only, destination counters count what it forwarded toward each block.
"""

from __future__ import annotations

from emulation.openflow.block import OpenFlowBlockSwitch
from emulation.openflow.clock import WallClock
from emulation.openflow.probes import ProbeNeighbours
from emulation.openflow.spec import BlockSpec
from emulation.spine_device import SpineDevice


def spine_switch(
    spec: BlockSpec,
    blocks: tuple[str, ...],
    neighbours: ProbeNeighbours,
    *,
    bucket_scheme: str = "replicated",
    max_group_entries: int = 128,
    table_capacity: int = 4096,
    probe_interval_s: float = 0.5,
) -> OpenFlowBlockSwitch:
    """A spine switch: the emulated SpineDevice model realised by the spine's bridge."""
    model = SpineDevice(spec.name, blocks, spec.uplinks, spec.speed_gbps, WallClock(), neighbours,
                        max_group_entries=max_group_entries, table_capacity=table_capacity)
    return OpenFlowBlockSwitch(spec, model, neighbours, bucket_scheme=bucket_scheme,
                               probe_interval_s=probe_interval_s)
