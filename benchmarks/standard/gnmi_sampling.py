"""What sampling a fabric's port counters over gNMI costs the controller
(``python -m benchmarks.standard.gnmi_sampling``).

64 emulated switches of 64 ports each are served by gNMI targets in a child process (so the
figures below are the controller's alone); this process runs one GnmiSwitch per switch, each
with its STREAM subscription sampling the six counter leaves of every port every second, and
reads every switch's counters once a second as the controller's sensing loop does. The data
plane moves every counter in the child 10 times a second.

Measured over the run: the CPU share of this process (sampler threads, gRPC, the readings;
in cores), the fraction of the expected values received (switches x ports x 6 leaves per
interval), the share of readings answered and the age of the newest sample they returned,
and the child's CPU share for scale. Results go to benchmarks/RESULTS_gnmi.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.machine import machine_summary
from southbound.devices import DeviceConfig
from southbound.errors import SouthboundError
from southbound.options import CallOptions, RetryPolicy
from southbound.standard.gnmi.driver import GnmiSwitch
from southbound.standard.gnmi.paths import COUNTER_LEAVES

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RESULTS = HERE.parent / "RESULTS_gnmi.md"
OPTIONS = CallOptions(deadline_s=10.0, retry=RetryPolicy(max_attempts=3))
log = logging.getLogger(__name__)


def serve(switches: int, ports: int, interval_s: float) -> None:
    """The child: the targets, their data plane; addresses on stdout, then its CPU share once
    stdin closes."""
    from emulation.clock import EmulatedClock
    from emulation.standard.gnmi.target import gnmi_agent
    from emulation.switch_device import BlockSwitch, StaticLinks

    blocks = [f"b{i}" for i in range(switches)]
    links = StaticLinks(blocks, ports)
    for i, block in enumerate(blocks):
        for port in range(ports):
            far = blocks[(i + 1 + port) % switches]
            if far != block and int(links.link_state(block).peer_node[port]) < 0 \
                    and int(links.link_state(far).peer_node[port]) < 0:
                links.connect(block, port, far, port)
    clock = EmulatedClock()
    devices = [BlockSwitch(f"sw-{b}", b, blocks, ports, 100.0, clock, links) for b in blocks]
    agents = []
    for device in devices:
        agent, _ = gnmi_agent(device, sample_interval_s=interval_s)
        agent.start()
        agents.append(agent)
    stop = threading.Event()

    def data_plane() -> None:
        rng = np.random.default_rng(1)
        while not stop.wait(0.1):
            now = clock.advance(0.1)
            for device in devices:
                tx = rng.uniform(0, 1.25e9, ports)  # up to 100 Gb/s for 0.1 s
                device.add_traffic(tx, tx, tx * 1e-4, np.zeros(switches), 0.0, as_of=now)

    threading.Thread(target=data_plane, daemon=True).start()
    print(json.dumps([a.address for a in agents]), flush=True)
    started, cpu = time.monotonic(), time.process_time()
    sys.stdin.read()
    share = (time.process_time() - cpu) / (time.monotonic() - started)
    stop.set()
    for agent in agents:
        agent.stop(0)
    print(json.dumps({"cpu_cores": share}), flush=True)


def measure(switches: int, ports: int, interval_s: float, seconds: float, encoding: str) -> dict[str, Any]:
    child = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.standard.gnmi_sampling", "--serve", "--switches", str(switches),
         "--ports", str(ports), "--interval", str(interval_s)],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        addresses = json.loads(child.stdout.readline())
        drivers = [GnmiSwitch(DeviceConfig(name=f"sw-{i}", kind="block", address=a, transport="gnmi",
                                           options=OPTIONS), sample_interval_s=interval_s, encoding=encoding)
                   for i, a in enumerate(addresses)]
        try:
            for d in drivers:  # warm up: every stream synced
                d.counters()
            received = [d.sampler.updates for d in drivers]
            wall, cpu = time.monotonic(), time.process_time()
            answered, asked, ages, read_s = 0, 0, [], []
            while time.monotonic() - wall < seconds:
                tick = time.monotonic()
                for d in drivers:
                    asked += 1
                    try:
                        reading = d.counters()
                    except SouthboundError as exc:
                        log.warning("%s", exc)
                        continue
                    answered += len(reading.ports) == ports
                    ages.append(time.monotonic() - d.sampler.latest().received_s)
                read_s.append(time.monotonic() - tick)
                time.sleep(max(0.0, interval_s - (time.monotonic() - tick)))
            elapsed = time.monotonic() - wall
            cpu_cores = (time.process_time() - cpu) / elapsed
            got = sum(d.sampler.updates for d in drivers) - sum(received)
        finally:
            for d in drivers:
                d.close()
        expected = switches * ports * len(COUNTER_LEAVES) * elapsed / interval_s
    finally:
        child.stdin.close()
        tail = child.stdout.read().strip().splitlines()
        child.wait(60)
    return {
        "switches": switches, "ports": ports, "interval_s": interval_s, "seconds": elapsed,
        "encoding": encoding,
        "controller_cpu_cores": cpu_cores, "values_received": got, "values_expected": expected,
        "fraction_received": got / expected, "readings_answered": answered / asked,
        "read_all_ms_median": 1000 * statistics.median(read_s),
        "sample_age_s_median": statistics.median(ages), "sample_age_s_max": max(ages),
        "target_cpu_cores": json.loads(tail[-1])["cpu_cores"] if tail else float("nan"),
    }


ROWS: list[tuple[str, Any]] = [
    ("controller CPU (sampler threads, gRPC, readings)",
     lambda r: f"{r['controller_cpu_cores']:.3f} cores ({100 * r['controller_cpu_cores']:.1f}% of one core)"),
    ("values received / expected", lambda r: f"{r['values_received']:,} / {r['values_expected']:,.0f} "
                                             f"= {100 * r['fraction_received']:.1f}%"),
    ("readings answered with every port", lambda r: f"{100 * r['readings_answered']:.1f}%"),
    ("time to read every switch's latest sample (median)", lambda r: f"{r['read_all_ms_median']:.1f} ms"),
    ("age of the newest sample at reading (median / max)",
     lambda r: f"{r['sample_age_s_median']:.2f} s / {r['sample_age_s_max']:.2f} s"),
    ("gNMI targets' CPU (child process)", lambda r: f"{r['target_cpu_cores']:.3f} cores"),
]


def write_results(results: list[dict[str, Any]], command: str) -> None:
    r = results[0]
    head = " | ".join(x["encoding"].upper() for x in results)
    table = "\n".join(f"| {what} | " + " | ".join(show(x) for x in results) + " |" for what, show in ROWS)
    RESULTS.write_text(f"""## gNMI counter sampling

