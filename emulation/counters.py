"""Monotonic 64-bit counters fed with fractional amounts: whole units go to a uint64 total
(which wraps modulo 2**64 like a hardware counter), the fraction is carried over; and a
switch model's counter reading as the device API reports it (:func:`switch_counters`)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from southbound.types import PORT_COUNTER_FIELDS, PortCounters, SwitchCounters

#: the per-port counters of a switch model's reading, in the order of its arrays
PORT_COUNTERS = PORT_COUNTER_FIELDS

_MAX_STEP = 2.0**63  # larger single additions are clipped (never reached: ~1e13 per step)


class CounterArray:
    def __init__(self, shape: int | tuple[int, ...]) -> None:
        self._total = np.zeros(shape, dtype=np.uint64)
        self._carry = np.zeros(shape, dtype=np.float64)

    def add(self, amounts: np.ndarray | float) -> None:
        """Add non-negative amounts (per element, or one for all)."""
        pending = self._carry + np.clip(amounts, 0.0, _MAX_STEP)
        whole = np.floor(pending)
        self._carry = pending - whole
        with np.errstate(over="ignore"):
            self._total += whole.astype(np.uint64)  # uint64 addition wraps at 2**64

    def set(self, values: np.ndarray | int) -> None:
        """Preset the totals (tests use this to start near the wrap)."""
        self._total[:] = np.asarray(values, dtype=np.uint64)
        self._carry[:] = 0.0

    def set_row(self, row: int, values: np.ndarray | int) -> None:
        """Preset one row of a 2-D counter array."""
        self._total[row] = np.asarray(values, dtype=np.uint64)
        self._carry[row] = 0.0

    def values(self) -> np.ndarray:
        return self._total.copy()


def switch_counters(raw: Mapping[str, object]) -> SwitchCounters:
    """A switch model's ``counters()`` (uint64 arrays by name, ``egress``, ``time_s``,
    ``no_route_drops``) as plain types, in Python integers."""
    columns = [np.asarray(raw[f]).tolist() for f in PORT_COUNTERS]
    ports = {
        port: PortCounters(port, **dict(zip(PORT_COUNTERS, row, strict=True)))
        for port, row in enumerate(zip(*columns, strict=True))
    }
    egress = raw["egress"]
    if not isinstance(egress, Mapping):
        raise TypeError("a counter reading's egress must be a mapping")
    return SwitchCounters(
        time_s=float(raw["time_s"]),  # type: ignore[arg-type]
        ports=ports,
        egress_bytes={str(b): int(v) for b, v in egress.items()},
        no_route_drops=int(raw["no_route_drops"]),  # type: ignore[call-overload]
    )
