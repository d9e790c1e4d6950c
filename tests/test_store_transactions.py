"""A failed write transaction raises the error that broke it (``store.transaction``, shared by the store's
group commits and ``GroupWriter``): after an interrupt, disk-full or I/O error SQLite may have rolled the
transaction back itself, and the ``ROLLBACK`` that followed then failed with "cannot rollback - no
transaction is active", which was the error the user saw instead of the real one. An interrupt that
lands just after ``BEGIN`` leaves no transaction open either (the next write used to fail with "cannot start
a transaction within a transaction")."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, cast

import pytest

from agentjudge.runner.store import GroupWriter, RunStore, UnitKey, now, transaction


def _unit(i: int) -> UnitKey:
    return UnitKey("predict", f"rec-{i:04d}", "easy", "sim/perfect", 0)


def _interrupt_the_next_insert(db: sqlite3.Connection) -> None:
    """SQLite aborts the next insert of units with "interrupted" and rolls the whole transaction back
    itself (as it may after SQLITE_FULL or SQLITE_IOERR)."""
    state = {"statement": "", "fired": False}

    def started(sql: str) -> None:
        state["statement"] = sql

    def interrupt() -> int:
        if state["fired"] or not str(state["statement"]).startswith("INSERT INTO units"):
            return 0
        state["fired"] = True
        return 1

    db.set_trace_callback(started)
    db.set_progress_handler(interrupt, 1)


def test_a_group_writer_raises_the_error_that_broke_its_write(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    RunStore(path).close()
    writer = GroupWriter(path)
    writer.write([])  # opens the writer's connection
    assert writer._db is not None
    _interrupt_the_next_insert(writer._db)
    row = (*_unit(1).row(), "done", "{}", None, None, None, now(), now())
    with pytest.raises(sqlite3.OperationalError) as raised:
        writer.write([row])
    assert str(raised.value) == "interrupted"  # not "cannot rollback - no transaction is active"
    writer.write([row])  # the connection is usable again: no transaction was left open
    store = RunStore(path)
    assert store.counts("predict") == {"done": 1}
    store.close()


def test_a_store_flush_raises_the_error_that_broke_its_commit(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run.sqlite")
    store.finish_encoded(_unit(1), "done", "{}", None, now(), now())  # buffered, not yet written
    _interrupt_the_next_insert(store._db)
    with pytest.raises(sqlite3.OperationalError) as raised:
        store.flush()
    assert str(raised.value) == "interrupted"
    store.finish(_unit(2), "done", {"x": 2}, None, now())
    store.flush()
    assert store.counts("predict") == {"done": 1}  # the interrupted group was rolled back, whole
    store.close()


class _RollbackFails(sqlite3.Connection):
    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql == "ROLLBACK":
            raise sqlite3.OperationalError("disk I/O error")
        return super().execute(sql, *args)


def test_a_rollback_that_fails_is_noted_on_the_original_error(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "x.sqlite", isolation_level=None, factory=_RollbackFails)
    db.execute("CREATE TABLE t (a)")
    with pytest.raises(ValueError, match="the row is wrong") as raised, transaction(db):
        db.execute("INSERT INTO t VALUES (1)")
        raise ValueError("the row is wrong")
    assert raised.value.__notes__ == ["(the rollback failed too: disk I/O error)"]
    db.close()


class _InterruptedBegin:
    """A connection whose ``BEGIN`` is interrupted as it returns (a Ctrl-C delivered just after SQLite
    began the transaction, before the body of ``transaction`` runs): the real statement runs, then
    KeyboardInterrupt is raised."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    @property
    def in_transaction(self) -> bool:
        return self.db.in_transaction

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        cursor = self.db.execute(sql, *args)
        if sql.startswith("BEGIN"):
            raise KeyboardInterrupt
        return cursor


def test_an_interrupt_as_begin_returns_leaves_no_transaction_open(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "x.sqlite", isolation_level=None)
    db.execute("CREATE TABLE t (a)")
    body_ran = False
    with pytest.raises(KeyboardInterrupt), transaction(cast(sqlite3.Connection, _InterruptedBegin(db))):
        body_ran = True
    assert not body_ran and not db.in_transaction
    with transaction(db):  # the connection can begin (and commit) again
        db.execute("INSERT INTO t VALUES (1)")
    assert db.execute("SELECT a FROM t").fetchall() == [(1,)]
    db.close()


def test_a_transaction_the_caller_opened_is_not_rolled_back_by_a_nested_one(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "x.sqlite", isolation_level=None)
    db.execute("CREATE TABLE t (a)")
    db.execute("BEGIN")
    db.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(sqlite3.OperationalError, match="within a transaction"), transaction(db):
        pytest.fail("the body ran although BEGIN failed")
    assert db.in_transaction  # the caller's transaction is still open, its insert with it
    db.execute("COMMIT")
    assert db.execute("SELECT a FROM t").fetchall() == [(1,)]
    db.close()


class _BeginInterruptedOnce(sqlite3.Connection):
    """The store's connection, its next ``BEGIN`` interrupted as it returns (as ``_InterruptedBegin``)."""

    interrupt = True

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        cursor = super().execute(sql, *args)
        if sql.startswith("BEGIN") and self.interrupt:
            self.interrupt = False
            raise KeyboardInterrupt
        return cursor


def test_a_store_closed_after_ctrl_c_during_a_group_commit_still_commits_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    store = RunStore(path)
    store._db.close()
    store._db = sqlite3.connect(path, isolation_level=None, factory=_BeginInterruptedOnce)
    store.finish_encoded(_unit(1), "done", "{}", None, now(), now())
    with pytest.raises(KeyboardInterrupt):
        store.flush()  # its group is lost, as any group open at a Ctrl-C (a re-run runs it again)
    store.finish_encoded(_unit(2), "done", "{}", None, now(), now())
    store.close()  # the runner's ``finally``: commits what is buffered
    again = RunStore(path)
    assert [row.key for row in again.iter_units("predict")] == [_unit(2)]
    again.close()
