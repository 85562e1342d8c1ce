"""The P4Runtime driver over mutual TLS, with the devices file's TLS settings."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from emulation.standard.p4rt import start_p4runtime
from southbound.errors import DeviceUnavailable
from southbound.options import CallOptions, RetryPolicy
from southbound.standard.p4rt.driver import P4GroupWriter
from southbound.tls import ServerTlsConfig, TlsConfig
from tests.support.p4rt_support import PREFIXES, block_switch, p4_device
from tests.support.tls_ca import SERVER_NAME, make_pki


def test_groups_over_mutual_tls_and_a_plaintext_driver_is_turned_away(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    device, _ = block_switch()
    agent = start_p4runtime(device, prefixes=PREFIXES,
                            tls=ServerTlsConfig(pki.server_cert, pki.server_key, client_ca=pki.ca_cert))
    try:
        tls = TlsConfig(pki.ca_cert, pki.client_cert, pki.client_key, server_name=SERVER_NAME)
        with P4GroupWriter(replace(p4_device(agent.address), tls=tls)) as driver:
            driver.set_groups(expected_generation=1, source={"b": {"b": 2}})
            assert driver.groups().source == {"b": {"b": 2}}
        once = CallOptions(deadline_s=2.0, retry=RetryPolicy(max_attempts=1))
        with P4GroupWriter(replace(p4_device(agent.address), options=once)) as plain, \
                pytest.raises(DeviceUnavailable):
            plain.groups()
    finally:
        agent.stop()
    assert device.groups()[1] == {"b": {"b": 2}}
