"""staging_window (optimizer/toe/window.py): the load at which a change that cannot be staged
whole today stages whole, on the real solver."""

from __future__ import annotations

from optimizer.te import TeSolver
from optimizer.toe import ToeKnobs, plan_reconfiguration
from optimizer.toe.reconfigure import te_evaluator
from optimizer.toe.window import staging_window
from optimizer.topology import uniform_mesh
from tests.support.hot_fabrics import mesh_scaled, mixed_fabric, ring

FABRIC = mixed_fabric(8)
HOT = mesh_scaled(FABRIC, ring(FABRIC), 0.9)
MESH = tuple(uniform_mesh(FABRIC))


def test_the_window_is_the_highest_load_at_which_every_stage_fits() -> None:
    plan = plan_reconfiguration(FABRIC, HOT, MESH, ToeKnobs(time_limit=30.0))
    assert not plan.staging.complete  # at this load only a step is safe
    evaluate = te_evaluator(TeSolver(FABRIC))
    target = plan.mapping.circuits
    assert staging_window(FABRIC, MESH, target, [HOT], evaluate, 0.8, scales=(1.0,)) is None
    window = staging_window(FABRIC, MESH, target, [HOT], evaluate, 0.8)
    assert window is not None and window.scale < 1.0
    assert window.staging.complete and window.staging.final_circuits == frozenset(target)
    for stage in window.staging.stages:
        assert stage.mlu_drained <= max(0.8, stage.mlu_start) + 1e-9
    assert window.staging.final_mlu < window.current_mlu
    # the load just above it does not leave room (the scales are tried highest first)
    above = round(window.scale + 0.1, 6)
    if above < 1.0:
        assert staging_window(FABRIC, MESH, target, [HOT], evaluate, 0.8, scales=(above,)) is None
