"""The optical circuit switch over NETCONF (RFC 6241) and the heliostat-optical-switch YANG
module: :class:`~southbound.standard.netconf.driver.NetconfOcs` (an ncclient client) serves
the CircuitSwitch and OcsEvents contracts. README.md beside this file tells the model, the
edits, the fence and the framing."""

from importlib import resources

YANG_MODULE = "heliostat-optical-switch"
YANG_REVISION = "2026-12-03"


def yang_text() -> str:
    """The YANG module's text (package data)."""
    return (resources.files(__package__) / f"{YANG_MODULE}.yang").read_text(encoding="utf-8")
