"""A failed unit's kind and attempts travel as fields (models/failures.py): the store keeps them in columns of
their own, an older store gets the columns on open and its rows are read from their text, and a unit that
raised keeps its model call's attempts without a kind."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agentjudge.models.errors import ModelCallError
from agentjudge.models.failures import NO_FAILURE, Failure
from agentjudge.runner.scheduler import RemoteUnitError, raised
from agentjudge.runner.store import RunStore, UnitKey, now

UNIT = UnitKey("judge", "r-0:easy", "easy", "sim/perfect", 0, "judge")
OTHER = UnitKey("judge", "r-1:easy", "easy", "sim/perfect", 0, "judge")

# the units table as the version before the failure columns wrote it
OLD_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE units (
    stage TEXT NOT NULL, record_id TEXT NOT NULL, difficulty TEXT NOT NULL, generator TEXT NOT NULL,
    generator_trial INTEGER NOT NULL, judge TEXT NOT NULL DEFAULT '', condition TEXT NOT NULL DEFAULT '',
    variant TEXT NOT NULL DEFAULT '', temperature TEXT NOT NULL DEFAULT '', trial INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL, result TEXT, error TEXT, attempts INTEGER NOT NULL DEFAULT 1,
    first_started_at TEXT NOT NULL, finished_at TEXT NOT NULL,
    PRIMARY KEY (stage, record_id, difficulty, generator, generator_trial, judge, condition, variant,
                 temperature, trial)
);
"""


def test_the_store_keeps_a_failures_kind_and_attempts_beside_its_text(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run.sqlite")
    store.finish(UNIT, "failed", None, "timeout after 3 attempt(s): slow", now(), Failure("timeout", 3))
    store.finish(OTHER, "failed", None, "RuntimeError: boom", now(), NO_FAILURE)
    store.close()
    store = RunStore(tmp_path / "run.sqlite")
    failed = store.failed_units()
    store.close()
    assert [(f.key, f.error, f.failure, f.runs) for f in failed] == [
        (UNIT, "timeout after 3 attempt(s): slow", ("timeout", 3), 1),
        (OTHER, "RuntimeError: boom", (None, None), 1),
    ]
    with sqlite3.connect(tmp_path / "run.sqlite") as db:
        rows = db.execute("SELECT error_kind, error_attempts FROM units ORDER BY record_id").fetchall()
    assert rows == [("timeout", 3), ("", None)]  # '' = a failure that names no kind (not an older row)


def test_an_older_store_gets_the_columns_and_its_rows_are_read_from_their_text(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(OLD_SCHEMA)
        db.execute(
            "INSERT INTO units VALUES ('judge', 'r-0:easy', 'easy', 'sim/perfect', 0, 'judge', '', '', '', "
            "0, "
            "'failed', NULL, 'call_failed[rate_limit]: rate_limit after 5 attempt(s): 429', 2, 'a', 'b')"
        )
    store = RunStore(path)
    (old,) = store.failed_units()
    assert (old.failure, old.runs) == (("rate_limit", 5), 2)
    store.finish(UNIT, "failed", None, "auth after 1 attempt(s): 401", now(), Failure("auth", 1))
    store.flush()
    (again,) = store.failed_units()
    store.close()
    assert (again.failure, again.runs) == (("auth", 1), 3)  # the fields of its new run; one more run


def test_a_unit_that_raised_keeps_its_calls_attempts_and_no_kind() -> None:
    outcome = raised(ModelCallError("timeout", 4, "slow"))
    assert (outcome.status, outcome.kind, outcome.attempts) == ("failed", None, 4)
    assert outcome.error == "ModelCallError: timeout after 4 attempt(s): slow"
    remote = raised(RemoteUnitError("ModelCallError: timeout after 2 attempt(s): slow", 2))
    assert (remote.error, remote.kind, remote.attempts) == (
        "ModelCallError: timeout after 2 attempt(s): slow",
        None,
        2,
    )
    assert raised(ValueError("bad")).failure == (None, None)
