"""``heliostat replay``: the daemon's own loop over a series, judged against independent figures.

- replay and the daemon on real gRPC devices push the same weights for the same series;
- ``mlu`` and ``mlu_optimal`` agree with an independent routing of the weights and an
  independent path LP (PuLP);
- no look-ahead: changing snapshot t changes nothing the replay reports before t;
- bad series files are refused naming the row.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from controller import decision as dec
from controller.config import ControllerConfig
from controller.daemon import Daemon
from controller.replay.engine import ReplayEngine, ReplayResult
from controller.replay.series import Series, load_series, parse_hist, parse_series_csv
from emulation.fabric import EmulatedFabric
from optimizer.errors import ConfigError
from optimizer.topology import Topology
from optimizer.traffic import gravity_matrix, hotspot_matrix
from tests.support import CONFIGS, shipped_fabric
from tests.support.cli_helpers import run_cli
from tests.support.te_reference import reference_mlu

FABRIC_FILE = CONFIGS / "fabric-4.yaml"
FABRIC = shipped_fabric("fabric-4")
INTERVAL = 30.0
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # PuLP 3.3 warns of its 4.0 API


def series_of(matrices: list[np.ndarray], interval: float = INTERVAL) -> Series:
    return Series(FABRIC.block_names, np.arange(len(matrices)) * interval, np.array(matrices), "<test>")


def shifting_series(count: int = 8, seed: int = 1) -> Series:
    """Gravity and hotspot matrices in turn, each at a different load: TE has work each time."""
    out = []
    for k in range(count):
        maker = gravity_matrix if k % 2 == 0 else hotspot_matrix
        out.append(maker(FABRIC, seed + k, 0.3 + 0.05 * (k % 5)).gbps)
    return series_of(out)


def config(tmp_path: Path, **intervals: float) -> ControllerConfig:
    base = ControllerConfig("<test>", FABRIC_FILE, tmp_path / "devices.yaml", tmp_path / "journal.db")
    return replace(base, intervals=replace(base.intervals, te_interval=INTERVAL, **intervals))


def replay(tmp_path: Path, series: Series, toe: bool = False) -> ReplayResult:
    return ReplayEngine(FABRIC_FILE, FABRIC, series, config(tmp_path), toe=toe).run()


# -- the same loop as the daemon ---------------------------------------------------------------


def test_replay_and_the_daemon_on_grpc_devices_push_the_same_weights(tmp_path: Path) -> None:
    series = shifting_series(6)
    result = replay(tmp_path / "replay", series)
    # The daemon itself, on the flow-level emulated devices behind real gRPC servers: the
    # same series offered on an emulated clock, one cycle per snapshot.
    schedule = [(float(t), series.matrix(k)) for k, t in enumerate(series.times)]
    pushed = []
    with EmulatedFabric(FABRIC, devices_file=tmp_path / "devices.yaml", switching_time_s=0.0) as fabric:
        fabric.set_demand(schedule)
        cfg = replace(config(tmp_path), devices=tmp_path / "devices.yaml")
        daemon = Daemon(cfg, clock=fabric.clock.now)
        daemon.start()
        daemon.requests.put(dec.SetToePaused(True))
        try:
            for k in range(len(series)):
                if k:
                    fabric.step(INTERVAL)
                daemon.cycle()
                pushed.append({b: fabric.switches[b].groups()[1] for b in FABRIC.block_names})
        finally:
            daemon.close()
    times = np.array([s.time for s in result.routing])
    for k in range(1, len(series)):
        state = result.routing[int(np.searchsorted(times, series.times[k], side="right")) - 1]
        assert {b: dict(state.tables[b]) for b in FABRIC.block_names} == pushed[k], f"snapshot {k}"
    assert result.te_runs == daemon.te_runs >= len(series) - 2


# -- the figures, checked independently ------------------------------------------------------


def independent_mlu(
    tables: dict[str, dict[str, dict[str, int]]], demand: np.ndarray, topology: Topology
) -> float:
    """Route ``demand`` by the groups the plain way: each source splits by weight, a transit
    block sends straight on; a link's capacity is its circuits times their speed."""
    names = FABRIC.block_names
    load = np.zeros_like(demand)
    for s, src in enumerate(names):
        for d, dst in enumerate(names):
            if s == d or demand[s, d] == 0:
                continue
            hops = tables.get(src, {}).get(dst) or {dst: 1}
            total = sum(hops.values())
            for via, weight in hops.items():
                v = names.index(via)
                flow = demand[s, d] * weight / total
                load[s, v] += flow
                if v != d:
                    load[v, d] += flow
    capacity = np.array(
        [
            [topology.counts[i, j] * FABRIC.link_speed_gbps(a, b) for j, b in enumerate(names)]
            for i, a in enumerate(names)
        ]
    )
    return float(
        max(
            load[i, j] / capacity[i, j]
            for i in range(len(names))
            for j in range(len(names))
            if load[i, j] > 0
        )
    )


