"""Shared helpers for the southbound and emulation tests: devices served on loopback."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from emulation.agent import DeviceAgent, ocs_agent, switch_agent
from emulation.clock import EmulatedClock
from emulation.ocs_device import OcsDevice
from emulation.switch_device import BlockSwitch, StaticLinks
from southbound.grpc_native.ocs_client import OcsClient
from southbound.grpc_native.switch_client import SwitchClient
from southbound.options import CallOptions, RetryPolicy

FAST = CallOptions(deadline_s=2.0, retry=RetryPolicy(max_attempts=3, initial_backoff_s=0.01))
BLOCKS = ("a", "b", "c", "d")


def wait_for(condition: Callable[[], bool], timeout_s: float = 5.0, what: str = "") -> None:
    """Poll ``condition`` until true; fail the test after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        time.sleep(0.005)


@contextmanager
def served_ocs(
    radix: int = 16, sides: str = "split", switching_time_s: float = 0.05, **agent_kwargs: object
) -> Iterator[tuple[OcsDevice, DeviceAgent, OcsClient, EmulatedClock]]:
    clock = EmulatedClock()
    device = OcsDevice("ocs-t", radix, clock, sides=sides, switching_time_s=switching_time_s)
    agent = ocs_agent(device, **agent_kwargs)  # type: ignore[arg-type]
    agent.start()
    client = OcsClient(agent.address, name=device.name, options=FAST)
    try:
        yield device, agent, client, clock
    finally:
        client.close()
        agent.stop()
        device.close()


@contextmanager
def served_switch(
    num_ports: int = 8, **kwargs: object
) -> Iterator[tuple[BlockSwitch, DeviceAgent, SwitchClient, StaticLinks]]:
    """Block "a" with ports wired: port i -> block BLOCKS[1 + i % 3], far port i."""
    clock = EmulatedClock()
    links = StaticLinks(BLOCKS, num_ports)
    for port in range(num_ports):
        links.connect("a", port, BLOCKS[1 + port % 3], port)
    device = BlockSwitch("sw-a", "a", BLOCKS, num_ports, 100.0, clock, links, **kwargs)  # type: ignore[arg-type]
    device.install_current_peers()
    agent = switch_agent(device)
    agent.start()
    client = SwitchClient(agent.address, name=device.name, options=FAST)
    try:
        yield device, agent, client, links
    finally:
        client.close()
        agent.stop()
