"""``heliostat emulate --packet``'s entry point: it brings the fabric up, writes a devices
file that the drivers use, and leaves nothing behind when it ends."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from emulation.mininet import cli
from southbound.devices import load_devices_file
from southbound.registry import default_registry
from tests.support.packet_fixtures import FABRIC_4, requires_packet_fabric

pytestmark = [pytest.mark.mininet, requires_packet_fabric]


TAG = "tcl"  # names this test's bridges, so fabrics other runs build beside it don't count


def bridges() -> set[str]:
    listed = subprocess.run(["ovs-vsctl", "list-br"], capture_output=True, text=True, check=True)
    return {name for name in listed.stdout.split() if name.startswith(TAG)}


def test_cli_runs_the_fabric_for_a_while_and_cleans_up(tmp_path: Path) -> None:
    devices_file = tmp_path / "devices.yaml"
    before = bridges()
    seen: dict[str, object] = {}

    def probe_while_running() -> None:  # the CLI blocks; look at the fabric meanwhile
        for _ in range(600):
            if devices_file.exists():
                devices = load_devices_file(devices_file)
                with default_registry().create(devices["b1"]) as b1:
                    seen["peers"] = {p.peer_block for p in b1.ports()}
                seen["bridges"] = bridges() - before
                return
            threading.Event().wait(0.1)

    watcher = threading.Thread(target=probe_while_running)
    watcher.start()
    code = cli.main(["--packet", "--fabric", str(FABRIC_4), "--bootstrap", "--duration", "4",
                     "--tag", TAG, "--devices-file", str(devices_file), "--workdir", str(tmp_path / "work")])
    watcher.join()
    assert code == 0
    assert seen["peers"] == {"b2", "b3", "b4"}  # the mesh is up: b1 hears every other block
    assert seen["bridges"] == {f"{TAG}{kind}" for kind in ("b1", "b2", "b3", "b4", "o1", "o2")}
    assert bridges() == before


def test_cli_refuses_a_fabric_it_cannot_build(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from optimizer.config import dump_fabric_yaml, generate_fabric

    too_big = tmp_path / "fabric-251.yaml"  # one 10.<b>.0.0/16 per block: at most 250
    too_big.write_text(dump_fabric_yaml(generate_fabric(blocks=251, uplinks=2, ocs=1, ports=502)))
    code = cli.main(["--fabric", str(too_big), "--duration", "1",
                     "--devices-file", str(tmp_path / "d.yaml")])
    assert code == 2 and "250 blocks" in capsys.readouterr().err
    assert not (tmp_path / "d.yaml").exists()


def test_cli_serves_hybrid_8_with_its_spine_switches(tmp_path: Path) -> None:
    """``heliostat emulate --packet --fabric configs/fabric-hybrid-8.yaml``: every device,
    the two spine switches included, answers a reflection client; the spine switches hear
    every block and the blocks hear them."""
    import grpc
    from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
        ProtoReflectionDescriptorDatabase,
    )

    devices_file = tmp_path / "devices.yaml"
    before = bridges()
    seen: dict[str, object] = {}

    def probe_while_running() -> None:
        for _ in range(1200):
            if devices_file.exists():
                devices = load_devices_file(devices_file)
                seen["kinds"] = {n: d.kind for n, d in devices.items() if d.kind == "spine"}
                with grpc.insecure_channel(devices["s2"].address) as channel:
                    seen["services"] = set(ProtoReflectionDescriptorDatabase(channel).get_services())
                with default_registry().create(devices["s2"]) as s2:
                    seen["s2 peers"] = {p.peer_block for p in s2.ports()}
                with default_registry().create(devices["b8"]) as b8:
                    seen["b8 peers"] = {p.peer_block for p in b8.ports()}
                seen["bridges"] = bridges() - before
                return
            threading.Event().wait(0.1)

    watcher = threading.Thread(target=probe_while_running)
    watcher.start()
    code = cli.main(["--packet", "--fabric", str(FABRIC_4.with_name("fabric-hybrid-8.yaml")), "--bootstrap",
                     "--duration", "6", "--tag", TAG, "--devices-file", str(devices_file),
                     "--workdir", str(tmp_path / "work")])
    watcher.join()
    assert code == 0
    assert seen["kinds"] == {"s1": "spine", "s2": "spine"}
    assert "heliostat.southbound.v1.PacketSwitchService" in seen["services"]  # type: ignore[operator]
    assert seen["s2 peers"] == {f"b{i}" for i in range(1, 9)}
    assert seen["b8 peers"] == {f"b{i}" for i in range(1, 8)} | {"s1", "s2"}
    assert len(seen["bridges"]) == 14  # type: ignore[arg-type]
    assert bridges() == before
