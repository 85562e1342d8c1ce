"""The staged reconfiguration executor: one stage at a time, every step journaled first.

Per stage (all circuits of one failure domain, see :mod:`optimizer.staging`):

1. **drain** — TE on the topology without the stage's removed circuits; refused if its MLU
   exceeds ``max(stage_mlu, MLU now)``; pushed to every block; then the ports of every
   circuit removed or added are drained;
2. **verify_drain** — the drained ports' transmit counters move by about nothing (at most
   ``drain_tolerance`` of the port speed) over one interval of device time;
3. **apply_ocs** — per OCS, remove then add, compare-and-set on the generation journaled
   with the step, with a request id derived from intent, stage and OCS (a replay after a
   crash is answered by the device, not applied again); a device already holding the new
   circuits is not asked again; then wait until the mirrors settle;
4. **qualify** — each new link: both block ports up, each seeing the expected block and
   port as neighbour, and the OCS ports lit; fewer than ``min_qualified_fraction`` fails the
   stage, the others are left drained (quarantined);
5. **undrain** — the stage's ports (but the quarantined) are undrained, then fresh TE on
   the new topology is pushed.

The stage's completion, the journal's topology and the progress marker are written in one
transaction. A failed step (device error, too few qualified links, timeout) rolls the stage
back to its start: the OCSes get their old circuits back, the ports are undrained, TE for
the old topology is pushed, the steps are marked rolled back and the intent is closed with
the reason. Crash recovery is :meth:`StageExecutor.resume` (rules in its docstring).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from controller.device_view import FabricPort, PortsByBlock, merge_ports, ports_of_circuits
from controller.reconfig.journal import IntentState, Journal, RecoveryPoint, StepName, StepRecord, StepState
from controller.reconfig.stage_plan import Plan, StageSpec
from controller.reconfig.step_timeouts import StepTimeouts
from controller.sensing.qualify import qualified_links
from controller.te_loop.te_push import TePusher, TeRun, usable_circuits
from optimizer.errors import HeliostatError
from optimizer.fabric import Fabric
from optimizer.te import DEFAULT_MAX_OVERSUBSCRIPTION, RecentDemand
from optimizer.topology import Circuit, Topology
from southbound.errors import SouthboundError, StaleGeneration

log = logging.getLogger(__name__)

STEPS = (StepName.DRAIN, StepName.VERIFY_DRAIN, StepName.APPLY_OCS, StepName.QUALIFY, StepName.UNDRAIN)
PROGRESS_KEY = "reconfiguration_progress"


class StepFailed(HeliostatError):
    def __init__(self, step: str, problem: str) -> None:
        self.step = step
        self.problem = problem
        super().__init__(f"{step}: {problem}")


class ExecutorInterrupted(Exception):
    """The daemon is stopping in the middle of a stage; the journal says where (like a crash)."""


@dataclass(frozen=True)
class ExecutorSettings:
    timeouts: StepTimeouts = field(default_factory=StepTimeouts)
    min_qualified_fraction: float = 0.95
    stage_mlu: float = 0.8
    verify_interval_s: float = 1.0  # real seconds between the two counter reads
    poll_interval_s: float = 0.1
    drain_tolerance: float = 0.01  # fraction of port speed a drained port may still send


@dataclass(frozen=True)
class TeInputs:
    """What TE needs from the daemon: the recent matrices and what maintenance keeps out."""

    demand: RecentDemand
    drained_ports: PortsByBlock = field(default_factory=dict)
    blocks_out: frozenset[str] = frozenset()
    down: frozenset[Circuit] = frozenset()  # installed circuits whose links are not up


@dataclass(frozen=True)
class StageOutcome:
    ok: bool
    intent_id: int
    stage: int
    finished: bool  # the intent is closed (done, rolled back or failed)
    next_stage: int | None  # the stage to run next, if the reconfiguration goes on
    circuits: frozenset[Circuit]  # what the OCSes should hold now
    quarantined: PortsByBlock = field(default_factory=dict)
    te: TeRun | None = None
    reason: str | None = None


@dataclass
class _Stage:
    intent_id: int
    spec: StageSpec
    total: int
    before: frozenset[Circuit]
    ports: PortsByBlock = field(default_factory=dict)  # both ends of every removed or added circuit
    quarantined: PortsByBlock = field(default_factory=dict)
    unqualified: frozenset[Circuit] = frozenset()
    te: TeRun | None = None

    @property
    def after(self) -> frozenset[Circuit]:
        return (self.before - set(self.spec.remove)) | set(self.spec.add)

    def prefix(self, step: str) -> str:
        return f"heliostat-i{self.intent_id}-s{self.spec.index}-{step}"


StepListener = Callable[[int, int, str, str], None]  # intent, stage, step, event
#: Called with (step, "before" | "after") around each step, and ("rollback", "before"); it may
#: raise ExecutorInterrupted to end the stage there, as a crash would
#: (:class:`controller.reconfig.pause.PausePoint` is one).
StepCheckpoint = Callable[[str, str], None]
#: A step's work: (stage, its journaled payload, deadline) -> the result to journal.
StepAction = Callable[["_Stage", Any, float], dict[str, Any]]


class StageExecutor:
    """Runs stages of journaled intents against the devices (see the module docstring)."""

    def __init__(
        self,
        fabric: Fabric,
        drivers: FabricPort,
        journal: Journal,
        te: TePusher,
        te_inputs: Callable[[], TeInputs],
        settings: ExecutorSettings | None = None,
        stop: threading.Event | None = None,
        checkpoint: StepCheckpoint | None = None,
        listener: StepListener | None = None,
        clock: Callable[[], float] = time.monotonic,
        wait: Callable[[float], bool] | None = None,
    ) -> None:
        self.fabric = fabric
        self.drivers = drivers
        self.journal = journal
        self.te = te
        self.te_inputs = te_inputs
        self.settings = settings or ExecutorSettings()
        self.stop = stop or threading.Event()
        self.checkpoint = checkpoint
        self.listener = listener
        self.clock = clock
        # seconds -> True when stopping; a simulated clock (replay) moves instead of sleeping
        self.wait = wait if wait is not None else self.stop.wait
        #: what each step does, in the order of STEPS
        self.actions: dict[StepName, StepAction] = {
            StepName.DRAIN: self._do_drain,
            StepName.VERIFY_DRAIN: self._do_verify_drain,
            StepName.APPLY_OCS: self._do_apply_ocs,
            StepName.QUALIFY: self._do_qualify,
            StepName.UNDRAIN: self._do_undrain,
        }

    # -- running a stage -------------------------------------------------------------------

    def begin(self, plan: Plan, trigger: str, circuits: frozenset[Circuit]) -> int:
        """Journal a new intent together with the topology it starts from; returns its id."""
        with self.journal.transaction():
            intent = self.journal.begin_intent(plan, trigger)
            self.journal.save_topology(Topology.from_circuits(self.fabric, circuits), circuits, intent.id)
            self.journal.put_state(PROGRESS_KEY, {"intent": intent.id, "completed_stages": 0})
        return intent.id

    def run_stage(self, intent_id: int, index: int, before: frozenset[Circuit]) -> StageOutcome:
        """Run stage ``index`` of the intent from ``before`` (the circuits the OCSes hold)."""
        stage = self._stage(intent_id, index, before)
        try:
            for name in STEPS:
                self._step(stage, name)
        except StepFailed as exc:
            return self._roll_back(stage, f"stage {index + 1}/{stage.total} failed at {exc}")
        return self._complete(stage)

    def _stage(self, intent_id: int, index: int, before: frozenset[Circuit]) -> _Stage:
        plan = self.journal.intent(intent_id).plan
        spec = plan.stage(index)
        ports = ports_of_circuits(self.fabric, (*spec.remove, *spec.add))
        return _Stage(intent_id, spec, len(plan.stages), frozenset(before), ports)

    def _notify(self, stage: _Stage, step: str, event: str) -> None:
        if self.listener is not None:
            self.listener(stage.intent_id, stage.spec.index, step, event)

    def _step(self, stage: _Stage, name: StepName, record: StepRecord | None = None) -> None:
        try:
            payload = self._payload(stage, name) if record is None else record.payload
        except (SouthboundError, HeliostatError) as exc:
            # Journaled as a failed step, so that a restart finishes the rollback.
            problem = f"cannot prepare: {exc}"
            failed = self.journal.begin_step(stage.intent_id, stage.spec.index, name, {"prepare": "failed"})
            self.journal.fail_step(failed.id, problem)
            self._notify(stage, name.value, "failed")
            raise StepFailed(name.value, problem) from exc
        if record is None:
            record = self.journal.begin_step(stage.intent_id, stage.spec.index, name, payload)
        self._notify(stage, name.value, "started")
        self._pause_if(name.value, "before")
        deadline = self.clock() + self.settings.timeouts.for_step(name.value)
        action = self.actions[name]
        try:
            result = action(stage, payload, deadline)
            # qualify waits until its timeout on purpose, then judges what qualified
            if name is not StepName.QUALIFY and self.clock() > deadline:
                raise StepFailed(
                    name.value, f"timed out after {self.settings.timeouts.for_step(name.value):g} s"
                )
        except (SouthboundError, HeliostatError) as exc:
            problem = exc.problem if isinstance(exc, StepFailed) else str(exc)
            self.journal.fail_step(record.id, problem)
            self._notify(stage, name.value, "failed")
            raise StepFailed(name.value, problem) from exc
        self._pause_if(name.value, "after")
        self.journal.complete_step(record.id, result)
        self._notify(stage, name.value, "done")

    def _pause_if(self, step: str, when: str) -> None:
        if self.checkpoint is not None:
            self.checkpoint(step, when)

    def _wait(self, seconds: float) -> None:
        if self.wait(seconds):
            raise ExecutorInterrupted("the daemon is stopping")

    def _payload(self, stage: _Stage, name: StepName) -> dict[str, Any]:
        spec = stage.spec
        if name is StepName.APPLY_OCS:
            entries = {}
            for ocs in spec.ocs_names:
                generation = self.drivers.read_ocs(ocs).generation
                entries[ocs] = {
                    "expected_generation": generation,
                    "request_id": stage.prefix(f"apply-{ocs}"),
                    "remove": [[c.a, c.b] for c in spec.remove if c.ocs == ocs],
                    "add": [[c.a, c.b] for c in spec.add if c.ocs == ocs],
                }
            return {"ocs": entries}
        if name is StepName.QUALIFY:
            return {"links": [[c.ocs, c.a, c.b] for c in spec.add]}
        return {"ports": {b: list(p) for b, p in stage.ports.items()}}

    # -- the steps ---------------------------------------------------------------------------

    def _do_drain(self, stage: _Stage, payload: Any, deadline: float) -> dict[str, Any]:
        inputs = self.te_inputs()
        demand = inputs.demand.without(inputs.blocks_out)
        matrix = demand.latest
        now_circuits = usable_circuits(self.fabric, stage.before, inputs.drained_ports, inputs.blocks_out)
        now_circuits -= inputs.down
        drained = now_circuits - set(stage.spec.remove)
        mlu_now = self.te.min_mlu(Topology.from_circuits(self.fabric, now_circuits), matrix)
        result = self.te.solve(drained, demand, for_latest=True)
        limit = max(self.settings.stage_mlu, mlu_now * DEFAULT_MAX_OVERSUBSCRIPTION)
        if result.mlu_quantized > limit + 1e-6:
            raise StepFailed(
                "drain",
                f"draining would raise the MLU to {result.mlu_quantized:.4f}, over the limit {limit:.4f}",
            )
        stage.te = self.te.push(result, drained, stage.prefix("drain"), matrix, live=now_circuits)
        self.drivers.drain(stage.ports)
        return {
            "mlu": round(result.mlu, 6),
            "mlu_quantized": round(result.mlu_quantized, 6),
            "mlu_before": round(mlu_now, 6),
        }

    def _do_verify_drain(self, stage: _Stage, payload: Any, deadline: float) -> dict[str, Any]:
        ports = ports_of_circuits(self.fabric, stage.spec.remove)
        if not ports:
            return {"max_gbps": 0.0}
        speeds = {b.name: b.speed_gbps for b in self.fabric.blocks}
        first = self._read_counters(ports)
        problem = "no counter interval measured"
        while True:
            self._wait(self.settings.verify_interval_s)
            second = self._read_counters(ports)
            worst, where, advanced = 0.0, "", True
            for block, plist in ports.items():
                a, b = first[block], second[block]
                dt = b.time_s - a.time_s
                if dt <= 0:
                    advanced = False
                    continue
                for p in plist:
                    delta = b.ports[p].tx_bytes - a.ports[p].tx_bytes if p in a.ports and p in b.ports else 0
                    rate = max(delta, 0) * 8 / dt / 1e9
                    if rate > worst:
                        worst, where = rate, f"{block} port {p}"
            if advanced:
                limit = self.settings.drain_tolerance * min(speeds[b] for b in ports)
                if worst <= limit:
                    return {"max_gbps": round(worst, 6)}
                problem = f"{where} still sends {worst:.3f} Gbit/s"
            else:
                problem = "the device counters did not advance"
            if self.clock() > deadline:
                raise StepFailed("verify_drain", problem)
            first = second

    def _read_counters(self, ports: PortsByBlock) -> dict[str, Any]:
        counters, errors = self.drivers.counters(ports)
        if errors:
            raise StepFailed("verify_drain", "; ".join(f"{b}: {e}" for b, e in sorted(errors.items())))
        return counters

    def _do_apply_ocs(self, stage: _Stage, payload: Any, deadline: float) -> dict[str, Any]:
        generations = {}
        for ocs, entry in sorted(payload["ocs"].items()):
            add = [Circuit(ocs, a, b) for a, b in entry["add"]]
            remove = [Circuit(ocs, a, b) for a, b in entry["remove"]]
            generations[ocs] = self._apply_one(ocs, entry, add, remove)
        self._wait_settled(stage, deadline)
        return {"generations": generations}

    def _apply_one(self, ocs: str, entry: dict[str, Any], add: list[Circuit], remove: list[Circuit]) -> int:
        request_id = entry["request_id"]
        reading = self.drivers.read_ocs(ocs)
        state = _ocs_state(reading.circuits | reading.switching, add, remove)
        if state == "new":
            log.info("%s already holds the circuits of %s; not applying again", ocs, request_id)
            generation = reading.generation
        elif state == "old":
            try:
                generation = self.drivers.apply_ocs(
                    ocs, entry["expected_generation"], add, remove, request_id
                )
            except StaleGeneration:
                reading = self.drivers.read_ocs(ocs)
                state = _ocs_state(reading.circuits | reading.switching, add, remove)
                if state == "new":
                    generation = reading.generation
                elif state == "old":
                    generation = self.drivers.apply_ocs(
                        ocs, reading.generation, add, remove, f"{request_id}-g{reading.generation}"
                    )
                else:
                    raise StepFailed("apply_ocs", f"{ocs} changed under the stage") from None
        else:
            raise StepFailed("apply_ocs", f"{ocs} holds neither the old nor the new circuits of the stage")
        self.journal.record_generation(ocs, generation, request_id, force=True)
        return generation

    def _wait_settled(self, stage: _Stage, deadline: float) -> None:
        for ocs in stage.spec.ocs_names:
            wanted = {c for c in stage.spec.add if c.ocs == ocs}
            while True:
                reading = self.drivers.read_ocs(ocs)
                if wanted <= reading.circuits:
                    break
                if self.clock() > deadline:
                    raise StepFailed("apply_ocs", f"{ocs}: circuits did not settle in time")
                self._wait(self.settings.poll_interval_s)

    def _do_qualify(self, stage: _Stage, payload: Any, deadline: float) -> dict[str, Any]:
        links = stage.spec.add
        if not links:
            return {"fraction": 1.0, "unqualified": []}
        good: set[Circuit] = set()
        while True:
            good = self._qualified(links)
            if len(good) == len(links) or self.clock() > deadline:
                break
            self._wait(self.settings.poll_interval_s)
        fraction = len(good) / len(links)
        bad = frozenset(links) - good
        stage.unqualified = bad
        stage.quarantined = ports_of_circuits(self.fabric, bad)
        if fraction < self.settings.min_qualified_fraction:
            raise StepFailed(
                "qualify",
                f"{len(good)} of {len(links)} new links qualified ({fraction:.0%}, minimum "
                f"{self.settings.min_qualified_fraction:.0%})",
            )
        if bad:
            log.warning("%d new links failed qualification and stay drained: %s", len(bad), sorted(bad))
        return {"fraction": round(fraction, 6), "unqualified": [[c.ocs, c.a, c.b] for c in sorted(bad)]}

    def _qualified(self, links: tuple[Circuit, ...]) -> set[Circuit]:
        return qualified_links(self.fabric, self.drivers, links)

    def _do_undrain(self, stage: _Stage, payload: Any, deadline: float) -> dict[str, Any]:
        quarantined = {(b, p) for b, ports in stage.quarantined.items() for p in ports}
        undrain = {b: [p for p in ports if (b, p) not in quarantined] for b, ports in stage.ports.items()}
        self.drivers.undrain(undrain)
        inputs = self.te_inputs()
        drained = merge_ports(inputs.drained_ports, stage.quarantined)
        circuits = usable_circuits(self.fabric, stage.after, drained, inputs.blocks_out) - inputs.down
        stage.te = self.te.run(circuits, inputs.demand.without(inputs.blocks_out), stage.prefix("undrain"))
        return {
            "mlu": round(stage.te.result.mlu, 6),
            "mlu_quantized": round(stage.te.result.mlu_quantized, 6),
        }

    # -- finishing ---------------------------------------------------------------------------

    def _complete(self, stage: _Stage) -> StageOutcome:
        after = stage.after
        index, total = stage.spec.index, stage.total
        last = index + 1 >= total
        with self.journal.transaction():
            self.journal.save_topology(Topology.from_circuits(self.fabric, after), after, stage.intent_id)
            self.journal.put_state(PROGRESS_KEY, {"intent": stage.intent_id, "completed_stages": index + 1})
            if last:
                self.journal.finish_intent(stage.intent_id, IntentState.DONE, f"all {total} stages applied")
        self._notify(stage, "stage", "done")
        return StageOutcome(
            ok=True,
            intent_id=stage.intent_id,
            stage=index,
            finished=last,
            next_stage=None if last else index + 1,
            circuits=after,
            quarantined=stage.quarantined,
            te=stage.te,
        )

    def _roll_back(self, stage: _Stage, reason: str) -> StageOutcome:
        log.warning("intent %d: %s; rolling the stage back", stage.intent_id, reason)
        self._notify(stage, "rollback", "started")
        self._pause_if("rollback", "before")
        try:
            self._revert_ocs(stage)
            self.drivers.undrain(stage.ports)
            inputs = self.te_inputs()
            circuits = usable_circuits(self.fabric, stage.before, inputs.drained_ports, inputs.blocks_out)
            circuits -= inputs.down
            demand = inputs.demand.without(inputs.blocks_out)
            stage.te = self.te.run(circuits, demand, stage.prefix("rollback"))
        except (SouthboundError, HeliostatError) as exc:
            final = f"{reason}; the rollback failed too: {exc}"
            log.error("intent %d: %s", stage.intent_id, final)
            self._close(stage, IntentState.FAILED, final)
            return StageOutcome(
                False, stage.intent_id, stage.spec.index, True, None, stage.before, reason=final
            )
        self._close(stage, IntentState.ROLLED_BACK, reason)
        self._notify(stage, "rollback", "done")
        return StageOutcome(
            False, stage.intent_id, stage.spec.index, True, None, stage.before, te=stage.te, reason=reason
        )

    def _close(self, stage: _Stage, state: IntentState, reason: str) -> None:
        with self.journal.transaction():
            for record in self.journal.steps(stage.intent_id):
                if record.stage == stage.spec.index and record.state is not StepState.ROLLED_BACK:
                    self.journal.roll_back_step(record.id, reason)
            self.journal.save_topology(
                Topology.from_circuits(self.fabric, stage.before), stage.before, stage.intent_id
            )
            self.journal.finish_intent(stage.intent_id, state, reason)

    def _revert_ocs(self, stage: _Stage) -> None:
        """Give every OCS of the stage its circuits from before the stage back."""
        for ocs in stage.spec.ocs_names:
            try:
                reading = self.drivers.read_ocs(ocs)
            except SouthboundError as exc:
                # The apply never reached it (or its outcome is unknown): the device keeps
                # what it holds (fail static); the loop adopts what it reports when it is back.
                log.warning("rollback: %s unreachable (%s); leaving it as it is", ocs, exc)
                continue
            present = reading.circuits | reading.switching
            undo_add = [c for c in stage.spec.add if c.ocs == ocs and c in present]
            busy = {p for c in present if c not in undo_add for p in (c.a, c.b)}
            redo_remove = [
                c
                for c in stage.spec.remove
                if c.ocs == ocs and c not in present and c.a not in busy and c.b not in busy
            ]
            if not undo_add and not redo_remove:
                continue
            request_id = stage.prefix(f"rollback-{ocs}-g{reading.generation}")
            generation = self.drivers.apply_ocs(ocs, reading.generation, redo_remove, undo_add, request_id)
            self.journal.record_generation(ocs, generation, request_id, force=True)
        deadline = self.clock() + self.settings.timeouts.apply_ocs
        for ocs in stage.spec.ocs_names:
            wanted = {c for c in stage.spec.remove if c.ocs == ocs}
            while True:
                try:
                    reading = self.drivers.read_ocs(ocs)
                except SouthboundError:
                    break
                if wanted <= reading.circuits or self.clock() > deadline:
                    break
                self._wait(self.settings.poll_interval_s)

    # -- crash recovery ----------------------------------------------------------------------

    def resume(self, recovery: RecoveryPoint) -> StageOutcome:
        """Finish what a crashed daemon left in flight.

        The stage in flight is the one after the last completed (the progress marker,
        written with the journal's topology when a stage completes); its start is that
        topology. Rules:

        - a step of that stage failed or was rolled back: the rollback was interrupted;
          it is done again (every part of it is idempotent) and the intent closed;
        - otherwise the stage goes forward from its first unfinished step: a step journaled
          but not finished is taken again (drain and undrain are idempotent by value; the OCS
          apply checks what the device holds and replays the journaled request id, so it is
          never applied twice), and the stage completes as usual;
        - no step of that stage yet: nothing was touched; the stage runs as usual (the
          outcome names it as the next stage).

        Failures on the way roll the stage back as in a normal run.
        """
        intent = recovery.intent
        total = len(intent.plan.stages)
        marker = self.journal.get_state(PROGRESS_KEY) or {}
        completed = int(marker.get("completed_stages", 0)) if marker.get("intent") == intent.id else 0
        record = self.journal.current_topology()
        before = frozenset(record.circuits) if record is not None else frozenset()
        if completed >= total:
            self.journal.finish_intent(intent.id, IntentState.DONE, f"all {total} stages applied")
            return StageOutcome(True, intent.id, total - 1, True, None, before)
        stage = self._stage(intent.id, completed, before)
        records = [s for s in recovery.steps if s.stage == completed]
        log.warning(
            "recovering intent %d at stage %d/%d (%d steps journaled)",
            intent.id,
            completed + 1,
            total,
            len(records),
        )
        if any(s.state in (StepState.FAILED, StepState.ROLLED_BACK) for s in records):
            failed = next(s for s in records if s.state in (StepState.FAILED, StepState.ROLLED_BACK))
            return self._roll_back(
                stage,
                f"stage {completed + 1}/{total} failed at {failed.name}: "
                f"{failed.error} (rollback finished after a restart)",
            )
        if not records:
            return StageOutcome(True, intent.id, completed, False, completed, before)
        by_name = {s.name: s for s in records}
        try:
            for name in STEPS:
                existing = by_name.get(name.value)
                if existing is not None and existing.state is StepState.DONE:
                    self._restore_result(stage, name, existing)
                    continue
                self._step(stage, name, existing)
        except StepFailed as exc:
            return self._roll_back(stage, f"stage {completed + 1}/{total} failed at {exc} (after a restart)")
        return self._complete(stage)

    def _restore_result(self, stage: _Stage, name: StepName, record: StepRecord) -> None:
        if name is StepName.QUALIFY and record.result:
            bad = frozenset(
                Circuit(str(o), int(a), int(b)) for o, a, b in record.result.get("unqualified", [])
            )
            stage.unqualified = bad
            stage.quarantined = ports_of_circuits(self.fabric, bad)


def _ocs_state(present: frozenset[Circuit], add: list[Circuit], remove: list[Circuit]) -> str:
    """ "new" when the device holds the stage's result, "old" when it holds its start, else "mixed"."""
    gone = [c for c in remove if c not in add]
    if all(c in present for c in add) and not any(c in present for c in gone):
        return "new"
    if all(c in present for c in remove) and not any(c in present for c in add if c not in remove):
        return "old"
    return "mixed"
