"""``plan --plot`` and ``toe --plot``: a real PNG with the pictures in it, and clear errors for
paths that cannot be written (checked before any solve)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from controller.ui.plots import check_plot_path, plot_te, pyplot, save_figure
from optimizer.errors import ConfigError
from optimizer.fabric import Fabric
from optimizer.te import solve_te
from optimizer.traffic import hotspot_matrix, uniform_matrix
from tests.support.cli_helpers import run_cli

FABRIC8 = "configs/fabric-8.yaml"
FABRIC4 = "configs/fabric-4.yaml"
PNG = b"\x89PNG\r\n\x1a\n"


def picture(path: Path) -> np.ndarray:
    data = path.read_bytes()
    assert data[:8] == PNG, f"{path} is not a PNG"
    return pyplot().imread(path)


def assert_non_trivial(image: np.ndarray, min_width: int) -> None:
    """Wide enough for its panels, and drawn: many colours, not one flat fill."""
    height, width = image.shape[:2]
    assert width >= min_width and height >= 300
    colours = np.unique((image[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 200
    assert image[..., :3].std() > 0.1


@pytest.fixture(scope="module")
def demand(tmp_path_factory: pytest.TempPathFactory, fabric8: Fabric) -> Path:
    path = tmp_path_factory.mktemp("plots") / "tm.json"
    path.write_text(json.dumps(hotspot_matrix(fabric8, seed=3, load=0.9).to_json()))
    return path


def test_the_te_picture_draws_the_data_it_is_given(tmp_path: Path, fabric8: Fabric) -> None:
    hot, even = hotspot_matrix(fabric8, seed=3, load=0.9), uniform_matrix(fabric8, load=0.5)
    for name, matrix in (("hot.png", hot), ("even.png", even)):
        plot_te(tmp_path / name, matrix, solve_te(fabric8, None, matrix))
    hot_image, even_image = picture(tmp_path / "hot.png"), picture(tmp_path / "even.png")
    assert_non_trivial(hot_image, 2000)
    assert hot_image.shape == even_image.shape and not np.array_equal(hot_image, even_image)


def test_plan_plot_writes_a_png_beside_the_table(tmp_path: Path, demand: Path) -> None:
    out = tmp_path / "plan.png"
    result = run_cli("plan", "--fabric", FABRIC8, "--demand", str(demand), "--plot", str(out))
    assert result.returncode == 0, result.stderr
    assert "MLU (integer weights)" in result.stdout
    assert_non_trivial(picture(out), 2000)


def test_toe_plot_draws_the_topology_before_and_after(tmp_path: Path, fabric4: Fabric) -> None:
    demand = tmp_path / "tm.json"
    demand.write_text(json.dumps(hotspot_matrix(fabric4, seed=3, load=0.9).to_json()))
    out = tmp_path / "toe.png"
    result = run_cli("toe", "--fabric", FABRIC4, "--demand", str(demand), "--plot", str(out), "-q",
                     "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["stages"]  # the topology after differs from the one before
    assert_non_trivial(picture(out), 2500)


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("missing/x.png", "the directory '.*missing' does not exist"),
        ("plot.jpg", "must name a .png file, got '.*plot.jpg'"),
        ("folder.png", "'.*folder.png' is a directory; name a .png file in it"),
    ],
)
def test_a_bad_plot_path_is_a_config_error_naming_the_flag(tmp_path: Path, name: str, problem: str) -> None:
    (tmp_path / "folder.png").mkdir()
    with pytest.raises(ConfigError, match=rf"<command line>: --plot: {problem}"):
        check_plot_path(str(tmp_path / name))


def test_the_commands_refuse_a_bad_plot_path_before_planning(tmp_path: Path, demand: Path) -> None:
    series = tmp_path / "series.csv"
    series.write_text("time,src,dst,gbps\n0,b1,b2,10\n30,b1,b2,20\n")
    cases = [
        ("plan", ["--demand", str(demand)], tmp_path / "missing" / "x.png", "does not exist"),
        ("toe", ["--demand", str(demand)], tmp_path / "plot.jpg", "must name a .png file"),
        ("replay", ["--series", str(series)], tmp_path / "folder.png", "is a directory"),
    ]
    (tmp_path / "folder.png").mkdir()
    for command, extra, target, problem in cases:
        result = run_cli(command, "--fabric", FABRIC8, *extra, "--plot", str(target), timeout=60)
        assert result.returncode == 2, (command, result.stderr)
        assert result.stderr.startswith("heliostat: error: <command line>: --plot: "), result.stderr
        assert problem in result.stderr and result.stdout == ""
    assert not (tmp_path / "missing").exists() and not (tmp_path / "plot.jpg").exists()


def test_a_write_that_fails_names_the_file(tmp_path: Path) -> None:
    fig, ax = pyplot().subplots()
    ax.plot([0, 1], [1, 0])
    target = tmp_path / "gone" / "x.png"
    with pytest.raises(ConfigError, match=rf"{target}: cannot write file: No such file or directory"):
        save_figure(fig, target)
