"""Planning on hot fabrics (issue 13): every stage keeps the rule, checked by an independent TE,
and a plan is proposed whenever a single safe swap lowers the MLU."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optimizer.errors import InfeasibleError
from optimizer.fabric import Block, Ocs, SpineSwitch, build_fabric
from optimizer.staging import StagingBlocked
from optimizer.te import TeSolver
from optimizer.toe import ToeKnobs, plan_target, te_evaluator
from optimizer.toe import swaps as swaps_module
from optimizer.topology import Topology, mesh_topology, uniform_mesh
from optimizer.traffic import TrafficMatrix, gravity_matrix, hotspot_matrix
from tests.support.te_reference import reference_mlu

THRESHOLD = 0.8


@st.composite
def hot_cases(draw):  # type: ignore[no-untyped-def]
    n = draw(st.integers(4, 6))
    domains = draw(st.integers(2, 4))
    n_ocs = domains * draw(st.integers(1, 2))
    per_ocs = 2 if n_ocs * 2 >= n else 4
    speeds = draw(st.lists(st.sampled_from([100.0, 200.0]), min_size=n, max_size=n))
    blocks = [Block(f"b{i}", per_ocs * n_ocs, speeds[i]) for i in range(n)]
    ocs = [Ocs(f"o{k}", n * per_ocs + 4, k % domains) for k in range(n_ocs)]
    spine = ()
    if draw(st.booleans()):
        spine = (SpineSwitch("s1", tuple((b.name, 1) for b in blocks), 100.0),)
    fabric = build_fabric("hot", blocks, ocs, spine)
    seed = draw(st.integers(0, 50))
    kind = draw(st.sampled_from(["gravity", "hotspot"]))
    if kind == "gravity":
        tm = gravity_matrix(fabric, seed, 0.5, skew=1.5)
    else:
        tm = hotspot_matrix(fabric, seed, 0.5)
    target_mlu = draw(st.floats(0.82, 1.05))
    solver = TeSolver(fabric)
    tm = tm.scaled(target_mlu / solver.min_mlu(mesh_topology(fabric), tm))
    return fabric, tm


def _independent(fabric, circuits, tm: TrafficMatrix) -> float:  # type: ignore[no-untyped-def]
    return reference_mlu(fabric, tm, Topology.from_circuits(fabric, circuits))


@pytest.mark.slow
@given(case=hot_cases())
@settings(max_examples=16, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_hot_plans_keep_the_rule_and_exist_whenever_a_safe_swap_does(case) -> None:
    fabric, tm = case
    mesh = uniform_mesh(fabric)
    solver = TeSolver(fabric)
    evaluate = te_evaluator(solver)
    start = evaluate(fabric, mesh_topology(fabric), tm)

    def mlu_of(circuits):  # type: ignore[no-untyped-def]
        return evaluate(fabric, Topology.from_circuits(fabric, circuits), tm)

    with pytest.MonkeyPatch.context() as m:  # every distinct swap, not only the hottest
        m.setattr(swaps_module, "_ALL_SWAPS", 10**9)
        single = swaps_module.best_swap(fabric, set(mesh), [tm], mlu_of, max(THRESHOLD, start), start)

    try:
        target = plan_target(fabric, [tm], mesh, ToeKnobs(time_limit=60), evaluate, threshold=THRESHOLD)
    except StagingBlocked as exc:
        assert single is None, f"a safe swap lowers the MLU to {single[2]:.4f} but planning said: {exc}"
        assert "no sequence of safe stages" in str(exc)
        return
    staging = target.staging
    assert staging is not None
    state = set(mesh)
    independent_start = _independent(fabric, state, tm)
    assert independent_start == pytest.approx(start, rel=1e-4)
    for stage in staging.stages:
        begin = _independent(fabric, state, tm)
        state -= set(stage.remove)
        drained = _independent(fabric, state, tm)
        assert drained <= max(THRESHOLD, begin) * (1 + 1e-5) + 1e-6, (drained, begin)
        state |= set(stage.add)
    assert state == set(staging.final_circuits)
    assert _independent(fabric, state, tm) == pytest.approx(staging.final_mlu, rel=1e-4)
    if not staging.complete:
        assert staging.final_mlu < start  # the best reachable step improves
        assert staging.blocked


def test_a_hotspot_that_blocked_every_stage_now_gets_a_step(hybrid8) -> None:
    """fabric-hybrid-8 under a hotspot at MLU 0.9 (issue 13): the planned target cannot be
    staged (any drain raises the MLU), but safe steps towards it lower the MLU; the plan
    says what blocks the rest."""
    solver = TeSolver(hybrid8)
    tm = hotspot_matrix(hybrid8, 0, 0.5)
    tm = tm.scaled(0.9 / solver.min_mlu(mesh_topology(hybrid8), tm))
    mesh = uniform_mesh(hybrid8)
    target = plan_target(hybrid8, [tm], mesh, ToeKnobs(), te_evaluator(solver), threshold=THRESHOLD)
    staging = target.staging
    assert staging is not None and not staging.complete
    assert staging.final_mlu < 0.9 - 0.01
    assert "wait for a later plan" in (staging.blocked or "") or "safe swaps" in (staging.blocked or "")
    for stage in staging.stages:
        assert stage.mlu_drained <= max(THRESHOLD, stage.mlu_start) + 1e-9


def test_no_safe_step_is_an_error_with_the_reason(hybrid8) -> None:
    """A skewed gravity matrix at MLU 0.9 on fabric-hybrid-8: no swap of two circuits is safe
    and improving (checked exhaustively), so planning refuses and says why, naming the stage
    limit as configured (0.8), not the WCMP-tightened LP figure."""
    solver = TeSolver(hybrid8)
    tm = gravity_matrix(hybrid8, 0, 0.5, skew=1.5)
    tm = tm.scaled(0.9 / solver.min_mlu(mesh_topology(hybrid8), tm))
    with pytest.raises(StagingBlocked) as info:
        plan_target(hybrid8, [tm], uniform_mesh(hybrid8), ToeKnobs(), te_evaluator(solver),
                    threshold=THRESHOLD, margin=1.02)
    text = str(info.value)
    assert "no sequence of safe stages can lower the MLU" in text
    assert "stage limit 0.8" in text and "0.7843" not in text


def test_the_wcmp_margin_is_named_when_it_is_what_blocks(fabric4) -> None:
    from optimizer.staging import StagingBlocked as Blocked

    words = str(Blocked(0, ("b1", "b2"), 0.7900, 0.7843, threshold=0.8, margin=1.02, start=0.7))
    assert "stage limit 0.8" in words and "0.7843" in words and "WCMP" in words
    words = str(Blocked(0, ("b1", "b2"), 0.97, 0.96, threshold=0.8, margin=1.02, start=0.96))
    assert "where the stage starts (0.9600" in words


def test_swaps_are_listed_once_per_pair_change(fabric8) -> None:
    mesh = set(uniform_mesh(fabric8))
    swaps = swaps_module.distinct_swaps(fabric8, mesh)
    assert swaps
    for (gone, new), instances in swaps.items():
        removed, added = instances[0]
        assert gone != new
        before = Topology.from_circuits(fabric8, mesh)
        after = Topology.from_circuits(fabric8, (mesh - set(removed)) | set(added))
        diff = np.asarray(after.counts) - np.asarray(before.counts)
        assert int(np.abs(diff).sum()) in (4, 8)  # two pairs lose one each, two gain one each


def test_a_plan_out_of_time_is_an_error_not_an_empty_plan(hybrid8, monkeypatch) -> None:
    """When staging spends the plan's time limit without a safe improving stage, no smaller
    plan is made from a spent budget (its LP would answer today's topology, an empty plan
    that looked complete): planning refuses and says the time ran out."""
    from optimizer.toe import reconfigure

    now = [0.0]
    real_stage_changes = reconfigure.stage_changes
    staged: list[int] = []

    def stage_after_the_limit(*args, **kwargs):  # type: ignore[no-untyped-def]
        now[0] = 1e9  # the mapping took the whole time limit
        staged.append(len(args[2]))
        return real_stage_changes(*args, **kwargs)

    monkeypatch.setattr(reconfigure, "stage_changes", stage_after_the_limit)
    solver = TeSolver(hybrid8)
    tm = hotspot_matrix(hybrid8, 0, 0.5)  # no hose-bound block: staging is tried
    tm = tm.scaled(0.9 / solver.min_mlu(mesh_topology(hybrid8), tm))
    with pytest.raises(InfeasibleError) as info:
        plan_target(hybrid8, [tm], uniform_mesh(hybrid8), ToeKnobs(time_limit=60), te_evaluator(solver),
                    threshold=THRESHOLD, margin=1.02, clock=lambda: now[0])
    assert re.search(r"time limit (\(60 s\) )?ran out", str(info.value))
    assert len(staged) == 1  # the smaller change limits were not planned on a spent budget


def test_staging_that_holds_the_mlu_leaves_time_for_safe_swaps(hybrid8, monkeypatch) -> None:
    """Staging the target gets half the time left while its stages only hold the MLU; when that
    runs out, the rest of the plan's time limit goes to single safe swaps (at 64 blocks a hot
    target's one-circuit stages used to take the whole minute and the plan was refused)."""
    from optimizer.staging import StagingTimedOut
    from optimizer.toe import reconfigure

    now = [0.0]
    patience_seconds: list[float] = []
    swap_time_left: list[float] = []

    def stages_that_hold_the_mlu(*args, **kwargs):  # type: ignore[no-untyped-def]
        patience = kwargs["patience"]
        patience_seconds.append(patience.seconds)
        now[0] = patience.seconds + 1.0  # past the patience, within the plan's limit
        raise StagingTimedOut("cannot stage the change: its share ran out, and no stage lowered the MLU")

    real_swap_steps = reconfigure.sequence_steps

    def swaps(*args, **kwargs):  # type: ignore[no-untyped-def]
        swap_time_left.append(args[6].remaining())
        return real_swap_steps(*args, **kwargs)

    monkeypatch.setattr(reconfigure, "stage_changes", stages_that_hold_the_mlu)
    monkeypatch.setattr(reconfigure, "sequence_steps", swaps)
    solver = TeSolver(hybrid8)
    tm = hotspot_matrix(hybrid8, 0, 0.5)
    tm = tm.scaled(0.9 / solver.min_mlu(mesh_topology(hybrid8), tm))
    target = plan_target(hybrid8, [tm], uniform_mesh(hybrid8), ToeKnobs(time_limit=60), te_evaluator(solver),
                         threshold=THRESHOLD, clock=lambda: now[0])
    assert patience_seconds[0] == pytest.approx(30.0)  # half of the 60 s left when staging began
    assert swap_time_left and swap_time_left[0] > 1.0  # what the stages did not use
    assert target.staging is not None and target.staging.stages  # the swaps found a step
    assert "safe stages found one by one give circuits to hot pairs" in (target.staging.blocked or "")
    assert target.staging.final_mlu < target.staging.start_mlu
