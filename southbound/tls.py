"""TLS settings of a device connection and the gRPC credentials made from them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc


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
            root_certificates=_read(self.ca_cert),
            private_key=_read(self.client_key) if self.client_key else None,
            certificate_chain=_read(self.client_cert) if self.client_cert else None,
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
            [(_read(self.key), _read(self.cert))],
            root_certificates=_read(self.client_ca) if self.client_ca else None,
            require_client_auth=self.client_ca is not None,
        )


def _read(path: Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise TlsConfigError(f"cannot read {path}: {exc.strerror}") from exc
