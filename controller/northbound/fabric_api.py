"""The fabric view and its drill-downs on the northbound API, and operators' actions as events.

:class:`FabricViewApi` is the daemon's side (a base of
:class:`~controller.northbound.daemon_api.DaemonApi`): it gathers what the daemon knows into
:class:`~controller.ui.fabric_view.FabricFacts` and answers ``fabric_view``, ``link`` and
``device``; it also records what an operator asked for (drain, pause, ToE, a plan reviewed or
approved) as an ``operator`` event. :class:`FabricViewServicer` is the gRPC side (a base of
:class:`~controller.northbound.server.ControllerServicer`): GetFabricView, GetLink, GetDevice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import grpc

from controller.device_view import merge_ports
from controller.northbound.api import ApiError, ApiErrorCode, ControllerApi
from controller.northbound.convert import dump_json
from controller.northbound.proto.gen.heliostat.controller.v1 import controller_pb2 as pb
from controller.sensing.observe import blocks_out, maintenance_ports
from controller.ui.fabric_view import FabricFacts, NotInFabric, device_view, fabric_view, link_view
from controller.ui.facts import devices_json
from optimizer.limits import MAX_NAME_CHARS
from optimizer.schema import shown

if TYPE_CHECKING:
    from controller.daemon import Daemon

T = TypeVar("T")

#: The operator actions the event stream and the page's event list show.
OPERATOR_ACTIONS = ("drain", "undrain", "pause", "resume", "toe", "review", "approve")


def checked_name(field: str, value: object) -> str:
    """A device or block name from a request; ApiError INVALID_ARGUMENT naming ``field``."""
    if not isinstance(value, str) or not value.strip():
        raise ApiError(ApiErrorCode.INVALID_ARGUMENT, f"{field}: a name is required")
    if len(value) > MAX_NAME_CHARS:
        raise ApiError(ApiErrorCode.INVALID_ARGUMENT,
                       f"{field}: {shown(value, 40)} is longer than a name's {MAX_NAME_CHARS} characters")
    return value


class FabricViewApi:
    """The daemon's fabric view (``daemon`` is set by DaemonApi)."""

    daemon: Daemon

    def fabric_facts(self) -> FabricFacts:
        d = self.daemon
        spines = getattr(d.drivers, "spines", None) or {}
        devices = devices_json(d.fabric, list(spines), d.board.snapshot(), d.recorder.last_seen())
        maintenance = d.state.maintenance
        installed = d.installed
        drained = merge_ports(maintenance_ports(d.fabric, maintenance, installed), d.quarantined)
        return FabricFacts(d.fabric, installed, d.live, devices, drained, blocks_out(maintenance))

    def fabric_view(self) -> dict[str, Any]:
        return fabric_view(self.fabric_facts(), self.daemon.recorder.loads)

    def link(self, a: str, b: str) -> dict[str, Any]:
        a, b = checked_name("a", a), checked_name("b", b)
        if a == b:
            problem = f"b: {shown(b, 40)} is a as well; a link joins two blocks"
            raise ApiError(ApiErrorCode.INVALID_ARGUMENT, problem)
        try:
            return link_view(self.fabric_facts(), self.daemon.recorder.loads, a, b)
        except NotInFabric as exc:
            raise ApiError(ApiErrorCode.NOT_FOUND, str(exc)) from exc

    def device(self, name: str) -> dict[str, Any]:
        name = checked_name("name", name)
        try:
            return device_view(self.fabric_facts(), self.daemon.recorder.loads, name)
        except NotInFabric as exc:
            raise ApiError(ApiErrorCode.NOT_FOUND, str(exc)) from exc

    def operator_event(self, action: str, target: str = "", result: str = "", forced: bool = False) -> None:
        """An operator's request the controller accepted, as an ``operator`` event (the
        recorder's list on the page and WatchEvents)."""
        self.daemon.report.emit("operator", action=action, target=target, result=result, forced=forced)


def counts_to_pb(counts: Mapping[str, Any]) -> pb.CircuitCounts:
    return pb.CircuitCounts(**{k: int(counts.get(k) or 0) for k in ("installed", "up", "carrying", "drained",
                                                                     "down")})


class FabricViewServicer:
    """GetFabricView, GetLink and GetDevice (``_api`` and ``_serve`` are ControllerServicer's)."""

    _api: ControllerApi

    def _serve(self, context: grpc.ServicerContext, rpc: str, handle: Callable[[], T]) -> T:
        raise NotImplementedError

    def GetFabricView(
        self, request: pb.GetFabricViewRequest, context: grpc.ServicerContext
    ) -> pb.GetFabricViewResponse:
        def handle() -> pb.GetFabricViewResponse:
            view = self._api.fabric_view()
            return pb.GetFabricViewResponse(circuits=counts_to_pb(view["circuits"]),
                                            view_json=dump_json(view, "fabric_view"))

        return self._serve(context, "GetFabricView", handle)

    def GetLink(self, request: pb.GetLinkRequest, context: grpc.ServicerContext) -> pb.GetLinkResponse:
        def handle() -> pb.GetLinkResponse:
            link = self._api.link(checked_name("a", request.a), checked_name("b", request.b))
            counts = counts_to_pb(link["circuits"])
            return pb.GetLinkResponse(circuits=counts, link_json=dump_json(link, "link"))

        return self._serve(context, "GetLink", handle)

    def GetDevice(self, request: pb.GetDeviceRequest, context: grpc.ServicerContext) -> pb.GetDeviceResponse:
        def handle() -> pb.GetDeviceResponse:
            device = self._api.device(checked_name("name", request.name))
            return pb.GetDeviceResponse(circuits=counts_to_pb(device.get("circuits") or {}),
                                        device_json=dump_json(device, "device"))

        return self._serve(context, "GetDevice", handle)
