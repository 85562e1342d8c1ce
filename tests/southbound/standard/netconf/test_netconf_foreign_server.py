"""Our driver against a foreign NETCONF server: the ``netconf`` package's SSH server (paramiko
3, in .venv-foreign) serving an independent model of the module (tests/foreign/netconf_ocs_server.py).
It checks SSH, framing, hello, message ids, replies and rpc-errors against another stack."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from southbound.devices import DeviceConfig, Endpoint
from southbound.errors import Fenced, InvalidRequest, StaleGeneration
from southbound.standard.netconf.driver import NetconfOcs
from southbound.types import CrossConnect as XC
from tests.southbound.test_fencing import Epochs
from tests.support.foreign import SCRIPTS, foreign_python
from tests.support.southbound_fixtures import FAST

USER, SECRET = "operator", "foreign-secret"


@contextmanager
def _foreign_server() -> Iterator[NetconfOcs]:
    python = foreign_python()
    process = subprocess.Popen([str(python), str(SCRIPTS / "netconf_ocs_server.py"), USER, SECRET],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        assert process.stdout is not None and process.stdin is not None
        line = process.stdout.readline()
        if not line:
            stderr = process.stderr.read() if process.stderr else ""
            pytest.fail(f"the foreign server did not start: {stderr}")
        port = json.loads(line)["port"]
        device = DeviceConfig(name="foreign-ocs", kind="ocs", address="", transport="netconf", options=FAST,
                              endpoints=(Endpoint("netconf", f"127.0.0.1:{port}", USER, SECRET),))
        client = NetconfOcs(device)
        try:
            yield client
        finally:
            client.close()
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


@pytest.mark.slow
def test_our_driver_reads_applies_and_maps_errors_on_a_foreign_server() -> None:
    with _foreign_server() as client:
        info = client.device_info()
        first = client.apply(expected_generation=1, add=[XC(0, 8), XC(9, 1)], request_id="f1")
        again = client.apply(expected_generation=1, add=[XC(0, 8), XC(9, 1)], request_id="f1")
        second = client.apply(expected_generation=2, remove=[XC(0, 8)], add=[XC(0, 10)])
        table = client.cross_connects()
        ports = client.port_status([1, 9, 2])
        with pytest.raises(StaleGeneration) as stale:
            client.apply(expected_generation=2, add=[XC(2, 11)])
        with pytest.raises(InvalidRequest):
            client.apply(expected_generation=3, remove=[XC(3, 12)])
        client.epoch = Epochs(6)
        client.apply(expected_generation=3, add=[XC(3, 12)])
        client.epoch = stale_epoch = Epochs(2)
        with pytest.raises(Fenced) as fenced:
            client.apply(expected_generation=4, add=[XC(4, 13)])
    assert info.name == "foreign-ocs" and info.radix == 16 and info.north_ports == tuple(range(8))
    assert (first.generation, first.replayed) == (2, False)
    assert (again.generation, again.replayed) == (2, True)
    assert second.generation == 3
    assert table.cross_connects == {XC(0, 10), XC(1, 9)} and table.generation == 3
    assert [(p.port, p.connected_port, p.oper_up) for p in ports] == \
        [(1, 9, True), (9, 1, True), (2, None, False)]
    assert stale.value.current_generation == 3
    assert fenced.value.highest_epoch == 6 and stale_epoch.refusals == [("foreign-ocs", 6)]
