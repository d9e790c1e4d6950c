"""RUNDIR/run.sqlite's ``units`` and ``meta`` tables: their schema, and reading them without writing.

The schema lives here, below the runner, so that the one writer (``runner/store.py``, which creates the
tables from ``STORE_SCHEMA`` and names its columns with ``KEY_COLUMNS``) and every reader (``RunFolder``,
the viewer, the tests) share one definition. Other tables of the same file belong to their writers:
``score_cache`` and ``gate1_cache`` to ``runner/resume_cache.py``, ``batches``, ``batch_requests`` and
``batch_members`` to ``runner/batch_store.py``.

Two ways to open the store without changing it, for two kinds of reader:

- ``connect_reader`` / ``open_readonly`` (the runner's own reads while it may hold the folder: the no-op
  check, ``--dry-run``, ``batches``, the export's range reads): read-write with ``query_only`` on, so the
  last close removes the ``-wal``/``-shm`` files (a ``mode=ro`` connection cannot, and every read left them
  behind);
- ``open_store`` (``RunFolder.units``, the viewer): the same first, then ``mode=ro``, then ``immutable=1``
  for a folder the reader cannot write (a read-only mount, where SQLite cannot make the WAL's shared-memory
  file and no writer can be at work).
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

STORE_FILE = "run.sqlite"

STORE_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS units (
    stage TEXT NOT NULL CHECK (stage IN ('predict', 'judge')),
    record_id TEXT NOT NULL,
    difficulty TEXT NOT NULL,
    generator TEXT NOT NULL,
    generator_trial INTEGER NOT NULL,
    judge TEXT NOT NULL DEFAULT '',
    condition TEXT NOT NULL DEFAULT '',
    variant TEXT NOT NULL DEFAULT '',
    temperature TEXT NOT NULL DEFAULT '',
    trial INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
    result TEXT,
    error TEXT,
    attempts INTEGER NOT NULL DEFAULT 1,
    first_started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    error_kind TEXT,
    error_attempts INTEGER,
    PRIMARY KEY (stage, record_id, difficulty, generator, generator_trial, judge, condition, variant,
                 temperature, trial)
);
"""
#: columns added after the first version of the table, (name, declaration): ``RunStore`` adds them on open
#: to a store an older version wrote (NULL in its rows), and a reader of such a store reads them as NULL
ADDED_UNIT_COLUMNS: tuple[tuple[str, str], ...] = (("error_kind", "TEXT"), ("error_attempts", "INTEGER"))
#: a unit's coordinates (the primary key), in key order; ``runner.store.UnitKey``'s fields
KEY_COLUMNS: tuple[str, ...] = (
    "stage",
    "record_id",
    "difficulty",
    "generator",
    "generator_trial",
    "judge",
    "condition",
    "variant",
    "temperature",
    "trial",
)
#: every column of the units table, in table order. ``result``: the unit's result as compact JSON
#: (``model_dump(exclude_defaults=True)``), zlib-compressed (``encode_result``, ``decode_result``);
#: ``attempts``: the invocations that ran the unit; a failed unit's ``error_kind`` (its kind, '' when none
#: was named) and ``error_attempts`` (the requests the model client sent for the failed call), beside its
#: ``error`` text (agentjudge/models/failures.py)
UNIT_COLUMNS: tuple[str, ...] = (
    *KEY_COLUMNS,
    "status",
    "result",
    "error",
    "attempts",
    "first_started_at",
    "finished_at",
    *(name for name, _ in ADDED_UNIT_COLUMNS),
)

#: where ``result`` sits in a row of ``UNIT_COLUMNS`` (and of the writers' and readers' rows, which put the
#: key columns, then ``status``, then ``result``)
RESULT_AT = len(KEY_COLUMNS) + 1
#: zlib's level for a result: level 1 keeps nearly all of level 6's saving on these short JSON texts
#: (0.39 vs 0.38 of the bytes on the quick start's) at less CPU
RESULT_LEVEL = 1


def encode_result(text: str | None) -> bytes | None:
    """A unit's result as the store keeps it (format version 2 on): its compact JSON text compressed with
    zlib, a BLOB. The quick start's 152,100 results were 101 MB as text, 40 MB so."""
    return None if text is None else zlib.compress(text.encode("utf-8"), RESULT_LEVEL)


def decode_result(value: bytes | str | None) -> str | None:
    """A stored result as its JSON text: a BLOB decompressed, or text as a store written before the
    results were compressed (format versions 0 and 1) holds it. Every reader of ``result`` goes through
    this."""
    if isinstance(value, bytes):
        return zlib.decompress(value).decode("utf-8")
    return value


_OPS = {"==": "=", "=": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "in": "IN"}
_OPS["not in"] = "NOT IN"


def connect_reader(path: Path, timeout: float = 5.0) -> sqlite3.Connection:
    """A connection that only reads the existing store ``path`` (never creates one; '?', '#', '%' in the
    path escaped by ``as_uri``). Opened read-write with ``query_only`` on: SQLite deletes a WAL store's
    ``-wal``/``-shm`` files when the last connection closes, but a ``mode=ro`` connection cannot, so every
    read-only open (a no-op re-run, ``--dry-run``, ``batches``, a resumed run's cache reads) left them
    behind. (``immutable=1`` creates none, but reads wrong data if a writer is active, which nothing here
    can rule out.) A write-protected file is opened read-only by
    SQLite itself; an open that fails otherwise falls back to ``mode=ro``. The store's content is never
    changed: a last close only checkpoints committed pages of the WAL into the file (as a writer does)."""
    uri = path.resolve().as_uri()
    try:
        db = sqlite3.connect(f"{uri}?mode=rw", uri=True, timeout=timeout)
    except sqlite3.OperationalError:
        return sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=timeout)
    db.execute("PRAGMA query_only = ON")
    return db


