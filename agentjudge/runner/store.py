"""RUNDIR/run.sqlite: every unit of work of a grid, keyed by its full coordinates.

Why SQLite: a grid is tens of thousands of independent model calls that may be interrupted (Ctrl-C, a crashed
laptop, a provider outage). Finished units are committed in groups (group commit): ``finish`` buffers a unit,
and the buffer is written in one transaction once the time since the last commit is ten times what that commit
took (but, while the group has fewer than 8 units, at least a quarter of ``flush_interval_s``:
``MIN_GROUP_SHARE``, 50 ms), and at the latest after ``flush_interval_s`` (200 ms); the runner checks on a
timer while calls are in flight (``runner.offline``: after each chunk, with ``finish_encoded``: its results
arrive as JSON text, with the chunk's start and end as the units' timestamps), and ``close`` commits the rest
on exit or Ctrl-C. So when units are rare (API calls) a group holds the units of 50 ms (a commit per API-call
unit was ~120 µs of the runner's CPU, as much as building the prompt and the cache key together), and when
they are fast (in-process baselines, thousands a second) groups grow until committing costs ~10 % of the time:
a commit per unit was 46 % of a large offline grid's judge stage. A killed process loses at most the units of
the last open group: they are not in the store, so a re-run runs them again (a model call's answer is in the
call cache from the moment it arrives: run again, it is not paid twice); a unit is stored under its full
coordinates (the primary key), so nothing finished is ever stored twice. ``synchronous=NORMAL`` keeps a commit
cheap; it survives a killed process (the WAL is in the OS's page cache), not a power cut.

Results are stored compactly: the runner passes ``model_dump(exclude_defaults=True)`` (a field at its
default is left out and restored by ``model_validate``), written without whitespace; offline units'
results arrive already as such text (``stored_json``: pydantic's serializer, a third of the cost). The text
is stored zlib-compressed (``rundir.units.encode_result``; a store written before keeps text, read alike).

``version`` (meta key ``store_version``) grows with every group written; ``agentjudge run`` records the
version its exported files were built from, so a re-run of a finished grid can tell that nothing changed.

The ``meta`` table pins the configuration a store belongs to (config hash plus the hashed config itself,
for a readable diff when someone changes the pipeline and re-runs into the same folder).

A failed unit keeps its failure's fields beside its text (``models/failures.py``): ``error_kind`` (the kind;
'' when nothing named one) and ``error_attempts`` (the requests the model client sent for the failed call;
NULL when none failed). ``attempts`` is another count: the invocations that ran the unit. A store written
before those columns existed gets them on open (NULL in its rows: ``failed_units`` reads such a row's
fields from its text, as that version wrote it).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeVar

from pydantic import BaseModel, ValidationError

from agentjudge.models.failures import NO_FAILURE, Failure, read_failure
from agentjudge.rundir.units import (
    ADDED_UNIT_COLUMNS,
    KEY_COLUMNS,
    RESULT_AT,
    STORE_SCHEMA,
    connect_reader,
    decode_result,
    encode_result,
)
from agentjudge.rundir.units import open_readonly as open_readonly  # grid.py, batches.py: its old home

Stage = Literal["predict", "judge"]
Status = Literal["done", "failed"]


def temperature_key(value: float | None) -> str:
    """Text form of a temperature coordinate: ``default`` for the judge's own setting, else repr."""
    return "default" if value is None else repr(float(value))


def temperature_value(key: str) -> float | None:
    return None if key in ("default", "") else float(key)


class UnitKey(NamedTuple):
    """Full coordinates of one unit. Predict units leave the judge coordinates empty.

    A named tuple (equal, hashed and ordered as the tuple of its fields, as the frozen dataclass it was):
    a paper grid makes, hashes, looks up and sorts millions of them, and a tuple's are C calls (~3x
    faster to make, ~4x to hash and compare than a dataclass's)."""

    stage: Stage
    record_id: str
    difficulty: str
    generator: str
    generator_trial: int
    judge: str = ""
    condition: str = ""
    variant: str = ""
    temperature: str = ""  # see temperature_key
    trial: int = 0

    def row(self) -> tuple[Any, ...]:
        """The values of ``KEY_COLUMNS``, in that order."""
        return tuple(self)


class UnitRow(NamedTuple):
    """A stored unit, its result decoded (a named tuple, as ``UnitKey``: the export makes one per unit)."""

    key: UnitKey
    status: Status
    result: Any  # decoded JSON, or None
    error: str | None
    attempts: int

    @classmethod
    def from_raw(cls, raw: tuple[UnitKey, Status, str | None, str | None, int]) -> UnitRow:
        """A row of ``RunStore.iter_raw`` with its result decoded."""
        key, status, text, error, attempts = raw
        return cls(key, status, json.loads(text) if text else None, error, attempts)


