"""The TE step: route the recent demand over the usable circuits and the spine in service,
push the groups, move maintenance drains around it, and restore circuits an OCS lost.
"""

from __future__ import annotations

import logging
import time

from controller import decision as dec
from controller.daemon.quarantine import Quarantine
from controller.daemon.report import Reporter
from controller.daemon.spine import SpineService
from controller.daemon.state import DaemonState
from controller.device_view import (
    FabricPort,
    merge_ports,
    ports_of_circuits,
)
from controller.reconfig.executor import (
    TeInputs,
)
from controller.reconfig.journal import Journal
from controller.sensing.observe import (
    blocks_out,
    maintenance_ports,
)
from controller.te_loop.te_push import TePusher, TeRun, group_tables, usable_circuits
from optimizer.errors import HeliostatError
from optimizer.fabric import Fabric
from optimizer.te import RecentDemand
from optimizer.topology import Circuit, Topology
from optimizer.traffic import TrafficMatrix
from southbound.errors import SouthboundError

log = logging.getLogger(__name__)


class TeStep:
    """Writes ``state.control`` (TE's outcome), ``maintenance_drained``, ``pushed_tables`` and
    ``te_runs``; reads the rest. ``te`` pushes the groups, ``drivers`` drain and restore."""

    def __init__(
        self,
        fabric: Fabric,
        state: DaemonState,
        drivers: FabricPort,
        te: TePusher,
        journal: Journal,
        spine: SpineService,
        quarantine: Quarantine,
        report: Reporter,
    ) -> None:
        self.fabric = fabric
        self.state = state
        self.drivers = drivers
        self.te = te
        self.journal = journal
        self.spine = spine
        self.quarantine = quarantine
        self.report = report
        self.metrics = report.metrics
        self.board = report.board

    def te_inputs(self) -> TeInputs:
        # Every TE (the loop's and the executor's) routes over the spine in service now.
        self.te.set_spine(self.spine.service(), getattr(self.drivers, "spines", ()))
        if self.state.recent:
            demand = RecentDemand(tuple(self.state.recent))
        else:  # nothing measured yet (switches that route nothing get their first routes so)
            demand = RecentDemand.of(TrafficMatrix.zeros(self.fabric.block_names))
        drained = maintenance_ports(self.fabric, self.state.control.maintenance, self.state.installed)
        return TeInputs(
            demand,
            merge_ports(drained, self.state.quarantined),
            blocks_out(self.state.control.maintenance),
            down=self.state.installed - self.state.live,
        )

    def weights_fit(self, stale_ratio: float) -> dec.WeightsFit | None:
        """What the weights in force give the latest matrix against what is possible on the
        live topology (None: no matrix or no weights yet, or TE cannot tell)."""
        if self.state.matrix is None or self.state.control.last_te_at is None:
            return None
        inputs = self.te_inputs()
        circuits = usable_circuits(self.fabric, self.state.live, inputs.drained_ports, inputs.blocks_out)
        try:
            latest = inputs.demand.without(inputs.blocks_out).latest
            return self.te.weights_fit(circuits, latest, stale_ratio)
        except HeliostatError as exc:
            log.info("the fit of the weights in force not computed: %s", exc)
            return None

    def usable(self, circuits: frozenset[Circuit]) -> frozenset[Circuit]:
        inputs = self.te_inputs()
        return usable_circuits(self.fabric, circuits, inputs.drained_ports, inputs.blocks_out)

    def run_te(self, reason: str, now: float) -> None:
        drivers = self.drivers
        inputs = self.te_inputs()
        wanted = maintenance_ports(self.fabric, self.state.control.maintenance, self.state.installed)
        released = {
            b: [p for p in ports if p not in set(wanted.get(b, ()))]
            for b, ports in self.state.maintenance_drained.items()
        }
        started = time.monotonic()
        try:
            drivers.undrain(released)  # back in service before TE routes over them
            circuits = usable_circuits(self.fabric, self.state.live, inputs.drained_ports, inputs.blocks_out)
            demand = inputs.demand.without(inputs.blocks_out)
            self.state.te_runs += 1
            run = self.te.run(circuits, demand, f"heliostat-te{self.state.te_runs}-t{int(now)}")
            drivers.drain(wanted)  # out of service only once TE avoids them
        except (HeliostatError, SouthboundError) as exc:
            log.warning("TE (%s) failed: %s", reason, exc)
            self.metrics.te_failures.inc()
            self.state.control = dec.te_finished(
                self.state.control, now, self.state.live, False, f"TE failed: {exc}"
            )
            self.board.update(last_error=f"TE failed: {exc}")
            return
        self.state.maintenance_drained = wanted
        self.state.estimation.te_ran(inputs.demand.latest)
        self.state.control = dec.te_finished(
            self.state.control, now, self.state.live, True, spine_links=frozenset(self.state.spine_up)
        )
        elapsed = time.monotonic() - started
        self.te_done(run, now, elapsed)
        self.report.emit(
            "te",
            reason=reason,
            mlu=run.result.mlu,
            mlu_quantized=run.result.mlu_quantized,
            demand_gbps=run.result.total_demand_gbps,
            circuits=len(circuits),
            seconds=elapsed,
        )

    def te_done(self, run: TeRun, now: float, elapsed: float | None = None) -> None:
        self.metrics.te_runs.inc()
        self.metrics.te_solve_seconds.observe(run.solve_s)
        if elapsed is not None:
            self.metrics.te_cycle_seconds.observe(elapsed)
        self.metrics.mlu.set(run.result.mlu)
        self.metrics.last_te_run.set(now)
        self.metrics.fabric.update(
            link_planned_utilization={(u.src, u.dst): u.utilisation for u in run.result.links}
        )
        possible = self._possible_mlu(run)
        self.metrics.overloaded.set(1 if possible > 1.0 else 0)
        if possible > 1.0:
            self.metrics.overloaded_runs.inc()
            log.warning("TE: MLU %.4f is above 1 and no routing does better than %.4f: the live "
                        "topology cannot carry the demand (%.0f Gbit/s); traffic is being dropped",
                        run.result.mlu_quantized, possible, run.result.total_demand_gbps)
        elif run.result.mlu_quantized > 1.0:
            log.warning("TE: the weights in force give MLU %.4f where %.4f is possible; re-planning",
                        run.result.mlu_quantized, possible)
        self.metrics.group_pushes.labels("ok").inc(len(run.generations))
        self.state.pushed_tables = group_tables(run.result, self.fabric.block_names)
        predicted = None
        prediction = self.state.estimation.predictor.prediction
        if prediction is not None:
            try:
                predicted = self.te.min_mlu(Topology.from_circuits(self.fabric, run.circuits), prediction)
                self.metrics.predicted_mlu.set(predicted)
            except HeliostatError as exc:
                log.info("predicted MLU not computed: %s", exc)
        self.board.update(
            te_runs=self.board.get("te_runs") + 1,
            last_te_time=now,
            mlu=run.result.mlu,
            mlu_quantized=run.result.mlu_quantized,
            predicted_mlu=predicted,
        )

    def _possible_mlu(self, run: TeRun) -> float:
        """The best MLU any routing gives the matrix TE just routed, on the circuits it used:
        the run's own when it solved the min-MLU LP, else (the scenario method plans for
        several matrices) the LP's, solved only when the run's weights load a link past 1."""
        result = run.result
        if result.method.startswith("min_mlu") and result.hedge is None:
            return result.mlu
        if result.mlu_quantized <= 1.0 or self.state.matrix is None:
            return result.mlu_quantized
        inputs = self.te_inputs()
        try:
            latest = inputs.demand.without(inputs.blocks_out).latest
            return self.te.min_mlu(Topology.from_circuits(self.fabric, run.circuits), latest)
        except HeliostatError as exc:
            log.info("the optimum of the TE matrix not computed: %s", exc)
            return result.mlu_quantized

    def restore_circuits(self, circuits: tuple[Circuit, ...]) -> None:
        """Re-install circuits an OCS lost, as a stage would: drain their ports first (they
        are down, so nothing moves), switch, and keep them quarantined until they qualify
        (:meth:`~controller.daemon.sensing.Sensing.release_quarantine` undrains them then)."""
        drivers = self.drivers
        for ocs in sorted({c.ocs for c in circuits}):
            adds = [c for c in circuits if c.ocs == ocs]
            ports = ports_of_circuits(self.fabric, adds)
            try:
                drivers.drain(ports)
                self.quarantine.set(add=ports)
                reading = drivers.read_ocs(ocs)
                request_id = f"heliostat-restore-{ocs}-g{reading.generation}"
                generation = drivers.apply_ocs(ocs, reading.generation, adds, (), request_id)
                self.journal.record_generation(ocs, generation, request_id, force=True)
            except (HeliostatError, SouthboundError) as exc:
                log.warning("restoring %d circuits on %s failed: %s", len(adds), ocs, exc)
                continue
            log.info("restored %d circuits on %s; they stay drained until they qualify", len(adds), ocs)
            self.report.emit("restore", ocs=ocs, circuits=len(adds))
