"""What every device client shares: the channel, the caller, health checks, closing."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from southbound.closing import ClosesOnExit
from southbound.errors import Fenced, SouthboundError
from southbound.fencing import NO_ELECTION, EpochSource
from southbound.grpc_native.rpc import CallOptions, RpcCaller, open_channel
from southbound.tls import TlsConfig

T = TypeVar("T")


def new_request_id() -> str:
    return uuid.uuid4().hex


class DeviceClient(ClosesOnExit):
    """Base of the per-service clients. Use as a context manager or call close()."""

    #: Fully qualified service name, for health checks.
    SERVICE_NAME = ""

    def __init__(
        self,
        address: str,
        *,
        name: str | None = None,
        tls: TlsConfig | None = None,
        options: CallOptions | None = None,
        channel: grpc.Channel | None = None,
    ) -> None:
        self.address = address
        self.name = name or address
        self.options = options or CallOptions()
        self._channel = channel or open_channel(address, tls)
        self._caller = RpcCaller(self.name, self.options)
        #: the leadership epoch put on mutating calls (HA; 0 without an election)
        self.epoch: EpochSource = NO_ELECTION
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self._bind_stubs(self._channel)

    def _bind_stubs(self, channel: grpc.Channel) -> None:
        """Create the service stubs on ``channel`` (subclasses)."""

    def _mutate(self, method: Callable[..., T], request: Any, deadline_s: float | None = None) -> T:
        """Call a mutating ``method`` with the current epoch on ``request`` (its ``epoch`` field);
        a fencing refusal is reported to the epoch source before it is raised."""
        request.epoch = self.epoch.current_epoch()
        try:
            return self._caller.call(method, request, deadline_s)
        except Fenced as exc:
            self.epoch.refused(self.name, exc.highest_epoch)
            raise

    def is_serving(self, deadline_s: float | None = None) -> bool:
        """True when the device's health service reports this service SERVING."""
        request = health_pb2.HealthCheckRequest(service=self.SERVICE_NAME)
        try:
            reply = self._caller.call(self._health.Check, request, deadline_s)
        except SouthboundError:
            return False
        return reply.status == health_pb2.HealthCheckResponse.SERVING

    def close(self) -> None:
        self._channel.close()
