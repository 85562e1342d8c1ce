"""Tomogravity: infer the block-to-block matrix from link loads when only port counters exist.

Pure. The inputs are what the daemon can get from the devices:

- ``routing``: per ``(src, dst)`` pair, the fraction of its traffic that crosses each link
  (from the WCMP weights pushed by TE; :func:`routing_from_paths` builds it from weighted
  paths). A link is any hashable id; :func:`routing_from_paths` uses ``(a, b)``, the
  directed set of circuits from ``a`` to ``b`` (a spine hop is just another node name);
- ``link_loads``: the measured load of (some of) those links, Gbit/s, e.g. the sum of
  the tx rates of the ports of ``a`` facing ``b``. Links without a measurement are left
  out of the fit;
- optionally ``egress`` / ``ingress``: the traffic each block originates and terminates
  (host-facing counters). They shape the gravity prior and are fitted as measurements
  too. Without them the prior is uniform, scaled to fit the link loads.

The estimate is the non-negative ``x`` minimising::

    || R x - y ||^2 + lambda^2 * sum_p (x_p - g_p)^2 / max(g_p, floor)

where ``R x = y`` stacks the link (and total) measurements and ``g`` is the gravity prior
(``g_ij`` proportional to ``egress_i * ingress_j``, fitted to both marginals with a zero
diagonal). With ``lambda`` small the measurements dominate: when they determine the
matrix (``R`` of full column rank) the estimate is the true matrix up to a relative bias
of order ``lambda^2``; otherwise it is the matrix consistent with the measurements that
is closest to the prior, as in Zhang et al., "Fast accurate computation of large-scale
IP traffic matrices from link loads" (SIGMETRICS 2003).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from scipy import sparse
from scipy.optimize import lsq_linear

from controller.sensing.estimation import EstimationError
from optimizer.traffic import TrafficMatrix

log = logging.getLogger(__name__)

Pair = tuple[str, str]
Routing = Mapping[Pair, Mapping[Any, float]]  # per pair, the share of it on each link (any link key)
PortKey = TypeVar("PortKey", bound=Hashable)
LinkKey = TypeVar("LinkKey", bound=Hashable)

DENSE_LIMIT = 400  # pairs up to which the dense bounded solver (exact active set) is used
RANK_LIMIT = 600  # pairs up to which identifiability is checked with a dense rank


@dataclass(frozen=True)
class TomogravityEstimate:
    matrix: TrafficMatrix
    prior: TrafficMatrix
    max_residual_gbps: float  # largest |R x - y| over the measured links and totals
    identifiable: bool | None  # the measurements fix the matrix; None if not checked (too large)
    measurements: int


def routing_from_paths(
    paths: Mapping[Pair, Iterable[tuple[Sequence[str], float]]],
) -> dict[Pair, dict[tuple[str, str], float]]:
    """Fractions over directed links ``(a, b)`` from weighted paths (node sequences).

    ``{("b1", "b3"): [(("b1", "b3"), 3), (("b1", "b2", "b3"), 1)]}`` sends 3/4 of b1->b3
    direct and 1/4 through b2. Each path must start at the source and end at the destination.
    """
    routing: dict[Pair, dict[tuple[str, str], float]] = {}
    for (src, dst), weighted in paths.items():
        items = [(tuple(path), float(weight)) for path, weight in weighted]
        total = sum(w for _, w in items if w > 0)
        if total <= 0:
            continue
        fractions: dict[tuple[str, str], float] = {}
        for path, weight in items:
            if weight <= 0:
                continue
            if len(path) < 2 or path[0] != src or path[-1] != dst:
                raise EstimationError(f"path {path} of pair {src}->{dst} does not join them")
            for a, b in itertools.pairwise(path):
                fractions[(a, b)] = fractions.get((a, b), 0.0) + weight / total
        routing[(src, dst)] = fractions
    return routing


def direct_routing(blocks: Sequence[str]) -> dict[Pair, dict[tuple[str, str], float]]:
    """Every pair on its direct link only."""
    return {(a, b): {(a, b): 1.0} for a in blocks for b in blocks if a != b}


def aggregate_link_loads(
    port_rates: Mapping[PortKey, float], port_links: Mapping[PortKey, LinkKey]
) -> dict[LinkKey, float]:
    """Per-link loads from per-port rates: ``port_links`` maps each port key to its link id.

    A link is measured only when every one of its ports has a rate; a partly measured link
    would understate its load, so it is left out (tomogravity then fits without it).
    """
    loads: dict[LinkKey, float] = {}
    incomplete: set[LinkKey] = set()
    for port, link in port_links.items():
        rate = port_rates.get(port)
        if rate is None:
            incomplete.add(link)
            continue
        loads[link] = loads.get(link, 0.0) + float(rate)
    return {link: load for link, load in loads.items() if link not in incomplete}


def gravity_prior(
    blocks: Sequence[str],
    egress: Mapping[str, float],
    ingress: Mapping[str, float],
    iterations: int = 200,
) -> TrafficMatrix:
    """``g_ij`` proportional to ``egress_i * ingress_j`` with a zero diagonal.

    Fitted to both marginals by iterative proportional fitting (the plain outer product
    does not match them once the diagonal is removed). Ingress is scaled to the egress
    total if the two totals disagree.
    """
    names = tuple(blocks)
    e = np.array([max(float(egress.get(b, 0.0)), 0.0) for b in names])
    i = np.array([max(float(ingress.get(b, 0.0)), 0.0) for b in names])
    if e.sum() <= 0 or i.sum() <= 0:
        return TrafficMatrix.zeros(names)
    i = i * (e.sum() / i.sum())
    g = np.outer(e, i)
    np.fill_diagonal(g, 0.0)
    for _ in range(iterations):
        rows = g.sum(axis=1)
        g *= np.divide(e, rows, out=np.zeros_like(e), where=rows > 0)[:, None]
        cols = g.sum(axis=0)
        g *= np.divide(i, cols, out=np.zeros_like(i), where=cols > 0)[None, :]
    return TrafficMatrix(names, g)


def tomogravity(
    blocks: Sequence[str],
    routing: Routing,
    link_loads: Mapping[Any, float],
    egress: Mapping[str, float] | None = None,
    ingress: Mapping[str, float] | None = None,
    regularization: float = 1e-3,
    floor_fraction: float = 1e-3,
) -> TomogravityEstimate:
    """Estimate the matrix over ``blocks`` from ``link_loads`` (see the module doc)."""
    names = tuple(blocks)
    pairs = [(a, b) for a in names for b in names if a != b]
    if not pairs:
        raise EstimationError("tomogravity needs at least two blocks")
    for pair in routing:
        if pair[0] not in names or pair[1] not in names or pair[0] == pair[1]:
            raise EstimationError(f"routing names pair {pair} that is not a pair of the blocks")
    rows, rhs = _measurements(names, pairs, routing, link_loads, egress, ingress)
    n = len(pairs)
    matrix_r = _sparse_rows(rows, n)
    y = np.array(rhs, dtype=np.float64)
    scale = max(float(np.abs(y).max(initial=0.0)), 1e-12)
    prior = _prior(names, pairs, matrix_r, y, egress, ingress)
    g = np.array([prior.gbps[names.index(a), names.index(b)] for a, b in pairs]) / scale
    if not rows or scale <= 1e-12:
        return TomogravityEstimate(prior, prior, 0.0, False if not rows else None, len(rows))

    floor = max(floor_fraction * float(g.max(initial=0.0)), floor_fraction)
    weights = regularization / np.sqrt(np.maximum(g, floor))
    a_full = sparse.vstack([matrix_r, sparse.diags(weights)], format="csr")
    b_full = np.concatenate([y / scale, weights * g])
    if n <= DENSE_LIMIT:
        result = lsq_linear(a_full.toarray(), b_full, bounds=(0.0, np.inf), method="bvls", tol=1e-12)
    else:
        result = lsq_linear(a_full, b_full, bounds=(0.0, np.inf), method="trf", tol=1e-10, lsmr_tol="auto")
    x = np.maximum(result.x, 0.0) * scale
    residual = float(np.abs(matrix_r @ x - y).max(initial=0.0))
    arr = np.zeros((len(names), len(names)))
    for (a, b), value in zip(pairs, x, strict=True):
        arr[names.index(a), names.index(b)] = value
    identifiable = None
    if n <= RANK_LIMIT:
        identifiable = bool(np.linalg.matrix_rank(matrix_r.toarray()) == n)
    log.debug("tomogravity: %d pairs, %d measurements, max residual %.3g Gbit/s", n, len(rows), residual)
    return TomogravityEstimate(TrafficMatrix(names, arr), prior, residual, identifiable, len(rows))


def _measurements(
    names: tuple[str, ...],
    pairs: list[Pair],
    routing: Routing,
    link_loads: Mapping[Any, float],
    egress: Mapping[str, float] | None,
    ingress: Mapping[str, float] | None,
) -> tuple[list[dict[int, float]], list[float]]:
    """Sparse rows (pair index -> coefficient) and right-hand sides of every measurement."""
    pair_index = {p: k for k, p in enumerate(pairs)}
    by_link: dict[Hashable, dict[int, float]] = {}
    for pair, fractions in routing.items():
        for link, fraction in fractions.items():
            if fraction:
                row = by_link.setdefault(link, {})
                row[pair_index[pair]] = row.get(pair_index[pair], 0.0) + float(fraction)
    rows: list[dict[int, float]] = []
    rhs: list[float] = []
    for link, load in link_loads.items():
        if link in by_link:
            rows.append(by_link[link])
            rhs.append(_load(load, link))
    for totals, end in ((egress, 0), (ingress, 1)):
        if totals is None:
            continue
        for block, total in totals.items():
            if block not in names:
                raise EstimationError(f"totals name unknown block {block!r}")
            rows.append({k: 1.0 for k, p in enumerate(pairs) if p[end] == block})
            rhs.append(_load(total, block))
    return rows, rhs


def _load(value: float, what: Hashable) -> float:
    load = float(value)
    if not np.isfinite(load) or load < 0:
        raise EstimationError(f"load of {what!r} must be a finite number >= 0, got {value!r}")
    return load


def _sparse_rows(rows: list[dict[int, float]], n: int) -> sparse.csr_matrix:
    data, indices, indptr = [], [], [0]
    for row in rows:
        for k, v in sorted(row.items()):
            indices.append(k)
            data.append(v)
        indptr.append(len(indices))
    return sparse.csr_matrix((data, indices, indptr), shape=(len(rows), n))


def _prior(
    names: tuple[str, ...],
    pairs: list[Pair],
    matrix_r: sparse.csr_matrix,
    y: np.ndarray,
    egress: Mapping[str, float] | None,
    ingress: Mapping[str, float] | None,
) -> TrafficMatrix:
    if egress is not None or ingress is not None:
        # A side without totals is spread evenly over the blocks.
        known = egress if egress is not None else ingress
        even = {b: sum(known.values()) / len(names) for b in names} if known else {}
        return gravity_prior(names, egress if egress is not None else even, ingress or even)
    # No totals: a uniform matrix, scaled by least squares to the link loads.
    uniform = np.ones(len(pairs))
    predicted = matrix_r @ uniform
    denom = float(predicted @ predicted)
    level = max(float(predicted @ y) / denom, 0.0) if denom > 0 else 0.0
    arr = np.full((len(names), len(names)), level)
    np.fill_diagonal(arr, 0.0)
    return TrafficMatrix(names, arr)
