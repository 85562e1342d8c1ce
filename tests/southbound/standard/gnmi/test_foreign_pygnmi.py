"""A foreign client, pygnmi 0.8.15 (its own environment: tests/support/foreign.py), reads the
emulated switch's gNMI target: capabilities, in-octets by Get, out-octets samples by a
STREAM subscription while the traffic flows; its values are checked against the device."""

from __future__ import annotations

import itertools
import threading

import numpy as np
import pytest

from emulation.counters import switch_counters
from tests.support.foreign import run_foreign
from tests.support.gnmi_support import served_gnmi_target


@pytest.mark.slow
def test_pygnmi_reads_capabilities_counters_and_samples() -> None:
    with served_gnmi_target(num_ports=4) as (device, agent, _, _):
        device.preset_counter("rx_bytes", np.array([11, 22, 33, 2**40], dtype=np.uint64))
        stop = threading.Event()

        def flow() -> None:  # traffic while pygnmi samples: 1000 bytes per port every 20 ms
            step = 0
            while not stop.wait(0.02):
                step += 1
                device.add_traffic(np.full(4, 1000.0), np.zeros(4), np.zeros(4), np.zeros(4), 0.0,
                                   as_of=float(step))

        mover = threading.Thread(target=flow, daemon=True)
        mover.start()
        try:
            out = run_foreign("pygnmi_counters.py", agent.address, "4", "100", timeout_s=120)
        finally:
            stop.set()
            mover.join()
        final = switch_counters(device.counters())
    capabilities = out["capabilities"]
    assert capabilities["gnmi_version"] == "0.10.0"
    assert set(capabilities["supported_encodings"]) == {"json_ietf", "proto"}
    assert "openconfig-interfaces" in {m["name"] for m in capabilities["supported_models"]}
    in_octets = {k.split("name=")[1].split("]")[0]: int(v) for k, v in out["in_octets"].items()}
    assert in_octets == {"Ethernet0": 11, "Ethernet1": 22, "Ethernet2": 33, "Ethernet3": 2**40}
    samples = out["samples"]
    assert len(samples) == 4 and all(len(s["values"]) == 4 for s in samples)
    totals = [sorted(s["values"].values()) for s in samples]
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(totals))  # monotonic
    assert totals[-1][0] > totals[0][0]  # the counters moved between samples
    assert totals[-1][-1] <= final.ports[0].tx_bytes
    stamps = [s["timestamp"] for s in samples]
    assert stamps == sorted(stamps) and stamps[-1] > stamps[0]
