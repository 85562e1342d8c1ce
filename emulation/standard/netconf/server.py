"""The NETCONF server over SSH (paramiko): subsystem ``netconf`` on a loopback port, password
or public-key login, one thread per session. The datastore (device, fence, request results)
outlives the listener: :meth:`NetconfServer.stop` then :meth:`NetconfServer.start` restarts on
the same port with the device's state intact (fail static)."""

from __future__ import annotations

import contextlib
import hmac
import itertools
import logging
import socket
import threading

import paramiko
from paramiko.common import (
    AUTH_FAILED,
    AUTH_SUCCESSFUL,
    OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED,
    OPEN_SUCCEEDED,
)

from emulation.admission.fencing import EpochFence
from emulation.ocs_device import ServedOcs
from emulation.standard.netconf.service import OcsDatastore
from emulation.standard.netconf.session import Session

log = logging.getLogger(__name__)

_NEGOTIATION_S = 10.0
#: SSH connections served at once (each holds a thread); more are closed at once
MAX_CONNECTIONS = 32


class _SshLogin(paramiko.ServerInterface):
    """One connection's SSH side: the login, then one session channel with subsystem netconf."""

    def __init__(self, server: NetconfServer) -> None:
        self.server = server
        self.netconf_requested = threading.Event()

    def get_allowed_auths(self, username: str) -> str:
        return "password,publickey" if self.server.authorized_key is not None else "password"

    def check_auth_password(self, username: str, password: str) -> int:
        good = hmac.compare_digest(username.encode(), self.server.username.encode()) & \
            hmac.compare_digest(password.encode(), self.server.password.encode())
        return AUTH_SUCCESSFUL if good else AUTH_FAILED

    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        wanted = self.server.authorized_key
        good = wanted is not None and username == self.server.username and \
            key.get_name() == wanted.get_name() and key.get_base64() == wanted.get_base64()
        return AUTH_SUCCESSFUL if good else AUTH_FAILED

    def check_channel_request(self, kind: str, chanid: int) -> int:
        if kind == "session":
            return OPEN_SUCCEEDED
        return OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_subsystem_request(self, channel: paramiko.Channel, name: str) -> bool:
        if name != "netconf":
            return False
        self.netconf_requested.set()
        return True


class NetconfServer:
    """A NETCONF server in front of ``device`` (see :func:`start_netconf_server`)."""

    def __init__(self, device: ServedOcs, *, host: str = "127.0.0.1", port: int = 0,
                 username: str, password: str, authorized_key: paramiko.PKey | None = None,
                 host_key: paramiko.PKey | None = None,
                 fence: EpochFence | None = None) -> None:
        self.device = device
        self.datastore = OcsDatastore(device, fence)
        self.host, self.port = host, port
        self.username, self.password = username, password
        self.authorized_key = authorized_key
        # the device's identity: the same after a restart (given, or one per server)
        self.host_key = host_key or paramiko.ECDSAKey.generate()
        self.serving = True
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._sessions: dict[int, tuple[Session, paramiko.Transport]] = {}
        self._transports: set[paramiko.Transport] = set()
        self._ids = itertools.count(1)
        self._running_lock_holder: int | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def device_name(self) -> str:
        return self.device.name

    @property
    def device_radix(self) -> int:
        return self.device.radix

    def start(self) -> str:
        """Listen (again) on the port; returns the address."""
        with self._lock:
            if self._listener is not None:
                return self.address
            listener = socket.create_server((self.host, self.port), reuse_port=False)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.port = listener.getsockname()[1]
            self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True,
                         name=f"netconf-{self.device.name}").start()
        log.info("%s: NETCONF over SSH on %s", self.device.name, self.address)
        return self.address

    def stop(self) -> None:
        """Close the listener and every session; the datastore stays."""
        with self._lock:
            listener, self._listener = self._listener, None
            transports = list(self._transports)
            self._running_lock_holder = None
        if listener is not None:
            with contextlib.suppress(OSError):  # shutdown wakes the accepting thread; close does not
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for transport in transports:
            transport.close()

    def set_serving(self, serving: bool) -> None:
        """While not serving, every operation but close-session gets rpc-error resource-denied
        (app-tag not-serving), which the driver reads as an unavailable device."""
        self.serving = serving

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return  # the listener was closed
            threading.Thread(target=self._serve, args=(connection,), daemon=True,
                             name=f"netconf-ssh-{self.device.name}").start()

    def _serve(self, connection: socket.socket) -> None:
        transport = paramiko.Transport(connection)
        with self._lock:
            if self._listener is None or len(self._transports) >= MAX_CONNECTIONS:
                log.warning("%s: refusing an SSH connection (stopped or %d open)", self.device.name,
                            len(self._transports))
                transport.close()
                connection.close()
                return
            self._transports.add(transport)
        session_id = None
        try:
            transport.add_server_key(self.host_key)
            login = _SshLogin(self)
            transport.start_server(server=login)
            channel = transport.accept(_NEGOTIATION_S)
            if channel is None or not login.netconf_requested.wait(_NEGOTIATION_S):
                log.info("%s: SSH client opened no netconf subsystem", self.device.name)
                return
            session_id = next(self._ids)
            session = Session(self, channel, session_id)
            with self._lock:
                self._sessions[session_id] = (session, transport)
            session.run()
        except (paramiko.SSHException, OSError, EOFError) as exc:
            log.info("%s: SSH connection ends: %s", self.device.name, exc)
        finally:
            with self._lock:
                self._transports.discard(transport)
                if session_id is not None:
                    self._sessions.pop(session_id, None)
                    if self._running_lock_holder == session_id:
                        self._running_lock_holder = None
            transport.close()

    # -- what sessions ask of each other ------------------------------------------------------
    def lock_holder(self) -> int | None:
        with self._lock:
            return self._running_lock_holder

    def take_lock(self, session_id: int) -> int:
        """Lock running for ``session_id`` if free; returns the holder."""
        with self._lock:
            if self._running_lock_holder is None:
                self._running_lock_holder = session_id
            return self._running_lock_holder

    def release_lock(self, session_id: int) -> bool:
        with self._lock:
            if self._running_lock_holder != session_id:
                return False
            self._running_lock_holder = None
            return True

    def kill(self, session_id: int) -> bool:
        """End another session (kill-session); False when there is none."""
        with self._lock:
            entry = self._sessions.get(session_id)
            if entry is not None and self._running_lock_holder == session_id:
                self._running_lock_holder = None  # released before the <ok/> (RFC 6241 7.9)
        if entry is None:
            return False
        session, transport = entry
        session.close()
        transport.close()
        return True


def start_netconf_server(device: ServedOcs, *, host: str = "127.0.0.1", port: int = 0,
                         username: str, password: str,
                         authorized_key: paramiko.PKey | None = None,
                         fence: EpochFence | None = None) -> NetconfServer:
    """A started NETCONF server in front of ``device``: ``.address``, ``.username``,
    ``.password``, ``.stop()``, ``.start()`` (same port, state kept), ``.set_serving(bool)``.
    ``authorized_key``: a public key that may log in as ``username`` besides the password.
    ``fence``: the device's EpochFence when another protocol serves it too (one highest epoch
    per device, whichever protocol saw it); a new one otherwise."""
    server = NetconfServer(device, host=host, port=port, username=username, password=password,
                           authorized_key=authorized_key, fence=fence)
    server.start()
    return server
