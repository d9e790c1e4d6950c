"""What a resumed run reuses instead of recomputing: programmatic scores and Gate 1 findings, in run.sqlite.

Why: re-running a finished grid to retry a few failed units used to score every prediction again (a fresh
environment per prediction, the calls executed on it) and run Gate 1 over every record again: most of the
seconds such a retry took. Both are pure functions of inputs that rarely change between invocations, so
the first invocation keeps them in two tables of the run's store, ``score_cache`` and ``gate1_cache``.

A cached value is used only when everything it was computed from is unchanged, and never trusted otherwise:
- ``context``: the sha256 of the dataset file the records were read from, the scorer's switch
  (``lenient``; a row holds the scoring modes it was computed for) and ``code_fingerprint()`` (every
  ``.py`` and ``.yaml`` file of the package, the package and Python versions, and the versions of the
  libraries the scorer and the gates call). Another dataset, a changed scorer or an upgrade computes
  everything again.
- a score row also carries the sha256 of the prediction it scores: a prediction run again (a retried
  unit) with another answer is scored again.
- every row carries a sha256 over its key, context and payload; a row that fails it, does not parse or
  does not validate is ignored and recomputed (and then replaced). The checksum catches damage, not a
  deliberate forgery that recomputes it.
A run that finds nothing usable computes exactly what it computed before, and a cached score's JSON gives
back the computed ``Score`` exactly (finite floats round-trip bit for bit; a score holding a NaN, which
JSON cannot carry, is never cached), so the exported files are byte-identical with or without the cache
(``tests/test_resume_cache.py``). Writing the cache is best effort: a store that cannot take it (locked
by another process for more than ``WRITE_WAIT_S``, read-only) costs the speed-up of the next run and at
most that wait per write, nothing else (a lock is said once on stderr).

Gate 1's findings are read before the store is opened (``agentjudge run`` refuses a failing dataset
before it writes anything) and written after (``save_gate1``), so a refused dataset leaves no trace.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from agentjudge import __version__
from agentjudge.rundir.units import connect_reader
from agentjudge.runner.store import UnitKey, transaction
from agentjudge.runner.work import Dataset, Gate1Check, ScoreKey, compute_scores
from agentjudge.types import Prediction, Record, Score, ScoringMode

# what scoring and Gate 1 call besides the package itself (a new release may validate or order differently)
# (jsonschema's format checks depend on which optional format packages are installed: Gate 1 also keys
# on the checker's format list, see gate1_check)
_LIBRARIES = (
    "pydantic",
    "pydantic-core",
    "pyyaml",
    "jsonschema",
    "jsonschema-specifications",
    "referencing",
    "networkx",
)

_TABLES = """
CREATE TABLE IF NOT EXISTS score_cache (
    record_id TEXT NOT NULL,
    generator TEXT NOT NULL,
    generator_trial INTEGER NOT NULL,
    context TEXT NOT NULL,
    prediction TEXT NOT NULL,
    scores TEXT NOT NULL,
    digest TEXT NOT NULL,
    PRIMARY KEY (record_id, generator, generator_trial)
);
CREATE TABLE IF NOT EXISTS gate1_cache (
    context TEXT PRIMARY KEY,
    records TEXT NOT NULL,
    failing TEXT NOT NULL,
    digest TEXT NOT NULL
);
"""


def _sha(*parts: Any) -> str:
    """sha256 over the parts, each length-prefixed (no two part lists share a byte string)."""
    encoded = [str(part).encode("utf-8") for part in parts]
    return hashlib.sha256(b"".join(b"%d:%b" % (len(data), data) for data in encoded)).hexdigest()


@functools.cache
def code_fingerprint() -> str:
    """sha256 of the code a cached score or finding came from: every ``.py``/``.yaml`` file of the package
    (~100 files, ~4 ms), the package and Python versions and the libraries' versions. Conservative on
    purpose: any edit to the package recomputes the caches once."""
    from importlib.metadata import PackageNotFoundError, version

    def lib_version(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "absent"

    root = Path(__file__).resolve().parent.parent
    parts: list[Any] = [__version__, sys.version, *(f"{n}=={lib_version(n)}" for n in _LIBRARIES)]
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".yaml") and path.is_file():
            parts += [path.relative_to(root).as_posix(), hashlib.sha256(path.read_bytes()).hexdigest()]
    return _sha(*parts)


def code_unchanged() -> bool:
    """Whether the package's files are still those ``code_fingerprint`` saw when the run started: the
    scorer may first be imported hours later (after a long predict stage), and an edit, pull or branch
    switch in between must not file new code's results under the old fingerprint (~4 ms)."""
    import agentjudge.dataset.world  # noqa: F401  (the code the results come from is loaded now)
    import agentjudge.scoring.scorer  # noqa: F401

    return code_fingerprint.__wrapped__() == code_fingerprint()


# a cache write is best effort: it waits this long for a store another process holds locked, then skips
WRITE_WAIT_S = 0.5
_said_locked = False  # the skip is said once per process


