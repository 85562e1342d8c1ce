"""Helpers the tests share: where the repository and its configs are, and the shipped fabrics.

Fixtures live in ``tests/conftest.py`` (and ``tests/packet/conftest.py`` for the running
packet-level fabric); the modules here are plain helpers a test imports.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from optimizer.config import load_fabric
from optimizer.fabric import Fabric

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"


@cache
def shipped_fabric(name: str) -> Fabric:
    """One of the fabrics in ``configs/`` by name (``"fabric-8"``), loaded once per session."""
    return load_fabric(CONFIGS / f"{name}.yaml")
