"""TE re-plans when the weights in force no longer fit the traffic (issue 26).

- the decision: stale weights run TE, a bounded number of times in a row;
- the TE pusher's fit of the weights in force, against an independent routing of the groups
  and the LP optimum;
- the daemon's own loop (``heliostat replay``) on steps that hold, load steps, a one-interval
  blip, a ramp, on/off bursts and a noisy step, on shipped fabrics: the weights in force are
  within 1.10 of the optimum two TE intervals after every move;
- the warnings tell stale weights from a demand the topology cannot carry.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from controller import decision as dec
from controller.config import ControllerConfig
from controller.replay.engine import ReplayEngine, ReplayResult
from controller.replay.routing import routed_loads, trunk_members
from controller.replay.series import Series
from controller.te_loop.te_push import TePusher, group_tables
from optimizer.te import TeSolver
from optimizer.topology import Topology, uniform_mesh
from optimizer.traffic import gravity_matrix, hotspot_matrix, uniform_matrix
from tests.support import CONFIGS, shipped_fabric
from tests.support.shaped_series import series_of, settled_ratios, shapes, steps

FABRIC8 = shipped_fabric("fabric-8")
MESH8 = frozenset(uniform_mesh(FABRIC8))
SETTINGS = dec.Settings()


def settled_state() -> dec.ControlState:
    return dec.ControlState(te_circuits=MESH8, last_te_at=100.0, last_toe_check_at=100.0, intended=MESH8)


def observe(fit: dec.WeightsFit | None, te_due: bool = False) -> dec.Observation:
    return dec.Observation(live_circuits=MESH8, have_matrix=True, te_due=te_due, weights_fit=fit)


# -- the decision ---------------------------------------------------------------------------


def test_stale_weights_run_te_and_name_both_figures() -> None:
    state, actions = dec.decide(settled_state(), observe(dec.WeightsFit(3.0589, 0.5805)), 130.0, SETTINGS)
    assert [type(a) for a in actions] == [dec.RunTe]
    assert actions[0].reason == ("the weights in force give MLU 3.0589 where 0.5805 is possible; re-planning")
    assert state.te_stale_runs == 1


def test_weights_within_the_ratio_or_judged_on_a_bound_do_not_run_te() -> None:
    fits = [dec.WeightsFit(0.60, 0.5805), dec.WeightsFit(3.0, 0.5, exact=False)]
    for fit in fits:
        _, actions = dec.decide(settled_state(), observe(fit), 130.0, SETTINGS)
        assert actions == []


def test_stale_reruns_stop_after_the_limit_and_count_again_after_another_reason() -> None:
    state, stale = settled_state(), observe(dec.WeightsFit(1.3, 1.0))
    runs = 0
    for now in range(130, 400, 30):
        state, actions = dec.decide(state, stale, float(now), SETTINGS)
        if any(isinstance(a, dec.RunTe) for a in actions):
            runs += 1
            state = dec.te_finished(state, float(now), MESH8, True)
    assert runs == SETTINGS.max_stale_runs  # a fit no re-plan improves does not run TE forever
    state, actions = dec.decide(state, observe(None, te_due=True), 400.0, SETTINGS)
    assert actions[0].reason == "traffic matrix changed" and state.te_stale_runs == 0
    state, actions = dec.decide(state, stale, 430.0, SETTINGS)
    assert isinstance(actions[0], dec.RunTe) and actions[0].reason.startswith(dec.STALE_REASON)


# -- the fit of the weights in force --------------------------------------------------------


class _NoDevices:
    """The pusher's devices: never reached by weights_fit."""

    def push_groups(self, *args: object) -> dict[str, int]:
        raise AssertionError("weights_fit pushes nothing")


def test_weights_fit_agrees_with_an_independent_routing_of_the_groups() -> None:
    pusher = TePusher(FABRIC8, _NoDevices())  # type: ignore[arg-type]
    uniform, hot = uniform_matrix(FABRIC8, 0.5), hotspot_matrix(FABRIC8, 1, 0.5)
    assert pusher.weights_fit(MESH8, hot, 1.10) is None  # nothing pushed yet
    planned = TeSolver(FABRIC8).solve(Topology.from_circuits(FABRIC8, MESH8), uniform)
    pusher.pushed = group_tables(planned, FABRIC8.block_names)
    fit = pusher.weights_fit(MESH8, hot, 1.10)
    assert fit is not None and fit.exact
    members = trunk_members(FABRIC8, MESH8)
    independent = routed_loads(FABRIC8, pusher.pushed, np.asarray(hot.gbps), members).mlu()
    assert fit.in_force == pytest.approx(independent, rel=1e-9)
    assert fit.possible == pytest.approx(TeSolver(FABRIC8).min_mlu(None, hot, ()), rel=1e-6)
    assert fit.stale(1.10)
    # the weights planned for the matrix fit it: judged on the cheap bound, no LP needed
    fit = pusher.weights_fit(MESH8, uniform, 1.10)
    assert fit is not None and not fit.stale(1.10)


