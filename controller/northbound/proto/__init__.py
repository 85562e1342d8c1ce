"""The northbound API's proto (``heliostat.controller.v1``), served by
:mod:`controller.northbound.server`, and its committed stubs (``gen/``).

``python -m controller.northbound.proto`` regenerates the stubs (see
:mod:`southbound.protoc`)."""

from __future__ import annotations

from pathlib import Path

from southbound.protoc import ProtoTree

TREE = ProtoTree(Path(__file__).resolve().parent, __name__)
