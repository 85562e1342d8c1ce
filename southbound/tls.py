"""TLS settings of a gRPC connection and the credentials made from them; who may do what
by certificate name (:class:`ClientRoles`); and the loud warning for a server that listens
beyond loopback in plaintext (:func:`warn_if_exposed`)."""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import grpc

log = logging.getLogger(__name__)


class TlsConfigError(ValueError):
    """TLS settings that cannot be used (a missing file, a key without a certificate)."""


@dataclass(frozen=True)
class TlsConfig:
    """Client-side TLS: server verified against ``ca_cert``; mutual TLS when a client
    certificate and key are given. ``server_name`` overrides the name checked in the
    server certificate (useful when dialling an IP address)."""

    ca_cert: Path
    client_cert: Path | None = None
    client_key: Path | None = None
    server_name: str | None = None

    def __post_init__(self) -> None:
        if (self.client_cert is None) != (self.client_key is None):
            raise TlsConfigError("client_cert and client_key must be given together")

    @property
    def mutual(self) -> bool:
        return self.client_cert is not None

    def channel_credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            root_certificates=read_pem(self.ca_cert, CERTIFICATE),
            private_key=read_pem(self.client_key, PRIVATE_KEY) if self.client_key else None,
            certificate_chain=read_pem(self.client_cert, CERTIFICATE) if self.client_cert else None,
        )

    def channel_options(self) -> list[tuple[str, str]]:
        if self.server_name:
            return [("grpc.ssl_target_name_override", self.server_name)]
        return []


@dataclass(frozen=True)
class ServerTlsConfig:
    """Server-side TLS; with ``client_ca`` set, clients must present a certificate it signed."""

    cert: Path
    key: Path
    client_ca: Path | None = None

    def server_credentials(self) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials(
            [(read_pem(self.key, PRIVATE_KEY), read_pem(self.cert, CERTIFICATE))],
            root_certificates=read_pem(self.client_ca, CERTIFICATE) if self.client_ca else None,
            require_client_auth=self.client_ca is not None,
        )


CERTIFICATE = "certificate"
PRIVATE_KEY = "private key"
_PEM_MARKERS = {CERTIFICATE: (b"-----BEGIN CERTIFICATE-----",), PRIVATE_KEY: (b"PRIVATE KEY-----",)}
MAX_PEM_BYTES = 1 << 20


def read_pem(path: Path, kind: str) -> bytes:
    """The PEM file at ``path``, checked to hold a ``kind`` (``certificate`` or ``private
    key``): a DER or garbage file is named as such here, not later as a failure to bind."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_PEM_BYTES + 1)
    except OSError as exc:
        raise TlsConfigError(f"cannot read {path}: {exc.strerror}") from exc
    if len(data) > MAX_PEM_BYTES:
        raise TlsConfigError(f"{path}: larger than {MAX_PEM_BYTES} bytes; not a PEM {kind}")
    if not data.lstrip().startswith(b"-----BEGIN") or not any(m in data for m in _PEM_MARKERS[kind]):
        raise TlsConfigError(f"{path}: not a PEM {kind} (expected a '-----BEGIN ...' block)")
    return data


@dataclass(frozen=True)
class ClientRoles:
    """Mutual TLS authorisation by certificate name (the subject CN or a DNS SAN): operators
    may read and act (pause, drain, ToE...), readers may only read; any other certificate,
    even one the CA signed (a device's), is refused."""

    operators: frozenset[str] = field(default_factory=frozenset)
    readers: frozenset[str] = field(default_factory=frozenset)

    def role_of(self, names: Iterable[str]) -> str | None:
        names = set(names)
        if names & self.operators:
            return "operator"
        if names & self.readers:
            return "reader"
        return None


def is_loopback(host: str) -> bool:
    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name, or a wildcard such as 0.0.0.0 / ::


def warn_if_exposed(what: str, host: str, tls: ServerTlsConfig | None) -> bool:
    """Warn loudly when ``what`` listens beyond loopback without TLS (anyone who can reach it
    may use it) or without client certificates. Returns True when it warned."""
    if is_loopback(host):
        return False
    if tls is None:
        log.warning(
            "SECURITY: %s listens on %s in PLAINTEXT and without authentication: anyone who can "
            "reach it may use it. Serve it over mutual TLS (see `heliostat certs`) or bind 127.0.0.1.",
            what, host,
        )
        return True
    if tls.client_ca is None:
        log.warning(
            "SECURITY: %s listens on %s over TLS without client certificates: anyone who can reach "
            "it may use it. Set client_ca (mutual TLS).", what, host,
        )
        return True
    return False
