"""What one stage costs over NETCONF next to native gRPC: 32 removes + 32 adds on a 128-port
OCS, one apply each way. The figures are printed (``-s``); the test holds NETCONF to a bound
that ncclient's queued sends (0.1 s per RPC, two RPCs per apply) would break."""

from __future__ import annotations

import statistics
import time

from emulation.agent import ocs_agent
from emulation.clock import EmulatedClock
from emulation.ocs_device import OcsDevice
from emulation.standard.netconf import start_netconf_server
from southbound.contracts import CircuitSwitch
from southbound.grpc_native.ocs_client import OcsClient
from southbound.standard.netconf.driver import NetconfOcs
from southbound.types import CrossConnect as XC
from tests.support.netconf_support import PASSWORD, USERNAME, netconf_device
from tests.support.southbound_fixtures import FAST

STAGE = 32


def _stage_times(client: CircuitSwitch, rounds: int) -> list[float]:
    """Seconds of each apply that moves STAGE circuits to new south ports (STAGE removes + adds)."""
    circuits = [XC(i, 64 + i) for i in range(STAGE)]
    generation = client.apply(expected_generation=client.cross_connects().generation, add=circuits).generation
    times = []
    for r in range(1, rounds + 1):
        moved = [XC(i, 64 + (i + r) % STAGE) for i in range(STAGE)]
        start = time.perf_counter()
        generation = client.apply(expected_generation=generation, remove=circuits, add=moved).generation
        times.append(time.perf_counter() - start)
        circuits = moved
    return times


def test_one_stage_over_netconf_and_native() -> None:
    figures = {}
    for transport in ("grpc", "netconf"):
        device = OcsDevice("ocs-m", 128, EmulatedClock(), switching_time_s=0.0)
        if transport == "grpc":
            agent = ocs_agent(device)
            agent.start()
            client: OcsClient | NetconfOcs = OcsClient(agent.address, name="ocs-m", options=FAST)
            stop = agent.stop
        else:
            server = start_netconf_server(device, username=USERNAME, password=PASSWORD)
            client = NetconfOcs(netconf_device(server, name="ocs-m"))
            stop = server.stop
        try:
            times = _stage_times(client, rounds=5)
            assert len(client.cross_connects().cross_connects) == STAGE
        finally:
            client.close()
            stop()
            device.close()
        figures[transport] = (times[0], statistics.median(times))
    for transport, (first, median) in figures.items():
        print(f"{transport}: one apply of {STAGE} removes + {STAGE} adds: first {first * 1e3:.1f} ms, "
              f"median of 5 {median * 1e3:.1f} ms")
    assert figures["netconf"][1] < 0.08  # two RPCs; ncclient's queue alone would take 0.2 s
