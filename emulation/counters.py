"""Monotonic 64-bit counters fed with fractional amounts: whole units go to a uint64 total
(which wraps modulo 2**64 like a hardware counter), the fraction is carried over."""

from __future__ import annotations

import numpy as np

_WRAP = 2.0**64


class CounterArray:
    def __init__(self, size: int) -> None:
        self._total = np.zeros(size, dtype=np.uint64)
        self._carry = np.zeros(size, dtype=np.float64)

    def add(self, amounts: np.ndarray | float) -> None:
        """Add non-negative amounts (per element, or one for all)."""
        pending = self._carry + np.maximum(amounts, 0.0)
        whole = np.floor(pending)
        self._carry = pending - whole
        # Split whole amounts into the uint64 range, then add with wrap-around.
        wrapped = np.mod(whole, _WRAP).astype(np.uint64)
        with np.errstate(over="ignore"):
            self._total += wrapped

    def set(self, values: np.ndarray | int) -> None:
        """Preset the totals (tests use this to start near the wrap)."""
        self._total[:] = np.asarray(values, dtype=np.uint64)
        self._carry[:] = 0.0

    def values(self) -> np.ndarray:
        return self._total.copy()
