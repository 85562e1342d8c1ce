"""Southbound and emulation benchmarks (``python -m benchmarks.bench_southbound``).

- apply 10,000 cross-connects across the 256 emulated OCSes of the 64-block fabric, as
  one call per cross-connect and as one batched call per OCS;
- push 4,032 next-hop groups (63 per block) to the 64 blocks, one call per group and one
  call per block;
- the time of one data-plane step for 64 blocks.

Devices and clients share this process (and the machine's cores): the figures include
both ends of every call. Results go to benchmarks/RESULTS_southbound.md.
"""

from __future__ import annotations

import argparse
import logging
import random
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks.machine import machine_summary
from emulation.fabric import EmulatedFabric
from optimizer.config import load_fabric
from optimizer.topology import Circuit, uniform_mesh
from optimizer.traffic import uniform_matrix
from southbound.options import CallOptions, RetryPolicy
from southbound.types import CrossConnect

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OPTIONS = CallOptions(deadline_s=30.0, retry=RetryPolicy(max_attempts=3))
log = logging.getLogger(__name__)


def pick_circuits(circuits: tuple[Circuit, ...], total: int) -> dict[str, list[Circuit]]:
    """``total`` circuits spread round-robin over the OCSes."""
    by_ocs: dict[str, list[Circuit]] = {}
    for c in circuits:
        by_ocs.setdefault(c.ocs, []).append(c)
    picked: dict[str, list[Circuit]] = {name: [] for name in by_ocs}
    cursor = 0
    while sum(len(v) for v in picked.values()) < total:
        for name, pool in by_ocs.items():
            if cursor < len(pool) and sum(len(v) for v in picked.values()) < total:
                picked[name].append(pool[cursor])
        cursor += 1
    return picked


def timed(fn: Callable[[], int]) -> tuple[float, int]:
    started = time.perf_counter()
    calls = fn()
    return time.perf_counter() - started, calls


def bench_cross_connects(fabric: EmulatedFabric, picked: dict[str, list[Circuit]],
                         workers: int, batched: bool) -> tuple[float, int]:
    clients = {name: fabric.ocs_client(name, OPTIONS) for name in picked}

    def one_ocs(name: str) -> int:
        client = clients[name]
        generation = client.cross_connects().generation
        connects = [CrossConnect(c.a, c.b) for c in picked[name]]
        if batched:
            client.apply(expected_generation=generation, add=connects)
            return 1
        for connect in connects:
            generation = client.apply(expected_generation=generation, add=[connect]).generation
        return len(connects)

    try:
        with ThreadPoolExecutor(workers) as pool:
            return timed(lambda: sum(pool.map(one_ocs, picked)))
    finally:
        for client in clients.values():
            client.close()


def groups_for(fabric: EmulatedFabric, block: str) -> dict[str, dict[str, int]]:
    """A WCMP group per destination: direct (weight 32) plus two one-transit paths through
    random blocks (16 each), 64 entries in all."""
    names = fabric.fabric.block_names
    rng = random.Random(names.index(block))
    out = {}
    for dest in names:
        if dest == block:
            continue
        vias = rng.sample([v for v in names if v not in (block, dest)], 2)
        out[dest] = {dest: 32, vias[0]: 16, vias[1]: 16}
    return out


def bench_groups(fabric: EmulatedFabric, workers: int, per_group: bool) -> tuple[float, int]:
    blocks = fabric.fabric.block_names
    clients = {b: fabric.switch_client(b, OPTIONS) for b in blocks}
    tables = {b: groups_for(fabric, b) for b in blocks}

    def one_block(block: str) -> int:
        client = clients[block]
        generation = client.groups().generation
        if not per_group:
            client.set_groups(expected_generation=generation, source=tables[block])
            return 1
        for dest, group in tables[block].items():
            generation = client.set_groups(
                expected_generation=generation, source={dest: group}, replace=False
            ).generation
        return len(tables[block])

    try:
        with ThreadPoolExecutor(workers) as pool:
            return timed(lambda: sum(pool.map(one_block, blocks)))
    finally:
        for client in clients.values():
            client.close()


def bench_step(fabric: EmulatedFabric, repeats: int) -> list[float]:
    fabric.set_demand(uniform_matrix(fabric.fabric, 0.6))
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fabric.step(1.0)
        times.append(time.perf_counter() - started)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fabric", type=Path, default=ROOT / "configs/fabric-64.yaml")
    parser.add_argument("--cross-connects", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=8, help="client threads")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS_southbound.md")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    model = load_fabric(args.fabric)
    mesh = uniform_mesh(model)
    picked = pick_circuits(mesh, args.cross_connects)
    rows: list[tuple[str, str, str, str]] = []

    for batched in (False, True):
        with EmulatedFabric(model, circuits=(), switching_time_s=0.05) as fabric:
            seconds, calls = bench_cross_connects(fabric, picked, args.workers, batched)
            applied = sum(len(fabric.ocs[n].established(float("inf"))) for n in picked)
            if applied != args.cross_connects:
                raise RuntimeError(f"applied {applied} cross-connects, not {args.cross_connects}")
        how = "1 call per OCS (batched)" if batched else "1 call per cross-connect"
        rows.append((f"apply {args.cross_connects:,} cross-connects on {len(picked)} OCS, {how}",
                     f"{seconds:.2f} s", f"{calls:,}", f"{calls / seconds:,.0f}"))
        print(rows[-1])

    n_groups = model.n_blocks * (model.n_blocks - 1)
    with EmulatedFabric(model) as fabric:
        for per_group in (True, False):
            seconds, calls = bench_groups(fabric, args.workers, per_group)
            how = "1 call per group" if per_group else "1 call per block"
            rows.append((f"push {n_groups:,} groups to {model.n_blocks} blocks, {how}",
                         f"{seconds:.2f} s", f"{calls:,}", f"{calls / seconds:,.0f}"))
            print(rows[-1])
        step_times = bench_step(fabric, args.steps)
        stats = fabric.stats()
    median = statistics.median(step_times)
    rows.append((f"one data-plane step, {model.n_blocks} blocks, {len(mesh):,} circuits, "
                 "WCMP with transit", f"{median * 1000:.1f} ms (median of {len(step_times)}; "
                 f"max {max(step_times) * 1000:.1f} ms)", "-", "-"))
    print(rows[-1], f"mlu={stats.mlu:.3f}")
    conserved = stats.delivered_bytes + stats.dropped_bytes + stats.blackholed_bytes
    if abs(conserved - stats.offered_bytes) > 1e-6 * stats.offered_bytes:
        raise RuntimeError("the data plane lost bytes")

    lines = [
        "## Southbound and emulation",
        "",
        f"`python -m benchmarks.bench_southbound` on {machine_summary()}.",
        f"Fabric {model.name} ({model.n_blocks} blocks, {len(model.ocs)} OCS); emulated devices",
        f"and {args.workers} client threads in one process, real loopback gRPC, plaintext.",
        "The data-plane steps offer a uniform matrix at 60% of uplink capacity over the pushed",
        f"groups (half direct, half through two random transit blocks): MLU {stats.mlu:.2f}.",
        "",
        "| what | time | calls | calls/s |",
        "| --- | --- | --- | --- |",
        *(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows),
        "",
    ]
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
