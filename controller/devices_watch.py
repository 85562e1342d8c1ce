"""Re-reading the devices file while devices are unreachable, with backoff.

The daemon read the devices file once: after the emulator (or a device's agent) came back on
new addresses, it never reconnected (issue 16). While some device does not answer, the file
is read again — after 1 s, then 2, 4... up to a minute between reads, back to 1 s once every
device answers — and when what it says changed, the daemon reconnects to the new addresses
(:meth:`controller.drivers.FabricDrivers.replace_devices`). A file that is being rewritten
or is invalid is logged and the devices already known are kept.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from optimizer.errors import ConfigError
from southbound.devices import DeviceConfig, load_devices_file

log = logging.getLogger(__name__)

MIN_BACKOFF_S = 1.0
MAX_BACKOFF_S = 60.0


class DevicesFileWatch:
    """``check(unreachable, now)`` returns the devices when the file changed, else None."""

    def __init__(
        self,
        path: str | Path,
        loaded: Mapping[str, DeviceConfig],
        min_backoff_s: float = MIN_BACKOFF_S,
        max_backoff_s: float = MAX_BACKOFF_S,
    ) -> None:
        self.path = Path(path)
        self._loaded = dict(loaded)
        self._min = min_backoff_s
        self._max = max_backoff_s
        self._backoff = min_backoff_s
        self._next_read: float | None = None
        self.reads = 0

    def check(self, unreachable: frozenset[str] | set[str], now: float) -> dict[str, DeviceConfig] | None:
        if not unreachable:
            self._backoff = self._min
            self._next_read = None
            return None
        if self._next_read is None:
            self._next_read = now + self._backoff  # give a restarting device a moment first
            return None
        if now < self._next_read:
            return None
        self._backoff = min(self._backoff * 2, self._max)
        self._next_read = now + self._backoff
        self.reads += 1
        try:
            devices = load_devices_file(self.path)
        except ConfigError as exc:
            log.warning("devices file not re-read (%s); keeping the devices known", exc)
            return None
        if devices == self._loaded:
            return None
        changed = sorted(n for n in devices if devices.get(n) != self._loaded.get(n))
        log.warning("devices file %s changed (%s): reconnecting", self.path, ", ".join(changed) or "removed")
        self._loaded = devices
        return devices
