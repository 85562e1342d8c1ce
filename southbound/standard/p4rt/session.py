"""The drivers' channel (:func:`open_p4runtime`), and the StreamChannel: arbitration
(P4Runtime spec §5) as leadership fencing.

The controller's leadership epoch is the election id (epoch 0, no election, is election id 1):
the replica with the highest epoch is the primary and the only one whose Writes the switch
accepts. The session sends a MasterArbitrationUpdate when it opens and whenever the epoch
has grown, waits for the switch's answer, and follows the updates the switch sends later: a
session that learns another controller took over is no longer primary, and the driver's next
write raises :class:`~southbound.errors.Fenced` without reaching the switch.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator

import grpc

from southbound.devices import DeviceConfig
from southbound.errors import DeviceError, DeviceUnavailable, ErrorCode, Fenced, SouthboundError
from southbound.grpc_native.rpc import open_channel
from southbound.standard.pb import p4runtime_pb2, p4runtime_pb2_grpc

log = logging.getLogger(__name__)

pb = p4runtime_pb2
_CLOSE = object()


#: a Read may return every entry of a 4,096-block switch
_CHANNEL_OPTIONS = [("grpc.max_receive_message_length", 64 << 20)]


def endpoint_of(device: DeviceConfig) -> tuple[str, int]:
    """(address, device_id) of the device's P4Runtime endpoint."""
    endpoint = device.endpoint("p4runtime")
    if device.transport == "p4runtime" and device.address:
        address = device.address
    else:
        address = endpoint.address if endpoint is not None else device.address
    return address, endpoint.device_id if endpoint is not None else 1


def open_p4runtime(device: DeviceConfig) -> tuple[grpc.Channel, int]:
    address, device_id = endpoint_of(device)
    return open_channel(address, device.tls, _CHANNEL_OPTIONS), device_id


def election_id_of(epoch: int) -> int:
    """The election id of a leadership epoch: the epoch itself, 1 without an election."""
    return max(1, epoch)


def uint128(value: int) -> p4runtime_pb2.Uint128:
    return pb.Uint128(high=value >> 64, low=value & ((1 << 64) - 1))


def int_of(value: p4runtime_pb2.Uint128) -> int:
    return (value.high << 64) | value.low


class Arbitration:
    """One StreamChannel to one device, as (device_id, default role)."""

    def __init__(self, stub: p4runtime_pb2_grpc.P4RuntimeStub, device_id: int, name: str) -> None:
        self._stub = stub
        self.device_id = device_id
        self.name = name
        self._cond = threading.Condition()
        self._requests: queue.Queue[object] | None = None
        self._call: grpc.Future | None = None  # the stream's call (cancelled on close)
        self._election_id = 0  # the id we last sent
        self._answers = 0  # arbitration updates received on this stream
        self.primary = False
        self.highest = 0  # the primary's election id, as the switch last told us
        self._alive = False
        self._ended: tuple[grpc.StatusCode, str] | None = None  # how the last stream ended

    def ensure_primary(self, election_id: int, timeout_s: float) -> None:
        """Be primary with ``election_id`` or raise Fenced (DeviceUnavailable if no answer)."""
        with self._cond:
            if self._alive and election_id == self._election_id:
                if not self.primary:
                    raise Fenced(self.name, f"not the P4Runtime primary: election id {election_id} "
                                 f"is below the primary's {self.highest}", self.highest)
                return
            if not self._alive:
                self._open()
            seen = self._answers
            self._election_id = election_id
            requests = self._requests
        if requests is None:
            raise DeviceUnavailable(self.name, "the arbitration stream is closed")
        requests.put(pb.StreamMessageRequest(arbitration=pb.MasterArbitrationUpdate(
            device_id=self.device_id, election_id=uint128(election_id))))
        with self._cond:
            # an update sent before ours may still be on its way: ours names an id >= ours
            def answered() -> bool:
                return (self._answers > seen and self.highest >= election_id) or not self._alive

            if not self._cond.wait_for(answered, timeout_s):
                raise DeviceUnavailable(self.name, "no answer to the arbitration update")
            if not self._alive:
                raise self._refusal(election_id)
            if not self.primary:
                raise Fenced(self.name, f"the switch names another P4Runtime primary (election id "
                             f"{self.highest}, ours {election_id})", self.highest)

    def _open(self) -> None:
        requests: queue.Queue[object] = queue.Queue()

        def outgoing() -> Iterator[p4runtime_pb2.StreamMessageRequest]:
            while True:
                item = requests.get()
                if item is _CLOSE:
                    return
                yield item  # type: ignore[misc]

        call = self._stub.StreamChannel(outgoing())
        self._requests, self._call, self._alive = requests, call, True
        self._answers, self.primary, self._ended = 0, False, None
        threading.Thread(target=self._follow, args=(call, requests), daemon=True,
                         name=f"p4rt-stream-{self.name}").start()

    def _refusal(self, election_id: int) -> SouthboundError:
        """Why the switch closed the stream on our arbitration update."""
        code, details = self._ended or (grpc.StatusCode.UNAVAILABLE, "the arbitration stream closed")
        if code == grpc.StatusCode.INVALID_ARGUMENT:
            return DeviceError(self.name, f"the switch refused election id {election_id}: {details} (two "
                               "controllers without an election write to this switch; only one may)",
                               ErrorCode.DENIED, code)
        if code == grpc.StatusCode.NOT_FOUND:
            return DeviceError(self.name, f"device_id {self.device_id}: {details}", ErrorCode.NOT_FOUND, code)
        return DeviceUnavailable(self.name, f"the arbitration stream closed: {code.name}: {details}",
                                 transport_code=code)

    def _follow(self, call: Iterator[p4runtime_pb2.StreamMessageResponse],
                requests: queue.Queue[object]) -> None:
        try:
            for message in call:
                if message.HasField("arbitration"):
                    update = message.arbitration
                    with self._cond:
                        self.primary = update.status.code == 0
                        self.highest = int_of(update.election_id)
                        self._answers += 1
                        self._cond.notify_all()
                    if not self.primary:
                        log.info("%s: not the P4Runtime primary (primary's election id %d)",
                                 self.name, self.highest)
                elif message.HasField("error"):
                    log.warning("%s: stream error: %s", self.name, message.error.message)
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.CANCELLED:
                log.info("%s: P4Runtime stream ended: %s", self.name, exc.code().name)
                with self._cond:
                    self._ended = (exc.code(), exc.details() or "")
        finally:
            with self._cond:
                if self._requests is requests:
                    self._alive, self.primary = False, False
                    self._requests = None
                self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            requests, call = self._requests, self._call
            self._requests, self._call, self._alive = None, None, False
        if requests is not None:
            requests.put(_CLOSE)
        if call is not None:
            call.cancel()
