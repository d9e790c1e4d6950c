"""Batch mode's tables in RUNDIR/run.sqlite: the requests queued, the batches submitted, their answers.

Every statement batch mode runs is a method here; what to do and when (submit, poll, collect, give up) is
``runner/batches.py``'s ``BatchBroker``. Several statements that must be kept together are run inside
``with store.transaction():`` by the broker: a Ctrl-C or a killed process halfway keeps none of them.

The tables:

* ``batch_requests``: one row per request (keyed by the call's cache key): its state (``queued``,
  ``submitted``, ``done``, ``failed``), the batch it is in, its request line, the units waiting for it (a
  JSON list), how many times it was sent (``submissions``) and why it was sent again (``retries``, a JSON
  object kind -> count), its answer or its failure (``error_kind``, ``error``), the unit it was delivered to.
* ``batches``: one row per batch (a local ``uploading-…`` id until the provider named it): its model, input
  file, provider state and counts, whether it was read (``collected``), a note, and how many invocations
  left it open (``left_open``).
* ``batch_members``: which requests each batch held (kept after a request moves on; ``agentjudge batches``).

The connection is the broker's own, beside ``RunStore``'s, in the same thread (see ``runner/batches.py``).
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, NamedTuple

from agentjudge.runner.store import now, transaction

_SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
    batch_id TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    input_file_id TEXT,
    state TEXT NOT NULL,
    total INTEGER NOT NULL DEFAULT 0,
    completed INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    requests INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    collected INTEGER NOT NULL DEFAULT 0,
    note TEXT,
    left_open INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS batch_requests (
    cache_key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('queued', 'submitted', 'done', 'failed')),
    batch_id TEXT,
    line TEXT NOT NULL,
    units TEXT NOT NULL,
    submissions INTEGER NOT NULL DEFAULT 0,
    answer TEXT,
    error_kind TEXT,
    error TEXT,
    delivered_to TEXT,
    retries TEXT
);
CREATE INDEX IF NOT EXISTS batch_requests_batch ON batch_requests (batch_id);
CREATE TABLE IF NOT EXISTS batch_members (
    batch_id TEXT NOT NULL,
    cache_key TEXT NOT NULL,
    PRIMARY KEY (batch_id, cache_key)
);
"""
_SET_FAILED = "UPDATE batch_requests SET state = 'failed', error_kind = ?, error = ? WHERE cache_key = ?"
_REQUEUE = "UPDATE batch_requests SET state = 'queued', batch_id = NULL, retries = ? WHERE cache_key = ?"
UPLOADING = "uploading"  # a local batch row's state: the file is being uploaded / the batch created


class RequestRow(NamedTuple):
    """A request's stored state, as ``BatchBroker.answer`` reads it."""

    state: str
    answer: str | None
    error_kind: str | None
    error: str | None
    submissions: int
    delivered_to: str | None
    retries: dict[str, int]


