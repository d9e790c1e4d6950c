"""judgments.parquet of a small table: the constant columns repeated in Python (``export.SMALL_TABLE_ROWS``)
give the same file as Arrow's ``take``, and the ``agentjudge run`` process never imports pyarrow.compute."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_resume_cache import _outputs, _pipeline

from agentjudge.runner import export
from agentjudge.runner.grid import run_cli


def test_small_and_large_tables_write_the_same_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pipeline = _pipeline(tmp_path / "p")
    assert run_cli(pipeline, tmp_path / "python") == 0  # 6 records: far below SMALL_TABLE_ROWS
    rows = pq.read_metadata(tmp_path / "python" / "judgments.parquet").num_rows
    assert 0 < rows <= export.SMALL_TABLE_ROWS
    monkeypatch.setattr(export, "SMALL_TABLE_ROWS", 0)  # every table through `take`
    assert run_cli(pipeline, tmp_path / "take") == 0
    assert _outputs(tmp_path / "python") == _outputs(tmp_path / "take")  # all of OUTPUTS, byte for byte