# A group of fewer than MIN_GROUP_UNITS units stays open at least this share of ``flush_interval_s`` (50
# ms): units of model calls arrive every few ms to tens of ms, and a commit of one unit cost ~120 µs of CPU,
# as much as the rest of the runner's own work on a judge call spends in several other places together.
# Fast units (thousands a second) fill a group sooner and are committed as before.
MIN_GROUP_SHARE = 0.25
MIN_GROUP_UNITS = 8


def stored_json(model: BaseModel) -> str:
    """A result as the store keeps it (``model_dump(exclude_defaults=True)``, compact JSON) in one call
    of pydantic's serializer. It reads back (``json.loads``) as the same values as ``json.dumps`` of the
    dump: key order, defaults left out, NaN and infinities as Python spells them (the model must say
    ``ser_json_inf_nan="constants"``; pydantic's default writes null); the text may differ (non-ASCII
    characters unescaped, ``1e-7`` for ``1e-07``). A string pydantic cannot encode (a lone surrogate)
    takes ``json.dumps``, which escapes it."""
    try:
        return model.model_dump_json(exclude_defaults=True)
    except ValueError:  # pydantic_core.PydanticSerializationError
        return json.dumps(model.model_dump(mode="json", exclude_defaults=True), separators=(",", ":"))


M = TypeVar("M", bound=BaseModel)


def from_stored(model: type[M], text: str) -> M:
    """A stored result read back as ``model``, by pydantic's JSON parser (no ``json.loads`` first: ~40 %
    less time). Its parser refuses a lone surrogate escape that ``json.loads`` accepts (a model's odd
    output, stored by ``json.dumps``): such text, or any text it refuses, is read as before, which
    raises as before when the text is really invalid."""
    try:
        return model.model_validate_json(text)
    except ValidationError:
        return model.model_validate(json.loads(text))


