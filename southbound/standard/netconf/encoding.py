"""XML of the heliostat-optical-switch YANG module <-> the plain types of southbound.types.

Both sides use it: the driver builds edits and reads replies, the emulated server writes
state and notifications. Parsing goes through :func:`parse_xml` (no entities, no network)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lxml import etree

from southbound.types import CrossConnect, CrossConnectTable, OcsEvent, OcsInfo, OcsPortStatus

NS = "urn:heliostat:yang:optical-switch"
BASE_NS = "urn:ietf:params:xml:ns:netconf:base:1.0"
NOTIFICATION_NS = "urn:ietf:params:xml:ns:netconf:notification:1.0"
MAX_MESSAGE_BYTES = 16 * 1024 * 1024

_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, remove_blank_text=True,
                          huge_tree=False, load_dtd=False)


class XmlError(ValueError):
    """A document that is not the XML (or the module's shape) expected; names what is wrong."""


def q(name: str, ns: str = NS) -> str:
    """Clark notation of ``name`` in ``ns`` (the module's namespace by default)."""
    return f"{{{ns}}}{name}"


def parse_xml(text: str | bytes) -> etree._Element:
    """Parse ``text`` safely; XmlError on malformed XML."""
    data = text.encode() if isinstance(text, str) else text
    if len(data) > MAX_MESSAGE_BYTES:
        raise XmlError(f"message of {len(data)} bytes exceeds {MAX_MESSAGE_BYTES}")
    try:
        return etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as exc:
        raise XmlError(f"malformed XML: {exc}") from exc


def sub(parent: etree._Element, name: str, text: object | None = None) -> etree._Element:
    child = etree.SubElement(parent, q(name))
    if text is not None:
        child.text = _text(text)
    return child


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def leaf(parent: etree._Element, name: str) -> str | None:
    """The text of ``parent``'s child ``name`` of the module, or None."""
    child = parent.find(q(name))
    return None if child is None else (child.text or "").strip()


def leaf_int(parent: etree._Element, name: str, default: int | None = None) -> int:
    text = leaf(parent, name)
    if text is None:
        if default is None:
            raise XmlError(f"<{etree.QName(parent).localname}> has no <{name}>")
        return default
    try:
        return int(text)
    except ValueError:
        raise XmlError(f"<{name}> is not an integer: {text[:40]!r}") from None


def leaf_float(parent: etree._Element, name: str, default: float = 0.0) -> float:
    text = leaf(parent, name)
    if text is None:
        return default
    try:
        return float(text)
    except ValueError:
        raise XmlError(f"<{name}> is not a number: {text[:40]!r}") from None


def _find(root: etree._Element, name: str) -> etree._Element | None:
    return root if root.tag == q(name) else root.find(q(name))


# -- the driver's edit ---------------------------------------------------------------------
def edit_config(
    *, add: Iterable[CrossConnect], remove: Iterable[CrossConnect], epoch: int,
    expected_generation: int, request_id: str,
) -> etree._Element:
    """The <config> of one apply: the fence, then a delete per removed and a create per added
    pair (the device refuses creating a pair that exists and deleting one that does not)."""
    config = etree.Element(q("config", BASE_NS), nsmap={None: BASE_NS, "hos": NS})
    fence = sub(config, "fence")
    sub(fence, "epoch", epoch)
    sub(fence, "expected-generation", expected_generation)
    sub(fence, "request-id", request_id)
    connects = sub(config, "cross-connects")
    for operation, pairs in (("delete", remove), ("create", add)):
        for c in pairs:
            pair = sub(connects, "pair")
            pair.set(q("operation", BASE_NS), operation)
            sub(pair, "ingress", c.a)
            sub(pair, "egress", c.b)
    return config


# -- state <-> types ---------------------------------------------------------------------------
@dataclass(frozen=True)
class RequestResult:
    generation: int
    replayed: bool


def info_to_xml(data: etree._Element, info: OcsInfo) -> None:
    system = sub(data, "system-info")
    sub(system, "name", info.name)
    sub(system, "radix", info.radix)
    sub(system, "sides", "north-south" if info.sides == "north_south" else "any")
    sub(system, "switching-time", f"{info.switching_time_s:.6f}")
    sub(system, "powered", info.powered)


def info_from_xml(data: etree._Element, generation: int) -> OcsInfo:
    system = _find(data, "system-info")
    if system is None:
        raise XmlError("reply has no <system-info>")
    radix = leaf_int(system, "radix")
    split = leaf(system, "sides") == "north-south"
    half = radix // 2
    return OcsInfo(
        name=leaf(system, "name") or "", radix=radix, sides="north_south" if split else "any",
        north_ports=tuple(range(half)) if split else (),
        south_ports=tuple(range(half, radix)) if split else (),
        generation=generation, switching_time_s=leaf_float(system, "switching-time"),
        powered=leaf(system, "powered") == "true",
    )


def fence_state_to_xml(data: etree._Element, generation: int, highest_epoch: int,
                       requests: Iterable[tuple[str, RequestResult]] = ()) -> None:
    state = sub(data, "fence-state")
    sub(state, "generation", generation)
    sub(state, "highest-epoch", highest_epoch)
    for request_id, result in requests:
        request = sub(state, "request")
        sub(request, "request-id", request_id)
        sub(request, "generation", result.generation)
        sub(request, "replayed", result.replayed)


def generation_from_xml(data: etree._Element) -> int:
    state = _find(data, "fence-state")
    if state is None:
        raise XmlError("reply has no <fence-state>")
    return leaf_int(state, "generation")


def request_result_from_xml(data: etree._Element, request_id: str) -> RequestResult | None:
    state = _find(data, "fence-state")
    for request in () if state is None else state.iterfind(q("request")):
        if leaf(request, "request-id") == request_id:
            return RequestResult(leaf_int(request, "generation"), leaf(request, "replayed") == "true")
    return None


def table_to_xml(data: etree._Element, items: Iterable[tuple[CrossConnect, bool]],
                 with_status: bool = True) -> None:
    connects = sub(data, "cross-connects")
    for c, switching in items:
        pair = sub(connects, "pair")
        sub(pair, "ingress", c.a)
        sub(pair, "egress", c.b)
        if with_status:
            sub(pair, "status", "switching" if switching else "established")


def table_from_xml(data: etree._Element, generation: int) -> CrossConnectTable:
    connects = _find(data, "cross-connects")
    pairs: set[CrossConnect] = set()
    switching: set[CrossConnect] = set()
    for pair in () if connects is None else connects.iterfind(q("pair")):
        c = CrossConnect(leaf_int(pair, "ingress"), leaf_int(pair, "egress"))
        pairs.add(c)
        if leaf(pair, "status") == "switching":
            switching.add(c)
    return CrossConnectTable(generation, frozenset(pairs), frozenset(switching))


def ports_to_xml(data: etree._Element, ports: Iterable[OcsPortStatus]) -> None:
    container = sub(data, "ports")
    for p in ports:
        port = sub(container, "port")
        sub(port, "port-id", p.port)
        sub(port, "side", p.side)
        sub(port, "admin-status", "enabled")
        sub(port, "oper-status", "up" if p.oper_up else "down")
        sub(port, "input-power", f"{p.rx_power_dbm:.2f}")
        sub(port, "output-power", f"{p.tx_power_dbm:.2f}")
        if p.connected_port is not None:
            sub(port, "connected-port", p.connected_port)


def ports_from_xml(data: etree._Element) -> list[OcsPortStatus]:
    container = _find(data, "ports")
    ports = []
    for port in () if container is None else container.iterfind(q("port")):
        connected = leaf(port, "connected-port")
        ports.append(OcsPortStatus(
            port=leaf_int(port, "port-id"), side=leaf(port, "side") or "any",
            oper_up=leaf(port, "oper-status") == "up",
            rx_power_dbm=leaf_float(port, "input-power"), tx_power_dbm=leaf_float(port, "output-power"),
            connected_port=None if connected is None else leaf_int(port, "connected-port"),
        ))
    return sorted(ports, key=lambda p: p.port)


# -- notifications ---------------------------------------------------------------------------
_CIRCUIT_KINDS = {"circuit_up": "circuit-up", "circuit_down": "circuit-down"}
_POWER_KINDS = {"power_loss": "power-loss", "power_restored": "power-restored"}
_KIND_OF = {v: k for k, v in (*_CIRCUIT_KINDS.items(), *_POWER_KINDS.items())}


def event_to_xml(event: OcsEvent, event_time: str) -> etree._Element:
    """An RFC 5277 <notification> of ``event``; ``event_time`` is its RFC 3339 eventTime."""
    notification = etree.Element(q("notification", NOTIFICATION_NS), nsmap={None: NOTIFICATION_NS})
    etree.SubElement(notification, q("eventTime", NOTIFICATION_NS)).text = event_time
    circuit = event.kind in _CIRCUIT_KINDS
    body = etree.SubElement(notification, q("cross-connect-change" if circuit else "power-change"),
                            nsmap={None: NS})
    sub(body, "sequence", event.sequence)
    sub(body, "time", f"{event.time_s:.6f}")
    sub(body, "generation", event.generation)
    sub(body, "kind", _CIRCUIT_KINDS.get(event.kind) or _POWER_KINDS.get(event.kind, event.kind))
    if circuit and event.cross_connect is not None:
        sub(body, "ingress", event.cross_connect.a)
        sub(body, "egress", event.cross_connect.b)
    if event.reason:
        sub(body, "reason", event.reason)
    if not circuit:
        sub(body, "circuits-lost", event.circuits_lost)
    return notification


def event_from_xml(notification: etree._Element) -> OcsEvent | None:
    """The OcsEvent of an RFC 5277 notification, or None for one of another module."""
    body = notification.find(q("cross-connect-change"))
    if body is None:
        body = notification.find(q("power-change"))
    if body is None:
        return None
    kind = leaf(body, "kind") or ""
    connect = None
    if body.find(q("ingress")) is not None:
        connect = CrossConnect(leaf_int(body, "ingress"), leaf_int(body, "egress"))
    return OcsEvent(
        sequence=leaf_int(body, "sequence"), time_s=leaf_float(body, "time"),
        generation=leaf_int(body, "generation"), kind=_KIND_OF.get(kind, kind),
        cross_connect=connect, reason=leaf(body, "reason") or "",
        circuits_lost=leaf_int(body, "circuits-lost", 0),
    )
