"""The report of an unfinished run says so, first: units done of planned, why it stopped, how to resume.

Reproduced as a user meets it: a judge on a real OpenAI-compatible server (tests/fakeserver.py) stopped by
``--max-cost``, or by an endpoint that drops every chat request, then ``agentjudge report`` and
``agentjudge compare``. Every judge of the pipeline is shown, the ones with no verdict yet included; the
failures are named by their reason; no analysis section fails on the partial folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakeserver import FakeLLM

from agentjudge.commands.report import compare_cli, report_cli
from agentjudge.commands.run import run_cli
from agentjudge.rundir import RunFolder

ROOT = Path(__file__).resolve().parents[1]
VERDICT = json.dumps(
    {m: {"verdict": 1.0, "justification": "ok"} for m in ("tool", "param", "seq", "coverage")}
)


def _pipeline(folder: Path, judge: dict[str, Any], **fields: Any) -> Path:
    data = {
        "name": "unfinished",
        "dataset": str(ROOT / "data" / "mini" / "records.jsonl"),
        "limit": 4,
        "difficulties": ["hard"],
        "generators": ["sim/weak", "sim/perfect"],
        "judges": [judge],
        "conditions": ["with_gt", "without_gt"],
        "scoring": "strict",
        "concurrency": 1,
        "cache": str(folder / "cache.sqlite"),
        **fields,
    }
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _judge(fake: FakeLLM, **fields: Any) -> dict[str, Any]:
    # a model litellm prices, so that --max-cost can reserve each call's worst case
    return {
        "model": "openai/gpt-4o-mini",
        "api_base": fake.base_url,
        "api_key_env": "AGENTJUDGE_TEST_KEY",
        "max_tokens": 200,
        "max_retries": 1,
        "timeout_s": 5,
        **fields,
    }


def _report(rundir: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, list[str]]:
    capsys.readouterr()
    code = report_cli(rundir, resamples=50, seed=0)
    out = capsys.readouterr().out
    return code, out, (rundir / "report" / "report.md").read_text(encoding="utf-8").splitlines()


def test_a_run_stopped_by_the_cost_cap_reports_as_unfinished(
    tmp_path: Path, fake_llm: FakeLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_llm.set_responder(lambda request: VERDICT)
    pipeline = _pipeline(tmp_path, _judge(fake_llm))
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir, max_cost=0.003) == 1
    meta = json.loads((rundir / "meta.json").read_text())
    judged = meta["units"]["judge"]
    assert 0 < judged["done"] < judged["planned"] == 16
    assert meta["last_invocation"]["resume_command"].endswith("--max-cost 0.003")

    code, out, md = _report(rundir, capsys)
    assert code == 0
    # the first line says it, and how far the run got, why it stopped, how to go on
    assert md[0] == "# agentjudge report — UNFINISHED"
    first = md[2]
    assert first.startswith("> **UNFINISHED RUN: 8 of 8 predictions and ")
    assert f"{judged['done']} of 16 judge units done" in first
    assert "the cost cap (--max-cost 0.003) was reached" in first
    assert f"Resume it with `agentjudge run {pipeline} --out {rundir} --max-cost 0.003`" in first
    assert "UNFINISHED RUN" in out and "--max-cost 0.003" in out  # the command line says it too
    # the judge is shown, not ranked on the part of the grid it has judged
    row = next(line for line in md if line.startswith("| — | openai/gpt-4o-mini |"))
    assert f"(unfinished: {judged['done']} of 16 units run)" in row
    assert "— (unfinished: not ranked)" in row
    assert any("base scenarios judged so far" in line for line in md)
    assert not any("FAILED" in line for line in md)  # no analysis section fails on the partial folder

    # the status a library user reads says the same
    status = RunFolder.open(rundir).status
    assert status.state == "unfinished" and status.why and status.resume_command

    # resumed to the end, the same report is a finished one
    assert run_cli(pipeline, rundir) == 0
    code, out, md = _report(rundir, capsys)
    assert code == 0 and md[0] == "# agentjudge report" and "UNFINISHED" not in "\n".join(md)
    assert any(line.startswith("| 1 | openai/gpt-4o-mini |") for line in md)


def test_a_stopped_model_and_an_added_judge_with_no_verdict_are_shown_with_their_reason(
    tmp_path: Path, fake_llm: FakeLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    # the endpoint answers GET /models (the preflight passes) and drops every chat request unanswered
    fake_llm.drop_next(-1)
    pipeline = _pipeline(tmp_path, _judge(fake_llm))
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir) == 1
    code, out, md = _report(rundir, capsys)
    assert code == 0
    first = md[2]
    assert "openai/gpt-4o-mini was stopped (connection failure" in first
    assert f"Resume it with `agentjudge run {pipeline} --out {rundir}`" in first
    row = next(line for line in md if line.startswith("| — | openai/gpt-4o-mini |"))
    assert "failed units: connection" in row  # named by its reason, not "could not be parsed"
    folded = [line for line in md if line.startswith("- **")]
    assert folded and not any("rq1_metrics_topologies" in line for line in folded)  # titles, not ids
    assert not any("could not be parsed" in line for line in md)
    assert any("failed in the call (failed units: connection" in line for line in folded)
    assert not any("|  |" in line for line in md)  # no empty main table


def test_a_judge_with_no_verdict_yet_is_shown_and_counted(
    tmp_path: Path, fake_llm: FakeLLM, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-for-the-fake-server")
    fake_llm.set_responder(lambda request: VERDICT)
    pipeline = _pipeline(tmp_path, "baseline/rule")
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir) == 0
    # the added judge's first call does not fit under the cap: none of its units runs
    code = run_cli(
        pipeline, rundir, add_judges=["openai/gpt-4o-mini"], api_base=fake_llm.base_url, max_cost=0.000001
    )
    assert code == 1
    code, out, md = _report(rundir, capsys)
    assert code == 0 and md[0].endswith("UNFINISHED")
    row = next(line for line in md if line.startswith("| — | openai/gpt-4o-mini |"))
    assert "no verdicts yet" in row and "(unfinished: 0 of 16 units run)" in row
    assert any("2 judges, 1 with verdict rows (1 rankable), 1 with none yet" in line for line in md)

    # compare shows it too, and says which run is unfinished
    done = tmp_path / "done"
    assert run_cli(_pipeline(tmp_path, "baseline/gt-rule"), done) == 0
    capsys.readouterr()
    assert compare_cli([rundir, done], tmp_path / "cmp", resamples=50, seed=0) == 0
    assert "UNFINISHED RUN run:" in capsys.readouterr().out
    md = (tmp_path / "cmp" / "report.md").read_text().splitlines()
    assert md[2].startswith("> **UNFINISHED RUN run: ")
    assert any(line.startswith("| — | openai/gpt-4o-mini |") and "no verdicts yet" in line for line in md)
