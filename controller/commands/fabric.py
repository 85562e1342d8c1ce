"""``heliostat fabric generate|wiring|mesh|check``."""

from __future__ import annotations

import argparse
import sys

from controller.commands.output import emit, emit_json
from optimizer.config import dump_fabric_yaml, generate_fabric, load_fabric
from optimizer.fabric import Fabric
from optimizer.topology import circuits_to_json, mesh_gaps, mesh_topology, uniform_mesh


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fabric", help="generate, check and inspect fabric descriptions")
    fsub = p.add_subparsers(dest="fabric_command", required=True, metavar="ACTION")

    g = fsub.add_parser("generate", help="write a striped fabric YAML")
    g.add_argument("--blocks", type=int, required=True)
    g.add_argument("--uplinks", type=int, required=True, help="uplinks per block")
    g.add_argument("--ocs", type=int, required=True, help="number of OCSes")
    g.add_argument("--ports", type=int, required=True, help="ports per OCS")
    g.add_argument("--domains", type=int, default=1, help="failure domains (OCSes dealt evenly)")
    g.add_argument("--speed", type=float, default=100.0, help="Gbit/s per uplink")
    g.add_argument("--spines", type=int, default=0, help="static spine switches")
    g.add_argument("--spine-links", type=int, default=0, help="links from each block to each spine")
    g.add_argument("--name", default=None)
    g.add_argument("--out", default=None, help="file to write (default stdout)")
    g.set_defaults(handler=_generate)

    w = fsub.add_parser("wiring", help="print which block port is cabled to each OCS port")
    w.add_argument("fabric")
    w.add_argument("--format", choices=("json", "table"), default="table")
    w.add_argument("--out", default=None)
    w.set_defaults(handler=_wiring)

    m = fsub.add_parser("mesh", help="print the uniform-mesh circuits a fresh fabric starts with")
    m.add_argument("fabric")
    m.add_argument("--format", choices=("json", "table"), default="table")
    m.add_argument("--out", default=None)
    m.set_defaults(handler=_mesh)

    c = fsub.add_parser("check", help="validate a fabric file and print a summary")
    c.add_argument("fabric")
    c.add_argument("--format", choices=("json", "table"), default="table")
    c.set_defaults(handler=_check)


def _generate(args: argparse.Namespace) -> int:
    fab = generate_fabric(
        args.blocks,
        args.uplinks,
        args.ocs,
        args.ports,
        args.domains,
        name=args.name,
        speed_gbps=args.speed,
        spines=args.spines,
        spine_links=args.spine_links,
    )
    emit(dump_fabric_yaml(fab), args.out)
    return 0


def _wiring(args: argparse.Namespace) -> int:
    fab = load_fabric(args.fabric)
    if args.format == "json":
        emit_json([w.to_json() for w in fab.wiring], args.out)
        return 0
    lines = [f"{'ocs':<10} {'port':>5} {'side':<6} {'block':<10} {'block_port':>10}"]
    lines += [f"{w.ocs:<10} {w.port:>5} {w.side:<6} {w.block:<10} {w.block_port:>10}" for w in fab.wiring]
    emit("\n".join(lines) + "\n", args.out)
    return 0


def _mesh(args: argparse.Namespace) -> int:
    fab = load_fabric(args.fabric)
    circuits = uniform_mesh(fab)
    if args.format == "json":
        emit_json(circuits_to_json(fab, circuits), args.out)
        return 0
    topo = mesh_topology(fab)
    lines = [f"{len(circuits)} circuits; circuits per block pair:"]
    lines += [f"  {a:<10} {b:<10} {c:>5}" for a, b, c in topo.links()]
    emit("\n".join(lines) + "\n", args.out)
    return 0


def _check(args: argparse.Namespace) -> int:
    fab = load_fabric(args.fabric)
    gaps = mesh_gaps(fab)
    warnings = [_mesh_gaps_warning(args.fabric, fab, gaps)] if gaps else []
    if args.format == "json":
        emit_json({
            "valid": True,
            "file": args.fabric,
            "name": fab.name,
            "blocks": fab.n_blocks,
            "ocs": len(fab.ocs),
            "domains": len(fab.domains),
            "cabled_ports": len(fab.wiring),
            "spine_switches": len(fab.spine),
            "mesh_gaps": [list(pair) for pair in gaps],
            "warnings": warnings,
        }, None)
    else:
        print(
            f"{args.fabric}: fabric {fab.name!r} is valid: {fab.n_blocks} blocks, {len(fab.ocs)} OCSes "
            f"in {len(fab.domains)} domains, {len(fab.wiring)} cabled ports, {len(fab.spine)} spine switches"
        )
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def _mesh_gaps_warning(path: str, fab: Fabric, gaps: list[tuple[str, str]]) -> str:
    short = sorted(
        {b.name for pair in gaps for b in map(fab.block, pair) if b.uplinks < fab.n_blocks - 1},
        key=fab.block_index,
    )
    names = "every block" if len(short) == fab.n_blocks else ", ".join(short[:8]) + (
        " ..." if len(short) > 8 else ""
    )
    why = (
        f"fewer uplinks than the {fab.n_blocks - 1} other blocks ({names})"
        if short
        else "the ports do not allow it"
    )
    example = ", ".join(f"{a}-{b}" for a, b in gaps[:5]) + (" ..." if len(gaps) > 5 else "")
    return (
        f"{path}: the uniform mesh cannot join {len(gaps)} block pairs ({example}): "
        f"{why}; their traffic needs a transit block or the spine"
    )
