"""EmulatedFabric end to end: devices over loopback gRPC, faults, the emulate service."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from emulation.dataplane import BYTES_PER_GBIT
from emulation.fabric import EmulatedFabric, FabricError
from optimizer.topology import uniform_mesh
from optimizer.traffic import uniform_matrix
from southbound.devices import load_devices_file
from southbound.errors import DeviceUnavailable
from southbound.grpc_native.switch_client import SwitchClient
from southbound.registry import default_registry
from southbound.tls import ServerTlsConfig, TlsConfig
from southbound.types import CrossConnect, OcsEvent
from tests.support import ROOT
from tests.support.southbound_fixtures import FAST, wait_for
from tests.support.tls_ca import SERVER_NAME, make_pki

GB = BYTES_PER_GBIT


def test_from_config_serves_every_device_listed_in_the_devices_file() -> None:
    with EmulatedFabric.from_config(ROOT / "configs/fabric-8.yaml") as fabric:
        devices = load_devices_file(fabric.devices_file)
        assert set(devices) == {f"b{i}" for i in range(1, 9)} | {f"ocs{i}" for i in range(1, 5)}
        registry = default_registry()
        mesh = uniform_mesh(fabric.fabric)
        for name, device in devices.items():
            with registry.create(device) as client:
                assert client.is_serving(), name
                if device.kind == "ocs":
                    table = client.cross_connects()
                    expected = {CrossConnect(c.a, c.b) for c in mesh if c.ocs == name}
                    assert table.cross_connects == expected and not table.switching
                else:
                    ports = client.ports()
                    assert len(ports) == 32 and all(p.oper_up for p in ports)
                    assert all(p.peer_block not in (None, name) for p in ports)
        path = fabric.devices_file
    assert not path.exists()  # the temporary devices file goes with the fabric


def test_lldp_peers_agree_in_both_directions() -> None:
    with EmulatedFabric.from_config(ROOT / "configs/fabric-4.yaml") as fabric:
        seen = {}
        for block in fabric.fabric.block_names:
            with fabric.switch_client(block, FAST) as client:
                for p in client.ports():
                    seen[(block, p.port)] = (p.peer_block, p.peer_port)
    for (block, port), far in seen.items():
        assert seen[far] == (block, port)


def test_safe_reconfiguration_through_grpc_loses_no_traffic() -> None:
    with EmulatedFabric.from_config(ROOT / "configs/fabric-4.yaml") as fabric:
        fabric.set_demand(uniform_matrix(fabric.fabric, 0.3))
        fabric.step(1.0)
        b1 = fabric.switch_client("b1", FAST)
        ocs = fabric.ocs_client("ocs1", FAST)
        # Take b1's first circuit on ocs1, and the circuit of a port of b1's peer's peer, and
        # swap their ends: drain all four block ports, switch, step, undrain.
        port0 = next(p for p in b1.ports() if p.port == 0)
        wired = {(w.block, w.block_port): w for w in fabric.fabric.wiring}
        table = ocs.cross_connects()
        a = wired[("b1", 0)].port
        circuit_a = next(c for c in table.cross_connects if a in (c.a, c.b))
        a_far = circuit_a.b if circuit_a.a == a else circuit_a.a
        other = next(c for c in table.cross_connects
                     if c != circuit_a and fabric.fabric.wired_port("ocs1", c.a).block
                     not in ("b1", port0.peer_block)
                     and fabric.fabric.wired_port("ocs1", c.b).block not in ("b1", port0.peer_block))
        side = fabric.ocs["ocs1"].side_of
        o_match = other.a if side(other.a) != side(a) else other.b
        o_rest = other.b if o_match == other.a else other.a
        ends = [fabric.fabric.wired_port("ocs1", q) for q in (a, a_far, other.a, other.b)]
        for end in ends:
            with fabric.switch_client(end.block, FAST) as c:
                c.drain([end.block_port])
        before = fabric.stats()
        result = ocs.apply(
            expected_generation=table.generation,
            remove=[circuit_a, other],
            add=[CrossConnect(a, o_match), CrossConnect(a_far, o_rest)],
        )
        assert result.generation == table.generation + 1
        fabric.step(0.5)
        assert ocs.cross_connects().switching == frozenset()
        for end in ends:
            with fabric.switch_client(end.block, FAST) as c:
                c.undrain([end.block_port])
        fabric.step(1.0)
        after = fabric.stats()
        assert after.blackholed_bytes == before.blackholed_bytes == 0
        new_peer = next(p for p in b1.ports() if p.port == 0)
        assert new_peer.peer_block == fabric.fabric.wired_port("ocs1", o_match).block
        assert new_peer.peer_block != port0.peer_block
        b1.close()
        ocs.close()


def test_counters_over_grpc_are_monotonic_and_match_the_demand() -> None:
    with EmulatedFabric.from_config(ROOT / "configs/fabric-4.yaml") as fabric:
        tm = uniform_matrix(fabric.fabric, 1.2)  # overloaded: drops too
        fabric.set_demand(tm)
        with fabric.switch_client("b2", FAST) as client:
            previous = client.counters()
            for _ in range(3):
                fabric.step(1.0)
                now = client.counters()
                assert now.time_s > previous.time_s
                for port, c in now.ports.items():
                    p = previous.ports[port]
                    assert c.tx_bytes >= p.tx_bytes and c.rx_bytes >= p.rx_bytes
                    assert c.tx_drops >= p.tx_drops and c.tx_packets >= p.tx_packets
                for dest, value in now.egress_bytes.items():
                    assert value >= previous.egress_bytes[dest]
                previous = now
        sent = tm.demand("b2", "b3") * 3 * GB
        assert previous.egress_bytes["b3"] == pytest.approx(sent, abs=2)
        assert sum(c.tx_drop_bytes for c in previous.ports.values()) > 0


def test_ocs_power_loss_is_seen_over_grpc() -> None:
    with EmulatedFabric.from_config(ROOT / "configs/fabric-4.yaml") as fabric:
        fabric.set_demand(uniform_matrix(fabric.fabric, 0.3))
        events: list[OcsEvent] = []
        with fabric.ocs_client("ocs2", FAST) as ocs:
            stream = ocs.events()
            reader = threading.Thread(target=lambda: events.extend(stream), daemon=True)
            reader.start()
            wait_for(lambda: bool(fabric.ocs["ocs2"]._subscribers), what="subscription")
            assert fabric.fail_ocs("ocs2") == 8  # 16 wired ports, 8 circuits
            wait_for(lambda: len(events) >= 1, what="power_loss event")
            stream.cancel()
            reader.join(5)
            assert ocs.cross_connects().cross_connects == frozenset()
        assert events[0].kind == "power_loss" and events[0].circuits_lost == 8
        fabric.step(1.0)
        assert fabric.stats().blackholed_by_reason["no_circuit"] > 0
        with fabric.switch_client("b1", FAST) as b1:
            down = [p.port for p in b1.ports() if not p.oper_up]
        assert down == [4, 5, 6, 7]  # b1's uplinks on ocs2
        fabric.restore_ocs("ocs2")
        assert fabric.ocs["ocs2"].powered


def test_failed_link_shows_at_both_ends() -> None:
    with EmulatedFabric.from_config(ROOT / "configs/fabric-4.yaml") as fabric:
        w = next(w for w in fabric.fabric.wiring if w.block == "b3" and w.block_port == 1)
        events: list[OcsEvent] = []
        with fabric.switch_client("b3", FAST) as b3, fabric.ocs_client(w.ocs, FAST) as ocs:
            stream = ocs.events()
            reader = threading.Thread(target=lambda: events.extend(stream), daemon=True)
            reader.start()
            wait_for(lambda: bool(fabric.ocs[w.ocs]._subscribers), what="subscription")
            fabric.fail_link("b3", 1)
            port = next(p for p in b3.ports() if p.port == 1)
            assert not port.oper_up and port.peer_block is None
            status = ocs.port_status([w.port])[0]
            assert status.rx_power_dbm == -40.0 and not status.oper_up
            fabric.restore_link("b3", 1)
            assert next(p for p in b3.ports() if p.port == 1).oper_up
            wait_for(lambda: len(events) >= 2, what="circuit down and up events")
            stream.cancel()
            reader.join(5)
        assert [e.kind for e in events] == ["circuit_down", "circuit_up"]
        assert events[0].reason == f"loss of light on port {w.port}"
        assert w.port in (events[0].cross_connect.a, events[0].cross_connect.b)
        with pytest.raises(FabricError, match="no wired uplink 99"):
            fabric.fail_link("b3", 99)


def test_killed_agent_is_unavailable_but_its_switch_keeps_forwarding() -> None:
    with EmulatedFabric.from_config(ROOT / "configs/fabric-4.yaml") as fabric:
        fabric.set_demand(uniform_matrix(fabric.fabric, 0.3))
        fabric.kill_agent("b1")
        with fabric.switch_client("b1", FAST) as client, pytest.raises(DeviceUnavailable):
            client.counters()
        fabric.step(1.0)
        stats = fabric.stats()
        assert stats.delivered_bytes == pytest.approx(stats.offered_bytes)
        fabric.restart_agent("b1")
        with fabric.switch_client("b1", FAST) as client:
            wait_for(client.is_serving, what="b1 back")
            assert client.counters().egress_bytes["b2"] > 0
        with pytest.raises(FabricError):
            fabric.kill_agent("nope")


def test_fabric_devices_with_mutual_tls(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    server = ServerTlsConfig(pki.server_cert, pki.server_key, client_ca=pki.ca_cert)
    client = TlsConfig(pki.ca_cert, pki.client_cert, pki.client_key, SERVER_NAME)
    with EmulatedFabric.from_config(
        ROOT / "configs/fabric-4.yaml", server_tls=server, client_tls=client,
        devices_file=tmp_path / "devices.yaml",
    ) as fabric:
        devices = load_devices_file(tmp_path / "devices.yaml")
        assert all(d.tls is not None and d.tls.mutual for d in devices.values())
        with default_registry().create(devices["ocs1"]) as ocs:
            assert ocs.device_info().radix == 16
        with fabric.switch_client("b1", FAST) as tls_client:
            assert tls_client.device_info().block == "b1"
        with SwitchClient(devices["b1"].address, options=FAST) as insecure, pytest.raises(
            DeviceUnavailable
        ):
            insecure.device_info()


def test_emulate_service_runs_as_a_process_until_interrupted(tmp_path: Path) -> None:
    devices_file = tmp_path / "devices.yaml"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "emulation.service", "--fabric", str(ROOT / "configs/fabric-4.yaml"),
         "--devices-file", str(devices_file), "--speed", "20", "--tick", "0.5"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        wait_for(devices_file.exists, timeout_s=30, what="devices file")
        devices = load_devices_file(devices_file)
        # the standard protocols by default: each capability routed to the one that serves it
        assert {c: devices["b1"].route(c).transport for c in ("groups", "counters", "drain")} == {
            "groups": "p4runtime", "counters": "gnmi", "drain": "gnmi"}
        assert devices["ocs1"].route("circuits").transport == "netconf"
        login = devices["ocs1"].endpoint("netconf")
        assert login is not None and login.host_key is not None  # the driver pins it
        with default_registry().create(devices["ocs1"]) as ocs:
            assert ocs.device_info().name == "ocs1"
        with default_registry().create(devices["b1"]) as b1:
            wait_for(lambda: b1.counters().time_s > 1.0, what="emulated time to run")
            assert b1.budget().max_group_weight > 0
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert f"devices file {devices_file}" in out
    assert "ocs1" in out and "127.0.0.1:" in out and "stopped at t=" in out


def test_emulate_service_rejects_a_bad_fabric_file(tmp_path: Path) -> None:
    from emulation.service import main

    bad = tmp_path / "fabric.yaml"
    bad.write_text("name: x\nblocks: []\nocs: []\n")
    assert main(["--fabric", str(bad)]) == 2


def test_emulate_plugs_into_an_argparse_cli(tmp_path: Path) -> None:
    import argparse

    from emulation import service

    parser = argparse.ArgumentParser(prog="heliostat")
    service.register(parser.add_subparsers(dest="command"))
    devices_file = tmp_path / "run" / "d.yaml"  # run/ does not exist on a fresh clone: it is made
    args = parser.parse_args(["emulate", "--fabric", str(ROOT / "configs/fabric-4.yaml"),
                              "--devices-file", str(devices_file), "--duration", "0.3",
                              "--speed", "10", "--tick", "0.5"])
    assert args.handler is service.run_command
    assert args.handler(args) == 0
    assert set(load_devices_file(devices_file)) >= {"ocs1", "b4"}


def test_emulate_errors_read_like_every_other_command(tmp_path: Path, capsys) -> None:
    import argparse

    from emulation import service

    (tmp_path / "afile").write_text("")
    parser = argparse.ArgumentParser(prog="heliostat")
    service.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["emulate", "--fabric", str(ROOT / "configs/fabric-4.yaml"),
                              "--devices-file", str(tmp_path / "afile" / "d.yaml")])
    assert args.handler(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("heliostat: error: ") and "--devices-file: cannot create the directory" in err


def test_emulate_service_with_mutual_tls(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    devices_file = tmp_path / "devices.yaml"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "emulation.service", "--fabric", str(ROOT / "configs/fabric-4.yaml"),
         "--devices-file", str(devices_file),
         "--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key),
         "--tls-client-ca", str(pki.ca_cert), "--tls-ca", str(pki.ca_cert),
         "--tls-client-cert", str(pki.client_cert), "--tls-client-key", str(pki.client_key),
         "--tls-server-name", SERVER_NAME],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        wait_for(devices_file.exists, timeout_s=30, what="devices file")
        devices = load_devices_file(devices_file)
        assert devices["b2"].tls is not None and devices["b2"].tls.mutual
        with default_registry().create(devices["b2"]) as b2:  # P4Runtime and gNMI over mTLS
            wait_for(lambda: b2.counters().time_s > 0, what="b2's counters over mTLS")
            assert b2.groups().generation >= 1 and b2.budget().total_weight > 0
        with SwitchClient(devices["b2"].address, options=FAST) as plain, pytest.raises(
            DeviceUnavailable
        ):
            plain.device_info()
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err


def test_emulate_demand_series_cycles_through_the_files(tmp_path: Path) -> None:
    import argparse

    from emulation.service import _demand
    from optimizer.config import load_fabric
    from optimizer.traffic import dump_matrix

    model = load_fabric(ROOT / "configs/fabric-4.yaml")
    low, high = uniform_matrix(model, 0.1), uniform_matrix(model, 0.7)
    (tmp_path / "low.json").write_text(dump_matrix(low, "json"))
    (tmp_path / "high.json").write_text(dump_matrix(high, "json"))
    args = argparse.Namespace(demand=[tmp_path / "low.json", tmp_path / "high.json"],
                              demand_period=10.0)
    series = _demand(args, model)
    assert callable(series)
    assert [series(t).total() for t in (0.0, 9.9, 10.0, 25.0)] == pytest.approx(
        [low.total(), low.total(), high.total(), low.total()]
    )
    fabric = EmulatedFabric(model)
    fabric.set_demand(series)
    fabric.step(20.0)
    assert fabric.stats().offered_bytes == pytest.approx((low.total() + high.total()) * 10 * GB)
