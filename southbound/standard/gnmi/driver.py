"""The gNMI driver of a block or spine switch: :class:`GnmiSwitch` reads counters from a
SAMPLE stream, ports (oper status, drain, speed, LLDP peer) with ``Get``, and drains with
``Set`` under master arbitration; it fulfils :class:`~southbound.contracts.CounterReader`
and :class:`~southbound.contracts.PortDrainer`. See README.md for the paths and choices."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

import grpc

from southbound.closing import ClosesOnExit
from southbound.devices import DeviceConfig
from southbound.errors import (
    DeviceError,
    ErrorCode,
    Fenced,
    InvalidRequest,
    SouthboundError,
)
from southbound.fencing import NO_ELECTION, EpochSource
from southbound.grpc_native.rpc import RpcCaller, open_channel
from southbound.standard.gnmi import paths, values
from southbound.standard.gnmi.sampler import Leaves, Sampler, subscribe_request
from southbound.standard.pb import gnmi_ext_pb2, gnmi_pb2, gnmi_pb2_grpc
from southbound.types import PortCounters, SwitchCounters, SwitchPort

log = logging.getLogger(__name__)

#: the master-arbitration role of the controller's replicas (the spec wants one set)
ROLE = "heliostat"
DEFAULT_SAMPLE_INTERVAL_S = 1.0
#: egress bytes read later than this share of the sample interval after their round are dropped
PROMPT_FRACTION = 0.05


class EgressSource(Protocol):
    """Bytes sent toward each destination block (the P4Runtime direct counters)."""

    def egress_bytes(self) -> dict[str, int]: ...

    def close(self) -> None: ...


def election_id(epoch: int) -> gnmi_ext_pb2.Uint128:
    """The election id of a leadership epoch: epoch + 1 (epoch 0, no election, is id 1)."""
    value = epoch + 1
    return gnmi_ext_pb2.Uint128(high=value >> 64, low=value & (2**64 - 1))


def arbitration(epoch: int) -> gnmi_ext_pb2.Extension:
    return gnmi_ext_pb2.Extension(master_arbitration=gnmi_ext_pb2.MasterArbitration(
        role=gnmi_ext_pb2.Role(id=ROLE), election_id=election_id(epoch)))


def speed_gbps(identity: str) -> float:
    """openconfig-if-ethernet's ``SPEED_100GB`` (or ``SPEED_2500MB``) in Gb/s; 0 if unknown."""
    match = re.fullmatch(r"SPEED_(\d+)(GB|MB)", values.as_name(identity))
    if match is None:
        return 0.0
    number = float(match.group(1))
    return number if match.group(2) == "GB" else number / 1000.0


