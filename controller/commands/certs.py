"""``heliostat certs --out DIR``: a CA and every certificate mutual TLS needs, plus the config
lines that use them (see :mod:`southbound.pki`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from southbound.pki import DEVICE_SERVER_NAME, Pki, write_pki


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("certs", help="issue a CA and the TLS certificates for the API and the devices")
    p.add_argument("--out", required=True, type=Path, help="directory to write the PEM files into")
    p.add_argument("--host", action="append", default=[],
                   help="a DNS name or IP the API and devices are reached at (besides localhost); repeat it")
    p.add_argument("--operator", action="append", default=None,
                   help="client certificate name that may act through the API (default: operator); repeat it")
    p.add_argument("--reader", action="append", default=None,
                   help="client certificate name that may only read (default: reader); repeat it")
    p.add_argument("--days", type=int, default=365, help="validity in days (default 365)")
    p.add_argument("--force", action="store_true", help="replace certificates already in --out")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    pki = write_pki(
        args.out,
        hosts=args.host,
        operators=args.operator or ["operator"],
        readers=args.reader or ["reader"],
        days=args.days,
        force=args.force,
    )
    print(usage(pki))
    return 0


def usage(pki: Pki) -> str:
    """Where each file goes: the controller config, the devices, ctl."""
    ca = pki.ca.cert.resolve()
    op = pki.operators[0] if pki.operators else None
    lines = [
        f"# wrote a CA and {3 + len(pki.operators) + len(pki.readers)} certificates into {ca.parent}",
        "# controller config (heliostat run --config):",
        "listen:",
        "  northbound_tls:",
        f"    cert: {pki.api.cert.resolve()}",
        f"    key: {pki.api.key.resolve()}",
        f"    client_ca: {ca}",
        f"    operators: [{', '.join(i.name for i in pki.operators)}]",
        f"    readers: [{', '.join(i.name for i in pki.readers)}]",
        "# devices file, under defaults:",
        "  tls:",
        f"    ca_cert: {ca}",
        f"    client_cert: {pki.controller.cert.resolve()}",
        f"    client_key: {pki.controller.key.resolve()}",
        f"    server_name: {DEVICE_SERVER_NAME}",
        "# emulated devices:",
        f"#   heliostat emulate ... --tls-cert {pki.device.cert.resolve()} "
        f"--tls-key {pki.device.key.resolve()} --tls-client-ca {ca} --tls-ca {ca} "
        f"--tls-client-cert {pki.controller.cert.resolve()} --tls-client-key {pki.controller.key.resolve()} "
        f"--tls-server-name {DEVICE_SERVER_NAME}",
    ]
    if op is not None:
        lines.append(f"# ctl:  heliostat ctl --ca-cert {ca} --cert {op.cert.resolve()} "
                     f"--key {op.key.resolve()} --server-name {pki.api.name} status")
    return "\n".join(lines)
