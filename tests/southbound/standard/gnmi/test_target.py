"""The emulated gNMI target, spoken to with the raw gNMI stubs: the shapes the 0.10.0 spec
gives Capabilities, Get, Set (with master arbitration) and Subscribe (ONCE, POLL, STREAM)."""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import grpc
import numpy as np
import pytest

from southbound.standard.gnmi import paths
from southbound.standard.pb import gnmi_ext_pb2, gnmi_pb2, gnmi_pb2_grpc
from tests.support.gnmi_support import served_gnmi_target
from tests.support.southbound_fixtures import wait_for

P = paths.parse


@contextmanager
def target(num_ports: int = 4) -> Iterator[tuple[Any, Any, Any, Any, gnmi_pb2_grpc.gNMIStub]]:
    with served_gnmi_target(num_ports) as (device, agent, tgt, links):
        channel = grpc.insecure_channel(agent.address)
        try:
            yield device, agent, tgt, links, gnmi_pb2_grpc.gNMIStub(channel)
        finally:
            channel.close()


def _updates(reply: Any) -> dict[str, Any]:
    return {paths.text(u.path): u.val for n in reply.notification for u in n.update}


def test_capabilities_advertise_models_encodings_and_version() -> None:
    with target() as (_, _, _, _, stub):
        reply = stub.Capabilities(gnmi_pb2.CapabilityRequest(), timeout=5)
    assert reply.gNMI_version == "0.10.0"
    assert list(reply.supported_encodings) == [gnmi_pb2.JSON_IETF, gnmi_pb2.PROTO]
    assert {m.name for m in reply.supported_models} == {
        "openconfig-interfaces", "openconfig-if-ethernet", "openconfig-lldp"}


def test_get_with_a_wildcard_in_proto_and_json_ietf() -> None:
    with target() as (device, _, _, _, stub):
        device.preset_counter("rx_bytes", np.array([5, 6, 2**63, 8], dtype=np.uint64))
        want = P("/interfaces/interface[name=*]/state/counters/in-octets")
        proto = _updates(stub.Get(gnmi_pb2.GetRequest(path=[want], encoding=gnmi_pb2.PROTO), timeout=5))
        ietf = _updates(stub.Get(gnmi_pb2.GetRequest(path=[want], encoding=gnmi_pb2.JSON_IETF), timeout=5))
    leaf = "/interfaces/interface[name=Ethernet2]/state/counters/in-octets"
    assert len(proto) == 4 and proto[leaf].uint_val == 2**63
    assert json.loads(ietf[leaf].json_ietf_val) == str(2**63)  # RFC 7951: 64-bit as a string


def test_get_with_a_prefix_and_data_types() -> None:
    with target() as (_, _, _, _, stub):
        request = gnmi_pb2.GetRequest(prefix=P("/interfaces/interface[name=Ethernet1]"),
                                      path=[P("/config"), P("/state")], encoding=gnmi_pb2.JSON_IETF,
                                      type=gnmi_pb2.GetRequest.CONFIG)
        got = _updates(stub.Get(request, timeout=5))
        everything = _updates(stub.Get(gnmi_pb2.GetRequest(
            path=[P("/interfaces/interface[name=Ethernet1]/state/oper-status")],
            encoding=gnmi_pb2.JSON_IETF), timeout=5))
    assert set(got) == {f"/interfaces/interface[name=Ethernet1]/config/{leaf}"
                        for leaf in ("name", "enabled", "forwarding-viable")}
    oper = everything["/interfaces/interface[name=Ethernet1]/state/oper-status"]
    assert json.loads(oper.json_ietf_val) == "UP"


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        (gnmi_pb2.GetRequest(path=[P("/system/state/hostname")], encoding=gnmi_pb2.PROTO),
         grpc.StatusCode.NOT_FOUND),
        (gnmi_pb2.GetRequest(path=[P("/interfaces")], encoding=gnmi_pb2.JSON), grpc.StatusCode.UNIMPLEMENTED),
        (gnmi_pb2.GetRequest(path=[P("/interfaces/interface[name=Ethernet9]")], encoding=gnmi_pb2.PROTO),
         grpc.StatusCode.NOT_FOUND),
    ],
)
def test_get_refusals(request_: Any, code: grpc.StatusCode) -> None:
    with target() as (_, _, _, _, stub), pytest.raises(grpc.RpcError) as info:
        stub.Get(request_, timeout=5)
    assert info.value.code() == code


def _set_viable(port: str, viable: bool, **extra: Any) -> gnmi_pb2.SetRequest:
    return gnmi_pb2.SetRequest(update=[gnmi_pb2.Update(
        path=P(f"/interfaces/interface[name={port}]/config/forwarding-viable"),
        val=gnmi_pb2.TypedValue(bool_val=viable))], **extra)


