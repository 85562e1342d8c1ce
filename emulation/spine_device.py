"""An emulated spine switch of a hybrid fabric: a packet switch whose neighbours are blocks.

It serves the same PacketSwitchService as a block switch (:class:`BlockSwitch` is its
base), with the semantics a spine has:

- its ports face blocks (numbered as :mod:`optimizer.spine` says), each with its LLDP peer;
- everything it receives came from a block's uplink, so it has only a *transit* table: one
  group per destination block, whose only next hop is that block (ECMP over the spine's
  installed, undrained ports to it). A destination without a group goes direct as well; a
  source table is refused (a spine originates no traffic);
- trunk members are installed as on a block: the ports whose peer was the destination when
  the groups were last set or the port last undrained. A member whose link has since gone
  down blackholes what it is given until the controller reprograms or drains it;
- counters per port, and per destination block the bytes it forwarded toward that block.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from emulation.clock import EmulatedClock
from emulation.errors import MalformedRequest
from emulation.switch_device import (
    DEFAULT_MAX_GROUP_ENTRIES,
    DEFAULT_TABLE_CAPACITY,
    BlockSwitch,
    LinkProvider,
    Table,
)


def check_spine_table(table: Mapping[str, Mapping[str, int]], transit_table: bool) -> None:
    """Refuse source groups: a spine switch originates no traffic."""
    if not transit_table and table:
        raise MalformedRequest(
            "source groups: a spine switch originates no traffic; set transit groups "
            "(one per destination block, next hop the block itself)"
        )


class SpineDevice(BlockSwitch):
    """State of one spine switch; ``blocks`` are the fabric's blocks (its neighbours and the
    destinations). The link provider is asked for the links of ``name``."""

    role = "spine"

    def __init__(
        self,
        name: str,
        blocks: Sequence[str],
        num_ports: int,
        speed_gbps: float,
        clock: EmulatedClock,
        links: LinkProvider,
        *,
        max_group_entries: int = DEFAULT_MAX_GROUP_ENTRIES,
        table_capacity: int = DEFAULT_TABLE_CAPACITY,
    ) -> None:
        if name in blocks:
            raise ValueError(f"spine switch {name!r} has a block's name")
        super().__init__(
            name,
            name,
            blocks,
            num_ports,
            speed_gbps,
            clock,
            links,
            max_group_entries=max_group_entries,
            table_capacity=table_capacity,
        )

    def _validated(self, table: Mapping[str, Mapping[str, int]], transit_table: bool) -> Table:
        check_spine_table(table, transit_table)
        return super()._validated(table, transit_table)
