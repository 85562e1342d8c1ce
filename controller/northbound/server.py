"""The northbound gRPC server: ``heliostat.controller.v1.ControllerService`` over a ControllerApi,
with grpc.health.v1 health checking and server reflection, beside the metrics endpoint.

Every RPC calls one ControllerApi method. An :class:`ApiError` becomes its status code
(see :mod:`controller.northbound.errors`); any other exception is logged and becomes
INTERNAL, and the server keeps serving.

Under mutual TLS with :class:`~southbound.tls.ClientRoles`, each call is authorised by the
client certificate's name (subject CN or DNS SAN): the reads in :data:`READ_RPCS` need a
reader or an operator, everything else (pause, drain, ToE, and any RPC added later) an
operator; others get PERMISSION_DENIED naming the certificate.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass
from typing import Self, TypeVar

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc

from controller.metrics import ControllerMetrics
from controller.northbound import convert
from controller.northbound.api import (
    MAX_HISTORY_LIMIT,
    ApiError,
    ApiErrorCode,
    ControllerApi,
    MaintenanceKind,
)
from controller.northbound.errors import API_ERROR_METADATA_KEY, STATUS_OF_API_ERROR, NorthboundError
from controller.northbound.events import EventHub, UnknownEventKinds, WatchersExhausted
from controller.northbound.fabric_api import FabricViewServicer
from controller.northbound.jobs import JobsRpcs
from controller.northbound.listen import ListenAddress, parse_listen_address
from controller.northbound.metrics_http import MetricsHttpServer, start_metrics_http
from controller.northbound.proto.gen.heliostat.controller.v1 import controller_pb2 as pb
from controller.northbound.proto.gen.heliostat.controller.v1 import controller_pb2_grpc as pb_grpc
from optimizer import limits
from optimizer.fabric import Fabric
from optimizer.schema import shown
from southbound.tls import ClientRoles, ServerTlsConfig, TlsConfigError, warn_if_exposed

log = logging.getLogger(__name__)

SERVICE_NAME = convert.SERVICE_NAME
DEFAULT_HISTORY_LIMIT = 20
#: RPCs a reader may call; every other one needs an operator.
READ_RPCS = frozenset({
    "GetStatus", "GetTopology", "GetMatrices", "ListReconfigurations", "GetLastPlan", "GetReconfiguration",
    "WatchEvents", "GetFabricView", "GetLink", "GetDevice", "ListJobs",
})
#: A WatchEvents stream ends after this long (the client calls again); it bounds how long one
#: watcher holds a worker thread.
MAX_WATCH_S = 600.0
#: How often a stream checks whether its client went away or the server stops.
_WATCH_POLL_S = 0.25

T = TypeVar("T")


class ControllerServicer(JobsRpcs, FabricViewServicer, pb_grpc.ControllerServiceServicer):
    """Translates each RPC to one ControllerApi call. ``fabric``, when given, lets requests
    naming an unknown block or OCS be refused before they reach the daemon."""

    def __init__(
        self,
        api: ControllerApi,
        metrics_address: str = "",
        fabric: Fabric | None = None,
        roles: ClientRoles | None = None,
        events: EventHub | None = None,
    ) -> None:
        self._api = api
        self._metrics_address = metrics_address
        self._fabric = fabric
        self._roles = roles
        self._events = events

    # -- reads -------------------------------------------------------------------------------

    def GetStatus(self, request: pb.GetStatusRequest, context: grpc.ServicerContext) -> pb.GetStatusResponse:
        def handle() -> pb.GetStatusResponse:
            status = convert.status_to_pb(self._api.status())
            return pb.GetStatusResponse(status=status, metrics_address=self._metrics_address)

        return self._serve(context, "GetStatus", handle)

    def GetTopology(
        self, request: pb.GetTopologyRequest, context: grpc.ServicerContext
    ) -> pb.GetTopologyResponse:
        return self._serve(context, "GetTopology", lambda: convert.topology_to_pb(self._api.topology()))

    def GetMatrices(
        self, request: pb.GetMatricesRequest, context: grpc.ServicerContext
    ) -> pb.GetMatricesResponse:
        return self._serve(context, "GetMatrices", lambda: convert.matrices_to_pb(self._api.matrices()))

    def ListReconfigurations(
        self, request: pb.ListReconfigurationsRequest, context: grpc.ServicerContext
    ) -> pb.ListReconfigurationsResponse:
        def handle() -> pb.ListReconfigurationsResponse:
            limit = request.limit if request.HasField("limit") else DEFAULT_HISTORY_LIMIT
            if not 1 <= limit <= MAX_HISTORY_LIMIT:
                raise _invalid("limit", f"must be from 1 to {MAX_HISTORY_LIMIT}, got {limit}")
            entries = self._api.history(limit)
            if not isinstance(entries, list | tuple):
                raise convert.ConversionError(f"history: expected a list, got {type(entries).__name__}")
            return pb.ListReconfigurationsResponse(
                reconfigurations_json=[convert.dump_json(e, f"history[{i}]") for i, e in enumerate(entries)]
            )

        return self._serve(context, "ListReconfigurations", handle)

    def GetLastPlan(
        self, request: pb.GetLastPlanRequest, context: grpc.ServicerContext
    ) -> pb.GetLastPlanResponse:
        def handle() -> pb.GetLastPlanResponse:
            return pb.GetLastPlanResponse(plan_json=convert.dump_json(self._api.last_plan(), "plan"))

        return self._serve(context, "GetLastPlan", handle)

    def GetReconfiguration(
        self, request: pb.GetReconfigurationRequest, context: grpc.ServicerContext
    ) -> pb.GetReconfigurationResponse:
        def handle() -> pb.GetReconfigurationResponse:
            if not 1 <= request.id <= limits.MAX_RECORD_ID:
                raise _invalid("id", "a reconfiguration id (from ListReconfigurations) is "
                               f"1..{limits.MAX_RECORD_ID}, got {request.id}")
            entry = self._api.reconfiguration(request.id)
            return pb.GetReconfigurationResponse(reconfiguration=convert.reconfiguration_to_pb(entry))

        return self._serve(context, "GetReconfiguration", handle)

    def WatchEvents(
        self, request: pb.WatchEventsRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.Event]:
        self._authorise(context, "WatchEvents")
        events = self._events
        if events is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "this controller does not stream its events")
            return  # abort raises; this ends the generator if it ever did not
        try:
            subscription = events.subscribe(request.kinds, client=client_of(context))
        except UnknownEventKinds as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
            return
        except WatchersExhausted as exc:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
            return
        deadline = time.monotonic() + MAX_WATCH_S
        try:
            while context.is_active() and time.monotonic() < deadline:
                try:
                    event = subscription.next(_WATCH_POLL_S)
                except StopIteration:
                    return
                if event is not None:
                    yield event
        finally:
            subscription.close()

    # -- actions -----------------------------------------------------------------------------

    def TriggerToe(
        self, request: pb.TriggerToeRequest, context: grpc.ServicerContext
    ) -> pb.TriggerToeResponse:
        def handle() -> pb.TriggerToeResponse:
            if len(request.plan_id) > MAX_PLAN_ID:
                raise _invalid("plan_id", f"at most {MAX_PLAN_ID} characters (a dry run's plan id)")
            if request.plan_id and request.dry_run:
                raise _invalid("plan_id", "a reviewed plan is applied, not planned again: no dry_run with it")
            result = self._api.trigger_toe(dry_run=request.dry_run, plan_id=request.plan_id or None)
            response = pb.TriggerToeResponse(
                accepted=result.accepted,
                dry_run=result.dry_run,
                message=result.message,
                plan_id=result.plan_id or "",
            )
            if result.reconfiguration_id is not None:
                response.reconfiguration_id = result.reconfiguration_id
            if result.plan is not None:
                response.plan_json = convert.dump_json(result.plan, "plan")
            return response

        return self._serve(context, "TriggerToe", handle)

    def PauseToe(self, request: pb.PauseToeRequest, context: grpc.ServicerContext) -> pb.PauseToeResponse:
        def handle() -> pb.PauseToeResponse:
            self._api.pause_toe()
            return pb.PauseToeResponse()

        return self._serve(context, "PauseToe", handle)

    def ResumeToe(self, request: pb.ResumeToeRequest, context: grpc.ServicerContext) -> pb.ResumeToeResponse:
        def handle() -> pb.ResumeToeResponse:
            self._api.resume_toe()
            return pb.ResumeToeResponse()

        return self._serve(context, "ResumeToe", handle)

    def SetMaintenance(
        self, request: pb.SetMaintenanceRequest, context: grpc.ServicerContext
    ) -> pb.SetMaintenanceResponse:
        def handle() -> pb.SetMaintenanceResponse:
            kind = convert.kind_from_pb(request.kind)
            if kind is None:
                raise _invalid("kind", "must be block or ocs")
            name = request.name
            if not name.strip():
                raise _invalid("name", f"the {kind.value} name must not be empty")
            if len(name) > limits.MAX_NAME_CHARS:
                raise _invalid("name", f"{shown(name, 40)} has {len(name):,} characters; a {kind.value} "
                               f"name has at most {limits.MAX_NAME_CHARS}")
            self._check_known(kind, name)
            message = self._api.set_maintenance(kind, name, request.drained, request.force)
            return pb.SetMaintenanceResponse(message=str(message))

        return self._serve(context, "SetMaintenance", handle)

    # -- plumbing ----------------------------------------------------------------------------

    def _check_known(self, kind: MaintenanceKind, name: str) -> None:
        fabric = self._fabric
        if fabric is None:
            return  # the daemon checks the name
        if kind is MaintenanceKind.BLOCK and not fabric.has_block(name):
            raise _invalid("name", f"fabric {fabric.name!r} has no block {name!r}")
        if kind is MaintenanceKind.OCS and name not in {o.name for o in fabric.ocs}:
            raise _invalid("name", f"fabric {fabric.name!r} has no OCS {name!r}")
        if kind is MaintenanceKind.SPINE and name not in {s.name for s in fabric.spine}:
            raise _invalid("name", f"fabric {fabric.name!r} has no spine switch {name!r}")

    def _authorise(self, context: grpc.ServicerContext, rpc: str) -> None:
        if self._roles is None:
            return
        names = certificate_names(context)
        role = self._roles.role_of(names)
        if role == "operator" or (role == "reader" and rpc in READ_RPCS):
            return
        who = ", ".join(sorted(names)) or "no certificate name"
        log.warning("northbound %s denied to %s (role %s)", rpc, who, role or "none")
        needed = "a reader or an operator" if rpc in READ_RPCS else "an operator"
        context.abort(grpc.StatusCode.PERMISSION_DENIED,
                      f"{rpc} needs {needed}; the client certificate ({who}) is {role or 'neither'}")

    def _serve(self, context: grpc.ServicerContext, rpc: str, handle: Callable[[], T]) -> T:
        self._authorise(context, rpc)
        try:
            return handle()
        except ApiError as exc:
            log.info("northbound %s refused: %s", rpc, exc)
            context.set_trailing_metadata(((API_ERROR_METADATA_KEY, exc.code.value),))
            code, details = STATUS_OF_API_ERROR[exc.code], exc.message
        except Exception as exc:
            log.exception("northbound %s failed", rpc)
            code, details = grpc.StatusCode.INTERNAL, f"{rpc} failed: {type(exc).__name__}: {exc}"
        context.abort(code, details)
        raise NorthboundError(f"{rpc}: grpc context.abort returned")  # abort always raises


def client_of(context: grpc.ServicerContext) -> str:
    """Who calls, for per-client bounds: the certificate's common name under mutual TLS, else
    the peer's host without its port (as the device servers count their clients)."""
    auth = context.auth_context() or {}
    names = auth.get("x509_common_name") or ()
    if names:
        return "cn:" + names[0].decode("utf-8", "replace")
    peer = context.peer() or "unknown"
    return peer.rsplit(":", 1)[0] if peer.count(":") >= 2 else peer


