"""Device counters: whole units, carried fractions, 64-bit wrap, and over gRPC."""

from __future__ import annotations

import itertools

import numpy as np

from emulation.counters import CounterArray
from tests.support.southbound_fixtures import served_switch


def test_fractions_carry_over_and_totals_never_decrease() -> None:
    counter = CounterArray(2)
    seen = []
    for _ in range(10):
        counter.add(np.array([0.5, 1.75]))
        seen.append(counter.values().copy())
    assert seen[-1].tolist() == [5, 17]
    assert all((b >= a).all() for a, b in itertools.pairwise(seen))
    counter.add(-5.0)  # negative amounts are ignored
    assert counter.values().tolist() == [5, 17]


def test_counters_wrap_at_two_to_the_64() -> None:
    counter = CounterArray(1)
    counter.set(2**64 - 10)
    counter.add(25.0)
    assert counter.values().tolist() == [15]


def test_wrapped_counter_is_served_as_uint64() -> None:
    with served_switch(num_ports=2) as (device, _, client, _):
        device.preset_counter("tx_bytes", np.array([2**64 - 1, 5], dtype=np.uint64))
        assert client.counters().ports[0].tx_bytes == 2**64 - 1
        device.add_traffic(np.array([3.0, 1.0]), np.zeros(2), np.zeros(2), np.zeros(4), 0.0)
        ports = client.counters().ports
    assert ports[0].tx_bytes == 2 and ports[1].tx_bytes == 6
