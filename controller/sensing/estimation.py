"""Traffic estimation: byte counters become rates, rates become the TE matrix and the ToE prediction.

Pure: nothing here reads a clock or does I/O. The caller passes ``now`` (the controller's
clock when a sample arrived) and each sample carries the device's own read time.

**Rates.** A *source* is one monotonic unsigned 64-bit byte counter, keyed by anything
hashable; the daemon keys per-destination egress counters by ``(src_block, dst_block)``
and port counters by ``(device, port, direction)``. Each new sample is judged against the
last accepted one (:func:`classify_interval`):

- the first sample of a source is only a baseline (no rate yet);
- a sample whose timestamp is not after the last accepted one is *out of order* (late
  duplicate or reordered): it is ignored and the baseline is kept;
- a sample whose ``epoch`` differs from the baseline's is a *reset* (the device says its
  counters restarted, e.g. a boot id);
- if the value grew, the delta is the difference;
- if the value fell, it is a *wrap* when the modular delta ``value - last + 2**64``
  implies a rate no higher than the source's ceiling (``max_gbps``, e.g. the block's
  uplink capacity); otherwise the counter was *reset*;
- a delta implying more than the ceiling is *implausible* (e.g. a reset followed by a
  regrowth past the old value, or a bad read).

**A reset is not a spike.** For a reset or an implausible interval no rate is produced:
the interval is dropped, the new sample becomes the baseline, and the source keeps its
previous rate until the next clean interval. The value read after a reset is *not* used
as a delta: the restart time is unknown, so ``value / interval`` would only be a lower
bound. Gaps are tolerated: the rate is taken over the actual interval between the two
samples, however long. A source with no sample received for ``stale_after`` seconds is
reported *stale*; its last rate is held (fail static: zeroing it would tell TE that the
demand vanished), and the daemon decides what to do about it.

**The TE matrix** is the latest rate of every ``(src, dst)`` source (Gbit/s).

**The ToE prediction** (:class:`PeakPredictor`) is, per pair, the peak over the last
``window_s`` seconds of the observed matrices. The published prediction is only replaced
when the current peak has moved from it by more than ``change_threshold`` under
:func:`optimizer.traffic.matrix_distance`: the largest change of any pair relative to the published value,
where values below ``floor_gbps`` count as ``floor_gbps`` (so that noise on tiny pairs
does not trigger a refresh).

:class:`TrafficEstimation` runs one poll through all of this and says whether TE is due
(the TE matrix moved more than ``te_matrix_change`` from the one TE last ran on). After a
restart, rebuild the predictor with :meth:`PeakPredictor.restore` from the journal's
matrix history and the published prediction it stored.

Tomogravity (inferring the matrix from link loads) is in :mod:`controller.sensing.tomogravity`.
"""

from __future__ import annotations

import bisect
import logging
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from optimizer.errors import HeliostatError
from optimizer.traffic import MatrixChange, TrafficMatrix, matrix_change

log = logging.getLogger(__name__)

COUNTER_MODULUS = 2**64
BITS_PER_BYTE = 8
DEFAULT_MAX_GBPS = 100_000.0  # 100 Tbit/s: a ceiling no single block counter can reach


class EstimationError(HeliostatError):
    """Invalid input to the estimator (a bad sample, a matrix over other blocks...)."""


@dataclass(frozen=True, slots=True)
class CounterSample:
    """One reading of a byte counter.

    ``timestamp`` is the device's clock when the counter was read (seconds); rates are
    computed over differences of it. ``epoch`` optionally identifies the counter's life
    (e.g. a boot id): a change of epoch is a reset for certain.
    """

    timestamp: float
    value: int
    epoch: str | int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.value, bool) or not isinstance(self.value, int | np.integer):
            raise EstimationError(f"counter value must be an integer, got {self.value!r}")
        if not 0 <= int(self.value) < COUNTER_MODULUS:
            raise EstimationError(f"counter value {self.value} is outside the unsigned 64-bit range")
        if not math.isfinite(self.timestamp):
            raise EstimationError(f"sample timestamp must be finite, got {self.timestamp!r}")


class SampleKind(StrEnum):
    """What a sample did to its source."""

    FIRST = "first"  # baseline only
    RATE = "rate"  # a clean interval
    WRAP = "wrap"  # a clean interval across a 64-bit wrap
    RESET = "reset"  # the counter restarted: interval dropped
    IMPLAUSIBLE = "implausible"  # faster than the ceiling: interval dropped
    OUT_OF_ORDER = "out_of_order"  # not newer than the baseline: sample ignored