def certificate_names(context: grpc.ServicerContext) -> set[str]:
    """The client certificate's subject CN and DNS SANs (empty without mutual TLS)."""
    auth = context.auth_context() or {}
    names: set[str] = set()
    for key in ("x509_common_name", "x509_subject_alternative_name"):
        names.update(v.decode("utf-8", "replace") for v in auth.get(key) or ())
    return names


#: A dry run's plan id is 12 hex digits; anything much longer is not one.
MAX_PLAN_ID = 64

def _invalid(field: str, problem: str) -> ApiError:
    return ApiError(ApiErrorCode.INVALID_ARGUMENT, f"{field}: {problem}")


@dataclass
class NorthboundServers:
    """The running gRPC API and metrics endpoint, with their bound addresses."""

    grpc_server: grpc.Server
    grpc_address: ListenAddress
    health: health.HealthServicer
    metrics: MetricsHttpServer | None = None
    events: EventHub | None = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._stopped = False

    @property
    def grpc_port(self) -> int:
        return self.grpc_address.port

    @property
    def metrics_address(self) -> ListenAddress | None:
        return self.metrics.address if self.metrics else None

    @property
    def metrics_port(self) -> int | None:
        return self.metrics.address.port if self.metrics else None

    def stop(self, grace_s: float = 1.0) -> None:
        """Report NOT_SERVING, let calls in flight finish for up to ``grace_s``, then close both
        servers. Calling it again does nothing."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self.health.enter_graceful_shutdown()
        if self.events is not None:
            self.events.close()  # watchers' streams end now, not at the grace period's end
        self.grpc_server.stop(grace_s).wait()
        if self.metrics is not None:
            self.metrics.stop()
        log.info("northbound API on %s stopped", self.grpc_address)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def start_northbound(
    api: ControllerApi,
    listen_address: ListenAddress | str,
    metrics: ControllerMetrics | None = None,
    metrics_address: ListenAddress | str | None = None,
    *,
    fabric: Fabric | None = None,
    tls: ServerTlsConfig | None = None,
    roles: ClientRoles | None = None,
    max_workers: int = 8,
    events: EventHub | None = None,
    metrics_tls: ServerTlsConfig | None = None,
) -> NorthboundServers:
    """Serve ``api`` over gRPC at ``listen_address`` and, when ``metrics`` and
    ``metrics_address`` are given, its registry over HTTP. Port 0 picks a free port; the
    returned handle has the bound addresses. Raises NorthboundError if an address cannot be
    bound (nothing is left running then). In the daemon::

        servers = start_northbound(
            daemon, config.listen.northbound, metrics, config.listen.metrics, fabric=fabric
        )
        ...
        servers.stop()
    """
    grpc_target = _address(listen_address, "listen.northbound")
    metrics_server = None
    if metrics is not None and metrics_address is not None:
        metrics_server = start_metrics_http(
            metrics.registry, _address(metrics_address, "listen.metrics"), metrics_tls
        )
    try:
        return _start_grpc(api, grpc_target, metrics_server, fabric, tls, roles, max_workers, events)
    except BaseException:
        if metrics_server is not None:
            metrics_server.stop()
        raise


def _start_grpc(
    api: ControllerApi,
    target: ListenAddress,
    metrics_server: MetricsHttpServer | None,
    fabric: Fabric | None,
    tls: ServerTlsConfig | None,
    roles: ClientRoles | None,
    max_workers: int,
    events: EventHub | None = None,
) -> NorthboundServers:
    warn_if_exposed("the northbound API (pause, drain, ToE)", target.host, tls)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers, thread_name_prefix="northbound"),
        options=[("grpc.so_reuseport", 0), *convert.MESSAGE_SIZE_OPTIONS],
    )
    metrics_text = str(metrics_server.address) if metrics_server else ""
    servicer = ControllerServicer(api, metrics_text, fabric, roles, events)
    pb_grpc.add_ControllerServiceServicer_to_server(servicer, server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for service in ("", SERVICE_NAME):
        health_servicer.set(service, health_pb2.HealthCheckResponse.SERVING)
    enable_reflection(server, (SERVICE_NAME, health.SERVICE_NAME))
    try:
        if tls is None:
            port = server.add_insecure_port(str(target))
        else:
            port = server.add_secure_port(str(target), tls.server_credentials())
    except (RuntimeError, TlsConfigError) as exc:
        raise NorthboundError(f"cannot serve the northbound API on {target}: {exc}") from exc
    if port == 0:
        raise NorthboundError(f"cannot serve the northbound API on {target}")
    server.start()
    bound = ListenAddress(target.host, port)
    log.info("northbound API on %s", bound)
    return NorthboundServers(server, bound, health_servicer, metrics_server, events)


#: Server reflection v1 (grpcurl and current clients ask it first); grpcio-reflection ships
#: only v1alpha, whose messages v1 repeats field for field under another package name.
REFLECTION_V1 = "grpc.reflection.v1.ServerReflection"


def enable_reflection(server: grpc.Server, services: tuple[str, ...]) -> None:
    """Serve reflection v1alpha and v1 (one servicer behind both names)."""
    servicer = reflection.ReflectionServicer((*services, reflection.SERVICE_NAME, REFLECTION_V1))
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(servicer, server)
    v1 = grpc.method_handlers_generic_handler(REFLECTION_V1, {
        "ServerReflectionInfo": grpc.stream_stream_rpc_method_handler(
            servicer.ServerReflectionInfo,
            request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
            response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
        )
    })
    server.add_generic_rpc_handlers((v1,))


def _address(value: ListenAddress | str, key: str) -> ListenAddress:
    if isinstance(value, ListenAddress):
        return value
    return parse_listen_address(value, "<northbound>", key)
