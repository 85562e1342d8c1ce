"""Per-OCS mapping: the circuits that realise a logical topology, keeping today's where possible.

The face of the package (other packages import from here only):

- :func:`map_topology` and :class:`MappingResult` (:mod:`optimizer.mapping.mapper`),
  :func:`unchanged_mapping` (today's circuits kept as they are), and
  ``ParallelMap``, the ``map``-like a caller may give it to map the failure domains side by side;
- :func:`change_lower_bound` (the pair-level bound on removed circuits),
  :func:`pair_domain_limit`, :func:`domain_layout`, :func:`domain_balance_violations`;
- :func:`build_port_model` and :class:`OcsPorts` (:mod:`optimizer.mapping.ports`), the
  fabric's ports as the mapping sees them (benchmarks compute bounds over it), and
  :func:`resolve_domain` (:mod:`optimizer.mapping.regroup`), one domain mapped exactly, and
  :func:`guide_fixed` (:mod:`optimizer.mapping.dive`), one domain mapped around its LP guide.

Inside, in the order :func:`map_topology` uses them: :mod:`~optimizer.mapping.ports`,
:mod:`~optimizer.mapping.domains` (split over failure domains), :mod:`~optimizer.mapping.ocs`
and :mod:`~optimizer.mapping.flow` (orientation and per-OCS fills),
:mod:`~optimizer.mapping.recolour` with :mod:`~optimizer.mapping.edges`,
:mod:`~optimizer.mapping.chains`, :mod:`~optimizer.mapping.exchange` and
:mod:`~optimizer.mapping.flips` (recolouring), :mod:`~optimizer.mapping.repair` (small
changes from today's circuits), :mod:`~optimizer.mapping.dive` (the LP-guided dive, and the guide-fixed MIP),
:mod:`~optimizer.mapping.cross` (exchanges across two OCSes) and
:mod:`~optimizer.mapping.regroup` (a few OCSes and every new circuit re-solved exactly, across
domains, on sparse fabrics; and small domains re-solved exactly as a whole).
"""

from optimizer.mapping.dive import guide_fixed
from optimizer.mapping.domains import pair_domain_limit
from optimizer.mapping.mapper import (
    PARALLEL_WORK,
    MappingOptions,
    MappingResult,
    ParallelMap,
    change_lower_bound,
    domain_balance_violations,
    domain_layout,
    map_topology,
    unchanged_mapping,
)
from optimizer.mapping.ports import OcsPorts, PortModel, build_port_model
from optimizer.mapping.regroup import resolve_domain

__all__ = [
    "PARALLEL_WORK",
    "MappingOptions",
    "MappingResult",
    "OcsPorts",
    "ParallelMap",
    "PortModel",
    "build_port_model",
    "change_lower_bound",
    "domain_balance_violations",
    "domain_layout",
    "guide_fixed",
    "map_topology",
    "pair_domain_limit",
    "resolve_domain",
    "unchanged_mapping",
]
