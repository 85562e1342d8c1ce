"""Issue 32 item 8: YAML 1.1's exponent numbers read as the numbers an operator meant, and a
metrics endpoint beyond loopback without TLS is warned about as the API and the page are."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from controller.config import parse_controller_config
from controller.metrics import ControllerMetrics
from controller.northbound.listen import ListenAddress
from controller.northbound.metrics_http import start_metrics_http
from optimizer.config import parse_yaml
from optimizer.errors import ConfigError
from optimizer.limits import MIN_TE_INTERVAL_S

HEAD = "fabric: f.yaml\ndevices: d.yaml\nstore: j.db\n"


@pytest.mark.parametrize(
    ("text", "value"),
    [("1e-9", 1e-9), ("1E3", 1000.0), ("-2e2", -200.0), ("1.5e3", 1500.0), ("+.5e1", 5.0), ("1_0e1", 100.0)],
)
def test_exponent_numbers_are_numbers(text: str, value: float) -> None:
    assert parse_yaml(f"x: {text}\n", "t.yaml") == {"x": value}


@pytest.mark.parametrize("text", ["1e", "e5", "1e-", "b1e5", "1.2.3e4", "'1e5'", "0x1e5"])
def test_things_that_are_not_exponent_numbers_stay_what_they_were(text: str) -> None:
    assert not isinstance(parse_yaml(f"x: {text}\n", "t.yaml")["x"], float)


def test_te_interval_in_exponent_form_is_checked_as_a_number() -> None:
    """Before: "expected a number, got str '1e-9'"."""
    with pytest.raises(ConfigError) as error:
        parse_controller_config(HEAD + "intervals:\n  te_interval: 1e-9\n", "c.yaml")
    assert error.value.key == "intervals.te_interval"
    assert f"must be at least {MIN_TE_INTERVAL_S:g} s" in error.value.problem
    config = parse_controller_config(HEAD + "intervals:\n  te_interval: 6e1\n", "c.yaml")
    assert config.intervals.te_interval == 60.0


def test_metrics_beyond_loopback_in_plaintext_is_warned(caplog: pytest.LogCaptureFixture) -> None:
    """Bound to 0.0.0.0 only to read the warning; no client connects."""
    with caplog.at_level(logging.WARNING, logger="southbound.tls"):
        server = start_metrics_http(ControllerMetrics().registry, ListenAddress("0.0.0.0", 0))
        server.stop()
    warned = [r.getMessage() for r in caplog.records if "SECURITY" in r.getMessage()]
    assert len(warned) == 1 and "metrics endpoint" in warned[0] and "PLAINTEXT" in warned[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="southbound.tls"):
        start_metrics_http(ControllerMetrics().registry, ListenAddress("127.0.0.1", 0)).stop()
    assert not [r for r in caplog.records if "SECURITY" in r.getMessage()]


def test_fabric_names_that_look_like_numbers_are_reported_not_misread(tmp_path: Path) -> None:
    """A block named 1e5 now reads as a number: the fabric says which key wants a name."""
    from optimizer.config import load_fabric

    path = tmp_path / "f.yaml"
    path.write_text("name: f\nblocks:\n  - {name: 1e5, uplinks: 4}\n  - {name: b2, uplinks: 4}\n"
                    "ocs:\n  - {name: o1, ports: 8}\n")
    with pytest.raises(ConfigError) as error:
        load_fabric(path)
    assert error.value.key == "blocks[0].name"
