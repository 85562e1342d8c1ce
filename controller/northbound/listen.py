"""Where a server listens (``host:port``, ``[v6-host]:port``) and the default addresses.

Apart from :mod:`controller.config` so that ``heliostat ctl`` can parse ``--address`` and
know the default without importing what the whole config needs (the TE policy, numpy, scipy).
"""

from __future__ import annotations

from dataclasses import dataclass

from optimizer.errors import ConfigError


@dataclass(frozen=True)
class ListenAddress:
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


#: ``listen.northbound`` and ``listen.metrics`` when the config does not set them.
DEFAULT_NORTHBOUND = ListenAddress("127.0.0.1", 50051)
DEFAULT_METRICS = ListenAddress("127.0.0.1", 9108)


def parse_listen_address(text: str, source: str = "<listen>", key: str = "address") -> ListenAddress:
    """``host:port`` or ``[v6-host]:port``; port 0 asks the system for a free one."""
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise ConfigError(source, key, f"expected [host]:port, got {text!r}")
        port_text = rest[1:]
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep or ":" in host:
            raise ConfigError(source, key, f"expected host:port (IPv6 as [host]:port), got {text!r}")
    if not host:
        raise ConfigError(source, key, f"the host is empty in {text!r}")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ConfigError(source, key, f"the port must be a number from 0 to 65535, got {port_text!r}")
    return ListenAddress(host, int(port_text))
