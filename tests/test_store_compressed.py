"""run.sqlite keeps each unit's result zlib-compressed (format version 2): a run's store is less than half
the bytes of its results as text, every reader gets the JSON text back, and a folder written before (format
version 1, results as text) still reads, resumes and exports the same files."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
from test_runner import write_pipeline

from agentjudge import api
from agentjudge.commands.report import report_cli
from agentjudge.rundir import RunFolder
from agentjudge.rundir.units import decode_result

JUDGES = ["baseline/rule", "baseline/gt-rule", "simjudge/careful", "simjudge/anchored"]


def _stored(path: Path) -> list[object]:
    with sqlite3.connect(path) as db:
        return [row[0] for row in db.execute("SELECT result FROM units ORDER BY rowid")]


def test_results_are_stored_compressed_and_read_back_as_text(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, judges=JUDGES)
    assert api.run(pipeline, tmp_path / "run").status == "complete"
    stored = _stored(tmp_path / "run" / "run.sqlite")
    assert stored and all(isinstance(value, bytes) for value in stored)
    texts = [decode_result(value) or "" for value in stored]
    compressed = sum(len(v) for v in stored if isinstance(v, bytes))
    assert compressed < 0.5 * sum(len(t.encode()) for t in texts)
    # the readers see the JSON text, whatever the store keeps
    units = RunFolder.open(tmp_path / "run").units(columns=["stage", "result"])
    assert units is not None and set(units["result"]) == set(texts)
    assert all(json.loads(text) for text in units["result"])


def test_a_folder_of_format_version_1_reads_resumes_and_exports_alike(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, judges=JUDGES)
    fresh, old = tmp_path / "fresh", tmp_path / "old"
    assert api.run(pipeline, fresh).status == "complete"
    assert api.run(pipeline, old).status == "complete"
    # made as an older agentjudge left it: results as text, meta.json of format version 1, one unit lost
    with sqlite3.connect(old / "run.sqlite") as db:
        rows = db.execute("SELECT rowid, result FROM units").fetchall()
        db.executemany(
            "UPDATE units SET result = ? WHERE rowid = ?", [(decode_result(r), i) for i, r in rows]
        )
        db.execute("DELETE FROM units WHERE rowid = (SELECT MAX(rowid) FROM units WHERE stage = 'judge')")
        db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'store_version'")
    meta = json.loads((old / "meta.json").read_text())
    (old / "meta.json").write_text(json.dumps({**meta, "format_version": 1}))
    folder = RunFolder.open(old)
    assert folder.format_version == 1
    units = folder.units(columns=["result"])
    assert units is not None and all(json.loads(text) for text in units["result"])
    assert report_cli(old, resamples=20, seed=0) == 0
    assert api.run(pipeline, old).status == "complete"  # resumed: the lost unit runs, the text rows are read
    for name in ("predictions", "scores", "judgments"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(old / f"{name}.parquet"), pd.read_parquet(fresh / f"{name}.parquet")
        )
    kinds = {type(v) for v in _stored(old / "run.sqlite")}
    assert kinds == {str, bytes}  # the older rows stay as they were; the rerun unit is stored compressed