def _connect(store: Path) -> sqlite3.Connection:
    """The run's store for writing the caches; never creates one (the runner's ``RunStore`` does). Each
    statement waits at most ``WRITE_WAIT_S`` for a lock (not the runner's 30 s): a skipped write costs
    the next run's speed-up, a long wait would cost this run's time."""
    db = sqlite3.connect(
        f"{store.resolve().as_uri()}?mode=rw", uri=True, isolation_level=None, timeout=WRITE_WAIT_S
    )
    try:
        db.executescript(_TABLES)
    except sqlite3.Error:
        db.close()
        raise
    return db


def _skipped(store: Path, what: str, exc: sqlite3.Error) -> None:
    """Say once per process that a cache write was skipped because the store was busy (another process
    holds it locked); other failures (a read-only store) are silent, as before: nothing is lost."""
    global _said_locked
    if _said_locked or not ("locked" in str(exc) or "busy" in str(exc)):
        return
    _said_locked = True
    sys.stderr.write(
        f"note: {store} is locked by another process; {what} not kept for the next run (it will compute "
        "them again)\n"
    )


def _read_only(store: Path) -> sqlite3.Connection | None:
    """The store opened read-only, or None when it does not exist (nothing is created)."""
    if not store.is_file():
        return None
    try:
        return connect_reader(store)  # leaves no -wal/-shm behind (store.connect_reader)
    except sqlite3.Error:
        return None


# --- scores ---------------------------------------------------------------------------------------------


def score_context(dataset_sha256: str, lenient: bool) -> str:
    return _sha("scores", dataset_sha256, f"lenient={lenient}", code_fingerprint())


def prediction_digest(prediction: Prediction) -> str:
    """sha256 of the prediction as the store writes it (compact JSON of its dump without defaults, which
    reads back as the same prediction): everything it holds, what scoring reads and more."""
    dump = prediction.model_dump(mode="json", exclude_defaults=True)
    return stored_digest(json.dumps(dump, separators=(",", ":")))