@dataclass(frozen=True, slots=True)
class SampleOutcome:
    kind: SampleKind
    rate_gbps: float | None = None
    interval_s: float | None = None

def gbps(delta_bytes: int, interval_s: float) -> float:
    return delta_bytes * BITS_PER_BYTE / interval_s / 1e9


def classify_interval(
    previous: CounterSample, current: CounterSample, max_gbps: float = DEFAULT_MAX_GBPS
) -> SampleOutcome:
    """Judge ``current`` against the baseline ``previous`` (the rules are in the module doc)."""
    interval = current.timestamp - previous.timestamp
    if interval <= 0:
        return SampleOutcome(SampleKind.OUT_OF_ORDER)
    if current.epoch != previous.epoch:
        return SampleOutcome(SampleKind.RESET, interval_s=interval)
    cur, prev = int(current.value), int(previous.value)
    if cur >= prev:
        rate = gbps(cur - prev, interval)
        if rate > max_gbps:
            return SampleOutcome(SampleKind.IMPLAUSIBLE, interval_s=interval)
        return SampleOutcome(SampleKind.RATE, rate, interval)
    rate = gbps(cur - prev + COUNTER_MODULUS, interval)
    if rate > max_gbps:
        return SampleOutcome(SampleKind.RESET, interval_s=interval)
    return SampleOutcome(SampleKind.WRAP, rate, interval)


@dataclass(slots=True)
class SourceState:
    """What the estimator remembers of one counter."""

    baseline: CounterSample
    received: float  # controller clock when the baseline arrived
    rate_gbps: float | None = None
    rate_timestamp: float | None = None  # device time at the end of the interval of rate_gbps


@dataclass(frozen=True)
class MatrixEstimate:
    """The TE matrix and what it is missing.

    ``stale`` pairs hold their last rate; ``missing`` pairs have no rate yet (0 in the
    matrix), either never sampled or only a baseline so far.
    """

    matrix: TrafficMatrix
    stale: tuple[tuple[str, str], ...]
    missing: tuple[tuple[str, str], ...]


class RateEstimator:
    """Turns counter samples into rates, one source at a time.

    ``max_gbps`` gives per-source ceilings (the rate above which a delta is not believed);
    other sources use ``default_max_gbps``.
    """

    def __init__(
        self,
        default_max_gbps: float = DEFAULT_MAX_GBPS,
        max_gbps: Mapping[Hashable, float] | None = None,
    ) -> None:
        if not default_max_gbps > 0:
            raise EstimationError(f"default_max_gbps must be > 0, got {default_max_gbps}")
        self._default_max = default_max_gbps
        self._max: dict[Hashable, float] = dict(max_gbps or {})
        self._sources: dict[Hashable, SourceState] = {}

    def ceiling(self, key: Hashable) -> float:
        return self._max.get(key, self._default_max)

    def set_ceiling(self, key: Hashable, max_gbps: float) -> None:
        if not max_gbps > 0:
            raise EstimationError(f"ceiling of {key!r} must be > 0, got {max_gbps}")
        self._max[key] = max_gbps

    def observe(self, key: Hashable, sample: CounterSample, now: float) -> SampleOutcome:
        """Take one sample of source ``key``, received at controller time ``now``."""
        state = self._sources.get(key)
        if state is None:
            self._sources[key] = SourceState(baseline=sample, received=now)
            return SampleOutcome(SampleKind.FIRST)
        outcome = classify_interval(state.baseline, sample, self.ceiling(key))
        if outcome.kind is SampleKind.OUT_OF_ORDER:
            log.debug(
                "source %r: sample at %s is not after %s, ignored",
                key,
                sample.timestamp,
                state.baseline.timestamp,
            )
            return outcome
        if outcome.kind in (SampleKind.RESET, SampleKind.IMPLAUSIBLE):
            log.info(
                "source %r: counter %s (%d -> %d over %.3g s), interval dropped",
                key,
                outcome.kind.value,
                state.baseline.value,
                sample.value,
                outcome.interval_s,
            )
        else:
            state.rate_gbps = outcome.rate_gbps
            state.rate_timestamp = sample.timestamp
        state.baseline = sample
        state.received = now
        return outcome

    def observe_many(
        self, samples: Iterable[tuple[Hashable, CounterSample]], now: float
    ) -> dict[Hashable, SampleOutcome]:
        return {key: self.observe(key, sample, now) for key, sample in samples}

    def rate(self, key: Hashable) -> float | None:
        """The latest rate of ``key`` in Gbit/s, or None if it has none yet."""
        state = self._sources.get(key)
        return None if state is None else state.rate_gbps

    def rates(self) -> dict[Hashable, float]:
        return {k: s.rate_gbps for k, s in self._sources.items() if s.rate_gbps is not None}

    def source(self, key: Hashable) -> SourceState | None:
        return self._sources.get(key)

    def stale_sources(self, now: float, stale_after: float) -> list[Hashable]:
        return [k for k, s in self._sources.items() if now - s.received > stale_after]

    def traffic_matrix(self, blocks: Sequence[str], now: float, stale_after: float) -> MatrixEstimate:
        """The TE matrix from the sources keyed ``(src, dst)`` over ``blocks``."""
        names = tuple(blocks)
        n = len(names)
        arr = np.zeros((n, n))
        stale: list[tuple[str, str]] = []
        missing: list[tuple[str, str]] = []
        for i, src in enumerate(names):
            for j, dst in enumerate(names):
                if i == j:
                    continue
                state = self._sources.get((src, dst))
                if state is None or state.rate_gbps is None:
                    missing.append((src, dst))
                    continue
                arr[i, j] = state.rate_gbps
                if now - state.received > stale_after:
                    stale.append((src, dst))
        return MatrixEstimate(TrafficMatrix(names, arr), tuple(stale), tuple(missing))


