"""``heliostat plan`` end to end, as a subprocess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optimizer.config import load_fabric
from optimizer.te import solve_te
from optimizer.topology import mesh_topology
from optimizer.traffic import hotspot_matrix, load_matrix
from tests.support.cli_helpers import run_cli

HYBRID = "configs/fabric-hybrid-8.yaml"
FABRIC8 = "configs/fabric-8.yaml"


@pytest.fixture(scope="module")
def demand(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("plan") / "tm.json"
    tm = hotspot_matrix(load_fabric(HYBRID), seed=3, load=0.9)
    path.write_text(json.dumps(tm.to_json()))
    return path


def plan_json(*args: str) -> dict:
    result = run_cli("plan", *args, "--format", "json", check=True)
    assert result.stderr == ""
    return json.loads(result.stdout)


def test_json_has_the_documented_keys_and_figures(demand: Path) -> None:
    data = plan_json("--fabric", HYBRID, "--demand", str(demand))
    assert data["fabric"] == "hybrid-8"
    assert {"a": "b1", "b": "b2", "count": 5} in data["topology"]["links"]
    routing = data["routing"]
    for key in ("mlu", "mlu_quantized", "stretch", "groups", "links", "scale_factor", "oversubscription"):
        assert key in routing
    assert routing["mlu"] <= routing["mlu_quantized"] <= routing["mlu"] * routing["oversubscription"] + 1e-5
    assert 1.0 <= routing["stretch"] <= 2.0
    assert routing["scale_factor"] == pytest.approx(1 / routing["mlu"], rel=1e-4)
    assert data["baseline"]["mlu"] > routing["mlu"]
    assert data["solver"]["seconds"] >= 0
    groups = {(g["src"], g["dst"]): g for g in routing["groups"]}
    assert len(groups) == 56
    vias = {h["via"] for g in groups.values() for h in g["next_hops"]}
    assert vias == {f"b{i}" for i in range(1, 9)} | {"s1", "s2"}
    for g in groups.values():
        assert sum(h["weight"] for h in g["next_hops"]) <= 128
    assert max(link["utilization"] for link in routing["links"]) == pytest.approx(routing["mlu_quantized"])
    # Same figures as the library on the same input.
    fab = load_fabric(HYBRID)
    expected = solve_te(fab, None, load_matrix(demand, fab))
    assert routing["mlu"] == pytest.approx(expected.mlu, rel=1e-6)


def test_options_reach_the_solver(demand: Path, tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    result = run_cli(
        "plan", "--fabric", HYBRID, "--demand", str(demand), "--hedge", "1", "--table-size", "8",
        "--no-spine", "--format", "json", "--out", str(out), check=True,
    )
    assert result.stdout == ""
    data = json.loads(out.read_text())
    assert data["routing"]["hedge"] == 1.0 and data["routing"]["table_size"] == 8
    for g in data["routing"]["groups"]:
        assert sum(h["weight"] for h in g["next_hops"]) <= 8
        assert not {h["via"] for h in g["next_hops"]} & {"s1", "s2"}


def test_topology_file_is_used(tmp_path: Path) -> None:
    fab = load_fabric(FABRIC8)
    counts = mesh_topology(fab).counts.copy()
    counts[0, 1] = counts[1, 0] = 0  # no b1-b2 circuits
    topo_file = tmp_path / "topo.json"
    links = [
        {"a": fab.block_names[i], "b": fab.block_names[j], "count": int(counts[i, j])}
        for i in range(8) for j in range(i + 1, 8) if counts[i, j]
    ]
    topo_file.write_text(json.dumps({"topology": {"links": links}}))
    tm_file = tmp_path / "tm.csv"
    tm_file.write_text("src,dst,gbps\nb1,b2,500\nb3,b4,100\n")
    data = plan_json("--fabric", FABRIC8, "--demand", str(tm_file), "--topology", str(topo_file))
    assert {"a": "b1", "b": "b2", "count": 4} not in data["topology"]["links"]
    (group,) = [g for g in data["routing"]["groups"] if (g["src"], g["dst"]) == ("b1", "b2")]
    assert "b2" not in {h["via"] for h in group["next_hops"]}
    assert data["routing"]["stretch"] > 1.5


def test_table_format_is_a_readable_summary(demand: Path) -> None:
    result = run_cli("plan", "--fabric", HYBRID, "--demand", str(demand), check=True)
    text = result.stdout
    for label in ("MLU (LP)", "MLU (integer weights)", "stretch", "scale factor", "baseline MLU"):
        assert label in text
    assert "busiest links" in text and "largest groups" in text
    assert not text.lstrip().startswith("{")


def test_overloaded_matrix_says_it_does_not_fit(tmp_path: Path) -> None:
    tm_file = tmp_path / "tm.csv"
    tm_file.write_text("src,dst,gbps\nb1,b2,20000\n")
    result = run_cli("plan", "--fabric", FABRIC8, "--demand", str(tm_file), check=True)
    assert "does not fit" in result.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--demand", "{tm}", "--fabric", "missing.yaml"], "missing.yaml: cannot read file"),
        (["--fabric", HYBRID, "--demand", "{bad_tm}"], "line 2: unknown dst block 'b99'"),
        (["--fabric", HYBRID, "--demand", "{tm}", "--hedge", "1.5"], "--hedge: must be in (0, 1]"),
        (["--fabric", HYBRID, "--demand", "{tm}", "--hedge", "0"], "--hedge: must be in (0, 1]"),
        (["--fabric", HYBRID, "--demand", "{tm}", "--table-size", "0"], "--table-size: must be from 1 to"),
        (["--fabric", HYBRID, "--demand", "{tm}", "--table-size", "1000000000"], "to 65,536"),
        (["--fabric", HYBRID, "--demand", "{tm}", "--topology", "{bad_topo}"], "topology.links[0].b"),
        (["--fabric", FABRIC8, "--demand", "{tm}", "--topology", "{island}"], "no direct, one-transit"),
    ],
)
def test_bad_input_fails_cleanly(tmp_path: Path, demand: Path, args: list[str], expected: str) -> None:
    bad_tm = tmp_path / "bad.csv"
    bad_tm.write_text("src,dst,gbps\nb1,b99,5\n")
    bad_topo = tmp_path / "topo.json"
    bad_topo.write_text(json.dumps({"topology": {"links": [{"a": "b1", "b": "zz", "count": 1}]}}))
    island = tmp_path / "island.json"
    island.write_text(json.dumps({"links": [{"a": "b1", "b": "b2", "count": 4}]}))
    files = {"tm": demand, "bad_tm": bad_tm, "bad_topo": bad_topo, "island": island}
    result = run_cli("plan", *[a.format(**files) for a in args])
    assert result.returncode != 0
    assert result.stderr.startswith("heliostat: error: ")
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_the_plan_runs_without_the_cyclic_gc_and_gives_it_back(
    demand: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The collector is paused while a plan runs (benchmarks/RESULTS_plan.md: its full passes
    cost the 64-block plan ~6% and freed nothing) and restored as it was afterwards."""
    import gc

    from controller import cli
    from controller.commands import plan

    seen: list[bool] = []
    real = plan.solve_te

    def recording(*args: object, **kwargs: object) -> object:
        seen.append(gc.isenabled())
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(plan, "solve_te", recording)
    assert gc.isenabled()
    assert cli.main(["plan", "--fabric", HYBRID, "--demand", str(demand)]) == 0
    assert "MLU (LP)" in capsys.readouterr().out
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        assert cli.main(["plan", "--fabric", HYBRID, "--demand", str(demand), "--hedge", "0"]) == 2  # refused
        assert not gc.isenabled()  # left as it was, on an error too
    finally:
        gc.enable()
