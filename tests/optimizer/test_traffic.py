"""Traffic matrices: CSV/JSON parsing with named errors, and the seeded generators."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from optimizer.errors import ConfigError
from optimizer.traffic import (
    MatrixKind,
    egress_capacity,
    generate_matrix,
    load_matrix,
    parse_csv,
    parse_json,
    permutation_phases,
)
from tests.support import shipped_fabric

FABRIC = shipped_fabric("fabric-4")


def test_csv_round_trip_and_repeated_rows_add() -> None:
    tm = parse_csv("src,dst,gbps\nb1,b2,40\nb1,b2,2.5\nb3,b4,7\n", FABRIC, "tm.csv")
    assert tm.demand("b1", "b2") == 42.5 and tm.demand("b3", "b4") == 7.0
    again = parse_csv(tm.to_csv(), FABRIC)
    assert np.allclose(again.gbps, tm.gbps)


def test_json_round_trip() -> None:
    tm = parse_json('{"b1": {"b2": 40.0, "b3": 1}, "b4": {"b1": 0.5}}', FABRIC, "tm.json")
    assert tm.demand("b1", "b3") == 1.0 and tm.total() == 41.5
    assert tm.to_json() == {"b1": {"b2": 40.0, "b3": 1.0}, "b4": {"b1": 0.5}}


@pytest.mark.parametrize(
    ("text", "where", "words"),
    [
        ("src,dst,gbps\nb1,b2,1\nb1,b9,3\n", "line 3", "unknown dst block 'b9'"),
        ("src,dst,gbps\nb1,b2,-1\n", "line 2", ">= 0"),
        ("src,dst,gbps\nb1,b2,nan\n", "line 2", "finite"),
        ("src,dst,gbps\nb2,b2,5\n", "line 2", "itself"),
        ("src,dst,gbps\nb1,b2\n", "line 2", "3 fields"),
        ("src,dst,gbps\nb1,b2,lots\n", "line 2", "not a number"),
        ("a,b,c\n", "line 1", "header"),
    ],
)
def test_csv_errors_name_the_line(text: str, where: str, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_csv(text, FABRIC, "tm.csv")
    assert info.value.key == where and words in info.value.problem and "tm.csv" in str(info.value)


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        ('{"b1": {"b7": 1}}', "b1.b7", "unknown dst block"),
        ('{"bx": {"b1": 1}}', "bx.b1", "unknown src block"),
        ('{"b1": {"b2": -3}}', "b1.b2", ">= 0"),
        ('{"b1": {"b1": 3}}', "b1.b1", "itself"),
        ('{"b1": {"b2": "3"}}', "b1.b2", "number"),
        ('{"b1": [1, 2]}', "b1", "object"),
        ('{"b1": {"b2": NaN}}', "b1.b2", "finite"),
        ('{"b1": ', "line 1", "invalid JSON"),
    ],
)
def test_json_errors_name_the_key(text: str, key: str, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_json(text, FABRIC, "tm.json")
    assert info.value.key == key and words in info.value.problem


def test_load_matrix_picks_format_by_extension(tmp_path: Path) -> None:
    (tmp_path / "m.csv").write_text("src,dst,gbps\nb1,b2,3\n")
    (tmp_path / "m.json").write_text('{"b2": {"b1": 4}}')
    assert load_matrix(tmp_path / "m.csv", FABRIC).demand("b1", "b2") == 3.0
    assert load_matrix(tmp_path / "m.json", FABRIC).demand("b2", "b1") == 4.0


@pytest.mark.parametrize("kind", list(MatrixKind))
def test_generators_are_seeded_and_respect_load(kind: MatrixKind) -> None:
    fabric = shipped_fabric("fabric-8")
    a = generate_matrix(fabric, kind, seed=3, load=0.4)
    b = generate_matrix(fabric, kind, seed=3, load=0.4)
    assert np.array_equal(a.gbps, b.gbps)
    cap = egress_capacity(fabric)
    peak = max((a.gbps.sum(axis=1) / cap).max(), (a.gbps.sum(axis=0) / cap).max())
    assert peak == pytest.approx(0.4)
    assert not np.diag(a.gbps).any()


def test_seeds_differ_and_hotspot_is_skewed() -> None:
    fabric = shipped_fabric("fabric-8")
    g1 = generate_matrix(fabric, "gravity", seed=1)
    g2 = generate_matrix(fabric, "gravity", seed=2)
    assert not np.allclose(g1.gbps, g2.gbps)
    hot = generate_matrix(fabric, "hotspot", seed=1)
    values = hot.gbps[hot.gbps > 0]
    assert values.max() > 10 * np.median(values)


def test_ring_phases_are_permutations() -> None:
    fabric = shipped_fabric("fabric-8")
    phases = permutation_phases(fabric, seed=5, phases=3)
    for tm in phases:
        nonzero = tm.gbps > 0
        assert (nonzero.sum(axis=1) == 1).all() and (nonzero.sum(axis=0) == 1).all()
    assert not np.array_equal(phases[0].gbps > 0, phases[1].gbps > 0)