# -- distance between matrices -------------------------------------------------------------


# -- the ToE prediction --------------------------------------------------------------------


@dataclass(frozen=True)
class PredictionUpdate:
    """The result of one observation: the published prediction and whether it changed."""

    prediction: TrafficMatrix
    peak: TrafficMatrix
    refreshed: bool
    change: MatrixChange


class PeakPredictor:
    """Per pair, the peak of the observed matrices over the last ``window_s`` seconds.

    :meth:`observe` adds a matrix and returns the published prediction, which is replaced
    by the current peak only when the peak moved more than ``change_threshold`` from it
    (see :func:`optimizer.traffic.matrix_change`). State can be rebuilt after a restart with :meth:`restore`
    from the journal's matrix history and the last published prediction.
    """

    def __init__(
        self, window_s: float = 3600.0, change_threshold: float = 0.2, floor_gbps: float = 1.0
    ) -> None:
        if not window_s > 0:
            raise EstimationError(f"window_s must be > 0, got {window_s}")
        if not change_threshold >= 0:
            raise EstimationError(f"change_threshold must be >= 0, got {change_threshold}")
        if not floor_gbps > 0:
            raise EstimationError(f"floor_gbps must be > 0, got {floor_gbps}")
        self.window_s = window_s
        self.change_threshold = change_threshold
        self.floor_gbps = floor_gbps
        self._times: list[float] = []
        self._matrices: list[TrafficMatrix] = []
        self._prediction: TrafficMatrix | None = None

    @property
    def prediction(self) -> TrafficMatrix | None:
        """The published prediction (None before the first observation)."""
        return self._prediction

    def history(self) -> list[tuple[float, TrafficMatrix]]:
        """The matrices inside the window, oldest first."""
        return list(zip(self._times, self._matrices, strict=True))

    def peak(self) -> TrafficMatrix | None:
        """The elementwise peak of the matrices inside the window."""
        if not self._matrices:
            return None
        return TrafficMatrix(self._matrices[0].blocks, np.max([m.gbps for m in self._matrices], axis=0))

    def add(self, timestamp: float, matrix: TrafficMatrix) -> None:
        """Record a matrix without pruning or publishing (used to replay history)."""
        if self._matrices and matrix.blocks != self._matrices[0].blocks:
            raise EstimationError("the matrix is over other blocks than the predictor's history")
        if self._prediction is not None and matrix.blocks != self._prediction.blocks:
            raise EstimationError("the matrix is over other blocks than the published prediction")
        pos = bisect.bisect_right(self._times, timestamp)
        self._times.insert(pos, timestamp)
        self._matrices.insert(pos, matrix)

    def prune(self, now: float) -> int:
        """Drop matrices older than ``now - window_s``; returns how many were dropped."""
        cut = bisect.bisect_left(self._times, now - self.window_s)
        del self._times[:cut]
        del self._matrices[:cut]
        return cut

    def observe(self, now: float, matrix: TrafficMatrix) -> PredictionUpdate:
        """Add the matrix measured at ``now``, prune the window, refresh if the peak moved."""
        self.add(now, matrix)
        self.prune(now)
        return self.refresh()

    def refresh(self, force: bool = False) -> PredictionUpdate:
        """Publish the current peak if it moved past the threshold (or if ``force``)."""
        peak = self.peak()
        if peak is None:
            raise EstimationError("no matrix observed inside the window yet")
        change = matrix_change(peak, self._prediction, self.floor_gbps)
        published = self._prediction
        refreshed = force or published is None or change.distance > self.change_threshold
        if refreshed or published is None:
            if published is not None:
                log.info("prediction refreshed: pair %s moved by %.0f%%", change.pair, 100 * change.distance)
            published = peak
            self._prediction = peak
        return PredictionUpdate(published, peak, refreshed, change)

    @classmethod
    def restore(
        cls,
        history: Iterable[tuple[float, TrafficMatrix]],
        now: float,
        prediction: TrafficMatrix | None = None,
        window_s: float = 3600.0,
        change_threshold: float = 0.2,
        floor_gbps: float = 1.0,
    ) -> PeakPredictor:
        """Rebuild a predictor from journaled history and the last published prediction."""
        predictor = cls(window_s, change_threshold, floor_gbps)
        predictor._prediction = prediction
        for timestamp, matrix in history:
            predictor.add(timestamp, matrix)
        predictor.prune(now)
        return predictor


