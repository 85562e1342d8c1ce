"""P4Runtime's error reports, read: a failed Write's per-update ``p4.v1.Error`` list (spec
§12.3: the RPC fails UNKNOWN and its ``google.rpc.Status`` details hold one Error per
update, OK for those that did not fail), as (update index, code, message)."""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from southbound.standard.pb import p4runtime_pb2, status_pb2

STATUS_DETAILS_KEY = "grpc-status-details-bin"


@dataclass(frozen=True)
class UpdateError:
    index: int  # the update's position in the WriteRequest
    code: grpc.StatusCode
    message: str


_CODE_OF_VALUE = {c.value[0]: c for c in grpc.StatusCode}


def status_code(value: int) -> grpc.StatusCode:
    return _CODE_OF_VALUE.get(value, grpc.StatusCode.UNKNOWN)


def update_errors(error: BaseException | None) -> list[UpdateError]:
    """The failed updates of a Write's RpcError (none when it carries no details)."""
    trailing = getattr(error, "trailing_metadata", None)
    if trailing is None:
        return []
    try:
        items = trailing() or ()
    except Exception:  # a broken call object must not hide the real error
        return []
    for key, value in items:
        if key != STATUS_DETAILS_KEY:
            continue
        status = status_pb2.Status.FromString(value)
        out = []
        for index, detail in enumerate(status.details):
            err = p4runtime_pb2.Error()
            if detail.Unpack(err) and err.canonical_code != 0:
                out.append(UpdateError(index, status_code(err.canonical_code), err.message))
        return out
    return []


def write_failure(errors: list[tuple[int, grpc.StatusCode, str]], total: int) -> tuple[
        grpc.StatusCode, str, bytes]:
    """The (code, message, serialized google.rpc.Status) a server sends for a failed batch of
    ``total`` updates, ``errors`` (index, code, message) among them (spec §12.3)."""
    failed = {i: (code, message) for i, code, message in errors}
    status = status_pb2.Status(code=grpc.StatusCode.UNKNOWN.value[0],
                               message=f"{len(failed)} of {total} updates failed")
    for i in range(total):
        code, message = failed.get(i, (grpc.StatusCode.OK, ""))
        status.details.add().Pack(p4runtime_pb2.Error(canonical_code=code.value[0], message=message))
    return grpc.StatusCode.UNKNOWN, status.message, status.SerializeToString()
