"""The controller's one edge to the emulation: ``heliostat emulate`` and the demos run an
emulated fabric beside the controller; nothing else under ``controller/`` imports
``emulation`` (tests/test_layout.py holds it to that).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from emulation.fabric import EmulatedFabric
from emulation.service import register as register_emulate
from emulation.service import run as run_fabric

__all__ = ["EmulatedFabric", "packet_main", "register", "run_fabric"]


def register(sub: argparse._SubParsersAction) -> None:
    """``heliostat emulate`` (the flow-level fabric as a service)."""
    register_emulate(sub)


def packet_main(argv: Sequence[str]) -> int:
    """``heliostat emulate --packet ...``: the packet-level fabric has its own options (and
    needs root); imported only then, so that the CLI never needs Mininet otherwise."""
    from emulation.mininet import cli as packet_cli

    return packet_cli.main(list(argv))
