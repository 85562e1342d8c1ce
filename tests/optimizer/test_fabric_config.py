"""Fabric YAML loading: every shipped config loads, and each kind of bad input is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from optimizer.config import (
    dump_fabric_yaml,
    fabric_from_dict,
    generate_fabric,
    load_fabric,
    parse_fabric,
)
from optimizer.errors import ConfigError
from optimizer.fabric import OcsSides, Side
from tests.support import CONFIGS, shipped_fabric

FABRIC_FILES = sorted(p for p in CONFIGS.glob("fabric-*.yaml"))


def base() -> dict:
    return {
        "name": "t",
        "blocks": [{"name": f"b{i}", "uplinks": 8} for i in range(1, 5)],
        "ocs": [{"name": "ocs1", "ports": 16, "domain": 0}, {"name": "ocs2", "ports": 16, "domain": 1}],
    }


def error_for(data: dict) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        fabric_from_dict(data, "f.yaml")
    return info.value


def test_shipped_fabric_configs_exist() -> None:
    names = {p.name for p in FABRIC_FILES}
    assert {"fabric-4.yaml", "fabric-8.yaml", "fabric-64.yaml", "fabric-hybrid-8.yaml"} <= names


@pytest.mark.parametrize("path", FABRIC_FILES, ids=lambda p: p.name)
def test_every_config_loads(path: Path) -> None:
    fabric = load_fabric(path)
    assert fabric.n_blocks >= 2
    assert sum(b.uplinks for b in fabric.blocks) == len(fabric.wiring)


def test_shipped_sizes_match_the_issue() -> None:
    f4 = shipped_fabric("fabric-4")
    assert (f4.n_blocks, len(f4.ocs)) == (4, 2)
    f8 = shipped_fabric("fabric-8")
    assert (f8.n_blocks, len(f8.ocs), len(f8.domains)) == (8, 4, 2)
    f64 = shipped_fabric("fabric-64")
    assert (f64.n_blocks, len(f64.ocs), len(f64.domains)) == (64, 256, 4)
    assert {b.uplinks for b in f64.blocks} == {512} and {o.ports for o in f64.ocs} == {136}
    hybrid = shipped_fabric("fabric-hybrid-8")
    assert hybrid.has_spine and hybrid.n_blocks == 8


def test_issue_example_form_loads_with_defaults() -> None:
    text = """
name: demo-8
blocks:
  - {name: b1, uplinks: 32, speed_gbps: 100}
  - {name: b2, uplinks: 32}
ocs:
  - {name: ocs1, ports: 136, domain: 0}
wiring: striped
spine:
  - {name: s1, links: {b1: 4, b2: 4}}
