"""``ctl`` names why a connection failed (issue 32 item 2): from the status and the channel's
own error, not a substring of any word; gRPC's C-core log lines stay off the terminal."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from controller.northbound.diagnose import FailureCause, connection_failure
from southbound.tls import ServerTlsConfig, TlsConfig
from tests.support.cli_helpers import run_cli
from tests.support.northbound_fake import serving
from tests.support.tls_ca import SERVER_NAME, make_pki

LAST = "failed to connect to all addresses; last error: "
CORE_LOG_LINE = re.compile(r"^[EIWD]\d{4} ", re.MULTILINE)
TLS = TlsConfig(Path("ca.pem"), Path("client.pem"), Path("client.key"), "heliostat-device")


@pytest.mark.parametrize(
    ("details", "tls", "cause"),
    [
        # under load on a plaintext daemon: a cut-short attempt, not TLS (was "TLS failed")
        (LAST + "UNAVAILABLE: ipv4:127.0.0.1:50051: tcp handshaker shutdown", None, FailureCause.INTERRUPTED),
        (LAST + "UNKNOWN: ipv4:127.0.0.1:1: Failed to connect to remote host: Connection refused", TLS,
         FailureCause.UNREACHABLE),
        (LAST + "UNKNOWN: ipv4:127.0.0.1:5: Custom verification check failed with error: UNAUTHENTICATED: "
         "Hostname Verification Check failed.", TLS, FailureCause.WRONG_NAME),
        (LAST + "UNKNOWN: ipv4:127.0.0.1:5: Tls handshake failed (TSI_PROTOCOL_FAILURE): SSL_ERROR_SSL: "
         "error:1a000064:ECDSA routines:OPENSSL_internal:BAD_SIGNATURE: certificate signature failure: OK",
         TLS, FailureCause.WRONG_CA),
        (LAST + "UNKNOWN: ipv4:127.0.0.1:5: Failed to create security handshaker.", TLS,
         FailureCause.KEY_MISMATCH),
        (LAST + "UNKNOWN: ipv4:127.0.0.1:5: Tls handshake failed (TSI_PROTOCOL_FAILURE): SSL_ERROR_SSL: "
         "error:100000f7:SSL routines:OPENSSL_internal:WRONG_VERSION_NUMBER", TLS,
         FailureCause.TLS_TO_PLAINTEXT),
        (LAST + "UNAVAILABLE: ipv4:127.0.0.1:5: Socket closed", None, FailureCause.PLAINTEXT_TO_TLS),
        (LAST + "UNAVAILABLE: ipv4:127.0.0.1:5: Socket closed", TLS, FailureCause.CLIENT_CERT_REFUSED),
    ],
)
def test_connection_failures_are_classified(details: str, tls: TlsConfig | None, cause: FailureCause) -> None:
    failure = connection_failure(details, tls)
    assert failure.cause is cause
    assert failure.is_tls == (cause not in (FailureCause.UNREACHABLE, FailureCause.INTERRUPTED))


def test_ctl_names_each_tls_mistake_and_prints_no_grpc_core_lines(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    (tmp_path / "other").mkdir()
    other_run = make_pki(tmp_path / "other")  # a CA from another `certs` run
    server_tls = ServerTlsConfig(pki.server_cert, pki.server_key, client_ca=pki.ca_cert)
    client = ["--cert", str(pki.client_cert), "--key", str(pki.client_key)]

    def ctl(address: str, *tls_args: str) -> str:
        proc = run_cli("ctl", "--address", address, "--timeout", "5", *tls_args, "status", timeout=60)
        assert proc.returncode != 0
        assert not CORE_LOG_LINE.search(proc.stderr), proc.stderr
        return proc.stderr

    with serving(tls=server_tls) as (_api, servers, _m):
        address = str(servers.grpc_address)
        wrong_name = ctl(address, "--ca-cert", str(pki.ca_cert), "--server-name", "not-the-name", *client)
        assert "wrong server name" in wrong_name and "--server-name" in wrong_name
        assert "is `heliostat run` running" not in wrong_name
        wrong_ca = ctl(address, "--ca-cert", str(other_run.ca_cert), "--server-name", SERVER_NAME, *client)
        assert "not signed by --ca-cert" in wrong_ca and "turns TLS on" not in wrong_ca
        mismatched = ctl(address, "--ca-cert", str(pki.ca_cert), "--server-name", SERVER_NAME,
                         "--cert", str(pki.client_cert), "--key", str(pki.rogue_client_key))
        assert "key mismatch" in mismatched and "is not the private key of --cert" in mismatched
    with serving() as (_api, servers, _m):
        to_plaintext = ctl(str(servers.grpc_address), "--ca-cert", str(pki.ca_cert),
                           "--server-name", SERVER_NAME, *client)
        assert "speaks plaintext" in to_plaintext
