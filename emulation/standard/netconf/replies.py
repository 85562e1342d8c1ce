"""<rpc-reply> and <rpc-error> (RFC 6241 sections 4.2 and 4.3) as the server writes them."""

from __future__ import annotations

from collections.abc import Mapping

from lxml import etree

from southbound.standard.netconf.encoding import BASE_NS, NS, q


class RpcFailure(Exception):
    """An <rpc-error> to answer with: ``tag`` is an RFC 6241 error-tag, ``app_tag`` the device's
    own, ``info`` the <error-info> children (in the module's namespace unless a bad-* field)."""

    def __init__(self, tag: str, message: str, *, error_type: str = "application", app_tag: str = "",
                 path: str = "", info: Mapping[str, object] | None = None) -> None:
        super().__init__(message)
        self.tag = tag
        self.message = message
        self.error_type = error_type
        self.app_tag = app_tag
        self.path = path
        self.info = dict(info or {})


_BASE_INFO = {"bad-element", "bad-attribute", "bad-namespace", "session-id", "ok-element",
              "err-element", "noop-element"}


def reply(attributes: Mapping[str, str]) -> etree._Element:
    """An empty <rpc-reply> carrying the <rpc>'s attributes (message-id and any other)."""
    element = etree.Element(q("rpc-reply", BASE_NS), nsmap={None: BASE_NS})
    for name, value in attributes.items():
        element.set(name, value)
    return element


def ok(attributes: Mapping[str, str]) -> etree._Element:
    element = reply(attributes)
    etree.SubElement(element, q("ok", BASE_NS))
    return element


def data(attributes: Mapping[str, str]) -> tuple[etree._Element, etree._Element]:
    """(<rpc-reply>, its <data>) to fill."""
    element = reply(attributes)
    return element, etree.SubElement(element, q("data", BASE_NS), nsmap={"hos": NS})


def error(attributes: Mapping[str, str], failure: RpcFailure) -> etree._Element:
    element = reply(attributes)
    rpc_error = etree.SubElement(element, q("rpc-error", BASE_NS), nsmap={"hos": NS})  # error-path's prefix
    for name, text in (("error-type", failure.error_type), ("error-tag", failure.tag),
                       ("error-severity", "error"), ("error-app-tag", failure.app_tag),
                       ("error-path", failure.path)):
        if text:
            child = etree.SubElement(rpc_error, q(name, BASE_NS))
            child.text = text
    message = etree.SubElement(rpc_error, q("error-message", BASE_NS))
    message.set("{http://www.w3.org/XML/1998/namespace}lang", "en")
    message.text = failure.message
    if failure.info:
        info = etree.SubElement(rpc_error, q("error-info", BASE_NS), nsmap={"hos": NS})
        for name, value in failure.info.items():
            ns = BASE_NS if name in _BASE_INFO else NS
            etree.SubElement(info, q(name, ns)).text = str(value)
    return element
