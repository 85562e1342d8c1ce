"""gNMI paths and typed values: parsing, printing, wildcard matching, RFC 7951 encodings."""

from __future__ import annotations

import pytest

from southbound.standard.gnmi import paths, values
from southbound.standard.pb import gnmi_pb2


def test_parse_and_print_round_trip_with_keys_and_escapes() -> None:
    text = "/interfaces/interface[name=Ethernet0]/state/counters/in-octets"
    path = paths.parse(text)
    assert [e.name for e in path.elem] == ["interfaces", "interface", "state", "counters", "in-octets"]
    assert dict(path.elem[1].key) == {"name": "Ethernet0"}
    assert paths.text(path) == text
    odd = paths.parse(r"/a/b[k=x\/y\]z][j=1]/c")
    assert dict(odd.elem[1].key) == {"k": "x/y]z", "j": "1"}
    assert paths.parse(paths.text(odd)) == odd
    assert paths.parse("openconfig:/interfaces").origin == "openconfig"


@pytest.mark.parametrize("bad", ["interfaces/x", "/a[b=c", "/a]b", "/a[k]", "/[k=v]"])
def test_malformed_paths_are_named(bad: str) -> None:
    with pytest.raises(paths.PathError, match="path"):
        paths.parse(bad)


@pytest.mark.parametrize(
    ("pattern", "covered"),
    [
        ("/interfaces/interface[name=*]/state/counters/in-octets", True),
        ("/interfaces/interface/state", True),  # key left out: any; a container covers its leaves
        ("/interfaces/interface[name=Ethernet1]", False),
        ("/interfaces/*/state/counters", True),
        ("/.../in-octets", True),
        ("/.../out-octets", False),
        ("/lldp", False),
    ],
)
def test_covers_wildcards_and_subtrees(pattern: str, covered: bool) -> None:
    leaf = paths.counter("Ethernet0", "in-octets")
    assert paths.covers(paths.parse(pattern), leaf) is covered


def test_sonic_port_names_with_a_stride() -> None:
    assert paths.SONIC_NAMING.name(3) == "Ethernet3"
    lanes = paths.PortNaming(stride=4)
    assert lanes.name(3) == "Ethernet12"
    assert lanes.port("Ethernet12") == 3
    assert lanes.port("Ethernet13") is None
    assert lanes.port("Loopback0") is None


def test_typed_values_decode_proto_and_json_ietf_alike() -> None:
    big = 2**64 - 5
    assert values.encode(big, gnmi_pb2.JSON_IETF).json_ietf_val == f'"{big}"'.encode()
    assert values.as_int(values.decode(values.encode(big, gnmi_pb2.JSON_IETF))) == big
    assert values.decode(values.encode(big, gnmi_pb2.PROTO)) == big
    assert values.decode(values.encode(False, gnmi_pb2.JSON_IETF)) is False
    assert values.decode(values.encode("UP", gnmi_pb2.PROTO)) == "UP"
    assert values.as_name("openconfig-if-ethernet:SPEED_100GB") == "SPEED_100GB"
    with pytest.raises(values.BadValue, match="expected an integer"):
        values.as_int(True)
    with pytest.raises(values.BadValue, match="not JSON"):
        values.decode(gnmi_pb2.TypedValue(json_ietf_val=b"{"))