# -- one estimation cycle ------------------------------------------------------------------


@dataclass(frozen=True)
class EstimationSettings:
    """The knobs of :class:`TrafficEstimation` (the controller config's intervals and thresholds)."""

    stale_after: float = 90.0
    prediction_window: float = 3600.0
    prediction_change: float = 0.2
    te_matrix_change: float = 0.05
    floor_gbps: float = 1.0


@dataclass(frozen=True)
class EstimationCycle:
    """What one poll produced: the TE matrix, whether TE is due, and the prediction."""

    estimate: MatrixEstimate
    te_change: MatrixChange
    te_due: bool
    prediction: PredictionUpdate | None  # None while no pair has a rate yet
    outcomes: Mapping[SampleKind, int]


class TrafficEstimation:
    """Rates, the TE trigger and the peak prediction for one fabric's ``(src, dst)`` counters.

    Each :meth:`cycle` takes the samples of one poll. TE is due when the TE matrix moved by
    more than ``te_matrix_change`` (see :func:`optimizer.traffic.matrix_change`) from the matrix TE last ran
    on; the daemon reports that run with :meth:`te_ran`.
    """

    def __init__(
        self,
        blocks: Sequence[str],
        settings: EstimationSettings | None = None,
        rates: RateEstimator | None = None,
        predictor: PeakPredictor | None = None,
    ) -> None:
        self.blocks = tuple(blocks)
        self.settings = settings or EstimationSettings()
        self.rates = rates or RateEstimator()
        s = self.settings
        self.predictor = predictor or PeakPredictor(s.prediction_window, s.prediction_change, s.floor_gbps)
        self._te_matrix: TrafficMatrix | None = None

    @property
    def te_matrix(self) -> TrafficMatrix | None:
        """The matrix TE last ran on."""
        return self._te_matrix

    def te_ran(self, matrix: TrafficMatrix) -> None:
        self._te_matrix = matrix

    def cycle(self, samples: Iterable[tuple[Hashable, CounterSample]], now: float) -> EstimationCycle:
        counts = dict.fromkeys(SampleKind, 0)
        for key, sample in samples:
            counts[self.rates.observe(key, sample, now).kind] += 1
        estimate = self.rates.traffic_matrix(self.blocks, now, self.settings.stale_after)
        n = len(self.blocks)
        if len(estimate.missing) == n * (n - 1):
            return EstimationCycle(estimate, MatrixChange(0.0, None), False, None, counts)
        te_change = matrix_change(estimate.matrix, self._te_matrix, self.settings.floor_gbps)
        te_due = te_change.distance > self.settings.te_matrix_change
        prediction = self.predictor.observe(now, estimate.matrix)
        return EstimationCycle(estimate, te_change, te_due, prediction, counts)
