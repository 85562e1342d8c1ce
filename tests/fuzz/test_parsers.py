"""Fuzzing every parser with a fixed budget: mutated bytes of real inputs, and random JSON-like
values, must either load or raise a ConfigError (a HeliostatError) — no other exception, no
hang (a deadline per example). Issue 16 found 240 tracebacks in 4,900 mutations of a fabric
and a matrix; this keeps them out.

The budget is ``HELIOSTAT_FUZZ_EXAMPLES`` examples per parser (default 150) and the inputs
are derandomised so CI is reproducible; set ``HELIOSTAT_FUZZ_RANDOM=1`` to explore new ones.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.config import controller_config_from_dict, load_controller_config
from controller.replay.series import load_series
from optimizer.config import fabric_from_dict, load_fabric
from optimizer.errors import HeliostatError
from optimizer.topology import circuits_from_json, circuits_to_json, topology_from_json, uniform_mesh
from optimizer.traffic import load_matrix, matrix_from_json, uniform_matrix
from southbound.devices import load_devices_file, parse_devices
from tests.support import ROOT, shipped_fabric

EXAMPLES = int(os.environ.get("HELIOSTAT_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=timedelta(seconds=5),
    derandomize=os.environ.get("HELIOSTAT_FUZZ_RANDOM") != "1",
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FABRIC4 = shipped_fabric("fabric-4")

MATRIX_JSON = uniform_matrix(FABRIC4, 0.3).to_json()
SEEDS: dict[str, bytes] = {
    "fabric.yaml": (ROOT / "configs" / "fabric-hybrid-8.yaml").read_bytes(),
    "matrix.csv": uniform_matrix(FABRIC4, 0.3).to_csv().encode(),
    "matrix.json": str(MATRIX_JSON).replace("'", '"').encode(),
    "series.csv": b"time,src,dst,gbps\n0,b1,b2,10\n0,b2,b1,5\n30,b1,b3,7.5\n60,b4,b1,1e3\n",
    "circuits.json": str(circuits_to_json(FABRIC4, uniform_mesh(FABRIC4))).replace("'", '"').encode(),
    "controller.yaml": (ROOT / "configs" / "controller.yaml").read_bytes(),
    "devices.yaml": (
        b"version: 1\ndefaults: {deadline_s: 2.0, max_attempts: 2}\n"
        b"devices:\n  ocs1: {kind: ocs, address: '127.0.0.1:40001'}\n"
        b"  b1: {kind: block, address: '[::1]:40002', transport: grpc}\n"
    ),
}


def _load(name: str, path: Path) -> Any:
    if name == "fabric.yaml":
        return load_fabric(path)
    if name.startswith("matrix"):
        return load_matrix(path, FABRIC4)
    if name == "series.csv":
        return load_series(path, FABRIC4)
    if name == "circuits.json":
        from controller.commands.output import read_json

        return circuits_from_json(read_json(str(path)), FABRIC4, str(path))
    if name == "controller.yaml":
        return load_controller_config(path)
    return load_devices_file(path)


@st.composite
def mutated(draw: st.DrawFn, seed: bytes) -> bytes:
    """``seed`` with a few random edits: bytes replaced, inserted (often hostile ones),
    deleted, or a slice repeated."""
    data = bytearray(seed)
    hostile = st.sampled_from([b"\xff", b"\x00", b"\n", b"&a ", b"*a", b"[", b"{", b"9" * 40, b"-",
                               b"1e308", b"nan", b"\xc3", b"'", b'"', b": ", b"<<: *a", b"\t", b"\r"])
    for _ in range(draw(st.integers(1, 6))):
        if not data:
            data += draw(hostile)
            continue
        at = draw(st.integers(0, len(data) - 1))
        op = draw(st.sampled_from(["replace", "insert", "delete", "repeat", "hostile"]))
        if op == "replace":
            data[at] = draw(st.integers(0, 255))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 16))]
        elif op == "repeat":
            end = min(len(data), at + draw(st.integers(1, 64)))
            data[at:at] = data[at:end] * draw(st.integers(1, 20))
        else:
            data[at:at] = draw(hostile)
    return bytes(data)


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_the_unmutated_seed_loads(name: str, tmp_path: Path) -> None:
    path = tmp_path / name
    path.write_bytes(SEEDS[name])
    assert _load(name, path) is not None


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_mutated_files_load_or_raise_a_config_error(name: str, tmp_path: Path) -> None:
    path = tmp_path / name

    @FUZZ
    @given(data=mutated(SEEDS[name]))
    def run(data: bytes) -> None:
        path.write_bytes(data)
        try:
            _load(name, path)
        except HeliostatError as exc:
            assert str(exc)  # named, not empty
            assert len(str(exc)) < 2000  # a value quoted in the message is cut short

    run()


# -- structured values ---------------------------------------------------------------------

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["b1", "b2", "ocs1", "o1", "x", "", "b1\0", "striped", "split", "any"]),
)
KEYS = st.sampled_from(
    ["name", "blocks", "ocs", "ports", "uplinks", "links", "a", "b", "count", "circuits", "port", "block"]
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(st.one_of(st.text(max_size=8), KEYS), children, max_size=5),
    ),
    max_leaves=30,
)


def _with_random_fields(base: dict[str, Any]) -> st.SearchStrategy[Any]:
    """``base`` with some of its top-level (and one level down) values replaced by random ones."""
    keys = sorted(base)
    return st.builds(
        lambda swaps: {**base, **swaps},
        st.dictionaries(st.sampled_from([*keys, "extra"]), VALUES, max_size=3),
    )


FABRIC_DICT = {
    "name": "f",
    "blocks": [{"name": "b1", "uplinks": 4}, {"name": "b2", "uplinks": 4, "speed_gbps": 200}],
    "ocs": [{"name": "o1", "ports": 8, "domain": 0}, {"name": "o2", "ports": 8}],
    "spine": [{"name": "s1", "links": {"b1": 1}}],
}
CONFIG_DICT = {
    "fabric": "f.yaml", "devices": "d.yaml", "store": "j.db",
    "intervals": {"te_interval": 10}, "thresholds": {"stage_mlu": 0.8}, "timeouts": {"drain": 5},
    "listen": {"northbound": "127.0.0.1:0"},
}
DEVICES_DICT = {"version": 1, "devices": {"ocs1": {"kind": "ocs", "address": "127.0.0.1:1"}}}


@pytest.mark.parametrize(
    ("what", "base", "parse"),
    [
        ("fabric", FABRIC_DICT, lambda v: fabric_from_dict(v, "<fuzz>")),
        ("matrix", MATRIX_JSON, lambda v: matrix_from_json(v, FABRIC4, "<fuzz>")),
        ("circuits", {"circuits": circuits_to_json(FABRIC4, uniform_mesh(FABRIC4))["circuits"][:3]},
         lambda v: circuits_from_json(v, FABRIC4, "<fuzz>")),
        ("topology", {"links": [{"a": "b1", "b": "b2", "count": 2}]},
         lambda v: topology_from_json(v, FABRIC4, "<fuzz>")),
        ("controller config", CONFIG_DICT, lambda v: controller_config_from_dict(v, "<fuzz>", Path("/tmp"))),
        ("devices", DEVICES_DICT, lambda v: parse_devices(v, source="<fuzz>")),
    ],
)
def test_random_values_in_every_field_raise_only_config_errors(what: str, base: Any, parse: Any) -> None:
    @FUZZ
    @given(value=st.one_of(VALUES, _with_random_fields(base)))
    def run(value: Any) -> None:
        try:
            parse(value)
        except HeliostatError as exc:
            assert len(str(exc)) < 2000

    run()
