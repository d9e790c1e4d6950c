"""How the resume caches are written into run.sqlite (``runner/resume_cache.py``): by column name, so a
store whose cache tables have their columns in another order or one more column still takes them; and
best effort, so a store another process holds locked costs a short wait and one note, not 30 s a write."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from test_resume_cache import _store_with_predictions

from agentjudge.runner import resume_cache
from agentjudge.runner.work import compute_scores

BOTH: list[Any] = ["paper", "strict"]


def _scored_store(tmp_path: Path) -> tuple[Any, Any, Any, Any, Any]:
    """A run store with predictions, their scores computed directly, the scoring context and digests."""
    store, _, data, predictions = _store_with_predictions(tmp_path)
    truth = compute_scores(data, predictions, BOTH, False)
    context = resume_cache.score_context(data.sha256, False)
    digests = {
        (k.record_id, k.generator, k.generator_trial): resume_cache.prediction_digest(p)
        for k, p in predictions.items()
    }
    return store, data, truth, context, digests


def test_cache_rows_are_written_by_column_name(tmp_path: Path) -> None:
    store, data, truth, context, digests = _scored_store(tmp_path)
    with sqlite3.connect(store) as db:  # a store whose tables were made otherwise (another version)
        db.executescript(
            "DROP TABLE score_cache; DROP TABLE gate1_cache;"
            "CREATE TABLE score_cache (digest TEXT NOT NULL, scores TEXT NOT NULL, prediction TEXT NOT NULL,"
            " context TEXT NOT NULL, generator_trial INTEGER NOT NULL, generator TEXT NOT NULL,"
            " record_id TEXT NOT NULL, note TEXT DEFAULT 'added later',"
            " PRIMARY KEY (record_id, generator, generator_trial));"
            "CREATE TABLE gate1_cache (digest TEXT NOT NULL, failing TEXT NOT NULL, records TEXT NOT NULL,"
            " context TEXT PRIMARY KEY, note TEXT DEFAULT 'added later');"
        )
    resume_cache._save_scores(store, context, digests, truth)
    assert resume_cache._load_scores(store, context, digests, BOTH) == truth
    check = resume_cache.gate1_check(data.records, data.sha256, store)
    assert not check.cached
    resume_cache.save_gate1(store, check)
    again = resume_cache.gate1_check(data.records, data.sha256, store)
    assert again.cached and again.failing == check.failing


def test_a_store_locked_by_another_process_skips_the_write_soon_and_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store, data, truth, context, digests = _scored_store(tmp_path)
    with sqlite3.connect(store) as db:
        db.execute("DELETE FROM score_cache")
    monkeypatch.setattr(resume_cache, "_said_locked", False, raising=False)  # fresh process
    capsys.readouterr()
    holder = sqlite3.connect(store, isolation_level=None)  # another writer, mid-transaction
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        resume_cache._save_scores(store, context, digests, truth)
        resume_cache.save_gate1(store, resume_cache.gate1_check(data.records, data.sha256, None))
        waited = time.monotonic() - started
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    # the runner's own connections wait 30 s for a lock; a best-effort write gives up after WRITE_WAIT_S
    # (two writes here: well under the 30 s a single one used to wait)
    assert waited < 10.0
    assert resume_cache.WRITE_WAIT_S <= 1.0
    err = capsys.readouterr().err
    assert err.count("is locked by another process") == 1, err  # said once, for the first skipped write
    assert f"{store} is locked by another process; scores not kept for the next run" in err
    assert resume_cache._load_scores(store, context, digests, BOTH) == {}  # skipped, nothing half-written
    resume_cache._save_scores(store, context, digests, truth)  # the lock released: written again
    assert resume_cache._load_scores(store, context, digests, BOTH) == truth
