"""Every input path has documented limits and refuses past them with a named ConfigError (issue
16: tracebacks on non-UTF-8 files, a 456-byte YAML alias bomb that took 35 s and 2.3 GB, JSON
nested 100k deep, 5,000-digit integers, sums that overflow; silently wrong duplicate keys,
names with NUL/newline/100k characters, te_interval 1e-9). Each case must also be quick."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from controller.config import parse_controller_config
from controller.reconfig.journal import Journal, JournalError
from controller.replay.series import parse_series_csv
from emulation.service import check_output_file
from optimizer import limits
from optimizer.config import generate_fabric, load_fabric, load_plannable_fabric, parse_fabric, parse_yaml
from optimizer.errors import ConfigError
from optimizer.schema import parse_json, read_file
from optimizer.traffic import generate_matrix, load_matrix, parse_csv
from optimizer.traffic import parse_json as parse_matrix_json
from southbound.devices import parse_devices
from tests.support import shipped_fabric

FABRIC4 = shipped_fabric("fabric-4")
BOMB = "\n".join(
    [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(f"{x}: &{x} [{','.join([f'*{p}'] * 9)}]" for p, x in zip("abcdefgh", "bcdefghi", strict=True)),
    ]
)


def _fabric_yaml(blocks: list[str], ocs: int = 1) -> str:
    lines = ["name: f", "blocks:"] + [f"  - {{name: {b!r}, uplinks: 2}}" for b in blocks]
    lines += ["ocs:"] + [f"  - {{name: o{i}, ports: {2 * len(blocks)}}}" for i in range(ocs)]
    return "\n".join(lines) + "\n"


def refused(call, *args, match: str, seconds: float = 2.0) -> ConfigError:
    started = time.monotonic()
    with pytest.raises(ConfigError, match=match) as info:
        call(*args)
    assert time.monotonic() - started < seconds, f"took {time.monotonic() - started:.1f} s"
    return info.value


def test_a_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_bytes(b"name: x\nblocks: [\xff\xfe]\n")
    error = refused(load_fabric, path, match="not UTF-8 text")
    assert error.source == str(path) and error.key == "line 2"


def test_files_past_the_size_limit_are_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"#" * (limits.MAX_YAML_FILE_BYTES + 1))
    refused(load_fabric, path, match="larger than the limit")
    refused(read_file, tmp_path, match="cannot read file")  # a directory


def test_a_yaml_alias_bomb_is_refused_before_it_expands() -> None:
    assert len(BOMB) < 600
    refused(parse_yaml, BOMB, "bomb.yaml", match="aliases expand to more than")
    few = "a: &a [1, 2]\nb: [*a, *a]\n"  # ordinary anchors still work
    assert parse_yaml(few, "ok.yaml") == {"a": [1, 2], "b": [[1, 2], [1, 2]]}


def test_nesting_is_bounded_in_yaml_and_json() -> None:
    refused(parse_yaml, "a: " + "[" * 100_000 + "]" * 100_000, "deep.yaml", match="nested deeper than")
    block_style = "".join(f"{'  ' * i}k{i}:\n" for i in range(200)) + "  " * 200 + "v: 1\n"
    refused(parse_yaml, block_style, "deep.yaml", match="nested deeper than")
    refused(parse_json, '{"a": ' * 100_000 + "1" + "}" * 100_000, "deep.json", match="nested deeper than")
    assert parse_json('{"s": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}', "ok") == {"s": "[" * 40}


def test_huge_integers_are_refused_in_yaml_and_json() -> None:
    refused(parse_yaml, "n: " + "9" * 5000, "n.yaml", match="an integer of 5000 digits")
    refused(parse_json, '{"n": ' + "9" * 5000 + "}", "n.json", match="an integer of 5000 digits")
    yaml_fabric = _fabric_yaml(["b1", "b2"]).replace("uplinks: 2", "uplinks: 10000000000000000000", 1)
    refused(parse_fabric, yaml_fabric, "f.yaml", match=r"blocks\[0\].uplinks: must be <= 65,536")


def test_duplicate_keys_are_refused_not_overwritten() -> None:
    refused(parse_yaml, "name: a\nname: b\n", "d.yaml", match="duplicate key name")
    refused(parse_matrix_json, '{"b1": {"b2": 1, "b2": 5}}', FABRIC4, "m.json", match="b2: duplicate key")
    entry = "{kind: block, address: '127.0.0.1:1'}"
    devices = f"devices:\n  b1: {entry}\n  b1: {entry}\n"
    refused(lambda: parse_devices(parse_yaml(devices, "d.yaml"), source="d.yaml"), match="duplicate key b1")


@pytest.mark.parametrize(
    ("bad", "problem"),
    [("b\0x", "NUL"), ("b\nx", "'\\\\n'"), ("b" * 100_000, "at most 64 characters"), ("b x", "' '")],
)
def test_names_have_a_length_and_an_alphabet(bad: str, problem: str) -> None:
    from optimizer.fabric import Block, Ocs, build_fabric  # noqa: F401 - the YAML path is what is tested

    data = {"name": "f", "blocks": [{"name": bad, "uplinks": 2}, {"name": "b2", "uplinks": 2}],
            "ocs": [{"name": "o1", "ports": 4}]}
    from optimizer.config import fabric_from_dict

    refused(fabric_from_dict, data, "f.yaml", match=rf"blocks\[0\]\.name: .*{problem}")


def test_fabrics_past_the_size_limits_are_refused_at_once() -> None:
    many = [f"b{i}" for i in range(limits.MAX_BLOCKS + 1)]
    refused(parse_fabric, _fabric_yaml(many), "f.yaml", match="blocks: at most 1,024 entries, got 1,025")
    refused(generate_fabric, 100_000_000, 4, 2, 8, match="blocks: must be <= 1,024")
    refused(generate_fabric, 4, -4, 2, 8, match="uplinks: must be >= 1")
    wide = generate_fabric(limits.MAX_PLAN_BLOCKS + 2, 2, 1, 2 * (limits.MAX_PLAN_BLOCKS + 2))
    assert wide.n_blocks == limits.MAX_PLAN_BLOCKS + 2  # a valid fabric...


def test_planning_refuses_fabrics_past_its_limit(tmp_path: Path) -> None:
    from optimizer.config import dump_fabric_yaml

    path = tmp_path / "wide.yaml"
    path.write_text(dump_fabric_yaml(generate_fabric(limits.MAX_PLAN_BLOCKS + 2, 2, 1, 2 * 258)))
    assert load_fabric(path).n_blocks == 258
    refused(load_plannable_fabric, path, match="traffic and topology engineering plan at most 256")


def test_demands_that_overflow_or_exceed_the_limit_name_the_file(tmp_path: Path) -> None:
    rows = "src,dst,gbps\nb1,b2,1.7e308\nb1,b2,1.7e308\n"
    refused(parse_csv, rows, FABRIC4, "m.csv", match=r"line 2: the demand b1->b2 adds up to")
    path = tmp_path / "m.json"
    path.write_text('{"b1": {"b2": 1e300}}')
    error = refused(load_matrix, path, FABRIC4, match="at most 1e\\+09")
    assert error.source == str(path)
    series = "time,src,dst,gbps\n0,b1,b2,6e8\n0,b1,b2,6e8\n"  # each under the limit, not their sum
    refused(parse_series_csv, series, FABRIC4, "s.csv", match="line 3: the demand b1->b2 at time 0 is over")


@pytest.mark.parametrize(("load", "seed"), [(-1, 1), (float("nan"), 1), (1e308, 1), (0.5, -1), (0.5, 2**64)])
def test_generated_demand_has_a_load_and_seed_range(load: float, seed: int) -> None:
    refused(generate_matrix, FABRIC4, "gravity", seed, load, match="load|seed")


def test_the_controller_config_bounds_its_intervals() -> None:
    base = "fabric: f.yaml\ndevices: d.yaml\nstore: j.db\n"
    refused(parse_controller_config, base + "intervals: {te_interval: 1.0e-9}\n", "c.yaml",
            match=r"intervals\.te_interval: must be at least 0.05 s")
    refused(parse_controller_config, base + "timeouts: {drain: 1.0e+300}\n", "c.yaml",
            match=r"timeouts\.drain: must be <=")


def test_devices_file_names_and_addresses() -> None:
    def devices(entries: str):
        return lambda: parse_devices(parse_yaml(f"devices:\n{entries}", "d.yaml"), source="d.yaml")

    refused(devices("  'b 1': {kind: block, address: '127.0.0.1:1'}\n"), match="names are letters")
    refused(devices("  b1: {kind: block, address: '127.0.0.1:99999'}\n"), match="port from 1 to 65535")
    refused(devices("  b1: {kind: block, address: 'x:1', deadline_s: 1.0e+9}\n"), match="must be <= 3600")


def test_output_files_of_emulate_are_checked(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    under_a_file = tmp_path / "afile" / "d.yaml"
    refused(check_output_file, under_a_file, "--devices-file", match="cannot create the directory")
    refused(check_output_file, tmp_path, "--devices-file", match="is a directory")
    check_output_file(tmp_path / "missing" / "d.yaml", "--devices-file")  # run/ on a fresh clone: made
    assert (tmp_path / "missing").is_dir()


def test_a_read_only_journal_is_called_read_only_not_corrupt(tmp_path: Path) -> None:
    import os
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("mounting a read-only tmpfs needs root (CI runs as root)")
    mount = tmp_path / "ro"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        Journal(mount / "j.db").close()
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        for name in ("j.db", "new.db"):
            with pytest.raises(JournalError, match="read-only file system") as error:
                Journal(mount / name)
            assert "corrupt" not in str(error.value)
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
