"""The gNMI service of an emulated switch: Capabilities, Get, Set (with master arbitration)
and Subscribe (:mod:`.subscribe`), over the leaves of :mod:`.tree`."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import grpc

from emulation.admission.limits import StreamGate, check_count
from emulation.errors import DeviceRefusal
from emulation.standard.gnmi import setting
from emulation.standard.gnmi.arbitration import Arbiter
from emulation.standard.gnmi.subscribe import Session
from emulation.standard.gnmi.tree import DrainState, Leaf, View, schema
from emulation.switch_device import ServedSwitch
from southbound.standard.gnmi import paths, values
from southbound.standard.pb import gnmi_pb2, gnmi_pb2_grpc

log = logging.getLogger(__name__)

T = TypeVar("T")

GNMI_VERSION = "0.10.0"
ENCODINGS = (gnmi_pb2.JSON_IETF, gnmi_pb2.PROTO)
#: the models whose leaves the target serves (name, organization, version)
MODELS = (
    ("openconfig-interfaces", "OpenConfig working group", "3.7.1"),
    ("openconfig-if-ethernet", "OpenConfig working group", "2.13.0"),
    ("openconfig-lldp", "OpenConfig working group", "0.2.1"),
)
ORIGINS = ("", "openconfig")
#: leaves of operational state that no config leaf mirrors (Get type OPERATIONAL)
OPERATIONAL_KINDS = ("counter", "oper", "admin", "lldp")


def serve(context: grpc.ServicerContext, action: Callable[[], T]) -> T:
    """Run ``action``; a DeviceRefusal becomes its status code and message."""
    try:
        return action()
    except DeviceRefusal as refusal:
        context.abort(refusal.code, refusal.message)
        raise  # context.abort raises


class GnmiTarget(gnmi_pb2_grpc.gNMIServicer):
    """The gNMI target of one switch. ``sample_interval_s`` is what SAMPLE without an interval
    (and TARGET_DEFINED on counters) gets; ``serving`` (when given) is asked before every call
    and while streams run: False refuses and ends them UNAVAILABLE."""

    def __init__(
        self,
        device: ServedSwitch,
        *,
        naming: paths.PortNaming = paths.SONIC_NAMING,
        sample_interval_s: float = 1.0,
        min_sample_interval_s: float = 0.01,
        on_change_poll_s: float = 0.05,
        streams: StreamGate | None = None,
        serving: Callable[[], bool] | None = None,
    ) -> None:
        self.device = device
        self.naming = naming
        self.sample_interval_s = sample_interval_s
        self.min_sample_interval_s = min_sample_interval_s
        self.on_change_poll_s = on_change_poll_s
        self.schema: list[Leaf] = schema(device.num_ports, naming)
        self.drains = DrainState()
        self.arbiter = Arbiter(device.name)
        self.streams = streams or StreamGate(4, per_client=4)
        self.serving = serving or (lambda: True)
        #: Subscribe streams that ended because the server stopped or the client left
        self.streams_ended = 0

    # -- helpers shared with subscribe ----------------------------------------------------
    def view(self) -> View:
        return View(self.device, self.drains, self.naming)

    def select(self, path: gnmi_pb2.Path, data_type: int = gnmi_pb2.GetRequest.ALL) -> list[Leaf]:
        """The schema's leaves at or under ``path`` of ``data_type``; NOT_FOUND when the schema
        has none there (of any type)."""
        if path.origin not in ORIGINS:
            raise setting.NotFound(f"{paths.text(path)}: unknown origin {path.origin!r}")
        found = [leaf for leaf in self.schema if paths.covers(path, leaf.path)]
        if not found:
            raise setting.NotFound(f"{paths.text(path)}: no such data on {self.device.name}")
        return [leaf for leaf in found if _of_type(leaf, data_type)]

    def check_encoding(self, encoding: int) -> None:
        if encoding not in ENCODINGS:
            name = gnmi_pb2.Encoding.Name(encoding) if encoding in gnmi_pb2.Encoding.values() else encoding
            raise setting.Unimplemented(f"encoding {name} is not supported (JSON_IETF or PROTO)")

    def notification(self, leaves: list[Leaf], view: View, encoding: Any) -> gnmi_pb2.Notification:
        updates = []
        for leaf in leaves:
            value = view.value(leaf, encoding)
            if value is not None:
                updates.append(gnmi_pb2.Update(path=leaf.path, val=values.encode(value, encoding)))
        return gnmi_pb2.Notification(timestamp=view.time_ns, update=updates)

    def check_serving(self, context: grpc.ServicerContext) -> None:
        if not self.serving():
            context.abort(grpc.StatusCode.UNAVAILABLE, f"{self.device.name} is not serving")

    # -- the RPCs -----------------------------------------------------------------------
    def Capabilities(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.check_serving(context)
        return gnmi_pb2.CapabilityResponse(
            supported_models=[gnmi_pb2.ModelData(name=n, organization=o, version=v) for n, o, v in MODELS],
            supported_encodings=list(ENCODINGS),
            gNMI_version=GNMI_VERSION,
        )

    def Get(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.check_serving(context)

        def get() -> gnmi_pb2.GetResponse:
            self.check_encoding(request.encoding)
            check_count("paths", len(request.path), 4 * len(self.schema))
            prefix = request.prefix if request.HasField("prefix") else None
            view = self.view()
            notes = []
            for path in request.path or [gnmi_pb2.Path()]:
                leaves = self.select(paths.joined(prefix, path), request.type)
                notes.append(self.notification(leaves, view, request.encoding))
            return gnmi_pb2.GetResponse(notification=notes)

        return serve(context, get)

    def Set(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.check_serving(context)

        def apply() -> gnmi_pb2.SetResponse:
            self.arbiter.admit(request.extension)
            operations = len(request.delete) + len(request.replace) + len(request.update)
            check_count("operations", operations, 4 * self.device.num_ports)
            changes, results = setting.changes(request, self.device.num_ports, self.naming)
            self._apply(changes)
            return gnmi_pb2.SetResponse(response=results, timestamp=time.time_ns())

        return serve(context, apply)

    def _apply(self, changes: list[setting.Change]) -> None:
        drains = self.drains
        with drains.lock:
            rows = self.device.ports()
            drains.reconcile(rows)
            admin, unviable = set(drains.admin_down), set(drains.not_viable)
            for change in changes:
                held = admin if change.leaf == "enabled" else unviable
                (held.discard if change.value else held.add)(change.port)
            now = {r["port"] for r in rows if r["drained"]}
            wanted = admin | unviable
            to_drain, to_undrain = sorted(wanted - now), sorted(now - wanted)
            if to_drain:
                self.device.drain(to_drain)
            if to_undrain:
                try:
                    self.device.undrain(to_undrain)
                except DeviceRefusal:
                    if to_drain:  # all or nothing
                        self.device.undrain(to_drain)
                    raise
            drains.admin_down, drains.not_viable = admin, unviable
            if to_drain or to_undrain:
                log.info("%s: gNMI drained %s, undrained %s", self.device.name, to_drain, to_undrain)

    def Subscribe(self, request_iterator: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        self.check_serving(context)
        with self.streams.admit(context):
            try:
                yield from Session(self, request_iterator, context).run()
            except DeviceRefusal as refusal:
                context.abort(refusal.code, refusal.message)
            finally:
                self.streams_ended += 1


def _of_type(leaf: Leaf, data_type: int) -> bool:
    if data_type == gnmi_pb2.GetRequest.CONFIG:
        return leaf.config
    if data_type == gnmi_pb2.GetRequest.STATE:
        return not leaf.config
    if data_type == gnmi_pb2.GetRequest.OPERATIONAL:
        return leaf.kind in OPERATIONAL_KINDS
    return True

