"""An <edit-config>'s <config> for the heliostat-optical-switch module, read into a fence and
per-pair operations (RFC 6241 section 7.2), with an <rpc-error> for anything malformed."""

from __future__ import annotations

from dataclasses import dataclass, field

from lxml import etree

from emulation.standard.netconf.replies import RpcFailure
from southbound.standard.netconf.encoding import BASE_NS, NS, q
from southbound.types import CrossConnect

OPERATIONS = ("merge", "replace", "create", "delete", "remove")
MAX_UINT64 = 2**64 - 1
_PAIR_PATH = "/hos:cross-connects/hos:pair"


@dataclass
class Fence:
    epoch: int = 0
    expected_generation: int | None = None
    request_id: str = ""


@dataclass
class Edit:
    fence: Fence = field(default_factory=Fence)
    #: (operation, ingress, egress or None) in document order
    pairs: list[tuple[str, int, int | None]] = field(default_factory=list)
    clear: bool = False  # delete/remove on the whole cross-connects container


def _local(element: etree._Element) -> tuple[str, str]:
    name = etree.QName(element)
    return name.namespace or "", name.localname


def _operation(element: etree._Element, inherited: str) -> str:
    value = element.get(q("operation", BASE_NS))
    if value is None:
        return inherited
    if value not in OPERATIONS:
        raise RpcFailure("bad-attribute", f"operation {value[:40]!r} is not one of {', '.join(OPERATIONS)}",
                         error_type="protocol", info={"bad-attribute": "operation",
                                                      "bad-element": etree.QName(element).localname})
    return value


def _uint(element: etree._Element, path: str, maximum: int = MAX_UINT64) -> int:
    text = (element.text or "").strip()
    if not text.isdigit() or int(text) > maximum:
        raise RpcFailure("invalid-value", f"{path}: {text[:40]!r} is not an integer in 0..{maximum}",
                         path=path)
    return int(text)


def _children(element: etree._Element, allowed: set[str], path: str) -> dict[str, etree._Element]:
    found: dict[str, etree._Element] = {}
    for child in element:
        if not isinstance(child.tag, str):
            continue  # comments and processing instructions
        ns, name = _local(child)
        if ns != NS:
            raise RpcFailure("unknown-namespace", f"{path}: namespace {ns!r} is not served here",
                             error_type="protocol", path=path,
                             info={"bad-element": name, "bad-namespace": ns})
        if name not in allowed:
            raise RpcFailure("unknown-element", f"{path}: unknown element <{name}>",
                             path=path, info={"bad-element": name})
        if name in found:
            raise RpcFailure("bad-element", f"{path}: <{name}> given twice", path=path,
                             info={"bad-element": name})
        found[name] = child
    return found


def parse_config(config: etree._Element, default_operation: str, radix: int) -> Edit:
    """Read ``config``; RpcFailure names the element and the problem."""
    edit = Edit()
    top = _children(config, {"fence", "cross-connects"}, "/")
    if "fence" in top:
        leaves = _children(top["fence"], {"epoch", "expected-generation", "request-id"}, "/hos:fence")
        if "epoch" in leaves:
            edit.fence.epoch = _uint(leaves["epoch"], "/hos:fence/hos:epoch")
        if "expected-generation" in leaves:
            edit.fence.expected_generation = _uint(leaves["expected-generation"],
                                                   "/hos:fence/hos:expected-generation")
        if "request-id" in leaves:
            request_id = (leaves["request-id"].text or "").strip()
            if not 1 <= len(request_id) <= 128:
                raise RpcFailure("invalid-value", "request-id must have 1..128 characters",
                                 path="/hos:fence/hos:request-id")
            edit.fence.request_id = request_id
    connects = top.get("cross-connects")
    if connects is None:
        return edit
    container_op = _operation(connects, default_operation)
    if container_op in ("delete", "remove"):
        if len(connects):
            raise RpcFailure("bad-element", f"{container_op} of cross-connects takes no pairs",
                             path="/hos:cross-connects", info={"bad-element": "cross-connects"})
        edit.clear = True
        return edit
    if container_op in ("create", "replace"):
        raise RpcFailure("operation-not-supported",
                         f"{container_op} of the whole cross-connects container is not supported",
                         error_type="protocol", path="/hos:cross-connects")
    for pair in connects:
        if not isinstance(pair.tag, str):
            continue
        if _local(pair) != (NS, "pair"):
            raise RpcFailure("unknown-element", f"unknown element <{etree.QName(pair).localname}> "
                             "in cross-connects", path="/hos:cross-connects",
                             info={"bad-element": etree.QName(pair).localname})
        operation = _operation(pair, container_op)
        leaves = _children(pair, {"ingress", "egress"}, _PAIR_PATH)
        if "ingress" not in leaves:
            raise RpcFailure("missing-element", "a pair needs its key <ingress>", error_type="protocol",
                             path=_PAIR_PATH, info={"bad-element": "ingress"})
        ingress = _uint(leaves["ingress"], f"{_PAIR_PATH}/hos:ingress", 65535)
        path = f"{_PAIR_PATH}[hos:ingress='{ingress}']"
        egress = _uint(leaves["egress"], f"{path}/hos:egress", 65535) if "egress" in leaves else None
        if egress is None and operation in ("create", "merge", "replace"):
            raise RpcFailure("missing-element", f"{operation} of pair {ingress} needs <egress>",
                             error_type="protocol", path=path, info={"bad-element": "egress"})
        edit.pairs.append((operation, ingress, egress))
        if len(edit.pairs) > radix:
            raise RpcFailure("too-big", f"cross-connects: at most {radix} pairs per edit",
                             app_tag="too-many-elements", path="/hos:cross-connects")
    return edit


def pair_of(ingress: int, egress: int) -> CrossConnect:
    return CrossConnect(ingress, egress)
