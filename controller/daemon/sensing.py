"""Sensing: poll the devices, feed the estimator, follow the devices file, qualify and
release quarantined links, and the spine in service (see :mod:`controller.sensing` for the
pure estimation this feeds).
"""

from __future__ import annotations

import logging
import time
from typing import cast

from controller import decision as dec
from controller.daemon.fabric_metrics import poll_figures
from controller.daemon.parts import (
    PREDICTION_KEY,
    QUARANTINE_KEY,
    DaemonParts,
)
from controller.device_view import (
    PollResult,
    PortsByBlock,
    circuit_ends,
    merge_ports,
    ports_of_circuits,
    ports_without,
)
from controller.drivers import DevicesMismatch, FabricDrivers
from controller.metrics import GBPS_TO_BYTES_PER_SECOND
from controller.sensing.inferred_matrix import infer_matrix
from controller.sensing.observe import (
    egress_samples,
    links_up,
    live_circuits,
    maintenance_ports,
    measured_mlu,
    port_samples,
    spines_out,
)
from controller.sensing.qualify import qualified_links
from controller.sensing.spine import spine_links_up, spine_port_samples, spine_utilisation, without_drained
from optimizer.errors import HeliostatError
from optimizer.fabric import SpineSwitch
from optimizer.spine import SpineLink, spine_in_service

log = logging.getLogger(__name__)


