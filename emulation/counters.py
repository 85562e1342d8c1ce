"""Monotonic 64-bit counters fed with fractional amounts: whole units go to a uint64 total
(which wraps modulo 2**64 like a hardware counter), the fraction is carried over."""

from __future__ import annotations

import numpy as np

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
