"""The device API's protos (``heliostat.southbound.v1``) and their committed stubs (``gen/``).

``python -m southbound.grpc_native.proto`` regenerates the stubs (see
:mod:`southbound.protoc`)."""

from __future__ import annotations

from pathlib import Path

from southbound.protoc import ProtoTree

TREE = ProtoTree(Path(__file__).resolve().parent, __name__)