`{command}` on {machine_summary()}.
{r['switches']} switches x {r['ports']} ports, STREAM subscription of the 6 OpenConfig counter
leaves of every port in SAMPLE mode every {r['interval_s']:g} s, one GnmiSwitch (one channel, one
sampler thread) per switch; every switch's counters read once per interval. The gNMI targets
run in a child process on the same 2 cores (their CPU is the last row, for scale); the
machine is shared with other work. Each encoding ran for {r['seconds']:.0f} s after every
stream had synced.

| what | {head} |
| --- | {" | ".join("---" for _ in results)} |
{table}
""")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--switches", type=int, default=64)
    parser.add_argument("--ports", type=int, default=64)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--encodings", default="json_ietf,proto", help="comma-separated, one run each")
    parser.add_argument("--serve", action="store_true", help="(internal) run the targets")
    parser.add_argument("--no-write", action="store_true", help="print, do not write RESULTS_gnmi.md")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.serve:
        serve(args.switches, args.ports, args.interval)
        return
    results = []
    for encoding in args.encodings.split(","):
        results.append(measure(args.switches, args.ports, args.interval, args.seconds, encoding))
        print(json.dumps(results[-1]), flush=True)
    if not args.no_write:
        write_results(results, "python -m benchmarks.standard.gnmi_sampling " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    main()
