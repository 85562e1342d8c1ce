"""The controller's journal: an SQLite file (WAL mode) that survives a crash of the daemon.

It holds:

- reconfiguration **intents** (the plan, its state) and their **steps**: a step is written
  in state ``intent`` *before* it is taken and marked ``done`` (or ``failed``) after, so
  a restarted daemon finds, with :meth:`Journal.recovery_point`, the in-flight intent, the
  last step journaled and whether it completed, and resumes or rolls back;
- the last **generation** (and request id) applied to each device;
- the current **topology** and circuits;
- the **matrix history** that prediction needs, pruned beyond a retention window;
- small named **state** values (the published prediction, the last plan, pause flags...).

The intents double as the history of reconfigurations for the northbound API.

Every write is one transaction (``BEGIN IMMEDIATE``); :meth:`Journal.transaction` groups
several writes into one. WAL mode lets other connections and processes read meanwhile.
All SQLite failures become :class:`JournalError`, whose message names the file.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np

from controller.reconfig.journal_schema import LATEST_VERSION, MIGRATIONS
from controller.reconfig.stage_plan import Plan
from optimizer.errors import HeliostatError
from optimizer.topology import Circuit, Topology
from optimizer.traffic import TrafficMatrix

log = logging.getLogger(__name__)

Clock = Callable[[], float]


class JournalError(HeliostatError):
    """The journal cannot be opened, read or written, or a request breaks its rules."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"journal {self.path}: {problem}")


class IntentState(StrEnum):
    IN_PROGRESS = "in_progress"
    DONE = "done"  # every stage applied
    ROLLED_BACK = "rolled_back"  # stopped; the failing stage was rolled back to its start
    FAILED = "failed"  # stopped and not cleanly rolled back: the operator must look
    CANCELLED = "cancelled"  # stopped before any stage (operator, or superseded)


class StepState(StrEnum):
    INTENT = "intent"  # journaled, being taken (or interrupted)
    DONE = "done"
    FAILED = "failed"
    ROLLED_BACK = "rolled_back"


class StepName(StrEnum):
    """The executor's steps of one stage, in order."""

    DRAIN = "drain"
    VERIFY_DRAIN = "verify_drain"
    APPLY_OCS = "apply_ocs"
    QUALIFY = "qualify"
    UNDRAIN = "undrain"


_STEP_TRANSITIONS: dict[StepState, frozenset[StepState]] = {
    StepState.INTENT: frozenset({StepState.DONE, StepState.FAILED, StepState.ROLLED_BACK}),
    StepState.DONE: frozenset({StepState.ROLLED_BACK}),
    StepState.FAILED: frozenset({StepState.ROLLED_BACK}),
    StepState.ROLLED_BACK: frozenset(),
}


@dataclass(frozen=True)
class IntentRecord:
    id: int
    created: float
    updated: float
    finished: float | None
    state: IntentState
    trigger: str
    reason: str | None
    plan: Plan

    @property
    def in_progress(self) -> bool:
        return self.state is IntentState.IN_PROGRESS

    def summary_json(self) -> dict[str, Any]:
        """The fields every view of a reconfiguration starts with (the northbound API's
        history and reconfiguration calls, the status page)."""
        return {
            "id": self.id,
            "state": self.state.value,
            "trigger": self.trigger,
            "reason": self.reason,
            "created": self.created,
        }


@dataclass(frozen=True)
class StepRecord:
    id: int
    intent_id: int
    stage: int
    name: str
    state: StepState
    payload: Any
    result: Any
    error: str | None
    started: float
    finished: float | None

    @property
    def completed(self) -> bool:
        return self.state is StepState.DONE


@dataclass(frozen=True)
class RecoveryPoint:
    """What a restarted daemon needs: the in-flight intent and how far it got."""

    intent: IntentRecord
    steps: tuple[StepRecord, ...]

    @property
    def last_step(self) -> StepRecord | None:
        return self.steps[-1] if self.steps else None

    @property
    def last_step_completed(self) -> bool:
        """True if the last journaled step finished (or none was journaled yet)."""
        return self.last_step is None or self.last_step.state is not StepState.INTENT

    @property
    def interrupted_step(self) -> StepRecord | None:
        """The step journaled but never marked finished, if any."""
        last = self.last_step
        return last if last is not None and last.state is StepState.INTENT else None


