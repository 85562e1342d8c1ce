"""Sensing: poll the devices, feed the estimator, follow the devices file, qualify and
release quarantined links, and the spine's utilisation (see :mod:`controller.sensing` for the
pure estimation this feeds).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import cast

from controller import decision as dec
from controller.daemon.fabric_metrics import poll_figures
from controller.daemon.quarantine import Quarantine
from controller.daemon.report import Reporter
from controller.daemon.spine import SpineService
from controller.daemon.state import PREDICTION_KEY, DaemonState
from controller.daemon.te_step import TeStep
from controller.device_view import (
    FabricPort,
    PollResult,
    PortsByBlock,
    circuit_ends,
    ports_of_circuits,
)
from controller.devices_watch import DevicesFileWatch
from controller.drivers import DevicesMismatch, FabricDrivers
from controller.metrics import GBPS_TO_BYTES_PER_SECOND
from controller.reconfig.journal import Journal
from controller.sensing.inferred_matrix import infer_matrix
from controller.sensing.observe import (
    egress_samples,
    links_up,
    live_circuits,
    maintenance_ports,
    measured_mlu,
    port_samples,
)
from controller.sensing.qualify import qualified_links
from controller.sensing.spine import spine_links_up, spine_port_samples, spine_utilisation
from controller.ui.fabric_view import poll_loads
from optimizer.errors import HeliostatError
from optimizer.fabric import Fabric

log = logging.getLogger(__name__)


def down_ocs(poll: PollResult, drivers: FabricPort) -> frozenset[str]:
    """The OCSes without power or out of reach in ``poll``."""
    unpowered = {name for name, r in poll.ocs.items() if not r.powered}
    return frozenset(unpowered | {d for d in poll.unreachable if d in drivers.ocs})


class Sensing:
    """Writes ``state.installed``, ``live``, ``ocs_down``, ``spine_up``, ``port_rates``,
    ``matrix`` and ``recent`` from each poll, and feeds ``state.estimation``; releases
    quarantined links through ``quarantine`` and runs TE (``te``) when they are back."""

    def __init__(
        self,
        fabric: Fabric,
        state: DaemonState,
        drivers: FabricPort,
        devices_watch: DevicesFileWatch | None,
        devices_file: Path,
        journal: Journal,
        prediction_window: float,
        te: TeStep,
        spine: SpineService,
        quarantine: Quarantine,
        report: Reporter,
    ) -> None:
        self.fabric = fabric
        self.state = state
        self.drivers = drivers
        self.devices_watch = devices_watch
        self.devices_file = devices_file
        self.journal = journal
        self.prediction_window = prediction_window  # how long the journal keeps the matrices
        self.te = te
        self.spine = spine
        self.quarantine = quarantine
        self.report = report
        self.metrics = report.metrics
        self.board = report.board

    def poll(self, now: float) -> bool:
        """Poll the devices and feed the estimator; True when the estimator says TE is due."""
        drivers = self.drivers
        started = time.monotonic()
        poll = drivers.poll()
        for error in sorted(poll.errors.values()):
            log.warning("poll: %s", error)
        self.metrics.device_polls.labels("ok").inc(len(poll.counters))
        self.metrics.device_polls.labels("failed").inc(len(poll.errors))
        self.metrics.last_poll.set(now)
        self.metrics.devices_unreachable.set(len(poll.unreachable))
        was_unreachable = frozenset(self.board.get("unreachable"))
        for name in sorted(poll.unreachable - was_unreachable):
            self.report.emit("device_down", device=name, error=poll.errors[name])
        for name in sorted(was_unreachable - poll.unreachable):
            self.report.emit("device_up", device=name)
        self._follow_devices_file(poll.unreachable)
        self.state.installed = live_circuits(poll.ocs, self.state.installed, poll.unreachable)
        self.state.installed |= frozenset().union(*(r.switching for r in poll.ocs.values()))
        self.state.live = links_up(self.fabric, self.state.installed, poll.ports)
        if len(self.state.live) < len(self.state.installed):
            log.info("%d circuits installed but not up", len(self.state.installed) - len(self.state.live))
        self.state.ocs_down = down_ocs(poll, self.drivers)
        self.metrics.circuits.set(len(self.state.live))
        self.state.spine_up = spine_links_up(self.fabric, poll.ports, poll.spine_ports)
        self.state.port_rates.observe_many(port_samples(poll.counters), now)
        self.state.port_rates.observe_many(spine_port_samples(poll.spine_counters), now)
        rates = cast(dict[tuple[str, int], float], self.state.port_rates.rates())  # keyed (device, port)
        te_due = self._estimate(poll, rates, now)
        measured = measured_mlu(self.fabric, self.te.usable(self.state.live), rates)
        spine_util = self._spine_utilisation(rates)
        if spine_util:
            measured = max(measured or 0.0, *spine_util.values())
        if measured is not None:
            self.metrics.measured_mlu.set(measured)
        self.metrics.fabric.update(
            **poll_figures(self.fabric, poll, self.state.installed, self.te.usable(self.state.live), rates)
        )
        carrying = self.te.usable(self.state.live)
        self.board.update(
            measured_mlu=measured,
            poll_s=time.monotonic() - started,
            unreachable=tuple(sorted(poll.unreachable)),
            ocs_down=tuple(sorted(self.state.ocs_down)),
            circuits_installed=len(self.state.installed),
            circuits_up=len(self.state.live),
            circuits_carrying=len(carrying),
        )
        demand = None if self.state.matrix is None else self.state.matrix.total()
        self.report.recorder.polled(now, poll, self.board.snapshot(), demand)
        loads = poll_loads(self.fabric, carrying, rates)
        self.report.recorder.loads.record(now, *loads)
        return te_due

    def _estimate(self, poll: PollResult, rates: dict[tuple[str, int], float], now: float) -> bool:
        """The TE matrix and prediction from this poll; True when TE is due.

        From per-destination egress counters when the blocks report them; otherwise by
        tomogravity from the trunks' port rates and the groups last pushed.
        """
        counted = any(c.egress_bytes for c in poll.counters.values())
        self.state.routes_missing = bool(poll.counters) and not counted and self.state.pushed_tables is None
        if counted or not poll.counters:
            cycle = self.state.estimation.cycle(egress_samples(poll.counters), now)
            if cycle.prediction is None:
                return False
            matrix, te_due, prediction = cycle.estimate.matrix, cycle.te_due, cycle.prediction
        else:
            if self.state.pushed_tables is None or not rates:
                return False
            circuits = self.state.control.te_circuits or self.te.usable(self.state.live)
            matrix = infer_matrix(
                self.fabric, self.state.pushed_tables, circuits, rates, self.spine.links_in_service()
            ).matrix
            settings = self.state.estimation.settings
            te_due = dec.inferred_te_due(
                matrix, self.state.estimation.te_matrix, settings.floor_gbps, settings.te_matrix_change
            )
            prediction = self.state.estimation.predictor.observe(now, matrix)
        self.state.matrix = matrix
        self.state.recent.append(matrix)
        journal = self.journal
        self.report.journal_softly(
            "the matrix history",
            lambda: journal.append_matrix(now, matrix, retention_s=self.prediction_window),
        )
        if prediction.refreshed:
            self.report.journal_softly(
                "the prediction", lambda: journal.put_matrix_state(PREDICTION_KEY, prediction.prediction)
            )
        self.metrics.demand.set(matrix.total() * GBPS_TO_BYTES_PER_SECOND)
        return te_due

    def _follow_devices_file(self, unreachable: frozenset[str]) -> None:
        """While devices do not answer, re-read the devices file with backoff and reconnect
        to the devices whose address changed (controller/devices_watch.py)."""
        drivers = self.drivers
        if self.devices_watch is None or not isinstance(drivers, FabricDrivers):
            return
        devices = self.devices_watch.check(unreachable, time.monotonic())
        if devices is None:
            return
        try:
            moved = drivers.replace_devices(devices)
        except DevicesMismatch as exc:
            log.warning("devices file %s not followed: %s", self.devices_file, exc)
            return
        if moved:
            log.warning("reconnected to %d devices at their new addresses: %s", len(moved), ", ".join(moved))
            self.report.emit("devices_moved", devices=moved)

    def release_quarantine(self, now: float) -> None:
        """Undrain quarantined links (failed qualification, or restored after an OCS lost them)
        once they qualify: up with the right peers and lit."""
        if not self.state.quarantined:
            return
        held = {(b, p) for b, ports in self.state.quarantined.items() for p in ports}
        waiting = [c for c in self.state.live if any(end in held for end in circuit_ends(self.fabric, c))]
        if not waiting:
            return
        healthy = qualified_links(self.fabric, self.drivers, waiting)
        if not healthy:
            return
        maintained = maintenance_ports(self.fabric, self.state.control.maintenance, self.state.installed)
        kept_drained = {(b, p) for b, plist in maintained.items() for p in plist}
        ports: PortsByBlock = {}
        for b, plist in ports_of_circuits(self.fabric, healthy).items():
            if mine := tuple(p for p in plist if (b, p) in held and (b, p) not in kept_drained):
                ports[b] = mine
        if not ports:
            return
        try:
            self.drivers.undrain(ports)
        except HeliostatError as exc:
            log.warning("releasing quarantined links failed: %s", exc)
            return
        self.quarantine.set(remove=ports)
        log.info("%d quarantined links qualified and are back in service", len(healthy))
        self.te.run_te(f"{len(healthy)} quarantined links back in service", now)

    def _spine_utilisation(self, rates: dict[tuple[str, int], float]) -> dict[tuple[str, str], float]:
        if not self.fabric.spine:
            return {}
        service = self.spine.service()
        util = spine_utilisation(self.fabric, service, self.spine.links_in_service(), rates)
        for (src, dst), value in util.items():
            self.metrics.spine_utilization.labels(src, dst).set(value)
        self.metrics.spine_links.set(sum(count for s in service for _, count in s.links))
        return util
