"""<rpc-error> -> SouthboundError, from the XML the server writes (emulation replies.error)."""

from __future__ import annotations

import pytest
from lxml import etree

from emulation.standard.netconf import replies
from emulation.standard.netconf.replies import RpcFailure
from southbound.errors import (
    DeviceError,
    DeviceUnavailable,
    ErrorCode,
    Fenced,
    InvalidRequest,
    SouthboundError,
    StaleGeneration,
)
from southbound.standard.netconf.encoding import BASE_NS, parse_xml, q
from southbound.standard.netconf.rpc_errors import map_rpc_error, parse_rpc_error


def _mapped(failure: RpcFailure) -> SouthboundError:
    reply = replies.error({"message-id": "7"}, failure)
    element = parse_xml(etree.tostring(reply)).find(q("rpc-error", BASE_NS))
    assert element is not None
    return map_rpc_error(parse_rpc_error(element), "ocs-e")


@pytest.mark.parametrize(
    ("failure", "kind", "code"),
    [
        (RpcFailure("operation-failed", "epoch 3 is below 5", app_tag="epoch-fenced",
                    info={"highest-epoch": 5}), Fenced, ErrorCode.FENCED),
        (RpcFailure("operation-failed", "moved on", app_tag="generation-mismatch",
                    info={"current-generation": 9}), StaleGeneration, ErrorCode.CONFLICT),
        (RpcFailure("data-exists", "cross-connect 0-8 exists"), InvalidRequest, ErrorCode.INVALID),
        (RpcFailure("data-missing", "no cross-connect 1-9"), InvalidRequest, ErrorCode.INVALID),
        (RpcFailure("malformed-message", "broken", error_type="rpc"), InvalidRequest, ErrorCode.INVALID),
        (RpcFailure("operation-failed", "mirror stuck", app_tag="apply-aborted"), DeviceError,
         ErrorCode.ABORTED),
        (RpcFailure("resource-denied", "no power", app_tag="no-power"), DeviceUnavailable,
         ErrorCode.UNAVAILABLE),
        (RpcFailure("resource-denied", "busy"), DeviceError, ErrorCode.OVERLOADED),
        (RpcFailure("in-use", "locked by session 3"), DeviceError, ErrorCode.ABORTED),
        (RpcFailure("access-denied", "nacm"), DeviceError, ErrorCode.DENIED),
        (RpcFailure("operation-not-supported", "commit", error_type="protocol"), DeviceError,
         ErrorCode.UNSUPPORTED),
        (RpcFailure("operation-failed", "agent failed"), DeviceError, ErrorCode.INTERNAL),
    ],
)
def test_error_tag_and_app_tag_choose_the_error(
    failure: RpcFailure, kind: type[SouthboundError], code: ErrorCode
) -> None:
    error = _mapped(failure)
    assert type(error) is kind and error.code is code
    assert failure.message in str(error) and str(error).startswith("ocs-e: ")
    assert error.transport_code == (f"{failure.tag}/{failure.app_tag}" if failure.app_tag else failure.tag)


def test_error_info_and_path_reach_the_error() -> None:
    fenced = _mapped(RpcFailure("operation-failed", "below", app_tag="epoch-fenced",
                                path="/hos:fence/hos:epoch", info={"highest-epoch": 12}))
    stale = _mapped(RpcFailure("operation-failed", "moved", app_tag="generation-mismatch",
                               info={"current-generation": 4}))
    assert isinstance(fenced, Fenced) and fenced.highest_epoch == 12
    assert "at /hos:fence/hos:epoch" in str(fenced)
    assert isinstance(stale, StaleGeneration) and stale.current_generation == 4


def test_a_fenced_refusal_without_its_epoch_is_a_stale_generation() -> None:
    error = _mapped(RpcFailure("operation-failed", "below", app_tag="epoch-fenced"))
    assert isinstance(error, StaleGeneration)  # device_error: no highest epoch, no Fenced
