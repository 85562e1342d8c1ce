"""The YANG module is valid YANG 1.1 (pyang, strict), and every element the server writes and
the driver edits is a node of it, in its namespace."""

from __future__ import annotations

from typing import Any

import pytest
from lxml import etree

pyang_context = pytest.importorskip("pyang.context", reason="pyang (test extra) validates the YANG module")
from pyang import error as pyang_error  # noqa: E402
from pyang import repository  # noqa: E402

from emulation.clock import EmulatedClock  # noqa: E402
from emulation.ocs_device import OcsDevice  # noqa: E402
from emulation.standard.netconf.edit import parse_config  # noqa: E402
from emulation.standard.netconf.service import OcsDatastore  # noqa: E402
from southbound.standard.netconf import YANG_MODULE, YANG_REVISION, encoding, yang_text  # noqa: E402
from southbound.standard.netconf.encoding import BASE_NS, NS  # noqa: E402
from southbound.types import CrossConnect, OcsEvent  # noqa: E402


def _module() -> tuple[Any, list[str]]:
    ctx = pyang_context.Context(repository.FileRepository(""))
    ctx.strict = True
    ctx.lax_quote_checks = False
    module = ctx.add_module(f"{YANG_MODULE}.yang", yang_text())
    ctx.validate()
    problems = [f"{pos}: {pyang_error.err_to_str(tag, args)}" for pos, tag, args in ctx.errors
                if pyang_error.is_error(pyang_error.err_level(tag))]
    return module, problems


def _paths(node: Any, prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    paths = set()
    for child in getattr(node, "i_children", []):
        if child.keyword in ("container", "list", "leaf", "leaf-list", "notification"):
            path = (*prefix, child.arg)
            paths.add(path)
            paths |= _paths(child, path)
    return paths


def _element_paths(element: etree._Element, prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    paths = set()
    for child in element:
        name = etree.QName(child)
        assert name.namespace == NS, f"{name} is not in the module's namespace"
        path = (*prefix, name.localname)
        paths.add(path)
        paths |= _element_paths(child, path)
    return paths


def test_the_module_is_valid_yang_with_its_name_namespace_and_revision() -> None:
    module, problems = _module()
    assert problems == []
    assert module.arg == YANG_MODULE
    assert module.search_one("namespace").arg == NS
    assert module.search_one("revision").arg == YANG_REVISION


def test_get_replies_edits_and_notifications_use_only_nodes_of_the_module() -> None:
    module, _ = _module()
    nodes = _paths(module)
    device = OcsDevice("ocs-y", 8, EmulatedClock(), switching_time_s=0.0)
    datastore = OcsDatastore(device)
    first = encoding.edit_config(add=[CrossConnect(0, 4)], remove=[], epoch=0, expected_generation=1,
                                 request_id="r")
    datastore.edit(parse_config(first, "merge", device.radix))
    data = etree.Element(f"{{{BASE_NS}}}data")
    datastore.fill(data, None, config_only=False)
    written = _element_paths(data)
    config = encoding.edit_config(add=[CrossConnect(1, 5)], remove=[CrossConnect(0, 4)], epoch=3,
                                  expected_generation=2, request_id="x")
    written |= _element_paths(config)
    for event in (OcsEvent(1, 0.5, 2, "circuit_down", CrossConnect(0, 4), "removed"),
                  OcsEvent(2, 0.6, 3, "power_loss", circuits_lost=1)):
        body = encoding.event_to_xml(event, "2026-12-03T00:00:00+00:00")[1]
        written |= {(etree.QName(body).localname, *p) for p in _element_paths(body)}
        written.add((etree.QName(body).localname,))
    device.close()
    assert written - nodes == set()
    assert {("cross-connects", "pair", "egress"), ("ports", "port", "input-power"),
            ("fence-state", "request", "replayed"), ("power-change", "circuits-lost")} <= written
