"""Access (issue 16: plaintext and unauthenticated by default; under mutual TLS any certificate
the CA signed could do anything, even a device's; a TLS failure in ``ctl`` read as "is
heliostat run running?"; the OpenFlow agents' gRPC had no TLS)."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from controller.cli import main
from controller.config import load_controller_config
from controller.northbound import ControllerCallFailed, ControllerUnreachable
from controller.northbound.api import MaintenanceKind
from controller.northbound.errors import NorthboundError
from emulation.agent import DeviceAgent
from emulation.mininet.plan import plan_network
from emulation.openflow.agent import build_devices, start_grpc
from emulation.openflow.spec import spec_from_json
from southbound.grpc_native.pb import ocs_pb2, ocs_pb2_grpc
from southbound.options import RetryPolicy
from southbound.pki import API_SERVER_NAME, DEVICE_SERVER_NAME, Pki, write_pki
from southbound.standard.p4rt.prefixes import default_prefixes
from southbound.standard.pb import p4runtime_pb2, p4runtime_pb2_grpc
from southbound.tls import ClientRoles, ServerTlsConfig, TlsConfig, TlsConfigError
from tests.support import shipped_fabric
from tests.support.northbound_fake import client_for, serving

ONCE = RetryPolicy(max_attempts=1)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return write_pki(tmp_path_factory.mktemp("pki"), operators=["alice"], readers=["grafana"])


def _as(issued, pki: Pki) -> TlsConfig:
    return TlsConfig(pki.ca.cert, issued.cert, issued.key, server_name=API_SERVER_NAME)


def test_under_mutual_tls_each_certificate_gets_its_role(pki: Pki) -> None:
    server_tls = ServerTlsConfig(pki.api.cert, pki.api.key, client_ca=pki.ca.cert)
    roles = ClientRoles(operators=frozenset({"alice"}), readers=frozenset({"grafana"}))
    with serving(tls=server_tls, roles=roles) as (api, servers, _m):
        with client_for(servers, tls=_as(pki.operators[0], pki), read_retry=ONCE) as alice:
            assert alice.status().fabric == "fake-4"
            alice.pause_toe()
            alice.set_maintenance(MaintenanceKind.BLOCK, "b1", True)
        with client_for(servers, tls=_as(pki.readers[0], pki), read_retry=ONCE) as grafana:
            assert grafana.status().fabric == "fake-4"
            assert grafana.history(5) is not None
            with pytest.raises(ControllerCallFailed) as denied:
                grafana.resume_toe()
            assert denied.value.code is grpc.StatusCode.PERMISSION_DENIED
            assert "needs an operator" in str(denied.value) and "grafana" in str(denied.value)
        # signed by the same CA, but a client certificate nobody listed (the controller's own)
        with client_for(servers, tls=_as(pki.controller, pki), read_retry=ONCE) as stranger:
            with pytest.raises(ControllerCallFailed) as denied:
                stranger.status()
            assert denied.value.code is grpc.StatusCode.PERMISSION_DENIED
            with pytest.raises(ControllerCallFailed):
                stranger.set_maintenance(MaintenanceKind.BLOCK, "b2", True)
        assert api.calls_to("pause_toe") and not api.calls_to("resume_toe")
        assert all("b2" not in args for args in api.calls_to("set_maintenance"))


def test_a_device_server_certificate_cannot_act_on_the_api(pki: Pki) -> None:
    server_tls = ServerTlsConfig(pki.api.cert, pki.api.key, client_ca=pki.ca.cert)
    roles = ClientRoles(operators=frozenset({"alice"}))
    with serving(tls=server_tls, roles=roles) as (api, servers, _m):
        device = TlsConfig(pki.ca.cert, pki.device.cert, pki.device.key, server_name=API_SERVER_NAME)
        with client_for(servers, tls=device, read_retry=ONCE) as client, pytest.raises(ControllerUnreachable):
            client.pause_toe()  # a server certificate is refused as a client in the handshake
        assert not api.calls_to("pause_toe")


def test_binding_beyond_loopback_in_plaintext_warns_loudly(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING), serving() as (_api, _servers, _m):
        pass
    assert not [r for r in caplog.records if "SECURITY" in r.getMessage()]
    from controller.northbound import start_northbound
    from tests.support.northbound_fake import FakeControllerApi

    with caplog.at_level(logging.WARNING):
        servers = start_northbound(FakeControllerApi(), "0.0.0.0:0")
        servers.stop(grace_s=0)
        agent = DeviceAgent("dev-x", "ocs", lambda server: None, "x", host="0.0.0.0")
        agent.start()
        agent.stop()
    warnings = [r.getMessage() for r in caplog.records if "SECURITY" in r.getMessage()]
    assert any("northbound API" in w and "PLAINTEXT" in w for w in warnings)
    assert any("dev-x" in w for w in warnings)


def test_a_certificate_that_is_not_pem_is_named_as_such(tmp_path: Path, pki: Pki) -> None:
    der = tmp_path / "api.der"
    der.write_bytes(b"\x30\x82\x02\x0a" + bytes(64))
    with pytest.raises(TlsConfigError, match="not a PEM certificate"):
        ServerTlsConfig(der, pki.api.key).server_credentials()
    with pytest.raises(NorthboundError, match="not a PEM certificate"), serving(
        tls=ServerTlsConfig(der, pki.api.key)
    ):
        pass


def test_heliostat_certs_writes_a_working_set_and_the_config_to_use_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "certs"
    args = ["--operator", "ops1", "--reader", "ro1", "--host", "10.1.2.3"]
    assert main(["certs", "--out", str(out), *args]) == 0
    printed = capsys.readouterr().out
    for name in ("ca", "api", "device", "controller", "ops1", "ro1"):
        assert (out / f"{name}.pem").exists()
        assert stat.S_IMODE((out / f"{name}-key.pem").stat().st_mode) == 0o600
    # the printed listen section is a valid controller config
    section = printed[printed.index("listen:"):printed.index("# devices file")]
    config = tmp_path / "controller.yaml"
    config.write_text(f"fabric: f.yaml\ndevices: d.yaml\nstore: j.db\n{section}")
    listen = load_controller_config(config).listen
    assert listen.northbound_roles.operators == {"ops1"} and listen.northbound_roles.readers == {"ro1"}
    assert main(["certs", "--out", str(out)]) == 2  # nothing overwritten without --force
    assert main(["certs", "--out", str(out), "--operator", "bad name"]) == 2


def test_the_openflow_agents_serve_grpc_over_mutual_tls(pki: Pki) -> None:
    plan = plan_network(shipped_fabric("fabric-4"), "tls1", 6653)
    server_tls = ServerTlsConfig(pki.device.cert, pki.device.key, client_ca=pki.ca.cert)
    spec = spec_from_json({**plan.agent.to_json(), "tls": {"cert": str(pki.device.cert),
                                                            "key": str(pki.device.key),
                                                            "client_ca": str(pki.ca.cert)}})
    assert spec.tls == server_tls
    assert spec_from_json(spec.to_json()).tls == spec.tls
    servers = start_grpc(build_devices(spec), tls=server_tls, protocols="standard",
                         prefixes=default_prefixes(spec.block_names), netconf_password="pw")
    agents = list(servers.agents.values())
    try:
        ocs = next(a for a in agents if a.kind == "ocs")
        switch = next(a for a in agents if a.kind == "block")
        tls = TlsConfig(pki.ca.cert, pki.controller.cert, pki.controller.key, server_name=DEVICE_SERVER_NAME)
        secure = grpc.secure_channel(ocs.address, tls.channel_credentials(), options=tls.channel_options())
        with secure:
            # no bridge is attached here: the health service answers (over TLS) that the device
            # is not serving yet, and the device service refuses UNAVAILABLE saying why
            health = health_pb2_grpc.HealthStub(secure).Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert health.status == health_pb2.HealthCheckResponse.NOT_SERVING
            stub = ocs_pb2_grpc.OcsServiceStub(secure)
            with pytest.raises(grpc.RpcError) as refused:
                stub.GetDeviceInfo(ocs_pb2.GetOcsDeviceInfoRequest(), timeout=5)
            assert refused.value.code() is grpc.StatusCode.UNAVAILABLE
            assert "not attached" in (refused.value.details() or "")
        secure = grpc.secure_channel(switch.address, tls.channel_credentials(), options=tls.channel_options())
        with secure:  # a streaming call of a standard protocol (P4Runtime's arbitration) too
            stream = p4runtime_pb2_grpc.P4RuntimeStub(secure).StreamChannel(
                iter([p4runtime_pb2.StreamMessageRequest()]), timeout=5)
            with pytest.raises(grpc.RpcError) as refused:
                next(stream)
            assert refused.value.code() is grpc.StatusCode.UNAVAILABLE
        with grpc.insecure_channel(ocs.address) as plain, pytest.raises(grpc.RpcError) as plain_refused:
            health_pb2_grpc.HealthStub(plain).Check(health_pb2.HealthCheckRequest(), timeout=2)
        assert "not attached" not in (plain_refused.value.details() or "")  # the handshake failed
    finally:
        servers.stop(0)
    assert yaml.safe_dump(spec.to_json())  # the spec the packet fabric writes stays JSON-able
