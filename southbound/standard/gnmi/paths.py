"""OpenConfig paths as gNMI ``Path`` messages: parsing and printing the string form
(``/interfaces/interface[name=*]/state/counters/in-octets``), matching a pattern (``*`` and
``...`` elements, ``*`` or omitted keys) against a concrete path, and the paths of a switch's
counters, ports, drains and LLDP neighbours under SONiC's interface names (``Ethernet0``...).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from southbound.standard.pb import gnmi_pb2

Path = gnmi_pb2.Path

#: gNMI leaf under ``/interfaces/interface[name=X]/state/counters/`` -> PortCounters field
COUNTER_LEAVES: dict[str, str] = {
    "in-octets": "rx_bytes",
    "out-octets": "tx_bytes",
    "in-pkts": "rx_packets",
    "out-pkts": "tx_packets",
    "in-discards": "rx_drops",
    "out-discards": "tx_drops",
}
#: the leaves that drain a port: forwarding-viable (link and LLDP stay up), enabled (admin)
DRAIN_LEAVES = ("forwarding-viable", "enabled")
#: the prefix of every interface name the driver takes for a port
INTERFACE_PREFIX = "Ethernet"


class PathError(ValueError):
    """A path string that is not a gNMI path (names the text and the problem)."""


@dataclass(frozen=True)
class PortNaming:
    """SONiC's port names: ``Ethernet{port * stride}`` (stride 1 on the virtual switch, the
    lanes per port, often 4 or 8, on hardware)."""

    stride: int = 1

    def __post_init__(self) -> None:
        if self.stride < 1:
            raise ValueError(f"port name stride must be at least 1, got {self.stride}")

    def name(self, port: int) -> str:
        return f"{INTERFACE_PREFIX}{port * self.stride}"

    def port(self, name: str) -> int | None:
        """The port named ``name``; None for an interface that is not a front-panel port
        (``Loopback0``, ``eth0``) or not on the stride."""
        match = re.fullmatch(INTERFACE_PREFIX + r"(\d+)", name)
        if match is None:
            return None
        number = int(match.group(1))
        return number // self.stride if number % self.stride == 0 else None


SONIC_NAMING = PortNaming()


def elem(name: str, /, **keys: str) -> gnmi_pb2.PathElem:
    return gnmi_pb2.PathElem(name=name, key=keys)


def parse(text: str) -> gnmi_pb2.Path:
    """``[origin:]/a/b[k=v]/c`` as a Path; ``\\]`` and ``\\/`` escape inside keys."""
    origin = ""
    head = re.match(r"([A-Za-z][\w.-]*):/", text)
    if head:
        origin, text = head.group(1), text[head.end() - 1:]
    if not text.startswith("/"):
        raise PathError(f"path {text!r}: must start with '/'")
    elems: list[gnmi_pb2.PathElem] = []
    for part in _split(text[1:], text):
        if part:
            elems.append(_elem_of(part, text))
    return gnmi_pb2.Path(origin=origin, elem=elems)


def _split(body: str, text: str) -> Iterable[str]:
    """Split on '/' outside brackets, keeping escapes inside them."""
    part: list[str] = []
    depth = 0
    chars = iter(body)
    for c in chars:
        if c == "\\" and depth:
            part.append(c + next(chars, ""))
            continue
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth < 0:
                raise PathError(f"path {text!r}: ']' without '['")
        if c == "/" and not depth:
            yield "".join(part)
            part = []
        else:
            part.append(c)
    if depth:
        raise PathError(f"path {text!r}: '[' without ']'")
    yield "".join(part)


def _elem_of(part: str, text: str) -> gnmi_pb2.PathElem:
    name, _, rest = part.partition("[")
    if not name:
        raise PathError(f"path {text!r}: an element without a name")
    keys: dict[str, str] = {}
    rest = "[" + rest if rest else ""
    for match in re.finditer(r"\[((?:[^\]\\]|\\.)*)\]", rest):
        key, eq, value = match.group(1).partition("=")
        if not eq or not key:
            raise PathError(f"path {text!r}: key {match.group(1)!r} is not name=value")
        keys[key] = re.sub(r"\\(.)", r"\1", value)
    if rest and "".join(m.group(0) for m in re.finditer(r"\[((?:[^\]\\]|\\.)*)\]", rest)) != rest:
        raise PathError(f"path {text!r}: text after the keys of {name!r}")
    return elem(name, **keys)


def text(path: gnmi_pb2.Path) -> str:
    """The string form of ``path`` (keys sorted, ``]`` and ``/`` escaped)."""
    parts = []
    for e in path.elem:
        keys = "".join(f"[{k}={_escape(v)}]" for k, v in sorted(e.key.items()))
        parts.append(e.name + keys)
    body = "/" + "/".join(parts)
    return f"{path.origin}:{body}" if path.origin else body


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("]", "\\]").replace("/", "\\/")


def joined(prefix: gnmi_pb2.Path | None, path: gnmi_pb2.Path) -> gnmi_pb2.Path:
    """``path`` under ``prefix`` (a request's or notification's prefix)."""
    if prefix is None or not prefix.elem:
        if prefix is not None and prefix.origin and not path.origin:
            return gnmi_pb2.Path(origin=prefix.origin, elem=path.elem)
        return path
    return gnmi_pb2.Path(origin=path.origin or prefix.origin, elem=[*prefix.elem, *path.elem])


def covers(pattern: gnmi_pb2.Path, path: gnmi_pb2.Path) -> bool:
    """Whether ``path`` (concrete) is ``pattern`` or lies under it: ``*`` matches one element,
    ``...`` any number, a key ``*`` (or a key left out) any value."""
    return _covers(list(pattern.elem), list(path.elem))


def _covers(pattern: list[gnmi_pb2.PathElem], path: list[gnmi_pb2.PathElem]) -> bool:
    if not pattern:
        return True
    first = pattern[0]
    if first.name == "...":
        return any(_covers(pattern[1:], path[i:]) for i in range(len(path) + 1))
    if not path or not _elem_matches(first, path[0]):
        return False
    return _covers(pattern[1:], path[1:])


def _elem_matches(pattern: gnmi_pb2.PathElem, e: gnmi_pb2.PathElem) -> bool:
    if pattern.name not in ("*", e.name):
        return False
    return all(v == "*" or e.key.get(k) == v for k, v in pattern.key.items())


def is_wildcard(path: gnmi_pb2.Path) -> bool:
    return any(e.name in ("*", "...") or "*" in e.key.values() for e in path.elem)


def interface(name: str, *tail: str) -> gnmi_pb2.Path:
    """``/interfaces/interface[name=NAME]/TAIL...`` (``*`` for every interface)."""
    return gnmi_pb2.Path(elem=[elem("interfaces"), elem("interface", name=name), *map(elem, tail)])


def lldp_neighbor(name: str, leaf: str) -> gnmi_pb2.Path:
    """openconfig-lldp: ``/lldp/interfaces/interface[name=NAME]/neighbors/neighbor/state/LEAF``
    (the neighbor list's key, its id, left out: every neighbour)."""
    return gnmi_pb2.Path(elem=[elem("lldp"), elem("interfaces"), elem("interface", name=name),
                               elem("neighbors"), elem("neighbor"), elem("state"), elem(leaf)])


def counter(name: str, leaf: str) -> gnmi_pb2.Path:
    return interface(name, "state", "counters", leaf)


def interface_name(path: gnmi_pb2.Path) -> str | None:
    """The interface a path under ``/interfaces`` or ``/lldp/interfaces`` names."""
    for e in path.elem:
        if e.name == "interface":
            return e.key.get("name")
    return None


def leaf_name(path: gnmi_pb2.Path) -> str:
    return path.elem[-1].name if path.elem else ""


def keys_of(path: gnmi_pb2.Path) -> Mapping[str, str]:
    """Every key of the path's elements, flattened (for logs)."""
    return {k: v for e in path.elem for k, v in e.key.items()}
