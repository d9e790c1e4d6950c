"""Content-addressed SQLite cache of successful model answers.

Why: a benchmark grid re-asks the same questions (resumed runs, re-scored variants, a second analyst);
paying twice for an identical request is waste, and reproducing a run offline needs the answers on disk.

The key is the sha256 of the canonical JSON of everything that changes the answer — model, api_base,
messages, tools, temperature, max_tokens, extra params, drop_params, sample_index — and never the API key
(see ``cache_key``). ``sample_index`` keeps trial 2 of a temperature-0.7 judge from reusing trial 1.
Only successful completions are stored. WAL mode and a busy timeout make it safe for several threads and
processes writing at once; each thread (and each forked process) gets its own connection.

An answer is committed as soon as it is stored (a killed run never pays for it again). The hit counts that
``agentjudge cache stats`` shows are statistics: a hit is counted in memory and the counts are written in one
transaction per group (``HIT_GROUP`` keys or ``HIT_INTERVAL_S``, whichever comes first, and when the cache
is closed, its stats are read, a worker process ends or the process exits), instead of a write transaction
per hit (~70 µs each, most of a hit's cost). A killed process loses the counts of its last group.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
HIT_GROUP = 256  # distinct keys whose hits are counted in memory before they are written together
HIT_INTERVAL_S = 1.0  # ... or this long after the group's first hit, whichever comes first
_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    created REAL NOT NULL,
    response TEXT NOT NULL,
    hits INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS calls_model ON calls(model);
"""


