"""The daemon's ToE planner with a job due (issue 31): the stages that certainly end before the
job starts are checked on the traffic flowing then, the later ones on the job's too, so a plan
the planning demand alone would hold to one step is staged whole (optimizer/staging/traffic.py)."""

from __future__ import annotations

from controller.decision import JOB_TRIGGER
from controller.reconfig.step_timeouts import StepTimeouts
from controller.reconfig.toe_run import ToePlanner
from optimizer.config import load_plannable_fabric
from optimizer.jobs.intents import AnnouncedJob, stage_traffic
from optimizer.policy import ReconfigurePolicy
from optimizer.staging import StageTiming
from optimizer.topology import uniform_mesh
from optimizer.traffic import TrafficMatrix
from tests.support import CONFIGS
from tests.support.toe_support import due_matching_job

FABRIC_8 = load_plannable_fabric(CONFIGS / "fabric-8.yaml")
NOW = 1_000_000.0
LEAD = 600.0


def test_a_stage_takes_at_most_its_steps_timeouts_and_the_plan_its_time_limit() -> None:
    timeouts = StepTimeouts(drain=10, verify_drain=20, apply_ocs=30, qualify=40, undrain=50, toe_solve=99)
    assert timeouts.stage_seconds == 150  # not the ToE budget: that is the plan's, before any stage
    planner = ToePlanner(FABRIC_8, 0.8, time_limit=45, stage_seconds=timeouts.stage_seconds)
    assert planner.timing == StageTiming(45, 150)


def test_a_due_jobs_plan_is_staged_on_the_traffic_flowing_before_it_starts() -> None:
    mesh = uniform_mesh(FABRIC_8)
    flowing, planned = due_matching_job(FABRIC_8)
    sends = TrafficMatrix(planned.blocks, planned.gbps - flowing.gbps)
    job = AnnouncedJob("matching", sends, start=NOW + LEAD)
    planner = ToePlanner(FABRIC_8, 0.8, time_limit=60)
    traffic = stage_traffic(flowing, [job], NOW, LEAD, planner.timing)
    assert traffic is not None and traffic.windows[0][0] == 2  # 60 s + 2 x 270 s <= 600 s
    policy = ReconfigurePolicy(min_gain=0.1, min_interval_s=0.0)
    ruled = planner.propose(JOB_TRIGGER, planned, mesh, NOW, None, policy, traffic=traffic)
    alone = planner.propose(JOB_TRIGGER, planned, mesh, NOW, None, policy)
    assert ruled.current_mlu > 0.8 and ruled.verdict.apply, ruled.verdict
    assert ruled.plan.complete and ruled.planned_mlu < 0.7
    # on the planning demand alone the mesh is over the stage limit: one step, not the target
    assert not alone.plan.complete and alone.planned_mlu > ruled.planned_mlu * 1.2
