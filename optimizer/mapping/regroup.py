"""Exact re-mapping of groups of OCSes (a large-neighbourhood search).

The per-domain mapping fixes each pair's split over the failure domains before it maps a
single OCS, and on sparse fabrics (fewer circuits per pair than domains, one north and one
south port per block per OCS) that split is where most of the extra tear-downs come from:
the exact optimum chooses the split together with the per-OCS matchings
(``benchmarks/RESULTS_mapping.md``). This pass takes a finished mapping and re-solves part of
it exactly, again and again (a small MIP, HiGHS through ``highspy``): the pairs keep their
total number of circuits, every OCS keeps to its ports, each domain keeps to its pair limits
(or to today's count where that is already over them), and the MIP keeps as many of today's
circuits as it can. A part mixes domains, so a pair's circuits can move from one domain to
another, which no per-domain step can do.

A part (neighbourhood) is *a group of OCSes and every new circuit*: every circuit of a few
OCSes (one that loses today's circuits, each in turn, most losses first, and others drawn at
random with a fixed seed) *and* every circuit, on any OCS, that is not one of today's. Today's
circuits kept outside the group stay where they are; the new ones may go to any free port of
any OCS. The exchanges the optimum makes chain through many OCSes (a circuit moved to another
domain frees a port there, which takes a circuit from a third OCS...), and the new circuits
are what those chains move: re-solving whole groups of OCSes and nothing else (groups of 6
around the OCS losing most, this pass's first version) never finds them. The group starts
with :data:`FREE_GROUP_SIZES` ``[0]`` OCSes and grows to the next size when a run of groups
gains nothing (a bigger MIP, a wider search): one group per losing OCS at the first size, two
at the second, and so on. On the sparse
benchmark instances this took the mapping from 1.30-1.47x the exact optimum to within 1.25x
(``benchmarks/RESULTS_mapping.md``).

Each MIP starts from the current mapping (HiGHS is given it as a feasible solution), so it
only has to look for something better. Each accepted re-solve strictly keeps more circuits, so
the pass ends; it also stops after :data:`MAX_FREE_GROUPS` MIPs, or when a run of the
largest groups gains nothing: the pass is bounded by work (MIPs, branch-and-bound nodes), not
by time, so the same input gives the same circuits. The plan's time budget, and :data:`GROUP_SECONDS` per
MIP, are only a safety net. A MIP's size grows with the circuits it frees, not with the fabric.

:func:`resolve_domain` is the same MIP over a *whole* failure domain, its pair counts fixed: the
per-domain mapping's exact finish where the domain is small enough to solve (up to
:data:`DOMAIN_COLUMNS` columns; HiGHS then finds the optimum at the root node in a few seconds).
On 1N/1S domains (one north and one south port per block per OCS) the polynomial candidates tear
down 5-25% more than that optimum; on domains too big for the MIP (32 blocks and more), re-solving
a few OCSes or blocks at a time closes little of it (``benchmarks/RESULTS_mapping.md``).
:func:`resolve_fixed` is that MIP with part of every OCS held (the arcs the dive's LP guide
settles, :func:`optimizer.mapping.dive.guide_fixed`), which makes 32-block domains solvable.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import highspy
import numpy as np
from highspy._core import _Highs

from optimizer.budget import TimeBudget
from optimizer.mapping.ports import OcsPorts

log = logging.getLogger(__name__)

#: OCSes freed beside the new circuits, size after size as runs of groups gain nothing; and
#: MIPs in all (the pass is bounded by work, not time: the same input, the same circuits).
FREE_GROUP_SIZES = (2, 3, 4)
MAX_FREE_GROUPS = 60
#: The seed of the draws that fill those groups (fixed: the same input, the same groups).
FREE_GROUP_SEED = 13
#: Branch-and-bound nodes one MIP may explore, and, as a safety net only, seconds (the
#: slowest MIPs on the sparse benchmark instances took 2-4 s on a loaded 2-core machine).
GROUP_NODES = 500
GROUP_SECONDS = 10.0
#: :func:`resolve_domain`: the largest MIP (circuit columns) it solves, its branch-and-bound nodes
#: and, as a safety net where the plan sets no time limit, its seconds. A 16-block Jupiter-shaped
#: domain (64 OCSes, 15,360 columns) takes 3-8 s here, solved at the root; 32 blocks (63,488)
#: needs 25 s for its root LP alone.
DOMAIN_COLUMNS = 16_000
DOMAIN_NODES = 200
DOMAIN_SECONDS = 30.0

_INF = highspy.kHighsInf
_FEASIBLE = 2  # HiGHS's primal_solution_status for a feasible point


def regroup(
    ocs_list: Sequence[OcsPorts],
    per_ocs: list[np.ndarray],
    domain_index: Sequence[int],
    limit: np.ndarray,
    budget: TimeBudget | None = None,
) -> list[np.ndarray]:
    """Per-OCS directed counts keeping at least as many of today's circuits as ``per_ocs``.

    ``per_ocs[o][a, b]`` counts the circuits from block ``a``'s north to ``b``'s south on
    ``ocs_list[o]``, ``domain_index[o]`` is its domain and ``limit[d]`` the pair limits of
    domain ``d``. The pass stops after :data:`MAX_FREE_GROUPS` MIPs, when a run of the
    largest groups gains nothing, or when ``budget`` (the plan's) is spent.
    """
    eligible = [o for o, ocs in enumerate(ocs_list) if not ocs.flexible and ocs.current]
    if len(eligible) < 2:
        return per_ocs
    search = _Search(ocs_list, per_ocs, domain_index, limit, eligible, budget)
    search.run()
    log.debug("regroup: %d MIPs, %d more circuits kept", search.mips, search.gained)
    return search.per_ocs


def domain_columns(ocs_list: Sequence[OcsPorts], pairs: np.ndarray) -> int:
    """The circuit columns of :func:`resolve_domain`'s MIP: per OCS, both ways of every pair
    with circuits."""
    return 2 * len(ocs_list) * int(np.count_nonzero(np.triu(pairs, 1)))


def resolve_domain(
    ocs_list: Sequence[OcsPorts],
    per_ocs: list[np.ndarray],
    pairs: np.ndarray,
    seconds: float,
    nodes: int = DOMAIN_NODES,
) -> list[np.ndarray] | None:
    """The per-OCS directed counts realising a domain's symmetric ``pairs`` that keep the most
    of today's circuits, from ``per_ocs`` (a mapping of it, the MIP's start): an optimum when the
    MIP finishes within ``nodes`` branch-and-bound nodes and ``seconds``, else the best mapping found.
    None if the domain has ``any`` OCSes (their sides are not fixed) or no solution came back."""
    return _whole_domain(ocs_list, per_ocs, [np.zeros_like(c) for c in per_ocs], pairs, seconds, nodes)


def resolve_fixed(
    ocs_list: Sequence[OcsPorts],
    fixed: list[np.ndarray],
    pairs: np.ndarray,
    seconds: float,
    nodes: int = DOMAIN_NODES,
) -> list[np.ndarray] | None:
    """The per-OCS directed counts realising a domain's symmetric ``pairs`` that hold ``fixed``
    (per-OCS directed counts, e.g. the arcs an LP settles) and place the rest keeping the most of
    today's circuits, with no start to improve on. None if ``fixed`` holds more of a pair than
    ``pairs`` has, the domain has ``any`` OCSes, or the MIP finds no placement of the rest within
    ``nodes`` branch-and-bound nodes and ``seconds`` (the fixed arcs may leave none)."""
    held = sum((f + f.T for f in fixed), np.zeros_like(pairs))
    rest = np.asarray(pairs) - held
    if (rest < 0).any():
        return None
    # the MIP places ``per_ocs - fixed``: the rest's units on the first OCS say how many of each
    # pair (not where: as a start HiGHS finds it infeasible and ignores it)
    per_ocs = [f.copy() for f in fixed]
    per_ocs[0] = per_ocs[0] + np.triu(rest, 1)
    return _whole_domain(ocs_list, per_ocs, fixed, pairs, seconds, nodes)


def _whole_domain(
    ocs_list: Sequence[OcsPorts],
    per_ocs: list[np.ndarray],
    fixed: list[np.ndarray],
    pairs: np.ndarray,
    seconds: float,
    nodes: int,
) -> list[np.ndarray] | None:
    """:func:`_resolve` over one whole domain, whose pair counts are its limits (None with
    ``any`` OCSes: their sides are not fixed)."""
    if any(ocs.flexible for ocs in ocs_list):
        return None
    return _resolve(ocs_list, per_ocs, fixed, [0] * len(ocs_list), np.array([pairs]), seconds, nodes)


class _Search:
    """The mapping being improved, and where the neighbourhoods are in their rounds."""

    def __init__(
        self,
        ocs_list: Sequence[OcsPorts],
        per_ocs: Sequence[np.ndarray],
        domain_index: Sequence[int],
        limit: np.ndarray,
        eligible: list[int],
        budget: TimeBudget | None,
    ) -> None:
        self.ocs_list = ocs_list
        self.per_ocs = [c.copy() for c in per_ocs]
        self.domain_index = domain_index
        self.allowed = _allowed(per_ocs, domain_index, limit)
        self.eligible = eligible
        self.budget = budget
        self.rng = np.random.default_rng(FREE_GROUP_SEED)
        self.size = 0  # index into FREE_GROUP_SIZES
        self.turn = 0  # the losing OCS that seeds the next free group
        self.since_gain = 0  # free groups since the last gain
        self.mips = self.gained = 0

    def losses(self, o: int) -> int:
        ocs = self.ocs_list[o]
        return sum(len(cur) for cur in ocs.current.values()) - ocs.kept(self.per_ocs[o])

    def kept(self) -> int:
        return sum(ocs.kept(c) for ocs, c in zip(self.ocs_list, self.per_ocs, strict=True))

    def run(self) -> None:
        """Re-solve the parts :func:`_group_and_new_circuits` proposes, up to
        :data:`MAX_FREE_GROUPS` of them, taking each that keeps more circuits."""
        while self.mips < MAX_FREE_GROUPS and not self._out_of_time():
            fixed = _group_and_new_circuits(self)
            if fixed is None:
                break
            self.mips += 1
            seconds = GROUP_SECONDS if self.budget is None else min(GROUP_SECONDS, self.budget.remaining())
            solved = _resolve(self.ocs_list, self.per_ocs, fixed, self.domain_index, self.allowed, seconds)
            before = self.kept()
            after = -1 if solved is None else sum(
                ocs.kept(c) for ocs, c in zip(self.ocs_list, solved, strict=True))
            if solved is None or after <= before:
                self.since_gain += 1
                continue
            self.per_ocs = solved
            self.gained += after - before
            self.since_gain = 0

    def _out_of_time(self) -> bool:
        return self.budget is not None and self.budget.expired()


def _allowed(per_ocs: Sequence[np.ndarray], domain_index: Sequence[int], limit: np.ndarray) -> np.ndarray:
    """Per domain, the most circuits of each pair it may hold: its limit, or what it holds
    now where that is more (a pair kept unbalanced stays as it is, never worse)."""
    allowed = np.array(limit, dtype=np.int64, copy=True)
    for d in range(len(allowed)):
        pairs = sum((c + c.T for c, di in zip(per_ocs, domain_index, strict=True) if di == d),
                    np.zeros_like(allowed[d]))
        allowed[d] = np.maximum(allowed[d], pairs)
    return allowed


def _kept_counts(ocs: OcsPorts, counts: np.ndarray) -> np.ndarray:
    """The part of ``counts`` that is today's circuits."""
    kept = np.zeros_like(counts)
    for (a, b), cur in ocs.current.items():
        kept[a, b] = min(int(counts[a, b]), len(cur))
    return kept


