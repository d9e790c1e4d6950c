"""Record sources are never pooled: compare refuses mixed sources, report survives an unusable source."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from agentjudge.commands.report import compare_cli, report_cli
from agentjudge.rundir.synthetic import SyntheticSpec, Variant, write_run

SPEC = SyntheticSpec(n_base=8, judges={"judge-a": 1, "judge-b": 2}, seed=1)


def _relabel(rundir: Path, source: str, where: str | None = None) -> None:
    """Set the source of all judgment rows (or of the rows matching the query ``where``)."""
    path = rundir / "judgments.parquet"
    jd = pd.read_parquet(path)
    jd["source"] = jd["source"].astype(str)
    mask = jd.eval(where) if where else pd.Series(True, index=jd.index)
    jd.loc[mask, "source"] = source
    jd.to_parquet(path, index=False)


def test_compare_refuses_runs_of_different_sources(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "synth", tmp_path / "imp"
    write_run(a, SPEC)
    write_run(b, SPEC)
    _relabel(b, "imported")
    out = tmp_path / "cmp"
    assert compare_cli([a, b], out, resamples=20, seed=0) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "synth: synthetic" in err and "imp: imported" in err
    assert not out.exists()


def test_compare_refuses_a_run_that_mixes_sources(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "one", tmp_path / "mixed"
    write_run(a, SPEC)
    write_run(b, SPEC)
    _relabel(b, "imported", "judge == 'judge-b'")
    assert compare_cli([a, b], tmp_path / "cmp", resamples=20, seed=0) == 2
    assert "one: synthetic; mixed: imported, synthetic" in capsys.readouterr().err


def test_compare_accepts_runs_sharing_one_imported_source(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    write_run(a, SPEC)
    write_run(b, SPEC)
    _relabel(a, "imported")
    _relabel(b, "imported")
    assert compare_cli([a, b], tmp_path / "cmp", resamples=20, seed=0) == 0


def test_report_replaces_an_unreportable_source_by_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The imported records have only trajectory-condition rows: no imported sub-report, no traceback."""
    variants = [Variant(condition=c) for c in ("with_gt", "without_gt", "trajectory_with_gt")]
    write_run(tmp_path, SyntheticSpec(n_base=8, judges={"judge-a": 1, "judge-b": 2}, variants=variants))
    _relabel(tmp_path, "imported", "condition == 'trajectory_with_gt'")
    assert report_cli(tmp_path, resamples=20, seed=0) == 1
    out = tmp_path / "report"
    assert (out / "synthetic" / "report.md").exists() and not (out / "imported").exists()
    md = (out / "report.md").read_text()
    lines = [line for line in md.splitlines() if "No imported report" in line]
    assert len(lines) == 1 and "no with_gt or without_gt rows" in lines[0]
    assert "No imported report" in (out / "report.html").read_text()
    assert "No imported report" in capsys.readouterr().out
