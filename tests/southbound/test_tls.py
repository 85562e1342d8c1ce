"""TLS and mutual TLS between the drivers and the emulated devices (throwaway CA)."""

from __future__ import annotations

from pathlib import Path

import pytest

from southbound.devices import load_devices_file
from southbound.errors import DeviceUnavailable
from southbound.grpc_native.ocs_client import OcsClient
from southbound.options import CallOptions, RetryPolicy
from southbound.registry import default_registry
from southbound.tls import ServerTlsConfig, TlsConfig, TlsConfigError
from tests.support.southbound_fixtures import FAST, served_ocs
from tests.support.tls_ca import SERVER_NAME, Pki, make_pki

ONE_TRY = CallOptions(deadline_s=2.0, retry=RetryPolicy(max_attempts=1))


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def test_plaintext_works_without_tls() -> None:
    with served_ocs() as (_, _, client, _):
        assert client.device_info().radix == 16


def test_tls_client_verifies_the_server(pki: Pki) -> None:
    server = ServerTlsConfig(pki.server_cert, pki.server_key)
    with served_ocs(tls=server) as (_, agent, _, _):
        tls = TlsConfig(pki.ca_cert, server_name=SERVER_NAME)
        with OcsClient(agent.address, tls=tls, options=FAST) as client:
            assert client.device_info().radix == 16
        # wrong CA: the server is not trusted
        with OcsClient(agent.address, tls=TlsConfig(pki.other_ca_cert, server_name=SERVER_NAME),
                       options=ONE_TRY) as client, pytest.raises(DeviceUnavailable):
            client.device_info()
        # plaintext client against a TLS server
        with OcsClient(agent.address, options=ONE_TRY) as client, pytest.raises(DeviceUnavailable):
            client.device_info()


def test_mutual_tls_requires_a_client_certificate_from_the_ca(pki: Pki) -> None:
    server = ServerTlsConfig(pki.server_cert, pki.server_key, client_ca=pki.ca_cert)
    with served_ocs(tls=server) as (_, agent, _, _):
        good = TlsConfig(pki.ca_cert, pki.client_cert, pki.client_key, SERVER_NAME)
        assert good.mutual
        with OcsClient(agent.address, tls=good, options=FAST) as client:
            assert client.device_info().name == "ocs-t"
        no_cert = TlsConfig(pki.ca_cert, server_name=SERVER_NAME)
        with OcsClient(agent.address, tls=no_cert, options=ONE_TRY) as client, pytest.raises(
            DeviceUnavailable
        ):
            client.device_info()
        rogue = TlsConfig(pki.ca_cert, pki.rogue_client_cert, pki.rogue_client_key, SERVER_NAME)
        with OcsClient(agent.address, tls=rogue, options=ONE_TRY) as client, pytest.raises(
            DeviceUnavailable
        ):
            client.device_info()


def test_mutual_tls_chosen_by_the_devices_file(pki: Pki, tmp_path: Path) -> None:
    server = ServerTlsConfig(pki.server_cert, pki.server_key, client_ca=pki.ca_cert)
    with served_ocs(tls=server) as (_, agent, _, _):
        path = tmp_path / "devices.yaml"
        path.write_text(
            "devices:\n"
            f"  ocs-t:\n    kind: ocs\n    address: '{agent.address}'\n"
            f"    tls:\n      ca_cert: {pki.ca_cert}\n      client_cert: {pki.client_cert}\n"
            f"      client_key: {pki.client_key}\n      server_name: {SERVER_NAME}\n"
        )
        device = load_devices_file(path)["ocs-t"]
        with default_registry().create(device) as client:
            assert client.device_info().name == "ocs-t"


def test_tls_config_errors(pki: Pki, tmp_path: Path) -> None:
    with pytest.raises(TlsConfigError, match="together"):
        TlsConfig(pki.ca_cert, client_cert=pki.client_cert)
    with pytest.raises(TlsConfigError, match="cannot read"):
        TlsConfig(tmp_path / "absent.pem").channel_credentials()
