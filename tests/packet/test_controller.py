"""Section 3, test 1, driven by the controller itself: ``heliostat run`` configures a fresh
packet fabric (empty OCSes, no groups) from scratch through the devices file the fabric
writes, unchanged, and then every host pings every other host.

The daemon runs as a real process (``python -m controller.cli run``); the test only reads
the devices, never configures them. SIGTERM stops it with exit code 0, and the fabric's
teardown leaves none of its bridges behind.
"""

from __future__ import annotations

import logging
import secrets
import subprocess
import time
from pathlib import Path

import pytest

from controller.reconfig.journal import Journal
from emulation.mininet.fabric import PacketFabric
from optimizer.topology import Circuit, Topology, uniform_mesh
from southbound.errors import SouthboundError
from southbound.grpc_native.ocs_client import OcsClient
from southbound.grpc_native.switch_client import SwitchClient
from tests.support.daemon_support import controller_config, start_daemon_process, stop_process, wait_for
from tests.support.packet_fixtures import FABRIC_4, ping_failures, requires_packet_fabric

pytestmark = [pytest.mark.mininet, requires_packet_fabric]

log = logging.getLogger(__name__)

CONFIGURE_TIMEOUT_S = 30.0


def tagged_bridges(tag: str) -> set[str]:
    listed = subprocess.run(["ovs-vsctl", "list-br"], capture_output=True, text=True, check=True)
    return {name for name in listed.stdout.split() if name.startswith(tag)}


def unused_tag() -> str:
    """A 4-character name tag ("hd" + 2 hex) no bridge or interface of this machine uses."""
    for _ in range(50):
        tag = "hd" + secrets.token_hex(1)
        interfaces = [p.name for p in Path("/sys/class/net").iterdir()]
        if not tagged_bridges(tag) and not any(name.startswith(tag) for name in interfaces):
            return tag
    raise RuntimeError("no unused bridge tag")


def ocs_circuits(fabric: PacketFabric) -> frozenset[Circuit]:
    circuits: set[Circuit] = set()
    for ocs in fabric.fabric.ocs:
        client = fabric.driver(ocs.name)
        assert isinstance(client, OcsClient)
        table = client.cross_connects()
        circuits |= {Circuit(ocs.name, c.a, c.b) for c in table.cross_connects - table.switching}
    return frozenset(circuits)


def source_groups(fabric: PacketFabric) -> dict[str, dict[str, dict[str, int]]]:
    tables = {}
    for block in fabric.fabric.block_names:
        client = fabric.driver(block)
        assert isinstance(client, SwitchClient)
        tables[block] = {dst: dict(hops) for dst, hops in client.groups().source.items()}
    return tables


def log_tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


def test_heliostat_run_configures_a_fresh_packet_fabric_and_every_host_pings_every_other(
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    tag = unused_tag()
    daemon_log = tmp_path / "daemon.log"
    with PacketFabric.from_config(FABRIC_4, tmp_path / "fabric", tag=tag) as fabric:
        # From scratch: nothing on the OCSes, no groups in the blocks, nobody reaches anybody.
        assert ocs_circuits(fabric) == frozenset()
        assert all(not table for table in source_groups(fabric).values())
        assert tagged_bridges(tag) == {f"{tag}{k}" for k in ("b1", "b2", "b3", "b4", "o1", "o2")}

        config = controller_config(
            tmp_path, FABRIC_4, fabric.devices_file, te_interval=1.0, toe_check_interval=3600.0
        )
        daemon = start_daemon_process(config, daemon_log)
        try:
            mesh = frozenset(uniform_mesh(fabric.fabric))
            counts = Topology.from_circuits(fabric.fabric, mesh)
            blocks = fabric.fabric.block_names

            def configured() -> bool:
                assert daemon.poll() is None, f"the daemon exited early:\n{log_tail(daemon_log)}"
                try:
                    if ocs_circuits(fabric) != mesh:
                        return False
                    tables = source_groups(fabric)
                except SouthboundError as exc:
                    log.info("reading the fabric failed (retrying): %s", exc)
                    return False
                # Every block has a group toward every other block, over mesh neighbours only.
                return all(
                    set(tables[s]) == set(blocks) - {s}
                    and all(
                        hops and all(w > 0 and counts.count(s, via) > 0 for via, w in hops.items())
                        for hops in tables[s].values()
                    )
                    for s in blocks
                )

            wait_for(configured, CONFIGURE_TIMEOUT_S, interval=0.5,
                     what="the daemon to install the mesh and push groups")
            configured_s = time.monotonic() - started

            failures = ping_failures(fabric)
            assert failures == [], f"{len(failures)} host pairs failed to ping: {failures[:8]}"

            # The controller journaled the mesh as its intent (a restart would keep it).
            journal = Journal(tmp_path / "journal.db", check=False)
            try:
                record = journal.current_topology()
                assert record is not None and frozenset(record.circuits) == mesh
            finally:
                journal.close()
        finally:
            code = stop_process(daemon)
        assert code == 0, log_tail(daemon_log)
        # Fail static: with the controller gone the fabric keeps its circuits.
        assert ocs_circuits(fabric) == mesh
    assert tagged_bridges(tag) == set()
    log.info("configured after %.1f s, whole test %.1f s", configured_s, time.monotonic() - started)