def _group_and_new_circuits(search: _Search) -> list[np.ndarray] | None:
    """Today's circuits kept outside a group stay; the group's circuits and every new one are
    re-solved. The group: a losing OCS (each in turn, most losses first) and others drawn at
    random; it grows after as many groups in a row as (losing OCSes) x (sizes tried) gain
    nothing. None when no OCS loses a circuit or a run of the largest groups gains nothing."""
    eligible = search.eligible
    losing = sorted((o for o in eligible if search.losses(o) > 0), key=lambda o: (-search.losses(o), o))
    if not losing:
        return None
    if search.since_gain >= len(losing) * (search.size + 1):
        if search.size + 1 >= len(FREE_GROUP_SIZES):
            return None
        search.size += 1
        search.since_gain = 0
    size = min(len(eligible), FREE_GROUP_SIZES[search.size])
    seed = losing[search.turn % len(losing)]
    search.turn += 1
    rest = np.array([o for o in eligible if o != seed])
    group = {seed, *(int(o) for o in search.rng.choice(rest, size - 1, replace=False))}
    fixed = []
    for o, (ocs, counts) in enumerate(zip(search.ocs_list, search.per_ocs, strict=True)):
        if o in group:
            fixed.append(np.zeros_like(counts))
        elif ocs.flexible:  # an `any` OCS's virtual sides are settled: it keeps what it has
            fixed.append(counts)
        else:
            fixed.append(_kept_counts(ocs, counts))
    return fixed


