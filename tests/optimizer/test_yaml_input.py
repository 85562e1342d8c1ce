"""YAML input: libyaml's parser under PyYAML's composer and constructor (optimizer/yaml_input.py)
reads every file as the Python parser does, and refuses what it refuses, in the same words."""

from __future__ import annotations

from pathlib import Path

import pytest

from optimizer import yaml_input
from optimizer.errors import ConfigError
from tests.support import CONFIGS, ROOT

YAML_FILES = sorted(
    [*CONFIGS.glob("*.yaml"), *(ROOT / "deploy").rglob("*.yaml"), *(ROOT / "tests").rglob("*.yaml")]
)


def test_libyaml_is_there_so_the_fast_parser_is_used() -> None:
    assert yaml_input.FAST, "PyYAML without libyaml: every file takes the Python parser (6x slower)"


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_file_reads_the_same_both_ways(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = path.read_text(encoding="utf-8")
    slow = yaml_input._parse_slowly(text, str(path))

    def no_fallback(text: str, source: str) -> object:
        raise AssertionError(f"{source}: the fast parser fell back to the Python one")

    monkeypatch.setattr(yaml_input, "_parse_slowly", no_fallback)
    fast = yaml_input.parse_yaml(text, str(path))
    assert fast == slow
    assert repr(fast) == repr(slow)  # the same types too (1 is not 1.0, "1e3" a float in both)


REFUSED = {
    "syntax": "a: [1, 2\nb: 3\n",
    "tab": "a:\n\t- 1\n",
    "duplicate key": "name: a\nother: 1\nname: b\n",
    "two documents": "a: 1\n---\nb: 2\n",
    "control character": "a: b\x07c\n",
    "long integer": "n: " + "9" * 5000 + "\n",
    "alias bomb": "\n".join(
        ['a: &a ["x","x","x","x","x","x","x","x","x"]']
        + [f"{x}: &{x} [{','.join([f'*{p}'] * 9)}]" for p, x in zip("abcdefgh", "bcdefghi", strict=True)]
    ),
    "deep": "a: " + "[" * 5000 + "]" * 5000,
    "unknown tag": "a: !!python/object:os.system x\n",
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_refusal_is_worded_as_the_python_parser_words_it(case: str) -> None:
    text = REFUSED[case]
    with pytest.raises(ConfigError) as slow:
        yaml_input._parse_slowly(text, "f.yaml")
    with pytest.raises(ConfigError) as fast:
        yaml_input.parse_yaml(text, "f.yaml")
    assert str(fast.value) == str(slow.value)
    assert "f.yaml" in str(fast.value)


def test_values_after_the_fast_parser_are_typed_as_yaml_1_1_with_the_exponent_rule() -> None:
    data = yaml_input.parse_yaml("a: 1e-9\nb: 5E3\nc: 1.5e3\nd: '1e3'\ne: 0x10\nf: yes\n", "v.yaml")
    assert data == {"a": 1e-9, "b": 5e3, "c": 1.5e3, "d": "1e3", "e": 16, "f": True}
    assert isinstance(data["b"], float) and isinstance(data["e"], int)