@dataclass(frozen=True)
class DeviceGeneration:
    device: str
    generation: int
    request_id: str | None
    updated: float


@dataclass(frozen=True)
class TopologyRecord:
    topology: Topology
    circuits: tuple[Circuit, ...]
    updated: float
    intent_id: int | None


class JournalBase:
    """What both journal backends (this SQLite one and :class:`controller.ha.etcd_journal.
    EtcdJournal`) do alike, over the primitives each provides: ``path`` (what errors name),
    ``_lock``, ``close``, ``in_flight_intent``, ``steps`` and ``_finish_step``."""

    path: Any
    _lock: threading.RLock

    def close(self) -> None:
        raise NotImplementedError

    def in_flight_intent(self) -> IntentRecord | None:
        raise NotImplementedError

    def steps(self, intent_id: int) -> list[StepRecord]:
        raise NotImplementedError

    def _finish_step(
        self, step_id: int, state: StepState, result: Any = None, error: str | None = None
    ) -> StepRecord:
        raise NotImplementedError

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _json(self, value: Any, what: str) -> str:
        try:
            return json.dumps(value, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise JournalError(self.path, f"{what} is not JSON-serialisable: {exc}") from exc

    def complete_step(self, step_id: int, result: Any = None) -> StepRecord:
        """Mark a step done, after it was taken."""
        return self._finish_step(step_id, StepState.DONE, result=result)

    def fail_step(self, step_id: int, error: str, result: Any = None) -> StepRecord:
        return self._finish_step(step_id, StepState.FAILED, result=result, error=error)

    def roll_back_step(self, step_id: int, reason: str | None = None) -> StepRecord:
        """Mark a step undone (its effect was reverted during a stage rollback)."""
        return self._finish_step(step_id, StepState.ROLLED_BACK, error=reason)

    def recovery_point(self) -> RecoveryPoint | None:
        """The in-flight intent and its steps, or None if nothing is in flight."""
        with self._lock:
            intent = self.in_flight_intent()
            if intent is None:
                return None
            return RecoveryPoint(intent, tuple(self.steps(intent.id)))


class Journal(JournalBase):
    """One open journal file. Thread-safe; use as a context manager or call :meth:`close`."""

    def __init__(self, path: str | Path, clock: Clock = time.time, check: bool = True) -> None:
        self.path = Path(path)
        self._clock = clock
        self._lock = threading.RLock()
        self._depth = 0
        self._conn = self._connect(check)

    # -- opening -------------------------------------------------------------------------

    def _connect(self, check: bool) -> sqlite3.Connection:
        if self.path.exists() and self.path.is_dir():
            raise JournalError(self.path, "is a directory, not a journal file")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise JournalError(self.path, f"cannot create its directory: {exc.strerror or exc}") from exc
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=10.0)
        except sqlite3.Error as exc:
            if not _writable(self.path):
                raise JournalError(
                    self.path, f"cannot be written: read-only file system or no write permission ({exc})"
                ) from exc
            raise JournalError(self.path, f"cannot open: {exc}") from exc
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise JournalError(self.path, f"cannot switch to WAL mode (got {mode!r})")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=ON")
            if check:
                verdict = conn.execute("PRAGMA quick_check").fetchone()[0]
                if verdict != "ok":
                    raise JournalError(self.path, f"integrity check failed: {verdict}")
            self._migrate(conn)
        except sqlite3.Error as exc:
            conn.close()
            if "readonly" in str(exc) or not _writable(self.path):
                raise JournalError(
                    self.path, f"cannot be written: read-only file system or no write permission ({exc})"
                ) from exc
            raise JournalError(self.path, f"unreadable or corrupt ({exc})") from exc
        except JournalError:
            conn.close()
            raise
        return conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        version = self._read_version(conn)
        if version > LATEST_VERSION:
            raise JournalError(
                self.path, f"schema version {version} is newer than this controller's {LATEST_VERSION}"
            )
        for target in range(version + 1, LATEST_VERSION + 1):
            conn.execute("BEGIN IMMEDIATE")
            try:
                if self._read_version(conn) >= target:  # another process migrated meanwhile
                    conn.execute("COMMIT")
                    continue
                for statement in MIGRATIONS[target - 1]:
                    conn.execute(statement)
                conn.execute("DELETE FROM schema_version")
                conn.execute("INSERT INTO schema_version (version) VALUES (?)", (target,))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            log.info("journal %s: migrated to schema version %d", self.path, target)

    @staticmethod
    def _read_version(conn: sqlite3.Connection) -> int:
        row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    @property
    def schema_version(self) -> int:
        with self._reading() as conn:
            return self._read_version(conn)

    def journal_mode(self) -> str:
        with self._reading() as conn:
            return str(conn.execute("PRAGMA journal_mode").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Journal:
        return self

    # -- transactions ----------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; nested calls join the outermost one."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self._conn
                finally:
                    self._depth -= 1
                return
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise JournalError(self.path, f"cannot start a transaction: {exc}") from exc
            self._depth = 1
            try:
                yield self._conn
            except sqlite3.Error as exc:
                self._rollback()
                raise JournalError(self.path, f"write failed: {exc}") from exc
            except BaseException:
                self._rollback()
                raise
            else:
                try:
                    self._conn.execute("COMMIT")
                except sqlite3.Error as exc:
                    raise JournalError(self.path, f"commit failed: {exc}") from exc
            finally:
                self._depth = 0

    def _rollback(self) -> None:
        if not self._conn.in_transaction:  # SQLite already rolled back (e.g. SQLITE_FULL)
            return
        try:
            self._conn.execute("ROLLBACK")
        except sqlite3.Error as exc:  # the original error matters more
            log.warning("journal %s: rollback failed: %s", self.path, exc)

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise JournalError(self.path, f"read failed: {exc}") from exc

    # -- intents ---------------------------------------------------------------------------

    def begin_intent(self, plan: Plan, trigger: str = "auto") -> IntentRecord:
        """Journal a new reconfiguration; fails if another one is in progress."""
        plan_json = self._json(plan.to_json(), "the plan")
        now = self._clock()
        with self.transaction() as conn:
            busy = conn.execute("SELECT id FROM intents WHERE state = 'in_progress'").fetchone()
            if busy:
                raise JournalError(self.path, f"intent {busy[0]} is still in progress")
            cur = conn.execute(
                "INSERT INTO intents (created, updated, state, trigger, plan) VALUES (?, ?, ?, ?, ?)",
                (now, now, IntentState.IN_PROGRESS.value, trigger, plan_json),
            )
            intent_id = int(cur.lastrowid or 0)
        return self.intent(intent_id)

    def finish_intent(self, intent_id: int, state: IntentState, reason: str | None = None) -> IntentRecord:
        """Close an in-progress intent as done, rolled back, failed or cancelled."""
        state = IntentState(state)
        if state is IntentState.IN_PROGRESS:
            raise JournalError(self.path, "an intent is finished with a final state, not in_progress")
        now = self._clock()
        with self.transaction() as conn:
            current = self._intent_state(conn, intent_id)
            if current is not IntentState.IN_PROGRESS:
                raise JournalError(self.path, f"intent {intent_id} is already {current.value}")
            conn.execute(
                "UPDATE intents SET state = ?, reason = ?, updated = ?, finished = ? WHERE id = ?",
                (state.value, reason, now, now, intent_id),
            )
        return self.intent(intent_id)

    def _intent_state(self, conn: sqlite3.Connection, intent_id: int) -> IntentState:
        row = conn.execute("SELECT state FROM intents WHERE id = ?", (intent_id,)).fetchone()
        if row is None:
            raise JournalError(self.path, f"no intent {intent_id}")
        return IntentState(row[0])

    def intent(self, intent_id: int) -> IntentRecord:
        with self._reading() as conn:
            row = conn.execute(f"SELECT {_INTENT_COLUMNS} FROM intents WHERE id = ?", (intent_id,)).fetchone()
        if row is None:
            raise JournalError(self.path, f"no intent {intent_id}")
        return _intent_record(row)

    def in_flight_intent(self) -> IntentRecord | None:
        with self._reading() as conn:
            row = conn.execute(
                f"SELECT {_INTENT_COLUMNS} FROM intents WHERE state = 'in_progress'"
            ).fetchone()
        return None if row is None else _intent_record(row)

    def reconfigurations(self, limit: int = 50, offset: int = 0) -> list[IntentRecord]:
        """The history of reconfigurations, newest first."""
        with self._reading() as conn:
            rows = conn.execute(
                f"SELECT {_INTENT_COLUMNS} FROM intents ORDER BY id DESC LIMIT ? OFFSET ?", (limit, offset)
            ).fetchall()
        return [_intent_record(r) for r in rows]

    # -- steps -----------------------------------------------------------------------------

    def begin_step(self, intent_id: int, stage: int, name: StepName | str, payload: Any = None) -> StepRecord:
        """Journal a step *before* taking it (state ``intent``)."""
        name = str(name)
        if not name:
            raise JournalError(self.path, "a step needs a name")
        if stage < 0:
            raise JournalError(self.path, f"stage index must be >= 0, got {stage}")
        payload_json = self._json(payload, "the step payload")
        now = self._clock()
        with self.transaction() as conn:
            state = self._intent_state(conn, intent_id)
            if state is not IntentState.IN_PROGRESS:
                raise JournalError(self.path, f"intent {intent_id} is {state.value}; no more steps")
            open_step = conn.execute(
                "SELECT id, name FROM steps WHERE intent_id = ? AND state = 'intent'", (intent_id,)
            ).fetchone()
            if open_step:
                raise JournalError(
                    self.path, f"step {open_step[0]} ({open_step[1]}) of intent {intent_id} is not finished"
                )
            cur = conn.execute(
                "INSERT INTO steps (intent_id, stage, name, state, payload, started)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (intent_id, stage, name, StepState.INTENT.value, payload_json, now),
            )
            conn.execute("UPDATE intents SET updated = ? WHERE id = ?", (now, intent_id))
            step_id = int(cur.lastrowid or 0)
        return self.step(step_id)

    def _finish_step(
        self, step_id: int, state: StepState, result: Any = None, error: str | None = None
    ) -> StepRecord:
        result_json = None if result is None else self._json(result, "the step result")
        now = self._clock()
        with self.transaction() as conn:
            row = conn.execute("SELECT state, intent_id FROM steps WHERE id = ?", (step_id,)).fetchone()
            if row is None:
                raise JournalError(self.path, f"no step {step_id}")
            current = StepState(row[0])
            if state not in _STEP_TRANSITIONS[current]:
                raise JournalError(
                    self.path, f"step {step_id} is {current.value}; cannot become {state.value}"
                )
            conn.execute(
                "UPDATE steps SET state = ?, result = COALESCE(?, result), error = COALESCE(?, error),"
                " finished = ? WHERE id = ?",
                (state.value, result_json, error, now, step_id),
            )
            conn.execute("UPDATE intents SET updated = ? WHERE id = ?", (now, row[1]))
        return self.step(step_id)

    def step(self, step_id: int) -> StepRecord:
        with self._reading() as conn:
            row = conn.execute(f"SELECT {_STEP_COLUMNS} FROM steps WHERE id = ?", (step_id,)).fetchone()
        if row is None:
            raise JournalError(self.path, f"no step {step_id}")
        return _step_record(row)

    def steps(self, intent_id: int) -> list[StepRecord]:
        """Every step of an intent, in the order they were journaled."""
        with self._reading() as conn:
            rows = conn.execute(
                f"SELECT {_STEP_COLUMNS} FROM steps WHERE intent_id = ? ORDER BY id", (intent_id,)
            ).fetchall()
        return [_step_record(r) for r in rows]

    def last_step(self, intent_id: int) -> StepRecord | None:
        with self._reading() as conn:
            row = conn.execute(
                f"SELECT {_STEP_COLUMNS} FROM steps WHERE intent_id = ? ORDER BY id DESC LIMIT 1",
                (intent_id,),
            ).fetchone()
        return None if row is None else _step_record(row)

    # -- device generations ----------------------------------------------------------------

    def record_generation(
        self, device: str, generation: int, request_id: str | None = None, force: bool = False
    ) -> DeviceGeneration:
        """Remember the generation last applied to ``device``.

        A lower generation than the journaled one is refused unless ``force`` (used when
        reconciling with a device that restarted: the device is the truth).
        """
        if generation < 0:
            raise JournalError(self.path, f"generation of {device} must be >= 0, got {generation}")
        now = self._clock()
        with self.transaction() as conn:
            row = conn.execute(
                "SELECT generation FROM device_generations WHERE device = ?", (device,)
            ).fetchone()
            if row is not None and generation < row[0] and not force:
                raise JournalError(
                    self.path, f"generation {generation} of {device} is older than the journaled {row[0]}"
                )
            conn.execute(
                "INSERT INTO device_generations (device, generation, request_id, updated) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (device) DO UPDATE SET generation = excluded.generation,"
                " request_id = excluded.request_id, updated = excluded.updated",
                (device, generation, request_id, now),
            )
        return DeviceGeneration(device, generation, request_id, now)

    def generation(self, device: str) -> DeviceGeneration | None:
        with self._reading() as conn:
            row = conn.execute(
                "SELECT device, generation, request_id, updated FROM device_generations WHERE device = ?",
                (device,),
            ).fetchone()
        return None if row is None else DeviceGeneration(row[0], int(row[1]), row[2], float(row[3]))

    def generations(self) -> dict[str, DeviceGeneration]:
        with self._reading() as conn:
            rows = conn.execute(
                "SELECT device, generation, request_id, updated FROM device_generations ORDER BY device"
            ).fetchall()
        return {r[0]: DeviceGeneration(r[0], int(r[1]), r[2], float(r[3])) for r in rows}

    # -- topology --------------------------------------------------------------------------

    def save_topology(
        self, topology: Topology, circuits: Iterable[Circuit], intent_id: int | None = None
    ) -> None:
        """Replace the current topology and circuits."""
        topo_json = self._json(
            {"blocks": list(topology.blocks), "counts": topology.counts.tolist()}, "the topology"
        )
        circuits_json = self._json([[c.ocs, c.a, c.b] for c in sorted(circuits)], "the circuits")
        now = self._clock()
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO topology (id, updated, intent_id, topology, circuits) VALUES (1, ?, ?, ?, ?)"
                " ON CONFLICT (id) DO UPDATE SET updated = excluded.updated, intent_id = excluded.intent_id,"
                " topology = excluded.topology, circuits = excluded.circuits",
                (now, intent_id, topo_json, circuits_json),
            )

    def current_topology(self) -> TopologyRecord | None:
        with self._reading() as conn:
            row = conn.execute(
                "SELECT topology, circuits, updated, intent_id FROM topology WHERE id = 1"
            ).fetchone()
        if row is None:
            return None
        try:
            topo = json.loads(row[0])
            topology = Topology(tuple(topo["blocks"]), np.array(topo["counts"], dtype=np.int64))
            circuits = tuple(Circuit(str(o), int(a), int(b)) for o, a, b in json.loads(row[1]))
        except (ValueError, KeyError, TypeError) as exc:
            raise JournalError(self.path, f"the stored topology is unreadable: {exc}") from exc
        return TopologyRecord(topology, circuits, float(row[2]), row[3])

    # -- matrix history --------------------------------------------------------------------

    def append_matrix(self, timestamp: float, matrix: TrafficMatrix, retention_s: float | None = None) -> int:
        """Store the matrix measured at ``timestamp``; with ``retention_s``, prune older ones.

        Returns how many old matrices were pruned. A second matrix at the same timestamp
        replaces the first.
        """
        data = self._json(_matrix_json(matrix), "the matrix")
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO matrix_history (timestamp, matrix) VALUES (?, ?)", (timestamp, data)
            )
            if retention_s is None:
                return 0
            cur = conn.execute("DELETE FROM matrix_history WHERE timestamp < ?", (timestamp - retention_s,))
            return int(cur.rowcount)

    def prune_matrices(self, before: float) -> int:
        with self.transaction() as conn:
            return int(conn.execute("DELETE FROM matrix_history WHERE timestamp < ?", (before,)).rowcount)

    def matrix_history(self, since: float | None = None) -> list[tuple[float, TrafficMatrix]]:
        """Stored matrices at or after ``since`` (all if None), oldest first."""
        with self._reading() as conn:
            rows = conn.execute(
                "SELECT timestamp, matrix FROM matrix_history WHERE timestamp >= ? ORDER BY timestamp",
                (float("-inf") if since is None else since,),
            ).fetchall()
        return [(float(ts), self._matrix_from_json(text)) for ts, text in rows]

    def _matrix_from_json(self, text: str) -> TrafficMatrix:
        try:
            data = json.loads(text)
            return TrafficMatrix(tuple(data["blocks"]), np.array(data["gbps"], dtype=np.float64))
        except (ValueError, KeyError, TypeError) as exc:
            raise JournalError(self.path, f"a stored matrix is unreadable: {exc}") from exc

    # -- small named state -----------------------------------------------------------------

    def put_state(self, key: str, value: Any) -> None:
        """Store a JSON-serialisable value under ``key`` (replacing any previous one)."""
        data = self._json(value, f"state {key!r}")
        now = self._clock()
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO state (key, value, updated) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE"
                " SET value = excluded.value, updated = excluded.updated",
                (key, data, now),
            )

    def get_state(self, key: str, default: Any = None) -> Any:
        with self._reading() as conn:
            row = conn.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
        if row is None:
            return default
        try:
            return json.loads(row[0])
        except ValueError as exc:
            raise JournalError(self.path, f"state {key!r} is unreadable: {exc}") from exc

    def put_matrix_state(self, key: str, matrix: TrafficMatrix | None) -> None:
        """Store a matrix (e.g. the published prediction) under ``key``; None deletes it."""
        if matrix is None:
            with self.transaction() as conn:
                conn.execute("DELETE FROM state WHERE key = ?", (key,))
            return
        self.put_state(key, _matrix_json(matrix))

    def get_matrix_state(self, key: str) -> TrafficMatrix | None:
        data = self.get_state(key)
        return None if data is None else self._matrix_from_json(json.dumps(data))


