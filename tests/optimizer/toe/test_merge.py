"""Merging consecutive stages of one failure domain (issue 30): merged only where the merged
drain keeps the stage rule (checked here by an independent TE), never across domains, the
circuits a plan makes and then breaks again not made at all, and the plan's end unchanged."""

from __future__ import annotations

import pytest

from optimizer.fabric import Fabric
from optimizer.staging import Stage, StagingPlan
from optimizer.te import TeSolver
from optimizer.toe import te_evaluator
from optimizer.toe.merge import merge_stages
from optimizer.toe.sequence import sequence_steps
from optimizer.toe.swaps import distinct_swaps
from optimizer.topology import Circuit, Topology, uniform_mesh
from optimizer.traffic import TrafficMatrix, uniform_matrix
from tests.support.hot_fabrics import mesh_scaled, mixed_fabric
from tests.support.te_reference import reference_mlu
from tests.support.toe_support import replay_stage_rule

from .test_sequence import _shift_case


def _mlu(fabric: Fabric, tm: TrafficMatrix, circuits: set[Circuit]) -> float:
    return reference_mlu(fabric, tm, Topology.from_circuits(fabric, circuits))


def _two_swaps(domains: int = 1) -> tuple:  # type: ignore[type-arg]
    """4 blocks of 8 uplinks on two OCSes under a uniform matrix at MLU 0.5, and two stages, each a
    swap of two circuits: on one OCS, the first pair of swaps whose drains together cost more
    than each alone (with ``domains`` 2, the second on the other OCS, in the other failure
    domain); with the MLU (by the reference LP) of each drain and of the merged one."""
    fabric = mixed_fabric(4, uplinks=8, ocs=2, domains=domains, speeds=(100.0,))
    tm = mesh_scaled(fabric, uniform_matrix(fabric), 0.5)
    mesh = set(uniform_mesh(fabric))
    solver = TeSolver(fabric)

    def te(circuits: set[Circuit]) -> float:
        return solver.min_mlu(Topology.from_circuits(fabric, circuits), tm)

    swaps = [inst for insts in distinct_swaps(fabric, mesh).values() for inst in insts]
    for first in swaps:
        for second in swaps:
            if set(first[0]) & set(second[0]) or (first[0][0].ocs == second[0][0].ocs) != (domains == 1):
                continue
            middle = (mesh - set(first[0])) | set(first[1])
            final = (middle - set(second[0])) | set(second[1])
            alone = max(te(mesh - set(first[0])), te(middle - set(second[0])))
            if domains == 2 or te(mesh & final) > alone + 0.02:
                break
        else:
            continue
        break
    else:  # pragma: no cover - the fabric has such swaps
        raise AssertionError("no two swaps to merge")
    stages, state, drains = [], set(mesh), []
    for removed, added in (first, second):
        begin = _mlu(fabric, tm, state)
        drained = _mlu(fabric, tm, state - set(removed))
        state = (state - set(removed)) | set(added)
        domain = fabric.ocs_named(removed[0].ocs).domain
        stages.append(Stage(domain, tuple(sorted(removed)), tuple(sorted(added)), begin, drained,
                            _mlu(fabric, tm, state)))
        drains.append(drained)
    merged_drain = _mlu(fabric, tm, mesh & state)
    return fabric, tm, mesh, stages, state, drains, merged_drain


def _plan(stages: list[Stage], state: set[Circuit], fabric: Fabric, threshold: float) -> StagingPlan:
    return StagingPlan(
        stages=tuple(stages), threshold=threshold, start_mlu=stages[0].mlu_start,
        final_topology=Topology.from_circuits(fabric, state), final_circuits=frozenset(state),
        final_mlu=stages[-1].mlu_after,
    )


def test_two_stages_of_one_domain_merge_when_the_merged_drain_is_safe() -> None:
    fabric, tm, mesh, stages, state, drains, merged_drain = _two_swaps()
    assert merged_drain > max(drains) + 1e-3  # four circuits drained at once cost more than two
    plan = _plan(stages, state, fabric, threshold=merged_drain + 0.01)
    merged = merge_stages(fabric, mesh, plan, [tm], te_evaluator(TeSolver(fabric)))
    assert len(merged.stages) == 1
    (stage,) = merged.stages
    assert set(stage.remove) == mesh - state and set(stage.add) == state - mesh
    assert stage.mlu_drained == pytest.approx(merged_drain, rel=1e-4)
    assert merged.final_circuits == plan.final_circuits and merged.final_mlu == plan.final_mlu
    assert replay_stage_rule(fabric, mesh, merged.stages, tm, plan.threshold) == state


