"""An independent checker of circuits against a fabric's raw wiring list.

It shares no code with the mapping (nor with ``optimizer.topology.check_circuits``): it
reads only plain data, the wiring as ``(ocs, port, block, side)`` rows and each OCS's
``sides`` and ``domain``, and verifies every wiring rule on its own:

- the OCS exists and both ports are cabled;
- the two ports differ and belong to different blocks;
- on a split OCS one port is north and the other south;
- no port is used by two circuits;
- the circuits realise the wanted block-pair counts exactly;
- per failure domain, no pair holds more than ``ceil(L * domain_ports / all_ports)``
  of its ``L`` circuits, so losing any one domain keeps at least
  ``floor(L * (1 - domain share))``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping


def wiring_rows(fabric) -> list[tuple[str, int, str, str]]:
    """The raw wiring as plain tuples, read from the JSON form the CLI prints."""
    return [(w["ocs"], w["port"], w["block"], w["side"]) for w in (p.to_json() for p in fabric.wiring)]


def ocs_rows(fabric) -> dict[str, tuple[str, int]]:
    """OCS name -> (sides, domain) as plain values."""
    return {o.name: (str(o.sides.value), int(o.domain)) for o in fabric.ocs}


def circuit_rows(circuits: Iterable) -> list[tuple[str, int, int]]:
    return [(c.ocs, int(c.a), int(c.b)) for c in circuits]


def check_wiring_rules(
    wiring: list[tuple[str, int, str, str]],
    ocs: Mapping[str, tuple[str, int]],
    circuits: list[tuple[str, int, int]],
) -> list[str]:
    """Every violated wiring rule, as readable strings (empty when all hold)."""
    cabled = {(o, p): (block, side) for o, p, block, side in wiring}
    problems: list[str] = []
    used: Counter[tuple[str, int]] = Counter()
    for i, (o, a, b) in enumerate(circuits):
        if o not in ocs:
            problems.append(f"circuit {i}: unknown OCS {o}")
            continue
        end_a, end_b = cabled.get((o, a)), cabled.get((o, b))
        if end_a is None or end_b is None:
            problems.append(f"circuit {i}: uncabled port on {o} ({a}, {b})")
            continue
        if a == b:
            problems.append(f"circuit {i}: both ends are port {a}")
        (block_a, side_a), (block_b, side_b) = end_a, end_b
        if block_a == block_b:
            problems.append(f"circuit {i}: joins block {block_a} to itself")
        if ocs[o][0] == "split" and {side_a, side_b} != {"north", "south"}:
            problems.append(f"circuit {i}: ports {a} ({side_a}) and {b} ({side_b}) are not north-south")
        used[(o, a)] += 1
        used[(o, b)] += 1
    problems += [f"port {p} of {o} is used {k} times" for (o, p), k in used.items() if k > 1]
    return problems


def pair_counts(
    wiring: list[tuple[str, int, str, str]], circuits: list[tuple[str, int, int]]
) -> Counter[tuple[str, str]]:
    cabled = {(o, p): block for o, p, block, _ in wiring}
    counts: Counter[tuple[str, str]] = Counter()
    for o, a, b in circuits:
        x, y = sorted((cabled[(o, a)], cabled[(o, b)]))
        counts[(x, y)] += 1
    return counts


def domain_balance_problems(
    wiring: list[tuple[str, int, str, str]],
    ocs: Mapping[str, tuple[str, int]],
    circuits: list[tuple[str, int, int]],
) -> list[str]:
    """Pairs holding more than their share of circuits in one failure domain."""
    cabled = {(o, p): block for o, p, block, _ in wiring}
    ports_in: Counter[int] = Counter(ocs[o][1] for o, _, _, _ in wiring)
    all_ports = sum(ports_in.values())
    total: Counter[tuple[str, str]] = Counter()
    per_domain: Counter[tuple[int, str, str]] = Counter()
    for o, a, b in circuits:
        x, y = sorted((cabled[(o, a)], cabled[(o, b)]))
        total[(x, y)] += 1
        per_domain[(ocs[o][1], x, y)] += 1
    problems = []
    for (d, x, y), k in per_domain.items():
        count = total[(x, y)]
        allowed = -(-count * ports_in[d] // all_ports)  # ceil without floats
        if k > allowed:
            problems.append(f"{x}-{y}: {k} of {count} circuits in domain {d} (at most {allowed})")
    return problems


def check_mapping(fabric, circuits, wanted: Mapping[tuple[str, str], int]) -> list[str]:
    """Wiring rules plus exact realisation of ``wanted`` ({(a, b): count}, a < b)."""
    wiring = wiring_rows(fabric)
    rows = circuit_rows(circuits)
    problems = check_wiring_rules(wiring, ocs_rows(fabric), rows)
    if problems:
        return problems
    got = pair_counts(wiring, rows)
    want = {(min(k), max(k)): v for k, v in wanted.items() if v}
    for pair in sorted(set(got) | set(want)):
        if got.get(pair, 0) != want.get(pair, 0):
            problems.append(f"pair {pair}: {got.get(pair, 0)} circuits, wanted {want.get(pair, 0)}")
    return problems