def now() -> str:
    """UTC timestamp (ms) for the units table."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class RunStore:
    """A thin, synchronous wrapper: the runner calls it from its event-loop thread; ``finish`` only
    appends to a buffer, ``flush`` writes the buffer in one transaction (a few ms for hundreds of units)."""

    def __init__(self, path: Path, flush_interval_s: float = 0.2) -> None:
        self.path = path
        self.flush_interval_s = flush_interval_s
        self._db = sqlite3.connect(path, isolation_level=None, timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(STORE_SCHEMA)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(units)")}
        for column, declaration in ADDED_UNIT_COLUMNS:  # a store written by an older version
            if column not in columns:
                self._db.execute(f"ALTER TABLE units ADD COLUMN {column} {declaration}")
        self._pending: list[tuple[Any, ...]] = []
        self._last_flush = time.monotonic()
        self._flush_cost = 0.0  # seconds the last commit took
        self.flushes = 0  # groups written by this process (for tests and the bench)

    # --- meta -------------------------------------------------------------------------------------
    def meta(self) -> dict[str, str]:
        return dict(self._db.execute("SELECT key, value FROM meta").fetchall())

    def set_meta(self, values: dict[str, str]) -> None:
        with transaction(self._db):
            self._db.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                sorted(values.items()),
            )

    # --- units ------------------------------------------------------------------------------------
    def statuses(self, stage: Stage) -> dict[UnitKey, Status]:
        """Coordinates and status only: enough to decide what is pending without loading results."""
        return dict(self.iter_statuses(stage))

    def iter_statuses(self, stage: Stage) -> Iterator[tuple[UnitKey, Status]]:
        """``statuses`` streamed (counting a paper grid's ~10^6 units without holding them)."""
        cols = ", ".join(KEY_COLUMNS)
        for row in self._db.execute(f"SELECT {cols}, status FROM units WHERE stage = ?", (stage,)):
            yield UnitKey(*row[:-1]), row[-1]

    def iter_units(self, stage: Stage) -> Iterator[UnitRow]:
        """All units of a stage in coordinate order (SQLite's binary text order equals Python's str order),
        streamed so that exporting a large grid does not hold every result in memory."""
        return map(UnitRow.from_raw, self.iter_raw(stage))

    def iter_raw(self, stage: Stage) -> Iterator[tuple[UnitKey, Status, str | None, str | None, int]]:
        """``iter_units`` with each result as its stored JSON text, not decoded."""
        cols = ", ".join(KEY_COLUMNS)
        cursor = self._db.execute(
            f"SELECT {cols}, status, result, error, attempts FROM units WHERE stage = ? ORDER BY {cols}",
            (stage,),
        )
        for row in cursor:
            yield (UnitKey(*row[: len(KEY_COLUMNS)]), row[-4], decode_result(row[-3]), *row[-2:])

    def finish(
        self,
        key: UnitKey,
        status: Status,
        result: Any,
        error: str | None,
        started_at: str,
        failure: Failure = NO_FAILURE,
    ) -> None:
        """Record one finished unit; it is committed with its group (at the latest ``flush_interval_s``
        after the previous group, or at ``flush``/``close``). A retried unit keeps its first start time;
        ``attempts`` counts the invocations that ran the unit; a failed unit's ``failure`` is its kind and
        the requests of its last run (``error_kind``, ``error_attempts``)."""
        payload = json.dumps(result, separators=(",", ":")) if result is not None else None
        self._pending.append(
            (*key.row(), status, payload, error, *store_failure_columns(status, failure), started_at, now())
        )
        self.flush_if_due()

    def finish_encoded(
        self,
        key: UnitKey,
        status: Status,
        payload: str | None,
        error: str | None,
        started_at: str,
        finished_at: str,
        failure: Failure = NO_FAILURE,
    ) -> None:
        """``finish`` for a result already encoded as its JSON text (``runner.offline``: encoded in the
        process that computed it); the caller calls ``flush_if_due`` once per batch of units."""
        columns = store_failure_columns(status, failure)
        self._pending.append((*key.row(), status, payload, error, *columns, started_at, finished_at))

    def flush_if_due(self) -> None:
        """Commit the group when it is due (see the module docstring); cheap to call often."""
        wait = 10 * self._flush_cost
        if len(self._pending) < MIN_GROUP_UNITS:  # units arriving slowly: one commit for several of them
            wait = max(wait, self.flush_interval_s * MIN_GROUP_SHARE)
        wait = min(self.flush_interval_s, wait)
        if self._pending and time.monotonic() - self._last_flush >= wait:
            self.flush()

    @property
    def pending(self) -> int:
        """Units finished but not yet committed."""
        return len(self._pending)

    def flush(self) -> None:
        """Commit every buffered unit in one transaction, and bump ``store_version``."""
        started = time.monotonic()
        if not self._pending:
            self._last_flush = started
            return
        rows, self._pending = self._pending, []
        with transaction(self._db):
            _write_group(self._db, rows)
        self.flushes += 1
        self._last_flush = time.monotonic()
        self._flush_cost = self._last_flush - started

    @property
    def version(self) -> int:
        """Grows with every committed group; 0 for a store nothing was written to."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'store_version'").fetchone()
        return int(row[0]) if row else 0

    def counts(self, stage: Stage) -> Counter[str]:
        """Units of a stage by status (committed ones)."""
        rows = self._db.execute(
            "SELECT status, COUNT(*) FROM units WHERE stage = ? GROUP BY status", (stage,)
        )
        return Counter(dict(rows.fetchall()))

    def counts_by_judge(self) -> dict[str, Counter[str]]:
        """Judge units by judge and status (committed ones)."""
        out: dict[str, Counter[str]] = {}
        rows = self._db.execute(
            "SELECT judge, status, COUNT(*) FROM units WHERE stage = 'judge' GROUP BY judge, status"
        )
        for judge, status, n in rows.fetchall():
            out.setdefault(judge, Counter())[status] = n
        return out

    def failed_units(self) -> list[StoredFailure]:
        """Every failed unit: coordinates, stored error, its failure's fields, and how many invocations ran
        it. A row written before the failure columns existed (``error_kind`` NULL) has its fields read
        from its text (``read_failure``)."""
        cols = ", ".join(KEY_COLUMNS)
        rows = self._db.execute(
            f"SELECT {cols}, error, error_kind, error_attempts, attempts FROM units WHERE status = 'failed' "
            f"ORDER BY {cols}"
        )
        out = []
        for row in rows:
            error, kind, requests, runs = row[len(KEY_COLUMNS) :]
            failure = read_failure(error) if kind is None else Failure(kind or None, requests)
            out.append(StoredFailure(UnitKey(*row[: len(KEY_COLUMNS)]), error, failure, runs))
        return out

    def close(self) -> None:
        """Commit what is buffered, then close (also on Ctrl-C: the runner closes in a ``finally``)."""
        try:
            self.flush()
        finally:
            self._db.close()


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction on a connection opened with ``isolation_level=None`` (the store's,
    ``GroupWriter``'s and ``runner.batches.BatchBroker``'s; there ``with connection:`` begins none, and each
    statement would be committed on its own): ``BEGIN IMMEDIATE``, then ``COMMIT``, or ``ROLLBACK`` when
    the body or the commit raises. The error raised is always the one that broke the transaction: after a
    disk-full, I/O or interrupt error SQLite may already have rolled back itself, and a ``ROLLBACK`` then
    fails ("cannot rollback - no transaction is active"), which must not hide why the write failed. So the
    rollback is sent only while a transaction is open, and its own failure is noted on the original error.

    ``BEGIN`` is inside the ``try``: an interrupt (Ctrl-C) that arrives once SQLite has begun the
    transaction but before the body runs would otherwise leave it open, and the connection's next write
    (``RunStore.close``'s last group commit) would fail with "cannot start a transaction within a
    transaction". A transaction the caller had already opened is not this helper's to roll back: its
    ``BEGIN`` fails and that error is raised with the caller's transaction untouched."""
    already_open = db.in_transaction
    try:
        db.execute("BEGIN IMMEDIATE")
        yield
        db.execute("COMMIT")
    except BaseException as exc:
        if db.in_transaction and not already_open:
            try:
                db.execute("ROLLBACK")
            except sqlite3.Error as rollback:
                exc.add_note(f"(the rollback failed too: {rollback})")
        raise


_COLS = ", ".join(KEY_COLUMNS)
_UPSERT = (
    f"INSERT INTO units ({_COLS}, status, result, error, error_kind, error_attempts, attempts, "
    "first_started_at, finished_at) "
    f"VALUES ({', '.join('?' for _ in KEY_COLUMNS)}, ?, ?, ?, ?, ?, 1, ?, ?) "
    f"ON CONFLICT ({_COLS}) DO UPDATE SET status = excluded.status, result = excluded.result, "
    "error = excluded.error, error_kind = excluded.error_kind, error_attempts = excluded.error_attempts, "
    "attempts = units.attempts + 1, finished_at = excluded.finished_at"
)


def store_failure_columns(status: Status, failure: Failure) -> tuple[str | None, int | None]:
    """``error_kind`` and ``error_attempts`` of a unit: a failed one's kind ('' for none), NULL when done."""
    if status != "failed":
        return None, None
    return failure.kind or "", failure.attempts


class StoredFailure(NamedTuple):
    """A failed unit as ``RunStore.failed_units`` reads it."""

    key: UnitKey
    error: str | None
    failure: Failure
    runs: int  # invocations that ran it (the units table's ``attempts``)


def _write_group(db: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """One group's rows (key columns, status, result text, error, error kind, error attempts, started,
    finished) and the version bump, inside the caller's transaction. Each result is stored compressed
    (``encode_result``), by whichever process writes the group."""
    at = RESULT_AT
    db.executemany(_UPSERT, [(*row[:at], encode_result(row[at]), *row[at + 1 :]) for row in rows])
    db.execute(
        "INSERT INTO meta (key, value) VALUES ('store_version', '1') ON CONFLICT(key) DO UPDATE "
        "SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)"
    )


class GroupWriter:
    """Commits whole groups of finished units into an existing run.sqlite from a process other than the
    one that owns the ``RunStore``: ``runner.offline``'s forked children store the chunks they compute
    themselves, each chunk in one transaction (the same rows and version bump as ``RunStore.flush``), so
    the main process neither receives their results nor writes them. The connection is opened in the
    calling process on first use (an SQLite connection never crosses a fork)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._pid = 0

    def write(self, rows: list[tuple[Any, ...]]) -> None:
        if self._db is None or self._pid != os.getpid():
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            self._db.execute("PRAGMA synchronous=NORMAL")  # per connection; as the store's own
            self._pid = os.getpid()
        with transaction(self._db):
            _write_group(self._db, rows)


def config_diff(old: dict[str, Any], new: dict[str, Any]) -> str:
    """Readable, key-path diff of two hashed configs (``judges[1].model: 'a' -> 'b'``)."""

    def flatten(value: Any, prefix: str) -> Iterator[tuple[str, Any]]:
        if isinstance(value, dict):
            for k in sorted(value):
                yield from flatten(value[k], f"{prefix}.{k}" if prefix else str(k))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for i, v in enumerate(value):
                yield from flatten(v, f"{prefix}[{i}]")
        else:
            yield prefix, value

    a, b = dict(flatten(old, "")), dict(flatten(new, ""))
    lines = []
    for key in sorted(set(a) | set(b)):
        if key not in b:
            lines.append(f"  - {key}: {a[key]!r} (removed)")
        elif key not in a:
            lines.append(f"  + {key}: {b[key]!r} (added)")
        elif a[key] != b[key]:
            lines.append(f"  ~ {key}: {a[key]!r} -> {b[key]!r}")
    return "\n".join(lines) or "  (no field differs; the hash function or dataset encoding changed)"


# Everything of a run in its folder (``--force-new`` archives them all): the store, the files of its export,
# and what was made from them (its report, the annotators' sample and agreement, people's labels). Not
# the folder's lock (held by this run), its archive, nor files a person put there (a pipeline, records).
RUN_FILES = (
    "run.sqlite",
    "run.sqlite-wal",
    "run.sqlite-shm",
    "meta.json",
    "run_summary.json",
    "predictions.parquet",
    "scores.parquet",
    "judgments.parquet",
    "sampling.json",
    "report",
    "human",
    "labels",
)


def archive_run(rundir: Path) -> Path | None:
    """Move an old run's store, outputs and what was made from them (``RUN_FILES``) to
    RUNDIR/archive/<UTC time>/ (``--force-new``), so nothing of the old run is read as the new one's;
    never delete."""
    names = RUN_FILES
    present = [n for n in names if (rundir / n).exists()]
    if not present:
        return None
    target = rundir / "archive" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    suffix = 0
    while target.exists():
        suffix += 1
        target = target.with_name(f"{target.name.split('.')[0]}.{suffix}")
    target.mkdir(parents=True)
    for name in present:
        shutil.move(str(rundir / name), str(target / name))
    return target


Bound = tuple[Any, ...] | None  # the key columns after ``stage``; None: no bound


class RangeReader:
    """The raw rows (the key columns, status, the result's JSON text not decoded, error, attempts) of one
    stage whose coordinates lie in [lo, hi) (``key_ranges``; (None, None): all of them), in coordinate
    order, read through a read-only connection of the calling process: the export's forked processes read
    their own part of the store (an SQLite connection must not cross a fork). The bounds are row values
    on the primary key's columns, so each read is a range search of its index."""

    def __init__(self, path: Path, stage: Stage) -> None:
        self.path, self.stage = path, stage
        self._db: sqlite3.Connection | None = None
        self._pid = 0

    def __call__(self, bounds: tuple[Bound, Bound]) -> list[tuple[Any, ...]]:
        if self._db is None or self._pid != os.getpid():  # a connection made before a fork is not used
            self._db = connect_reader(Path(self.path), timeout=30.0)
            self._pid = os.getpid()
        cols = ", ".join(KEY_COLUMNS)
        rest = ", ".join(KEY_COLUMNS[1:])
        marks = ", ".join("?" for _ in KEY_COLUMNS[1:])
        where, params = ["stage = ?"], [self.stage]
        for bound, op in zip(bounds, (">=", "<"), strict=True):
            if bound is not None:
                where.append(f"({rest}) {op} ({marks})")
                params.extend(bound)
        rows = self._db.execute(
            f"SELECT {cols}, status, result, error, attempts FROM units WHERE {' AND '.join(where)} "
            f"ORDER BY {cols}",
            params,
        )
        at = RESULT_AT
        return [(*row[:at], decode_result(row[at]), *row[at + 1 :]) for row in rows]

    def close(self) -> None:
        if self._db is not None and self._pid == os.getpid():
            self._db.close()
        self._db = None


def key_ranges(keys: Iterable[UnitKey], per_range: int) -> list[tuple[Bound, Bound]]:
    """[lo, hi) bounds (``RangeReader``) that cut ``keys`` in coordinate order every ``per_range`` keys and
    cover every coordinate (the first range has no lower bound, the last no upper one). Only the records a
    cut falls in are sorted (SQLite's binary text order is Python's str order)."""
    by_record: dict[str, list[UnitKey]] = {}
    for key in keys:
        by_record.setdefault(key.record_id, []).append(key)
    cuts: list[Bound] = []
    seen, next_cut = 0, per_range
    for record_id in sorted(by_record):
        held = by_record[record_id]
        if next_cut < seen + len(held):
            rows = sorted(key.row()[1:] for key in held)
            while next_cut < seen + len(held):
                cuts.append(rows[next_cut - seen])
                next_cut += per_range
        seen += len(held)
    return list(zip([None, *cuts], [*cuts, None], strict=True))
