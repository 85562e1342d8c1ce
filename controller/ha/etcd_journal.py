"""The shared journal of HA replicas: the SQLite journal's interface, kept in etcd.

Same records, same rules, same errors as :class:`controller.reconfig.journal.Journal` (the
one test suite runs against both: tests/controller/reconfig/test_journal.py), so the executor and
the daemon use either without knowing which. Keys under ``<prefix>/journal/``::

    intents/<id>        an IntentRecord (JSON)       steps/<id>      a StepRecord
    generations/<dev>   a DeviceGeneration           topology        the topology and circuits
    matrices/<time>     one measured matrix          state/<key>     a named value

**Fenced writes.** Every write (one :meth:`transaction`, or one call outside any) is one etcd
transaction whose condition is the writer's *guard*: the leader key is still held by the
lease it had when it took over. A leader that lost its lease (paused, partitioned) can
therefore write nothing to the journal either; the refusal is a :class:`JournalError`.

**Reads come from memory.** The journal is loaded once when it is opened (a new leader
reads the whole journal, as a restarted daemon opens its SQLite file) and then kept in step
with each write that etcd accepted: while the guard holds, nobody else writes. A reader
without a guard (a test, a tool) calls :meth:`reload` to see new writes.

**Bounded.** The matrix history is pruned by its retention window (as in SQLite), and only
the newest :data:`MAX_INTENTS` finished intents (with their steps) are kept.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from controller.ha import etcd_kv as kv
from controller.ha.etcd_kv import EtcdError, EtcdKV, KeyValue
from controller.reconfig.journal import (
    _STEP_TRANSITIONS,
    DeviceGeneration,
    IntentRecord,
    IntentState,
    JournalBase,
    JournalError,
    StepName,
    StepRecord,
    StepState,
    TopologyRecord,
)
from controller.reconfig.stage_plan import Plan, PlanError
from optimizer.topology import Circuit, Topology
from optimizer.traffic import TrafficMatrix

log = logging.getLogger(__name__)

Clock = Callable[[], float]
MAX_INTENTS = 500  # finished intents kept (with their steps); older ones are deleted
_MAX_TXN_OPS = 120  # etcd refuses more than 128 operations in one transaction


@dataclass(frozen=True)
class Guard:
    """The writer's right to write: ``leader_key`` held by ``lease`` (see controller/ha/elector.py)."""

    leader_key: bytes
    lease: int


