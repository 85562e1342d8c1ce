"""Prometheus metrics of the controller, on a registry owned by the daemon (no globals).

Names follow Prometheus's conventions and ``promtool check metrics``: the unit in the name
(``_ratio``, ``_bytes``, ``_seconds``, ``_bytes_per_second``), counters end in ``_total``
and no ``_created`` series. Fabric-wide figures are plain gauges and counters the loop sets;
per-link, per-OCS, per-block-pair and per-device series come from :class:`FabricCollector`,
which exports the latest :class:`FabricSnapshot` at each scrape, so a link or device that
went away leaves no stale series behind. ``deploy/grafana`` and ``deploy/prometheus`` read
these names (tests check every name they use is exported).
"""

from __future__ import annotations

import platform
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Enum,
    Gauge,
    Histogram,
    Info,
    disable_created_metrics,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

SOLVE_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120)
#: Executor steps a stage goes through (``heliostat_reconfig_step``); ``none`` between them.
RECONFIG_STEPS = ("none", "drain", "verify_drain", "apply_ocs", "qualify", "undrain", "rollback")
#: Why a ToE run failed (``heliostat_toe_failures_total{reason}``), a bounded set of labels.
TOE_FAILURE_REASONS = ("no_traffic", "infeasible", "time_limit", "solver", "journal", "error")
#: heliostat_reconfigurations' outcomes and heliostat_toe_runs' triggers, exported from the start.
RECONFIG_OUTCOMES = ("started", "done", "rolled_back")
TOE_TRIGGERS = ("auto", "operator")
GBPS_TO_BYTES_PER_SECOND = 1e9 / 8

# _created series are noise for the dashboards and alerts (prometheus_client exports one per
# counter and histogram unless told not to; the switch is the library's, process-wide).
disable_created_metrics()


def _package_version() -> str:
    try:
        return version("heliostat")
    except PackageNotFoundError:
        return "unknown"


Pair = tuple[str, str]


@dataclass(frozen=True)
class FabricSnapshot:
    """Per-entity figures of the last poll and TE run (what :class:`FabricCollector` exports)."""

    link_load_gbps: Mapping[Pair, float] = field(default_factory=dict)  # measured, src -> dst
    link_capacity_gbps: Mapping[Pair, float] = field(default_factory=dict)  # circuits up
    link_planned_utilization: Mapping[Pair, float] = field(default_factory=dict)  # TE's plan
    ocs_circuits: Mapping[str, int] = field(default_factory=dict)  # installed on each OCS
    pair_circuits: Mapping[Pair, int] = field(default_factory=dict)  # up, per block pair (a < b)
    devices_up: Mapping[tuple[str, str], bool] = field(default_factory=dict)  # (device, kind)
    dropped_bytes: Mapping[tuple[str, str], int] = field(default_factory=dict)  # (device, tx|rx)
    blackholed_bytes: Mapping[str, int] = field(default_factory=dict)  # device -> no-route bytes
    maintenance: tuple[tuple[str, str], ...] = ()  # (kind, name) drained for maintenance


