"""The one place the NETCONF transport turns an <rpc-error> (RFC 6241 section 4.3) into a
:class:`~southbound.errors.SouthboundError`.

The error-tag decides the class; the device's error-app-tag refines it (the fence's refusals
are operation-failed with app-tag ``epoch-fenced`` or ``generation-mismatch``), and its
<error-info> carries the numbers (``hos:highest-epoch``, ``hos:current-generation``)."""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree

from southbound.errors import ErrorCode, SouthboundError, device_error
from southbound.standard.netconf.encoding import BASE_NS, q

# error-app-tags of the heliostat-optical-switch device
EPOCH_FENCED = "epoch-fenced"
GENERATION_MISMATCH = "generation-mismatch"
APPLY_ABORTED = "apply-aborted"
NO_POWER = "no-power"
NOT_SERVING = "not-serving"
INVALID_CROSS_CONNECT = "invalid-cross-connect"
TOO_MANY = "too-many-elements"

#: error-tag -> code (operation-failed is refined by the app-tag)
ERROR_CODE_OF_TAG: dict[str, ErrorCode] = {
    "in-use": ErrorCode.ABORTED,
    "invalid-value": ErrorCode.INVALID,
    "too-big": ErrorCode.OVERLOADED,
    "missing-attribute": ErrorCode.INVALID,
    "bad-attribute": ErrorCode.INVALID,
    "unknown-attribute": ErrorCode.INVALID,
    "missing-element": ErrorCode.INVALID,
    "bad-element": ErrorCode.INVALID,
    "unknown-element": ErrorCode.INVALID,
    "unknown-namespace": ErrorCode.INVALID,
    "access-denied": ErrorCode.DENIED,
    "lock-denied": ErrorCode.ABORTED,
    "resource-denied": ErrorCode.OVERLOADED,
    "rollback-failed": ErrorCode.INTERNAL,
    "data-exists": ErrorCode.INVALID,
    "data-missing": ErrorCode.INVALID,
    "operation-not-supported": ErrorCode.UNSUPPORTED,
    "operation-failed": ErrorCode.INTERNAL,
    "partial-operation": ErrorCode.INTERNAL,
    "malformed-message": ErrorCode.INVALID,
}
#: error-app-tag -> code, where the tag alone does not say enough
ERROR_CODE_OF_APP_TAG: dict[str, ErrorCode] = {
    EPOCH_FENCED: ErrorCode.FENCED,
    GENERATION_MISMATCH: ErrorCode.CONFLICT,
    APPLY_ABORTED: ErrorCode.ABORTED,
    NO_POWER: ErrorCode.UNAVAILABLE,
    NOT_SERVING: ErrorCode.UNAVAILABLE,
}


@dataclass(frozen=True)
class RpcErrorInfo:
    """One <rpc-error>'s fields."""

    tag: str
    app_tag: str = ""
    path: str = ""
    message: str = ""
    severity: str = "error"
    highest_epoch: int | None = None
    current_generation: int | None = None


def _child_text(element: etree._Element, name: str) -> str:
    child = element.find(q(name, BASE_NS))
    return "" if child is None else (child.text or "").strip()


def _info_int(element: etree._Element, name: str) -> int | None:
    info = element.find(q("error-info", BASE_NS))
    found = None if info is None else info.find(q(name))
    try:
        return None if found is None or found.text is None else int(found.text)
    except ValueError:
        return None


def parse_rpc_error(element: etree._Element) -> RpcErrorInfo:
    """The fields of an <rpc-error> element."""
    return RpcErrorInfo(
        tag=_child_text(element, "error-tag"), app_tag=_child_text(element, "error-app-tag"),
        path=_child_text(element, "error-path"), message=_child_text(element, "error-message"),
        severity=_child_text(element, "error-severity") or "error",
        highest_epoch=_info_int(element, "highest-epoch"),
        current_generation=_info_int(element, "current-generation"),
    )


def map_rpc_error(error: RpcErrorInfo, device: str) -> SouthboundError:
    """The SouthboundError of ``error`` from ``device``; ``transport_code`` is the error-tag
    (with the app-tag after a slash when there is one)."""
    code = ERROR_CODE_OF_APP_TAG.get(error.app_tag) or ERROR_CODE_OF_TAG.get(error.tag, ErrorCode.INTERNAL)
    where = f" at {error.path}" if error.path else ""
    message = error.message or error.tag
    plain = code in (ErrorCode.INVALID, ErrorCode.CONFLICT, ErrorCode.FENCED)
    text = f"{message}{where}" if plain else f"{error.tag}/{error.app_tag or '-'}: {message}{where}"
    transport_code = f"{error.tag}/{error.app_tag}" if error.app_tag else error.tag
    return device_error(code, device, text, transport_code=transport_code,
                        current_generation=error.current_generation,
                        highest_epoch=error.highest_epoch)
