"""The standard protocols' protos (P4Runtime 1.x, gNMI 0.10.0), unchanged from their projects
(``PROVENANCE.md``), and their committed stubs (``gen/``).

``python -m southbound.standard.proto`` regenerates the stubs (see :mod:`southbound.protoc`).
``google/rpc/status.proto`` is not copied: it comes from ``googleapis-common-protos``."""

from __future__ import annotations

from pathlib import Path

from southbound.protoc import ProtoTree

TREE = ProtoTree(Path(__file__).resolve().parent, __name__, tops=("p4", "gnmi", "gnmi_ext"))
