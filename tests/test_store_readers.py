"""Reading a run's store without writing it (``store.connect_reader``): no ``-wal``/``-shm`` files are left
behind by a no-op re-run, a dry run, ``batches``, the export's range reader or the resume caches' reads;
a reader cannot write; and it reads what a writer still holding the store has committed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from test_runner import write_pipeline

from agentjudge.commands.run import batches_cli, run_cli
from agentjudge.rundir.units import connect_reader, open_readonly
from agentjudge.runner import resume_cache
from agentjudge.runner.store import RangeReader, RunStore

SIDE_FILES = ("run.sqlite-wal", "run.sqlite-shm")


def _left(rundir: Path) -> list[str]:
    return [name for name in SIDE_FILES if (rundir / name).exists()]


def test_reading_a_finished_store_leaves_no_wal_or_shm_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = write_pipeline(tmp_path, judges=["baseline/rule"], conditions=["with_gt"])
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir) == 0
    assert _left(rundir) == []  # the writer's last close removed them
    store = rundir / "run.sqlite"
    before = RunStore(store)
    rows = before.counts("judge")
    before.close()
    capsys.readouterr()
    assert run_cli(pipeline, rundir) == 0  # the no-op check reads the store
    assert "nothing to do" in capsys.readouterr().out
    assert _left(rundir) == []
    assert run_cli(pipeline, rundir, dry_run=True) == 0
    assert _left(rundir) == []
    assert batches_cli(rundir) == 0
    assert _left(rundir) == []
    reader = RangeReader(store, "judge")
    assert len(reader((None, None))) == sum(rows.values())
    reader.close()
    assert _left(rundir) == []
    db = resume_cache._read_only(store)
    assert db is not None
    db.close()
    assert _left(rundir) == []
    after = RunStore(store)  # and the store is as it was
    assert after.counts("judge") == rows
    after.close()


def test_a_reader_cannot_write_and_sees_what_an_open_writer_committed(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, judges=["baseline/rule"], conditions=["with_gt"])
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir) == 0
    store = rundir / "run.sqlite"
    writer = RunStore(store)  # a run still going: the store is held open and written
    writer.set_meta({"probe": "written while a reader is open"})
    reader = open_readonly(store)
    assert reader is not None
    assert dict(reader.execute("SELECT key, value FROM meta").fetchall())["probe"] == (
        "written while a reader is open"
    )
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        reader.execute("DELETE FROM meta")
    reader.close()
    assert _left(rundir) != []  # the writer is still open: its files stay (it is not the last close)
    writer.set_meta({"probe": "after the reader closed"})
    writer.close()
    assert _left(rundir) == []
    db = connect_reader(store)
    assert dict(db.execute("SELECT key, value FROM meta").fetchall())["probe"] == "after the reader closed"
    db.close()
    assert _left(rundir) == []
