"""The daemon's recent past for the status page: bounded, newest first, levels, last seen."""

from __future__ import annotations

import logging

import numpy as np

from controller.device_view import OcsReading, PollResult
from controller.ui.recorder import Recorder, event_level


def _poll(
    ocs: tuple[str, ...] = (), blocks: tuple[str, ...] = (), errors: dict[str, str] | None = None
) -> PollResult:
    readings = {o: OcsReading(o, 1, frozenset(), frozenset(), True) for o in ocs}
    return PollResult(ocs=readings, counters=dict.fromkeys(blocks), errors=errors or {})  # type: ignore[arg-type]


def test_events_are_bounded_and_newest_first() -> None:
    recorder = Recorder(max_events=5)
    for i in range(12):
        recorder.event(100.0 + i, "te", {"mlu": 0.1 * i})
    events = recorder.events(50)
    assert [e["time"] for e in events] == [111.0, 110.0, 109.0, 108.0, 107.0]
    assert [e["seq"] for e in events] == [12, 11, 10, 9, 8]
    assert recorder.events(2) == events[:2]
    assert recorder.events(0) == []


def test_a_repeated_event_is_counted_not_added_again() -> None:
    recorder = Recorder()
    recorder.event(1.0, "te", {"mlu": 0.5})
    for t in range(2, 6):
        recorder.event(float(t), "log", {"message": "poll: b1 unreachable"})
        recorder.event(float(t), "log", {"message": "poll: b2 unreachable"})
    events = recorder.events(50)
    assert [(e["details"].get("message"), e["repeated"]) for e in events] == [
        ("poll: b2 unreachable", 4), ("poll: b1 unreachable", 4), (None, 1)]
    assert events[0]["time"] == 5.0 and events[0]["seq"] > events[1]["seq"] > events[2]["seq"]


def test_event_details_become_plain_json_values() -> None:
    recorder = Recorder()
    recorder.event(1.0, "started", {"unreachable": frozenset({"b2", "b1"}), "mlu": np.float64(0.5),
                                    "bad": float("nan"), "what": object})
    details = recorder.events(1)[0]["details"]
    assert details["unreachable"] == ["b1", "b2"]
    assert details["mlu"] == 0.5 and type(details["mlu"]) is float
    assert details["bad"] is None
    assert isinstance(details["what"], str)


def test_levels_say_what_went_wrong() -> None:
    assert event_level("te", {"mlu": 0.4}) == "info"
    assert event_level("reconfiguration", {"outcome": "rolled_back"}) == "error"
    assert event_level("reconfiguration", {"outcome": "done"}) == "info"
    assert event_level("step", {"event": "failed"}) == "error"
    assert event_level("toe", {"reason": "failed: no traffic"}) == "error"
    assert event_level("devices_moved", {}) == "warning"
    assert event_level("log", {"level": "error"}) == "error"


def test_samples_are_bounded_oldest_first_and_take_the_board() -> None:
    recorder = Recorder(max_samples=3)
    for i in range(5):
        recorder.polled(float(i), _poll(), {"mlu": i / 10, "measured_mlu": None}, 100.0 * i)
    samples = recorder.samples(10)
    assert [s["time"] for s in samples] == [2.0, 3.0, 4.0]
    assert [s["mlu"] for s in samples] == [0.2, 0.3, 0.4]
    assert [s["demand_gbps"] for s in samples] == [200.0, 300.0, 400.0]
    assert recorder.samples(1)[0]["time"] == 4.0


def test_journal_demand_goes_before_the_samples_and_within_the_bound() -> None:
    recorder = Recorder(max_samples=4)
    recorder.polled(50.0, _poll(), {"mlu": 0.3}, 10.0)
    recorder.seed_demand([(10.0, 1.0), (20.0, 2.0), (30.0, 3.0), (40.0, 4.0), (60.0, 6.0)])
    samples = recorder.samples(10)
    assert [s["time"] for s in samples] == [20.0, 30.0, 40.0, 50.0]  # 60 is not older than the poll
    assert samples[0]["mlu"] is None and samples[0]["demand_gbps"] == 2.0


def test_devices_that_answer_are_seen_and_unreachable_ones_keep_their_last_time() -> None:
    recorder = Recorder()
    recorder.polled(10.0, _poll(ocs=("ocs1",), blocks=("b1", "b2")), {}, None)
    recorder.polled(20.0, _poll(ocs=("ocs1",), blocks=("b1",), errors={"b2": "down"}), {}, None)
    assert recorder.last_seen() == {"ocs1": 20.0, "b1": 20.0, "b2": 10.0}


def test_the_log_handler_records_warnings_as_events() -> None:
    recorder = Recorder()
    logger = logging.getLogger("controller.test_recorder")
    handler = recorder.log_handler()
    logger.addHandler(handler)
    try:
        logger.info("not recorded")
        logger.warning("TE failed: %s", "no path")
    finally:
        logger.removeHandler(handler)
    events = recorder.events(10)
    assert len(events) == 1
    assert events[0]["kind"] == "log" and events[0]["level"] == "warning"
    assert events[0]["details"]["message"] == "TE failed: no path"
