"""A device agent: one gRPC server on loopback serving one emulated device, with
grpc.health.v1 health checking and server reflection. It can be killed and restarted on
the same port (the device's state survives: devices fail static)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent import futures
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from emulation.admission.limits import SERVER_OPTIONS, StreamGate, stream_capacity
from emulation.ocs_device import ServedOcs
from emulation.servicers import OcsServicer, PacketSwitchServicer
from emulation.switch_device import ServedSwitch
from southbound.grpc_native.pb import ocs_pb2, ocs_pb2_grpc, packet_switch_pb2, packet_switch_pb2_grpc
from southbound.tls import ServerTlsConfig, warn_if_exposed

log = logging.getLogger(__name__)

OCS_SERVICE = ocs_pb2.DESCRIPTOR.services_by_name["OcsService"].full_name
SWITCH_SERVICE = packet_switch_pb2.DESCRIPTOR.services_by_name["PacketSwitchService"].full_name


class AgentError(RuntimeError):
    """The agent could not start (e.g. its port is taken)."""


class DeviceAgent:
    """Serves one device. ``start()`` binds 127.0.0.1 on an OS-chosen port the first time
    and the same port after a ``stop()``."""

    def __init__(
        self,
        name: str,
        kind: str,
        register: Callable[[grpc.Server], None],
        service_name: str | Sequence[str],
        *,
        host: str = "127.0.0.1",
        tls: ServerTlsConfig | None = None,
        max_workers: int = 8,
    ) -> None:
        self.name = name
        self.kind = kind
        self.host = host
        self.port = 0
        self._register = register
        #: the device's own services (one per protocol it speaks), for health and reflection
        self._service_names = (service_name,) if isinstance(service_name, str) else tuple(service_name)
        self._tls = tls
        self._max_workers = max_workers
        self._server: grpc.Server | None = None
        self._health: health.HealthServicer | None = None
        self._serving = True
        self._lock = threading.Lock()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def service_names(self) -> tuple[str, ...]:
        """The device's own services (one per protocol it speaks)."""
        return self._service_names

    @property
    def serving(self) -> bool:
        """False while :meth:`set_serving` says the device is not attached."""
        return self._serving

    def start(self) -> str:
        with self._lock:
            if self._server is not None:
                return self.address
            server = grpc.server(
                futures.ThreadPoolExecutor(self._max_workers, thread_name_prefix=self.name),
                options=[("grpc.so_reuseport", 0), *SERVER_OPTIONS],
                interceptors=[_NotServingGate(lambda: self._serving)],
            )
            self._register(server)
            health_servicer = health.HealthServicer()
            health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
            self._health = health_servicer
            self._publish_health()
            reflection.enable_server_reflection(
                (*self._service_names, health.SERVICE_NAME, reflection.SERVICE_NAME), server
            )
            target = f"{self.host}:{self.port}"
            warn_if_exposed(f"device {self.name}'s gRPC server", self.host, self._tls)
            try:
                if self._tls is None:
                    port = server.add_insecure_port(target)
                else:
                    port = server.add_secure_port(target, self._tls.server_credentials())
            except RuntimeError as exc:
                raise AgentError(f"{self.name}: cannot listen on {target}: {exc}") from exc
            if port == 0:
                raise AgentError(f"{self.name}: cannot listen on {target}")
            server.start()
            self.port = port
            self._server = server
            log.debug("%s listening on %s", self.name, self.address)
            return self.address

    def set_serving(self, serving: bool) -> None:
        """Report SERVING or NOT_SERVING on the health service (e.g. while the device
        behind the agent is unreachable); while not serving, the device's own RPCs are
        refused UNAVAILABLE (health and reflection still answer): a device an OpenFlow agent
        has not attached yet would report no circuits, groups or peers, which the controller
        would take for the truth instead of an unreachable device."""
        with self._lock:
            self._serving = serving
            self._publish_health()

    def _publish_health(self) -> None:
        if self._health is None:
            return
        status = (health_pb2.HealthCheckResponse.SERVING if self._serving
                  else health_pb2.HealthCheckResponse.NOT_SERVING)
        for service in ("", *self._service_names):
            self._health.set(service, status)

    def stop(self, grace_s: float | None = None) -> None:
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.stop(grace_s).wait()
            log.debug("%s stopped", self.name)


#: Worker threads of a device server (event streams may hold at most half of them).
WORKERS = 8


def ocs_agent(device: ServedOcs, tls: ServerTlsConfig | None = None) -> DeviceAgent:
    return ocs_agent_of(OcsServicer(device, StreamGate(stream_capacity(WORKERS))), tls)


def ocs_agent_of(servicer: OcsServicer, tls: ServerTlsConfig | None = None) -> DeviceAgent:
    """The agent serving ``servicer`` (whose fence another protocol's server may share)."""
    device = servicer.device
    return DeviceAgent(
        device.name,
        "ocs",
        lambda server: ocs_pb2_grpc.add_OcsServiceServicer_to_server(servicer, server),
        OCS_SERVICE,
        tls=tls,
        max_workers=WORKERS,
    )


def switch_agent(device: ServedSwitch, tls: ServerTlsConfig | None = None) -> DeviceAgent:
    servicer = PacketSwitchServicer(device)
    return DeviceAgent(
        device.name,
        "block",
        lambda server: packet_switch_pb2_grpc.add_PacketSwitchServiceServicer_to_server(
            servicer, server
        ),
        SWITCH_SERVICE,
        tls=tls,
        max_workers=WORKERS,
    )


def spine_agent(device: ServedSwitch, tls: ServerTlsConfig | None = None) -> DeviceAgent:
    """A spine switch serves the packet-switch service, as a block does (kind ``spine``)."""
    servicer = PacketSwitchServicer(device)
    return DeviceAgent(
        device.name,
        "spine",
        lambda server: packet_switch_pb2_grpc.add_PacketSwitchServiceServicer_to_server(
            servicer, server
        ),
        SWITCH_SERVICE,
        tls=tls,
        max_workers=WORKERS,
    )


class _NotServingGate(grpc.ServerInterceptor):
    """Refuses the device service's RPCs UNAVAILABLE while ``serving()`` is False."""

    _ALWAYS = ("/grpc.health.v1.Health/", "/grpc.reflection.")

    def __init__(self, serving: Callable[[], bool]) -> None:
        self._serving = serving

    def intercept_service(self, continuation: Any, details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None or self._serving() or details.method.startswith(self._ALWAYS):
            return handler

        def refuse(request: Any, context: grpc.ServicerContext) -> Any:
            context.abort(grpc.StatusCode.UNAVAILABLE, "the device is not attached to its agent yet")

        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                refuse, handler.request_deserializer, handler.response_serializer
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                refuse, handler.request_deserializer, handler.response_serializer
            )
        if handler.stream_unary is not None:
            return grpc.stream_unary_rpc_method_handler(
                refuse, handler.request_deserializer, handler.response_serializer
            )
        if handler.stream_stream is not None:  # P4Runtime's StreamChannel, gNMI's Subscribe
            return grpc.stream_stream_rpc_method_handler(
                refuse, handler.request_deserializer, handler.response_serializer
            )
        return handler
