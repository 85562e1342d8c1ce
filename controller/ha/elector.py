"""The campaign: a thread that keeps this replica's etcd lease alive and its role current.

The I/O edge of the election (the decisions are :mod:`controller.ha.election`). Keys under
the configured prefix::

    <prefix>/fabric           the fabric's name: a prefix serves one fabric
    <prefix>/replicas/<name>  one per live replica, on its lease: names are unique
    <prefix>/leader           {"name", "northbound"} on the leader's lease; its create
                              revision is the leader's epoch

Each round (every ``lease_ttl / 4``): keep the lease alive (grant a new one if it expired),
then one transaction "create the leader key with my lease if it is absent, else read it".
The elector is also the daemon's :class:`~southbound.fencing.EpochSource`: the drivers put
:meth:`current_epoch` on every mutating device call, and a device's refusal
(:meth:`refused`) makes this replica a standby at once.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable

from controller.ha import etcd_kv as kv
from controller.ha.config import HaConfig
from controller.ha.election import ElectionState, LeaderRecord, Round, acting, fenced, observe
from controller.ha.etcd_journal import Guard
from controller.ha.etcd_kv import EtcdError, EtcdKV, KeyValue, LatencyObserver
from optimizer.errors import HeliostatError

log = logging.getLogger(__name__)

StateListener = Callable[[ElectionState, ElectionState], None]  # before, after


class ReplicaRefused(HeliostatError):
    """This replica may not join: its name is taken, or the prefix serves another fabric."""


class Elector:
    """Campaign for leadership of one fabric. ``start()`` (refusals raise), then ``stop()``."""

    def __init__(
        self,
        config: HaConfig,
        fabric: str,
        *,
        northbound: str | None = None,
        observe_latency: LatencyObserver | None = None,
        on_change: StateListener | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.fabric = fabric
        self.northbound = northbound
        self.on_change = on_change
        self.clock = clock
        self.interval_s = max(0.1, config.lease_ttl / 4)
        self.kv = EtcdKV(
            config.endpoints, tls=config.tls, timeout_s=max(0.3, min(2.0, config.lease_ttl / 4)),
            observe=observe_latency,
        )
        prefix = config.prefix.encode()
        self.fabric_key = prefix + b"/fabric"
        self.replica_key = prefix + b"/replicas/" + config.name.encode()
        self.leader_key = prefix + b"/leader"
        self._lock = threading.Lock()
        self._state = ElectionState()
        self._lease: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the daemon's view ------------------------------------------------------------------

    @property
    def state(self) -> ElectionState:
        with self._lock:
            return self._state

    def acting(self) -> bool:
        """True while this replica leads and its lease is surely alive."""
        return acting(self.state, self.clock(), self.config.lease_ttl)

    def current_epoch(self) -> int:
        """The epoch on our device calls: our latest leadership's (at least 1: a replica never
        sends 0, which the devices do not fence)."""
        return max(1, self.state.own_epoch)

    def refused(self, device: str, highest_epoch: int) -> None:
        before = self.state
        after = fenced(before, highest_epoch)
        if after is not before:
            log.warning("%s refused our epoch %d (it has seen %d): stepping down", device,
                        before.own_epoch, highest_epoch)
            self._set(after)

    def guard(self) -> Guard:
        """What the shared journal's writes are conditioned on: our lease holds the leader key."""
        lease = self._lease
        if lease is None:
            raise ReplicaRefused("ha: no lease: this replica cannot lead")
        return Guard(self.leader_key, lease)

    # -- life cycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Check the prefix's fabric and this replica's name (ReplicaRefused), take a lease,
        run one round, then keep campaigning in a thread."""
        try:
            self._claim_fabric()
            self._lease = self.kv.grant(self.config.lease_ttl)
            self._register(self._lease)
        except EtcdError as exc:
            self.kv.close()
            raise ReplicaRefused(f"ha: cannot join the election on etcd: {exc}") from exc
        except ReplicaRefused:
            self._resign()
            self.kv.close()
            raise
        self.round()
        self._thread = threading.Thread(target=self._campaign, name="ha-elector", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop campaigning and resign (revoke the lease: a standby takes over at once)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._resign()
        self.kv.close()

    def _resign(self) -> None:
        if self._lease is None:
            return
        try:
            self.kv.revoke(self._lease)
        except EtcdError as exc:
            log.info("ha: lease not revoked (it expires within %d s): %s", self.config.lease_ttl, exc)
        self._lease = None

    def _claim_fabric(self) -> None:
        result = self.kv.txn(
            [kv.absent(self.fabric_key)], [kv.put(self.fabric_key, self.fabric.encode())],
            [kv.get(self.fabric_key)],
        )
        if result.succeeded:
            return
        held = _first(result.ranges)
        if held != self.fabric:
            raise ReplicaRefused(
                f"ha.prefix {self.config.prefix} belongs to fabric {held!r}, and this controller's "
                f"fabric is {self.fabric!r}: give each fabric its own prefix"
            )

    def _register(self, lease: int) -> None:
        """Put ``<prefix>/replicas/<name>`` on our lease. Taken by a live lease: wait one TTL
        (a replica of that name that crashed leaves its key until its lease expires), then
        refuse."""
        info = json.dumps({"host": socket.gethostname(), "pid": os.getpid()}).encode()
        deadline = self.clock() + self.config.lease_ttl + 1.0
        while True:
            result = self.kv.txn(
                [kv.absent(self.replica_key)], [kv.put(self.replica_key, info, lease)],
                [kv.get(self.replica_key)],
            )
            if result.succeeded:
                return
            if self.clock() > deadline:
                other = _first(result.ranges) or "?"
                raise ReplicaRefused(
                    f"ha.name {self.config.name!r}: a replica of that name is already running under "
                    f"{self.config.prefix} ({other}); each replica needs its own name"
                )
            time.sleep(0.2)

    # -- rounds -----------------------------------------------------------------------------

    def _campaign(self) -> None:
        """A round every ``lease_ttl / 4``; after a round etcd did not answer (a member lost, an
        etcd election in progress), the next one sooner, so that a leader renews its lease well
        within the window it may act in."""
        wait = self.interval_s
        while not self._stop.wait(wait):
            try:
                reachable = self.round().reason != "etcd unreachable"
            except Exception:  # the campaign must outlive a bug in one round
                log.exception("ha: election round failed unexpectedly")
                reachable = False
            wait = self.interval_s if reachable else self.interval_s / 4

    def round(self) -> ElectionState:
        """One keep-alive and campaign against etcd; returns the new state."""
        sent = self.clock()
        try:
            seen = self._round(sent)
        except EtcdError as exc:
            log.warning("ha: %s", exc)
            seen = Round(reachable=False)
        before = self.state
        after = observe(before, seen, self.config.name, self.config.lease_ttl)
        self._set(after)
        return after

    def _round(self, sent: float) -> Round:
        if self._lease is None:
            self._lease = self.kv.grant(self.config.lease_ttl)
            self.kv.txn([kv.absent(self.replica_key)], [kv.put(self.replica_key, b"{}", self._lease)])
        if self.kv.keepalive(self._lease) <= 0:
            log.warning("ha: our lease %x expired", self._lease)
            self._lease = None
            leader = _record(self.kv.get(self.leader_key))
            return Round(reachable=True, lease=None, leader=leader, sent_at=sent)
        me = json.dumps({"name": self.config.name, "northbound": self.northbound}).encode()
        result = self.kv.txn(
            [kv.absent(self.leader_key)], [kv.put(self.leader_key, me, self._lease)],
            [kv.get(self.leader_key)],
        )
        record: LeaderRecord | None
        if result.succeeded:
            record = LeaderRecord(self.config.name, result.revision, self._lease, self.northbound)
        else:
            record = _record(result.ranges[0][0] if result.ranges and result.ranges[0] else None)
        return Round(reachable=True, lease=self._lease, leader=record, sent_at=sent)

    def _set(self, after: ElectionState) -> None:
        with self._lock:
            before, self._state = self._state, after
        if (before.role, before.leader, before.epoch) != (after.role, after.leader, after.epoch):
            log.info("ha: %s (%s; leader %s, epoch %d)", after.role.value, after.reason, after.leader,
                     after.epoch)
        if self.on_change is not None and before != after:
            try:
                self.on_change(before, after)
            except Exception:  # a listener must not stop the campaign
                log.exception("ha: state listener failed")


def _first(ranges: tuple[tuple[KeyValue, ...], ...]) -> str:
    """The value of the first key the transaction's first range read ("" if none)."""
    return ranges[0][0].value.decode(errors="replace") if ranges and ranges[0] else ""


def _record(item: KeyValue | None) -> LeaderRecord | None:
    if item is None:
        return None
    try:
        data = json.loads(item.value)
        name, northbound = str(data["name"]), data.get("northbound")
    except (ValueError, KeyError, TypeError):
        name, northbound = item.value.decode(errors="replace"), None
    return LeaderRecord(name, item.create_revision, item.lease, northbound)