class FabricCollector(Collector):
    """Exports the latest snapshot; the loop replaces parts of it with :meth:`update`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshot = FabricSnapshot()

    @property
    def snapshot(self) -> FabricSnapshot:
        with self._lock:
            return self._snapshot

    def update(self, **parts: object) -> None:
        with self._lock:
            self._snapshot = FabricSnapshot(**{**self._snapshot.__dict__, **parts})

    def describe(self) -> Iterable[Metric]:  # the names, without values (registration checks)
        return list(self._families(FabricSnapshot()))

    def collect(self) -> Iterable[Metric]:
        return list(self._families(self.snapshot))

    @staticmethod
    def _families(s: FabricSnapshot) -> Iterator[Metric]:
        pair = ["src", "dst"]
        load = GaugeMetricFamily(
            "heliostat_link_load_bytes_per_second", "Measured load of each block-to-block trunk (src to dst)",
            labels=pair,
        )
        capacity = GaugeMetricFamily(
            "heliostat_link_capacity_bytes_per_second", "Capacity of the circuits up between src and dst",
            labels=pair,
        )
        utilization = GaugeMetricFamily(
            "heliostat_link_utilization_ratio", "Measured load over capacity of each trunk (src to dst)",
            labels=pair,
        )
        for key, cap in sorted(s.link_capacity_gbps.items()):
            used = s.link_load_gbps.get(key, 0.0)
            capacity.add_metric(list(key), cap * GBPS_TO_BYTES_PER_SECOND)
            load.add_metric(list(key), used * GBPS_TO_BYTES_PER_SECOND)
            utilization.add_metric(list(key), used / cap if cap > 0 else 0.0)
        yield from (load, capacity, utilization)
        planned = GaugeMetricFamily(
            "heliostat_link_planned_utilization_ratio",
            "Utilisation TE's last routing plans for each trunk (src to dst)", labels=pair,
        )
        for key, value in sorted(s.link_planned_utilization.items()):
            planned.add_metric(list(key), value)
        yield planned
        ocs = GaugeMetricFamily("heliostat_ocs_circuits", "Circuits installed on each OCS", labels=["ocs"])
        for name, count in sorted(s.ocs_circuits.items()):
            ocs.add_metric([name], count)
        yield ocs
        pairs = GaugeMetricFamily(
            "heliostat_block_pair_circuits", "Circuits up between two blocks (src < dst)", labels=pair
        )
        for key, count in sorted(s.pair_circuits.items()):
            pairs.add_metric(list(key), count)
        yield pairs
        up = GaugeMetricFamily(
            "heliostat_device_up", "1 if the device answered the last poll, 0 if it was unreachable",
            labels=["device", "kind"],
        )
        for (name, kind), answered in sorted(s.devices_up.items()):
            up.add_metric([name, kind], 1.0 if answered else 0.0)
        yield up
        dropped = CounterMetricFamily(
            "heliostat_device_dropped_bytes",
            "Bytes the switch's ports dropped, as its counters say (resets when the device restarts)",
            labels=["device", "direction"],
        )
        for (name, direction), value in sorted(s.dropped_bytes.items()):
            dropped.add_metric([name, direction], value)
        yield dropped
        blackholed = CounterMetricFamily(
            "heliostat_device_blackholed_bytes",
            "Bytes the switch dropped for want of a next hop (its no-route counter)", labels=["device"],
        )
        for name, value in sorted(s.blackholed_bytes.items()):
            blackholed.add_metric([name], value)
        yield blackholed
        maintenance = GaugeMetricFamily(
            "heliostat_maintenance", "1 for each device drained for maintenance", labels=["kind", "name"]
        )
        for kind, name in sorted(s.maintenance):
            maintenance.add_metric([kind, name], 1.0)
        yield maintenance


class ControllerMetrics:
    """Every metric the daemon exports. ``process=True`` adds prometheus_client's process,
    platform and garbage-collector collectors (``process_*``, ``python_*``): the daemon's own
    registry has them; tests that make many registries in one process leave them out."""

    def __init__(self, registry: CollectorRegistry | None = None, process: bool = True) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        if process:
            ProcessCollector(registry=r)
            PlatformCollector(registry=r)
            GCCollector(registry=r)
        self.build_info = Info("heliostat_build", "Version of the controller and of Python", registry=r)
        self.build_info.info({"version": _package_version(), "python_version": platform.python_version()})
        self.te_runs = Counter("heliostat_te_runs", "TE solves run", registry=r)
        self.te_failures = Counter("heliostat_te_failures", "TE solves or pushes that failed", registry=r)
        self.toe_runs = Counter(
            "heliostat_toe_runs", "ToE plans attempted, by trigger", ["trigger"], registry=r
        )
        self.toe_failures = Counter(
            "heliostat_toe_failures", "ToE plans that failed, by reason", ["reason"], registry=r
        )
        self.reconfigurations = Counter(
            "heliostat_reconfigurations", "Reconfigurations by outcome", ["outcome"], registry=r
        )
        self.group_pushes = Counter(
            "heliostat_group_pushes", "Next-hop group pushes to blocks", ["result"], registry=r
        )
        self.device_polls = Counter(
            "heliostat_device_polls", "Device polls (counters, ports, circuits) by result", ["result"],
            registry=r,
        )
        self.mlu = Gauge("heliostat_mlu_ratio", "MLU planned by TE for the live topology", registry=r)
        self.overloaded = Gauge(
            "heliostat_overloaded", "1 while TE's MLU for the live topology is above 1 (demand dropped)",
            registry=r,
        )
        self.overloaded_runs = Counter(
            "heliostat_overloaded_te_runs", "TE runs whose MLU was above 1 (more demand than capacity)",
            registry=r,
        )
        self.measured_mlu = Gauge(
            "heliostat_measured_mlu_ratio", "Highest link utilisation measured", registry=r
        )
        self.predicted_mlu = Gauge(
            "heliostat_predicted_mlu_ratio", "MLU of the predicted matrix on the live topology", registry=r
        )
        self.reconfig_stage = Gauge(
            "heliostat_reconfig_stage",
            "Stage in flight, counted from 1 as `ctl status` shows it (0 when none)", registry=r,
        )
        self.reconfig_stages = Gauge(
            "heliostat_reconfig_stages", "Stages of the reconfiguration in flight (0 when none)", registry=r
        )
        self.reconfig_step = Enum(
            "heliostat_reconfig_step", "Executor step in flight", states=list(RECONFIG_STEPS), registry=r
        )
        self.maintenance = Gauge(
            "heliostat_maintenance_drained", "Devices drained for maintenance", ["kind"], registry=r
        )
        self.spine_utilization = Gauge(
            "heliostat_spine_utilization_ratio",
            "Measured utilisation of each block-spine trunk (src, dst: a block and a spine switch)",
            ["src", "dst"],
            registry=r,
        )
        self.spine_links = Gauge(
            "heliostat_spine_links", "Spine links up and in service, of a hybrid fabric", registry=r
        )
        self.toe_paused = Gauge("heliostat_toe_paused", "1 when automatic ToE is paused", registry=r)
        self.toe_deferred_since = Gauge(
            "heliostat_toe_deferred_since_timestamp_seconds",
            "When the ToE plan now deferred (waiting for the load to leave room for its stages) was "
            "made; 0: none",
            registry=r,
        )
        self.circuits = Gauge("heliostat_circuits", "Circuits installed on the OCSes and up", registry=r)
        self.devices_unreachable = Gauge(
            "heliostat_devices_unreachable", "Devices that did not answer the last poll", registry=r
        )
        self.demand = Gauge(
            "heliostat_demand_bytes_per_second", "Total demand of the TE matrix", registry=r
        )
        self.te_interval = Gauge(
            "heliostat_te_interval_seconds", "Configured time between two polls (intervals.te_interval)",
            registry=r,
        )
        self.last_poll = Gauge(
            "heliostat_last_poll_timestamp_seconds", "When the loop last polled the devices (Unix time)",
            registry=r,
        )
        self.last_te_run = Gauge(
            "heliostat_last_te_run_timestamp_seconds", "When TE last ran (Unix time)", registry=r
        )
        # HA (issue 14): 1 on the leader (and on a controller without ha), 0 on a standby
        self.leader = Gauge(
            "heliostat_leader", "1 on the replica that leads (and without ha), 0 on a standby", registry=r
        )
        self.leader.set(1)
        self.leader_changes = Counter(
            "heliostat_leader_changes", "Leadership changes this replica saw (another leader or epoch)",
            registry=r,
        )
        self.etcd_request_seconds = Histogram(
            "heliostat_etcd_request_seconds", "etcd requests (HA election) by verb", ["verb"],
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2),
            registry=r,
        )
        self.te_solve_seconds = Histogram(
            "heliostat_te_solve_seconds", "Time to solve TE", buckets=SOLVE_BUCKETS, registry=r
        )
        self.toe_solve_seconds = Histogram(
            "heliostat_toe_solve_seconds", "Time to plan ToE", buckets=SOLVE_BUCKETS, registry=r
        )
        self.te_cycle_seconds = Histogram(
            "heliostat_te_cycle_seconds",
            "Poll, solve and push, end to end",
            buckets=SOLVE_BUCKETS,
            registry=r,
        )
        self.fabric = FabricCollector()
        r.register(self.fabric)
        self.reconfiguration(None, None, None)
        # every outcome a counter can have exists from the start at 0, so that an alert on
        # increase(...) > 0 sees the first rollback or failure (a series born at 1 has no increase)
        for outcome in RECONFIG_OUTCOMES:
            self.reconfigurations.labels(outcome)
        for reason in TOE_FAILURE_REASONS:
            self.toe_failures.labels(reason)
        for trigger in TOE_TRIGGERS:
            self.toe_runs.labels(trigger)
        for result in ("ok", "failed"):
            self.device_polls.labels(result)
        self.group_pushes.labels("ok")
        self.toe_paused.set(0)

    def reconfiguration(self, stage: int | None, total: int | None, step: str | None) -> None:
        """The reconfiguration in flight: ``stage`` counted from 0 (exported from 1, as
        ``ctl status`` shows it), None when there is none."""
        self.reconfig_stage.set(0 if stage is None else stage + 1)
        self.reconfig_stages.set(total or 0)
        self.reconfig_step.state(step if step in RECONFIG_STEPS else "none")

    def toe_failed(self, reason: str) -> None:
        self.toe_failures.labels(reason if reason in TOE_FAILURE_REASONS else "error").inc()