def test_a_merge_whose_drain_breaks_the_rule_is_not_made() -> None:
    fabric, tm, mesh, stages, state, drains, merged_drain = _two_swaps()
    threshold = (max([*drains, stages[0].mlu_start]) + merged_drain) / 2  # each alone passes, both not
    plan = _plan(stages, state, fabric, threshold)
    merged = merge_stages(fabric, mesh, plan, [tm], te_evaluator(TeSolver(fabric)))
    assert merged.stages == plan.stages


def test_stages_of_different_failure_domains_are_not_merged() -> None:
    fabric, tm, mesh, stages, state, _, _ = _two_swaps(domains=2)
    assert stages[0].domain != stages[1].domain
    plan = _plan(stages, state, fabric, threshold=1.0)
    assert merge_stages(fabric, mesh, plan, [tm], te_evaluator(TeSolver(fabric))).stages == plan.stages


def test_a_circuit_made_and_broken_again_is_not_made_in_the_merged_stage() -> None:
    fabric, tm, mesh, stages, _, _, _ = _two_swaps()
    removed, added = stages[0].remove, stages[0].add
    undo = Stage(stages[0].domain, added, removed, stages[0].mlu_after, stages[0].mlu_after,
                 stages[0].mlu_start)
    final = (mesh - set(stages[1].remove)) | set(stages[1].add)  # the second swap alone
    plan = _plan([stages[0], undo, stages[1]], final, fabric, threshold=1.0)
    merged = merge_stages(fabric, mesh, plan, [tm], te_evaluator(TeSolver(fabric)))
    assert len(merged.stages) == 1
    assert set(merged.stages[0].add) == set(stages[1].add)  # the undone swap makes nothing
    assert set(merged.stages[0].remove) == set(stages[1].remove)


@pytest.mark.slow
def test_a_hot_sequence_at_stage_limit_1_takes_fewer_stages_merged() -> None:
    fabric, tm = _shift_case(0.9)
    mesh = uniform_mesh(fabric)
    evaluate = te_evaluator(TeSolver(fabric))
    plan = sequence_steps(fabric, mesh, [tm], evaluate, 1.0)
    assert plan is not None and len(plan.stages) >= 3
    merged = merge_stages(fabric, mesh, plan, [tm], evaluate)
    assert len(merged.stages) < len(plan.stages)
    assert merged.final_circuits == plan.final_circuits
    replay_stage_rule(fabric, mesh, merged.stages, tm, 1.0)


def test_a_stage_merges_with_the_next_of_its_domain_over_one_of_another_checked_again() -> None:
    """Swaps on o0 (domain 0), o2 (domain 1), o0 again: the two o0 swaps run as one stage, the
    o2 swap after it, checked from its new start by the reference LP."""
    fabric = mixed_fabric(4, uplinks=16, ocs=4, domains=2, speeds=(100.0,))
    tm = mesh_scaled(fabric, uniform_matrix(fabric), 0.5)
    mesh = set(uniform_mesh(fabric))
    swaps = [inst for insts in distinct_swaps(fabric, mesh).values() for inst in insts]
    on_o0 = [s for s in swaps if s[0][0].ocs == "o0"]
    first = on_o0[0]
    third = next(s for s in on_o0 if not set(s[0]) & set(first[0]))
    second = next(s for s in swaps if fabric.ocs_named(s[0][0].ocs).domain == 1)
    stages, state = [], set(mesh)
    for removed, added in (first, second, third):
        begin = _mlu(fabric, tm, state)
        drained = _mlu(fabric, tm, state - set(removed))
        state = (state - set(removed)) | set(added)
        domain = fabric.ocs_named(removed[0].ocs).domain
        stages.append(Stage(domain, tuple(sorted(removed)), tuple(sorted(added)), begin, drained,
                            _mlu(fabric, tm, state)))
    assert [s.domain for s in stages] == [0, 1, 0]
    plan = _plan(stages, state, fabric, threshold=1.0)
    merged = merge_stages(fabric, mesh, plan, [tm], te_evaluator(TeSolver(fabric)))
    assert [s.domain for s in merged.stages] == [0, 1]
    assert set(merged.stages[0].remove) == set(first[0]) | set(third[0])
    assert set(merged.stages[1].remove) == set(second[0])
    assert merged.final_circuits == plan.final_circuits
    assert replay_stage_rule(fabric, mesh, merged.stages, tm, 1.0) == state