def default_cache_path() -> Path:
    """``$AGENTJUDGE_CACHE`` or ``~/.cache/agentjudge/calls.sqlite``."""
    env = os.environ.get("AGENTJUDGE_CACHE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "agentjudge" / "calls.sqlite"


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, non-ASCII kept: equal requests give equal bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def cache_key(request: dict[str, Any]) -> str:
    """sha256 of the canonical request. Callers pass only answer-changing fields — never credentials."""
    return hashlib.sha256(_canonical_request({"v": SCHEMA_VERSION, **request}).encode()).hexdigest()


# The JSON string escaping of ``json.dumps(..., ensure_ascii=False)`` (the C one when available).
_ESCAPE = json.encoder.encode_basestring
# Leading texts that many requests' messages begin with (``share_prefix``) -> their escaped form, unquoted.
_PREFIXES: dict[str, str] = {}
_PREFIXES_MAX = 64
_PREFIX_MIN_CHARS = 256


def share_prefix(text: str) -> None:
    """Note that many messages will begin with ``text`` (a judge prompt's system text, a record's tools and
    query): ``cache_key`` then escapes it once, not once per request.

    Escaping a ~16 K character prompt for the key's canonical JSON was the largest single cost of a judge
    call in the runner's own code (~85 µs of ~130 µs for the key). JSON escapes each character on its own,
    so the escaping of ``prefix + rest`` is the escaping of ``prefix`` followed by that of ``rest``: the key
    is byte for byte what ``canonical_json`` of the whole request gives. The most recent
    ``_PREFIXES_MAX`` texts are kept (a run moves from record to record)."""
    if len(text) < _PREFIX_MIN_CHARS:
        return
    escaped = _PREFIXES.pop(text, None)
    if escaped is None:
        escaped = _ESCAPE(text)[1:-1]
        while len(_PREFIXES) >= _PREFIXES_MAX:
            _PREFIXES.pop(next(iter(_PREFIXES)), None)
    _PREFIXES[text] = escaped  # (again) the most recent


def _escaped(text: str) -> str:
    """``_ESCAPE(text)``, from a shared prefix's escaping when ``text`` begins with one (newest first)."""
    if len(text) >= _PREFIX_MIN_CHARS:
        for prefix in reversed(list(_PREFIXES)):
            if text.startswith(prefix):
                head = _PREFIXES.get(prefix)
                if head is not None:
                    return '"' + head + _ESCAPE(text[len(prefix) :])[1:]
    return _ESCAPE(text)


def _canonical_request(request: dict[str, Any]) -> str:
    """``canonical_json(request)``, with the text of each chat message escaped through ``_escaped``.

    Written out by hand only where the result is certain to be the same bytes: string keys (sorted as
    ``sort_keys`` sorts them), and messages that are flat dicts of strings; anything else (a message whose
    content is a list of blocks, say) goes through ``canonical_json`` itself."""
    messages = request.get("messages")
    if type(messages) is not list or not all(type(key) is str for key in request):
        return canonical_json(request)
    # the other fields in two dumps, those sorted before "messages" and those after, joined around it
    before = canonical_json({k: v for k, v in request.items() if k < "messages"})[:-1]
    after = canonical_json({k: v for k, v in request.items() if k > "messages"})[1:]
    text = '"messages":[' + ",".join(map(_canonical_message, messages)) + "]"
    return before + ("," if len(before) > 1 else "") + text + ("," if len(after) > 1 else "") + after


def _canonical_message(message: Any) -> str:
    if type(message) is not dict or not all(
        type(key) is str and type(value) is str for key, value in message.items()
    ):
        return canonical_json(message)
    return "{" + ",".join(_ESCAPE(key) + ":" + _escaped(message[key]) for key in sorted(message)) + "}"


_INIT_LOCK = threading.Lock()


class _Hits:
    """Hit counts of one process not yet written (a forked child starts its own: its parent writes these)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.counts: dict[str, int] = {}
        self.since = 0.0  # monotonic time of the group's first hit
        self.lock = threading.Lock()

    def take(self) -> list[tuple[int, str]]:
        """The counts to write as (hits, key) rows, leaving an empty group; none in a process not ours."""
        with self.lock:
            if self.pid != os.getpid() or not self.counts:
                return []
            rows = [(n, key) for key, n in self.counts.items()]
            self.counts = {}
            return rows


def _add_hits(conn: sqlite3.Connection, rows: list[tuple[int, str]]) -> None:
    """Add (hits, key) rows to the counts in one transaction (``conn`` in autocommit mode, as the cache's)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.executemany("UPDATE calls SET hits = hits + ? WHERE key = ?", rows)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _write_hits_at_exit(path: Path, hits: _Hits) -> None:
    """A cache object's last counts, when it is collected or the interpreter exits (``weakref.finalize``):
    through a connection of its own (the object is gone), and never into a file that no longer exists."""
    rows = hits.take()
    if not rows or not path.exists():
        return
    try:
        conn = sqlite3.connect(path, timeout=30.0, isolation_level=None)
        try:
            _add_hits(conn, rows)
        finally:
            conn.close()
    except sqlite3.Error as exc:  # statistics only: said, not raised at exit
        print(f"agentjudge: {len(rows)} cache hit counts not written to {path}: {exc}", file=sys.stderr)


def cache_problem(path: Path | None = None) -> str | None:
    """Why the call cache at ``path`` (default: ``default_cache_path``) cannot be used, or None; checked by
    the preflight of every verb that calls a model, so a folder, a file that is not a cache, or a place
    that cannot be written is named before any call (not as "unable to open database file" on every
    unit). Creates nothing: an absent cache whose folder can be made is fine."""
    target = Path(path) if path is not None else default_cache_path()
    if target.is_dir():
        return f"{target}: is a folder, not a cache file (name a file, e.g. {target / 'calls.sqlite'})"
    probe = target.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        return f"{target}: {probe} is a file, not a folder"
    if not target.exists():
        writable = os.access(probe, os.W_OK | os.X_OK)
        return None if writable else f"{target}: folder {probe} cannot be written"
    if not os.access(target, os.R_OK | os.W_OK) or not os.access(target.parent, os.W_OK | os.X_OK):
        return f"{target}: cannot be written (the cache stores every answer as it arrives)"
    try:
        with contextlib.closing(sqlite3.connect(f"{target.resolve().as_uri()}?mode=ro", uri=True)) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.Error as exc:
        return f"{target}: not a call cache ({exc}); move it away or name another file"
    if tables and "calls" not in tables:
        return f"{target}: an SQLite file but not a call cache (no table calls); name another file"
    return None


class CallCache:
    """get/put of JSON answers by key. Cheap to construct; the file is created on first use."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self._local = threading.local()
        self._hits = self._new_hits()

    def _new_hits(self) -> _Hits:
        hits = _Hits()
        weakref.finalize(self, _write_hits_at_exit, self.path, hits)
        return hits

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and getattr(self._local, "pid", None) == os.getpid():
            return conn
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout=30000")
        # Switching to WAL and creating the schema need the database briefly to themselves, and SQLite may
        # answer "database is locked" at once instead of waiting while other connections open the same file:
        # serialise set-up within the process and retry it across processes.
        with _INIT_LOCK:
            for attempt in range(50):
                try:
                    conn.execute("PRAGMA journal_mode=WAL")
                    conn.execute("PRAGMA synchronous=NORMAL")
                    conn.executescript(_SCHEMA)
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or attempt == 49:
                        raise
                    time.sleep(0.02 * (attempt + 1))
        self._local.conn = conn
        self._local.pid = os.getpid()
        return conn

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored answer, or None. Counts the hit (for ``agentjudge cache stats``)."""
        conn = self._conn()
        row = conn.execute("SELECT response FROM calls WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        self._count_hit(key)
        value: dict[str, Any] = json.loads(row[0])
        return value

    def _count_hit(self, key: str) -> None:
        hits = self._hits
        if hits.pid != os.getpid():  # a forked child: its parent's counts are the parent's to write
            hits = self._hits = self._new_hits()
        with hits.lock:
            if not hits.counts:
                hits.since = time.monotonic()
            hits.counts[key] = hits.counts.get(key, 0) + 1
            due = len(hits.counts) >= HIT_GROUP or time.monotonic() - hits.since >= HIT_INTERVAL_S
        if due:
            self.flush_hits()

    def flush_hits(self) -> None:
        """Write this process's counted hits now, in one transaction (see the module docstring)."""
        rows = self._hits.take()
        if rows:
            _add_hits(self._conn(), rows)

    def put(self, key: str, model: str, response: dict[str, Any] | str) -> None:
        """Store (or overwrite) one successful answer: a dict, or its JSON text as the client has it."""
        text = response if isinstance(response, str) else canonical_json(response)
        # an upsert, not INSERT OR REPLACE with the hits read back: the same row (hits kept), without a
        # delete and re-insert of the row and its index entries (~10 µs of the ~60 µs commit per answer)
        self._conn().execute(
            "INSERT INTO calls(key, model, created, response) VALUES (?, ?, ?, ?) ON CONFLICT(key) DO "
            "UPDATE SET model = excluded.model, created = excluded.created, response = excluded.response",
            (key, model, time.time(), text),
        )

    def __len__(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def stats(self) -> dict[str, Any]:
        """Entries, bytes on disk and per-model entry/hit counts."""
        self.flush_hits()
        conn = self._conn()
        per_model = {
            model: {"entries": int(n), "hits": int(h or 0)}
            for model, n, h in conn.execute(
                "SELECT model, COUNT(*), SUM(hits) FROM calls GROUP BY model ORDER BY model"
            )
        }
        size = sum(p.stat().st_size for p in self._files() if p.exists())
        return {
            "path": str(self.path),
            "entries": sum(v["entries"] for v in per_model.values()),
            "hits": sum(v["hits"] for v in per_model.values()),
            "size_bytes": size,
            "per_model": per_model,
        }

    def clear(self, model: str | None = None) -> int:
        """Delete all entries (or one model's); returns how many were deleted."""
        self.flush_hits()
        conn = self._conn()
        if model is None:
            deleted = conn.execute("DELETE FROM calls").rowcount
        else:
            deleted = conn.execute("DELETE FROM calls WHERE model = ?", (model,)).rowcount
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        if model is None:
            conn.execute("VACUUM")
        return int(deleted)

    def close(self) -> None:
        self.flush_hits()
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _files(self) -> list[Path]:
        return [
            self.path,
            self.path.with_name(self.path.name + "-wal"),
            self.path.with_name(self.path.name + "-shm"),
        ]
