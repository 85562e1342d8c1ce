"""Inside one failure domain: orient the pairs, split them over the OCSes, pick ports.

1. **Orientation.** Each circuit of pair a-b joins a north port of one block to a south
   port of the other. A min-cost flow on the directed incidence matrix chooses how many
   run a->b (a north) so that no block needs more north or south ports than the domain
   has, preferring today's orientations. With even per-OCS shares this always exists
   when the degrees fit (an Euler orientation gives every block at most half north).
2. **Per-OCS split.** The oriented demand is a bipartite multigraph (north copies ->
   south copies). The OCSes are filled one after another, each by a bipartite flow that
   keeps as many of that OCS's circuits as it can, and whose lower bounds leave every
   block no more demand than the later OCSes can take. With equal per-OCS budgets a
   fractional split (``demand / OCSes left``) always satisfies these bounds, so by total
   unimodularity an integral one exists too (the LP form of Koenig's edge-colouring
   theorem). Units that would use demand another OCS could have kept cost one.
3. **Ports.** Kept circuits keep their ports; new ones take free ports of the right
   block and side.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from optimizer.errors import InfeasibleError
from optimizer.mapping.flow import concave_segments, solve_network_lp
from optimizer.mapping.ports import OcsPorts
from optimizer.topology import Circuit

NEW_CIRCUIT_BONUS = 0.01


def current_orientation(ocs_list: Sequence[OcsPorts], n: int) -> np.ndarray:
    """cur[a][b]: today's circuits on these OCSes from a north port of a to a south port of b."""
    cur = np.zeros((n, n), dtype=np.int64)
    for o in ocs_list:
        for (a, b), circuits in o.current.items():
            cur[a, b] += len(circuits)
    return cur


def orient(
    pairs: np.ndarray,
    north: np.ndarray,
    south: np.ndarray,
    current: np.ndarray,
    block_names: tuple[str, ...],
    where: str,
) -> np.ndarray:
    """Directed demand D (D + D.T == pairs) with out-degree <= north, in-degree <= south."""
    n = pairs.shape[0]
    iu, ju = np.nonzero(np.triu(pairs, 1))
    degree = pairs.sum(axis=1)
    if iu.size == 0:
        return np.zeros((n, n), dtype=np.int64)
    cols_arc: list[int] = []
    cost: list[float] = []
    upper: list[int] = []
    for k, (a, b) in enumerate(zip(iu.tolist(), ju.tolist(), strict=True)):
        total = int(pairs[a, b])
        # f = circuits a->b. Unit t of f keeps an a->b circuit if t <= cur[a,b]; it breaks a
        # b->a one if t > total - cur[b,a].
        for seg in concave_segments(total, int(current[a, b]), total - int(current[b, a])):
            cols_arc.append(k)
            cost.append(-seg.value)
            upper.append(seg.length)
    arc = np.asarray(cols_arc)
    m = arc.size
    # out(a) = sum_{a first} f - sum_{a second} f + sum_{a second} pairs
    rows = sp.csr_matrix(
        (
            np.concatenate([np.ones(m), -np.ones(m)]),
            (np.concatenate([iu[arc], ju[arc]]), np.concatenate([np.arange(m), np.arange(m)])),
        ),
        shape=(n, m),
    )
    const = np.zeros(n)
    np.add.at(const, ju, pairs[iu, ju])
    lo = degree - south - const
    hi = north - const
    x = solve_network_lp(np.asarray(cost), np.asarray(upper), rows, lo.astype(float), hi.astype(float))
    if x is None:
        tight = [block_names[a] for a in range(n) if degree[a] > 0 and degree[a] >= north[a] + south[a]]
        raise InfeasibleError(
            f"{where}: the circuits cannot be oriented north-to-south within the side budgets "
            f"(blocks using every port: {', '.join(tight) or 'none'}); the per-side port counts "
            "of an 'any' OCS with an odd share can cause this"
        )
    f = np.bincount(arc, weights=x, minlength=iu.size).astype(np.int64)
    directed = np.zeros((n, n), dtype=np.int64)
    directed[iu, ju] = f
    directed[ju, iu] = pairs[iu, ju] - f
    return directed


def split_over_ocs(
    demand: np.ndarray,
    ocs_list: Sequence[OcsPorts],
    block_names: tuple[str, ...],
    where: str,
) -> list[np.ndarray]:
    """Per OCS (in ``ocs_list`` order) the directed circuit counts; they sum to ``demand``."""
    n = demand.shape[0]
    remaining = demand.copy()
    later_current = current_orientation(ocs_list, n)
    north_cap = np.array([[o.north_budget(b) for b in range(n)] for o in ocs_list], dtype=np.int64)
    south_cap = np.array([[o.south_budget(b) for b in range(n)] for o in ocs_list], dtype=np.int64)
    later_north = north_cap.sum(axis=0)
    later_south = south_cap.sum(axis=0)
    out: list[np.ndarray] = []
    for i, o in enumerate(ocs_list):
        here = np.zeros((n, n), dtype=np.int64)
        for (a, b), circuits in o.current.items():
            here[a, b] = len(circuits)
        later_current -= here
        later_north -= north_cap[i]
        later_south -= south_cap[i]
        x = fill_one_part(remaining, here, later_current, north_cap[i], south_cap[i],
                          later_north, later_south)
        if x is None:
            out_left = remaining.sum(axis=1)
            worst = int(np.argmax(out_left - later_north - north_cap[i]))
            raise InfeasibleError(
                f"{where}: cannot place the circuits of block {block_names[worst]} on OCS {o.name} "
                "and the OCSes after it"
            )
        remaining -= x
        out.append(x)
    if remaining.any():
        a, b = (int(v) for v in np.argwhere(remaining)[0])
        raise InfeasibleError(f"{where}: {int(remaining[a, b])} circuits {block_names[a]}-"
                              f"{block_names[b]} did not fit on the OCSes")
    return out