def stored_digest(text: str) -> str:
    """``prediction_digest`` of a prediction read from the store, from the text it was read from (the same
    value when the store wrote that text, as it does; another text of the same prediction would only miss
    the cache): the prediction is not written out again (~25 µs each, a serial 1.5 s on a paper grid)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# how the predictions the cache does not hold are scored: (dataset, predictions, modes, lenient) -> scores
ScoreFn = Callable[
    [Dataset, dict[UnitKey, Prediction], list[ScoringMode], bool], dict[ScoreKey, dict[ScoringMode, Score]]
]

# one prediction's scores by mode, as JSON (pydantic's compiled codec: ~3x faster than json + model_validate)
_SCORES = TypeAdapter(dict[ScoringMode, Score])


def cached_scores(
    store: Path,
    data: Dataset,
    predictions: dict[UnitKey, Prediction],
    modes: list[ScoringMode],
    lenient: bool,
    on_scored: Callable[[], None] | None = None,
    compute: ScoreFn | None = None,
    digests: dict[UnitKey, str] | None = None,
) -> dict[ScoreKey, dict[ScoringMode, Score]]:
    """``work.compute_scores`` with the store's ``score_cache``: predictions whose every mode is cached
    under the same context and prediction digest are read, the rest computed and written back. The
    result (content and order) is what ``compute_scores`` returns. Records not read from a file
    (``data.sha256`` empty) are only computed. ``compute`` scores the rest (default ``compute_scores``,
    which calls ``on_scored`` per prediction; the grid passes its chunked, multi-process scorer, which
    reports progress itself); ``on_scored`` is also called once per prediction read from the cache.
    ``digests``: the predictions' ``stored_digest`` when the caller read them from the store (the others
    get their ``prediction_digest``)."""

    def run(missing: dict[UnitKey, Prediction]) -> dict[ScoreKey, dict[ScoringMode, Score]]:
        if compute is not None:
            return compute(data, missing, modes, lenient)
        return compute_scores(data, missing, modes, lenient, on_scored)

    if not data.sha256 or not code_unchanged():
        return run(predictions)
    context = score_context(data.sha256, lenient)
    known = digests or {}
    by_score = {
        (k.record_id, k.generator, k.generator_trial): known.get(k) or prediction_digest(p)
        for k, p in predictions.items()
    }
    hits = _load_scores(store, context, by_score, modes)
    missing = {
        k: p for k, p in predictions.items() if (k.record_id, k.generator, k.generator_trial) not in hits
    }
    fresh = run(missing)
    if on_scored is not None:
        for _ in hits:
            on_scored()
    if fresh:
        _save_scores(store, context, by_score, fresh)
    out: dict[ScoreKey, dict[ScoringMode, Score]] = {}
    for key in sorted(predictions):
        score_key = (key.record_id, key.generator, key.generator_trial)
        if score_key in hits or score_key in fresh:  # a record without GT has none (compute_scores)
            out[score_key] = hits[score_key] if score_key in hits else fresh[score_key]
    return out


def _row_digest(key: ScoreKey, context: str, prediction: str, scores: str) -> str:
    return _sha(*key, context, prediction, scores)


def _load_scores(
    store: Path, context: str, digests: dict[ScoreKey, str], modes: list[ScoringMode]
) -> dict[ScoreKey, dict[ScoringMode, Score]]:
    db = _read_only(store)
    if db is None:
        return {}
    try:
        rows = db.execute(
            "SELECT record_id, generator, generator_trial, prediction, scores, digest FROM score_cache "
            "WHERE context = ?",
            (context,),
        ).fetchall()
    except sqlite3.Error:  # no table yet (a store made before this cache), or unreadable
        return {}
    finally:
        db.close()
    found: dict[ScoreKey, dict[ScoringMode, Score]] = {}
    for record_id, generator, trial, pred_digest, text, digest in rows:
        key = (record_id, generator, trial)
        if digests.get(key) != pred_digest or digest != _row_digest(key, context, pred_digest, text):
            continue
        try:
            by_mode = _SCORES.validate_json(text)
        except ValueError:  # pydantic's ValidationError (bad JSON included) is a ValueError
            continue
        # every mode of this run, each the score of this prediction (in the order compute_scores gives)
        if all(m in by_mode and _identity(by_mode[m]) == (*key, m) for m in modes):
            found[key] = {m: by_mode[m] for m in modes}
    return found


# JSON (pydantic's codec) gives back every finite float bit for bit (checked on 600,000 random doubles),
# but writes NaN and infinities as null: a score holding one is not cached.
_FLOAT_FIELDS = tuple(n for n, f in Score.model_fields.items() if f.annotation in (float, float | None))


def _json_exact(score: Score) -> bool:
    values = (getattr(score, name) for name in _FLOAT_FIELDS)
    return all(v is None or math.isfinite(v) for v in values)


def _identity(score: Score) -> tuple[str, str, int, str]:
    return score.record_id, score.generator, score.trial, score.scoring_mode


def _save_scores(
    store: Path,
    context: str,
    digests: dict[ScoreKey, str],
    scores: dict[ScoreKey, dict[ScoringMode, Score]],
) -> None:
    rows = []
    for key, by_mode in scores.items():
        if not all(_json_exact(score) for score in by_mode.values()):
            continue
        text = _SCORES.dump_json(by_mode).decode("utf-8")
        rows.append((*key, context, digests[key], text, _row_digest(key, context, digests[key], text)))
    try:
        db = _connect(store)
        try:
            with transaction(db):
                db.executemany(
                    "INSERT OR REPLACE INTO score_cache (record_id, generator, generator_trial, context, "
                    "prediction, scores, digest) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
        finally:
            db.close()
    except sqlite3.Error as exc:  # best effort: the next run scores these again
        _skipped(store, "scores", exc)


# --- Gate 1 ---------------------------------------------------------------------------------------------


def gate1_check(records: list[Record], dataset_sha256: str, store: Path | None) -> Gate1Check:
    """Gate 1's failures for ``records``, read from a file whose sha256 is ``dataset_sha256``: from the
    store's ``gate1_cache`` when it holds them for that file, this code and exactly these records, else
    computed."""
    from jsonschema import Draft7Validator

    formats = sorted(Draft7Validator.FORMAT_CHECKER.checkers)  # grows with optional format packages
    context = _sha("gate1", dataset_sha256, code_fingerprint(), *formats)
    ids = [r.id for r in records]
    cached = _load_gate1(store, context, ids) if store is not None else None
    if cached is not None:
        return Gate1Check(cached, ids, context, cached=True)
    from agentjudge.dataset.validate import gate1_failures

    return Gate1Check(gate1_failures(records), ids, context, cached=False)


def _load_gate1(store: Path, context: str, ids: list[str]) -> dict[str, list[str]] | None:
    db = _read_only(store)
    if db is None:
        return None
    try:
        row = db.execute(
            "SELECT records, failing, digest FROM gate1_cache WHERE context = ?", (context,)
        ).fetchone()
    except sqlite3.Error:
        return None
    finally:
        db.close()
    if row is None or row[2] != _sha(context, row[0], row[1]):
        return None
    try:
        records, failing = json.loads(row[0]), json.loads(row[1])
    except ValueError:
        return None
    if records != ids or not _is_findings(failing) or not set(failing) <= set(ids):
        return None
    return {rid: failing[rid] for rid in ids if rid in failing}  # file order, as gate1_failures gives it


def _is_findings(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(v, list) and v and all(isinstance(f, str) for f in v) for v in value.values()
    )


def save_gate1(store: Path, check: Gate1Check) -> None:
    """Keep a computed Gate 1 result in the store (one row: the current dataset and code)."""
    if check.cached or not code_unchanged():
        return
    records = json.dumps(check.record_ids)
    failing = json.dumps(check.failing)
    try:
        db = _connect(store)
        try:
            with transaction(db):
                db.execute("DELETE FROM gate1_cache")
                db.execute(
                    "INSERT INTO gate1_cache (context, records, failing, digest) VALUES (?, ?, ?, ?)",
                    (check.context, records, failing, _sha(check.context, records, failing)),
                )
        finally:
            db.close()
    except sqlite3.Error as exc:  # best effort: the next run checks the records again
        _skipped(store, "Gate 1 findings", exc)