"""
    fabric = parse_fabric(text, "demo.yaml")
    assert fabric.block("b2").speed_gbps == 100.0
    assert fabric.ocs[0].sides is OcsSides.SPLIT
    assert fabric.spine[0].links_to("b1") == 4
    sides = [w.side for w in fabric.ports_of("b1")]
    assert sides.count(Side.NORTH) == sides.count(Side.SOUTH) == 16


def test_striped_wiring_spreads_evenly_and_uses_each_port_once() -> None:
    fabric = shipped_fabric("fabric-8")
    used = {(w.ocs, w.port) for w in fabric.wiring}
    assert len(used) == len(fabric.wiring)
    for block in fabric.blocks:
        for ocs in fabric.ocs:
            ports = list(fabric.ports_of(block.name, ocs.name))
            assert len(ports) == block.uplinks // len(fabric.ocs)
            north = [p for p in ports if p.side is Side.NORTH]
            assert all(p.port < ocs.ports // 2 for p in north)
            assert all(p.port >= ocs.ports // 2 for p in ports if p.side is Side.SOUTH)
            assert len(north) * 2 == len(ports)
        assert sorted(p.block_port for p in fabric.ports_of(block.name)) == list(range(block.uplinks))


def test_unknown_top_level_key() -> None:
    data = base() | {"colour": "blue"}
    err = error_for(data)
    assert err.source == "f.yaml" and err.key == "colour" and "unknown key" in str(err)


def test_unknown_block_key() -> None:
    data = base()
    data["blocks"][2]["uplink"] = 8
    err = error_for(data)
    assert err.key == "blocks[2].uplink"


@pytest.mark.parametrize(
    ("mutate", "key"),
    [
        (lambda d: d["blocks"][3].__setitem__("uplinks", "8"), "blocks[3].uplinks"),
        (lambda d: d["blocks"][1].__setitem__("uplinks", True), "blocks[1].uplinks"),
        (lambda d: d["blocks"][0].__setitem__("speed_gbps", -1), "blocks[0].speed_gbps"),
        (lambda d: d["ocs"][1].__setitem__("ports", 16.5), "ocs[1].ports"),
        (lambda d: d["ocs"][0].__setitem__("sides", "left"), "ocs[0].sides"),
        (lambda d: d.__setitem__("blocks", {"b1": 8}), "blocks"),
        (lambda d: d.__setitem__("name", 7), "name"),
        (lambda d: d.__setitem__("wiring", "random"), "wiring"),
    ],
)
def test_wrong_types_name_the_key(mutate, key: str) -> None:
    data = base()
    mutate(data)
    assert error_for(data).key == key


def test_missing_required_key() -> None:
    data = base()
    del data["blocks"][1]["uplinks"]
    assert error_for(data).key == "blocks[1].uplinks"


def test_duplicate_names_across_devices() -> None:
    data = base()
    data["blocks"][3]["name"] = "b1"
    err = error_for(data)
    assert err.key == "blocks[3].name" and "duplicate" in err.problem and "blocks[0]" in err.problem
    data = base()
    data["ocs"][1]["name"] = "b2"
    assert error_for(data).key == "ocs[1].name"


def test_uplinks_not_divisible_over_ocses() -> None:
    data = base()
    data["blocks"][2]["uplinks"] = 7
    err = error_for(data)
    assert err.key == "blocks[2].uplinks" and "striped" in err.problem


def test_uplinks_with_odd_share_per_side() -> None:
    data = base()
    data["blocks"][1]["uplinks"] = 6  # 3 per OCS: cannot split north/south
    err = error_for(data)
    assert err.key == "blocks[1].uplinks" and "north" in err.problem


def test_odd_share_is_fine_without_circulators() -> None:
    data = base()
    for o in data["ocs"]:
        o["sides"] = "any"
    for b in data["blocks"]:
        b["uplinks"] = 6
    fabric = fabric_from_dict(data, "f.yaml")
    assert {w.side for w in fabric.wiring} == {Side.ANY}


def test_more_ports_than_the_ocs_has() -> None:
    data = base()
    data["ocs"][1]["ports"] = 14
    err = error_for(data)
    assert err.key == "ocs[1].ports" and "has 7 per side" in err.problem


def test_spine_references_unknown_block() -> None:
    data = base() | {"spine": [{"name": "s1", "links": {"b1": 2, "b9": 2}}]}
    err = error_for(data)
    assert err.key == "spine[0].links.b9" and "unknown block" in err.problem


def test_invalid_yaml_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nblocks: [\n")
    with pytest.raises(ConfigError) as info:
        load_fabric(bad)
    assert str(bad) in str(info.value) and "YAML" in str(info.value)
    with pytest.raises(ConfigError) as info:
        load_fabric(tmp_path / "absent.yaml")
    assert "cannot read" in str(info.value)


def test_generator_writes_a_file_that_loads_back(tmp_path: Path) -> None:
    fabric = generate_fabric(64, 512, 256, 136, 4)
    path = tmp_path / "gen.yaml"
    path.write_text(dump_fabric_yaml(fabric))
    again = load_fabric(path)
    assert again.blocks == fabric.blocks and again.ocs == fabric.ocs
    assert [len(again.ocs_in_domain(d)) for d in again.domains] == [64, 64, 64, 64]


def test_generator_rejects_unwireable_numbers() -> None:
    with pytest.raises(ConfigError) as info:
        generate_fabric(64, 512, 256, 120, 4)
    assert info.value.key == "ocs[0].ports"
