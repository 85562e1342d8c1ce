"""The load on every block pair and device over the last polls, for the page's drill-downs.

One sample per poll: the time, then per block pair (and per device) the load and the
capacity in Gbit/s. Bounded (the last :data:`MAX_LOAD_SAMPLES`) and compact: a sample keeps
its figures in two ``array('d')`` against a key tuple shared with the sample before while the
keys do not change, so fabric-64's 2,016 pairs and 320 devices cost about 40 KB a poll (5 MB
in all, measured with tracemalloc).
Thread-safe (one lock); no I/O; times are given by the caller.
"""

from __future__ import annotations

import math
import threading
from array import array
from collections import deque
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

#: Samples kept: an hour at the default 30 s ``te_interval``.
MAX_LOAD_SAMPLES = 120

#: load and capacity in Gbit/s
Figures = tuple[float, float]


@dataclass(frozen=True)
class _Series:
    """One kind of entity (links or devices) in one sample."""

    index: Mapping[Hashable, int]
    load: array
    capacity: array

    def get(self, key: Hashable) -> Figures | None:
        i = self.index.get(key)
        return None if i is None else (self.load[i], self.capacity[i])


@dataclass(frozen=True)
class _Sample:
    time: float
    links: _Series
    devices: _Series


def _number(value: float) -> float:
    return float(value) if math.isfinite(value) else 0.0


class LoadHistory:
    """``record`` writes one poll's figures; the rest read them."""

    def __init__(self, max_samples: int = MAX_LOAD_SAMPLES) -> None:
        self._lock = threading.Lock()
        self._samples: deque[_Sample] = deque(maxlen=max_samples)

    def record(
        self, time: float, links: Mapping[tuple[str, str], Figures], devices: Mapping[str, Figures]
    ) -> None:
        """One poll: ``links`` by block pair (in the order the caller names pairs), ``devices``
        by name; each value is (load, capacity) in Gbit/s."""
        with self._lock:
            last = self._samples[-1] if self._samples else None
            self._samples.append(_Sample(
                time,
                self._series(links, last.links if last else None),
                self._series(devices, last.devices if last else None),
            ))

    @staticmethod
    def _series(figures: Mapping[Any, Figures], previous: _Series | None) -> _Series:
        keys = list(figures)
        if previous is not None and len(previous.index) == len(keys) and set(keys) <= previous.index.keys():
            index = previous.index  # the same keys: share the index
            order = sorted(keys, key=index.__getitem__)
        else:
            index = {k: i for i, k in enumerate(keys)}
            order = keys
        load = array("d", (_number(figures[k][0]) for k in order))
        capacity = array("d", (_number(figures[k][1]) for k in order))
        return _Series(index, load, capacity)

    def latest(self) -> tuple[float, dict[tuple[str, str], Figures], dict[str, Figures]] | None:
        """The last poll's time and figures, or None before the first."""
        with self._lock:
            if not self._samples:
                return None
            last = self._samples[-1]
        links = {k: (last.links.load[i], last.links.capacity[i]) for k, i in last.links.index.items()}
        devices = {k: (last.devices.load[i], last.devices.capacity[i]) for k, i in last.devices.index.items()}
        return last.time, links, devices  # type: ignore[return-value]

    def link(self, a: str, b: str, limit: int = MAX_LOAD_SAMPLES) -> list[dict[str, float | None]]:
        """The pair's samples, oldest first (load and capacity None while it had no circuit)."""
        key = (a, b)
        return self._history(lambda s: s.links.get(key) or s.links.get((b, a)), limit)

    def device(self, name: str, limit: int = MAX_LOAD_SAMPLES) -> list[dict[str, float | None]]:
        return self._history(lambda s: s.devices.get(name), limit)

    def _history(self, pick: Any, limit: int) -> list[dict[str, float | None]]:
        with self._lock:
            samples = list(self._samples)[-limit:] if limit > 0 else []
        out: list[dict[str, float | None]] = []
        for sample in samples:
            figures = pick(sample)
            load, capacity = figures if figures is not None else (None, None)
            out.append({"time": sample.time, "load_gbps": load, "capacity_gbps": capacity})
        return out

    def __len__(self) -> int:
        with self._lock:
            return len(self._samples)
