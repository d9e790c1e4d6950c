"""The importer against a second, independent transcription of the published code
(tests/agentjudgebench_published_fixture.py: rows built field by field from the pipeline's output_map, the
programmatic judge and the alignment as published, failure rows, null reruns, a resume file, a .jsonl cell,
calls as JSON strings / fenced / after a think block, missing metric values, and two rows whose judge file
carries an altered copy of the programmatic scores)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import agentjudgebench_published_fixture as fixture
import pytest
from typer.testing import CliRunner

from agentjudge.commands import app

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "data" / "mini" / "records.jsonl"


@pytest.mark.parametrize("layout", ["raw", "hf"])
def test_cells_counts_and_every_scorer_disagreement(tmp_path: Path, layout: str) -> None:
    fx = fixture.build(tmp_path / "release", RECORDS, layout=layout)
    src = tmp_path / "release" / ("data" if layout == "hf" else "")
    argv = ["import", "agentjudgebench", str(src), "--records", str(RECORDS), "--out", str(tmp_path / "run")]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    with (tmp_path / "run" / "imported_cells.csv").open() as f:
        cells = {(r["generator"], r["judge"], r["difficulty"], r["condition"]): r for r in csv.DictReader(f)}
    expected = fx.expected()  # analyze_results.py over the merged rows
    assert set(cells) == set(expected)
    for key, value in expected.items():
        assert float(cells[key]["released_overall"]) == pytest.approx(value, abs=1e-9), key
        assert float(cells[key]["published_rule"]) == pytest.approx(value, abs=0.01), key  # per-row rounding
    summary = json.loads((tmp_path / "run" / "import_summary.json").read_text())
    judged = sum(r["id"] is not None for rows in fx.cells.values() for r in rows)
    assert summary["rows"] == judged
    # each judge file's copy of the reference is compared: both planted rows are found, whichever file
    # a generator output was read from first
    dis = summary["scorer_disagreements"]
    assert sum(dis["by_metric"].values()) == fx.planted_reference_errors == 2
    assert dis["rows_compared"] == judged and dis["outputs_differing"] == 2
    if layout == "raw":  # the null reruns replaced id-less failure rows of the primaries
        recovered = summary["failure_rows"] - fx.failure_rows
        assert recovered > 0 and summary["rows_from_reruns"] == recovered
