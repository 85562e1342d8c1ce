"""One NETCONF session over SSH (ncclient), opened on first use and again after it is lost;
every call has a deadline and retries an unreachable device per the device's CallOptions."""

from __future__ import annotations

import logging
import random
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from ncclient import NCClientError, manager
from ncclient.operations.errors import MissingCapabilityError, TimeoutExpiredError
from ncclient.operations.rpc import RPCError
from ncclient.transport import SSHSession
from ncclient.transport.errors import AuthenticationError, SSHUnknownHostError, TransportError
from ncclient.transport.session import NetconfBase

from optimizer.errors import ConfigError
from southbound.devices import DeviceConfig, Endpoint
from southbound.errors import DeviceError, DeviceUnavailable, ErrorCode, SouthboundError
from southbound.options import CallOptions
from southbound.standard.netconf.encoding import XmlError, parse_xml
from southbound.standard.netconf.rpc_errors import map_rpc_error, parse_rpc_error

log = logging.getLogger(__name__)

T = TypeVar("T")
Manager = Any  # ncclient.manager.Manager (untyped)


def split_address(address: str) -> tuple[str, int]:
    """("host", port) of "host:port" or "[v6]:port"; ValueError names the address."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"address {address!r} is not host:port")
    return host.strip("[]"), int(port)


def netconf_endpoint(device: DeviceConfig) -> Endpoint:
    """The device's netconf endpoint with its login; ConfigError naming the key otherwise."""
    endpoint = device.endpoint("netconf")
    key = f"devices.{device.name}.netconf"
    if endpoint is None:
        raise ConfigError(device.source, key, "the device names no netconf endpoint")
    if not endpoint.username or not (endpoint.password or endpoint.key_file):
        raise ConfigError(device.source, key, "a NETCONF login needs username and password or key_file")
    return endpoint


def map_ncclient_error(exc: Exception, device: str) -> SouthboundError:
    """The SouthboundError of an ncclient (or socket) failure."""
    if isinstance(exc, RPCError):
        raw = exc.xml if getattr(exc, "errors", None) is None else exc.errors[0].xml
        element = raw if not isinstance(raw, str | bytes) else parse_xml(raw)
        return map_rpc_error(parse_rpc_error(element), device)
    if isinstance(exc, AuthenticationError):
        return DeviceError(device, f"NETCONF login refused: {exc}", ErrorCode.DENIED, "authentication")
    if isinstance(exc, SSHUnknownHostError):
        return DeviceError(device, f"the device's SSH host key is not the devices file's host_key "
                           f"(it presented {exc.fingerprint}): refusing to log in", ErrorCode.DENIED,
                           "host-key")
    if isinstance(exc, TimeoutExpiredError):
        return DeviceUnavailable(device, f"no NETCONF reply before the deadline: {exc}",
                                 ErrorCode.DEADLINE, "timeout")
    if isinstance(exc, MissingCapabilityError):
        return DeviceError(device, f"the device lacks a NETCONF capability: {exc}", ErrorCode.UNSUPPORTED,
                           "missing-capability")
    if isinstance(exc, NCClientError) and not isinstance(exc, TransportError):
        return DeviceError(device, f"NETCONF: {type(exc).__name__}: {exc}", ErrorCode.INTERNAL, "ncclient")
    return DeviceUnavailable(device, f"NETCONF session lost: {type(exc).__name__}: {exc}",
                             transport_code="transport")


_TRANSPORT_FAILURES = (TransportError, OSError, socket.timeout, EOFError)


class DirectSendSession(SSHSession):
    """ncclient's SSH session, except that a message is written by the caller's thread at once.
    ncclient queues it for its session thread, which looks at the queue only when its select
    on the channel times out (``ncclient.transport.session.TICK``, 0.1 s): every RPC then
    took about 100 ms. Framing as RFC 6242: end-of-message until the hellos agree on 1.1."""

    def __init__(self, device_handler: Any) -> None:
        super().__init__(device_handler)
        self._send_lock = threading.Lock()

    def send(self, message: str) -> None:
        if not self.connected:
            raise TransportError("Not connected to NETCONF server")
        data = message.encode()
        if self._base == NetconfBase.BASE_11:
            data = b"\n#%d\n%s\n##\n" % (len(data), data)
        else:
            data += b"]]>]]>"
        with self._send_lock:
            self._channel.sendall(data)


