"""Domain errors of the southbound drivers, with transport-neutral error codes.

Hierarchy::

    SouthboundError         ``code``: an :class:`ErrorCode`; ``transport_code``: the transport's own
    ├── DeviceUnavailable   the device did not answer (after retries) or the deadline passed
    ├── StaleGeneration     compare-and-set refused: the device's generation moved on
    ├── Fenced              the call's leadership epoch is below one the device has seen (HA)
    ├── InvalidRequest      the device refused a malformed request (nothing changed)
    └── DeviceError         the device failed in some other way
        └── ApplyFailed     an apply failed; ``outcome`` says which state the device is in

A transport turns its failures into these with :func:`device_error` (one place per
transport: the gRPC one is :func:`southbound.grpc_native.status.map_rpc_error`); the class
follows from the code, so callers may catch either.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING


class ErrorCode(enum.Enum):
    """Why a device call failed, in words of no transport."""

    UNAVAILABLE = "unavailable"  # the device could not be reached (retried)
    DEADLINE = "deadline"  # no answer before the call's deadline
    INVALID = "invalid"  # the device rejected the request as malformed; nothing changed
    CONFLICT = "conflict"  # compare-and-set refused: the device's generation moved on
    FENCED = "fenced"  # the caller is not the primary: a higher leadership epoch was seen
    NOT_FOUND = "not_found"  # the device does not know what the request names
    ABORTED = "aborted"  # the device gave up on the change
    OVERLOADED = "overloaded"  # the device refused for lack of resources (too many streams...)
    DENIED = "denied"  # not authenticated, or not allowed
    UNSUPPORTED = "unsupported"  # the device does not implement the call
    INTERNAL = "internal"  # any other failure


if TYPE_CHECKING:
    from southbound.types import CrossConnect, CrossConnectTable


class ApplyOutcome(enum.Enum):
    """Which configuration a device holds after a failed apply."""

    OLD_STATE = "old"  # nothing of the apply took effect
    NEW_STATE = "new"  # all of it took effect
    UNKNOWN = "unknown"  # the device could not be asked


class SouthboundError(Exception):
    """Base of every error the southbound drivers raise."""

    def __init__(
        self,
        device: str,
        message: str,
        code: ErrorCode = ErrorCode.INTERNAL,
        transport_code: object | None = None,
    ) -> None:
        super().__init__(f"{device}: {message}")
        self.device = device
        self.message = message
        self.code = code
        #: the transport's own code, for logs (a grpc.StatusCode for the gRPC transport)
        self.transport_code = transport_code


class DeviceUnavailable(SouthboundError):
    """The device could not be reached, or did not answer before the deadline."""

    def __init__(
        self,
        device: str,
        message: str,
        code: ErrorCode = ErrorCode.UNAVAILABLE,
        transport_code: object | None = None,
    ) -> None:
        super().__init__(device, message, code, transport_code)


class StaleGeneration(SouthboundError):
    """The expected generation was not the device's; ``current_generation`` is, if known."""

    def __init__(
        self,
        device: str,
        message: str,
        transport_code: object | None = None,
        current_generation: int | None = None,
    ) -> None:
        super().__init__(device, message, ErrorCode.CONFLICT, transport_code)
        self.current_generation = current_generation


class Fenced(SouthboundError):
    """The device refused a call whose leadership epoch is below the highest it has seen (another
    controller replica leads now); it changed nothing. See southbound/fencing.py."""

    def __init__(
        self, device: str, message: str, highest_epoch: int, transport_code: object | None = None
    ) -> None:
        super().__init__(device, message, ErrorCode.FENCED, transport_code)
        self.highest_epoch = highest_epoch


class InvalidRequest(SouthboundError):
    """The device rejected the request as malformed and changed nothing."""

    def __init__(self, device: str, message: str, transport_code: object | None = None) -> None:
        super().__init__(device, message, ErrorCode.INVALID, transport_code)


class DeviceError(SouthboundError):
    """The device failed for another reason (internal error, unimplemented, ...)."""


class ApplyFailed(DeviceError):
    """An apply did not complete; ``outcome`` tells whether the old or new state holds."""

    def __init__(self, device: str, message: str, outcome: ApplyOutcome, cause: Exception) -> None:
        code = cause.code if isinstance(cause, SouthboundError) else ErrorCode.INTERNAL
        super().__init__(device, f"{message} (device holds {outcome.value} state)", code)
        self.outcome = outcome
        self.cause = cause


def device_error(
    code: ErrorCode,
    device: str,
    message: str,
    *,
    transport_code: object | None = None,
    current_generation: int | None = None,
    highest_epoch: int | None = None,
) -> SouthboundError:
    """The error of class matching ``code`` (what every transport raises).

    ``highest_epoch`` goes with FENCED (without it the refusal cannot be told from a stale
    generation, and is one); ``current_generation`` with CONFLICT."""
    if code in (ErrorCode.UNAVAILABLE, ErrorCode.DEADLINE):
        return DeviceUnavailable(device, message, code, transport_code)
    if code is ErrorCode.FENCED and highest_epoch is not None:
        return Fenced(device, message, highest_epoch, transport_code)
    if code in (ErrorCode.FENCED, ErrorCode.CONFLICT):
        return StaleGeneration(device, message, transport_code, current_generation)
    if code is ErrorCode.INVALID:
        return InvalidRequest(device, message, transport_code)
    return DeviceError(device, message, code, transport_code)


def circuits_outcome(
    read: Callable[[], CrossConnectTable],
    expected_generation: int,
    add: Sequence[CrossConnect],
    remove: Sequence[CrossConnect],
) -> ApplyOutcome:
    """Which state an OCS holds after a failed apply, read back with ``read`` (any transport's
    ``cross_connects``): the old one while its generation has not moved, the new one when every
    added circuit is there and no removed one is, else unknown (also when it cannot be read)."""
    try:
        table = read()
    except SouthboundError:
        return ApplyOutcome.UNKNOWN
    present = table.cross_connects
    new_holds = all(c in present for c in add) and not any(c in present for c in remove if c not in add)
    if table.generation == expected_generation:
        return ApplyOutcome.OLD_STATE
    if new_holds:
        return ApplyOutcome.NEW_STATE
    return ApplyOutcome.UNKNOWN