# -- the daemon's loop on shaped series -----------------------------------------------------


def replay(name: str, series: Series, tmp_path: Path) -> ReplayResult:
    path = CONFIGS / f"{name}.yaml"
    base = ControllerConfig("<test>", path, tmp_path / "devices.yaml", tmp_path / "journal.db")
    config = replace(base, intervals=replace(base.intervals, te_interval=30.0))
    return ReplayEngine(path, shipped_fabric(name), series, config, toe=False).run()


def _settles(name: str, shape: str, tmp_path: Path) -> None:
    series = shapes(shipped_fabric(name))[shape]
    result = replay(name, series, tmp_path)
    late = settled_ratios(series, [s.ratio for s in result.snapshots])
    assert late, "the series has snapshots two intervals after a move"
    worst = max(late, key=lambda kr: kr[1])
    assert worst[1] <= 1.10, f"{name} {shape}: snapshot {worst[0]} at {worst[1]:.3f} x the optimum"


@pytest.mark.parametrize("shape", sorted(shapes(FABRIC8)))
def test_the_weights_in_force_settle_within_two_intervals_of_every_move(shape: str, tmp_path: Path) -> None:
    _settles("fabric-8", shape, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["fabric-4", "fabric-hybrid-8", "fabric-hybrid-4"])
@pytest.mark.parametrize("shape", sorted(shapes(FABRIC8)))
def test_every_shape_settles_on_the_other_shipped_fabrics(name: str, shape: str, tmp_path: Path) -> None:
    _settles(name, shape, tmp_path)


# -- what the daemon says -------------------------------------------------------------------


def test_stale_weights_are_not_reported_as_a_demand_the_topology_cannot_carry(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    uniform, hot = uniform_matrix(FABRIC8, 0.5).gbps, hotspot_matrix(FABRIC8, 1, 0.5).gbps
    series = steps(FABRIC8, [(uniform, 8), (hot, 4)], "step")
    with caplog.at_level(logging.WARNING):
        replay("fabric-8", series, tmp_path)
    text = caplog.text
    assert "cannot carry" not in text
    assert "the weights in force give MLU" in text and "is possible; re-planning" in text


def test_a_demand_over_capacity_is_reported_as_such(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    over = uniform_matrix(FABRIC8, 1.3).gbps  # every block sends 1.3x its uplinks
    with caplog.at_level(logging.WARNING):
        replay("fabric-8", series_of(FABRIC8, [over] * 3, "over"), tmp_path)
    assert "cannot carry the demand" in caplog.text
    assert "no routing does better than 1.3" in caplog.text


def test_a_hedged_policy_on_traffic_that_holds_is_not_re_planned(tmp_path: Path) -> None:
    """Stale is against what the policy can do: a hedge (S = 1 is the oblivious routing) never
    reaches the unhedged optimum, and re-planning for that would only push the same groups."""
    from optimizer.te import TeMethod, TePolicy

    hot = gravity_matrix(FABRIC8, 3, 0.6).gbps
    series = series_of(FABRIC8, [hot] * 8, "hold")
    path = CONFIGS / "fabric-8.yaml"
    base = ControllerConfig("<test>", path, tmp_path / "devices.yaml", tmp_path / "journal.db")
    for hedge in (1.0, 0.5):
        policy = TePolicy(method=TeMethod.MIN_MLU, hedge=hedge)
        config = replace(base, te=policy, intervals=replace(base.intervals, te_interval=30.0))
        result = ReplayEngine(path, FABRIC8, series, config, toe=False).run()
        assert result.te_runs == 1, f"hedge {hedge}: {result.te_runs} TE runs on one matrix"


def test_weights_on_an_idle_fabric_are_never_stale() -> None:
    """A handful of bytes on a fresh fabric (a packet fabric's first pings) gave MLU 1e-9 against
    a possible 5e-10 and re-pushed every group for nothing."""
    _, actions = dec.decide(settled_state(), observe(dec.WeightsFit(1e-9, 5e-10)), 130.0, SETTINGS)
    assert actions == []
