"""The one place the gRPC transport turns a ``grpc.RpcError`` into a
:class:`~southbound.errors.SouthboundError`, and the trailing metadata the devices use.

A refusal (FAILED_PRECONDITION) carries ``heliostat-epoch`` when it is a fencing refusal, or
``heliostat-generation`` (the device's current generation) when the compare-and-set failed.
"""

from __future__ import annotations

import grpc

from southbound.errors import ErrorCode, SouthboundError, device_error

#: Trailing-metadata key the devices use to report their current generation.
GENERATION_METADATA_KEY = "heliostat-generation"
#: Trailing-metadata key of a fencing refusal: the highest leadership epoch the device has seen.
EPOCH_METADATA_KEY = "heliostat-epoch"

#: grpc status -> transport-neutral code (FAILED_PRECONDITION is refined by the metadata).
ERROR_CODE_OF_STATUS: dict[grpc.StatusCode, ErrorCode] = {
    grpc.StatusCode.UNAVAILABLE: ErrorCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED: ErrorCode.DEADLINE,
    grpc.StatusCode.INVALID_ARGUMENT: ErrorCode.INVALID,
    grpc.StatusCode.FAILED_PRECONDITION: ErrorCode.CONFLICT,
    grpc.StatusCode.NOT_FOUND: ErrorCode.NOT_FOUND,
    grpc.StatusCode.ABORTED: ErrorCode.ABORTED,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ErrorCode.OVERLOADED,
    grpc.StatusCode.PERMISSION_DENIED: ErrorCode.DENIED,
    grpc.StatusCode.UNAUTHENTICATED: ErrorCode.DENIED,
    grpc.StatusCode.UNIMPLEMENTED: ErrorCode.UNSUPPORTED,
}


def _int_from_metadata(error: grpc.RpcError, key: str) -> int | None:
    trailing = getattr(error, "trailing_metadata", None)
    if trailing is None:
        return None
    try:
        items = trailing() or ()
    except Exception:  # a broken call object must not hide the real error
        return None
    for name, value in items:
        if name == key:
            try:
                return int(value)
            except (TypeError, ValueError):
                return None
    return None


def map_rpc_error(error: grpc.RpcError, device: str) -> SouthboundError:
    """Turn a grpc.RpcError from a call to ``device`` into a SouthboundError."""
    status = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = (error.details() if hasattr(error, "details") else None) or str(status)
    code = ERROR_CODE_OF_STATUS.get(status, ErrorCode.INTERNAL)
    highest = None
    if status == grpc.StatusCode.FAILED_PRECONDITION:
        highest = _int_from_metadata(error, EPOCH_METADATA_KEY)
        if highest is not None:
            code = ErrorCode.FENCED
    # the device's own words for refusals; the status name where it tells what happened
    plain = code in (ErrorCode.INVALID, ErrorCode.CONFLICT, ErrorCode.FENCED)
    return device_error(
        code,
        device,
        details if plain else f"{status.name}: {details}",
        transport_code=status,
        current_generation=_int_from_metadata(error, GENERATION_METADATA_KEY),
        highest_epoch=highest,
    )
