"""The committed stubs match what the pinned grpcio-tools generates from the protos."""

from __future__ import annotations

import filecmp
from pathlib import Path

from southbound.proto import regen


def _tree(root: Path) -> set[Path]:
    return {
        p.relative_to(root)
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_committed_stubs_match_regenerated(tmp_path: Path) -> None:
    written = regen.regenerate(tmp_path)
    assert written, "regeneration wrote nothing"
    committed = _tree(regen.DEFAULT_OUT)
    fresh = _tree(tmp_path)
    assert fresh == committed, f"file sets differ: {sorted(fresh ^ committed)}"
    differing = [
        str(p)
        for p in sorted(fresh)
        if not filecmp.cmp(tmp_path / p, regen.DEFAULT_OUT / p, shallow=False)
    ]
    assert not differing, f"stale stubs, run `make protos`: {differing}"


def test_stubs_import_and_describe_both_services() -> None:
    from southbound import pb

    ocs = pb.ocs_pb2.DESCRIPTOR.services_by_name["OcsService"]
    switch = pb.packet_switch_pb2.DESCRIPTOR.services_by_name["PacketSwitchService"]
    assert {m.name for m in ocs.methods} >= {
        "GetDeviceInfo", "ListCrossConnects", "ApplyCrossConnects", "GetPortStatus", "StreamEvents"
    }
    assert {m.name for m in switch.methods} >= {
        "GetDeviceInfo",
        "ListPorts",
        "SetNextHopGroups",
        "DrainPorts",
        "UndrainPorts",
        "GetCounters",
    }
    assert pb.ocs_pb2.DESCRIPTOR.package == "heliostat.southbound.v1"
