"""The northbound client: the ControllerApi operations over gRPC, as ``heliostat ctl`` uses them.

Every call has a deadline. Reads retry a few times on UNAVAILABLE (the southbound
:class:`~southbound.grpc_native.rpc.RpcCaller`); actions (trigger, pause, drain...) are sent once.
Errors come back as the controller raised them (:class:`~controller.northbound.api.ApiError`) or as
:class:`ControllerUnreachable` / :class:`ControllerCallFailed`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from controller.northbound import convert
from controller.northbound.api import (
    ApiError,
    ApiErrorCode,
    MaintenanceKind,
    StatusSnapshot,
    ToeRequestResult,
)
from controller.northbound.diagnose import connection_failure
from controller.northbound.errors import (
    API_ERROR_METADATA_KEY,
    STATUS_OF_API_ERROR,
    ControllerCallFailed,
    ControllerClientError,
    ControllerUnreachable,
)
from controller.northbound.jobs import JobsClient
from controller.northbound.proto.gen.heliostat.controller.v1 import controller_pb2 as pb
from controller.northbound.proto.gen.heliostat.controller.v1 import controller_pb2_grpc as pb_grpc
from optimizer.limits import MAX_NAME_CHARS, MAX_RECORD_ID
from optimizer.schema import shown
from southbound.closing import ClosesOnExit
from southbound.errors import SouthboundError
from southbound.grpc_native.rpc import CallOptions, RetryPolicy, RpcCaller, open_channel
from southbound.tls import TlsConfig

T = TypeVar("T")

DEFAULT_DEADLINE_S = 5.0
#: A dry run plans while the caller waits (the daemon gives up after 120 s and says so).
DEFAULT_DRY_RUN_DEADLINE_S = 150.0
#: Reads: three attempts within about half a second, then give up.
READ_RETRY = RetryPolicy(max_attempts=3, initial_backoff_s=0.1, max_backoff_s=0.3)
#: Actions are not retried: a lost reply must not trigger a second ToE run.
ONE_ATTEMPT = RetryPolicy(max_attempts=1)

_API_ERROR_OF_STATUS = {status: code for code, status in STATUS_OF_API_ERROR.items()}


@dataclass(frozen=True)
class StatusReport:
    """The controller's status and where it serves its metrics (empty if it does not)."""

    status: StatusSnapshot
    metrics_address: str