def test_mlu_and_the_optimum_agree_with_an_independent_routing_and_path_lp(tmp_path: Path) -> None:
    series = shifting_series(5, seed=4)
    result = replay(tmp_path, series)
    times = np.array([s.time for s in result.routing])
    judged = 0
    for k, snap in enumerate(result.snapshots):
        if snap.mlu is None:
            assert k == 0  # from the second snapshot on, some routing is in force
            continue
        state = result.routing[int(np.searchsorted(times, snap.time, side="right")) - 1]
        topology = Topology.from_circuits(FABRIC, state.circuits)
        assert snap.mlu == pytest.approx(independent_mlu(state.tables, series.gbps[k], topology), rel=1e-9)
        expected = reference_mlu(FABRIC, series.matrix(k), topology, spine=())
        assert snap.mlu_optimal == pytest.approx(expected, rel=1e-5)
        assert snap.mlu >= snap.mlu_optimal * (1 - 1e-6)
        judged += 1
    assert judged == len(series) - 1


def test_nothing_before_a_changed_snapshot_changes(tmp_path: Path) -> None:
    series = shifting_series(8, seed=7)
    t = 5
    changed = series.gbps.copy()
    changed[t] = changed[t][::-1, ::-1] * 3.0  # another matrix altogether at t
    base = replay(tmp_path / "a", series)
    other = replay(tmp_path / "b", Series(series.blocks, series.times, changed, "<changed>"))
    for k in range(t):
        assert base.snapshots[k] == other.snapshots[k], f"snapshot {k} changed"
    # the routing in force at t was computed before t: the same weights, judged on another matrix
    at_t = [s for s in base.routing if s.time <= series.times[t]][-1]
    other_t = [s for s in other.routing if s.time <= series.times[t]][-1]
    assert at_t.tables == other_t.tables
    assert base.snapshots[t].mlu != other.snapshots[t].mlu
    # seen from t + 1 on: the weights in force then were computed from snapshot t
    after = [s for s in base.routing if s.time <= series.times[t + 1]][-1]
    other_after = [s for s in other.routing if s.time <= series.times[t + 1]][-1]
    assert after.tables != other_after.tables


def test_replay_with_toe_reports_reconfigurations_and_checks_its_stages(tmp_path: Path) -> None:
    # A hotspot the mesh serves badly, long enough for the policy and the stages.
    hot = hotspot_matrix(FABRIC, 3, 0.6).gbps
    series = series_of([hot] * 40)
    cfg = config(tmp_path, toe_check_interval=60.0, prediction_window=300.0)
    cfg = replace(cfg, thresholds=replace(cfg.thresholds, min_reconfig_interval=600.0, reconfig_gain=0.05))
    result = ReplayEngine(FABRIC_FILE, FABRIC, series, cfg, toe=True).run()
    assert result.reconfigurations >= 1 and result.circuits_changed > 0
    assert result.stage_checks and all(c.kept for c in result.stage_checks)
    after = [s for s in result.snapshots if s.mlu_optimal is not None][-1]
    first = next(s for s in result.snapshots if s.mlu_optimal is not None)
    assert after.mlu_optimal < first.mlu_optimal  # the new topology serves the hotspot better
    assert result.blackholed_bytes == 0


# -- the series files ----------------------------------------------------------------------------


