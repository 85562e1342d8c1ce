"""Nothing to gain is an answer, not an error (issue 30): when today's topology is within the
minimum gain of the relaxed bound, the plan keeps it, says so with the figures, and the CLI
exits 0; the bound is checked against an independent LP over every continuous topology."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from optimizer.config import dump_fabric_yaml
from optimizer.te import TeSolver
from optimizer.toe import DEFAULT_MIN_GAIN, ToeKnobs, plan_reconfiguration, plan_topology
from optimizer.topology import Topology, mesh_topology, uniform_mesh
from optimizer.traffic import dump_matrix
from tests.support.cli_helpers import run_cli
from tests.support.hot_fabrics import mesh_scaled, mixed_fabric, skewed
from tests.support.te_reference import reference_mlu

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # PuLP 3.3 warns of its 4.0 API


def at_bound_case():
    """8 mixed-speed blocks beside a spine switch under a skewed matrix at 0.79 on the mesh:
    no topology does better (the case of the issue)."""
    fabric = mixed_fabric(8, ocs=2, domains=1, speeds=(100.0,), spine_links=4)
    return fabric, mesh_scaled(fabric, skewed(fabric, seed=2, skew=0.3), 0.79)


def test_a_mesh_at_the_bound_is_kept_and_the_plan_says_why() -> None:
    fabric, tm = at_bound_case()
    plan = plan_topology(fabric, tm, knobs=ToeKnobs(min_gain=DEFAULT_MIN_GAIN))
    verdict = plan.nothing_to_gain
    assert verdict is not None
    assert np.array_equal(plan.topology.counts, mesh_topology(fabric).counts)
    assert verdict.current_mlu == pytest.approx(0.79, rel=1e-6)
    assert verdict.bound_mlu <= verdict.current_mlu * (1 + 1e-9)
    assert verdict.gain < DEFAULT_MIN_GAIN
    # min_gain 0 (the library's default) plans for shorter paths alone
    assert plan_topology(fabric, tm).nothing_to_gain is None
    # independent: the min-MLU LP (PuLP) on today's topology gives the MLU the plan reports
    assert reference_mlu(fabric, tm, mesh_topology(fabric)) == pytest.approx(verdict.current_mlu, rel=1e-5)
    message = verdict.message()
    assert "nothing to gain" in message and "0.7900" in message and "stay as they are" in message
    assert verdict.transit_today is not None and verdict.transit_best is not None
    assert "shorten paths" in message  # the change would only buy stretch, and it says so


def test_a_real_gain_under_the_minimum_gain_is_kept_too_and_above_it_is_planned() -> None:
    fabric = mixed_fabric(16)
    tm = mesh_scaled(fabric, skewed(fabric), 0.9)
    planned = plan_topology(fabric, tm)
    assert planned.nothing_to_gain is None
    gain = 1 - (1 / planned.throughput_scale_relaxed) / planned.current_mlu
    assert gain > 0.05  # this fabric has room
    kept = plan_topology(fabric, tm, knobs=ToeKnobs(min_gain=gain + 0.01))
    assert kept.nothing_to_gain is not None
    assert kept.nothing_to_gain.gain == pytest.approx(gain, rel=1e-6)
    assert kept.removed_lower_bound == 0


def test_the_whole_plan_changes_no_circuit_and_stages_nothing() -> None:
    fabric, tm = at_bound_case()
    plan = plan_reconfiguration(fabric, tm, knobs=ToeKnobs(min_gain=DEFAULT_MIN_GAIN))
    assert plan.mapping.removed == plan.mapping.added == 0
    assert plan.staging.stages == () and plan.staging.complete
    assert frozenset(plan.mapping.circuits) == frozenset(uniform_mesh(fabric))
    data = plan.to_json()
    assert data["bound"]["nothing_to_gain"]["current_mlu"] == pytest.approx(0.79, rel=1e-5)


def test_heliostat_toe_exits_0_with_the_figures(tmp_path: Path) -> None:
    fabric, tm = at_bound_case()
    (tmp_path / "f.yaml").write_text(dump_fabric_yaml(fabric))
    (tmp_path / "d.json").write_text(dump_matrix(tm, "json"))
    args = ("toe", "--fabric", str(tmp_path / "f.yaml"), "--demand", str(tmp_path / "d.json"), "-q")
    table = run_cli(*args)
    assert table.returncode == 0, table.stderr
    assert "nothing to gain: today's topology gives MLU 0.7900" in table.stdout
    assert "none: the circuits do not change" in table.stdout
    out = run_cli(*args, "--format", "json")
    assert out.returncode == 0
    assert json.loads(out.stdout)["changes"] == {"kept": 64, "removed": 0, "added": 0, "lower_bound": 0}
    bad = run_cli(*args, "--min-gain", "1.5")
    assert bad.returncode == 2 and "--min-gain" in bad.stderr


def test_the_relaxed_bound_is_the_best_of_every_topology_checked_by_rounding_up() -> None:
    """Whatever integer topology the planner proposes, its MLU (checked independently) is no
    better than the bound it reports."""
    fabric = mixed_fabric(8)
    tm = mesh_scaled(fabric, skewed(fabric, seed=9), 0.95)
    plan = plan_topology(fabric, tm)
    bound = 1 / plan.throughput_scale_relaxed
    assert reference_mlu(fabric, tm, plan.topology) >= bound * (1 - 1e-6)
    assert TeSolver(fabric).min_mlu(Topology(fabric.block_names, plan.topology.counts), tm) >= bound * (
        1 - 1e-6
    )


def test_the_daemon_s_planner_answers_nothing_to_gain_without_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from controller.reconfig.toe_run import ToePlanner
    from optimizer.policy import ReconfigurePolicy

    fabric = mixed_fabric(16)
    tm = mesh_scaled(fabric, skewed(fabric), 0.9)
    mesh = frozenset(uniform_mesh(fabric))
    policy = ReconfigurePolicy(min_gain=0.5, min_interval_s=0.0)  # more than any topology gains here
    with caplog.at_level(logging.WARNING):
        proposal = ToePlanner(fabric, 0.8).propose("auto", tm, mesh, 0.0, None, policy)
    assert not proposal.verdict.apply and proposal.changed == 0
    assert proposal.verdict.reason.startswith("nothing to gain")
    assert "under the minimum gain of 50.00%" in proposal.verdict.reason
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_blocked_plan_says_what_the_operator_could_change() -> None:
    from optimizer.staging import StagingBlocked
    from optimizer.toe.reconfigure import _advice

    blocked = StagingBlocked(1, ("a00", "a09"), 0.9391, 0.9, threshold=0.8, margin=1.02, start=0.9)
    words = _advice(blocked, None)
    assert "a stage limit of 0.958 (at most 1) would let that drain through" in words  # 0.9391 x 1.02
    window = 0.9 * (0.8 / 1.02) / 0.9391
    assert f"predicted MLU is at most {window:.4f}" in words
    assert "free uplink ports on a00 and a09" in words
    over = StagingBlocked(1, ("a03", "a13"), 1.2689, 1.2, threshold=0.8, margin=1.02, start=1.2)
    assert "no stage limit up to 1 lets that drain through (it needs 1.2943)" in _advice(over, None)


def test_where_today_s_transit_share_is_unknown_the_routing_s_stretch_gives_the_figures() -> None:
    """At 64 blocks the LP cannot always price today's topology: the message then compares the
    stretch of today's routing with the least transit share any topology at the bound has."""
    from optimizer.toe import NothingToGain

    longer = NothingToGain(0.5, 0.5, DEFAULT_MIN_GAIN, None, 0.02).message(today_stretch=1.083)
    assert "today's routing takes 1.083 block hops" in longer and "2.0% of the traffic" in longer
    assert "(1.020 block hops)" in longer
    short = NothingToGain(0.5, 0.5, DEFAULT_MIN_GAIN, None, 0.02).message(today_stretch=1.0205)
    assert "paths are as short as they get (1.020 block hops" in short and "only shorten" not in short
    assert "block hops" not in NothingToGain(0.5, 0.5, DEFAULT_MIN_GAIN, None, 0.02).message()