class ControllerClient(JobsClient, ClosesOnExit):
    """Calls a controller's northbound API. Use as a context manager or call close()."""

    def __init__(
        self,
        address: str,
        *,
        deadline_s: float = DEFAULT_DEADLINE_S,
        dry_run_deadline_s: float = DEFAULT_DRY_RUN_DEADLINE_S,
        read_retry: RetryPolicy = READ_RETRY,
        tls: TlsConfig | None = None,
        channel: grpc.Channel | None = None,
    ) -> None:
        self.address = address
        self.tls = tls
        self.deadline_s = deadline_s
        self.dry_run_deadline_s = dry_run_deadline_s
        self._channel = channel or open_channel(address, tls, convert.MESSAGE_SIZE_OPTIONS)
        name = f"controller {address}"
        self._reads = RpcCaller(name, CallOptions(deadline_s, read_retry))
        self._actions = RpcCaller(name, CallOptions(deadline_s, ONE_ATTEMPT))
        self._stub = pb_grpc.ControllerServiceStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)

    # -- the ControllerApi operations -------------------------------------------------------

    def status(self) -> StatusSnapshot:
        return self.status_report().status

    def status_report(self) -> StatusReport:
        reply = self._call(self._reads, self._stub.GetStatus, pb.GetStatusRequest())
        return StatusReport(convert.status_from_pb(reply.status), reply.metrics_address)

    def topology(self) -> dict[str, Any]:
        reply = self._call(self._reads, self._stub.GetTopology, pb.GetTopologyRequest())
        return convert.topology_from_pb(reply)

    def matrices(self) -> dict[str, Any]:
        reply = self._call(self._reads, self._stub.GetMatrices, pb.GetMatricesRequest())
        return convert.matrices_from_pb(reply)

    def history(self, limit: int = 20) -> list[dict[str, Any]]:
        request = pb.ListReconfigurationsRequest(limit=limit)
        reply = self._call(self._reads, self._stub.ListReconfigurations, request)
        return [
            convert.load_json(text, f"history[{i}]") for i, text in enumerate(reply.reconfigurations_json)
        ]

    def trigger_toe(self, dry_run: bool = False, plan_id: str | None = None) -> ToeRequestResult:
        deadline = self.dry_run_deadline_s if dry_run or plan_id else self.deadline_s
        request = pb.TriggerToeRequest(dry_run=dry_run, plan_id=plan_id or "")
        reply = self._call(self._actions, self._stub.TriggerToe, request, deadline)
        plan = convert.load_json(reply.plan_json, "plan") if reply.HasField("plan_json") else None
        intent = reply.reconfiguration_id if reply.HasField("reconfiguration_id") else None
        return ToeRequestResult(
            reply.accepted, reply.dry_run, reply.message, plan, reply.plan_id or None, intent
        )

    def pause_toe(self) -> None:
        self._call(self._actions, self._stub.PauseToe, pb.PauseToeRequest())

    def resume_toe(self) -> None:
        self._call(self._actions, self._stub.ResumeToe, pb.ResumeToeRequest())

    def set_maintenance(self, kind: MaintenanceKind, name: str, drained: bool, force: bool = False) -> str:
        if len(name) > MAX_NAME_CHARS:
            raise ApiError(ApiErrorCode.INVALID_ARGUMENT,
                           f"name: {shown(name, 40)} is longer than a name's {MAX_NAME_CHARS} characters")
        request = pb.SetMaintenanceRequest(
            kind=convert.kind_to_pb(kind), name=name, drained=drained, force=force
        )
        return self._call(self._actions, self._stub.SetMaintenance, request).message

    def last_plan(self) -> dict[str, Any]:
        reply = self._call(self._reads, self._stub.GetLastPlan, pb.GetLastPlanRequest())
        return convert.load_json(reply.plan_json, "plan")

    def reconfiguration(self, intent_id: int) -> dict[str, Any]:
        if type(intent_id) is not int or not 1 <= intent_id <= MAX_RECORD_ID:
            raise ApiError(ApiErrorCode.INVALID_ARGUMENT,
                           f"id: a reconfiguration id is 1..{MAX_RECORD_ID}, got {shown(intent_id, 40)}")
        request = pb.GetReconfigurationRequest(id=intent_id)
        reply = self._call(self._reads, self._stub.GetReconfiguration, request)
        return convert.reconfiguration_from_pb(reply.reconfiguration)

    def fabric_view(self) -> dict[str, Any]:
        reply = self._call(self._reads, self._stub.GetFabricView, pb.GetFabricViewRequest())
        return cast(dict[str, Any], convert.load_json(reply.view_json, "view_json"))

    def link(self, a: str, b: str) -> dict[str, Any]:
        reply = self._call(self._reads, self._stub.GetLink, pb.GetLinkRequest(a=a, b=b))
        return cast(dict[str, Any], convert.load_json(reply.link_json, "link_json"))

    def device(self, name: str) -> dict[str, Any]:
        reply = self._call(self._reads, self._stub.GetDevice, pb.GetDeviceRequest(name=name))
        return cast(dict[str, Any], convert.load_json(reply.device_json, "device_json"))

    def watch_events(self, kinds: Sequence[int] = ()) -> Iterator[pb.Event]:
        """The controller's events as they happen, until it ends the stream (it stops, or the
        stream reached its length bound: call again to go on). No deadline; a failure to
        connect retries as reads do."""
        request = pb.WatchEventsRequest(kinds=[cast(pb.EventKind, k) for k in kinds])
        stream = self._call(self._reads, lambda r, timeout: self._open_stream(r), request)
        try:
            yield from stream
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.CANCELLED:
                return
            raise self._error(SouthboundError(f"controller {self.address}", exc.details() or ""),
                              self.deadline_s, exc) from exc
        finally:
            stream.cancel()

    def _open_stream(self, request: pb.WatchEventsRequest) -> Any:
        """Start the stream and wait for its headers, so that an unreachable controller fails
        here (where the read retry policy applies), not at the first event."""
        stream = self._stub.WatchEvents(request)
        stream.initial_metadata()
        if not stream.is_active() and stream.code() not in (None, grpc.StatusCode.OK):
            raise stream  # a grpc.RpcError: UNAVAILABLE, PERMISSION_DENIED...
        return stream

    # -- health ------------------------------------------------------------------------------

    def is_serving(self) -> bool:
        """True when the controller's health service reports the API SERVING."""
        request = health_pb2.HealthCheckRequest(service=convert.SERVICE_NAME)
        try:
            reply = self._call(self._reads, self._health.Check, request)
        except ControllerClientError:
            return False
        return reply.status == health_pb2.HealthCheckResponse.SERVING

    # -- plumbing ----------------------------------------------------------------------------

    def _call(
        self, caller: RpcCaller, method: Callable[..., T], request: Any, deadline_s: float | None = None
    ) -> T:
        deadline = deadline_s if deadline_s is not None else self.deadline_s
        try:
            return caller.call(method, request, deadline)
        except SouthboundError as exc:
            raise self._error(exc, deadline) from exc

    def _error(
        self, exc: SouthboundError, deadline_s: float, cause: BaseException | None = None
    ) -> Exception:
        cause = cause or exc.__cause__
        if not isinstance(cause, grpc.RpcError):
            return ControllerUnreachable(f"controller at {self.address}: {exc.message}")
        code = cause.code()
        details = cause.details() or code.name
        api_code = _api_error_code(cause)
        if api_code is None and code != grpc.StatusCode.UNAVAILABLE:
            api_code = _API_ERROR_OF_STATUS.get(code)
        if api_code is not None:
            return ApiError(api_code, details)
        if code == grpc.StatusCode.UNAVAILABLE:
            failure = connection_failure(details, self.tls)
            if failure.is_tls:
                return ControllerUnreachable(
                    f"TLS with the controller at {self.address} failed ({failure.cause}): {failure.advice}; "
                    f"{details}"
                )
            return ControllerUnreachable(
                f"cannot reach the controller at {self.address}: {failure.advice}; {details}"
            )
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return ControllerUnreachable(
                f"the controller at {self.address} did not answer within {deadline_s:g} s"
            )
        return ControllerCallFailed(f"controller at {self.address}: {code.name}: {details}", code)

    def close(self) -> None:
        self._channel.close()


def _api_error_code(error: grpc.RpcError) -> ApiErrorCode | None:
    """The ApiErrorCode the server attached to a deliberate error, if any."""
    try:
        trailing = error.trailing_metadata() or ()
    except Exception:  # a call object without metadata must not hide the error itself
        return None
    for key, value in trailing:
        if key == API_ERROR_METADATA_KEY:
            try:
                return ApiErrorCode(value)
            except ValueError:
                return None
    return None