def fill_one_part(
    remaining: np.ndarray,
    here: np.ndarray,
    later_current: np.ndarray,
    north_cap: np.ndarray,
    south_cap: np.ndarray,
    later_north: np.ndarray,
    later_south: np.ndarray,
    arc_upper: np.ndarray | None = None,
    arc_lower: np.ndarray | None = None,
) -> np.ndarray | None:
    """One part (an OCS, or a failure domain) of the directed demand ``remaining``.

    A bipartite flow: at most ``north_cap``/``south_cap`` per block, at least what the
    later parts cannot take (``later_north``/``later_south``), optionally per-arc bounds;
    keeping ``here`` (today's circuits in this part) is worth one, using demand that a
    later part could keep costs one. None when infeasible.
    """
    n = remaining.shape[0]
    ea, eb = np.nonzero(remaining)
    if ea.size == 0:
        return np.zeros((n, n), dtype=np.int64)
    rem = remaining[ea, eb]
    total = np.minimum(rem, np.minimum(north_cap[ea], south_cap[eb]))
    if arc_upper is not None:
        total = np.minimum(total, arc_upper[ea, eb])
    keep = np.minimum(here[ea, eb], total)
    free = np.clip(rem - later_current[ea, eb], 0, total)
    # Three segments per arc: worth +1 (keeps here, steals nothing), 0, and -1.
    first = np.minimum(keep, free)
    middle = np.abs(keep - free)
    last = total - np.maximum(keep, free)
    lengths = np.concatenate([first, middle, last])
    # A new circuit within the demand nobody else can keep gets a small bonus: it makes
    # the OCS swap a circuit that must go anyway for one that must come, on the spot.
    middle_value = np.where(free > keep, NEW_CIRCUIT_BONUS, 0.0)
    values = np.concatenate([np.ones(ea.size), middle_value, -np.ones(ea.size)])
    arcs = np.tile(np.arange(ea.size), 3)
    used = lengths > 0
    lengths, values, arcs = lengths[used], values[used], arcs[used]
    m = arcs.size
    rows = sp.csr_matrix(
        (np.ones(2 * m), (np.concatenate([ea[arcs], n + eb[arcs]]), np.tile(np.arange(m), 2))),
        shape=(2 * n, m),
    )
    out_left = remaining.sum(axis=1)
    in_left = remaining.sum(axis=0)
    lo = np.concatenate([np.maximum(out_left - later_north, 0), np.maximum(in_left - later_south, 0)])
    hi = np.concatenate([north_cap, south_cap])
    if arc_lower is not None:
        low = arc_lower[ea, eb]
        bounded = np.nonzero(low > 0)[0]
        if bounded.size:
            position = np.full(ea.size, -1)
            position[bounded] = np.arange(bounded.size)
            cols = np.nonzero(position[arcs] >= 0)[0]
            extra = sp.csr_matrix(
                (np.ones(cols.size), (position[arcs][cols], cols)), shape=(bounded.size, m)
            )
            rows = sp.vstack([rows, extra]).tocsr()
            lo = np.concatenate([lo, low[bounded]])
            hi = np.concatenate([hi, np.full(bounded.size, np.inf)])
    x = solve_network_lp(-values, lengths, rows, lo.astype(float), hi.astype(float))
    if x is None:
        return None
    per_arc = np.bincount(arcs, weights=x, minlength=ea.size).astype(np.int64)
    result = np.zeros((n, n), dtype=np.int64)
    result[ea, eb] = per_arc
    return result


def assign_ports(ocs: OcsPorts, counts: np.ndarray) -> list[Circuit]:
    """Circuits on ``ocs`` realising ``counts[a][b]`` (a north, b south), keeping today's first."""
    circuits: list[Circuit] = []
    used: set[int] = set()
    new_arcs: list[tuple[int, int, int]] = []
    for a, b in zip(*np.nonzero(counts), strict=True):
        a, b = int(a), int(b)
        want = int(counts[a, b])
        existing = ocs.current.get((a, b), [])
        for n_port, s_port in existing[:want]:
            circuits.append(Circuit(ocs.name, n_port, s_port))
            used.add(n_port)
            used.add(s_port)
        if want > len(existing):
            new_arcs.append((a, b, want - len(existing)))
    free_north = {}
    free_south = {}
    for a, b, count in new_arcs:
        if a not in free_north:
            free_north[a] = [p for p in ocs.north[a] if p not in used]
        if b not in free_south:
            free_south[b] = [p for p in ocs.south[b] if p not in used]
        for _ in range(count):
            circuits.append(Circuit(ocs.name, free_north[a].pop(), free_south[b].pop()))
    return circuits
