"""The reconfiguration policy: gain over a threshold and a minimum interval (no clocks read)."""

from __future__ import annotations

import pytest

from optimizer.errors import ConfigError
from optimizer.policy import ReconfigurePolicy, should_reconfigure

POLICY = ReconfigurePolicy(min_gain=0.05, min_interval_s=3600.0)


def test_a_clear_gain_after_the_interval_is_applied():
    d = should_reconfigure(0.9, 0.6, now=10_000.0, last_change_at=0.0, policy=POLICY)
    assert d.apply
    assert d.gain == pytest.approx(1 / 3)
    assert "MLU" in d.reason and "33.3%" in d.reason


def test_a_small_gain_is_not_worth_it():
    d = should_reconfigure(0.80, 0.78, now=10_000.0, last_change_at=None, policy=POLICY)
    assert not d.apply
    assert "not over the 5.0% threshold" in d.reason


def test_too_soon_after_the_last_change_even_for_a_big_gain():
    d = should_reconfigure(0.9, 0.3, now=1000.0, last_change_at=0.0, policy=POLICY)
    assert not d.apply
    assert "1000 s ago" in d.reason and "3600 s" in d.reason
    later = should_reconfigure(0.9, 0.3, now=3600.0, last_change_at=0.0, policy=POLICY)
    assert later.apply


def test_throughput_gain_counts_when_mlu_does_not_move():
    d = should_reconfigure(
        0.5, 0.5, now=1e6, last_change_at=0.0, policy=POLICY, current_scale=1.6, proposed_scale=2.0
    )
    assert d.apply
    assert "throughput" in d.reason
    assert d.gain == pytest.approx(0.25)


def test_hysteresis_two_topologies_slightly_better_than_each_other_never_flip():
    # A -> B looks 3% better, then B -> A looks 3% better: neither move passes the 5% band
    there = should_reconfigure(0.70, 0.679, now=1e6, last_change_at=0.0, policy=POLICY)
    back = should_reconfigure(0.679, 0.70 * 0.97, now=2e6, last_change_at=0.0, policy=POLICY)
    assert not there.apply and not back.apply


def test_a_worse_topology_and_a_no_op_are_refused():
    worse = should_reconfigure(0.5, 0.7, now=1e6, last_change_at=None, policy=POLICY)
    assert not worse.apply and worse.gain < 0
    none = should_reconfigure(0.9, 0.5, now=1e6, last_change_at=None, policy=POLICY, circuits_changed=0)
    assert not none.apply and "no circuits" in none.reason


def test_a_topology_that_cannot_carry_the_demand_is_always_worth_leaving():
    d = should_reconfigure(float("inf"), 0.9, now=1e6, last_change_at=None, policy=POLICY)
    assert d.apply


def test_bad_policy_values_are_config_errors():
    with pytest.raises(ConfigError, match="min_gain"):
        should_reconfigure(0.9, 0.5, 0.0, None, ReconfigurePolicy(min_gain=-0.1))
    with pytest.raises(ConfigError, match="min_interval_s"):
        should_reconfigure(0.9, 0.5, 0.0, None, ReconfigurePolicy(min_interval_s=float("nan")))


def test_an_overloaded_fabric_does_not_wait_out_the_interval() -> None:
    """Traffic a topology was specialised for has gone and today's MLU is 2.19: the plan that
    brings it back applies at once; a fabric that is merely hot still waits."""
    policy = ReconfigurePolicy(min_gain=0.05, min_interval_s=3600.0)
    back = should_reconfigure(2.19, 0.7, now=100.0, last_change_at=50.0, policy=policy)
    assert back.apply and "overloaded" in back.reason
    hot = should_reconfigure(0.95, 0.7, now=100.0, last_change_at=50.0, policy=policy)
    assert not hot.apply and "minimum interval" in hot.reason