def _resolve(
    ocs_list: Sequence[OcsPorts],
    per_ocs: Sequence[np.ndarray],
    fixed: Sequence[np.ndarray],
    domain_index: Sequence[int],
    allowed: np.ndarray,
    seconds: float,
    nodes: int = GROUP_NODES,
) -> list[np.ndarray] | None:
    """The mapping keeping most of today's circuits when ``fixed[o]`` (a part of
    ``per_ocs[o]``) stays on every OCS ``o`` and the rest moves (None: no solution found).

    Columns ``x``: circuits on an OCS along an arc (north end, south end) between free ports
    of a pair with circuits to place; ``k``: today's circuits among them, the ones kept (an arc
    with as many of today's circuits as it has room keeps all of its ``x``: no ``k`` column).
    """
    if seconds <= 0.05:
        return None
    free = [c - f for c, f in zip(per_ocs, fixed, strict=True)]
    totals = sum(f + f.T for f in free)
    pairs = [(int(a), int(b)) for a, b in zip(*np.nonzero(np.triu(totals, 1)), strict=True)]
    if not pairs:
        return None
    arcs = sorted([(a, b) for a, b in pairs] + [(b, a) for a, b in pairs])
    columns: list[tuple[int, int, int]] = []  # (ocs, north block, south block)
    upper: list[float] = []
    start: list[float] = []
    kept_of: list[tuple[int, int]] = []  # (x column, today's circuits it may keep)
    whole: list[int] = []  # x columns whose every circuit would be one of today's
    for o, (ocs, f) in enumerate(zip(ocs_list, fixed, strict=True)):
        north = [ocs.north_budget(v) - int(f[v].sum()) for v in range(len(f))]
        south = [ocs.south_budget(v) - int(f[:, v].sum()) for v in range(len(f))]
        for u, w in arcs:
            room = min(north[u], south[w])
            if room <= 0:
                continue
            today = max(0, len(ocs.current.get((u, w), ())) - int(f[u, w]))  # not already kept in f
            if today >= room:
                whole.append(len(columns))
            elif today > 0:
                kept_of.append((len(columns), today))
            columns.append((o, u, w))
            upper.append(room)
            start.append(float(free[o][u, w]))
    n_x = len(columns)
    rows: list[tuple[list[int], list[float], float, float]] = []
    north_cols: dict[tuple[int, int], list[int]] = {}
    south_cols: dict[tuple[int, int], list[int]] = {}
    pair_cols: dict[tuple[int, int], list[int]] = {}
    domain_cols: dict[tuple[int, int, int], list[int]] = {}
    for c, (o, u, w) in enumerate(columns):
        north_cols.setdefault((o, u), []).append(c)
        south_cols.setdefault((o, w), []).append(c)
        pair = (min(u, w), max(u, w))
        pair_cols.setdefault(pair, []).append(c)
        domain_cols.setdefault((domain_index[o], *pair), []).append(c)
    north_room = {(o, u): ocs_list[o].north_budget(u) - int(fixed[o][u].sum()) for o, u in north_cols}
    south_room = {(o, w): ocs_list[o].south_budget(w) - int(fixed[o][:, w].sum()) for o, w in south_cols}
    # where the circuits to place fill every free port, every port row holds with equality:
    # saying so makes the LP far easier (a whole 1N/1S domain: 3-8 s instead of 10-20 s)
    placed = sum(totals[a, b] for a, b in pairs)
    full_north = sum(north_room.values()) == placed
    full_south = sum(south_room.values()) == placed
    for key, cols in north_cols.items():
        rows.append((cols, [], north_room[key] if full_north else -_INF, north_room[key]))
    for key, cols in south_cols.items():
        rows.append((cols, [], south_room[key] if full_south else -_INF, south_room[key]))
    for j, (c, _) in enumerate(kept_of):
        rows.append(([n_x + j, c], [1.0, -1.0], -_INF, 0))
    for a, b in pairs:
        rows.append((pair_cols.get((a, b), []), [], totals[a, b], totals[a, b]))
    held: dict[int, np.ndarray] = {}
    for o, f in enumerate(fixed):
        held[domain_index[o]] = held.get(domain_index[o], 0) + f + f.T
    for (d, a, b), cols in domain_cols.items():
        spare = float(allowed[d][a, b] - held[d][a, b])
        if spare < totals[a, b]:  # (else the pair's own row says it)
            rows.append((cols, [], -_INF, spare))
    bounds = np.array(upper + [float(t) for _, t in kept_of])
    first = np.array(start + [min(start[c], t) for c, t in kept_of])
    gain = np.zeros(len(bounds))
    gain[whole] = 1.0
    gain[n_x:] = 1.0
    values = _run_mip(bounds, gain, rows, first, seconds, nodes)
    if values is None:
        return None
    solved = [f.copy() for f in fixed]
    for c, (o, u, w) in enumerate(columns):
        solved[o][u, w] += values[c]
    return solved


