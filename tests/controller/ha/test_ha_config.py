"""The ``ha:`` section of the controller config: accepted forms and the errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.config import controller_config_from_dict
from controller.ha.config import HaConfig
from optimizer.errors import ConfigError


def load(ha: object, tmp_path: Path) -> HaConfig | None:
    data = {"fabric": "f.yaml", "devices": "d.yaml", "store": "j.db"}
    if ha is not None:
        data["ha"] = ha  # type: ignore[assignment]
    return controller_config_from_dict(data, "ctl.yaml", tmp_path).ha


def test_absent_means_one_replica(tmp_path: Path) -> None:
    assert load(None, tmp_path) is None


def test_full_section(tmp_path: Path) -> None:
    for name in ("ca.pem", "c.pem", "k.pem"):
        (tmp_path / name).write_text("x")
    ha = load(
        {"etcd": ["127.0.0.1:2379", "10.0.0.2:2379"], "name": "replica-a", "lease_ttl": 3,
         "prefix": "/heliostat/demo-8/", "tls": {"ca": "ca.pem", "cert": "c.pem", "key": "k.pem"}},
        tmp_path,
    )
    assert ha is not None
    assert ha.endpoints == ("127.0.0.1:2379", "10.0.0.2:2379") and ha.name == "replica-a"
    assert ha.lease_ttl == 3 and ha.prefix == "/heliostat/demo-8"  # the trailing / dropped
    assert ha.tls is not None and ha.tls.ca == tmp_path / "ca.pem" and ha.tls.key == tmp_path / "k.pem"


def test_default_lease_ttl(tmp_path: Path) -> None:
    ha = load({"etcd": ["h:1"], "name": "a", "prefix": "/p"}, tmp_path)
    assert ha is not None and ha.lease_ttl == 5 and ha.tls is None


@pytest.mark.parametrize(
    ("ha", "key", "problem"),
    [
        ({"name": "a", "prefix": "/p"}, "ha.etcd", "required key is missing"),
        ({"etcd": [], "name": "a", "prefix": "/p"}, "ha.etcd", "at least one etcd endpoint"),
        ({"etcd": ["localhost"], "name": "a", "prefix": "/p"}, "ha.etcd[0]", "expected host:port"),
        ({"etcd": ["h:1", "h:1"], "name": "a", "prefix": "/p"}, "ha.etcd[1]", "listed twice"),
        ({"etcd": ["http://h:1"], "name": "a", "prefix": "/p"}, "ha.etcd[0]", "without a scheme"),
        ({"etcd": ["h:1"], "name": "a b", "prefix": "/p"}, "ha.name", "has ' '"),
        ({"etcd": ["h:1"], "name": "a", "prefix": "p"}, "ha.prefix", "absolute key prefix"),
        ({"etcd": ["h:1"], "name": "a", "prefix": "/p", "lease_ttl": 1}, "ha.lease_ttl", "must be >= 2"),
        ({"etcd": ["h:1"], "name": "a", "prefix": "/p", "lease_ttl": 2.5}, "ha.lease_ttl",
         "expected an integer"),
        ({"etcd": ["h:1"], "name": "a", "prefix": "/p", "leader": 1}, "ha.leader", "unknown key"),
        ({"etcd": ["h:1"], "name": "a", "prefix": "/p", "tls": {"cert": "c"}}, "ha.tls.ca", "required"),
        ({"etcd": ["h:1"], "name": "a", "prefix": "/p", "tls": {"ca": "nope.pem"}}, "ha.tls.ca",
         "no such file"),
        ("yes", "ha", "expected a mapping"),
    ],
)
def test_errors_name_the_key(ha: object, key: str, problem: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as error:
        load(ha, tmp_path)
    assert error.value.source == "ctl.yaml" and error.value.key == key
    assert problem in error.value.problem
