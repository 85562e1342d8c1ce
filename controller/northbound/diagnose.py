"""Why a connection to the controller failed, told from the channel's own error.

gRPC reports every failure to connect as UNAVAILABLE; what went wrong is in the details the
channel gives (the last subchannel error). :func:`connection_failure` reads the phrases gRPC
and BoringSSL use for each cause and names the likely one with what to do: the daemon is
not there, the server's certificate is not signed by ``--ca-cert`` or does not hold the
name checked, the client key does not match its certificate, one side speaks TLS and the
other plaintext, the server refused the client certificate. Anything else, e.g. gRPC's
"tcp handshaker shutdown" when a connection attempt is cut short under load, is a plain
connection failure, not a TLS one.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from southbound.tls import TlsConfig


class FailureCause(StrEnum):
    UNREACHABLE = "unreachable"
    WRONG_CA = "wrong CA"
    WRONG_NAME = "wrong server name"
    KEY_MISMATCH = "key mismatch"
    TLS_TO_PLAINTEXT = "TLS to a plaintext server"
    PLAINTEXT_TO_TLS = "plaintext to a TLS server"
    CLIENT_CERT_REFUSED = "client certificate refused"
    CLIENT_CERT_WANTED = "client certificate wanted"
    INTERRUPTED = "connection cut short"


@dataclass(frozen=True)
class ConnectionFailure:
    cause: FailureCause
    advice: str

    @property
    def is_tls(self) -> bool:
        return self.cause not in (FailureCause.UNREACHABLE, FailureCause.INTERRUPTED)


_UNREACHABLE = ("connection refused", "no route to host", "network is unreachable", "dns resolution failed",
                "name or service not known", "failed to connect to remote host", "connection timed out",
                "could not resolve")
_WRONG_NAME = ("hostname verification check failed", "no match found for server name")
_WRONG_CA = ("certificate_verify_failed", "bad_signature", "certificate signature failure",
             "unable to get local issuer", "self signed certificate", "self-signed certificate")
_EXPIRED = ("certificate has expired", "certificate is not yet valid", "certificate_expired")
_KEY = ("failed to create security handshaker", "invalid private key", "key_values_mismatch")
_TLS_TO_PLAIN = ("wrong_version_number", "http_request", "packet_length_too_long")


def connection_failure(details: str, tls: TlsConfig | None) -> ConnectionFailure:
    """The likely cause of an UNAVAILABLE with these details on a channel with ``tls``."""
    text = details.lower()
    if any(p in text for p in _UNREACHABLE):
        return ConnectionFailure(FailureCause.UNREACHABLE, "is `heliostat run` running, at this address?")
    if tls is not None:
        name = tls.server_name or "the host in --address"
        if any(p in text for p in _WRONG_NAME):
            return ConnectionFailure(
                FailureCause.WRONG_NAME,
                f"the server's certificate does not hold the name {name!r}: pass --server-name with the "
                "name its certificate was made for",
            )
        if any(p in text for p in _EXPIRED):
            return ConnectionFailure(
                FailureCause.WRONG_CA, "the server's certificate has expired or is not yet valid: renew it"
            )
        if any(p in text for p in _WRONG_CA):
            return ConnectionFailure(
                FailureCause.WRONG_CA,
                f"the server's certificate is not signed by --ca-cert {tls.ca_cert} (a CA from another "
                "`heliostat certs` run?): pass the CA that signed the server's certificate",
            )
        if any(p in text for p in _KEY):
            return ConnectionFailure(
                FailureCause.KEY_MISMATCH,
                f"--key {tls.client_key} is not the private key of --cert {tls.client_cert} (or not a "
                "usable key): pass the pair made together",
            )
        if any(p in text for p in _TLS_TO_PLAIN):
            return ConnectionFailure(
                FailureCause.TLS_TO_PLAINTEXT,
                "the server speaks plaintext: drop --ca-cert, or serve the API over TLS",
            )
        if "socket closed" in text or "connection reset" in text:
            if tls.mutual:
                return ConnectionFailure(
                    FailureCause.CLIENT_CERT_REFUSED,
                    "the server closed the connection during the TLS handshake: it did not accept "
                    f"--cert {tls.client_cert} (not signed by the client CA it trusts?)",
                )
            return ConnectionFailure(
                FailureCause.CLIENT_CERT_WANTED,
                "the server closed the connection during the TLS handshake: it wants a client "
                "certificate (--cert/--key) signed by the CA it trusts",
            )
    elif "socket closed" in text or "connection reset" in text:
        return ConnectionFailure(
            FailureCause.PLAINTEXT_TO_TLS,
            "the server closed the connection at once: if it serves TLS, pass --ca-cert (and "
            "--cert/--key for mutual TLS)",
        )
    return ConnectionFailure(
        FailureCause.INTERRUPTED, "the connection did not come up (the daemon may be busy or restarting)"
    )
