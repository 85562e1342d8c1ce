"""Errors of the northbound server and client, and how ApiError codes travel over gRPC.

An :class:`~controller.northbound.api.ApiError` becomes the status code below with its message as
the details, plus the trailing metadata ``heliostat-api-error: <code>`` so the client can
tell a deliberate UNAVAILABLE ("the daemon is starting") from an unreachable daemon.
"""

from __future__ import annotations

import grpc

from controller.northbound.api import ApiErrorCode
from optimizer.errors import HeliostatError

#: Trailing-metadata key carrying the ApiErrorCode value of a deliberate error.
API_ERROR_METADATA_KEY = "heliostat-api-error"

STATUS_OF_API_ERROR: dict[ApiErrorCode, grpc.StatusCode] = {
    ApiErrorCode.INVALID_ARGUMENT: grpc.StatusCode.INVALID_ARGUMENT,
    ApiErrorCode.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    ApiErrorCode.FAILED_PRECONDITION: grpc.StatusCode.FAILED_PRECONDITION,
    ApiErrorCode.UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
}


class NorthboundError(HeliostatError):
    """The northbound servers could not start (an address in use, a bad TLS file...)."""


class ConversionError(HeliostatError):
    """A value does not have the shape the API documents (e.g. a topology without links)."""


class ControllerClientError(HeliostatError):
    """A call from :class:`~controller.northbound.client.ControllerClient` failed."""


class ControllerUnreachable(ControllerClientError):
    """The controller did not answer: not running, wrong address, or past the deadline."""


class ControllerCallFailed(ControllerClientError):
    """The controller answered with an error that is not an ApiError (INTERNAL, ...)."""

    def __init__(self, message: str, code: grpc.StatusCode) -> None:
        super().__init__(message)
        self.code = code