def _writable(path: Path) -> bool:
    """The journal (or, before it exists, its directory) can be written (access(2) also says
    no on a read-only file system, even to root)."""
    import os

    target = path if path.exists() else path.parent
    return os.access(target, os.W_OK)


# -- row helpers -------------------------------------------------------------------------------

_INTENT_COLUMNS = "id, created, updated, finished, state, trigger, reason, plan"
_STEP_COLUMNS = "id, intent_id, stage, name, state, payload, result, error, started, finished"


def _intent_record(row: tuple[Any, ...]) -> IntentRecord:
    return IntentRecord(
        id=int(row[0]),
        created=float(row[1]),
        updated=float(row[2]),
        finished=None if row[3] is None else float(row[3]),
        state=IntentState(row[4]),
        trigger=str(row[5]),
        reason=row[6],
        plan=Plan.from_json(json.loads(row[7]), f"intent {int(row[0])}'s plan"),
    )


def _step_record(row: tuple[Any, ...]) -> StepRecord:
    return StepRecord(
        id=int(row[0]),
        intent_id=int(row[1]),
        stage=int(row[2]),
        name=str(row[3]),
        state=StepState(row[4]),
        payload=json.loads(row[5]),
        result=None if row[6] is None else json.loads(row[6]),
        error=row[7],
        started=float(row[8]),
        finished=None if row[9] is None else float(row[9]),
    )


def _matrix_json(matrix: TrafficMatrix) -> dict[str, Any]:
    return {"blocks": list(matrix.blocks), "gbps": matrix.gbps.tolist()}
