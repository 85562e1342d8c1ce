"""Loading fabric descriptions from YAML, and generating them.

The accepted form::

    name: demo-8
    blocks:
      - {name: b1, uplinks: 32, speed_gbps: 100}
    ocs:
      - {name: ocs1, ports: 136, domain: 0}        # sides: split (default) or any
    wiring: striped
    spine:                                          # optional static electrical layer
      - {name: s1, links: {b1: 4, b2: 4}, speed_gbps: 100}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from optimizer import limits, schema
from optimizer.errors import ConfigError
from optimizer.fabric import (
    DEFAULT_SPEED_GBPS,
    Block,
    Fabric,
    Ocs,
    OcsSides,
    SpineSwitch,
    WiringRule,
    build_fabric,
)
from optimizer.yaml_input import parse_yaml as parse_yaml  # re-exported: loaders import it from here

TOP_KEYS = ("name", "blocks", "ocs", "wiring", "spine")
BLOCK_KEYS = ("name", "uplinks", "speed_gbps")
OCS_KEYS = ("name", "ports", "domain", "sides")
SPINE_KEYS = ("name", "links", "speed_gbps")


def load_fabric(path: str | Path) -> Fabric:
    """Read, validate and wire the fabric described by the YAML file at ``path``."""
    source = str(path)
    text = schema.read_file(path, limits.MAX_YAML_FILE_BYTES)
    return parse_fabric(text, source)


def load_plannable_fabric(path: str | Path) -> Fabric:
    """:func:`load_fabric`, refusing fabrics larger than the planners take (``plan``, ``toe``,
    the daemon): their LPs grow as blocks^3 (2,000 blocks asked for 59.6 GiB)."""
    fabric = load_fabric(path)
    if fabric.n_blocks > limits.MAX_PLAN_BLOCKS:
        raise ConfigError(
            str(path), "blocks",
            f"{fabric.n_blocks:,} blocks; traffic and topology engineering plan at most "
            f"{limits.MAX_PLAN_BLOCKS}",
        )
    return fabric


def parse_fabric(text: str, source: str = "<fabric>") -> Fabric:
    return fabric_from_dict(parse_yaml(text, source), source)


def fabric_from_dict(data: object, source: str = "<fabric>") -> Fabric:
    top = schema.mapping(data, source, "")
    schema.check_keys(top, source, "", TOP_KEYS, required=("name", "blocks", "ocs"))
    name = schema.name(top["name"], source, "name")
    block_items = _list(top, "blocks", source, limits.MAX_BLOCKS)
    blocks = [_block(item, source, i) for i, item in enumerate(block_items)]
    ocs = [_ocs(item, source, i) for i, item in enumerate(_list(top, "ocs", source, limits.MAX_OCS))]
    spine_raw = top.get("spine")
    spine_items = [] if spine_raw is None else schema.sequence(spine_raw, source, "spine")
    if len(spine_items) > limits.MAX_SPINES:
        problem = f"at most {limits.MAX_SPINES:,} spine switches, got {len(spine_items):,}"
        raise ConfigError(source, "spine", problem)
    spine = [_spine(item, source, i) for i, item in enumerate(spine_items)]
    wiring = schema.choice(top.get("wiring", WiringRule.STRIPED.value), source, "wiring", WiringRule)
    return build_fabric(name, blocks, ocs, spine, wiring_rule=wiring, source=source)


def _list(top: dict[str, Any] | Any, key: str, source: str, most: int) -> list[Any]:
    items = schema.sequence(top[key], source, key)
    if not items:
        raise ConfigError(source, key, "must not be empty")
    if len(items) > most:
        raise ConfigError(source, key, f"at most {most:,} entries, got {len(items):,}")
    return items


def _block(item: object, source: str, i: int) -> Block:
    key = schema.join("blocks", i)
    m = schema.mapping(item, source, key)
    schema.check_keys(m, source, key, BLOCK_KEYS, required=("name", "uplinks"))
    return Block(
        name=schema.name(m["name"], source, schema.join(key, "name")),
        uplinks=schema.integer(
            m["uplinks"], source, schema.join(key, "uplinks"), minimum=1, maximum=limits.MAX_UPLINKS
        ),
        speed_gbps=schema.number(
            m.get("speed_gbps", DEFAULT_SPEED_GBPS), source, schema.join(key, "speed_gbps"), positive=True,
            maximum=limits.MAX_SPEED_GBPS,
        ),
    )


def _ocs(item: object, source: str, i: int) -> Ocs:
    key = schema.join("ocs", i)
    m = schema.mapping(item, source, key)
    schema.check_keys(m, source, key, OCS_KEYS, required=("name", "ports"))
    return Ocs(
        name=schema.name(m["name"], source, schema.join(key, "name")),
        ports=schema.integer(
            m["ports"], source, schema.join(key, "ports"), minimum=2, maximum=limits.MAX_OCS_PORTS
        ),
        domain=schema.integer(
            m.get("domain", 0), source, schema.join(key, "domain"), minimum=0, maximum=limits.MAX_OCS
        ),
        sides=schema.choice(
            m.get("sides", OcsSides.SPLIT.value), source, schema.join(key, "sides"), OcsSides
        ),
    )


def _spine(item: object, source: str, i: int) -> SpineSwitch:
    key = schema.join("spine", i)
    m = schema.mapping(item, source, key)
    schema.check_keys(m, source, key, SPINE_KEYS, required=("name", "links"))
    links_key = schema.join(key, "links")
    links = schema.mapping(m["links"], source, links_key)
    counts = tuple(
        (
            schema.name(block, source, links_key),
            schema.integer(
                count, source, schema.join(links_key, block), minimum=0, maximum=limits.MAX_UPLINKS
            ),
        )
        for block, count in links.items()
    )
    return SpineSwitch(
        name=schema.name(m["name"], source, schema.join(key, "name")),
        links=counts,
        speed_gbps=schema.number(
            m.get("speed_gbps", DEFAULT_SPEED_GBPS), source, schema.join(key, "speed_gbps"), positive=True,
            maximum=limits.MAX_SPEED_GBPS,
        ),
    )


def fabric_to_dict(fabric: Fabric) -> dict[str, Any]:
    """The YAML-ready form of a fabric; ``fabric_from_dict`` reads it back unchanged."""
    out: dict[str, Any] = {
        "name": fabric.name,
        "blocks": [{"name": b.name, "uplinks": b.uplinks, "speed_gbps": b.speed_gbps} for b in fabric.blocks],
        "ocs": [_ocs_dict(o) for o in fabric.ocs],
        "wiring": fabric.wiring_rule.value,
    }
    if fabric.spine:
        out["spine"] = [
            {"name": s.name, "links": dict(s.links), "speed_gbps": s.speed_gbps} for s in fabric.spine
        ]
    return out


def _ocs_dict(o: Ocs) -> dict[str, Any]:
    d: dict[str, Any] = {"name": o.name, "ports": o.ports, "domain": o.domain}
    if o.sides is not OcsSides.SPLIT:
        d["sides"] = o.sides.value
    return d


def generate_fabric(
    blocks: int,
    uplinks: int,
    ocs: int,
    ports: int,
    domains: int = 1,
    name: str | None = None,
    speed_gbps: float = DEFAULT_SPEED_GBPS,
    spine_links: int = 0,
    spines: int = 0,
) -> Fabric:
    """A striped fabric of identical blocks; OCSes are dealt into ``domains`` contiguous groups.

    Raises ConfigError (source ``<generate>``) when the numbers cannot be wired.
    """
    source = "<generate>"
    if blocks < 2:
        raise ConfigError(source, "blocks", f"need at least 2 blocks, got {blocks}")
    schema.integer(blocks, source, "blocks", maximum=limits.MAX_BLOCKS)
    if ocs < 1:
        raise ConfigError(source, "ocs", f"need at least 1 OCS, got {ocs}")
    schema.integer(ocs, source, "ocs", maximum=limits.MAX_OCS)
    schema.integer(uplinks, source, "uplinks", minimum=1, maximum=limits.MAX_UPLINKS)
    schema.integer(ports, source, "ports", minimum=2, maximum=limits.MAX_OCS_PORTS)
    schema.number(speed_gbps, source, "speed", positive=True, maximum=limits.MAX_SPEED_GBPS)
    schema.integer(spines, source, "spines", minimum=0, maximum=limits.MAX_SPINES)
    schema.integer(spine_links, source, "spine_links", minimum=0, maximum=limits.MAX_UPLINKS)
    if name is not None:
        schema.name(name, source, "name")
    if domains < 1 or domains > ocs:
        raise ConfigError(source, "domains", f"must be between 1 and the OCS count {ocs}, got {domains}")
    width = len(str(blocks))
    block_list = [Block(f"b{i + 1:0{width}d}", uplinks, speed_gbps) for i in range(blocks)]
    owidth = len(str(ocs))
    ocs_list = [Ocs(f"ocs{i + 1:0{owidth}d}", ports, domain=i * domains // ocs) for i in range(ocs)]
    spine_list = [
        SpineSwitch(f"s{i + 1}", tuple((b.name, spine_links) for b in block_list), speed_gbps)
        for i in range(spines)
    ]
    return build_fabric(
        name or f"fabric-{blocks}",
        block_list,
        ocs_list,
        spine_list,
        source=source,
    )


def dump_fabric_yaml(fabric: Fabric) -> str:
    """YAML text for a fabric, with one block or OCS a line so large fabrics stay readable."""
    data = fabric_to_dict(fabric)
    lines = [f"name: {data['name']}", f"wiring: {data['wiring']}", "blocks:"]
    lines += [f"  - {_flow(b)}" for b in data["blocks"]]
    lines.append("ocs:")
    lines += [f"  - {_flow(o)}" for o in data["ocs"]]
    if "spine" in data:
        lines.append("spine:")
        lines += [f"  - {_flow(s)}" for s in data["spine"]]
    return "\n".join(lines) + "\n"


def _flow(item: dict[str, Any]) -> str:
    return yaml.safe_dump(item, default_flow_style=True, sort_keys=False, width=10**6).strip()