def open_readonly(path: Path) -> sqlite3.Connection | None:
    """For --dry-run, the no-op check and ``batches``: read an existing store without creating it or
    changing what it holds (``connect_reader``); None when there is no readable store."""
    if not path.is_file():
        return None
    try:
        db = connect_reader(path)
        db.execute("SELECT 1 FROM units LIMIT 1")
        return db
    except sqlite3.Error:
        return None


def open_store(path: Path, timeout: float = 2.0) -> sqlite3.Connection | None:
    """A connection that reads the store and writes nothing to it, wherever it lies: ``connect_reader``
    (leaves no ``-wal``/``-shm`` behind), else ``mode=ro`` (works beside a writer), else ``immutable=1``
    (a folder the reader cannot write, where SQLite cannot make the WAL's shared-memory file). None when
    there is no readable store."""
    if not path.is_file():
        return None
    uri = path.resolve().as_uri()
    for flags in ("query_only", "mode=ro", "immutable=1"):
        db = None
        try:
            if flags == "query_only":
                db = connect_reader(path, timeout=timeout)
            else:
                db = sqlite3.connect(f"{uri}?{flags}", uri=True, timeout=timeout)
            db.execute("SELECT 1 FROM units LIMIT 1")
            return db
        except sqlite3.Error:
            if db is not None:
                db.close()
    return None


def where_clause(
    filters: Iterable[tuple[str, str, Any]] | None, columns: Sequence[str]
) -> tuple[str, list[Any]]:
    """``filters`` in pyarrow's form (``[("stage", "==", "judge"), ("trial", "in", [0, 1])]``, all of
    them must hold) as an SQL ``WHERE`` clause and its parameters. Column names and operators are checked
    against what the table has (never pasted from the caller); values are always parameters."""
    parts: list[str] = []
    params: list[Any] = []
    for item in filters or ():
        try:
            column, op, value = item
        except (TypeError, ValueError):
            raise ValueError(f"filter {item!r}: not a (column, operator, value) triple") from None
        if column not in columns:
            raise ValueError(f"filter on {column!r}: no such column (columns: {', '.join(columns)})")
        sql_op = _OPS.get(str(op).lower())
        if sql_op is None:
            raise ValueError(f"filter {item!r}: operator {op!r} is not one of {', '.join(_OPS)}")
        if sql_op in ("IN", "NOT IN"):
            values = list(value)
            parts.append(f"{column} {sql_op} ({', '.join('?' for _ in values)})")
            params.extend(values)
        elif value is None:
            parts.append(f"{column} IS {'NOT ' if sql_op == '!=' else ''}NULL")
        else:
            parts.append(f"{column} {sql_op} ?")
            params.append(value)
    return (" WHERE " + " AND ".join(parts) if parts else ""), params


def read_units(
    db: sqlite3.Connection,
    columns: Sequence[str] | None = None,
    filters: Iterable[tuple[str, str, Any]] | None = None,
) -> pd.DataFrame:
    """Rows of the units table as a DataFrame (columns of ``UNIT_COLUMNS``, in coordinate order)."""
    import pandas as pd

    wanted = list(columns) if columns is not None else list(UNIT_COLUMNS)
    unknown = [c for c in wanted if c not in UNIT_COLUMNS]
    if unknown or not wanted:
        raise ValueError(f"no such column(s) {unknown} (columns: {', '.join(UNIT_COLUMNS)})")
    where, params = where_clause(filters, UNIT_COLUMNS)
    present = {row[1] for row in db.execute("PRAGMA table_info(units)")}  # an older store lacks the added
    selected = ", ".join(c if c in present else f"NULL AS {c}" for c in wanted)
    query = f"SELECT {selected} FROM units{where} ORDER BY {', '.join(KEY_COLUMNS)}"
    rows = db.execute(query, params).fetchall()
    if "result" in wanted:  # compressed in the store (decode_result): read as its JSON text
        at = wanted.index("result")
        rows = [(*row[:at], decode_result(row[at]), *row[at + 1 :]) for row in rows]
    return pd.DataFrame.from_records(rows, columns=wanted)


def read_meta(db: sqlite3.Connection) -> dict[str, str]:
    """The store's ``meta`` table (config hash, ``store_version``, ``added_judges``, ...) as text."""
    return {str(k): str(v) for k, v in db.execute("SELECT key, value FROM meta").fetchall()}


def store_units(
    path: Path,
    columns: Sequence[str] | None = None,
    filters: Iterable[tuple[str, str, Any]] | None = None,
) -> pd.DataFrame | None:
    """``read_units`` of the store at ``path`` through ``open_store`` (nothing written), or None when there
    is no readable store (yet: a run that has not made it). For a folder with meta.json,
    ``RunFolder.units``; this also reads a run's store before its first export (a test that watches a run)."""
    db = open_store(path)
    if db is None:
        return None
    try:
        return read_units(db, columns, filters)
    finally:
        db.close()


def store_meta(path: Path) -> dict[str, str] | None:
    """``read_meta`` of the store at ``path`` (``store_units``' way), or None when there is none."""
    db = open_store(path)
    if db is None:
        return None
    try:
        return read_meta(db)
    finally:
        db.close()
