"""The results format, pinned: what a run folder's files hold, as ``agentjudge run`` writes them today.

A failure here means a file's contract changed. That is allowed only with its paperwork: docs/formats.md
updated, and ``rundir.meta.FORMAT_VERSION`` bumped when an older reader would misread the new files (a
column or key renamed, removed or given another meaning; an added one does not bump it). Then update the
pins below. The folder is a small sampled run extended with ``--add-judge``, so every optional part is
present: sampling.json, meta.json's ``sampling`` and ``added_judges``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from test_sampling_run import _pipeline

from agentjudge.commands.run import run_cli
from agentjudge.models.failures import Failure
from agentjudge.rundir import FORMAT_VERSION, RunFolder, RunMeta, RunSummary, SamplingRecord
from agentjudge.rundir.columns import (
    JUDGMENT_COLUMNS,
    JUDGMENT_OPTIONAL_COLUMNS,
    PREDICTION_COLUMNS,
    SCORE_COLUMNS,
)
from agentjudge.rundir.summary import FailedUnit
from agentjudge.rundir.synthetic import SyntheticSpec, write_run
from agentjudge.runner.store import StoredFailure, UnitKey
from agentjudge.runner.summary import failed_unit_rows

ROOT = Path(__file__).resolve().parents[1]

PINNED_VERSION = 2
PREDICTIONS = [
    ("record_id", "string"), ("base_id", "string"), ("difficulty", "string"), ("generator", "string"),
    ("trial", "int64"), ("calls_json", "string"), ("raw_output", "string"), ("error", "string"),
    ("simulated", "bool"), ("prompt_tokens", "int64"), ("completion_tokens", "int64"),
    ("cost_usd", "double"), ("cached", "bool"), ("generation", "string"), ("turns", "int64"),
    ("stop_reason", "string"), ("trajectory_json", "string"), ("cached_prompt_tokens", "int64"),
]  # fmt: skip
SCORES = [
    ("record_id", "string"), ("base_id", "string"), ("domain", "string"), ("topology", "string"),
    ("difficulty", "string"), ("generator", "string"), ("trial", "int64"), ("scoring_mode", "string"),
    ("p_tool", "double"), ("p_param", "double"), ("p_seq", "double"), ("p_cov", "double"),
    ("p_value", "double"), ("p_seq_dag", "double"), ("state_match", "bool"), ("source", "string"),
    ("writes_done", "double"),
]  # fmt: skip
JUDGMENTS = [
    ("record_id", "string"), ("base_id", "string"), ("domain", "string"), ("topology", "string"),
    ("difficulty", "string"), ("generator", "string"), ("generator_trial", "int64"), ("judge", "string"),
    ("condition", "string"), ("prompt_format", "string"), ("cot", "bool"), ("default_mode", "string"),
    ("temperature", "double"), ("trial", "int64"), ("metric", "string"), ("reference", "double"),
    ("verdict", "double"), ("parse_ok", "bool"), ("scoring_mode", "string"), ("rationale", "string"),
    ("judge_error", "string"), ("source", "string"), ("structured_output", "bool"),
]  # fmt: skip
META_KEYS = {
    "format_version", "pipeline", "config_hash", "git_commit", "git_commit_last", "package_version", "seed",
    "judges", "generators", "added_judges", "units", "last_invocation", "sampling",
}  # fmt: skip
MODEL_INFO_KEYS = {"model", "tier", "kind", "simulated"}
ADDED_JUDGE_KEYS = {"judge", "model", "added_at", "git_commit"}
UNITS_KEYS = {"predict": {"planned", "done", "failed"}, "judge": {"planned", "done", "failed"}}
UNITS_BY_JUDGE_KEYS = {"planned", "done", "failed"}
LAST_INVOCATION_KEYS = {
    "per_model", "spent_usd", "cost_cap_usd", "cost_cap_counted_usd", "units_not_run_at_cost_cap",
    "stopped_models", "resume_command",
}  # fmt: skip
PER_MODEL_KEYS = {
    "model", "role", "kind", "done", "failed", "calls", "requests", "retries_by_kind", "cache_hits",
    "parse_failures", "tokens", "cost_usd", "unknown_cost_calls", "unseen_cost_requests",
    "cached_prompt_tokens", "prompt_tokens", "cache_saved_usd",
}  # fmt: skip
META_SAMPLING_KEYS = {"file", "target_ci_pp", "fpc", "stages", "judge_units", "predict_units"}
SUMMARY_KEYS = {"per_model", "failed_units"}
SUMMARY_MODEL_KEYS = {"role", "kind", "this_invocation", "all_invocations", "failed_units"}
THIS_INVOCATION_KEYS = {"done", "failed", "calls", "requests", "retries_by_kind"}
ALL_INVOCATIONS_KEYS = {"requests", "retries_by_kind"}
FAILED_UNIT_KEYS = {
    "model", "stage", "record_id", "generator", "generator_trial", "judge", "condition", "variant",
    "temperature", "trial", "reason", "kind", "attempts", "runs", "error",
}  # fmt: skip
SAMPLING_KEYS = {
    "version", "target_ci_pp", "confidence", "fpc", "pilot", "seed", "applies_to", "population", "order",
    "order_strata", "stages", "cells", "predictions", "judge_units", "predict_units",
}  # fmt: skip
CELL_KEYS = {"judge", "generator", "difficulty", "condition", "n", "complete", "stages"}
SHARE_KEYS = {"planned", "full_grid"}


@pytest.fixture(scope="module")
def rundir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("formats")
    pipeline = _pipeline(work)
    assert run_cli(pipeline, work / "run") == 0
    assert run_cli(pipeline, work / "run", add_judges=["baseline/always-1"]) == 0
    return work / "run"


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _schema(path: Path) -> list[tuple[str, str]]:
    return [(field.name, str(field.type)) for field in pq.read_schema(path)]


def test_the_format_version_is_written_and_read(rundir: Path) -> None:
    assert FORMAT_VERSION == PINNED_VERSION
    assert _json(rundir / "meta.json")["format_version"] == PINNED_VERSION
    assert RunFolder.open(rundir).format_version == PINNED_VERSION


def test_the_tables_columns_and_types_are_pinned(rundir: Path) -> None:
    assert _schema(rundir / "predictions.parquet") == PREDICTIONS
    assert _schema(rundir / "scores.parquet") == SCORES
    assert _schema(rundir / "judgments.parquet") == JUDGMENTS
    # the column contract the writers build their schemas from says the same
    assert [name for name, _ in PREDICTIONS] == list(PREDICTION_COLUMNS)
    assert [name for name, _ in SCORES] == list(SCORE_COLUMNS)
    assert [name for name, _ in JUDGMENTS] == [*JUDGMENT_COLUMNS, *JUDGMENT_OPTIONAL_COLUMNS]


def test_meta_json_keys_are_pinned(rundir: Path) -> None:
    meta = _json(rundir / "meta.json")
    assert set(meta) == META_KEYS
    for role in ("judges", "generators"):
        assert meta[role] and all(set(info) == MODEL_INFO_KEYS for info in meta[role].values())
    assert [entry["judge"] for entry in meta["added_judges"]] == ["baseline/always-1"]
    assert all(set(entry) == ADDED_JUDGE_KEYS for entry in meta["added_judges"])
    by_judge = meta["units"].pop("by_judge")
    assert {stage: set(counts) for stage, counts in meta["units"].items()} == UNITS_KEYS
    assert set(by_judge) == set(meta["judges"])
    assert all(set(counts) == UNITS_BY_JUDGE_KEYS for counts in by_judge.values())
    assert meta["last_invocation"]["stopped_models"] == {}
    assert meta["last_invocation"]["resume_command"].startswith("agentjudge run ")
    assert set(meta["last_invocation"]) == LAST_INVOCATION_KEYS
    rows = meta["last_invocation"]["per_model"]
    assert rows and all(set(row) == PER_MODEL_KEYS for row in rows)
    assert set(meta["sampling"]) == META_SAMPLING_KEYS
    assert all(set(meta["sampling"][key]) == SHARE_KEYS for key in ("judge_units", "predict_units"))


def test_run_summary_json_keys_are_pinned(rundir: Path) -> None:
    summary = _json(rundir / "run_summary.json")
    assert set(summary) == SUMMARY_KEYS
    assert summary["per_model"]
    for entry in summary["per_model"].values():
        assert set(entry) == SUMMARY_MODEL_KEYS
        assert set(entry["this_invocation"]) == THIS_INVOCATION_KEYS
        assert set(entry["all_invocations"]) == ALL_INVOCATIONS_KEYS
    # this run failed nothing: a failed unit's row is pinned where the runner makes it
    key = UnitKey("judge", "r-1:hard", "hard", "sim/weak", 0, "j", "with_gt", "json-cot0-d1.0", "default", 0)
    stored = StoredFailure(key, "timeout after 3 attempt(s): read timed out", Failure("timeout", 3), 2)
    [row] = failed_unit_rows([stored])
    assert set(row) == FAILED_UNIT_KEYS
    assert (FailedUnit.model_validate(row).kind, FailedUnit.model_validate(row).attempts) == ("timeout", 3)
    older = {k: v for k, v in row.items() if k != "kind"}  # a run_summary.json written before the field
    assert FailedUnit.model_validate(older).kind is None


def test_sampling_json_keys_are_pinned(rundir: Path) -> None:
    record = _json(rundir / "sampling.json")
    assert set(record) == SAMPLING_KEYS
    assert record["cells"] and all(set(cell) == CELL_KEYS for cell in record["cells"])
    assert all(set(p) == {"generator", "difficulty", "n"} for p in record["predictions"])
    assert set(record["judge_units"]) == set(record["predict_units"]) == SHARE_KEYS


def test_the_models_give_back_the_files_as_written(rundir: Path, tmp_path: Path) -> None:
    """Every key any writer writes is modelled (no default slips into a dump, nothing is dropped)."""
    for name, model in (
        ("meta.json", RunMeta),
        ("run_summary.json", RunSummary),
        ("sampling.json", SamplingRecord),
    ):
        raw = _json(rundir / name)
        assert model.model_validate(raw).model_dump(mode="json", exclude_unset=True) == raw, name
    write_run(tmp_path, SyntheticSpec(n_base=6, judges={"judge-a": 1}))
    raw = _json(tmp_path / "meta.json")
    assert RunMeta.model_validate(raw).model_dump(mode="json", exclude_unset=True) == raw


def test_docs_formats_names_every_column_and_key() -> None:
    """docs/formats.md, the contract people read, names every pinned column and key."""
    text = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    names = {name for table in (PREDICTIONS, SCORES, JUDGMENTS) for name, _ in table}
    names |= META_KEYS | MODEL_INFO_KEYS | ADDED_JUDGE_KEYS | LAST_INVOCATION_KEYS | PER_MODEL_KEYS
    names |= META_SAMPLING_KEYS | SUMMARY_KEYS | SUMMARY_MODEL_KEYS | THIS_INVOCATION_KEYS
    names |= FAILED_UNIT_KEYS | SAMPLING_KEYS | CELL_KEYS | SHARE_KEYS
    missing = sorted(name for name in names if f"`{name}`" not in text)
    assert missing == [], f"docs/formats.md does not name {missing}"
    assert f"The current `format_version` is {PINNED_VERSION}" in text
