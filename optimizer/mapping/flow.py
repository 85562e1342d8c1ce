"""The two flow problems of the mapping, solved as totally unimodular LPs.

Both problems are network flows (a directed incidence matrix, or a bipartite one), whose
constraint matrices are totally unimodular: a simplex vertex solution is integral. HiGHS's
dual simplex (through scipy) returns such a vertex; the result is rounded and checked.

Preferences are concave and piecewise linear in the number of circuits on an arc ("keep
up to c of them, then the next ones cost a future keep"), so each arc becomes a few
parallel columns with rising cost: still a flow, still integral.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from optimizer.errors import SolverError

INTEGRALITY_TOLERANCE = 1e-6


@dataclass(frozen=True, slots=True)
class Segment:
    """``length`` units that are each worth ``value`` (higher is better)."""

    length: int
    value: float


def concave_segments(total: int, keep_here: int, free_before_penalty: int) -> list[Segment]:
    """Segments of the marginal value of putting ``t = 1..total`` units on one arc.

    Unit ``t`` is worth ``[t <= keep_here] - [t > free_before_penalty]``: the first
    ``keep_here`` units keep existing circuits, and units beyond ``free_before_penalty``
    use up demand that another place could have kept. The marginal never rises, so the
    function is concave and an LP fills the segments in order.
    """
    cuts = sorted({0, total, min(max(keep_here, 0), total), min(max(free_before_penalty, 0), total)})
    out: list[Segment] = []
    for lo, hi in itertools.pairwise(cuts):
        if hi <= lo:
            continue
        t = lo + 1
        value = (1.0 if t <= keep_here else 0.0) - (1.0 if t > free_before_penalty else 0.0)
        out.append(Segment(hi - lo, value))
    return out


def solve_network_lp(
    cost: np.ndarray,
    upper: np.ndarray,
    rows: sp.csr_matrix,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
) -> np.ndarray | None:
    """Minimise ``cost @ x`` for ``0 <= x <= upper`` and ``row_lower <= rows @ x <= row_upper``.

    Returns the integral solution, or None when the problem is infeasible. Raises
    SolverError when the solver fails or (which a network matrix rules out) returns a
    fractional vertex.
    """
    if cost.size == 0:
        zero = np.zeros(rows.shape[0])
        return np.zeros(0) if np.all(row_lower <= zero) and np.all(zero <= row_upper) else None
    finite_hi = np.isfinite(row_upper)
    finite_lo = np.isfinite(row_lower)
    a_ub = sp.vstack([rows[finite_hi], -rows[finite_lo]]).tocsr()
    b_ub = np.concatenate([row_upper[finite_hi], -row_lower[finite_lo]])
    bounds = np.column_stack([np.zeros_like(upper, dtype=float), upper.astype(float)])
    result = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs-ds")
    if result.status == 2:
        return None
    if result.status != 0 or result.x is None:
        raise SolverError(f"flow LP failed: {result.message}")
    x = np.rint(result.x)
    if np.max(np.abs(x - result.x), initial=0.0) > INTEGRALITY_TOLERANCE:
        raise SolverError("flow LP returned a fractional solution")
    flows: np.ndarray = x.astype(np.int64)
    return flows