class BatchStore:
    """The batch tables of one run.sqlite, through one connection (``db``)."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, timeout=30.0)
        self.db.execute("PRAGMA journal_mode=WAL")
        # as RunStore's connection: in WAL mode a commit is durable against a crashed or killed process (the
        # WAL is written before COMMIT returns and sits in the OS's page cache) without an fsync per commit;
        # only a power cut or OS crash can lose the last commits, as for the units themselves. Atomicity is
        # unchanged: a transaction is in the WAL whole or not at all (tests/test_batch_atomic.py)
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(_SCHEMA)
        # columns a store of an older version lacks
        self._add_column("batches", "left_open", "INTEGER NOT NULL DEFAULT 0")
        self._add_column("batch_requests", "retries", "TEXT")

    def close(self) -> None:
        self.db.close()

    def transaction(self) -> AbstractContextManager[None]:
        """The statements inside are committed together or not at all (``runner.store.transaction``)."""
        return transaction(self.db)

    def _add_column(self, table: str, column: str, declaration: str) -> None:
        """``column`` added to ``table`` when it lacks it (a store written by an older version)."""
        if column not in {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}:
            self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")

    # --- one request ----------------------------------------------------------------------------
    def request(self, key: str) -> RequestRow | None:
        row = self.db.execute(
            "SELECT state, answer, error_kind, error, submissions, delivered_to, retries FROM batch_requests "
            "WHERE cache_key = ?",
            (key,),
        ).fetchone()
        if row is None:
            return None
        state, answer, kind, error, submissions, delivered_to, retries = row
        retried = json.loads(retries) if retries else {}
        return RequestRow(state, answer, kind, error, submissions, delivered_to, retried)

    def set_delivered(self, key: str, unit: str) -> None:
        """The request's answer reached ``unit`` (kept when another unit already received it)."""
        self.db.execute(
            "UPDATE batch_requests SET delivered_to = ? WHERE cache_key = ? AND delivered_to IS NULL",
            (unit, key),
        )

    def waiting(self, key: str) -> tuple[list[str], str, str] | None:
        """(the units waiting for the request, its state, its model), or None when it is not stored."""
        row = self.db.execute(
            "SELECT units, state, model FROM batch_requests WHERE cache_key = ?", (key,)
        ).fetchone()
        return None if row is None else (json.loads(row[0]), row[1], row[2])

    def insert_queued(self, key: str, model: str, line: dict[str, Any], unit: str) -> None:
        self.db.execute(
            "INSERT INTO batch_requests (cache_key, model, state, line, units) VALUES (?, ?, 'queued', ?, ?)",
            (key, model, json.dumps(line, sort_keys=True), json.dumps([unit])),
        )

    def reset_queued(self, key: str, model: str) -> None:
        """The request queued anew for ``model``: its sends, answer and failure forgotten."""
        self.db.execute(
            "UPDATE batch_requests SET model = ?, state = 'queued', batch_id = NULL, "
            "submissions = 0, retries = NULL, answer = NULL, error_kind = NULL, error = NULL "
            "WHERE cache_key = ?",
            (model, key),
        )

    def set_units(self, key: str, units: list[str]) -> None:
        self.db.execute("UPDATE batch_requests SET units = ? WHERE cache_key = ?", (json.dumps(units), key))

    def set_line(self, key: str, line: str) -> None:
        self.db.execute("UPDATE batch_requests SET line = ? WHERE cache_key = ?", (line, key))

    def requeue(self, key: str, kind: str) -> None:
        """Queue ``key`` to be sent again (inside the caller's transaction): the send it had stays counted
        (``submissions``: the provider received it and may bill it), and the next one is a retry of
        ``kind``, shown with the model's retries like a direct call's."""
        (text,) = self.db.execute("SELECT retries FROM batch_requests WHERE cache_key = ?", (key,)).fetchone()
        retries = json.loads(text) if text else {}
        retries[kind] = retries.get(kind, 0) + 1
        self.db.execute(_REQUEUE, (json.dumps(retries, sort_keys=True), key))

    def set_failed(self, keys: Sequence[str], kind: str, message: str) -> None:
        self.db.executemany(_SET_FAILED, [(kind, message, k) for k in keys])

    def set_submission_failed(self, key: str, kind: str, error: str) -> None:
        """A request whose batch could not be submitted, failed for good (out of its batch)."""
        self.db.execute(
            "UPDATE batch_requests SET state = 'failed', batch_id = NULL, error_kind = ?, error = ? "
            "WHERE cache_key = ?",
            (kind, error, key),
        )

    def set_answered(self, key: str, answer_json: str) -> None:
        self.db.execute(
            "UPDATE batch_requests SET state = 'done', answer = ? WHERE cache_key = ?", (answer_json, key)
        )

    # --- requests of the run's batch models ------------------------------------------------------
    def open_rows(self, models: Sequence[str]) -> list[tuple[str, str]]:
        """(cache key, model) of the queued and submitted requests of ``models``."""
        return self.db.execute(
            f"SELECT cache_key, model FROM batch_requests WHERE {_open(models)}", list(models)
        ).fetchall()

    def count_open(self, models: Sequence[str]) -> int:
        return int(
            self.db.execute(
                f"SELECT COUNT(*) FROM batch_requests WHERE {_open(models)}", list(models)
            ).fetchone()[0]
        )

    def open_batch_of(self, models: Sequence[str]) -> dict[str, str]:
        """Cache key -> batch id of the open requests of ``models`` that were sent in a batch."""
        return dict(
            self.db.execute(
                "SELECT cache_key, batch_id FROM batch_requests "
                f"WHERE {_open(models)} AND batch_id IS NOT NULL",
                list(models),
            ).fetchall()
        )

    def submitted_with_batch(self, models: Sequence[str]) -> list[tuple[str, str, str | None, int | None]]:
        """(cache key, model, its batch's model, its batch's ``collected``) of the submitted requests of
        ``models``; the batch's two are None when its row is missing."""
        return self.db.execute(
            "SELECT r.cache_key, r.model, b.model, b.collected FROM batch_requests r "
            "LEFT JOIN batches b ON b.batch_id = r.batch_id "
            f"WHERE r.state = 'submitted' AND r.{_of(models)}",
            list(models),
        ).fetchall()

    def queued(self) -> list[tuple[str, str, str, int]]:
        """(cache key, model, line, submissions) of every queued request, by model and key."""
        return self.db.execute(
            "SELECT cache_key, model, line, submissions FROM batch_requests WHERE state = 'queued' "
            "ORDER BY model, cache_key"
        ).fetchall()

    # --- batches --------------------------------------------------------------------------------
    def unanswered(self, batch_id: str) -> list[str]:
        """Cache keys of the requests still submitted to ``batch_id`` (no answer read yet)."""
        rows = self.db.execute(
            "SELECT cache_key FROM batch_requests WHERE batch_id = ? AND state = 'submitted'", (batch_id,)
        )
        return [key for (key,) in rows]

    def submitted_to(self, batch_id: str) -> dict[str, int]:
        """Cache key -> submissions of the requests still submitted to ``batch_id``."""
        return dict(
            self.db.execute(
                "SELECT cache_key, submissions FROM batch_requests "
                "WHERE batch_id = ? AND state = 'submitted'",
                (batch_id,),
            ).fetchall()
        )

    def uploading(self) -> list[tuple[str, str, str | None]]:
        """(local id, model, input file id) of the batches an interrupted invocation was submitting."""
        return self.db.execute(
            "SELECT batch_id, model, input_file_id FROM batches WHERE state = ?", (UPLOADING,)
        ).fetchall()

    def open_batches(self) -> list[tuple[str, str]]:
        """(batch id, model) of the batches submitted and not read yet, oldest first."""
        return self.db.execute(
            "SELECT batch_id, model FROM batches WHERE collected = 0 AND state != ? ORDER BY created_at",
            (UPLOADING,),
        ).fetchall()

    def insert_uploading(self, local: str, model: str, keys: Sequence[str]) -> None:
        """A local batch row for ``keys``, its requests submitted to it (inside a transaction)."""
        stamp = now()
        self.db.execute(
            "INSERT INTO batches (batch_id, model, state, requests, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (local, model, UPLOADING, len(keys), stamp, stamp),
        )
        self.db.executemany(
            "UPDATE batch_requests SET state = 'submitted', batch_id = ?, submissions = submissions + 1 "
            "WHERE cache_key = ?",
            [(local, k) for k in keys],
        )
        self.db.executemany(
            "INSERT OR IGNORE INTO batch_members (batch_id, cache_key) VALUES (?, ?)",
            [(local, k) for k in keys],
        )

    def set_input_file(self, batch_id: str, file_id: str) -> None:
        self.db.execute("UPDATE batches SET input_file_id = ? WHERE batch_id = ?", (file_id, batch_id))

    def name_batch(self, local: str, batch_id: str, state: str, total: int) -> None:
        """The provider's id for a local batch row, with its requests (inside a transaction)."""
        self.db.execute(
            "UPDATE batches SET batch_id = ?, state = ?, total = ?, updated_at = ? WHERE batch_id = ?",
            (batch_id, state, total, now(), local),
        )
        self.db.execute("UPDATE batch_requests SET batch_id = ? WHERE batch_id = ?", (batch_id, local))
        self.db.execute("UPDATE batch_members SET batch_id = ? WHERE batch_id = ?", (batch_id, local))

    def adopt_batch(self, local: str, batch_id: str, state: str) -> None:
        """A local batch row renamed to the batch the provider created for it (inside a transaction)."""
        self.db.execute(
            "UPDATE batches SET batch_id = ?, state = ?, updated_at = ? WHERE batch_id = ?",
            (batch_id, state, now(), local),
        )
        for table in ("batch_requests", "batch_members"):
            self.db.execute(f"UPDATE {table} SET batch_id = ? WHERE batch_id = ?", (batch_id, local))

    def drop_uploading(self, local: str) -> None:
        """A local batch row the provider never created: its requests queued again, their send uncounted
        (inside a transaction)."""
        self.db.execute(
            "UPDATE batch_requests SET state = 'queued', batch_id = NULL, "
            "submissions = submissions - 1 WHERE batch_id = ? AND state = 'submitted'",
            (local,),
        )
        self.delete_batch(local)

    def delete_batch(self, batch_id: str) -> None:
        self.db.execute("DELETE FROM batches WHERE batch_id = ?", (batch_id,))
        self.db.execute("DELETE FROM batch_members WHERE batch_id = ?", (batch_id,))

    def set_polled(
        self, batch_id: str, state: str, total: int, completed: int, failed: int, note: str | None
    ) -> None:
        self.db.execute(
            "UPDATE batches SET state = ?, total = ?, completed = ?, failed = ?, updated_at = ?, "
            "note = ? WHERE batch_id = ?",
            (state, total, completed, failed, now(), note, batch_id),
        )

    def set_collected(self, batch_id: str, note: str | None = None) -> None:
        """The batch read (no invocation polls it again), with ``note`` when given up."""
        if note is None:
            self.db.execute("UPDATE batches SET collected = 1 WHERE batch_id = ?", (batch_id,))
            return
        self.db.execute(
            "UPDATE batches SET collected = 1, note = ?, updated_at = ? WHERE batch_id = ?",
            (note, now(), batch_id),
        )

    def add_left_open(self, batch_id: str) -> None:
        self.db.execute(
            "UPDATE batches SET left_open = left_open + 1, updated_at = ? WHERE batch_id = ?",
            (now(), batch_id),
        )

    def left_open(self, batch_id: str) -> int:
        """How many invocations left ``batch_id`` open."""
        row = self.db.execute("SELECT left_open FROM batches WHERE batch_id = ?", (batch_id,)).fetchone()
        return int(row[0]) if row is not None and row[0] is not None else 0