class NetconfSession:
    """A lazily (re)connected ncclient manager for one device's netconf endpoint."""

    def __init__(self, name: str, endpoint: Endpoint, options: CallOptions) -> None:
        self.name = name
        self.endpoint = endpoint
        self.options = options
        self._host, self._port = split_address(endpoint.address)
        self._lock = threading.Lock()
        self._manager: Manager | None = None
        self._rng = random.Random()
        self._warned = False

    def connect(self, deadline_s: float | None = None) -> Manager:
        """A new ncclient manager (its own SSH connection); raises ncclient's errors."""
        timeout = deadline_s or self.options.deadline_s
        handler = manager.make_device_handler({"name": "default"})
        session = DirectSendSession(handler)
        pinned = self.endpoint.host_key
        if pinned is None and not self._warned:
            self._warned = True
            log.warning("%s: the NETCONF device's SSH host key is not checked (no host_key in the "
                        "devices file)", self.name)
        try:
            session.connect(
                host=self._host, port=self._port, username=self.endpoint.username,
                password=self.endpoint.password,
                key_filename=str(self.endpoint.key_file) if self.endpoint.key_file else None,
                hostkey_verify=pinned is not None, hostkey_b64=pinned.split()[1] if pinned else None,
                unknown_host_cb=lambda host, fingerprint: False,
                look_for_keys=False, allow_agent=False, timeout=timeout,
            )
        except BaseException:
            if session.transport:
                session.close()
            raise
        return manager.Manager(session, handler, timeout=timeout)

    def _current(self) -> Manager:
        with self._lock:
            if self._manager is not None and not self._manager.connected:
                self._drop_locked()
            if self._manager is None:
                self._manager = self.connect()
            return self._manager

    def _drop_locked(self) -> None:
        old, self._manager = self._manager, None
        if old is not None:
            try:
                old._session.close()
            except Exception:  # closing a broken session must not hide the real error
                log.debug("%s: closing a lost NETCONF session failed", self.name, exc_info=True)

    def call(self, action: Callable[[Manager], T], deadline_s: float | None = None) -> T:
        """``action(manager)`` with the call's deadline; SouthboundError when it finally fails.
        A lost session is dropped and the call retried on a new one (UNAVAILABLE only)."""
        timeout = deadline_s if deadline_s is not None else self.options.deadline_s

        def attempt() -> T:
            m = self._current()
            m.timeout = timeout
            return action(m)

        return self.retrying(attempt, drop=True)

    def retrying(self, attempt: Callable[[], T], drop: bool = False) -> T:
        """``attempt()``, retried while the device is unavailable; ``drop``: the shared
        session is dropped after a transport failure (a new one is opened next time)."""
        policy = self.options.retry
        for number in range(policy.max_attempts):
            try:
                return attempt()
            except (AuthenticationError, SSHUnknownHostError, TimeoutExpiredError,
                    MissingCapabilityError) as exc:
                if drop and isinstance(exc, TimeoutExpiredError):
                    with self._lock:
                        self._drop_locked()
                raise map_ncclient_error(exc, self.name) from exc
            except (RPCError, *_TRANSPORT_FAILURES) as exc:
                if drop and not isinstance(exc, RPCError):
                    with self._lock:
                        self._drop_locked()
                error = map_ncclient_error(exc, self.name)
                if error.code is not ErrorCode.UNAVAILABLE or number + 1 == policy.max_attempts:
                    raise error from exc
                pause = policy.backoff_s(number, self._rng)
                log.info("%s: NETCONF unavailable (attempt %d/%d), retrying in %.3fs",
                         self.name, number + 1, policy.max_attempts, pause)
                time.sleep(pause)
            except NCClientError as exc:  # ncclient's other complaints (a reply it cannot read...)
                raise map_ncclient_error(exc, self.name) from exc
            except XmlError as exc:  # a reply not in the module's shape
                raise DeviceError(self.name, f"unreadable NETCONF reply: {exc}", ErrorCode.INTERNAL,
                                  "bad-reply") from exc
        raise SouthboundError(self.name, "no attempt made")  # unreachable: max_attempts >= 1

    def close(self) -> None:
        with self._lock:
            m, self._manager = self._manager, None
        if m is not None:
            try:
                if m.connected:
                    m.close_session()
            except Exception:
                log.debug("%s: close-session failed", self.name, exc_info=True)
            finally:
                m._session.close()