class Sensing(DaemonParts):
    """The sensing part of :class:`~controller.daemon.core.Daemon`."""

    def _poll(self, now: float) -> bool:
        """Poll the devices and feed the estimator; True when the estimator says TE is due."""
        drivers = self._drivers()
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
            self._emit("device_down", device=name, error=poll.errors[name])
        for name in sorted(was_unreachable - poll.unreachable):
            self._emit("device_up", device=name)
        self._follow_devices_file(poll.unreachable)
        self.installed = live_circuits(poll.ocs, self.installed, poll.unreachable)
        self.installed |= frozenset().union(*(r.switching for r in poll.ocs.values()))
        self.live = links_up(self.fabric, self.installed, poll.ports)
        if len(self.live) < len(self.installed):
            log.info("%d circuits installed but not up", len(self.installed) - len(self.live))
        self.ocs_down = self._down(poll)
        self.metrics.circuits.set(len(self.live))
        self.spine_up = spine_links_up(self.fabric, poll.ports, poll.spine_ports)
        self.port_rates.observe_many(port_samples(poll.counters), now)
        self.port_rates.observe_many(spine_port_samples(poll.spine_counters), now)
        rates = cast(dict[tuple[str, int], float], self.port_rates.rates())  # keyed (device, port)
        te_due = self._estimate(poll, rates, now)
        measured = measured_mlu(self.fabric, self._usable(self.live), rates)
        spine_util = self._spine_utilisation(rates)
        if spine_util:
            measured = max(measured or 0.0, *spine_util.values())
        if measured is not None:
            self.metrics.measured_mlu.set(measured)
        self.metrics.fabric.update(
            **poll_figures(self.fabric, poll, self.installed, self._usable(self.live), rates)
        )
        self.board.update(
            measured_mlu=measured,
            poll_s=time.monotonic() - started,
            unreachable=tuple(sorted(poll.unreachable)),
            ocs_down=tuple(sorted(self.ocs_down)),
            circuits_installed=len(self.installed),
            circuits_up=len(self.live),
        )
        demand = None if self.matrix is None else self.matrix.total()
        self.recorder.polled(now, poll, self.board.snapshot(), demand)
        return te_due

    def _estimate(self, poll: PollResult, rates: dict[tuple[str, int], float], now: float) -> bool:
        """The TE matrix and prediction from this poll; True when TE is due.

        From per-destination egress counters when the blocks report them; otherwise by
        tomogravity from the trunks' port rates and the groups last pushed.
        """
        if any(c.egress_bytes for c in poll.counters.values()) or not poll.counters:
            cycle = self.estimation.cycle(egress_samples(poll.counters), now)
            if cycle.prediction is None:
                return False
            matrix, te_due, prediction = cycle.estimate.matrix, cycle.te_due, cycle.prediction
        else:
            if self.pushed_tables is None or not rates:
                return False
            circuits = self.state.te_circuits or self._usable(self.live)
            matrix = infer_matrix(
                self.fabric, self.pushed_tables, circuits, rates, self._spine_links_in_service()
            ).matrix
            settings = self.estimation.settings
            te_due = dec.inferred_te_due(
                matrix, self.estimation.te_matrix, settings.floor_gbps, settings.te_matrix_change
            )
            prediction = self.estimation.predictor.observe(now, matrix)
        self.matrix = matrix
        self.recent.append(matrix)
        journal = self._journal()
        self._journal_softly(
            "the matrix history",
            lambda: journal.append_matrix(now, matrix, retention_s=self.config.intervals.prediction_window),
        )
        if prediction.refreshed:
            self._journal_softly(
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
            log.warning("devices file %s not followed: %s", self.config.devices, exc)
            return
        if moved:
            log.warning("reconnected to %d devices at their new addresses: %s", len(moved), ", ".join(moved))
            self._emit("devices_moved", devices=moved)

    def _down(self, poll: PollResult) -> frozenset[str]:
        unpowered = {name for name, r in poll.ocs.items() if not r.powered}
        return frozenset(unpowered | {d for d in poll.unreachable if d in self._drivers().ocs})

    def _release_quarantine(self, now: float) -> None:
        """Undrain quarantined links (failed qualification, or restored after an OCS lost them)
        once they qualify: up with the right peers and lit."""
        if not self.quarantined:
            return
        held = {(b, p) for b, ports in self.quarantined.items() for p in ports}
        waiting = [c for c in self.live if any(end in held for end in circuit_ends(self.fabric, c))]
        if not waiting:
            return
        healthy = qualified_links(self.fabric, self._drivers(), waiting)
        if not healthy:
            return
        maintained = maintenance_ports(self.fabric, self.state.maintenance, self.installed)
        kept_drained = {(b, p) for b, plist in maintained.items() for p in plist}
        ports: PortsByBlock = {}
        for b, plist in ports_of_circuits(self.fabric, healthy).items():
            if mine := tuple(p for p in plist if (b, p) in held and (b, p) not in kept_drained):
                ports[b] = mine
        if not ports:
            return
        try:
            self._drivers().undrain(ports)
        except HeliostatError as exc:
            log.warning("releasing quarantined links failed: %s", exc)
            return
        self._set_quarantine(remove=ports)
        log.info("%d quarantined links qualified and are back in service", len(healthy))
        self._run_te(f"{len(healthy)} quarantined links back in service", now)

    def _set_quarantine(self, add: PortsByBlock | None = None, remove: PortsByBlock | None = None) -> None:
        """Change the quarantined ports and journal them (a restarted daemon keeps them drained)."""
        self.quarantined = ports_without(merge_ports(self.quarantined, add or {}), remove or {})
        self._journal().put_state(QUARANTINE_KEY, {b: list(p) for b, p in self.quarantined.items()})

    def _spine_links_in_service(self) -> frozenset[SpineLink]:
        drained = merge_ports(
            maintenance_ports(self.fabric, self.state.maintenance, self.installed), self.quarantined
        )
        return without_drained(self.spine_up, drained)

    def spine_service(self) -> tuple[SpineSwitch, ...]:
        """The spine TE may route over: links up, not drained, switches not under maintenance."""
        out = spines_out(self.state.maintenance)
        return spine_in_service(self.fabric, self._spine_links_in_service(), out)

    def spine_view(self) -> list[dict[str, object]]:
        """Per spine switch and block: links in service and cabled (``ctl topology``)."""
        service = {s.name: s for s in self.spine_service()}
        return [
            {
                "spine": s.name,
                "block": block,
                "in_service": service[s.name].links_to(block) if s.name in service else 0,
                "cabled": count,
            }
            for s in self.fabric.spine
            for block, count in s.links
            if count > 0
        ]

    def _spine_utilisation(self, rates: dict[tuple[str, int], float]) -> dict[tuple[str, str], float]:
        if not self.fabric.spine:
            return {}
        service = self.spine_service()
        util = spine_utilisation(self.fabric, service, self._spine_links_in_service(), rates)
        for (src, dst), value in util.items():
            self.metrics.spine_utilization.labels(src, dst).set(value)
        self.metrics.spine_links.set(sum(count for s in service for _, count in s.links))
        return util