def _of(models: Sequence[str]) -> str:
    """A row of one of ``models`` (their names are the statement's parameters)."""
    return f"model IN ({', '.join('?' * len(models))})"


def _open(models: Sequence[str]) -> str:
    """An open (queued or submitted) request of one of ``models``."""
    return f"state IN ('queued', 'submitted') AND {_of(models)}"


# --- `agentjudge batches RUNDIR` -------------------------------------------------------------------
def batch_rows(db: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every batch of a run with its provider counts and its requests' and units' states."""
    out = []
    for batch_id, model, state, total, completed, failed, requests, created, updated, note in db.execute(
        "SELECT batch_id, model, state, total, completed, failed, requests, created_at, updated_at, note "
        "FROM batches ORDER BY created_at, batch_id"
    ):
        units: set[str] = set()
        by_state: Counter[str] = Counter()
        for req_state, unit_list in db.execute(
            "SELECT r.state, r.units FROM batch_members m JOIN batch_requests r ON r.cache_key = m.cache_key "
            "WHERE m.batch_id = ?",
            (batch_id,),
        ):
            by_state[req_state] += 1
            units.update(json.loads(unit_list))
        out.append(
            {
                "batch_id": batch_id,
                "model": model,
                "state": state,
                "total": total,
                "completed": completed,
                "failed": failed,
                "requests": requests,
                "units": len(units),
                "answered": by_state["done"],  # requests of this batch answered (here or in a later one)
                "request_failures": by_state["failed"],
                "open": by_state["queued"] + by_state["submitted"],
                "created": created,
                "updated": updated,
                "note": note,
            }
        )
    return out