class EtcdJournal(JournalBase):
    """A journal in etcd. Thread-safe; use as a context manager or call :meth:`close`."""

    def __init__(
        self, client: EtcdKV, prefix: str, guard: Guard | None = None, clock: Clock = time.time
    ) -> None:
        self.client = client
        self.path = f"etcd:{prefix}/journal"  # what JournalError names
        self._root = f"{prefix}/journal/".encode()
        self._guard = guard
        self._clock = clock
        self._lock = threading.RLock()
        self._depth = 0
        self._ops: list[dict[str, Any]] = []
        self._saved: tuple[Any, ...] | None = None
        self.reload()

    # -- loading ---------------------------------------------------------------------------

    def reload(self) -> None:
        """Read the whole journal from etcd (a new leader does this once, at take-over)."""
        try:
            items = self.client.get_prefix(self._root)
        except EtcdError as exc:
            raise JournalError(self.path, f"cannot be read: {exc}") from exc
        with self._lock:
            self._intents: dict[int, IntentRecord] = {}
            self._steps: dict[int, StepRecord] = {}
            self._generations: dict[str, DeviceGeneration] = {}
            self._topology: TopologyRecord | None = None
            self._matrices: dict[float, TrafficMatrix] = {}
            self._state: dict[str, Any] = {}
            for item in items:
                self._load(item)

    def _load(self, item: KeyValue) -> None:
        kind, _, name = item.key[len(self._root):].decode().partition("/")
        try:
            data = json.loads(item.value)
            if kind == "intents":
                plan = Plan.from_json(data["plan"], f"intent {int(name)}'s plan")
                state = IntentState(data["state"])
                self._intents[int(name)] = IntentRecord(**{**data, "state": state, "plan": plan})
            elif kind == "steps":
                self._steps[int(name)] = StepRecord(**{**data, "state": StepState(data["state"])})
            elif kind == "generations":
                self._generations[name] = DeviceGeneration(**data)
            elif kind == "topology":
                self._topology = _topology_record(data)
            elif kind == "matrices":
                self._matrices[float(data["timestamp"])] = _matrix(data["matrix"])
            elif kind == "state":
                self._state[name] = data
        except (ValueError, KeyError, TypeError, PlanError) as exc:
            key = item.key.decode(errors="replace")
            raise JournalError(self.path, f"{key} is unreadable: {exc}") from exc

    def close(self) -> None:
        """Nothing to release: the etcd client belongs to the elector."""

    def __enter__(self) -> EtcdJournal:
        return self

    # -- transactions ----------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One fenced etcd transaction for every write inside; nested calls join the outermost.
        On an error nothing is written and memory is as before."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self._depth = 1
            self._ops = []
            self._saved = self._snapshot()
            try:
                yield
                self._commit(self._ops)
            except BaseException:
                self._restore(self._saved)
                raise
            finally:
                self._depth = 0
                self._ops = []
                self._saved = None

    def _snapshot(self) -> tuple[Any, ...]:
        return (dict(self._intents), dict(self._steps), dict(self._generations), self._topology,
                dict(self._matrices), dict(self._state))

    def _restore(self, saved: tuple[Any, ...] | None) -> None:
        if saved is not None:
            (self._intents, self._steps, self._generations, self._topology, self._matrices,
             self._state) = saved

    def _commit(self, ops: list[dict[str, Any]]) -> None:
        if not ops:
            return
        if len(ops) > _MAX_TXN_OPS:
            raise JournalError(self.path, f"one transaction of {len(ops)} writes is more than etcd takes")
        compare = [] if self._guard is None else [kv.held_by(self._guard.leader_key, self._guard.lease)]
        try:
            result = self.client.txn(compare, ops)
        except EtcdError as exc:
            raise JournalError(self.path, f"write failed: {exc}") from exc
        if not result.succeeded:
            raise JournalError(
                self.path, "write refused: this replica no longer leads (its lease does not hold the "
                "leader key); nothing was written"
            )

    def _put(self, kind: str, name: str, value: Any) -> None:
        self._ops.append(kv.put(self._key(kind, name), self._json(value, f"{kind} {name}").encode()))

    def _delete(self, kind: str, name: str) -> None:
        self._ops.append(kv.delete(self._key(kind, name)))

    def _key(self, kind: str, name: str) -> bytes:
        return self._root + f"{kind}/{name}".encode() if name else self._root + kind.encode()

    # -- intents ---------------------------------------------------------------------------

    def begin_intent(self, plan: Plan, trigger: str = "auto") -> IntentRecord:
        """Journal a new reconfiguration; fails if another one is in progress."""
        self._json(plan.to_json(), "the plan")
        now = self._clock()
        with self.transaction():
            busy = self.in_flight_intent()
            if busy is not None:
                raise JournalError(self.path, f"intent {busy.id} is still in progress")
            intent_id = max(self._intents, default=0) + 1
            record = IntentRecord(intent_id, now, now, None, IntentState.IN_PROGRESS, trigger, None, plan)
            self._save_intent(record)
        return record

    def _save_intent(self, record: IntentRecord) -> None:
        self._intents[record.id] = record
        data = {f.name: getattr(record, f.name) for f in fields(record)}
        data |= {"state": record.state.value, "plan": record.plan.to_json()}
        self._put("intents", f"{record.id:012d}", data)

    def finish_intent(self, intent_id: int, state: IntentState, reason: str | None = None) -> IntentRecord:
        """Close an in-progress intent as done, rolled back, failed or cancelled."""
        state = IntentState(state)
        if state is IntentState.IN_PROGRESS:
            raise JournalError(self.path, "an intent is finished with a final state, not in_progress")
        now = self._clock()
        with self.transaction():
            current = self.intent(intent_id)
            if current.state is not IntentState.IN_PROGRESS:
                raise JournalError(self.path, f"intent {intent_id} is already {current.state.value}")
            record = IntentRecord(intent_id, current.created, now, now, state, current.trigger, reason,
                                  current.plan)
            self._save_intent(record)
            self._forget_old_intents()
        return record

    def _forget_old_intents(self) -> None:
        finished = sorted(i for i, r in self._intents.items() if not r.in_progress)
        for old in finished[: max(0, len(self._intents) - MAX_INTENTS)][:10]:
            del self._intents[old]
            self._delete("intents", f"{old:012d}")
            for step_id in [s.id for s in self._steps.values() if s.intent_id == old]:
                del self._steps[step_id]
                self._delete("steps", f"{step_id:012d}")

    def intent(self, intent_id: int) -> IntentRecord:
        with self._lock:
            record = self._intents.get(intent_id)
        if record is None:
            raise JournalError(self.path, f"no intent {intent_id}")
        return record

    def in_flight_intent(self) -> IntentRecord | None:
        with self._lock:
            return next((r for r in self._intents.values() if r.in_progress), None)

    def reconfigurations(self, limit: int = 50, offset: int = 0) -> list[IntentRecord]:
        """The history of reconfigurations, newest first."""
        with self._lock:
            ids = sorted(self._intents, reverse=True)[offset : offset + limit]
            return [self._intents[i] for i in ids]

    # -- steps -----------------------------------------------------------------------------

    def begin_step(self, intent_id: int, stage: int, name: StepName | str, payload: Any = None) -> StepRecord:
        """Journal a step *before* taking it (state ``intent``)."""
        name = str(name)
        if not name:
            raise JournalError(self.path, "a step needs a name")
        if stage < 0:
            raise JournalError(self.path, f"stage index must be >= 0, got {stage}")
        payload = json.loads(self._json(payload, "the step payload"))
        now = self._clock()
        with self.transaction():
            intent = self.intent(intent_id)
            if not intent.in_progress:
                raise JournalError(self.path, f"intent {intent_id} is {intent.state.value}; no more steps")
            open_step = next((s for s in self.steps(intent_id) if s.state is StepState.INTENT), None)
            if open_step is not None:
                raise JournalError(
                    self.path, f"step {open_step.id} ({open_step.name}) of intent {intent_id} is not finished"
                )
            step_id = max(self._steps, default=0) + 1
            record = StepRecord(
                step_id, intent_id, stage, name, StepState.INTENT, payload, None, None, now, None
            )
            self._save_step(record)
            self._touch(intent, now)
        return record

    def _save_step(self, record: StepRecord) -> None:
        self._steps[record.id] = record
        self._put("steps", f"{record.id:012d}", {**asdict(record), "state": record.state.value})

    def _touch(self, intent: IntentRecord, now: float) -> None:
        self._save_intent(IntentRecord(intent.id, intent.created, now, intent.finished, intent.state,
                                       intent.trigger, intent.reason, intent.plan))

    def _finish_step(
        self, step_id: int, state: StepState, result: Any = None, error: str | None = None
    ) -> StepRecord:
        result = None if result is None else json.loads(self._json(result, "the step result"))
        now = self._clock()
        with self.transaction():
            current = self.step(step_id)
            if state not in _STEP_TRANSITIONS[current.state]:
                raise JournalError(
                    self.path, f"step {step_id} is {current.state.value}; cannot become {state.value}"
                )
            record = StepRecord(
                step_id, current.intent_id, current.stage, current.name, state, current.payload,
                current.result if result is None else result, current.error if error is None else error,
                current.started, now,
            )
            self._save_step(record)
            self._touch(self.intent(current.intent_id), now)
        return record

    def step(self, step_id: int) -> StepRecord:
        with self._lock:
            record = self._steps.get(step_id)
        if record is None:
            raise JournalError(self.path, f"no step {step_id}")
        return record

    def steps(self, intent_id: int) -> list[StepRecord]:
        """Every step of an intent, in the order they were journaled."""
        with self._lock:
            return [self._steps[i] for i in sorted(self._steps) if self._steps[i].intent_id == intent_id]

    def last_step(self, intent_id: int) -> StepRecord | None:
        steps = self.steps(intent_id)
        return steps[-1] if steps else None

    # -- device generations ----------------------------------------------------------------

    def record_generation(
        self, device: str, generation: int, request_id: str | None = None, force: bool = False
    ) -> DeviceGeneration:
        """Remember the generation last applied to ``device`` (lower only with ``force``)."""
        if generation < 0:
            raise JournalError(self.path, f"generation of {device} must be >= 0, got {generation}")
        now = self._clock()
        with self.transaction():
            known = self._generations.get(device)
            if known is not None and generation < known.generation and not force:
                raise JournalError(
                    self.path, f"generation {generation} of {device} is older than the journaled "
                    f"{known.generation}"
                )
            record = DeviceGeneration(device, generation, request_id, now)
            self._generations[device] = record
            self._put("generations", device, asdict(record))
        return record

    def generation(self, device: str) -> DeviceGeneration | None:
        with self._lock:
            return self._generations.get(device)

    def generations(self) -> dict[str, DeviceGeneration]:
        with self._lock:
            return {d: self._generations[d] for d in sorted(self._generations)}

    # -- topology --------------------------------------------------------------------------

    def save_topology(
        self, topology: Topology, circuits: Iterable[Circuit], intent_id: int | None = None
    ) -> None:
        """Replace the current topology and circuits."""
        data = {
            "blocks": list(topology.blocks),
            "counts": topology.counts.tolist(),
            "circuits": [[c.ocs, c.a, c.b] for c in sorted(circuits)],
            "updated": self._clock(),
            "intent_id": intent_id,
        }
        with self.transaction():
            self._topology = _topology_record(json.loads(self._json(data, "the topology")))
            self._put("topology", "", data)

    def current_topology(self) -> TopologyRecord | None:
        with self._lock:
            return self._topology

    # -- matrix history --------------------------------------------------------------------

    def append_matrix(self, timestamp: float, matrix: TrafficMatrix, retention_s: float | None = None) -> int:
        """Store the matrix measured at ``timestamp``; with ``retention_s``, prune older ones."""
        data = {"timestamp": timestamp, "matrix": _matrix_json(matrix)}
        with self.transaction():
            self._matrices[float(timestamp)] = matrix
            self._put("matrices", _time_key(timestamp), data)
            return 0 if retention_s is None else self.prune_matrices(timestamp - retention_s)

    def prune_matrices(self, before: float) -> int:
        with self.transaction():
            old = [t for t in self._matrices if t < before]
            for t in old:
                del self._matrices[t]
            if old:  # one range delete: the keys sort by time
                end = self._key("matrices", _time_key(before))
                self._ops.append(kv.delete_range(self._root + b"matrices/", end))
            return len(old)

    def matrix_history(self, since: float | None = None) -> list[tuple[float, TrafficMatrix]]:
        """Stored matrices at or after ``since`` (all if None), oldest first."""
        with self._lock:
            return [(t, self._matrices[t]) for t in sorted(self._matrices) if since is None or t >= since]

    # -- small named state -----------------------------------------------------------------

    def put_state(self, key: str, value: Any) -> None:
        """Store a JSON-serialisable value under ``key`` (replacing any previous one)."""
        text = self._json(value, f"state {key!r}")
        with self.transaction():
            self._state[key] = json.loads(text)
            self._put("state", key, self._state[key])

    def get_state(self, key: str, default: Any = None) -> Any:
        with self._lock:
            return json.loads(json.dumps(self._state[key])) if key in self._state else default

    def put_matrix_state(self, key: str, matrix: TrafficMatrix | None) -> None:
        """Store a matrix (e.g. the published prediction) under ``key``; None deletes it."""
        if matrix is None:
            with self.transaction():
                self._state.pop(key, None)
                self._delete("state", key)
            return
        self.put_state(key, _matrix_json(matrix))

    def get_matrix_state(self, key: str) -> TrafficMatrix | None:
        data = self.get_state(key)
        if data is None:
            return None
        try:
            return _matrix(data)
        except (ValueError, KeyError, TypeError) as exc:
            raise JournalError(self.path, f"a stored matrix is unreadable: {exc}") from exc


def _time_key(timestamp: float) -> str:
    """Matrix keys sort by time (etcd orders keys as bytes)."""
    return f"{timestamp:020.6f}"


def _matrix_json(matrix: TrafficMatrix) -> dict[str, Any]:
    return {"blocks": list(matrix.blocks), "gbps": matrix.gbps.tolist()}


def _matrix(data: dict[str, Any]) -> TrafficMatrix:
    return TrafficMatrix(tuple(data["blocks"]), np.array(data["gbps"], dtype=np.float64))


def _topology_record(data: dict[str, Any]) -> TopologyRecord:
    topology = Topology(tuple(data["blocks"]), np.array(data["counts"], dtype=np.int64))
    circuits = tuple(Circuit(str(o), int(a), int(b)) for o, a, b in data["circuits"])
    return TopologyRecord(topology, circuits, float(data["updated"]), data["intent_id"])