def test_set_update_replace_and_delete_of_the_drain_leaves() -> None:
    with target() as (device, _, _, _, stub):
        reply = stub.Set(_set_viable("Ethernet1", False), timeout=5)
        assert [(paths.text(r.path), r.op) for r in reply.response] == [
            ("/interfaces/interface[name=Ethernet1]/config/forwarding-viable", gnmi_pb2.UpdateResult.UPDATE)]
        assert reply.timestamp > 0
        assert list(np.flatnonzero(device.forwarding_state().drained)) == [1]
        config = gnmi_pb2.TypedValue(json_ietf_val=b'{"openconfig-interfaces:enabled": false}')
        stub.Set(gnmi_pb2.SetRequest(replace=[gnmi_pb2.Update(
            path=P("/interfaces/interface[name=Ethernet2]/config"), val=config)]), timeout=5)
        assert list(np.flatnonzero(device.forwarding_state().drained)) == [1, 2]
        stub.Set(gnmi_pb2.SetRequest(delete=[P("/interfaces/interface[name=Ethernet1]/config/forwarding-viable"),
                                             P("/interfaces/interface[name=Ethernet2]/config/enabled"),
                                             P("/interfaces/interface[name=Ethernet77]/config")]), timeout=5)
        assert not device.forwarding_state().drained.any()


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("/interfaces/interface[name=Ethernet1]/state/enabled", grpc.StatusCode.INVALID_ARGUMENT),
        ("/interfaces/interface[name=*]/config/enabled", grpc.StatusCode.INVALID_ARGUMENT),
        ("/interfaces/interface[name=Ethernet1]/config/mtu", grpc.StatusCode.UNIMPLEMENTED),
        ("/system/config/hostname", grpc.StatusCode.UNIMPLEMENTED),
        ("/interfaces/interface[name=Ethernet8]/config/enabled", grpc.StatusCode.NOT_FOUND),
    ],
)
def test_set_refusals_change_nothing(path: str, code: grpc.StatusCode) -> None:
    with target() as (device, _, _, _, stub):
        request = _set_viable("Ethernet0", False)  # valid, but in the same all-or-nothing Set
        request.update.append(gnmi_pb2.Update(path=P(path), val=gnmi_pb2.TypedValue(bool_val=False)))
        with pytest.raises(grpc.RpcError) as info:
            stub.Set(request, timeout=5)
        assert info.value.code() == code
        assert not device.forwarding_state().drained.any()


def test_set_of_a_non_boolean_and_union_replace_are_refused() -> None:
    with target() as (_, _, _, _, stub):
        bad = _set_viable("Ethernet0", False)
        bad.update[0].val.CopyFrom(gnmi_pb2.TypedValue(string_val="maybe"))
        with pytest.raises(grpc.RpcError) as info:
            stub.Set(bad, timeout=5)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        union = gnmi_pb2.SetRequest(union_replace=[gnmi_pb2.Update(path=P("/interfaces"))])
        with pytest.raises(grpc.RpcError) as info:
            stub.Set(union, timeout=5)
        assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED


def _arbitration(election: int | None, role: str = "r") -> gnmi_ext_pb2.Extension:
    ma = gnmi_ext_pb2.MasterArbitration(role=gnmi_ext_pb2.Role(id=role))
    if election is not None:
        ma.election_id.CopyFrom(gnmi_ext_pb2.Uint128(high=0, low=election))
    return gnmi_ext_pb2.Extension(master_arbitration=ma)


def test_master_arbitration_per_the_extension_spec() -> None:
    with target() as (device, _, tgt, _, stub):
        stub.Set(gnmi_pb2.SetRequest(extension=[_arbitration(5)]), timeout=5)  # the empty Set of a new master
        assert tgt.arbiter.highest("r") == 5
        with pytest.raises(grpc.RpcError) as info:
            stub.Set(_set_viable("Ethernet0", False, extension=[_arbitration(4)]), timeout=5)
        assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "highest seen, 5" in info.value.details()
        with pytest.raises(grpc.RpcError) as info:
            stub.Set(_set_viable("Ethernet0", False, extension=[_arbitration(None)]), timeout=5)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert not device.forwarding_state().drained.any()
        stub.Set(_set_viable("Ethernet0", False, extension=[_arbitration(1, role="other")]), timeout=5)
        stub.Set(_set_viable("Ethernet1", False), timeout=5)  # no extension: accepted
        assert list(np.flatnonzero(device.forwarding_state().drained)) == [0, 1]


class Stream:
    """A Subscribe call fed from a queue, read into a list by a thread."""

    def __init__(self, stub: gnmi_pb2_grpc.gNMIStub, first: gnmi_pb2.SubscribeRequest) -> None:
        self.outbox: queue.Queue[gnmi_pb2.SubscribeRequest | None] = queue.Queue()
        self.outbox.put(first)
        self.call = stub.Subscribe(iter(self.outbox.get, None), timeout=30)
        self.got: list[gnmi_pb2.SubscribeResponse] = []
        self.error: grpc.RpcError | None = None
        self.done = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for response in self.call:
                self.got.append(response)
        except grpc.RpcError as exc:
            self.error = exc
        finally:
            self.done.set()

    def syncs(self) -> int:
        return sum(r.sync_response for r in self.got)

    def close(self) -> None:
        self.call.cancel()
        self.outbox.put(None)


