"""``export.judgment_table`` against a plain row-by-row reading of the same units (issue 15: the table is
built from values remembered per decoded result and per prediction, not row by row). Units of every kind:
done, failed, empty, unparsed metrics, an oracle's per-mode verdicts, trajectory conditions with and
without an end state, a result object shared by several units, one scoring mode or two."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from agentjudge.rundir.records import read_records
from agentjudge.runner.export import judgment_table
from agentjudge.runner.store import UnitKey, UnitRow
from agentjudge.runner.work import Dataset
from agentjudge.types import METRICS, ModelSettings, PromptVariant, Score

MINI = Path(__file__).resolve().parents[1] / "data" / "mini" / "records.jsonl"
FIELD = {"tool": "p_tool", "param": "p_param", "seq": "p_seq", "cov": "p_cov"}


def _reference_rows(
    data: Dataset,
    units: list[UnitRow],
    scores: dict[Any, dict[str, Score]],
    variants: dict[str, PromptVariant],
    judges: dict[str, ModelSettings],
) -> list[dict[str, Any]]:
    """What the file says, one row at a time (the definition of the judgments columns in docs/formats.md)."""
    rows = []
    for unit in units:
        key = unit.key
        mode_scores = scores.get((key.record_id, key.generator, key.generator_trial))
        if mode_scores is None:
            continue
        record, difficulty = data.locate(key.record_id)
        result = unit.result or {}
        ok = unit.status == "done" and bool(result)
        rationales = result.get("rationales") or {}
        variant = variants[key.variant]
        temp = None if key.temperature in ("", "default") else float(key.temperature)
        if temp is None and key.judge in judges:
            temp = judges[key.judge].temperature
        modes = sorted(mode_scores)
        state = mode_scores[modes[0]].state_match
        trajectory = key.condition.startswith("trajectory") and state is not None
        for metric in (*METRICS, "outcome") if trajectory else METRICS:
            for mode in modes:
                if not ok:
                    verdict = None
                elif metric == "outcome":
                    verdict = result.get("outcome")
                else:
                    per_mode = (result.get("mode_verdicts") or {}).get(mode)
                    verdict = (per_mode if per_mode is not None else result.get("verdicts") or {}).get(metric)
                if metric == "outcome":
                    reference = float(bool(state))
                else:
                    reference = getattr(mode_scores[mode], FIELD[metric])
                rows.append(
                    {
                        "record_id": key.record_id,
                        "base_id": record.id,
                        "domain": record.domain,
                        "topology": record.topology,
                        "difficulty": difficulty,
                        "generator": key.generator,
                        "generator_trial": key.generator_trial,
                        "judge": key.judge,
                        "condition": key.condition,
                        "prompt_format": variant.prompt_format,
                        "cot": variant.cot,
                        "default_mode": variant.default_mode,
                        "temperature": math.nan if temp is None else temp,
                        "trial": key.trial,
                        "metric": metric,
                        "reference": float(reference),
                        "verdict": None if verdict is None else float(verdict),
                        "scoring_mode": mode,
                        "parse_ok": bool(ok and result.get("parse_ok")),
                        "rationale": rationales.get(metric, ""),
                        "source": record.source,
                        "judge_error": None if ok else (unit.error or result.get("error") or "failed"),
                        "structured_output": rationales.get("_structured_output") == "1",
                    }
                )
    return rows


def _score(record_id: str, mode: str, base: float, state: bool | None) -> Score:
    return Score(
        record_id=record_id, generator="g", trial=0, scoring_mode=mode,  # type: ignore[arg-type]
        p_tool=base, p_param=base / 2, p_seq=1 - base, p_cov=0.25, p_value=0.0, p_seq_dag=0.0,
        state_match=state,
    )  # fmt: skip


@pytest.mark.parametrize("small", [True, False])
def test_the_table_reads_as_the_rows_one_by_one(small: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentjudge.runner import export

    monkeypatch.setattr(export, "SMALL_TABLE_ROWS", 10**9 if small else 0)
    records = read_records(MINI, limit=3)
    data = Dataset(records)
    two = (PromptVariant(), PromptVariant(prompt_format="freeform", default_mode="0.5"))
    variants = {v.key: v for v in two}
    judges = {"j": ModelSettings(model="baseline/rule", name="j", temperature=0.3)}
    judges["k"] = ModelSettings(model="x/y")  # no temperature of its own
    states = {0: True, 1: False, 2: None}  # per record: an end state that matches, one that does not, none
    scores: dict[Any, dict[str, Score]] = {}
    for i, record in enumerate(records):
        for difficulty in ("easy", "hard"):
            rid = record.record_id(difficulty)  # type: ignore[arg-type]
            modes = ("paper", "strict") if i != 1 else ("strict",)  # one record scored in one mode only
            scores[(rid, "g", 0)] = {m: _score(rid, m, 0.2 * (i + 1), states[i]) for m in modes}
    shared = {  # one decoded result object for many units, as the export's decoder hands them out
        "verdicts": {"tool": 1.0, "param": 0.5, "seq": 0.0, "cov": 1.0},
        "rationales": {"tool": "t", "overall": "o", "_structured_output": "1"},
        "parse_ok": True,
        "outcome": 1.0,
    }
    results: list[tuple[str, Any, str | None]] = [
        ("done", shared, None),
        ("done", {"verdicts": {"tool": None, "param": 1.0}, "rationales": {}, "parse_ok": False}, None),
        ("done", {"verdicts": {"tool": 0.0}, "mode_verdicts": {"paper": {"tool": 1.0, "seq": 0.5}}}, None),
        ("failed", {"verdicts": {}, "error": "boom in result"}, None),
        ("failed", None, "timeout: after 3 attempt(s)"),
        ("done", {}, None),  # an empty result is no answer
        ("done", shared, None),
        ("failed", shared, "a stopped model"),  # the shared result, this time under a failure
    ]
    units = []
    for rid in [*sorted({k[0] for k in scores}), "missing-record:easy"]:
        for condition in ("with_gt", "trajectory_with_gt", "trajectory_without_gt"):
            for n, (status, result, error) in enumerate(results):
                key = UnitKey(
                    "judge", rid, rid.rpartition(":")[2], "g", 0, "jk"[n % 2], condition,
                    list(variants)[n % 2], "" if n % 3 else "0.7", n % 2,
                )  # fmt: skip
                units.append(UnitRow(key, status, result, error, 1))  # type: ignore[arg-type]
    counts: list[int] = []
    table = judgment_table(data, units, scores, variants, judges, counts)  # type: ignore[arg-type]
    expected = _reference_rows(data, units, scores, variants, judges)  # type: ignore[arg-type]
    got = table.to_pylist()
    assert len(got) == len(expected) == sum(counts) > 0
    for row_got, row_expected in zip(got, expected, strict=True):
        for name, value in row_expected.items():
            if isinstance(value, float) and math.isnan(value):
                assert math.isnan(row_got[name]), name
            else:
                assert row_got[name] == value, (name, row_got, row_expected)