def test_the_long_csv_and_the_hist_format_read_the_same_series(tmp_path: Path) -> None:
    series = shifting_series(3)
    rows = ["time,src,dst,gbps"]
    names = FABRIC.block_names
    for k, t in enumerate(series.times):
        for i, a in enumerate(names):
            for j, b in enumerate(names):
                if series.gbps[k, i, j]:
                    rows.append(f"{t},{a},{b},{float(series.gbps[k, i, j])!r}")
    csv_series = parse_series_csv("\n".join(rows) + "\n", FABRIC)
    hist = "\n".join(" ".join(repr(float(v) / 2.0) for v in m.reshape(-1)) for m in series.gbps)
    hist_series = parse_hist(hist, FABRIC, interval_s=INTERVAL, unit_gbps=2.0)
    for other in (csv_series, hist_series):
        assert np.allclose(other.times, series.times) and np.allclose(other.gbps, series.gbps)


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        ("time,src,dst,gbps\n0,b1,b9,1\n", "line 2", "unknown dst block 'b9'"),
        ("time,src,dst,gbps\n0,b1,b2,nan\n", "line 2", "gbps must be finite"),
        ("time,src,dst,gbps\n0,b1,b2,1\n0,b2,b1,-3\n", "line 3", "gbps must be >= 0"),
        ("time,src,dst,gbps\n5,b1,b2,1\n4,b2,b1,1\n", "line 3", "time goes back: 4 after 5"),
        ("time,src,dst,gbps\n0,b1,b1,1\n", "line 2", "cannot send to itself"),
        ("time,src,dst,gbps\n", "", "the series has no snapshot"),
        ("src,dst,gbps\n", "line 1", "expected the header"),
        ("time,src,dst,gbps\n0,b1,b2\n", "line 2", "expected 4 fields"),
    ],
)
def test_bad_csv_series_name_the_row(tmp_path: Path, text: str, where: str, problem: str) -> None:
    path = tmp_path / "series.csv"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_series(path, FABRIC)
    assert info.value.key == where and problem in info.value.problem


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        ("0 1 2 3\n", "line 1", "expected 16 numbers"),
        ("0 " * 15 + "x\n", "line 1", "'x' is not a number"),
        ("0 " * 15 + "nan\n", "line 1", "finite"),
        ("0 " * 16 + "\n" + "0 " * 15 + "-1\n", "line 2", ">= 0"),
        ("1 " + "0 " * 15 + "\n", "line 1", "non-zero diagonal"),
        ("\n\n", "", "no snapshot"),
    ],
)
def test_bad_hist_series_name_the_row(tmp_path: Path, text: str, where: str, problem: str) -> None:
    path = tmp_path / "series.hist"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_series(path, FABRIC)
    assert info.value.key == where and problem in info.value.problem


def test_the_cli_replays_writes_routes_and_a_plot_and_refuses_bad_series(tmp_path: Path) -> None:
    series = shifting_series(6)
    hist = tmp_path / "s.hist"
    hist.write_text("\n".join(" ".join(repr(float(v)) for v in m.reshape(-1)) for m in series.gbps) + "\n")
    routes, plot = tmp_path / "routes.jsonl", tmp_path / "replay.png"
    done = run_cli(
        "replay",
        "--fabric",
        str(FABRIC_FILE),
        "--series",
        str(hist),
        "--no-toe",
        "--format",
        "json",
        "--routes-out",
        str(routes),
        "--plot",
        str(plot),
        check=True,
    )
    data = json.loads(done.stdout)
    assert data["summary"]["snapshots"] == 6 and data["summary"]["judged"] == 5
    assert set(data["summary"]["ratio"]) == {"mean", "p50", "p90", "p99", "max"}
    assert data["summary"]["ratio"]["mean"] >= 1.0 - 1e-9
    assert data["settings"]["toe"] is False and data["summary"]["reconfigurations"] == 0
    lines = [json.loads(line) for line in routes.read_text().splitlines()]
    assert lines[0]["time"] == 0.0 and "links" in lines[0]
    assert lines[1]["time"] == INTERVAL and "groups" in lines[1]  # the first weights, at snapshot 1
    assert all(a["time"] < b["time"] for a, b in itertools.pairwise(lines))
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = tmp_path / "bad.csv"
    bad.write_text("time,src,dst,gbps\n0,b1,b2,1\n30,b1,zz,2\n")
    refused = run_cli("replay", "--fabric", str(FABRIC_FILE), "--series", str(bad))
    assert refused.returncode == 2
    assert refused.stderr.strip() == f"heliostat: error: {bad}: line 3: unknown dst block 'zz'"


def test_the_default_te_settles_near_the_optimum_when_the_traffic_holds_still(tmp_path: Path) -> None:
    # The scenario policy plans for the next interval from the recent matrices: when they
    # are all the same, its routing should approach that matrix's own optimum within a few
    # cycles (what is left is the hedge and the integer weights).
    series = series_of([hotspot_matrix(FABRIC, 4, 0.7).gbps] * 16)
    result = replay(tmp_path, series)
    ratios = [s.ratio for s in result.snapshots if s.ratio is not None]
    assert ratios[-1] <= 1.10
    assert ratios[-1] <= ratios[0] + 1e-9
