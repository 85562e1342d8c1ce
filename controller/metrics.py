"""Prometheus metrics of the controller, on a registry owned by the daemon (no globals)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

SOLVE_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120)


class ControllerMetrics:
    """Every metric the daemon exports; names follow Prometheus conventions."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.te_runs = Counter("heliostat_te_runs", "TE solves run", registry=r)
        self.te_failures = Counter("heliostat_te_failures", "TE solves or pushes that failed", registry=r)
        self.toe_runs = Counter("heliostat_toe_runs", "ToE plans computed", ["trigger"], registry=r)
        self.reconfigurations = Counter(
            "heliostat_reconfigurations", "Reconfigurations by outcome", ["outcome"], registry=r
        )
        self.group_pushes = Counter(
            "heliostat_group_pushes", "Next-hop group pushes to blocks", ["result"], registry=r
        )
        self.counter_polls = Counter(
            "heliostat_counter_polls", "Counter polls by result", ["result"], registry=r
        )
        self.mlu = Gauge("heliostat_mlu", "MLU planned by TE for the live topology", registry=r)
        self.overloaded = Gauge(
            "heliostat_overloaded", "1 while TE's MLU for the live topology is above 1 (demand dropped)",
            registry=r,
        )
        self.overloaded_runs = Counter(
            "heliostat_overloaded_te_runs", "TE runs whose MLU was above 1 (more demand than capacity)",
            registry=r,
        )
        self.measured_mlu = Gauge("heliostat_measured_mlu", "Highest link utilisation measured", registry=r)
        self.predicted_mlu = Gauge(
            "heliostat_predicted_mlu", "MLU of the predicted matrix on the live topology", registry=r
        )
        self.reconfig_stage = Gauge(
            "heliostat_reconfig_stage", "Index of the stage in flight (-1 when none)", registry=r
        )
        self.maintenance = Gauge(
            "heliostat_maintenance_drained", "Devices drained for maintenance", ["kind"], registry=r
        )
        self.spine_utilization = Gauge(
            "heliostat_spine_utilization",
            "Measured utilisation of each block-spine trunk (src, dst: a block and a spine switch)",
            ["src", "dst"],
            registry=r,
        )
        self.spine_links = Gauge(
            "heliostat_spine_links", "Spine links up and in service, of a hybrid fabric", registry=r
        )
        self.toe_paused = Gauge("heliostat_toe_paused", "1 when automatic ToE is paused", registry=r)
        self.circuits = Gauge("heliostat_circuits", "Circuits installed on the OCSes", registry=r)
        self.devices_unreachable = Gauge(
            "heliostat_devices_unreachable", "Devices that did not answer the last poll", registry=r
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
        self.demand_gbps = Gauge("heliostat_demand_gbps", "Total demand of the TE matrix", registry=r)
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
        self.reconfig_stage.set(-1)
