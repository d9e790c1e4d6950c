"""What a new user met in the smaller corners (the dry run, the failed-units list, help texts, the simulated
judges' rationales, the quick start's console, "Beside the paper" next to a plug-in): each as the user sees
it, through the command line or the library."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from rich.console import Console
from test_runner import write_pipeline
from typer.testing import CliRunner

from agentjudge import api
from agentjudge.commands import app
from agentjudge.commands.report import report_cli
from agentjudge.commands.run_output import print_closing
from agentjudge.judges.simjudge import make_simulated_judge
from agentjudge.runner.result import FailureGroup, RunResult
from agentjudge.runner.summary import failed_units_text
from agentjudge.types import (
    METRICS,
    GTStep,
    JudgeRequest,
    ModelSettings,
    PromptVariant,
    Task,
    ToolCall,
    ToolSchema,
)

PLUGIN = {"model": "test_runner:make_priced_judge", "name": "priced", "concurrency": 1}


def test_the_dry_run_prices_a_finished_plug_in_at_zero(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, generators=["sim/perfect"], judges=[PLUGIN], conditions=["with_gt"])
    assert api.run(pipeline, tmp_path / "run").status == "complete"
    plan = api.run(pipeline, tmp_path / "run", dry_run=True).plan
    assert plan is not None
    (row,) = [r for r in plan.rows if r["model"] == "priced"]
    assert row["calls"] == 0
    assert [row[c] for c in ("cost_usd", "cost_cached_usd", "cost_batch_usd", "cost_batch_cached_usd")] == [
        0.0
    ] * 4
    assert not any("price unknown" in note for note in plan.notes)


def _failed(variant: str, temperature: str) -> dict[str, object]:
    return {
        "model": "j", "stage": "judge", "record_id": "r-1:hard", "generator": "sim/weak",
        "generator_trial": 0, "judge": "j", "condition": "with_gt", "variant": variant,
        "temperature": temperature, "trial": 0,
        "reason": "timeout", "kind": "timeout", "attempts": 3, "runs": 1, "error": "timeout",
    }  # fmt: skip


def test_failed_unit_lines_name_what_tells_them_apart() -> None:
    rows = [
        _failed("json-cot0-d1.0", "default"),
        _failed("json-cot1-d1.0", "default"),
        _failed("json-cot1-d1.0", "0.7"),
    ]
    lines = failed_units_text(rows, "run_summary.json")[1:]
    assert len(set(lines)) == 3, lines
    assert "variant json-cot1-d1.0 T 0.7" in lines[2]
    # what does not differ is not repeated on every line
    assert not any("trial" in line for line in failed_units_text([_failed("v", "default")], "x"))


def test_help_names_the_ci_values_and_no_spec_section() -> None:
    runner = CliRunner()
    for verb in ("report", "compare"):
        out = runner.invoke(app, [verb, "--help"], terminal_width=200).output
        assert "'expanded'" in out and "'percentile'" in out, out
    out = runner.invoke(app, ["score", "--help"], terminal_width=200).output
    assert "§" not in out and "programmatic scorer" in out


def _request(tool: str, *, gt: bool, variant: PromptVariant | None = None) -> JudgeRequest:
    schema = ToolSchema(name="get_user", description="", parameters={"type": "object", "properties": {}})
    task = Task(
        record_id="r-1:hard", base_id="r-1", difficulty="hard", query="q", tools=[schema], system_prompt=""
    )
    steps = [GTStep(call=ToolCall(name="get_user", arguments={}), output={})]
    return JudgeRequest(
        task=task,
        calls=[ToolCall(name=tool, arguments={})],
        gt=steps if gt else None,
        condition="with_gt" if gt else "without_gt",
        variant=variant or PromptVariant(),
        reference={"strict": dict.fromkeys(METRICS, 1.0)},
    )


def test_a_simulated_judges_rationale_says_which_planted_rule_fired() -> None:
    judge = make_simulated_judge(ModelSettings(model="simjudge/anchored"))
    seen = set()
    for i in range(60):  # many outputs: every rule fires on some
        result = asyncio.run(judge(_request(f"tool_{i}", gt=i % 2 == 0)))
        if not result.parse_ok:
            assert "a planted parse failure fired" in result.rationales["tool"]
            seen.add("parse")
            continue
        for metric in METRICS:
            why = result.rationales[metric]
            assert why.startswith(f"simulated judge anchored (not a model), {metric}: reference level 1;")
            verdict = result.verdicts[metric]
            fired = [
                rule for rule in ("a planted error fired", "anchoring fired", "0.5-default") if rule in why
            ]
            seen.update(fired)
            if verdict != 1.0:  # a verdict other than the reference's: the rationale names the rule
                assert fired, why
            if not fired:
                assert "no planted error fired" in why and verdict == 1.0
    assert {"a planted error fired", "anchoring fired"} <= seen


def test_the_console_says_simulated_parse_failures_are_planted() -> None:
    console = Console(record=True, width=300)
    result = RunResult(
        rundir=Path("runs/q"),
        status="complete",
        resume_command="agentjudge run q",
        failures=(FailureGroup("simjudge/anchored", "parse", 726, "answer could not be parsed"),),
        per_model=(
            {
                "model": "simjudge/anchored",
                "role": "judge",
                "kind": "simjudge",
                "done": 1,
                "failed": 0,
                "calls": 1,
                "requests": 0,
                "retries_by_kind": {},
                "cache_hits": None,
                "parse_failures": 726,
                "tokens": 0,
                "cost_usd": 0.0,
                "unknown_cost_calls": 0,
                "unseen_cost_requests": 0,
                "cached_prompt_tokens": 0,
                "prompt_tokens": 0,
                "cache_saved_usd": 0.0,
            },
        ),  # fmt: skip
    )
    print_closing(console, result)
    text = console.export_text()
    assert "simjudge/anchored: parse x726" in text
    assert "simjudge/anchored: simulated judges, whose parse failures are planted on purpose" in text


def test_a_plug_in_judge_does_not_turn_on_beside_the_paper(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    judges = [PLUGIN, "baseline/rule", "baseline/gt-rule"]
    pipeline = write_pipeline(tmp_path, judges=judges, conditions=["with_gt", "without_gt"], scoring="strict")
    assert api.run(pipeline, tmp_path / "run").status == "complete"
    assert report_cli(tmp_path / "run", resamples=50, seed=0) == 0
    md = (tmp_path / "run" / "report" / "report.md").read_text()
    beside = md.split("### Beside the paper (published, not re-measured here)", 1)[1]
    assert beside.lstrip().startswith(
        "Not shown: every judge of this run is simulated, a baseline or a plug-in"
    )
    assert "| statistic | this run |" not in beside
