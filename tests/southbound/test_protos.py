"""The committed stubs match what the pinned grpcio-tools generates from the protos: the device
API's (southbound/grpc_native/proto) and the northbound API's (controller/northbound/proto)."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest

from controller.northbound import proto as northbound_proto
from southbound.grpc_native import proto as southbound_proto
from southbound.protoc import ProtoTree, regenerate
from southbound.standard import proto as standard_proto


def _tree(root: Path) -> set[Path]:
    return {
        p.relative_to(root)
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


@pytest.mark.parametrize(
    "tree", [southbound_proto.TREE, northbound_proto.TREE, standard_proto.TREE],
    ids=["southbound", "northbound", "standard"],
)
def test_committed_stubs_match_regenerated(tree: ProtoTree, tmp_path: Path) -> None:
    written = regenerate(tree, tmp_path)
    assert written, "regeneration wrote nothing"
    committed = _tree(tree.out)
    fresh = _tree(tmp_path)
    assert fresh == committed, f"file sets differ: {sorted(fresh ^ committed)}"
    differing = [
        str(p)
        for p in sorted(fresh)
        if not filecmp.cmp(tmp_path / p, tree.out / p, shallow=False)
    ]
    assert not differing, f"stale stubs, run `make protos`: {differing}"


def test_each_proto_lives_with_the_package_that_serves_it() -> None:
    northbound = [str(p) for p in northbound_proto.TREE.proto_files()]
    assert northbound == ["heliostat/controller/v1/controller.proto"]
    assert {str(p) for p in southbound_proto.TREE.proto_files()} == {
        f"heliostat/southbound/v1/{name}.proto" for name in ("common", "ocs", "packet_switch")
    }


def test_stubs_import_and_describe_both_services() -> None:
    from southbound.grpc_native import pb

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
