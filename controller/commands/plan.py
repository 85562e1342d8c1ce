"""``heliostat plan``: TE weights and the MLU they give, for a fabric and a traffic matrix."""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager

from controller.commands.output import emit, emit_json, read_json
from optimizer.config import load_plannable_fabric
from optimizer.errors import ConfigError
from optimizer.limits import MAX_TABLE_SIZE
from optimizer.te import DEFAULT_MAX_OVERSUBSCRIPTION, DEFAULT_TABLE_SIZE, TeResult, solve_te
from optimizer.topology import topology_from_json
from optimizer.traffic import load_matrix

ARGS = "<command line>"
TABLE_GROUPS = 20
TABLE_LINKS = 10


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="compute WCMP weights (traffic engineering) for a traffic matrix")
    p.add_argument("--fabric", required=True, help="fabric YAML")
    p.add_argument("--demand", required=True, help="traffic matrix (CSV src,dst,gbps or JSON)")
    p.add_argument("--topology", default=None, help="JSON with a topology object (default: uniform mesh)")
    p.add_argument("--hedge", type=float, default=None, help="hedging S in (0, 1]; default: plain min-MLU")
    p.add_argument(
        "--table-size", type=int, default=DEFAULT_TABLE_SIZE, help="group table entries per (src, dst) group"
    )
    p.add_argument(
        "--max-oversubscription",
        type=float,
        default=DEFAULT_MAX_OVERSUBSCRIPTION,
        help="over-subscription the weight reduction aims to stay within",
    )
    p.add_argument("--no-spine", action="store_true", help="route over OCS circuits only")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--out", default=None, help="file to write (default stdout)")
    p.add_argument(
        "--plot", default=None, metavar="FILE.png",
        help="PNG of the traffic matrix, the topology and link utilisation",
    )
    p.set_defaults(handler=_plan)


def _check_args(args: argparse.Namespace) -> None:
    if args.hedge is not None and not 0.0 < args.hedge <= 1.0:
        raise ConfigError(ARGS, "--hedge", f"must be in (0, 1], got {args.hedge}")
    if not 1 <= args.table_size <= MAX_TABLE_SIZE:
        problem = f"must be from 1 to {MAX_TABLE_SIZE:,}, got {args.table_size}"
        raise ConfigError(ARGS, "--table-size", problem)
    if not args.max_oversubscription >= 1.0:
        raise ConfigError(ARGS, "--max-oversubscription", f"must be >= 1, got {args.max_oversubscription}")


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """The cyclic garbage collector paused (reference counting still frees everything): a
    64-block plan makes ~100k small objects (YAML nodes, 32k wired ports, 16k mesh circuits)
    and the collector's full passes over them found nothing to free but took ~6% of the
    process. Restored as it was on the way out, so an in-process caller (tests) is untouched."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _plan(args: argparse.Namespace) -> int:
    with no_cyclic_gc():
        return _plan_uncollected(args)


def _plan_uncollected(args: argparse.Namespace) -> int:
    _check_args(args)
    plot = None
    if args.plot is not None:
        from controller.ui.plots import check_plot_path

        plot = check_plot_path(args.plot)
    fabric = load_plannable_fabric(args.fabric)
    tm = load_matrix(args.demand, fabric)
    topology = None
    if args.topology is not None:
        topology = topology_from_json(read_json(args.topology), fabric, args.topology)
    started = time.perf_counter()
    result = solve_te(
        fabric,
        topology,
        tm,
        spine=() if args.no_spine else None,
        hedge=args.hedge,
        table_size=args.table_size,
        max_oversubscription=args.max_oversubscription,
    )
    seconds = time.perf_counter() - started
    if plot is not None:
        from controller.ui.plots import plot_te

        plot_te(plot, tm, result)
    if args.format == "json":
        data = result.to_json()
        data["solver"]["seconds"] = round(seconds, 3)
        emit_json(data, args.out)
    else:
        emit(format_table(result, seconds), args.out)
    return 0


def format_table(result: TeResult, seconds: float) -> str:
    """A readable summary: the figures, the busiest links and the biggest groups."""
    scale = result.scale_factor
    baseline = (
        f"{result.baseline_mlu:.4f}" if result.baseline_mlu != float("inf") else "n/a (a demand has no path)"
    )
    hedge = "none (plain min-MLU)" if result.hedge is None else f"S = {result.hedge:g}"
    lines = [
        f"fabric {result.fabric}: {len(result.topology.blocks)} blocks, "
        f"{result.topology.total_circuits()} circuits",
        f"demand: {result.total_demand_gbps:.1f} Gbit/s, hedging: {hedge}",
        "",
        f"  MLU (LP)                {result.mlu:.4f}",
        f"  MLU (integer weights)   {result.mlu_quantized:.4f}",
        f"  over-subscription       {result.oversubscription:.4f}  "
        f"(aim {result.max_oversubscription:g}, table size {result.table_size})",
        f"  scale factor            {'n/a (no demand)' if scale is None else f'{scale:.4f}'}"
        + ("  (the matrix does not fit: MLU > 1)" if scale is not None and scale < 1 else ""),
        f"  stretch                 {result.stretch:.4f} block hops",
        f"  baseline MLU            {baseline}  (uniform mesh, ECMP over all paths)",
        f"  solve time              {seconds:.2f} s",
        "",
        "busiest links (integer weights):",
    ]
    links = sorted(result.links, key=lambda link: -link.utilisation)[:TABLE_LINKS]
    lines += [
        f"  {link.src:>8} -> {link.dst:<8} {link.capacity_gbps:>9.0f} Gbit/s  {link.utilisation:.4f}"
        for link in links
    ]
    groups = sorted(result.groups, key=lambda g: -g.demand_gbps)
    shown = [g for g in groups if g.demand_gbps > 0][:TABLE_GROUPS]
    lines += ["", "largest groups (src -> dst: via:weight ...):"]
    for g in shown:
        hops = " ".join(f"{h.via}:{h.weight}" for h in g.next_hops)
        lines.append(f"  {g.src:>8} -> {g.dst:<8} {g.demand_gbps:>9.1f} Gbit/s  {hops}")
    if len(groups) > len(shown):
        lines.append(f"  ... {len(groups) - len(shown)} more groups (use --format json for all)")
    return "\n".join(lines) + "\n"
