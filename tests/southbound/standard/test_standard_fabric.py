"""The emulated fabric over the standard protocols, as the controller reads it: each capability
through the protocol the devices file names, and per-destination rates that match the offered
traffic while the emulated clock runs on its own (bytes read over P4Runtime as each gNMI sample
arrives, so they carry that sample's time)."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from emulation.fabric import EmulatedFabric
from emulation.service import run as run_fabric
from optimizer.traffic import uniform_matrix
from southbound.devices import load_devices_file
from southbound.registry import default_registry
from southbound.types import SwitchCounters
from tests.support import ROOT

GBIT = 1e9 / 8  # bytes per second in one Gbit/s


def _rates(first: SwitchCounters, last: SwitchCounters) -> dict[str, float]:
    dt = last.time_s - first.time_s
    return {d: (last.egress_bytes[d] - first.egress_bytes.get(d, 0)) / dt / GBIT for d in last.egress_bytes}


@pytest.mark.slow
def test_per_destination_rates_over_p4runtime_and_gnmi_follow_the_offered_matrix() -> None:
    fabric_file = ROOT / "configs/fabric-4.yaml"
    with EmulatedFabric.from_config(fabric_file, protocols="standard", tick_s=0.25) as fabric:
        matrix = uniform_matrix(fabric.fabric, load=0.4)
        fabric.set_demand(matrix)
        devices = load_devices_file(fabric.devices_file)
        assert devices["b1"].endpoint("gnmi") is not None and devices["b1"].prefix_of("b2") is not None
        others = [b for b in fabric.fabric.block_names if b != "b1"]
        stop = threading.Event()
        clock = threading.Thread(target=run_fabric, args=(fabric, stop),
                                 kwargs={"speed": 20.0, "duration_s": 0.0}, daemon=True)
        with default_registry().switch(devices["b1"]) as b1:
            b1.set_groups(expected_generation=b1.groups().generation, source={d: {d: 1} for d in others})
            clock.start()
            try:
                readings = []
                for _ in range(8):  # polls at 0.7 s: out of phase with the 0.5 s samples
                    time.sleep(0.7)
                    readings.append(b1.counters())
            finally:
                stop.set()
                clock.join(timeout=5)
    offered = {d: matrix.demand("b1", d) for d in others}
    assert set(readings[-1].egress_bytes) == set(others)
    for first, last in itertools.pairwise(readings[2:]):  # after the routes' first sample
        if last.time_s == first.time_s:
            continue  # no new sample between the two polls
        rates = _rates(first, last)
        for d in others:
            assert rates[d] == pytest.approx(offered[d], rel=0.05), (d, rates, offered)
