"""Destination blocks as IPv4 prefixes: a P4 switch routes prefixes, not block names."""

from __future__ import annotations

import ipaddress
import itertools
from collections.abc import Mapping, Sequence

from southbound.devices import DeviceConfig

MAX_DEFAULT_BLOCKS = 256 * 256


def default_prefixes(blocks: Sequence[str]) -> dict[str, str]:
    """Block i (in the order given) -> ``10.<i//256>.<i%256>.0/24``: what the emulated fabric
    uses when the devices file names no ``prefixes``."""
    if len(blocks) > MAX_DEFAULT_BLOCKS:
        raise ValueError(f"default prefixes cover {MAX_DEFAULT_BLOCKS} blocks, got {len(blocks)}")
    return {b: f"10.{i // 256}.{i % 256}.0/24" for i, b in enumerate(blocks)}


def prefixes_for(device: DeviceConfig, fallback: Mapping[str, str] | None = None) -> dict[str, str]:
    """The devices file's ``prefixes`` (DeviceConfig.prefixes), else ``fallback``; each checked
    to be an IPv4 network and normalised, none overlapping."""
    table = dict(device.prefixes) or dict(fallback or {})
    out: dict[str, str] = {}
    for block, text in table.items():
        try:
            out[block] = str(ipaddress.IPv4Network(text))
        except ValueError as exc:
            raise ValueError(f"{device.source}: prefixes.{block}: {exc}") from None
    nets = sorted((ipaddress.IPv4Network(p), b) for b, p in out.items())
    for (n1, b1), (n2, b2) in itertools.pairwise(nets):
        if n1.overlaps(n2):
            raise ValueError(f"{device.source}: prefixes.{b2}: {n2} overlaps {b1}'s {n1}")
    return out
