"""Traffic estimation: counter rates (wrap, reset, gaps, order), the TE matrix, peak prediction."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.sensing.estimation import (
    COUNTER_MODULUS,
    CounterSample,
    EstimationError,
    EstimationSettings,
    PeakPredictor,
    RateEstimator,
    SampleKind,
    TrafficEstimation,
    classify_interval,
)
from optimizer.traffic import TrafficMatrix, matrix_change, matrix_distance

GB = 10**9 // 8  # bytes in one gigabit
BLOCKS = ("b1", "b2", "b3")


def sample(t: float, value: int, epoch: str | None = None) -> CounterSample:
    return CounterSample(t, value, epoch)


def matrix(values: dict[tuple[str, str], float]) -> TrafficMatrix:
    arr = np.zeros((3, 3))
    for (a, b), v in values.items():
        arr[BLOCKS.index(a), BLOCKS.index(b)] = v
    return TrafficMatrix(BLOCKS, arr)


# -- one interval ------------------------------------------------------------------------------


def test_plain_rate_over_the_interval() -> None:
    out = classify_interval(sample(0, 1000), sample(10, 1000 + 100 * GB))
    assert out.kind is SampleKind.RATE
    assert out.rate_gbps == pytest.approx(10.0) and out.interval_s == 10


def test_wrap_near_the_top_of_the_counter_is_a_rate() -> None:
    start = COUNTER_MODULUS - 30 * GB
    out = classify_interval(sample(0, start), sample(10, 20 * GB), max_gbps=400)
    assert out.kind is SampleKind.WRAP
    assert out.rate_gbps == pytest.approx(5.0)


def test_drop_to_a_small_value_is_a_reset_not_a_spike() -> None:
    out = classify_interval(sample(0, 10**15), sample(30, 5 * GB), max_gbps=400)
    assert out.kind is SampleKind.RESET and out.rate_gbps is None


def test_an_epoch_change_is_a_reset_even_when_the_value_grew() -> None:
    out = classify_interval(sample(0, 100, "boot-1"), sample(10, 10**6, "boot-2"))
    assert out.kind is SampleKind.RESET


def test_faster_than_the_ceiling_is_implausible() -> None:
    out = classify_interval(sample(0, 0), sample(1, 1000 * GB), max_gbps=400)
    assert out.kind is SampleKind.IMPLAUSIBLE and out.rate_gbps is None


@pytest.mark.parametrize("later", [0.0, -5.0])
def test_samples_not_newer_than_the_baseline_are_out_of_order(later: float) -> None:
    assert classify_interval(sample(10, 500), sample(10 + later, 900)).kind is SampleKind.OUT_OF_ORDER


@pytest.mark.parametrize("value", [-1, COUNTER_MODULUS, 1.5, True])
def test_invalid_counter_values_are_refused(value: object) -> None:
    with pytest.raises(EstimationError):
        CounterSample(0.0, value)  # type: ignore[arg-type]


def test_non_finite_timestamps_are_refused() -> None:
    with pytest.raises(EstimationError):
        CounterSample(float("nan"), 1)


# -- a source over time ------------------------------------------------------------------------


def test_estimator_keeps_the_last_rate_across_a_reset_and_resumes_after() -> None:
    est = RateEstimator(default_max_gbps=400)
    key = ("b1", "b2")
    assert est.observe(key, sample(0, 10**12), now=0).kind is SampleKind.FIRST
    assert est.rate(key) is None
    est.observe(key, sample(30, 10**12 + 30 * 4 * GB), now=30)
    assert est.rate(key) == pytest.approx(4.0)
    out = est.observe(key, sample(60, 2 * GB), now=60)  # device restarted
    assert out.kind is SampleKind.RESET
    assert est.rate(key) == pytest.approx(4.0)  # not a spike, not a zero: held
    est.observe(key, sample(90, 2 * GB + 30 * 6 * GB), now=90)
    assert est.rate(key) == pytest.approx(6.0)


def test_gaps_give_the_rate_over_the_actual_interval() -> None:
    est = RateEstimator()
    est.observe("p", sample(0, 0), now=0)
    out = est.observe("p", sample(300, 300 * 2 * GB), now=301)  # nine polls missed
    assert out.kind is SampleKind.RATE
    assert out.interval_s == 300 and est.rate("p") == pytest.approx(2.0)


def test_late_out_of_order_samples_are_ignored_and_keep_the_baseline() -> None:
    est = RateEstimator()
    est.observe("p", sample(0, 0), now=0)
    est.observe("p", sample(30, 30 * GB), now=30)
    assert est.observe("p", sample(20, 999 * GB), now=31).kind is SampleKind.OUT_OF_ORDER
    assert est.rate("p") == pytest.approx(1.0)
    est.observe("p", sample(60, 90 * GB), now=60)
    assert est.rate("p") == pytest.approx(2.0)  # measured from the t=30 baseline


def test_per_source_ceilings_decide_wrap_or_reset() -> None:
    est = RateEstimator(max_gbps={"slow": 1.0})
    near_top = COUNTER_MODULUS - 10 * GB
    for key in ("slow", "fast"):
        est.observe(key, sample(0, near_top), now=0)
    assert est.observe("slow", sample(10, 10 * GB), now=10).kind is SampleKind.RESET  # 16 Gbit/s > 1
    assert est.observe("fast", sample(10, 10 * GB), now=10).kind is SampleKind.WRAP
    with pytest.raises(EstimationError):
        est.set_ceiling("slow", 0)


def test_traffic_matrix_reports_stale_and_missing_pairs() -> None:
    est = RateEstimator()
    est.observe(("b1", "b2"), sample(0, 0), now=0)
    est.observe(("b1", "b2"), sample(30, 30 * 5 * GB), now=30)
    est.observe(("b2", "b3"), sample(0, 0), now=0)
    est.observe(("b2", "b3"), sample(30, 30 * 7 * GB), now=30)
    est.observe(("b2", "b3"), sample(60, 60 * 7 * GB), now=60)
    est.observe(("b3", "b1"), sample(60, 0), now=60)  # baseline only
    report = est.traffic_matrix(BLOCKS, now=100, stale_after=45)
    assert report.matrix.demand("b1", "b2") == pytest.approx(5.0)  # held while stale
    assert report.matrix.demand("b2", "b3") == pytest.approx(7.0)
    assert report.stale == (("b1", "b2"),)
    assert ("b3", "b1") in report.missing and ("b2", "b1") in report.missing
    assert report.matrix.demand("b3", "b1") == 0.0
    assert est.stale_sources(now=100, stale_after=45) == [("b1", "b2")]


@settings(max_examples=200, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.floats(min_value=-5, max_value=100, allow_nan=False),  # time step (may go back)
            st.integers(min_value=0, max_value=COUNTER_MODULUS - 1),  # next raw value
            st.booleans(),  # restart the epoch
        ),
        min_size=1,
        max_size=40,
    ),
    ceiling=st.floats(min_value=1, max_value=1e5),
)
def test_rates_are_never_negative_nor_above_the_ceiling(
    steps: list[tuple[float, int, bool]], ceiling: float
) -> None:
    est = RateEstimator(default_max_gbps=ceiling)
    t, epoch = 0.0, 0
    for dt, value, restart in steps:
        t += dt
        epoch += int(restart)
        out = est.observe("k", CounterSample(t, value, epoch), now=t)
        if out.rate_gbps is not None:
            assert 0.0 <= out.rate_gbps <= ceiling
            assert out.kind in (SampleKind.RATE, SampleKind.WRAP)
    rate = est.rate("k")
    assert rate is None or 0.0 <= rate <= ceiling


@settings(max_examples=100, deadline=None)
@given(
    rates=st.lists(st.floats(min_value=0, max_value=400), min_size=2, max_size=30),
    start=st.integers(min_value=0, max_value=COUNTER_MODULUS - 1),
)
def test_steady_counting_through_wraps_recovers_every_rate(rates: list[float], start: int) -> None:
    est = RateEstimator(default_max_gbps=400)
    value, t = start, 0.0
    est.observe("k", CounterSample(t, value), now=t)
    for rate in rates:
        t += 30.0
        value = (value + round(rate * 30 * GB)) % COUNTER_MODULUS
        out = est.observe("k", CounterSample(t, value), now=t)
        assert out.rate_gbps == pytest.approx(rate, abs=1e-6)


# -- matrix distance and the peak prediction ---------------------------------------------------


def test_matrix_change_is_the_largest_relative_pair_change_with_a_floor() -> None:
    old = matrix({("b1", "b2"): 100.0, ("b2", "b3"): 10.0})
    new = matrix({("b1", "b2"): 110.0, ("b2", "b3"): 15.0, ("b3", "b1"): 0.5})
    change = matrix_change(new, old, floor_gbps=1.0)
    assert change.distance == pytest.approx(0.5) and change.pair == ("b2", "b3")
    # A new tiny pair counts against the floor, not as an infinite relative change.
    assert matrix_distance(matrix({("b3", "b1"): 0.5}), matrix({}), floor_gbps=1.0) == pytest.approx(0.5)
    assert matrix_distance(new, None) == float("inf")
    assert matrix_distance(old, old) == 0.0


def test_peak_prediction_is_the_per_pair_peak_over_the_window() -> None:
    p = PeakPredictor(window_s=100, change_threshold=0.0)
    p.observe(0, matrix({("b1", "b2"): 50.0, ("b2", "b3"): 1.0}))
    p.observe(30, matrix({("b1", "b2"): 10.0, ("b2", "b3"): 8.0}))
    update = p.observe(60, matrix({("b1", "b2"): 20.0}))
    assert update.prediction.demand("b1", "b2") == 50.0
    assert update.prediction.demand("b2", "b3") == 8.0
    # At t=110 the t=0 matrix has left the window: the b1->b2 peak falls to 20.
    update = p.observe(110, matrix({("b1", "b2"): 5.0}))
    assert update.peak.demand("b1", "b2") == 20.0 and update.peak.demand("b2", "b3") == 8.0
    assert [t for t, _ in p.history()] == [30, 60, 110]


def test_prediction_is_only_republished_past_the_threshold() -> None:
    p = PeakPredictor(window_s=1000, change_threshold=0.2, floor_gbps=1.0)
    first = p.observe(0, matrix({("b1", "b2"): 100.0}))
    assert first.refreshed and first.prediction.demand("b1", "b2") == 100.0
    small = p.observe(30, matrix({("b1", "b2"): 115.0}))  # +15%: the peak moves, not the prediction
    assert not small.refreshed
    assert small.prediction.demand("b1", "b2") == 100.0 and small.peak.demand("b1", "b2") == 115.0
    big = p.observe(60, matrix({("b1", "b2"): 130.0}))  # +30% over what was published
    assert big.refreshed and big.prediction.demand("b1", "b2") == 130.0
    assert big.change.pair == ("b1", "b2") and big.change.distance == pytest.approx(0.3)


def test_prediction_falls_when_a_peak_leaves_the_window() -> None:
    p = PeakPredictor(window_s=100, change_threshold=0.2)
    p.observe(0, matrix({("b1", "b2"): 100.0}))
    p.observe(50, matrix({("b1", "b2"): 10.0}))
    held = p.observe(99, matrix({("b1", "b2"): 10.0}))
    assert held.prediction.demand("b1", "b2") == 100.0
    fallen = p.observe(101, matrix({("b1", "b2"): 10.0}))
    assert fallen.refreshed and fallen.prediction.demand("b1", "b2") == 10.0


def test_predictor_restores_from_history_and_the_published_prediction() -> None:
    history = [(float(t), matrix({("b1", "b2"): float(t)})) for t in range(0, 200, 30)]
    published = matrix({("b1", "b2"): 150.0})
    p = PeakPredictor.restore(history, now=200, prediction=published, window_s=100, change_threshold=0.2)
    assert p.prediction is published
    assert [t for t, _ in p.history()] == [120.0, 150.0, 180.0]
    update = p.refresh()
    assert not update.refreshed and update.peak.demand("b1", "b2") == 180.0  # +20%: not past it


def test_predictor_refuses_matrices_over_other_blocks() -> None:
    p = PeakPredictor()
    p.observe(0, matrix({}))
    with pytest.raises(EstimationError):
        p.observe(30, TrafficMatrix.zeros(["x", "y"]))
    with pytest.raises(EstimationError):
        PeakPredictor(window_s=0)
    with pytest.raises(EstimationError):
        PeakPredictor().refresh()


# -- one cycle ---------------------------------------------------------------------------------


def poll(t: float, gbps: dict[tuple[str, str], float], totals: dict) -> list:
    """Advance each pair's counter by ``gbps`` for 30 s and return the samples at ``t``."""
    out = []
    for key, rate in gbps.items():
        totals[key] = totals.get(key, 0) + round(rate * 30 * GB)
        out.append((key, CounterSample(t, totals[key])))
    return out


