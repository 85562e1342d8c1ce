"""A full push of one switch's groups in a 64-block fabric (63 source and 63 transit groups,
one set_groups), over P4Runtime (P4GroupWriter) and the native service (SwitchClient), in one
run: ``python -m benchmarks.standard.p4rt_push [--repeats N]``.

The first push to a fresh switch is "cold" (the P4Runtime driver also reads the P4Info and
arbitrates); the re-pushes change every group's weights (every WCMP group is modified).
Server and client share this process and the machine's cores.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.machine import machine_summary
from emulation.agent import DeviceAgent, switch_agent
from emulation.clock import EmulatedClock
from emulation.standard.p4rt import start_p4runtime
from emulation.switch_device import BlockSwitch, StaticLinks
from southbound.devices import DeviceConfig, Endpoint
from southbound.grpc_native.switch_client import SwitchClient
from southbound.options import CallOptions, RetryPolicy
from southbound.standard.p4rt.driver import P4GroupWriter
from southbound.standard.p4rt.prefixes import default_prefixes

RESULTS = Path(__file__).resolve().parents[1] / "RESULTS_p4rt.md"
BLOCKS = tuple(f"b{i:02d}" for i in range(64))
OPTIONS = CallOptions(deadline_s=60.0, retry=RetryPolicy(max_attempts=3))
Groups = dict[str, dict[str, int]]


def switch() -> BlockSwitch:
    links = StaticLinks(BLOCKS, 63)
    for port, peer in enumerate(BLOCKS[1:]):
        links.connect(BLOCKS[0], port, peer, 0)
    device = BlockSwitch("sw-b00", BLOCKS[0], BLOCKS, 63, 100.0, EmulatedClock(), links)
    device.install_current_peers()
    return device


def groups(round_: int) -> tuple[Groups, Groups]:
    """Source groups over three next hops (direct + two transits), transit groups direct;
    the weights change from one round to the next."""
    direct, side = (40, 12) if round_ % 2 == 0 else (36, 14)
    others = BLOCKS[1:]
    source = {d: {d: direct, others[(i + 1) % 63]: side, others[(i + 2) % 63]: side}
              for i, d in enumerate(others)}
    transit = {d: {d: 64 - round_ % 2} for d in others}
    return source, transit


def timed_pushes(push: Callable[[int, int], int], repeats: int) -> tuple[float, list[float]]:
    generation = 1
    times = []
    for round_ in range(repeats + 1):
        start = time.perf_counter()
        generation = push(generation, round_)
        times.append(time.perf_counter() - start)
    return times[0], times[1:]


def native(repeats: int) -> tuple[float, list[float]]:
    device = switch()
    agent: DeviceAgent = switch_agent(device)
    agent.start()
    client = SwitchClient(agent.address, name=device.name, options=OPTIONS)
    try:
        def push(generation: int, round_: int) -> int:
            source, transit = groups(round_)
            result = client.set_groups(expected_generation=generation, source=source, transit=transit)
            return result.generation
        return timed_pushes(push, repeats)
    finally:
        client.close()
        agent.stop()


def p4runtime(repeats: int) -> tuple[float, list[float]]:
    device = switch()
    prefixes = default_prefixes(BLOCKS)
    agent = start_p4runtime(device, prefixes=prefixes)
    config = DeviceConfig(name=device.name, kind="block", address="", transport="auto", options=OPTIONS,
                          endpoints=(Endpoint("p4runtime", agent.address),), prefixes=tuple(prefixes.items()))
    driver = P4GroupWriter(config)
    try:
        def push(generation: int, round_: int) -> int:
            source, transit = groups(round_)
            result = driver.set_groups(expected_generation=generation, source=source, transit=transit)
            return result.generation
        result = timed_pushes(push, repeats)
        if device.groups()[1] != groups(repeats)[0]:
            raise RuntimeError("the switch model does not hold the last push")
        return result
    finally:
        driver.close()
        agent.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10, help="re-pushes after the first (default 10)")
    parser.add_argument("--no-write", action="store_true", help="print, do not write RESULTS_p4rt.md")
    args = parser.parse_args()
    lines = [f"full push of 63 source + 63 transit groups to one switch of a 64-block fabric, "
             f"{args.repeats} re-pushes"]
    rows = []
    for name, run in (("native", native), ("p4runtime", p4runtime)):
        cold, warm = run(args.repeats)
        median = statistics.median(warm)
        rows.append((name, cold, median, min(warm), max(warm)))
        lines.append(f"{name:10s} first push {cold * 1e3:8.1f} ms   re-push median {median * 1e3:8.1f} ms"
                     f"   min {min(warm) * 1e3:8.1f} ms   max {max(warm) * 1e3:8.1f} ms")
    print("\n".join(lines))
    if not args.no_write:
        table = "\n".join(f"| {n} | {c * 1e3:.1f} ms | {m * 1e3:.1f} ms | {lo * 1e3:.1f}-{hi * 1e3:.1f} ms |"
                          for n, c, m, lo, hi in rows)
        RESULTS.write_text(f"""## WCMP groups over P4Runtime against the native service

`python -m benchmarks.standard.p4rt_push --repeats {args.repeats}` on {machine_summary()}.
One switch of a 64-block fabric gets 63 source groups (3 next hops each) and 63 transit groups
in one `set_groups`; server and client share one process. The first push to a fresh switch
also reads the P4Info and arbitrates (444 P4Runtime updates); a re-push changes every weight
(128 updates: 126 group modifications and the generation marker's two).

| driver | first push | re-push, median | re-push, range |
|---|---|---|---|
{table}
""", encoding="utf-8")


if __name__ == "__main__":
    main()
