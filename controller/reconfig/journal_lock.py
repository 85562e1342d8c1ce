"""One controller per journal: an exclusive lock on a file beside the SQLite journal.

Two ``heliostat run`` on one journal both acted (issue 16): each restored circuits the other's
stage had removed, both intents rolled back, and the devices and the journal disagreed. The
daemon therefore takes ``<journal>.lock`` (``flock``, exclusive, non-blocking) before it
opens the journal, and writes who holds it (pid, host, since) into the file so that the
second daemon's refusal names the holder. The kernel drops the lock when the holder's
process ends in any way (a SIGKILL included), so a crash never leaves a stale lock behind;
the file itself stays (removing it would race with the next holder).

``flock`` is local to one machine: on a network file system two hosts may both get it. The
journal belongs on a local disk; several replicas need the etcd lease of the HA design.
Readers (``Journal`` in tests, tools) do not take the lock: WAL mode lets them read.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path

from controller.reconfig.journal import JournalError

LOCK_SUFFIX = ".lock"
_MAX_HOLDER_BYTES = 4096


class JournalLocked(JournalError):
    """Another controller holds the journal."""


def lock_path(journal: str | Path) -> Path:
    journal = Path(journal)
    return journal.with_name(journal.name + LOCK_SUFFIX)


class JournalLock:
    """Held from :meth:`acquire` to :meth:`release` (or the end of the process)."""

    def __init__(self, journal: str | Path) -> None:
        self.journal = Path(journal)
        self.path = lock_path(journal)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock or raise :class:`JournalLocked` naming the journal and its holder."""
        if self._fd is not None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            problem = f"cannot open its lock {self.path}: {exc.strerror or exc}"
            raise JournalError(self.journal, problem) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise JournalLocked(
                self.journal,
                f"in use by another controller ({holder}); only one `heliostat run` may use a journal "
                f"(lock {self.path})",
            ) from None
        except OSError as exc:
            os.close(fd)
            raise JournalError(self.journal, f"cannot lock {self.path}: {exc.strerror or exc}") from exc
        self._fd = fd
        self._write_holder(fd)

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> JournalLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    @staticmethod
    def _write_holder(fd: int) -> None:
        """Best effort: a full disk must not stop a daemon that holds the lock."""
        holder = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(holder).encode(), 0)
        except OSError:
            pass


def _read_holder(fd: int) -> str:
    try:
        raw = os.pread(fd, _MAX_HOLDER_BYTES, 0)
        data = json.loads(raw.decode("utf-8"))
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(data["since"])))
        return f"pid {int(data['pid'])} on host {str(data['host'])[:255]} since {since}"
    except (OSError, ValueError, KeyError, TypeError, OverflowError):
        return "holder not recorded"