def test_a_cycle_makes_the_te_matrix_decides_te_and_feeds_the_prediction() -> None:
    settings = EstimationSettings(stale_after=45, prediction_window=600, te_matrix_change=0.1)
    est = TrafficEstimation(BLOCKS, settings)
    counters: dict = {}
    first = est.cycle(poll(0, {("b1", "b2"): 10.0, ("b2", "b3"): 4.0}, counters), now=0)
    assert first.prediction is None and not first.te_due  # baselines only
    assert first.outcomes[SampleKind.FIRST] == 2
    second = est.cycle(poll(30, {("b1", "b2"): 10.0, ("b2", "b3"): 4.0}, counters), now=30)
    assert second.te_due and second.prediction is not None and second.prediction.refreshed
    assert second.estimate.matrix.demand("b1", "b2") == pytest.approx(10.0)
    est.te_ran(second.estimate.matrix)
    calm = est.cycle(poll(60, {("b1", "b2"): 10.5, ("b2", "b3"): 4.0}, counters), now=60)
    assert not calm.te_due and calm.te_change.distance == pytest.approx(0.05)
    shift = est.cycle(poll(90, {("b1", "b2"): 10.0, ("b2", "b3"): 8.0}, counters), now=90)
    assert shift.te_due and shift.te_change.pair == ("b2", "b3")
    assert shift.prediction is not None
    assert shift.prediction.prediction.demand("b2", "b3") == pytest.approx(8.0)
    assert est.te_matrix is second.estimate.matrix
