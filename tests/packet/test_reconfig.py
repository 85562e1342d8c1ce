"""Packet-level fabric, a topology change made by the controller while a steady UDP stream
runs between every ordered block pair: ``heliostat run`` configures fabric-4, measures a hot
pair (b1 <-> b2) beside the streams, and on the operator's ``toe`` request its executor
stages the change (drain -> verify drained -> switch the OCS -> qualify -> TE + undrain).

Block pairs not touched by any stage lose 0 packets; a touched pair loses no more than the
packets in flight during its OCS switches (with the drain first, that is expected to be 0)."""

from __future__ import annotations

import json
import logging
import math
import subprocess
import time
from collections.abc import Iterator

import pytest

from controller.reconfig.journal import Journal
from tests.support.daemon_support import wait_for
from tests.support.packet_fixtures import (
    TRAFFIC,
    Controlled,
    Streams,
    controlled_fabric,
    ping_failures,
    requires_packet_fabric,
)

pytestmark = [pytest.mark.mininet, requires_packet_fabric]
log = logging.getLogger(__name__)

RATE_PPS = 50.0  # per ordered block pair
HOT_PPS = 600.0  # b1 <-> b2, between their second hosts
DURATION_S = 45.0


@pytest.fixture(scope="module")
def controlled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Controlled]:
    # Packet rates are a few Mbit/s: changes that small must count (the default floor is 1 Gbit/s).
    with controlled_fabric(tmp_path_factory.mktemp("reconfig"), matrix_floor_gbps=1e-6) as c:
        yield c


class HotPair:
    """A heavier stream both ways between the second hosts of b1 and b2."""

    def __init__(self, c: Controlled, duration_s: float) -> None:
        net = c.fabric
        self.hosts = {b: net.hosts_of(b)[1] for b in ("b1", "b2")}
        self.procs: list[subprocess.Popen[str]] = []
        for host in self.hosts.values():
            recv = net.host_popen(host, [*TRAFFIC, "recv", "--duration", str(duration_s + 30)],
                                  stdout=subprocess.PIPE)
            recv.stdout.readline()  # type: ignore[union-attr]
            self.procs.append(recv)
        for block, host in self.hosts.items():
            other = self.hosts["b2" if block == "b1" else "b1"]
            self.procs.append(net.host_popen(
                host, [*TRAFFIC, "stream", "--dst", net.host_ip(other), "--rate", str(HOT_PPS),
                       "--duration", str(duration_s), "--src-port-base", "40000"], stdout=subprocess.PIPE))

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
            proc.communicate(timeout=30)


def touched_pairs(c: Controlled, plan: dict[str, object]) -> set[frozenset[str]]:
    pairs = set()
    for stage in plan["stages"]:  # type: ignore[union-attr]
        for ocs, a, b in (*stage["remove"], *stage["add"]):
            ends = (c.fabric.fabric.wired_port(ocs, a), c.fabric.fabric.wired_port(ocs, b))
            pairs.add(frozenset(e.block for e in ends if e is not None))
    return pairs


def test_a_reconfiguration_by_the_controller_loses_nothing_outside_the_switch(controlled: Controlled) -> None:
    c = controlled
    before = c.circuits()
    streams = Streams(c.fabric, RATE_PPS, duration_s=DURATION_S)
    hot = HotPair(c, DURATION_S)
    try:
        time.sleep(5.0)  # the controller measures the hot pair
        result = c.api.trigger_toe()
        assert result.accepted, result.message
        intent = wait_for(
            lambda: (h := c.api.history(1)) and h[0]["state"] != "in_progress" and h[0],
            DURATION_S - 10,
            interval=0.5,
            what="the reconfiguration to finish",
        )
        loss = streams.loss()
    finally:
        streams.stop()
        hot.stop()
    assert intent["state"] == "done", (intent, c.log_tail())
    plan = c.api.last_plan()
    stages = len(plan["stages"])
    touched = touched_pairs(c, plan)
    assert stages >= 1 and frozenset(("b1", "b2")) in touched
    # packets in flight while an OCS switches (at most once per stage, a generous second each)
    in_flight = math.ceil(RATE_PPS * 1.0) * stages
    log.info("%d stages, touched %s; loss per pair: %s", stages, sorted(map(sorted, touched)), loss)
    assert len(loss) == 12
    for (src, dst), (sent, lost) in loss.items():
        assert sent >= RATE_PPS * (DURATION_S - 5), (src, dst, sent)
        if frozenset((src, dst)) in touched:
            assert lost <= in_flight, (src, dst, sent, lost, in_flight)
        else:
            assert lost == 0, (src, dst, sent, lost)
    # The devices hold what the controller journaled; every host still reaches every other.
    after = c.circuits()
    assert after != before
    journal = Journal(c.journal, check=False)
    try:
        record = journal.current_topology()
        assert record is not None and frozenset(record.circuits) == after
    finally:
        journal.close()
    assert ping_failures(c.fabric) == []
    assert json.loads(json.dumps(plan))["trigger"] == "operator"
