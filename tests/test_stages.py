"""The stages one by one through the CLI, as a user chains them: generate -> infer -> score.

Offline with a simulated generator, and through the loopback server with scripted native tool calls (the
"model" answers each task with its GT calls, except a few malformed answers that must be counted).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from fakeserver import TEST_KEY, FakeLLM, prompt_text
from reference_scorer import strict_scores
from typer.testing import CliRunner

from agentjudge.commands import app
from agentjudge.rundir.records import read_records

runner = CliRunner()


def _cli(*args: str) -> int:
    result = runner.invoke(app, list(args))
    return result.exit_code


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("data")
    assert _cli("generate", "--out", str(out), "--size", "mini", "--seed", "3") == 0
    return out / "records.jsonl"


def test_offline_generate_infer_score(data: Path, tmp_path: Path) -> None:
    preds, scores = tmp_path / "preds.parquet", tmp_path / "scores.parquet"
    assert _cli("infer", str(data), "--generator", "sim/mid", "--out", str(preds)) == 0
    assert _cli("score", str(data), str(preds), "--out", str(scores), "--mode", "both") == 0
    table = pd.read_parquet(scores)
    assert len(table) == 60 * 3 * 2 and set(table.scoring_mode) == {"paper", "strict"}
    assert table[[c for c in table if c.startswith("p_")]].stack().between(0, 1).all()
    # sim/mid makes mistakes, and more of them on hard queries
    strict = table[table.scoring_mode == "strict"].groupby("difficulty")["p_tool"].mean()
    assert strict["hard"] < strict["easy"] < 1.0
    # every strict row recomputed from the two files by the naive reference (tests/reference_scorer.py),
    # not by the scorer: the records' own edges and tool schemas, the predictions' calls as written
    records = {r.id: r for r in read_records(data)}
    calls = pd.read_parquet(preds).set_index("record_id")["calls_json"]
    strict_rows = table[table.scoring_mode == "strict"]
    imperfect = 0
    for row in strict_rows.itertuples(index=False):
        rec = records[row.base_id]
        gen = [(c["name"], c["arguments"]) for c in json.loads(calls[row.record_id])]
        want = strict_scores(
            [(s.call.name, s.call.arguments) for s in rec.gt],
            gen,
            rec.edges or None,
            {t.name: t.parameters for t in rec.tools},
        )
        got = {k: getattr(row, k) for k in want}
        assert got == pytest.approx(want), (row.record_id, got, want)
        imperfect += min(want.values()) < 1.0
    assert imperfect > 20  # the comparison covers many imperfect outputs, not only perfect copies


def test_loopback_generator_infer_score_and_cache(
    data: Path, tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    records = read_records(data)
    gt_by_query = {r.queries[d]: r.expected_calls for r in records for d in ("easy", "medium", "hard")}
    malformed = {records[0].queries["hard"], records[1].queries["easy"]}

    def respond(req: dict[str, object]) -> dict[str, object]:
        text = prompt_text(req)
        query = next(q for q in gt_by_query if q in text)
        if query in malformed:
            return {"tool_calls": [{"name": "x", "arguments": '{"broken": '}]}
        return {"tool_calls": [{"name": c.name, "arguments": c.arguments} for c in gt_by_query[query]]}

    fake_llm.set_responder(respond)
    preds, scores = tmp_path / "preds.jsonl", tmp_path / "scores.csv"
    base = ["infer", str(data), "--generator", "openai/gen-model", "--api-base", fake_llm.base_url]
    assert _cli(*base, "--out", str(preds)) == 1  # two malformed answers: recorded failures, exit 1
    assert len(fake_llm.requests) == 180
    assert all("tools" in r for r in fake_llm.requests)  # native function calling
    rows = [json.loads(line) for line in preds.read_text().splitlines()]
    failed = [r for r in rows if r["error"]]
    assert len(failed) == 2 and all(r["calls_json"] is None for r in failed)

    assert _cli("score", str(data), str(preds), "--out", str(scores), "--mode", "strict") == 0
    table = pd.read_csv(scores)
    assert len(table) == 178  # failures are not scored
    assert (table[["p_tool", "p_param", "p_seq", "p_cov", "p_value", "p_seq_dag"]] == 1.0).all().all()
    assert table["state_match"].all()

    # A second identical run: every answer comes from the cache, zero new requests. The malformed answers
    # were real answers of the model, so they are cached too and fail again the same way (--no-cache
    # asks afresh).
    again = tmp_path / "again.jsonl"
    assert _cli(*base, "--out", str(again)) == 1
    assert len(fake_llm.requests) == 180
    again_rows = [json.loads(line) for line in again.read_text().splitlines()]
    assert all(r["cached"] for r in again_rows) and sum(bool(r["error"]) for r in again_rows) == 2
