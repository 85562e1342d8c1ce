"""Traffic engineering: min-MLU routing over direct, one-transit and spine paths, as WCMP groups.

The face of the package (other packages import from here only):

- :func:`solve_te`, :func:`min_mlu`, :func:`ecmp_mlu` and :class:`TeSolver`
  (:mod:`optimizer.te.solve`): the LP, its integer weights and the figures an operator reads;
- :class:`TeResult`, :class:`Group`, :class:`NextHop`, :class:`LinkUtilisation`: what a solve
  returns;
- the WCMP table defaults and :func:`reduce_weights` (:mod:`optimizer.te.wcmp`);
- :class:`TePolicy`, :class:`RecentDemand` and :func:`route` (:mod:`optimizer.te.policy`):
  what the daemon's TE plans for, from its recent measurements.

Inside: :mod:`~optimizer.te.paths` (the link graph and candidate paths),
:mod:`~optimizer.te.lp` (the path LP by column generation on HiGHS) and
:mod:`~optimizer.te.wcmp` (integer weights within a table budget). Pure: no I/O, no clock.
"""

from optimizer.te.policy import (
    MAX_WINDOW,
    Predictor,
    RecentDemand,
    TeMethod,
    TePolicy,
    predicted_matrix,
    route,
)
from optimizer.te.solve import (
    Group,
    LinkUtilisation,
    NextHop,
    TeResult,
    TeSolver,
    ecmp_mlu,
    min_mlu,
    solve_te,
)
from optimizer.te.wcmp import DEFAULT_MAX_OVERSUBSCRIPTION, DEFAULT_TABLE_SIZE, reduce_weights

__all__ = [
    "DEFAULT_MAX_OVERSUBSCRIPTION",
    "DEFAULT_TABLE_SIZE",
    "MAX_WINDOW",
    "Group",
    "LinkUtilisation",
    "NextHop",
    "Predictor",
    "RecentDemand",
    "TeMethod",
    "TePolicy",
    "TeResult",
    "TeSolver",
    "ecmp_mlu",
    "min_mlu",
    "predicted_matrix",
    "reduce_weights",
    "route",
    "solve_te",
]
