"""A resumed run leaves predictions.parquet and scores.parquet alone when their inputs did not change
(``export.current_files``), and rewrites them whenever something they are built from, or the file itself,
did; the files are always those a fresh run writes."""

from __future__ import annotations

import functools
import json
import sqlite3
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_resume_cache import _fail, _outputs, _pipeline

from agentjudge import api
from agentjudge.rundir.units import decode_result, encode_result
from agentjudge.runner import resume_cache

KEPT = ("predictions.parquet", "scores.parquet")


def _inodes(rundir: Path) -> dict[str, tuple[int, int]]:
    """Each output's (inode, mtime): every write (temporary file, then rename) gives a new inode."""
    out = {}
    for name in (*KEPT, "judgments.parquet"):
        st = (rundir / name).stat()
        out[name] = (st.st_ino, st.st_mtime_ns)
    return out


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(pipeline, a fresh run's folder, the folder of a second run of it to resume)"""
    pipeline = _pipeline(tmp_path / "p")
    assert api.run(pipeline, tmp_path / "fresh").status == "complete"
    assert api.run(pipeline, tmp_path / "run").status == "complete"
    return pipeline, tmp_path / "fresh", tmp_path / "run"


def test_retrying_judge_units_rewrites_only_the_judgments(runs: tuple[Path, Path, Path]) -> None:
    pipeline, fresh, run = runs
    before = _inodes(run)
    _fail(run / "run.sqlite", "judge", 5)
    assert api.run(pipeline, run).status == "complete"
    after = _inodes(run)
    assert [after[name] == before[name] for name in (*KEPT, "judgments.parquet")] == [True, True, False]
    assert _outputs(run) == _outputs(fresh)


def test_a_changed_prediction_rewrites_both(runs: tuple[Path, Path, Path]) -> None:
    pipeline, fresh, run = runs
    with sqlite3.connect(run / "run.sqlite") as db:  # a stored prediction's text edited (status kept)
        where = "WHERE rowid = (SELECT MIN(rowid) FROM units WHERE stage = 'predict')"
        (stored,) = db.execute(f"SELECT result FROM units {where}").fetchone()
        edited = json.dumps({**json.loads(decode_result(stored) or ""), "raw_output": "edited"})
        db.execute(f"UPDATE units SET result = ? {where}", (encode_result(edited),))
    before = _inodes(run)
    _fail(run / "run.sqlite", "judge", 2)
    assert api.run(pipeline, run).status == "complete"
    after = _inodes(run)
    assert all(after[name] != before[name] for name in KEPT)
    raw = pq.read_table(run / "predictions.parquet", columns=["raw_output"]).column(0).to_pylist()
    assert raw.count("edited") == 1


def test_a_replaced_or_missing_file_is_written_again(runs: tuple[Path, Path, Path]) -> None:
    pipeline, fresh, run = runs
    (run / "scores.parquet").unlink()
    text = (run / "predictions.parquet").read_bytes()
    (run / "predictions.parquet").write_bytes(text[:-1] + b"\0")  # same size, another file's content
    _fail(run / "run.sqlite", "judge", 2)
    assert api.run(pipeline, run).status == "complete"
    assert _outputs(run) == _outputs(fresh)


def test_changed_code_rewrites_them(runs: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    pipeline, fresh, run = runs
    before = _inodes(run)
    monkeypatch.setattr(resume_cache, "code_fingerprint", functools.cache(lambda: "another version"))
    _fail(run / "run.sqlite", "judge", 2)
    assert api.run(pipeline, run).status == "complete"
    after = _inodes(run)
    assert all(after[name] != before[name] for name in KEPT)
    assert _outputs(run) == _outputs(fresh)