def _subscribe(
    mode: Any, *subs: gnmi_pb2.Subscription, updates_only: bool = False
) -> gnmi_pb2.SubscribeRequest:
    return gnmi_pb2.SubscribeRequest(subscribe=gnmi_pb2.SubscriptionList(
        mode=mode, subscription=subs, encoding=gnmi_pb2.PROTO, updates_only=updates_only))


OCTETS = gnmi_pb2.Subscription(path=P("/interfaces/interface[name=*]/state/counters/out-octets"),
                               mode=gnmi_pb2.SAMPLE, sample_interval=50_000_000)
MODE = gnmi_pb2.SubscriptionList


def test_subscribe_once_sends_everything_then_sync_then_ends() -> None:
    with target() as (_, _, _, _, stub):
        stream = Stream(stub, _subscribe(MODE.ONCE, OCTETS))
        assert stream.done.wait(10)
    assert stream.error is None
    assert [r.WhichOneof("response") for r in stream.got] == ["update", "sync_response"]
    assert len(stream.got[0].update.update) == 4


def test_subscribe_poll_answers_each_poll() -> None:
    with target() as (device, _, _, _, stub):
        stream = Stream(stub, _subscribe(MODE.POLL, OCTETS))
        wait_for(lambda: stream.syncs() == 1, 5, "the first sync")
        device.preset_counter("tx_bytes", 77)
        stream.outbox.put(gnmi_pb2.SubscribeRequest(poll=gnmi_pb2.Poll()))
        wait_for(lambda: stream.syncs() == 2, 5, "the poll's answer")
        stream.close()
    assert [u.val.uint_val for u in stream.got[2].update.update] == [77] * 4


def test_subscribe_stream_samples_at_the_interval_and_reports_changes() -> None:
    oper = gnmi_pb2.Subscription(path=P("/interfaces/interface[name=*]/state/oper-status"),
                                 mode=gnmi_pb2.ON_CHANGE)
    lldp = gnmi_pb2.Subscription(path=P("/lldp/interfaces/interface[name=Ethernet3]/neighbors"),
                                 mode=gnmi_pb2.ON_CHANGE)
    with target() as (device, _, _, links, stub):
        stream = Stream(stub, _subscribe(MODE.STREAM, OCTETS, oper, lldp))
        wait_for(lambda: stream.syncs() == 1, 5, "the sync")
        assert stream.got[0].HasField("update") and stream.got[1].sync_response
        started = time.monotonic()
        device.preset_counter("tx_bytes", 123)
        wait_for(lambda: any(u.val.uint_val == 123 for r in stream.got[2:] for u in r.update.update), 5,
                 "a sample with the new counter")
        assert time.monotonic() - started < 2.0
        links.disconnect("a", 3)
        wait_for(lambda: any(r.update.delete for r in stream.got), 5, "the neighbour's delete")
        stream.close()
    changes = [u for r in stream.got[2:] for u in r.update.update if paths.leaf_name(u.path) == "oper-status"]
    assert [(paths.interface_name(u.path), u.val.string_val) for u in changes] == [("Ethernet3", "DOWN")]


def test_updates_only_starts_with_the_sync() -> None:
    with target() as (_, _, _, _, stub):
        stream = Stream(stub, _subscribe(MODE.STREAM, OCTETS, updates_only=True))
        wait_for(lambda: len(stream.got) >= 2, 5, "a sample after the sync")
        stream.close()
    assert stream.got[0].sync_response and stream.got[1].HasField("update")


def test_a_sample_interval_below_the_minimum_is_invalid() -> None:
    fast = gnmi_pb2.Subscription(path=OCTETS.path, mode=gnmi_pb2.SAMPLE, sample_interval=1000)
    with target() as (_, _, _, _, stub):
        stream = Stream(stub, _subscribe(MODE.STREAM, fast))
        assert stream.done.wait(10)
    assert stream.error is not None and stream.error.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_stopping_the_agent_ends_its_streams() -> None:
    with target() as (_, agent, tgt, _, stub):
        stream = Stream(stub, _subscribe(MODE.STREAM, OCTETS))
        wait_for(lambda: stream.syncs() == 1, 5, "the sync")
        agent.stop(grace_s=0.1)
        assert stream.done.wait(10)
        wait_for(lambda: tgt.streams_ended == 1, 5, "the server side of the stream to end")
    assert stream.error is not None and stream.error.code() in (grpc.StatusCode.UNAVAILABLE,
                                                                grpc.StatusCode.CANCELLED)