def _run_mip(
    upper: np.ndarray,
    gain: np.ndarray,
    rows: list[tuple[list[int], list[float], float, float]],
    start: np.ndarray,
    seconds: float,
    nodes: int,
) -> np.ndarray | None:
    """Maximise ``gain`` times the columns, over integers in [0, upper], under ``rows``
    (columns, coefficients or [] for ones, lower, upper), from ``start``."""
    size = len(upper)
    h = _Highs()  # the private class: the public one prints a banner to stdout
    h.setOptionValue("output_flag", False)
    # one thread, as every HiGHS in the process: its scheduler is global and refuses to run
    # once a run has asked for another thread count (the TE and ToE LPs use one)
    h.setOptionValue("threads", 1)
    h.setOptionValue("mip_max_nodes", nodes)
    h.setOptionValue("time_limit", seconds)
    columns = np.arange(size, dtype=np.int32)
    cost = -np.asarray(gain, dtype=float)
    h.addVars(size, np.zeros(size), upper)
    h.changeColsCost(size, columns, cost)
    h.changeColsIntegrality(size, columns, np.full(size, highspy.HighsVarType.kInteger))
    starts: list[int] = []
    index: list[int] = []
    value: list[float] = []
    lower: list[float] = []
    higher: list[float] = []
    for cols, coefficients, low, high in rows:
        starts.append(len(index))
        index.extend(cols)
        value.extend(coefficients or [1.0] * len(cols))
        lower.append(low)
        higher.append(high)
    h.addRows(len(rows), np.array(lower, dtype=float), np.array(higher, dtype=float), len(index),
              np.array(starts, dtype=np.int32), np.array(index, dtype=np.int32), np.array(value, dtype=float))
    solution = highspy.HighsSolution()
    solution.col_value = list(start)
    solution.value_valid = True
    h.setSolution(solution)
    h.run()
    if h.getInfo().primal_solution_status != _FEASIBLE:
        return None
    solved: np.ndarray = np.rint(np.asarray(h.getSolution().col_value)).astype(np.int64)
    return solved
