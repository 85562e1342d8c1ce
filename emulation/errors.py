"""Why an emulated device refuses a request; the gRPC layer turns these into status codes."""

from __future__ import annotations

import grpc


class DeviceRefusal(Exception):
    """A request the device refused; nothing changed unless the subclass says otherwise."""

    code = grpc.StatusCode.INTERNAL

    def __init__(self, message: str, generation: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.generation = generation


class MalformedRequest(DeviceRefusal):
    code = grpc.StatusCode.INVALID_ARGUMENT


class GenerationMismatch(DeviceRefusal):
    code = grpc.StatusCode.FAILED_PRECONDITION


class ApplyAborted(DeviceRefusal):
    """The device failed part way through and rolled back to the old state."""

    code = grpc.StatusCode.ABORTED


class ReplyLost(DeviceRefusal):
    """Fault injection: the change was made but the device failed before answering."""

    code = grpc.StatusCode.INTERNAL


class NoPower(DeviceRefusal):
    code = grpc.StatusCode.UNAVAILABLE
