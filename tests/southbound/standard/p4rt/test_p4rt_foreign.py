"""A foreign P4Runtime client (finsy 0.30.0, in its own environment) against the emulated
switch: it arbitrates, reads the P4Info from the switch, writes a WCMP group as the primary
and reads it back; our driver reads the same group, and the switch model forwards by it."""

from __future__ import annotations

import pytest

from emulation.standard.p4rt import start_p4runtime
from southbound.errors import Fenced
from southbound.standard.p4rt.driver import P4GroupWriter
from tests.support.foreign import run_foreign
from tests.support.p4rt_support import PREFIXES, block_switch, p4_device


class _Epoch:
    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def current_epoch(self) -> int:
        return self.epoch

    def refused(self, device: str, highest_epoch: int) -> None:
        return None


@pytest.mark.slow
def test_finsy_writes_a_wcmp_group_that_our_driver_reads() -> None:
    device, _ = block_switch()
    agent = start_p4runtime(device, prefixes=PREFIXES)
    try:
        seen = run_foreign("finsy_groups.py", agent.address, "10", PREFIXES["b"], timeout_s=120.0)
        assert seen["primary"] is True
        assert seen["members"] == [["src-b", "nh-b", 3], ["src-b", "nh-c", 1]]
        assert seen["routes"] == [["heliostat-source", PREFIXES["b"], "src-b"]]
        with P4GroupWriter(p4_device(agent.address)) as driver:
            groups = driver.groups()
            assert (groups.generation, groups.source, groups.transit) == (1, {"b": {"b": 3, "c": 1}}, {})
            assert device.groups()[1] == {"b": {"b": 3, "c": 1}}  # the model forwards by finsy's group
            # finsy's election id 10 is the highest the switch has seen: epoch 0 (id 1) is fenced
            with pytest.raises(Fenced):
                driver.set_groups(expected_generation=1, source={"c": {"c": 1}})
            driver.epoch = _Epoch(11)
            driver.set_groups(expected_generation=1, source={"c": {"c": 1}})
        assert device.groups()[1] == {"c": {"c": 1}}
    finally:
        agent.stop()
