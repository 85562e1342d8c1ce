"""A small certificate authority for a Heliostat deployment (``heliostat certs``).

Writes, into one directory, a CA and the certificates mutual TLS needs on both sides:

- ``ca.pem`` / ``ca-key.pem``: the CA (keep the key offline once the rest is issued);
- ``api.pem``: the northbound API's server certificate (``listen.northbound_tls``);
- ``device.pem``: the devices' server certificate (``heliostat emulate --tls-cert``, the
  OpenFlow agent spec's ``tls``), named ``heliostat-device`` (the devices file's ``server_name``);
- ``controller.pem``: the controller's client certificate towards the devices;
- one client certificate per operator and per reader of the API (``ctl --cert``), whose common
  name is what ``listen.northbound_tls.operators`` / ``readers`` list.

Each ``X.pem`` has its key in ``X-key.pem`` (mode 0600). Keys are ECDSA P-256; server
certificates name ``localhost``, 127.0.0.1 and ::1 besides the given hosts. Nothing is
overwritten unless asked.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from optimizer.errors import HeliostatError

DEVICE_SERVER_NAME = "heliostat-device"
API_SERVER_NAME = "heliostat-api"
CONTROLLER_CLIENT_NAME = "heliostat-controller"
LOOPBACK = ("localhost", "127.0.0.1", "::1")
MAX_DAYS = 3650


class PkiError(HeliostatError):
    """The certificates cannot be written (a file exists, a bad name or host)."""


@dataclass(frozen=True)
class Issued:
    name: str  # the certificate's common name
    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    ca: Issued
    api: Issued
    device: Issued
    controller: Issued
    operators: tuple[Issued, ...]
    readers: tuple[Issued, ...]


def write_pki(
    directory: Path,
    *,
    hosts: Sequence[str] = (),
    operators: Sequence[str] = ("operator",),
    readers: Sequence[str] = ("reader",),
    days: int = 365,
    force: bool = False,
) -> Pki:
    """Issue the CA and every certificate into ``directory``; returns where each one is."""
    if not 1 <= days <= MAX_DAYS:
        raise PkiError(f"--days must be from 1 to {MAX_DAYS}, got {days}")
    for name in (*operators, *readers):
        _check_name(name)
    both = sorted(set(operators) & set(readers))
    if both:
        raise PkiError(f"a name is both operator and reader: {', '.join(both)}")
    sans = _subject_alt_names((*LOOPBACK, *hosts))
    stems = ["ca", "api", "device", "controller", *operators, *readers]
    if len(set(stems)) != len(stems):
        raise PkiError("operator and reader names must be distinct and not ca, api, device or controller")
    directory.mkdir(parents=True, exist_ok=True)
    if not force:
        taken = [p for s in stems for p in (directory / f"{s}.pem", directory / f"{s}-key.pem") if p.exists()]
        if taken:
            raise PkiError(f"{taken[0]} exists (use --force to replace the whole set)")
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        _builder("heliostat CA", "heliostat CA", ca_key, now, days)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca = _write(directory, "ca", "heliostat CA", ca_key, ca_cert)

    def leaf(stem: str, common: str, server: bool, names: list[x509.GeneralName]) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            _builder(common, "heliostat CA", key, now, days)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(common), *names]), critical=False)
        )
        return _write(directory, stem, common, key, builder.sign(ca_key, hashes.SHA256()))

    return Pki(
        ca=ca,
        api=leaf("api", API_SERVER_NAME, True, sans),
        device=leaf("device", DEVICE_SERVER_NAME, True, sans),
        controller=leaf("controller", CONTROLLER_CLIENT_NAME, False, []),
        operators=tuple(leaf(n, n, False, []) for n in operators),
        readers=tuple(leaf(n, n, False, []) for n in readers),
    )


def _check_name(name: str) -> None:
    ok = name and len(name) <= 64 and all(c.isascii() and (c.isalnum() or c in "-_.") for c in name)
    if not ok:
        raise PkiError(f"certificate name {name!r}: 1-64 characters of letters, digits, '-', '_', '.'")


def _subject_alt_names(hosts: Iterable[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(hosts):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            dns = all(c.isascii() and (c.isalnum() or c in "-.") for c in host)
            if not host or len(host) > 253 or not dns:
                raise PkiError(f"--host {host!r}: not an IP address or a DNS name") from None
            names.append(x509.DNSName(host))
    return names


def _builder(
    common: str, issuer: str, key: ec.EllipticCurvePrivateKey, now: dt.datetime, days: int
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
    )


def _write(
    directory: Path, stem: str, common: str, key: ec.EllipticCurvePrivateKey, cert: x509.Certificate
) -> Issued:
    cert_path, key_path = directory / f"{stem}.pem", directory / f"{stem}-key.pem"
    key_bytes = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    try:
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key_bytes)
        os.chmod(key_path, 0o600)
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    except OSError as exc:
        raise PkiError(f"cannot write {stem} into {directory}: {exc.strerror or exc}") from exc
    return Issued(common, cert_path, key_path)
