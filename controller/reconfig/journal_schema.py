"""The journal's SQLite schema, as an ordered list of migrations.

Migration ``n`` takes a database at version ``n - 1`` to version ``n``; each one runs in
its own transaction together with the update of ``schema_version``. Never edit a shipped
migration: append a new one.
"""

from __future__ import annotations

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: intents and steps, device generations, topology, matrix history, small state.
    (
        """
        CREATE TABLE intents (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            created REAL NOT NULL,
            updated REAL NOT NULL,
            finished REAL,
            state TEXT NOT NULL
                CHECK (state IN ('in_progress', 'done', 'rolled_back', 'failed', 'cancelled')),
            trigger TEXT NOT NULL,
            reason TEXT,
            plan TEXT NOT NULL
        )
        """,
        # At most one reconfiguration is in flight.
        "CREATE UNIQUE INDEX intents_one_in_progress ON intents (state) WHERE state = 'in_progress'",
        """
        CREATE TABLE steps (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            intent_id INTEGER NOT NULL REFERENCES intents (id),
            stage INTEGER NOT NULL CHECK (stage >= 0),
            name TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('intent', 'done', 'failed', 'rolled_back')),
            payload TEXT NOT NULL,
            result TEXT,
            error TEXT,
            started REAL NOT NULL,
            finished REAL
        )
        """,
        "CREATE INDEX steps_by_intent ON steps (intent_id, id)",
        # At most one step of an intent is being taken.
        "CREATE UNIQUE INDEX steps_one_open ON steps (intent_id) WHERE state = 'intent'",
        """
        CREATE TABLE device_generations (
            device TEXT PRIMARY KEY,
            generation INTEGER NOT NULL CHECK (generation >= 0),
            request_id TEXT,
            updated REAL NOT NULL
        )
        """,
        """
        CREATE TABLE topology (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            updated REAL NOT NULL,
            intent_id INTEGER REFERENCES intents (id),
            topology TEXT NOT NULL,
            circuits TEXT NOT NULL
        )
        """,
        """
        CREATE TABLE matrix_history (
            timestamp REAL PRIMARY KEY,
            matrix TEXT NOT NULL
        )
        """,
        """
        CREATE TABLE state (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL,
            updated REAL NOT NULL
        )
        """,
    ),
)

LATEST_VERSION = len(MIGRATIONS)
