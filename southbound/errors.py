"""Domain errors of the southbound drivers, and the one place grpc.RpcError is mapped to them.

Hierarchy::

    SouthboundError
    ├── DeviceUnavailable   the device did not answer (after retries) or the deadline passed
    ├── StaleGeneration     compare-and-set refused: the device's generation moved on
    ├── Fenced              the call's leadership epoch is below one the device has seen (HA)
    ├── InvalidRequest      the device refused a malformed request (nothing changed)
    └── DeviceError         the device failed in some other way
        └── ApplyFailed     an apply failed; ``outcome`` says which state the device is in
"""

from __future__ import annotations

import enum

import grpc

#: Trailing-metadata key the devices use to report their current generation.
GENERATION_METADATA_KEY = "heliostat-generation"
#: Trailing-metadata key of a fencing refusal: the highest leadership epoch the device has seen.
EPOCH_METADATA_KEY = "heliostat-epoch"


class ApplyOutcome(enum.Enum):
    """Which configuration a device holds after a failed apply."""

    OLD_STATE = "old"  # nothing of the apply took effect
    NEW_STATE = "new"  # all of it took effect
    UNKNOWN = "unknown"  # the device could not be asked


class SouthboundError(Exception):
    """Base of every error the southbound drivers raise."""

    def __init__(
        self, device: str, message: str, code: grpc.StatusCode | None = None
    ) -> None:
        super().__init__(f"{device}: {message}")
        self.device = device
        self.message = message
        self.code = code


class DeviceUnavailable(SouthboundError):
    """The device could not be reached, or did not answer before the deadline."""


class StaleGeneration(SouthboundError):
    """The expected generation was not the device's; ``current_generation`` is, if known."""

    def __init__(
        self,
        device: str,
        message: str,
        code: grpc.StatusCode | None = None,
        current_generation: int | None = None,
    ) -> None:
        super().__init__(device, message, code)
        self.current_generation = current_generation


class Fenced(SouthboundError):
    """The device refused a call whose leadership epoch is below the highest it has seen (another
    controller replica leads now); it changed nothing. See southbound/fencing.py."""

    def __init__(self, device: str, message: str, highest_epoch: int) -> None:
        super().__init__(device, message, grpc.StatusCode.FAILED_PRECONDITION)
        self.highest_epoch = highest_epoch


class InvalidRequest(SouthboundError):
    """The device rejected the request as malformed and changed nothing."""


class DeviceError(SouthboundError):
    """The device failed for another reason (internal error, unimplemented, ...)."""


class ApplyFailed(DeviceError):
    """An apply did not complete; ``outcome`` tells whether the old or new state holds."""

    def __init__(self, device: str, message: str, outcome: ApplyOutcome, cause: Exception) -> None:
        super().__init__(device, f"{message} (device holds {outcome.value} state)")
        self.outcome = outcome
        self.cause = cause


def _int_from_metadata(error: grpc.RpcError, key: str = GENERATION_METADATA_KEY) -> int | None:
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
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = (error.details() if hasattr(error, "details") else None) or str(code)
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return DeviceUnavailable(device, f"{code.name}: {details}", code)
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        highest = _int_from_metadata(error, EPOCH_METADATA_KEY)
        if highest is not None:
            return Fenced(device, details, highest)
        return StaleGeneration(device, details, code, _int_from_metadata(error))
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return InvalidRequest(device, details, code)
    return DeviceError(device, f"{code.name}: {details}", code)
