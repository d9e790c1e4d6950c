"""``agentjudge import traces``: an agent's own conversations (OpenAI-style JSON Lines, an Inspect log) as an
ordinary run folder: its calls replayed as predictions, scored where expected calls exist, judged (added
judges, episodes under the trajectory conditions), reported, and refused with one line when bad."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fakeserver import FakeLLM
from traces_fixture import calls_of, conversations, write_traces
from typer.testing import CliRunner

from agentjudge import api
from agentjudge.commands import app
from agentjudge.rundir import RunFolder
from agentjudge.rundir.records import dumps_record, parse_line
from agentjudge.tracks.traces.importer import read_traces


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    folder = tmp_path_factory.mktemp("traces")
    convs = write_traces(folder / "shop-agent.jsonl")
    api.import_traces(folder / "shop-agent.jsonl", folder / "run")
    return folder / "run", convs


def test_the_file_becomes_a_run_folder_whose_predictions_are_the_files_calls(imported) -> None:  # type: ignore[no-untyped-def]
    run, convs = imported
    assert len(convs) >= 30
    folder = RunFolder.open(run)
    assert folder.status.state == "complete"
    assert folder.meta.generators["shop-agent"].kind == "imported"
    records = {r.id: r for r in folder.records()}
    assert list(records) == [c["id"] for c in convs]
    assert {r.source for r in records.values()} == {"traces"}
    for conv in convs:
        record = records[conv["id"]]
        assert record.gt_known == ("expected_tool_calls" in conv)
        users = [m["content"] for m in conv["messages"] if m["role"] == "user"]
        assert record.queries["easy"] == (users[0] if len(users) == 1 else "\n".join(
            f"User turn {i}: {u}" for i, u in enumerate(users, 1)))  # fmt: skip
        if "tools" not in conv:  # inferred from the calls, and labelled so
            assert all("inferred from" in t.description for t in record.tools)
    predictions = folder.predictions().set_index("record_id")
    for conv in convs:
        row = predictions.loc[f"{conv['id']}:easy"]
        assert json.loads(row["calls_json"]) == calls_of(conv)
        has_outputs = any(m["role"] == "tool" for m in conv["messages"])
        assert pd.notna(row["trajectory_json"]) == has_outputs
    scores = folder.scores()
    with_gt = {f"{c['id']}:easy" for c in convs if "expected_tool_calls" in c}
    assert set(scores["record_id"]) == with_gt  # nothing scored where no GT exists
    wrong = scores[(scores.record_id == "single-4:easy") & (scores.scoring_mode == "strict")]
    assert wrong["p_value"].item() < 1.0 == wrong["p_param"].item()  # right keys, another city
    pipeline = (run / "pipeline.yaml").read_text()
    assert "trajectory_without_gt" in pipeline and "judges: []" in pipeline


def test_an_episode_keeps_each_output_and_how_it_ended() -> None:
    from agentjudge.tracks.traces.conversation import build_trace

    convs = {c["id"]: c for c in conversations()}
    trace = build_trace(convs["turns-4"]["messages"], "x", trace_id="turns-4", line=1)
    assert trace.trajectory is not None
    assert [s.call.name for s in trace.trajectory.steps] == ["get_order", "cancel_order"]
    assert trace.trajectory.steps[0].output == {"order_id": "ORD-504", "status": "pending"}
    assert trace.trajectory.steps[1].output == "Error: order is locked"  # an output, as the file says it
    assert trace.trajectory.stop_reason == "answered" and trace.trajectory.answer.startswith("Order ORD-504")
    stopped = build_trace(convs["turns-2"]["messages"], "x", trace_id="turns-2", line=1)
    assert stopped.trajectory is not None and stopped.trajectory.stop_reason == "ended"


BAD = {
    "not JSON": ('{"messages": [', "line 3", "not valid JSON"),
    "no user turn": (
        json.dumps({"messages": [{"role": "assistant", "content": "hello"}]}),
        "line 3",
        "field messages: no user turn",
    ),
    "call without a name": (
        json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [
            {"id": "a", "type": "function", "function": {"arguments": "{}"}}]}]}),
        "line 3",
        "field messages[1].tool_calls[0].function.name",
    ),
    "arguments not JSON": (
        json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{city: Paris"}}]}]}),
        "line 3",
        "field messages[1].tool_calls[0].function.arguments: arguments are not JSON",
    ),
    "duplicate id": (
        json.dumps({"id": "single-0", "messages": [{"role": "user", "content": "hi"}]}),
        "line 3",
        "field id: 'single-0' is also the id of line 1",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_naming_line_and_field_and_writes_nothing(case: str, tmp_path: Path) -> None:
    line, where, field = BAD[case]
    good = [json.dumps(c) for c in conversations()[:2]]
    path = tmp_path / "agent.jsonl"
    path.write_text("\n".join([*good, line]) + "\n")
    result = CliRunner().invoke(app, ["import", "traces", str(path), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1 and "Traceback" not in result.output
    assert str(path) in message and where in message and field in message, message
    assert not (tmp_path / "run").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["agent.jsonl"]  # nothing half-written beside it either


def test_an_empty_file_and_an_unknown_format_are_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    result = CliRunner().invoke(app, ["import", "traces", str(empty), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and "no conversation in the file" in result.stderr
    odd = tmp_path / "agent.txt"
    odd.write_text("x")
    result = CliRunner().invoke(app, ["import", "traces", str(odd), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and "--format openai" in result.stderr
    assert not (tmp_path / "run").exists()


def test_a_record_without_gt_round_trips_in_the_records_file() -> None:
    from agentjudge.tracks.traces.importer import to_records
    from agentjudge.tracks.traces.openai import _conversation

    trace = _conversation(json.dumps(conversations()[8]), "f, line 9", 9)  # single-8: no expected calls
    (record,), _ = to_records([trace], "f.jsonl", "recorded")
    line = dumps_record(record)
    assert '"gt_known":false' in line
    assert parse_line(line) == record and not record.gt


def _verdicts(request: dict[str, Any]) -> str:
    """A judge whose verdicts vary with what it is shown (so two judges can disagree), outcome included."""
    text = json.dumps(request["messages"])
    digest = hashlib.sha256(text.encode()).digest()
    levels = (0.0, 0.5, 1.0)
    answer = {m: {"verdict": levels[digest[i] % 3], "justification": "x"} for i, m in
              enumerate(("tool", "param", "seq", "cov"))}  # fmt: skip
    answer["outcome"] = {"verdict": levels[digest[5] % 3], "justification": "x"}
    return json.dumps(answer)


def test_add_two_judges_and_report(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    convs = write_traces(tmp_path / "shop-agent.jsonl")
    run = tmp_path / "run"
    api.import_traces(tmp_path / "shop-agent.jsonl", run)
    fake_llm.set_responder(_verdicts)
    done = api.run(
        run / "pipeline.yaml",
        run,
        add_judges=["baseline/rule", "openai/test-model"],
        api_base=fake_llm.base_url,
    )
    assert done.status == "complete", done
    judgments = RunFolder.open(run).judgments()
    strict = judgments[judgments.scoring_mode == "strict"]
    no_gt = {f"{c['id']}:easy" for c in convs if "expected_tool_calls" not in c}
    episodes = {f"{c['id']}:easy" for c in convs if any(m["role"] == "tool" for m in c["messages"])}
    units = strict.drop_duplicates(["record_id", "judge", "condition"])
    for r in units.itertuples():
        assert not (r.record_id in no_gt and r.condition in ("with_gt", "trajectory_with_gt"))
        assert (r.condition.startswith("trajectory")) <= (r.record_id in episodes)
    per_record = units.groupby("record_id")["condition"].agg(set)
    for rid, conds in per_record.items():
        wanted = {"without_gt"} | ({"trajectory_without_gt"} if rid in episodes else set())
        if rid not in no_gt:
            wanted |= {"with_gt"} | ({"trajectory_with_gt"} if rid in episodes else set())
        assert conds == wanted, rid
    # a record without GT: every reference null, never a default one; the outcome verdict kept
    mine = strict[strict.record_id.isin(no_gt)]
    assert mine["reference"].isna().all() and mine["verdict"].notna().any()
    assert (mine.metric == "outcome").any()
    assert strict[~strict.record_id.isin(no_gt) & (strict.metric != "outcome")]["reference"].notna().all()
    # the judge saw the episode: a trajectory prompt carries the tool outputs
    shown = [json.dumps(r["messages"]) for r in fake_llm.requests]
    assert any("agent_episode" in t and "order is locked" in t for t in shown)
    report = api.report(run, resamples=200)
    text = (report.out / "report.md").read_text()
    assert "FAILED" not in text
    assert "have no GT" in text and "Records without GT" in text
    table = pd.read_csv(report.out / "tables" / "no_reference_agreement.csv")
    assert {"baseline/rule", "openai/test-model"} == set(table["judge_a"]) | set(table["judge_b"])
    dist = pd.read_csv(report.out / "tables" / "no_reference_verdicts.csv")
    assert {"outcome", "tool"} <= set(dist["metric"])
    shares = dist[["share_0", "share_0.5", "share_1", "share_other"]].sum(axis=1)
    assert shares.round(9).eq(1.0).all()


def test_a_run_without_any_gt_reports_what_is_known(tmp_path: Path) -> None:
    convs = [c for c in conversations() if "expected_tool_calls" not in c]
    path = tmp_path / "agent.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in convs) + "\n")
    run = tmp_path / "run"
    api.import_traces(path, run)
    api.run(run / "pipeline.yaml", run, add_judges=["baseline/rule", "baseline/always-1", "baseline/ceiling"])
    judgments = RunFolder.open(run).judgments()
    assert "baseline/ceiling" not in set(judgments["judge"])  # the oracle has no reference to read
    assert judgments["reference"].isna().all()
    report = api.report(run, resamples=100)
    text = (report.out / "report.md").read_text()
    assert "No record of this run has GT" in text and "FAILED" not in text
    assert "Judge ranking" not in text  # no alignment figure without a reference


def test_sampling_is_refused_where_no_reference_exists(tmp_path: Path) -> None:
    write_traces(tmp_path / "a.jsonl")
    api.import_traces(tmp_path / "a.jsonl", tmp_path / "run")
    with pytest.raises(api.InputError, match="21 record\\(s\\) of this run have no GT"):
        api.run(
            tmp_path / "run" / "pipeline.yaml", tmp_path / "run", add_judges=["baseline/rule"], target_ci=5
        )


def test_a_dry_run_counts_the_episodes_units(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    convs = write_traces(tmp_path / "a.jsonl")
    run = tmp_path / "run"
    api.import_traces(tmp_path / "a.jsonl", run)
    plan = api.run(run / "pipeline.yaml", run, add_judges=["openai/gpt-4o-mini"], dry_run=True)
    episodes = sum(any(m["role"] == "tool" for m in c["messages"]) for c in convs)
    with_gt = sum("expected_tool_calls" in c for c in convs)
    ep_gt = sum("expected_tool_calls" in c and any(m["role"] == "tool" for m in c["messages"]) for c in convs)
    rows = {r["model"]: r for r in plan.plan.rows} if plan.plan is not None else {}
    assert rows["openai/gpt-4o-mini"]["calls"] == len(convs) + with_gt + episodes + ep_gt


def test_an_inspect_log_made_with_mockllm(tmp_path: Path) -> None:
    pytest.importorskip("inspect_ai", reason="Inspect is the optional extra [inspect] (also in dev)")
    log = write_inspect_log(tmp_path / "logs")
    fmt, traces = read_traces(log)
    assert fmt == "inspect" and [t.id for t in traces] == ["s1", "s2", "s3"]
    run = tmp_path / "run"
    done = api.import_traces(log, run, agent="mock-agent")
    assert done.format == "inspect" and done.with_gt == 2 and done.with_outputs == 3
    folder = RunFolder.open(run)
    predictions = folder.predictions().set_index("record_id")
    from inspect_ai.log import read_eval_log

    for sample in read_eval_log(str(log)).samples or []:
        calls = [{"name": c.function, "arguments": c.arguments} for m in sample.messages
                 if m.role == "assistant" for c in m.tool_calls or []]  # fmt: skip
        assert json.loads(predictions.loc[f"{sample.id}:easy", "calls_json"]) == calls
    records = {r.id: r for r in folder.records()}
    assert [t.name for t in records["s1"].tools] == ["add"]
    assert "inferred" not in records["s1"].tools[0].description  # the log's own schema
    assert records["s1"].gt_known and not records["s3"].gt_known  # s3's target is text, not calls
    assert set(folder.scores()["record_id"]) == {"s1:easy", "s2:easy"}


def write_inspect_log(folder: Path) -> Path:
    """A real Inspect log: a tool-using task run by Inspect's ``mockllm`` model (three samples; the first
    two with a target that lists the expected calls, the third with a plain-text target)."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import tool

    @tool
    def add():  # type: ignore[no-untyped-def]
        async def execute(x: int, y: int) -> int:
            """Add two numbers.

            Args:
                x: First number to add.
                y: Second number to add.
            """
            return x + y

        return execute

    def used(output: ModelOutput) -> ModelOutput:  # a usage given: mockllm does not count tokens itself
        output.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        return output

    outputs = [
        used(ModelOutput.for_tool_call("mockllm/model", "add", {"x": 1, "y": 2})),
        used(ModelOutput.from_content("mockllm/model", "The answer is 3.")),
        used(ModelOutput.for_tool_call("mockllm/model", "add", {"x": 5, "y": 6})),
        used(ModelOutput.from_content("mockllm/model", "11")),
        used(ModelOutput.for_tool_call("mockllm/model", "add", {"x": 2, "y": 2})),
        used(ModelOutput.from_content("mockllm/model", "4")),
    ]
    expected = [
        [{"name": "add", "arguments": {"x": 1, "y": 2}}],
        [{"name": "add", "arguments": {"x": 6, "y": 5}}],
    ]
    task = Task(
        dataset=[
            Sample(input="What is 1 + 2?", target=json.dumps(expected[0]), id="s1"),
            Sample(input="What is 5 + 6?", target=json.dumps(expected[1]), id="s2"),
            Sample(input="What is 2 + 2?", target="4", id="s3"),
        ],
        solver=[use_tools(add()), generate()],
        scorer=includes(),
    )
    model = get_model("mockllm/model", custom_outputs=outputs)
    (log,) = inspect_eval(task, model=model, log_dir=str(folder), display="none", max_samples=1)
    assert log.status == "success", log.error
    return Path(log.location)