class GnmiSwitch(ClosesOnExit):
    """One switch over gNMI. ``egress`` supplies the per-destination bytes (gNMI has no such
    counter); ``drain_leaf`` is ``forwarding-viable`` (default) or ``enabled`` (admin state);
    ``peer_block`` maps an LLDP system name to a block (identity by default); ``encoding``
    (``json_ietf`` or ``proto``) is the one the counters are streamed in."""

    def __init__(
        self,
        device: DeviceConfig,
        *,
        egress: EgressSource | None = None,
        sample_interval_s: float = DEFAULT_SAMPLE_INTERVAL_S,
        drain_leaf: str = paths.DRAIN_LEAVES[0],
        naming: paths.PortNaming = paths.SONIC_NAMING,
        peer_block: Callable[[str], str] = str,
        encoding: str = "json_ietf",
        channel: grpc.Channel | None = None,
    ) -> None:
        if drain_leaf not in paths.DRAIN_LEAVES:
            raise ValueError(f"drain_leaf must be one of {', '.join(paths.DRAIN_LEAVES)}, got {drain_leaf!r}")
        if encoding.upper() not in ("JSON_IETF", "PROTO"):
            raise ValueError(f"encoding must be json_ietf or proto, got {encoding!r}")
        if sample_interval_s <= 0:
            raise ValueError(f"sample_interval_s must be positive, got {sample_interval_s}")
        endpoint = device.endpoint("gnmi")
        if endpoint is not None and endpoint.sample_interval_s is not None:
            sample_interval_s = endpoint.sample_interval_s
        own = device.transport == "gnmi" or endpoint is None
        self.address = device.address if own or endpoint is None else endpoint.address
        self.name = device.name
        self.options = device.options
        self.drain_leaf = drain_leaf
        self.naming = naming
        self._peer_block = peer_block
        self._egress = egress
        #: the newest sample round read whole with its egress bytes: (timestamp ns, leaves, bytes)
        self._reading: tuple[int, Leaves, dict[str, int]] | None = None
        self._egress_lock = threading.Lock()
        #: how soon after a round's arrival its egress bytes must be read to be used with it
        self._prompt_s = PROMPT_FRACTION * sample_interval_s
        #: the leadership epoch put on every Set (HA; 0 without an election)
        self.epoch: EpochSource = NO_ELECTION
        self._channel = channel or open_channel(self.address, device.tls)
        self._stub = gnmi_pb2_grpc.gNMIStub(self._channel)
        self._caller = RpcCaller(self.name, self.options)
        self.encoding = gnmi_pb2.Encoding.Value(encoding.upper())
        request = subscribe_request([paths.counter("*", leaf) for leaf in paths.COUNTER_LEAVES],
                                    sample_interval_s, self.encoding)
        self.sampler = Sampler(self.name, self._stub.Subscribe, request, interval_s=sample_interval_s,
                               deadline_s=self.options.deadline_s,
                               on_update=None if egress is None else self._read_egress)
        self._closed = False

    def _read_egress(self, stamp_ns: int) -> None:
        """Once a sample round is whole (every leaf at ``stamp_ns``), read the per-destination
        bytes and keep them with that round's leaves: one reading, one time. Bytes read at poll
        time against a sample up to one interval old made rates that jumped with the phase
        between polls and samples; bytes read long after the round (a busy process) are not
        that round's either, so a late read is dropped and the last prompt one kept."""
        if self._egress is None:
            return
        started = time.monotonic()
        leaves = self.sampler.snapshot()
        if not leaves or any(stamp != stamp_ns for stamp, _ in leaves.values()):
            return  # the round is not whole yet
        if self._reading is not None and self._reading[0] == stamp_ns:
            return
        try:
            egress = self._egress.egress_bytes()
        except SouthboundError as exc:
            log.debug("%s: egress counters not read with the sample: %s", self.name, exc.message)
            return
        late = time.monotonic() - started
        if late > self._prompt_s:
            log.debug("%s: egress counters read %.0f ms after the sample: not used with it", self.name,
                      late * 1e3)
            return
        with self._egress_lock:
            self._reading = (stamp_ns, leaves, dict(egress))

    # -- CounterReader ------------------------------------------------------------------
    def counters(self) -> SwitchCounters:
        """The latest complete sample of the port counters (ports with every leaf), timed by
        the oldest leaf's timestamp. With ``egress``: the latest sample round whose
        per-destination bytes were read promptly as it arrived, ports and bytes together."""
        sample = self.sampler.latest()  # raises while the stream is down or silent
        leaves, egress = sample.leaves, {}
        if self._egress is not None:
            with self._egress_lock:
                reading = self._reading
            if reading is None:  # no round read yet: this sample, with the bytes as they are now
                egress = self._egress.egress_bytes()
            else:
                _, leaves, egress = reading
        by_port: dict[int, dict[str, int]] = {}
        stamps: list[int] = []
        for (name, leaf), (stamp, value) in leaves.items():
            port = self.naming.port(name)
            field = paths.COUNTER_LEAVES.get(leaf)
            if port is None or field is None:
                continue
            by_port.setdefault(port, {})[field] = value
            stamps.append(stamp)
        complete = {p: c for p, c in by_port.items() if len(c) == len(paths.COUNTER_LEAVES)}
        ports = {p: PortCounters(p, **complete[p]) for p in sorted(complete)}
        return SwitchCounters(time_s=min(stamps, default=0) / 1e9, ports=ports, egress_bytes=dict(egress))

    def ports(self) -> list[SwitchPort]:
        leaves = self._get([paths.interface("*", "state", "oper-status"),
                            paths.interface("*", "config", self.drain_leaf),
                            paths.interface("*", "ethernet", "state", "port-speed")])
        peers = self._lldp_peers()
        rows: dict[int, dict[str, Any]] = {}
        for path, value in leaves:
            name = paths.interface_name(path)
            port = self.naming.port(name) if name else None
            if port is None:
                continue
            row = rows.setdefault(port, {})
            leaf = paths.leaf_name(path)
            where = f"{self.name}: {paths.text(path)}"
            try:
                if leaf == "oper-status":
                    row["oper_up"] = values.as_name(value, where) == "UP"
                elif leaf == self.drain_leaf:
                    row["drained"] = not values.as_bool(value, where)
                elif leaf == "port-speed":
                    row["speed_gbps"] = speed_gbps(value)
            except values.BadValue as exc:
                raise DeviceError(self.name, f"malformed value: {exc}") from exc
        out = []
        for port in sorted(p for p, row in rows.items() if "oper_up" in row):
            row = rows[port]
            peer = peers.get(port) if row["oper_up"] else None
            out.append(SwitchPort(port=port, oper_up=row["oper_up"], drained=row.get("drained", False),
                                  speed_gbps=row.get("speed_gbps", 0.0),
                                  peer_block=peer[0] if peer else None, peer_port=peer[1] if peer else None))
        return out

    def _lldp_peers(self) -> dict[int, tuple[str, int]]:
        """Port -> (peer block, peer port) from the LLDP neighbours (none on NOT_FOUND)."""
        try:
            leaves = self._get([paths.lldp_neighbor("*", "system-name"), paths.lldp_neighbor("*", "port-id")])
        except SouthboundError as exc:
            if exc.code is ErrorCode.NOT_FOUND:
                return {}
            raise
        found: dict[tuple[int, str], dict[str, str]] = {}
        for path, value in leaves:
            name = paths.interface_name(path)
            port = self.naming.port(name) if name else None
            neighbor = next((e.key.get("id", "") for e in path.elem if e.name == "neighbor"), "")
            if port is not None and isinstance(value, str):
                found.setdefault((port, neighbor), {})[paths.leaf_name(path)] = value
        peers: dict[int, tuple[str, int]] = {}
        for (port, _), leaf in sorted(found.items()):
            far = self.naming.port(leaf.get("port-id", ""))
            if port not in peers and "system-name" in leaf and far is not None:
                peers[port] = (self._peer_block(leaf["system-name"]), far)
        return peers

    # -- PortDrainer --------------------------------------------------------------------
    def drain(self, ports: Iterable[int]) -> frozenset[int]:
        self._set_viable(ports, viable=False)
        return self._drained()

    def undrain(self, ports: Iterable[int]) -> frozenset[int]:
        self._set_viable(ports, viable=True)
        return self._drained()

    def _drained(self) -> frozenset[int]:
        leaves = self._get([paths.interface("*", "config", self.drain_leaf)])
        drained = set()
        for path, value in leaves:
            name = paths.interface_name(path)
            port = self.naming.port(name) if name else None
            if port is not None and not values.as_bool(value, paths.text(path)):
                drained.add(port)
        return frozenset(drained)

    def _set_viable(self, ports: Iterable[int], *, viable: bool) -> None:
        wanted = sorted(set(ports))
        bad = [p for p in wanted if p < 0]
        if bad:
            raise InvalidRequest(self.name, f"unknown port {bad[0]}")
        if not wanted:
            return
        value = gnmi_pb2.TypedValue(json_ietf_val=values.json_ietf(viable))
        updates = [gnmi_pb2.Update(path=paths.interface(self.naming.name(p), "config", self.drain_leaf),
                                   val=value) for p in wanted]
        self.set(gnmi_pb2.SetRequest(update=updates))

    def set(self, request: gnmi_pb2.SetRequest) -> gnmi_pb2.SetResponse:
        """Send ``request`` with the master-arbitration extension of the current epoch; a
        refused election id raises Fenced (reported to the epoch source)."""
        epoch = self.epoch.current_epoch()
        del request.extension[:]
        request.extension.append(arbitration(epoch))
        try:
            reply: gnmi_pb2.SetResponse = self._caller.call(self._stub.Set, request)
            return reply
        except SouthboundError as exc:
            fenced = _fenced(exc, epoch)
            if fenced is None:
                if exc.code is ErrorCode.NOT_FOUND:
                    raise InvalidRequest(self.name, exc.message, exc.transport_code) from exc
                raise
            self.epoch.refused(self.name, fenced.highest_epoch)
            raise fenced from exc

    def _get(self, wanted: list[gnmi_pb2.Path]) -> list[tuple[gnmi_pb2.Path, Any]]:
        request = gnmi_pb2.GetRequest(path=wanted, encoding=gnmi_pb2.JSON_IETF)
        reply = self._caller.call(self._stub.Get, request)
        out = []
        for note in reply.notification:
            for update in note.update:
                try:
                    out.append((paths.joined(note.prefix, update.path), values.decode(update.val)))
                except values.BadValue as exc:
                    where = paths.text(update.path)
                    raise DeviceError(self.name, f"malformed value at {where}: {exc}") from exc
        return out

    def capabilities(self) -> gnmi_pb2.CapabilityResponse:
        reply: gnmi_pb2.CapabilityResponse = self._caller.call(self._stub.Capabilities,
                                                               gnmi_pb2.CapabilityRequest())
        return reply

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.sampler.close()
        if self._egress is not None:
            self._egress.close()
        self._channel.close()


def _fenced(error: SouthboundError, epoch: int) -> Fenced | None:
    """The Fenced a refused election id means: PERMISSION_DENIED (the extension's spec), or
    FAILED_PRECONDITION naming the election id (some targets); the highest epoch from the
    message's ``highest ... N`` when given, else just above ours."""
    status = error.transport_code
    message = error.message
    if status == grpc.StatusCode.PERMISSION_DENIED or (
        status == grpc.StatusCode.FAILED_PRECONDITION and "election" in message.lower()
    ):
        match = re.search(r"highest\D*?(\d+)", message)
        highest = int(match.group(1)) - 1 if match else epoch + 1
        return Fenced(error.device, message, max(highest, epoch + 1), status)
    return None


def peer_blocks(mapping: Mapping[str, str]) -> Callable[[str], str]:
    """A ``peer_block`` for GnmiSwitch from system name -> block (unknown names kept)."""
    return lambda system: mapping.get(system, system)
