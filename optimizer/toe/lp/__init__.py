"""The ToE's lexicographic LP over continuous topologies (:mod:`optimizer.toe.plan` runs it).

:mod:`~optimizer.toe.lp.build` lays out its rows and columns, :mod:`~optimizer.toe.lp.columns`
seeds and prices transit paths, :mod:`~optimizer.toe.lp.result` reads the answer back, and
:class:`ToeLp` (:mod:`~optimizer.toe.lp.solver`) owns the HiGHS model and runs the rounds.
"""

from optimizer.toe.lp.solver import Relaxation, ToeLp, ToeProblem, max_scale

__all__ = ["Relaxation", "ToeLp", "ToeProblem", "max_scale"]
